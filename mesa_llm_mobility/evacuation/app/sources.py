"""Where the evacuation app's panels get their data: the live model, or a step of a saved run.

Both sources answer the same questions (the frame, the pedestrians, one pedestrian's report, the
outcome and fear history), so one set of panels serves the live app and the replay.

A pedestrian's report (:class:`PedestrianReport`) holds its ASCII view and prompt exactly as
the brain was sent them at its last decision (the move kind's messages of that
decision's context: what an LLM brain sends, and what the rule brain read), its short-term
capsule, its memory, its last decision and the route options it was offered. In a replay the
prompt comes from the run's ledger (LLM runs); rule-brain runs do not store it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.evacuation.affect import FEAR_LEVELS, fear_level
from mesa_llm_mobility.evacuation.agents import STATUS_NAMES
from mesa_llm_mobility.evacuation.app.plaza_view import (
    PlazaFrame,
    frame_of_model,
    frame_of_run,
)
from mesa_llm_mobility.evacuation.decisions import (
    EVACUATION_MOVE,
    EvacuationContext,
)
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.plaza import Plaza, load_plaza
from mesa_llm_mobility.experiment.run_directory import RunDirectory

DECISION_FIELDS = [
    "request_step",
    "applied_step",
    "trigger",
    "outcome",
    "action",
    "situation",
    "intent",
    "urgency",
    "route_id",
    "opening_id",
    "shout",
    "accepted",
    "commit_reason",
    "revision_level",
]
"""Columns of the last decision shown in the inspector."""


class AppModel(EvacuationModel):
    """The evacuation model with the app's parameters, remembering each pedestrian's last context.

    Args:
        composition: ``A``-``H``.
        block: Matched block 1-8 (0: none).
        brain: ``"rules"`` or ``"llm:<model>"``.
        temperature: LLM sampling temperature (ignored by the rule brain).
        seed: Random seed.
    """

    def __init__(
        self,
        composition: str = "A",
        block: int = 1,
        brain: str = "rules",
        temperature: float = 0.2,
        seed: int = 0,
    ) -> None:
        options: dict[str, Any] = {}
        if str(brain).startswith("llm:"):
            options["temperature"] = float(temperature)
        self.last_context: dict[int, EvacuationContext] = {}
        """Agent id -> the context of its last decision request (not its memory revisions)."""
        self.last_messages: dict[int, list[Any]] = {}
        """Agent id -> the messages of its last decision request, exactly as sent."""
        super().__init__(
            composition=str(composition),
            block=int(block) or None,
            brain=brain,
            rng=int(seed),
            brain_options=options,
        )

    def decide(self, requests, **time):  # noqa: D102  (MobilityModel.decide)
        for request in requests:
            if request.kind is EVACUATION_MOVE:
                self.last_context[int(request.agent_id)] = request.context
                self.last_messages[int(request.agent_id)] = request.kind.messages(
                    request.context
                )
        return super().decide(requests, **time)


@dataclass(frozen=True)
class PedestrianReport:
    """What the inspector shows of one pedestrian.

    Attributes:
        agent_id: Its id.
        archetype: Its personality archetype.
        status: ``active``, ``evacuated`` or ``reached`` (killed), with the fear level.
        prompt: The messages of its last decision, as sent (``role: content`` blocks), or a note.
        capsule: Its short-term context capsule.
        memory: Its long-term memory versions so far, newest first (the memory role's
            revisions, with their version, time and outcome).
        last_decision: One row of :data:`DECISION_FIELDS`.
        options: The route options it was offered (``route, description``).
    """

    agent_id: int
    archetype: str
    status: str
    prompt: str
    capsule: str
    memory: str
    last_decision: pd.DataFrame
    options: pd.DataFrame


def messages_text(messages: list[dict[str, Any]] | list[Any]) -> str:
    """Prompt messages as ``[role]`` headed blocks."""
    parts = []
    for message in messages:
        role = message["role"] if isinstance(message, dict) else message.role
        content = message["content"] if isinstance(message, dict) else message.content
        parts.append(f"[{role}]\n{content}")
    return "\n\n".join(parts)


def memory_versions_text(versions: pd.DataFrame, agent_id: int) -> str:
    """An agent's long-term memory versions, newest first, one block each."""
    if versions.empty or "agent_id" not in versions.columns:
        return "(no memory revision yet)"
    mine = versions[versions["agent_id"] == agent_id].sort_values("version")
    blocks = [
        f"v{int(row.version)} at {float(row.time_s):.1f} s ({row.outcome}):\n"
        f"{row.memory or '(empty)'}"
        for row in mine.itertuples()
    ]
    return "\n\n".join(reversed(blocks)) or "(no memory revision yet)"


def _last_decision(decisions: pd.DataFrame, agent_id: int) -> pd.DataFrame:
    mine = decisions[decisions["agent_id"] == agent_id]
    return mine.tail(1)[[c for c in DECISION_FIELDS if c in mine.columns]]


