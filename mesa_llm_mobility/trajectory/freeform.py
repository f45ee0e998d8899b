"""Free-form tool calling, the paper's Table V: the LLM grounds a chain by calling tools itself.

The paper (Sec. IV-H) fixes the activity chains and lets the LLM turn each into a trajectory
with two tools, ``location`` and ``time``, deciding itself when and how to call them, against
the deterministic workflow that calls the same modules in a fixed order. The tools have
default-value fallbacks so that a bad or missing call does not stop the day: the fallback keeps
later visits executable but counts as a failure.

Here each day is one ``FreeformGrounding`` decision (:data:`FREEFORM_GROUNDING`) offered the two
tools natively (``tool_calling="native"``), on a sampled historical chain (the ``historical``
baseline's :func:`~.historical.historical_chain_policy`, drawn without the brain):

* ``location(visit, activity)``: the workflow's location module (:meth:`~.workflow.
  LocationWorker.choose_location`) for visit ``visit`` (1-based), after the previous visit's
  POI; answers its POI and coordinates;
* ``time(visit, duration_minutes)``: the workflow's travel time from the previous visit (eq. 9)
  and the visit's end after ``duration_minutes``, checked by the duration verifier's bounds
  (:class:`~.durations.VisitDurationContext`); answers start and end.

A call whose visit number is missing or wrong goes to the first visit still without that call,
an activity that is not the chain's is replaced by the chain's, a duration outside its bounds
(or missing) by a draw from the prior, a time asked before its visit's location or before the
previous visit's time gets those by fallback first: each such substitution marks the visit as
failed. After the answer, every visit still without a location or a time gets them by fallback,
and visits that start after midnight are dropped (as the workflow trims them).
:func:`tool_success` gives the paper's two rates: visit-level (share of visits whose location
and time calls were both made without substitution) and trajectory-level (share of days whose
every visit was).

The trajectory is the tools' state, not the answer's text (the answer is only checked for its
form): a model's transcription errors do not move visits. Each day's tools draw from their own
generator seeded from the individual's stream, so the calls recorded in a ledger rebuild the
same state when replayed.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from pydantic import BaseModel

from mesa_llm_mobility.clock import MINUTES_PER_DAY
from mesa_llm_mobility.cognition.kinds import (
    DecisionKind,
    DecisionRequest,
    DecisionResult,
    Message,
    Outcome,
)
from mesa_llm_mobility.cognition.tool_calling import Toolbox
from mesa_llm_mobility.trajectory.activities import ACTIVITY_INDEX
from mesa_llm_mobility.trajectory.durations import (
    VisitDurationContext,
    visit_duration_rule_policy,
)
from mesa_llm_mobility.trajectory.evidence import WEEKDAYS, IndividualEvidence
from mesa_llm_mobility.trajectory.historical import (
    TOOL_USE_COLUMNS,
    HistoricalChainAgent,
    VerifiedTrajectoryModel,
    historical_chain_policy,
)
from mesa_llm_mobility.trajectory.model import IndividualAgent
from mesa_llm_mobility.trajectory.workflow import (
    INVALID_POI,
    GroundedDay,
    LocationWorker,
    stretch_to_day_end,
)

TOOL_SPECS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": "location",
            "description": "Choose the place of one visit of the chain (call the visits in "
            "order: the choice depends on the previous visit's place).",
            "parameters": {
                "type": "object",
                "properties": {
                    "visit": {"type": "integer", "description": "visit number, from 1"},
                    "activity": {
                        "type": "string",
                        "description": "the visit's activity",
                    },
                },
                "required": ["visit", "activity"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "time",
            "description": "Schedule one visit after its location is chosen: travel from the "
            "previous visit, then stay duration_minutes. Answers the start and end times.",
            "parameters": {
                "type": "object",
                "properties": {
                    "visit": {"type": "integer", "description": "visit number, from 1"},
                    "duration_minutes": {
                        "type": "integer",
                        "description": "how long the visit lasts",
                    },
                },
                "required": ["visit", "duration_minutes"],
            },
        },
    },
)
"""The two tools in the OpenAI function-calling format."""


def _clock(minute: float) -> str:
    minute = round(minute)
    return f"{minute // 60:02d}:{minute % 60:02d}"


def _whole_number(value: object) -> int | None:
    """An integer from a model's argument (``3``, ``3.0``, ``"3"``), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            return None
        return int(number) if math.isfinite(number) and number.is_integer() else None
    return None


