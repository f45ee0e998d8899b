"""The spatial-representation benchmark (paper Sec. 2.2.4): four encodings of frozen snapshots.

The paper validated its symbolic view by asking a model about frozen snapshots of pedestrians'
surroundings in four representations: no map, structured cells, lean ASCII, and ASCII with a
decoding protocol; and it notes that a character grid, unlike a coordinate list, rotates with
the scene without re-deriving coordinates. This module makes that experiment a mode:

- :func:`capture_snapshots` freezes pedestrians' perception maps from a rule-brain run (the
  model's own view cone, line of sight and glyphs, :func:`~.ascii_view.render_view`);
- :func:`encode` writes a snapshot in one of :data:`ENCODINGS`; :meth:`Snapshot.rotated` turns
  the scene a quarter turn (the glyphs keep their meaning, the offsets turn with the scene);
- :func:`probes` asks up to four questions with answers known from the snapshot and not to be
  guessed without it: the glyph at an offset, the offset of an exit or gate cell, the offset
  of the armed person, and the number of other pedestrians;
- :func:`run_benchmark` puts every probe in every encoding (and rotation) to a brain as the
  ``RepresentationProbe`` decision kind and scores the answers.

The rule policy of the kind reads the encoding back (a parser, not a model): it scores 100 %
on every encoding that holds the map and guesses without one, which checks that the questions
are answerable from each encoding. An LLM brain (``--brain llm:<model>``) gives the model's
own accuracy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pydantic import BaseModel

from mesa_llm_mobility.cognition.brain import Brain
from mesa_llm_mobility.cognition.kinds import DecisionKind, DecisionRequest, Message
from mesa_llm_mobility.evacuation.agents import ACTIVE, REACHED
from mesa_llm_mobility.evacuation.ascii_view import render_view
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.perception import perceive

ENCODINGS = ("no_map", "structured_cells", "lean_ascii", "ascii_protocol")
"""The paper's four representations."""

QUESTIONS = ("glyph_at", "exit_offset", "threat_offset", "people_count")

GLYPH_NAMES = {
    "?": "unknown",
    ".": "walkable",
    "#": "wall",
    "T": "tree",
    "E": "exit",
    "G": "gate open",
    "g": "gate closing",
    "X": "gate closed",
    "@": "you",
    "p": "pedestrian",
    "D": "person lying motionless",
    "A": "armed person",
}
_NAME_GLYPHS = {name: glyph for glyph, name in GLYPH_NAMES.items()}
EXIT_GLYPHS = frozenset("EGg")

PROTOCOL = (
    "How to read the map: rows run from north (top) to south (bottom), columns from west "
    "(left) to east (right); one character is one 0.4 m cell. Find @ (you). A cell k columns "
    "right of @ has dx = +k (left: -k); a cell k rows above @ has dy = +k (below: -k). "
    "Glyphs: " + ", ".join(f"{g} {n}" for g, n in GLYPH_NAMES.items()) + "."
)


@dataclass(frozen=True)
class Snapshot:
    """A frozen perception map: north-up rows of glyphs with ``@`` at the viewer.

    Attributes:
        rows: The view's rows, north first.
        label: Where it came from (run, step, pedestrian).
    """

    rows: tuple[str, ...]
    label: str = ""

    @property
    def origin(self) -> tuple[int, int]:
        """Row and column of ``@``."""
        for r, row in enumerate(self.rows):
            if "@" in row:
                return r, row.index("@")
        raise ValueError(f"snapshot {self.label!r} has no @")

    def cells(self) -> list[tuple[int, int, str]]:
        """Every known cell but ``@`` as ``(dx, dy, glyph)`` (``?`` cells are left out)."""
        r0, c0 = self.origin
        return [
            (c - c0, r0 - r, glyph)
            for r, row in enumerate(self.rows)
            for c, glyph in enumerate(row)
            if glyph not in "?@"
        ]

    def rotated(self) -> Snapshot:
        """The scene turned a quarter turn clockwise (what was north is now east)."""
        turned = [
            "".join(row[c] for row in reversed(self.rows))
            for c in range(len(self.rows[0]))
        ]
        return Snapshot(tuple(turned), f"{self.label} rotated")