@dataclass(frozen=True)
class LiveSource:
    """A running :class:`AppModel`."""

    model: AppModel
    live: ClassVar[bool] = True

    @property
    def plaza(self) -> Plaza:
        """The plaza."""
        return self.model.plaza

    def frame(self) -> PlazaFrame:
        """The plaza now."""
        return frame_of_model(self.model)

    def pedestrians(self) -> list[int]:
        """Pedestrian ids."""
        return [a.unique_id for a in self.model.pedestrians]

    def report(self, agent_id: int) -> PedestrianReport:
        """The inspector's report of ``agent_id``."""
        model = self.model
        agent = model.crowd.by_uid[agent_id]
        fear = model.crowd.fear[agent.index]
        context = model.last_context.get(agent_id)
        status = STATUS_NAMES[int(model.crowd.status[agent.index])]
        options = pd.DataFrame(
            [(o.route_id, o.describe()) for o in (context.options if context else ())],
            columns=["route", "description"],
        )
        return PedestrianReport(
            agent_id=agent_id,
            archetype=agent.personality.archetype,
            status=f"{status}, fear {fear:.2f} ({fear_level(fear)})",
            prompt=messages_text(model.last_messages[agent_id])
            if agent_id in model.last_messages
            else "no decision yet",
            capsule=agent.capsule or "(empty)",
            memory=memory_versions_text(model.memory_versions_frame(), agent_id),
            last_decision=_last_decision(model.decisions_frame(), agent_id),
            options=options,
        )

    def history(self) -> pd.DataFrame:
        """Per step: ``time_s, active, evacuated, reached, mean_fear``."""
        return self.model.datacollector.get_model_vars_dataframe().reset_index(
            drop=True
        )

    def fear_levels(self) -> pd.Series:
        """Pedestrians in the plaza per fear level now."""
        return fear_level_counts(self.frame())


def fear_level_counts(frame: PlazaFrame) -> pd.Series:
    """Active pedestrians per fear level (every level, zeros included)."""
    alive = frame.pedestrians[frame.pedestrians["status"] == "active"]
    levels = pd.Series([fear_level(f) for f in alive["fear"]], dtype=object)
    return levels.value_counts().reindex(list(FEAR_LEVELS), fill_value=0)


class SavedEvacuation:
    """A finished evacuation run directory, read once for the replay.

    Raises:
        RunDirectoryError: When the folder is not a run directory.
        ValueError: When it is not an evacuation run (no positions table).
    """

    def __init__(self, path: str | Path) -> None:
        self.run = RunDirectory.open(path)
        self.path = self.run.path
        self.config = self.run.config
        if "positions" not in self.run.table_names():
            raise ValueError(f"{self.path}: not an evacuation run (no positions table)")
        self.plaza = load_plaza(self.config.get("plaza"))
        self.positions = self.run.read_table("positions")
        self.events = self.run.read_table("events")
        self.decisions = self.run.read_table("decisions")
        self.pedestrians = self.run.read_table("pedestrians")
        self.model_table = self.run.read_table("model")
        self.memory_versions = (
            self.run.read_table("memory_versions")
            if "memory_versions" in self.run.table_names()
            else pd.DataFrame()
        )
        self.last_step = int(self.positions["step"].max())
        self.ledger = (
            Ledger.read(self.run.ledger_path) if self.run.ledger_path.is_file() else []
        )


@dataclass(frozen=True)
class ReplaySource:
    """A saved run at one step."""

    saved: SavedEvacuation
    step: int
    live: ClassVar[bool] = False

    @property
    def plaza(self) -> Plaza:
        """The plaza."""
        return self.saved.plaza

    def frame(self) -> PlazaFrame:
        """The plaza at the step."""
        s = self.saved
        return frame_of_run(s.plaza, s.positions, s.events, s.decisions, self.step)

    def pedestrians(self) -> list[int]:
        """Pedestrian ids."""
        return self.saved.pedestrians["agent_id"].astype(int).tolist()

    def report(self, agent_id: int) -> PedestrianReport:
        """The inspector's report of ``agent_id`` at the step."""
        s = self.saved
        decisions = s.decisions[s.decisions["request_step"] <= self.step]
        row = s.pedestrians[s.pedestrians["agent_id"] == agent_id].iloc[0]
        track = s.positions[
            (s.positions["agent_id"] == agent_id) & (s.positions["step"] <= self.step)
        ]
        fear = float(track["fear"].iloc[-1]) if len(track) else 0.0
        status = str(track["situation"].iloc[-1]) if len(track) else "evacuated"
        records = [
            r
            for r in s.ledger
            if str(r.get("agent_id")) == str(agent_id)
            and r.get("kind") == EVACUATION_MOVE.name
            and int(r.get("tags", {}).get("step", 0)) <= self.step
        ]
        prompt = (
            messages_text(records[-1]["messages"])
            if records
            else "not recorded: a rule-brain run keeps no prompts (LLM runs keep them in ledger.jsonl)"
        )
        capsule = ""
        if records and records[-1].get("result"):
            capsule = json.dumps(records[-1]["result"]).strip()
        return PedestrianReport(
            agent_id=agent_id,
            archetype=str(row["archetype"]),
            status=f"{status}, fear {fear:.2f} (run outcome: {row['outcome']})",
            prompt=prompt,
            capsule=capsule or "(not stored in the run)",
            memory=memory_versions_text(
                s.memory_versions[s.memory_versions["applied_step"] <= self.step]
                if not s.memory_versions.empty
                else s.memory_versions,
                agent_id,
            ),
            last_decision=_last_decision(decisions, agent_id),
            options=pd.DataFrame(columns=["route", "description"]),
        )

    def history(self) -> pd.DataFrame:
        """The model table up to the step."""
        table = self.saved.model_table
        return table[table["step"] <= self.step].drop(columns=["step"])

    def fear_levels(self) -> pd.Series:
        """Pedestrians in the plaza per fear level at the step."""
        return fear_level_counts(self.frame())