@dataclass
class GroundingSession:
    """One day's tools: the state the calls build and how each visit was reached.

    Attributes:
        worker: The workflow's location worker.
        evidence: The individual's evidence.
        activities: The chain.
        weekday: The date's weekday.
        first_start: When the first visit starts (minutes after midnight).
        rng: The day's tools' generator.
    """

    worker: LocationWorker
    evidence: IndividualEvidence
    activities: tuple[str, ...]
    weekday: int
    first_start: float
    rng: np.random.Generator
    pois: list[int | None] = field(init=False)
    travel: list[float] = field(init=False)
    starts: list[float | None] = field(init=False)
    ends: list[float | None] = field(init=False)
    location_ok: list[bool] = field(init=False)
    time_ok: list[bool] = field(init=False)

    def __post_init__(self) -> None:
        count = len(self.activities)
        self.pois = [None] * count
        self.travel = [0.0] * count
        self.starts = [None] * count
        self.ends = [None] * count
        self.location_ok = [False] * count
        self.time_ok = [False] * count

    def toolbox(self) -> Toolbox:
        """The tools of this day, bounded to two calls per visit and two more."""
        return Toolbox(TOOL_SPECS, self.execute, 2 * len(self.activities) + 2)

    def execute(self, name: str, arguments: dict[str, Any]) -> str:
        """Answer one call in a line of JSON.

        Raises:
            ValueError: When every visit already had that call (nothing left to fall back to).
        """
        if name == "location":
            return self._location(arguments)
        return self._time(arguments)

    def _visit(self, value: object, done: list[bool]) -> tuple[int, bool]:
        """The 0-based visit a call means, and whether it said so itself."""
        number = _whole_number(value)
        if number is not None and 1 <= number <= len(self.activities):
            return number - 1, True
        pending = [index for index, finished in enumerate(done) if not finished]
        if not pending:
            raise ValueError(
                f"visit must be a number from 1 to {len(self.activities)}, got {value!r}"
            )
        return pending[0], False

    def _ground(self, index: int) -> int:
        """Choose visit ``index``'s POI (after the previous visit's, when known)."""
        previous = self.pois[index - 1] if index else None
        previous_code = ACTIVITY_INDEX[self.activities[index - 1]] if index else None
        poi = self.worker.choose_location(
            self.evidence.agent_id,
            ACTIVITY_INDEX[self.activities[index]],
            previous,
            previous_code,
            self.rng,
        )
        self.pois[index] = poi
        return poi

    def _location(self, arguments: dict[str, Any]) -> str:
        index, named = self._visit(
            arguments.get("visit"), [poi is not None for poi in self.pois]
        )
        asked = str(arguments.get("activity", "")).strip().lower()
        wanted = self.activities[index]
        if self.pois[index] is None:
            self._ground(index)
            self.location_ok[index] = named and asked == wanted.lower()
        poi = self.pois[index]
        assert poi is not None
        if poi == INVALID_POI:
            return json.dumps({"visit": index + 1, "activity": wanted, "poi_id": None})
        return json.dumps(
            {
                "visit": index + 1,
                "activity": wanted,
                "poi_id": str(self.worker.book.poi_ids[poi]),
                "latitude": round(float(self.worker.book.poi_lat[poi]), 6),
                "longitude": round(float(self.worker.book.poi_lon[poi]), 6),
            }
        )

    def _duration_context(self, index: int, start: float) -> VisitDurationContext:
        code = ACTIVITY_INDEX[self.activities[index]]
        last = len(self.activities) - 1
        position = "final" if index == last else "first" if index == 0 else "middle"
        remaining = self.activities[index + 1 :]
        return VisitDurationContext(
            agent_id=self.evidence.agent_id,
            prior=self.worker.prior(self.evidence, code, position),
            start_minute=start,
            remaining=tuple(remaining),
            remaining_expected_minutes=float(
                sum(
                    self.evidence.duration_prior(ACTIVITY_INDEX[name])
                    for name in remaining
                )
            ),
        )

    def _schedule(self, index: int, duration: int | None) -> bool:
        """Time visit ``index`` (``None``: the prior's draw); whether no fallback was needed."""
        clean = True
        if self.pois[index] is None:
            self._ground(index)
            clean = False
        if index and self.ends[index - 1] is None:
            self._schedule(index - 1, None)  # the previous visit by fallback first
            clean = False
        if index:
            previous, poi = self.pois[index - 1], self.pois[index]
            assert previous is not None and poi is not None
            pair = (
                ACTIVITY_INDEX[self.activities[index - 1]],
                ACTIVITY_INDEX[self.activities[index]],
            )
            self.travel[index] = self.worker.travel(
                self.evidence, previous, poi, pair, self.rng
            )
            previous_end = self.ends[index - 1]
            assert previous_end is not None
            start = previous_end + self.travel[index]
        else:
            start = self.first_start
        context = self._duration_context(index, start)
        low, high = context.bounds
        if duration is None or not low <= duration <= high:
            duration = visit_duration_rule_policy(context, self.rng).duration_minutes
            clean = False
        self.starts[index] = start
        self.ends[index] = start + duration
        return clean

    def _time(self, arguments: dict[str, Any]) -> str:
        index, named = self._visit(
            arguments.get("visit"), [end is not None for end in self.ends]
        )
        if self.ends[index] is None:
            clean = self._schedule(
                index, _whole_number(arguments.get("duration_minutes"))
            )
            self.time_ok[index] = named and clean
        start, end = self.starts[index], self.ends[index]
        assert start is not None and end is not None
        return json.dumps(
            {
                "visit": index + 1,
                "travel_minutes": round(self.travel[index]),
                "start": _clock(start),
                "end": _clock(end),
            }
        )

    def finish(self) -> GroundedDay:
        """Fill every visit still without a location or a time by fallback; the grounded day.

        Returns:
            The day (travel, priors); its starts and ends are in :attr:`starts`, :attr:`ends`.
        """
        for index in range(len(self.activities)):
            if self.ends[index] is None:
                self._schedule(index, None)
        return GroundedDay(
            activities=list(self.activities),
            pois=[INVALID_POI if poi is None else poi for poi in self.pois],
            travel=list(self.travel),
            first_start=self.first_start,
            priors=[],
        )

    @property
    def visits_ok(self) -> list[bool]:
        """Per visit: both calls made, neither substituted."""
        return [
            location and timing
            for location, timing in zip(self.location_ok, self.time_ok, strict=True)
        ]