def capture_snapshots(
    model: EvacuationModel, steps: Sequence[int], per_step: int, seed: int = 0
) -> list[Snapshot]:
    """Freeze the views of ``per_step`` active pedestrians at each of ``steps`` of a run.

    Args:
        model: A fresh model (it is stepped to each step in turn).
        steps: Steps to stop at, ascending.
        per_step: Pedestrians drawn at each step (at most the active ones).
        seed: Seed of the draw.

    Returns:
        The snapshots.
    """
    rng = np.random.default_rng(seed)
    crowd, scene = model.crowd, model.scene
    height = model.plaza.height
    n = model.n_pedestrians
    snapshots = []
    for step in steps:
        while model.tick < step and model.running:
            model.step()
        active = crowd.active_indices()
        if not len(active):
            break
        chosen = np.sort(
            rng.choice(active, size=min(per_step, len(active)), replace=False)
        )
        perception = perceive(
            scene.view,
            scene.effective.opaque,
            crowd.pos[chosen, 0],
            crowd.pos[chosen, 1],
            crowd.heading[chosen],
        )
        codes = scene.effective.codes.ravel()
        occupancy = crowd.occupancy.ravel()
        for k, i in enumerate(chosen.tolist()):
            cells = perception.cells_of(k)
            entities = {}
            for flat in cells.tolist():
                who = int(occupancy[flat])
                if who == n:
                    entities[flat] = "A"
                elif 0 <= who != i and crowd.status[who] in (ACTIVE, REACHED):
                    entities[flat] = "p" if crowd.status[who] == ACTIVE else "D"
            text, _ = render_view(
                cells,
                height,
                codes,
                (int(crowd.pos[i, 0]), int(crowd.pos[i, 1])),
                entities,
            )
            snapshots.append(
                Snapshot(
                    tuple(text.split("\n")),
                    f"step {model.tick}, pedestrian {crowd.uid(i)}",
                )
            )
    return snapshots


def encode(snapshot: Snapshot, encoding: str) -> str:
    """The snapshot in one of :data:`ENCODINGS`.

    Raises:
        ValueError: For an unknown encoding.
    """
    if encoding == "no_map":
        return "You have no map of your surroundings."
    if encoding == "structured_cells":
        grouped: dict[str, list[list[int]]] = {}
        for dx, dy, glyph in snapshot.cells():
            grouped.setdefault(GLYPH_NAMES[glyph], []).append([dx, dy])
        return (
            "Known cells around you as [dx, dy] offsets (dx east, dy north; you are at [0, 0]; "
            "cells not listed are unknown): "
            + json.dumps(grouped, separators=(",", ":"))
        )
    if encoding == "lean_ascii":
        return "Map:\n" + "\n".join(snapshot.rows)
    if encoding == "ascii_protocol":
        return PROTOCOL + "\nMap:\n" + "\n".join(snapshot.rows)
    raise ValueError(
        f"unknown encoding {encoding!r}; use one of {', '.join(ENCODINGS)}"
    )


@dataclass(frozen=True)
class Probe:
    """One question about a snapshot and its answer.

    Attributes:
        question: One of :data:`QUESTIONS`.
        text: The question as asked.
        truth: The answer: a glyph, a set of offsets (any counts), an offset or ``None``, a
            count.
    """

    question: str
    text: str
    truth: object


def probes(snapshot: Snapshot, rng: np.random.Generator) -> list[Probe]:
    """The questions about a snapshot whose answer cannot be guessed without the map.

    The glyph asked about is drawn class first (a glyph present in the view, then one of its
    cells), so that "walkable" is no safe guess; the exit, threat and count questions are
    asked only when there is an exit cell, an armed person or another pedestrian in view.
    """
    cells = snapshot.cells()
    present = sorted({g for *_, g in cells})
    glyph = present[int(rng.integers(len(present)))]
    where = [(x, y) for x, y, g in cells if g == glyph]
    dx, dy = where[int(rng.integers(len(where)))]
    asked = [
        Probe(
            "glyph_at",
            f"What is at offset ({dx:+d}, {dy:+d})? Answer with glyph.",
            glyph,
        )
    ]
    exits = frozenset((x, y) for x, y, g in cells if g in EXIT_GLYPHS)
    if exits:
        asked.append(
            Probe(
                "exit_offset",
                "Give the offset (dx, dy) of any cell of an exit or an open or closing gate "
                "you can see.",
                exits,
            )
        )
    threat = next(((x, y) for x, y, g in cells if g == "A"), None)
    if threat is not None:
        asked.append(
            Probe(
                "threat_offset", "Give the offset (dx, dy) of the armed person.", threat
            )
        )
    people = sum(1 for *_, g in cells if g == "p")
    if people:
        asked.append(
            Probe(
                "people_count",
                "How many other pedestrians can you see? Answer with count.",
                people,
            )
        )
    return asked


class ProbeAnswer(BaseModel):
    """The answer to a ``RepresentationProbe``."""

    dx: int | None = None
    dy: int | None = None
    glyph: str | None = None
    count: int | None = None
    none: bool = False


@dataclass(frozen=True)
class ProbeContext:
    """A probe put to a brain: the encoded snapshot and the question."""

    encoding: str
    representation: str
    probe: Probe


def _render(context: ProbeContext) -> list[Message]:
    return [
        {
            "role": "system",
            "content": "You describe a pedestrian's surroundings from what you are given. "
            "Answer with one JSON object: dx and dy (integers) for an offset, glyph (one "
            "character) for what is in a cell, count (integer) for a number, none (true) when "
            "the thing asked for is not there.",
        },
        {
            "role": "user",
            "content": f"{context.representation}\n\nQUESTION: {context.probe.text}",
        },
    ]


