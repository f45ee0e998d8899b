"""The evacuation model's parameters, declared once (:class:`EvacuationParameters`).

The same object is :class:`~.model.EvacuationModel`'s input (keyword arguments are accepted
too), a run's ``config.json``, the keys of ``mlm sweep evac --param``, the flags of
``mlm evac run`` and what ``mlm evac fork`` may change.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from mesa_llm_mobility.evacuation.personality import composition_profiles
from mesa_llm_mobility.evacuation.timing import STEPS_PER_SECOND
from mesa_llm_mobility.experiment.parameters import (
    Parameters,
    RunOptions,
    parameter,
)

MAX_TIME_LIMIT_S = 32767 / STEPS_PER_SECOND
"""The longest run the belief store's 16-bit step numbers hold."""


def parse_composition(text: str) -> str | dict[str, int]:
    """``H``, or archetype counts such as ``rule_following=6,anxious_conformist=5``.

    Raises:
        ValueError: For a count that is not a whole number.
    """
    if "=" not in text:
        return text.strip().upper()
    counts: dict[str, int] = {}
    for part in text.split(","):
        name, _, count = part.partition("=")
        try:
            counts[name.strip()] = int(count)
        except ValueError:
            raise ValueError(f"bad archetype count {part!r}: use name=count") from None
    return counts


@dataclass(frozen=True, kw_only=True)
class EvacuationParameters(Parameters):
    """Parameters of an evacuation run (pedestrians escaping a moving threat in a plaza).

    Attributes:
        plaza: Plaza map file, ``"reference"`` or none for the shipped reference plaza (or a
            loaded ``Plaza``).
        composition: A paper composition ``A``-``H`` or archetype counts.
        block: Matched block 1-8 (a fixed permutation of the start cells), or none.
        time_limit_s: Run length limit.
        gates_closing_at_s: When the entrance gates start closing.
        gates_closed_at_s: When they are closed.
        rejection: What happens to an invalid LLM answer: ``paper`` rejects it (the pedestrian
            keeps its plan and is told why next turn), ``repair`` re-prompts, then falls back.
        initial_exit_information: Every pedestrian told of the exits at the start (Fig. 9b).
        friction: Probability that a movement conflict stays unresolved (0: the paper's).
        random_spawn: Pedestrians on random walkable cells instead of the start cells (none:
            only when there are more pedestrians than start cells).
    """

    model_name: ClassVar[str] = "evacuation"
    command: ClassVar[str] = "evac"
    model_class: ClassVar[str] = "mesa_llm_mobility.evacuation.model.EvacuationModel"

    plaza: str | Path | None = parameter(
        None, "plaza map file (none: the shipped reference plaza)", loaded=True
    )
    composition: str | dict[str, int] = parameter(
        "A",
        "a paper composition A-H, or archetype counts such as "
        "rule_following=6,anxious_conformist=5",
        parse=parse_composition,
    )
    block: int | None = parameter(
        None,
        "matched block 1-8 of the 8 x 8 design: a fixed permutation of the start cells "
        "(none: the listed order)",
        ge=1,
        le=8,
    )
    time_limit_s: float = parameter(
        240.0,
        "run length limit (240 s in the paper)",
        unit="s",
        gt=0,
        le=MAX_TIME_LIMIT_S,
        forkable=True,
        flag="time_limit",
    )
    gates_closing_at_s: float = parameter(
        5.0,
        "when the entrance gates start closing",
        unit="s",
        ge=0,
        flag="gates_closing_at",
    )
    gates_closed_at_s: float = parameter(
        35.0 / 3.0,
        "when the entrance gates are closed (11.67 s: the paper's Fig. 8)",
        unit="s",
        ge=0,
        flag="gates_closed_at",
    )
    rejection: Literal["paper", "repair"] = parameter(
        "paper",
        "an invalid LLM answer: 'paper' rejects it (the pedestrian keeps its plan and is "
        "told why next turn), 'repair' re-prompts then falls back to the rule policy",
    )
    initial_exit_information: bool = parameter(
        False,
        "system-provided exit information at initialisation (paper Fig. 9b): each pedestrian "
        "is told the direction and rough distance of every evacuation exit before its first "
        "decision",
    )
    friction: float = parameter(
        0.0,
        "bottleneck-flow calibration (Kirchner et al. 2003): the probability that a movement "
        "conflict stays unresolved; 0 is the paper's rule, 0.9 gives laboratory bottleneck "
        "flows",
        ge=0,
        lt=1,
    )
    random_spawn: bool | None = parameter(
        None,
        "place pedestrians on random walkable cells instead of the start cells (none: only "
        "when there are more pedestrians than start cells)",
        command_line=False,
    )

    def check(self) -> None:
        """The composition names known archetypes; the gates close after they start to."""
        super().check()
        if self.gates_closing_at_s > self.gates_closed_at_s:
            raise ValueError(
                f"gates_closing_at_s ({self.gates_closing_at_s:g}) must not exceed "
                f"gates_closed_at_s ({self.gates_closed_at_s:g})"
            )
        composition_profiles(self.composition)


@dataclass(frozen=True, kw_only=True)
class EvacuationRunOptions(RunOptions):
    """How an evacuation run is carried out (none of it changes a result).

    Attributes:
        route_workers: Processes that plan the routes, this one included.
        checkpoint_every_s: Simulated seconds between checkpoints (none: at the start and the
            end only).
        memory_stream: Also keep every memory revision in the pedestrians' Chroma streams.
        record_positions: Keep the per-step positions table (large for big crowds).
    """

    model_name: ClassVar[str] = "evacuation"

    route_workers: int = parameter(
        1,
        "processes that plan the routes, this one included; the run is the same for any "
        "number, large crowds finish sooner with 2 on 2 cores",
        ge=1,
    )
    checkpoint_every_s: float | None = parameter(
        60.0,
        "simulated seconds between checkpoints, for 'mlm evac resume' (none: at the start "
        "and the end only)",
        unit="s",
        gt=0,
        flag="checkpoint_every",
    )
    memory_stream: bool = parameter(
        False,
        "also store every memory revision in the pedestrians' Chroma streams under memory/ "
        "(the memory_versions table is written either way)",
    )
    record_positions: bool = parameter(
        True, "keep the per-step positions table (large for big crowds)"
    )