# ---------------------------------------------------------------------------- the decision
@dataclass(frozen=True)
class FreeformContext:
    """What the free-form agent is told: the chain and the day's first start.

    Attributes:
        agent_id: The individual.
        date: The date (ISO).
        weekday: Its weekday (0 = Monday).
        activities: The chain to ground.
        first_start_minute: When the first visit starts.
    """

    agent_id: object
    date: str
    weekday: int
    activities: tuple[str, ...]
    first_start_minute: float


class FreeformVisit(BaseModel):
    """One visit of the answer (as the tools said; every field optional)."""

    visit: int | None = None
    poi_id: int | str | None = None
    start: str | None = None
    end: str | None = None


class FreeformTrajectory(BaseModel):
    """The answer: the day's visits, transcribed from the tools."""

    visits: list[FreeformVisit]


def render_freeform_prompt(context: FreeformContext) -> list[Message]:
    """The chain, the tools' use and the answer's form."""
    chain = "\n".join(
        f"{index}. {name}" for index, name in enumerate(context.activities, 1)
    )
    return [
        {
            "role": "system",
            "content": "You turn one person's activity chain into a complete daily "
            "trajectory, using the tools location and time.",
        },
        {
            "role": "user",
            "content": (
                f"Person {context.agent_id}, {WEEKDAYS[context.weekday]} {context.date}.\n"
                f"Activity chain:\n{chain}\n"
                f"The first visit starts at {_clock(context.first_start_minute)}; the day "
                "ends at midnight. For every visit, in order: call location with the visit "
                "number and its activity, then time with the visit number and a realistic "
                "duration in minutes. When every visit has a place and times, answer with "
                '{"visits": [{"visit": 1, "poi_id": ..., "start": "HH:MM", "end": "HH:MM"}, '
                "...]}."
            ),
        },
    ]


def freeform_rule_policy(
    context: FreeformContext, rng: np.random.Generator
) -> FreeformTrajectory:
    """No tool called: an empty answer (every visit is then grounded by fallback)."""
    return FreeformTrajectory(visits=[])


FREEFORM_GROUNDING: DecisionKind[FreeformContext, FreeformTrajectory] = DecisionKind(
    name="FreeformGrounding",
    context_type=FreeformContext,
    output_schema=FreeformTrajectory,
    render_prompt=render_freeform_prompt,
    rule_policy=freeform_rule_policy,
)
"""One day's grounding by free-form tool calling (the paper's Table V)."""


def tool_success(tool_use: pd.DataFrame) -> dict[str, float]:
    """The paper's Table V rates from a tool-use table.

    Returns:
        ``visit_success`` (share of visits with both calls, unsubstituted), ``trajectory_
        success`` (share of days whose every visit was), ``trajectories`` and ``visits``.
    """
    visits = int(tool_use["visits"].sum())
    return {
        "trajectories": len(tool_use),
        "visits": visits,
        "visit_success": float(tool_use["visits_ok"].sum() / visits)
        if visits
        else float("nan"),
        "trajectory_success": float(tool_use["trajectory_ok"].mean())
        if len(tool_use)
        else float("nan"),
    }