def read_representation(text: str) -> Snapshot | None:
    """The snapshot an encoding holds (``None`` for ``no_map``): the rule policy's parser."""
    if text.startswith("Known cells"):
        grouped = json.loads(text[text.index("{") :])
        placed = {
            (x, y): _NAME_GLYPHS[name]
            for name, offsets in grouped.items()
            for x, y in offsets
        }
        placed[(0, 0)] = "@"
        xs = [x for x, _ in placed]
        ys = [y for _, y in placed]
        rows = tuple(
            "".join(placed.get((x, y), "?") for x in range(min(xs), max(xs) + 1))
            for y in range(max(ys), min(ys) - 1, -1)
        )
        return Snapshot(rows)
    if "Map:\n" in text:
        return Snapshot(tuple(text.split("Map:\n", 1)[1].split("\n")))
    return None


def _oracle(context: ProbeContext, rng: np.random.Generator) -> ProbeAnswer:
    """Answer by reading the representation back (guess ``none`` / 0 without a map)."""
    snapshot = read_representation(context.representation)
    question = context.probe.question
    if snapshot is None:
        return ProbeAnswer(glyph=".", count=0, none=True)
    cells = snapshot.cells()
    if question == "glyph_at":
        dx, dy = (int(v) for v in re.findall(r"[+-]\d+", context.probe.text)[:2])
        glyph = next((g for x, y, g in cells if (x, y) == (dx, dy)), "?")
        return ProbeAnswer(glyph=glyph)
    if question == "exit_offset":
        found = [(x, y) for x, y, g in cells if g in EXIT_GLYPHS]
        return (
            ProbeAnswer(dx=found[0][0], dy=found[0][1])
            if found
            else ProbeAnswer(none=True)
        )
    if question == "threat_offset":
        found = [(x, y) for x, y, g in cells if g == "A"]
        return (
            ProbeAnswer(dx=found[0][0], dy=found[0][1])
            if found
            else ProbeAnswer(none=True)
        )
    return ProbeAnswer(count=sum(1 for *_, g in cells if g == "p"))


REPRESENTATION_PROBE: DecisionKind[ProbeContext, ProbeAnswer] = DecisionKind(
    name="RepresentationProbe",
    context_type=ProbeContext,
    output_schema=ProbeAnswer,
    render_prompt=_render,
    rule_policy=_oracle,
)
"""The benchmark's decision kind."""


def correct(probe: Probe, answer: ProbeAnswer | None) -> bool:
    """Whether an answer is right (no answer is wrong)."""
    if answer is None:
        return False
    truth = probe.truth
    if probe.question == "glyph_at":
        return (answer.glyph or "").strip()[:1] == truth
    if probe.question == "people_count":
        return answer.count == truth
    offset = None if answer.dx is None or answer.dy is None else (answer.dx, answer.dy)
    if probe.question == "exit_offset":
        return offset in truth  # type: ignore[operator]
    return offset == truth


def run_benchmark(
    snapshots: Sequence[Snapshot],
    brain: Brain,
    *,
    encodings: Sequence[str] = ENCODINGS,
    rotations: Sequence[int] = (0, 1),
    seed: int = 0,
) -> pd.DataFrame:
    """Every probe of every snapshot in every encoding (and rotation), answered and scored.

    Args:
        snapshots: The frozen views.
        brain: The brain answering (``make_brain("rules")`` or an LLM brain).
        encodings: Representations to test.
        rotations: Quarter turns of the scene (0: as seen).
        seed: Seed of the cells asked about.

    Returns:
        One row per answer: ``snapshot, rotation, encoding, question, correct``.
    """
    rng = np.random.default_rng(seed)
    requests, keys = [], []
    for number, snapshot in enumerate(snapshots):
        for turns in rotations:
            scene = snapshot
            for _ in range(turns):
                scene = scene.rotated()
            asked = probes(scene, rng)
            for encoding in encodings:
                text = encode(scene, encoding)
                for probe in asked:
                    requests.append(
                        DecisionRequest(
                            REPRESENTATION_PROBE,
                            agent_id=len(requests),
                            context=ProbeContext(encoding, text, probe),
                        )
                    )
                    keys.append((number, turns, encoding, probe))
    results = brain.decide_all(requests)
    return pd.DataFrame(
        [
            {
                "snapshot": number,
                "rotation": turns,
                "encoding": encoding,
                "question": probe.question,
                "correct": correct(probe, result.output),
            }
            for (number, turns, encoding, probe), result in zip(
                keys, results, strict=True
            )
        ]
    )


def accuracy_table(answers: pd.DataFrame) -> pd.DataFrame:
    """Share correct by encoding (rows) and question (columns), with the overall share."""
    table = answers.pivot_table(
        index="encoding", columns="question", values="correct", aggfunc="mean"
    ).reindex([e for e in ENCODINGS if e in set(answers["encoding"])])
    table["all"] = answers.groupby("encoding")["correct"].mean()
    return table
