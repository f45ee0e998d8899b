"""The spatial-representation benchmark (mesa_llm_mobility/evacuation/representation.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mesa_llm_mobility.cognition.settings import make_brain
from mesa_llm_mobility.cognition.testing import FakeLLMServer, json_content
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.representation import (
    ENCODINGS,
    ProbeAnswer,
    Snapshot,
    accuracy_table,
    capture_snapshots,
    correct,
    encode,
    probes,
    read_representation,
    run_benchmark,
)

SMALL = Snapshot(("?#T?", "..A.", "p@.E", "?..p"))


def test_offsets_rotation_and_round_trips_by_hand():
    assert SMALL.origin == (2, 1)
    cells = {(dx, dy): g for dx, dy, g in SMALL.cells()}
    assert cells[(1, 1)] == "A" and cells[(2, 0)] == "E" and cells[(-1, 0)] == "p"
    assert cells[(1, 2)] == "T" and (0, 0) not in cells
    turned = SMALL.rotated()  # a quarter turn clockwise: east becomes south
    turned_cells = {(dx, dy): g for dx, dy, g in turned.cells()}
    assert turned_cells[(0, -2)] == "E" and turned_cells[(1, -1)] == "A"
    for encoding in ("structured_cells", "lean_ascii", "ascii_protocol"):
        back = read_representation(encode(SMALL, encoding))
        assert sorted(back.cells()) == sorted(SMALL.cells()), encoding
    assert read_representation(encode(SMALL, "no_map")) is None
    with pytest.raises(ValueError, match="unknown encoding"):
        encode(SMALL, "braille")


def test_probe_truths_and_scoring():
    asked = {p.question: p for p in probes(SMALL, np.random.default_rng(0))}
    assert asked["threat_offset"].truth == (1, 1)
    assert asked["exit_offset"].truth == {(2, 0)}
    assert asked["people_count"].truth == 2
    assert correct(asked["threat_offset"], ProbeAnswer(dx=1, dy=1))
    assert not correct(asked["threat_offset"], ProbeAnswer(dx=1, dy=-1))  # dy sign
    assert not correct(asked["threat_offset"], ProbeAnswer(none=True))
    # without an armed person or an exit in view those questions are not asked
    calm = Snapshot(("?..", ".@.", "..."))
    assert [p.question for p in probes(calm, np.random.default_rng(0))] == ["glyph_at"]
    assert correct(asked["people_count"], ProbeAnswer(count=2))
    assert not correct(asked["people_count"], None)


@pytest.fixture(scope="module")
def snapshots():
    model = EvacuationModel(composition="A", block=1, rng=0, time_limit_s=40)
    return capture_snapshots(model, steps=[3, 60, 90], per_step=3, seed=1)


def test_a_reader_of_the_map_answers_everything_but_without_a_map(snapshots):
    assert len(snapshots) == 9
    assert all(s.rows and "@" in "".join(s.rows) for s in snapshots)
    answers = run_benchmark(snapshots, make_brain("rules", rng=0))
    assert set(answers["question"]) >= {"glyph_at", "people_count", "exit_offset"}
    assert len(answers) % len(ENCODINGS) == 0
    table = accuracy_table(answers)
    for encoding in ("structured_cells", "lean_ascii", "ascii_protocol"):
        assert table.loc[encoding, "all"] == 1.0, encoding
    assert table.loc["no_map", "all"] < 0.3  # guesses


def _reader(body):
    """A scripted model that reads the lean map (and nothing else) from the prompt."""
    prompt = body["messages"][-1]["content"]
    representation, question = prompt.split("\n\nQUESTION: ")
    snapshot = read_representation(representation)
    if snapshot is None or "Known cells" in representation:
        return json_content({"none": True})
    cells = snapshot.cells()
    if question.startswith("What is at offset"):
        dx, dy = (
            int(v)
            for v in question[question.index("(") + 1 : question.index(")")].split(",")
        )
        return json_content(
            {"glyph": next((g for x, y, g in cells if (x, y) == (dx, dy)), "?")}
        )
    if question.startswith("How many"):
        return json_content({"count": sum(1 for *_, g in cells if g == "p")})
    wanted = "A" if "armed" in question else "EGg"
    found = [(x, y) for x, y, g in cells if g in wanted]
    return json_content(
        {"dx": found[0][0], "dy": found[0][1]} if found else {"none": True}
    )


def test_the_benchmark_through_the_llm_brain_and_the_local_server(snapshots):
    with FakeLLMServer(_reader) as server:
        brain = make_brain(
            "llm:openai/fake-model",
            api_base=server.api_base,
            api_key="sk-local",
            timeout_s=30.0,
        )
        answers = run_benchmark(snapshots[:3], brain, rotations=(0,))
        requests = server.request_count
    table = accuracy_table(answers)
    # identical prompts (no map, the same question) are asked once
    assert 0 < requests <= len(answers)
    assert (
        table.loc["lean_ascii", "all"] == 1.0
        and table.loc["ascii_protocol", "all"] == 1.0
    )
    # this reader ignores the coordinate list: it answers none, which is never right
    assert table.loc["structured_cells", "all"] == 0.0
    assert json.loads(answers.to_json())