class FreeformModel(VerifiedTrajectoryModel):
    """The trajectory model grounding sampled historical chains by free-form tool calling."""

    agent_class: ClassVar[type[IndividualAgent]] = HistoricalChainAgent

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tool_rows: list[dict[str, Any]] = []

    def _session(
        self,
        agent: IndividualAgent,
        activities: tuple[str, ...],
        weekday: int,
        seed: int,
    ) -> GroundingSession:
        first_start, _ = self.worker.day_bounds(
            agent.evidence, weekday, np.random.default_rng(seed)
        )
        return GroundingSession(
            self.worker,
            agent.evidence,
            activities,
            weekday,
            first_start,
            np.random.default_rng(seed + 1),
        )

    def step(self) -> None:
        """Ground the next date's fixed chains by free-form tool calling, for everyone."""
        if self.day >= len(self.dates):
            self.running = False
            return
        date = self.dates[self.day]
        time = {"day": self.day + 1, "date": date.date().isoformat()}
        weekday = int(date.weekday())
        agents = self.individuals
        requests, seeds = [], []
        for agent in agents:
            assert isinstance(agent, HistoricalChainAgent)
            chain = historical_chain_policy(
                agent.chain_request(date).context, agent.stream
            ).activities
            seed = int(agent.stream.integers(2**62))
            session = self._session(agent, tuple(chain), weekday, seed)
            seeds.append(seed)
            requests.append(
                DecisionRequest(
                    FREEFORM_GROUNDING,
                    agent.person_id,
                    FreeformContext(
                        agent.person_id,
                        time["date"],
                        weekday,
                        tuple(chain),
                        session.first_start,
                    ),
                    tools=session.toolbox(),
                    rng=agent.stream,
                )
            )
        results = self.decide(requests, **time)
        grounded, schedules = [], []
        for agent, request, seed, result in zip(
            agents, requests, seeds, results, strict=True
        ):
            self.record_decision(result, time, visit=None)
            session = self._replayed_session(agent, request, seed, result, weekday)
            day = session.finish()
            starts = [float(start) for start in session.starts if start is not None]
            # visits the tools pushed past midnight are dropped, as the workflow trims them
            kept = sum(start < MINUTES_PER_DAY for start in starts)
            day = dataclasses.replace(
                day,
                activities=day.activities[:kept],
                pois=day.pois[:kept],
                travel=day.travel[:kept],
                trimmed=len(starts) - kept,
            )
            grounded.append(day)
            starts = starts[:kept]
            ends = [
                min(float(end), MINUTES_PER_DAY)
                for end in session.ends[:kept]
                if end is not None
            ]
            _, day_end = self.worker.day_bounds(
                agent.evidence, weekday, np.random.default_rng(seed)
            )
            schedules.append((starts, stretch_to_day_end(ends, day_end)))
            ok = session.visits_ok
            self._tool_rows.append(
                {
                    **time,
                    "agent_id": agent.person_id,
                    "visits": len(ok),
                    "visits_ok": sum(ok),
                    "trajectory_ok": all(ok),
                    "tool_calls": len(result.tool_calls),
                    "answer_outcome": str(result.outcome),
                }
            )
        self._commit(agents, grounded, schedules)
        self._workflow_rows.append(
            {
                **time,
                "trajectories": len(agents),
                "visits": sum(len(day.pois) + day.trimmed for day in grounded),
                "grounded_visits": sum(len(starts) for starts, _ in schedules),
                "invalid_locations": sum(
                    poi == INVALID_POI for day in grounded for poi in day.pois
                ),
                "trimmed_visits": sum(day.trimmed for day in grounded),
                "chain_fallbacks": 0,
                "duration_fallbacks": sum(
                    result.outcome == Outcome.FALLBACK for result in results
                ),
            }
        )
        self.day += 1
        self.running = self.day < len(self.dates)

    def _replayed_session(
        self,
        agent: IndividualAgent,
        request: DecisionRequest[FreeformContext, FreeformTrajectory],
        seed: int,
        result: DecisionResult[FreeformContext, FreeformTrajectory],
        weekday: int,
    ) -> GroundingSession:
        """A fresh session with the decision's calls executed again, in order.

        The session's draws come from ``seed``, so this is what the calls did live (and what a
        replayed ledger's calls do).
        """
        session = self._session(agent, request.context.activities, weekday, seed)
        for use in result.tool_calls:
            try:
                session.execute(use.tool, dict(use.arguments))
            except ValueError:
                continue  # refused live too
        return session

    def tool_use_frame(self) -> pd.DataFrame:
        """One row per trajectory: visits, visits with both calls unsubstituted, tool calls."""
        return pd.DataFrame(self._tool_rows, columns=list(TOOL_USE_COLUMNS))
