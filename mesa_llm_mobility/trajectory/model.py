"""The trajectory model: one :class:`IndividualAgent` per person, one generated day per step.

A step generates one date for every individual, in the paper's two stages, with each stage's
decisions batched through the brain:

1. every agent states an ``ActivityChain`` request (:mod:`.orchestrator`); one batch;
2. the deterministic workflow grounds every chain (locations, travel times, first start;
   :mod:`.workflow`), then the durations are decided: one ``DayDurations`` request per agent in
   one batch (``settings.durations == "day"``, the default: two decisions per trajectory), or one
   ``VisitDuration`` batch per visit position (``"visit"``, the paper's per-visit worker).

:func:`generate` is the same without Mesa in sight: history in, generated stay points out.

Every random draw of an individual (their rule policies, an LLM brain's fallbacks for them, the
workflow's locations and first start) comes from their own stream,
:func:`individual_stream`: ``SeedSequence(seed, spawn_key=<their id>)``. So an individual's
trajectory is the same whoever else is generated with them, which lets
:mod:`~mesa_llm_mobility.trajectory.shards` split the individuals into shards and get the
unsharded result.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

import mesa
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from mesa_llm_mobility.clock import MINUTES_PER_DAY
from mesa_llm_mobility.cognition.brain import Brain
from mesa_llm_mobility.cognition.kinds import DecisionRequest, DecisionResult, Outcome
from mesa_llm_mobility.cognition.settings import BrainOptions
from mesa_llm_mobility.experiment.base_model import MobilityModel, Progress
from mesa_llm_mobility.experiment.parameters import ParameterError
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.trajectory.activities import ACTIVITIES, ACTIVITY_INDEX
from mesa_llm_mobility.trajectory.durations import (
    DAY_DURATIONS,
    VISIT_DURATION,
    DayDurationsContext,
    VisitDurationContext,
)
from mesa_llm_mobility.trajectory.evidence import (
    EvidenceBook,
    IndividualEvidence,
)
from mesa_llm_mobility.trajectory.orchestrator import ACTIVITY_CHAIN, ChainContext
from mesa_llm_mobility.trajectory.parameters import (
    TrajectoryParameters,
    TrajectoryRunOptions,
)
from mesa_llm_mobility.trajectory.run_files import (
    GenerationInputs,
    check_stays_file,
    read_inputs,
    record_generation,
    settings_parameters,
    workflow_success_rate,
)
from mesa_llm_mobility.trajectory.staypoints import STAY_COLUMNS
from mesa_llm_mobility.trajectory.workflow import (
    INVALID_POI,
    GroundedDay,
    LocationWorker,
    WorkflowSettings,
    stretch_to_day_end,
)

WORKFLOW_COLUMNS = (
    "day",
    "date",
    "trajectories",
    "visits",
    "grounded_visits",
    "invalid_locations",
    "trimmed_visits",
    "chain_fallbacks",
    "duration_fallbacks",
)
"""Columns of :meth:`TrajectoryModel.workflow_frame`: one row per generated day."""


PAPER_TEMPERATURE = 0.9
"""The paper's sampling temperature (its best), the LLM brain's default."""

PAPER_TOP_P = 0.95
"""The paper's nucleus sampling (Sec. IV-D), sent as ``top_p`` (brain ``extra_params``)."""

PAPER_MAX_TOKENS = 1024
"""The paper's output limit (Sec. IV-D); its context limit, 8192 tokens, is the server's
(vLLM's ``--max-model-len``, llama.cpp's ``-c``), not a request parameter."""


def paper_sampling(options: BrainOptions | None) -> BrainOptions:
    """Brain options with the paper's sampling wherever they do not say otherwise.

    Temperature 0.9, top-p 0.95 and at most 1024 completion tokens (Sec. IV-D); a ``top_p``
    given in ``extra_params`` wins. The trajectory model's LLM brain samples so by default.
    """
    result = BrainOptions(**dict(options or {}))
    result.setdefault("temperature", PAPER_TEMPERATURE)
    result.setdefault("max_tokens", PAPER_MAX_TOKENS)
    result["extra_params"] = {
        "top_p": PAPER_TOP_P,
        **(result.get("extra_params") or {}),
    }
    return result


def stream_key(agent_id: Hashable) -> tuple[int, int]:
    """The ``spawn_key`` of an individual's stream.

    ``(0, id)`` for a non-negative integer id, else ``(1, <64-bit BLAKE2b of str(id)>)``:
    stable across processes and machines (unlike ``hash``).
    """
    if (
        isinstance(agent_id, int | np.integer)
        and not isinstance(agent_id, bool)
        and agent_id >= 0
    ):
        return (0, int(agent_id))
    digest = hashlib.blake2b(str(agent_id).encode(), digest_size=8).digest()
    return (1, int.from_bytes(digest, "big"))


def individual_stream(entropy: int, agent_id: Hashable) -> np.random.Generator:
    """An individual's own generator: ``SeedSequence(entropy, spawn_key=stream_key(id))``.

    Args:
        entropy: The run's seed (a non-negative integer).
        agent_id: The individual's id.

    Returns:
        A PCG64 generator (what :func:`numpy.random.default_rng` builds).
    """
    sequence = np.random.SeedSequence(entropy, spawn_key=stream_key(agent_id))
    return np.random.Generator(np.random.PCG64(sequence))


class IndividualAgent(mesa.Agent):
    """One person: their evidence, and the orchestrator request they state each day.

    Attributes:
        person_id: The person's id in the history.
        evidence: Their evidence profile.
        stream: Their own generator (:func:`individual_stream`); every draw made for them.
    """

    def __init__(
        self,
        model: TrajectoryModel,
        evidence: IndividualEvidence,
        stream: np.random.Generator,
    ) -> None:
        super().__init__(model)
        self.person_id = evidence.agent_id
        self.evidence = evidence
        self.stream = stream
        self._contexts: dict[int, ChainContext] = {}

    def chain_request(self, date: pd.Timestamp) -> DecisionRequest[ChainContext, Any]:
        """The ``ActivityChain`` request for a date (evidence of its weekday)."""
        weekday = int(date.weekday())
        base = self._contexts.get(weekday)
        if base is None:
            base = self._chain_context(weekday)
            self._contexts[weekday] = base
        context = dataclasses.replace(base, date=date.date().isoformat())
        return DecisionRequest(ACTIVITY_CHAIN, self.person_id, context, rng=self.stream)

    def _chain_context(self, weekday: int) -> ChainContext:
        settings = self.model.settings
        evidence = self.evidence
        days = evidence.evidence_days(weekday)
        chains = [evidence.chains[day] for day in days]
        exemplars = tuple(
            tuple(ACTIVITIES[code] for code in chain)
            for chain in reversed(chains[-settings.exemplars :])
        )
        codes = np.concatenate(chains)
        counts = np.bincount(codes, minlength=len(ACTIVITIES))
        order = np.argsort(-counts, kind="stable")[: settings.summary_items]
        shares = tuple(
            (ACTIVITIES[code], float(counts[code] / counts.sum()))
            for code in order
            if counts[code]
        )
        pairs = Counter(
            (int(first), int(second))
            for chain in chains
            for first, second in itertools.pairwise(chain)
        )
        total = sum(pairs.values()) or 1
        transitions = tuple(
            (ACTIVITIES[first], ACTIVITIES[second], count / total)
            for (first, second), count in pairs.most_common(settings.summary_items)
        )
        start, transition = evidence.markov(weekday)
        return ChainContext(
            agent_id=self.person_id,
            date="",
            weekday=weekday,
            exemplars=exemplars,
            activity_shares=shares,
            transitions=transitions,
            feasible=self.model.worker.feasible(self.person_id),
            max_length=settings.max_chain_length,
            start_probs=start,
            transition_probs=transition,
            lengths=tuple(int(length) for length in evidence.chain_lengths(weekday)),
            first_activity=_anchor([chain[0] for chain in chains], settings),
            last_activity=_anchor([chain[-1] for chain in chains], settings),
        )


def _anchor(codes: list[int], settings: WorkflowSettings) -> str | None:
    """The activity of at least ``settings.anchor_share`` of the evidence days' ends, if any."""
    counts = np.bincount(np.asarray(codes, dtype=np.int64), minlength=len(ACTIVITIES))
    code = int(counts.argmax())
    return (
        ACTIVITIES[code] if counts[code] >= settings.anchor_share * len(codes) else None
    )


def _resolve_dates(
    book: EvidenceBook,
    history: pd.DataFrame,
    days: int,
    start_date: str | pd.Timestamp | None,
    dates: Sequence[str | pd.Timestamp] | None,
) -> list[pd.Timestamp]:
    """Local midnights of the dates to generate."""
    if dates is not None:
        stamps = [pd.Timestamp(value) for value in dates]
    else:
        if days < 0:
            raise ValueError(f"days must be >= 0, got {days}")
        first = (
            pd.Timestamp(start_date)
            if start_date is not None
            else history["start"].max().tz_convert(book.timezone).normalize()
            + pd.Timedelta(days=1)
        )
        stamps = [first + pd.Timedelta(days=offset) for offset in range(days)]
    return [
        (
            stamp.tz_localize(book.timezone)
            if stamp.tzinfo is None
            else stamp.tz_convert(book.timezone)
        ).normalize()
        for stamp in stamps
    ]


class TrajectoryModel(MobilityModel):
    """Generates daily trajectories of every individual of a history (TrajGenAgent on Mesa).

    Args:
        parameters: The run's :class:`~.parameters.TrajectoryParameters`, or the history
            itself (a valid stay-point table or its file) with the other parameters as
            keyword arguments.
        dates: The exact dates to generate (instead of ``days`` and ``start_date``); the
            held-out dates when the parameters hold out days.
        settings: Further workflow settings (its ``durations``, ``alpha`` and ``peers`` are
            the parameters').
        evidence: A prebuilt evidence book of the history (built if ``None``).
        individuals: Generate only these individuals of the evidence (ids; default: all);
            the evidence, and so every peer pool, stays the whole history's.
        brain_options: Further brain options.
        rng: Seed or generator. A seed is the entropy of every individual's stream; a
            generator gives that entropy with one draw.
        **overrides: Parameter values by name (``days=3, durations="visit"``).

    Raises:
        StayPointError: For a bad history, or an individual with fewer history days than
            ``settings.min_history_days``.
        ValueError: For an id of ``individuals`` the history does not have.
    """

    parameters_class: ClassVar[type[TrajectoryParameters]] = TrajectoryParameters
    parameters: TrajectoryParameters
    time_columns: ClassVar[tuple[str, ...]] = ("day", "date")
    decision_columns: ClassVar[tuple[str, ...]] = ("visit",)
    agent_class: ClassVar[type[IndividualAgent]] = IndividualAgent
    """The agents' class: a subclass states other orchestrator requests (the baselines)."""
    checkpoint_unit: ClassVar[str] = "day"
    keep_checkpoints: ClassVar[int | None] = 2
    run_options_class: ClassVar[type[TrajectoryRunOptions]] = TrajectoryRunOptions

    def __init__(
        self,
        parameters: TrajectoryParameters | pd.DataFrame | str | Path | None = None,
        /,
        *,
        dates: Sequence[str | pd.Timestamp] | None = None,
        settings: WorkflowSettings | None = None,
        evidence: EvidenceBook | None = None,
        individuals: Sequence[Hashable] | None = None,
        brain_options: BrainOptions | None = None,
        rng: int | np.random.Generator | None = None,
        **overrides: Any,
    ) -> None:
        if parameters is not None and not isinstance(parameters, TrajectoryParameters):
            overrides["history"], parameters = parameters, None
        super().__init__(
            parameters,
            brain_options=paper_sampling(brain_options),
            rng=rng,
            **overrides,
        )
        p = self.parameters
        inputs = read_inputs(p, settings=settings, evidence=evidence)
        self.settings = inputs.settings
        self.book = inputs.book
        self.held_out = inputs.held_out
        self.stays_file: Path | None = None
        """Where a run also writes its generated stay points (the ``stays`` run option)."""
        self.worker = LocationWorker(self.book, self.settings)
        self.dates = _resolve_dates(
            self.book,
            inputs.history,
            p.days,
            p.start_date,
            dates if dates is not None else inputs.dates,
        )
        entropy = self.seed if self.seed is not None else int(self.rng.integers(2**63))
        for item in self._selected(individuals):
            self.agent_class(self, item, individual_stream(entropy, item.agent_id))
        self.day = 0
        self.running = bool(self.dates)
        self._visits: dict[str, list[Any]] = {
            "agent_id": [],
            "poi": [],
            "activity": [],
            "date": [],
            "start": [],
            "end": [],
        }
        self._workflow_rows: list[dict[str, Any]] = []
        self.datacollector = mesa.DataCollector(
            model_reporters={
                "day": "day",
                "visits": "visits_generated",
                "workflow_success_rate": "success_rate",
            }
        )

    def _selected(
        self, individuals: Sequence[Hashable] | None
    ) -> list[IndividualEvidence]:
        """The evidence of the individuals to generate, in history order."""
        book = self.book.individuals
        if individuals is None:
            return list(book.values())
        wanted = set(individuals)
        unknown = [agent_id for agent_id in individuals if agent_id not in book]
        if unknown:
            raise ValueError(
                f"individuals: {len(unknown)} id(s) not in the history, e.g. {unknown[0]!r}"
            )
        return [item for agent_id, item in book.items() if agent_id in wanted]

    @property
    def individuals(self) -> list[IndividualAgent]:
        """The agents, in history order."""
        return list(self.agents_by_type[self.agent_class])

    # ------------------------------------------------------------------ one day
    def step(self) -> None:
        """Generate the next date for every individual."""
        if self.day >= len(self.dates):
            self.running = False
            return
        date = self.dates[self.day]
        time = {"day": self.day + 1, "date": date.date().isoformat()}
        agents = self.individuals
        chains = self.decide([agent.chain_request(date) for agent in agents], **time)
        for result in chains:
            self.record_decision(result, time, visit=None)
        grounded = [
            self.worker.ground_day(
                agent.person_id, result.output.activities, date.weekday(), agent.stream
            )
            for agent, result in zip(agents, chains, strict=True)
        ]
        if self.settings.durations == "day":
            schedules, duration_results = self._durations_per_day(
                agents, grounded, time
            )
        else:
            schedules, duration_results = self._durations_per_visit(
                agents, grounded, time
            )
        schedules = [
            (starts, stretch_to_day_end(ends, day.day_end))
            for day, (starts, ends) in zip(grounded, schedules, strict=True)
        ]
        self._commit(agents, grounded, schedules)
        self._workflow_rows.append(
            {
                **time,
                "trajectories": len(agents),
                "visits": sum(len(result.output.activities) for result in chains),
                "grounded_visits": sum(len(starts) for starts, _ in schedules),
                "invalid_locations": sum(
                    poi == INVALID_POI for day in grounded for poi in day.pois
                ),
                "trimmed_visits": sum(day.trimmed for day in grounded)
                + sum(
                    len(day.pois) - len(starts)
                    for day, (starts, _) in zip(grounded, schedules, strict=True)
                ),
                "chain_fallbacks": sum(
                    result.outcome == Outcome.FALLBACK for result in chains
                ),
                "duration_fallbacks": sum(
                    result.outcome == Outcome.FALLBACK for result in duration_results
                ),
            }
        )
        self.day += 1
        self.running = self.day < len(self.dates)
        self.datacollector.collect(self)

    def _durations_per_day(
        self,
        agents: list[IndividualAgent],
        grounded: list[GroundedDay],
        time: dict[str, Any],
    ) -> tuple[list[tuple[list[float], list[float]]], list[DecisionResult[Any, Any]]]:
        requests = [
            DecisionRequest(
                DAY_DURATIONS,
                agent.person_id,
                DayDurationsContext(
                    agent_id=agent.person_id,
                    date=time["date"],
                    first_start_minute=day.first_start,
                    travel_minutes=tuple(day.travel),
                    priors=tuple(day.priors),
                ),
                rng=agent.stream,
            )
            for agent, day in zip(agents, grounded, strict=True)
        ]
        results = self.decide(requests, **time)
        schedules = []
        for day, result in zip(grounded, results, strict=True):
            self.record_decision(result, time, visit=None)
            clock = day.first_start
            starts, ends = [], []
            for travel, duration in zip(
                day.travel, result.output.durations_minutes, strict=True
            ):
                clock += travel
                starts.append(clock)
                clock += duration
                ends.append(clock)
            schedules.append((starts, ends))
        return schedules, results

    def _durations_per_visit(
        self,
        agents: list[IndividualAgent],
        grounded: list[GroundedDay],
        time: dict[str, Any],
    ) -> tuple[list[tuple[list[float], list[float]]], list[DecisionResult[Any, Any]]]:
        schedules: list[tuple[list[float], list[float]]] = [([], []) for _ in grounded]
        open_days = set(range(len(grounded)))
        every_result: list[DecisionResult[Any, Any]] = []
        for visit in range(max((len(day.pois) for day in grounded), default=0)):
            owners, requests = [], []
            for index in sorted(open_days):
                day = grounded[index]
                if visit >= len(day.pois):
                    open_days.discard(index)
                    continue
                starts, ends = schedules[index]
                start = day.first_start if visit == 0 else ends[-1] + day.travel[visit]
                if start >= MINUTES_PER_DAY:
                    open_days.discard(index)  # the day is over: the rest is trimmed
                    continue
                owners.append(index)
                requests.append(
                    DecisionRequest(
                        VISIT_DURATION,
                        agents[index].person_id,
                        VisitDurationContext(
                            agent_id=agents[index].person_id,
                            prior=day.priors[visit],
                            start_minute=start,
                            remaining=tuple(day.activities[visit + 1 :]),
                            remaining_expected_minutes=float(
                                sum(
                                    prior.prior_minutes
                                    for prior in day.priors[visit + 1 :]
                                )
                            ),
                            remaining_travel_minutes=float(
                                sum(day.travel[visit + 1 :])
                            ),
                        ),
                        rng=agents[index].stream,
                    )
                )
            results = self.decide(requests, **time)
            every_result += results
            for index, request, result in zip(owners, requests, results, strict=True):
                self.record_decision(result, time, visit=visit)
                starts, ends = schedules[index]
                starts.append(request.context.start_minute)
                ends.append(
                    request.context.start_minute + result.output.duration_minutes
                )
        return schedules, every_result

    def _commit(
        self,
        agents: list[IndividualAgent],
        grounded: list[GroundedDay],
        schedules: list[tuple[list[float], list[float]]],
    ) -> None:
        visits = self._visits
        for agent, day, (starts, ends) in zip(agents, grounded, schedules, strict=True):
            for index, (start, end) in enumerate(zip(starts, ends, strict=True)):
                if day.pois[index] == INVALID_POI:
                    continue
                visits["agent_id"].append(agent.person_id)
                visits["poi"].append(day.pois[index])
                visits["activity"].append(ACTIVITY_INDEX[day.activities[index]])
                visits["date"].append(self.day)
                visits["start"].append(start)
                visits["end"].append(end)

    # ------------------------------------------------------------------ running and tables
    def run(self, days: int | None = None, *, progress: bool = False) -> Self:
        """Generate ``days`` more dates (default: all that remain).

        Args:
            days: Dates to generate now.
            progress: Show a progress bar.

        Returns:
            The model.
        """
        remaining = len(self.dates) - self.day
        count = remaining if days is None else min(days, remaining)
        for _ in tqdm(range(count), desc="days", unit="day", disable=not progress):
            self.step()
        return self

    def trajectories_frame(self) -> pd.DataFrame:
        """The generated stay points (:data:`~.staypoints.STAY_COLUMNS`), by agent and start."""
        visits = self._visits
        poi = np.asarray(visits["poi"], dtype=np.int64)
        midnights = pd.DatetimeIndex(self.dates)
        date_index = np.asarray(visits["date"], dtype=np.int64)
        base = (
            midnights[date_index]
            if len(date_index)
            else pd.DatetimeIndex([], tz=self.book.timezone)
        )
        start = base + pd.to_timedelta(
            np.asarray(visits["start"], dtype=float), unit="min"
        )
        end = base + pd.to_timedelta(np.asarray(visits["end"], dtype=float), unit="min")
        frame = pd.DataFrame(
            {
                "agent_id": visits["agent_id"],
                "poi_id": self.book.poi_ids[poi] if poi.size else [],
                "latitude": self.book.poi_lat[poi],
                "longitude": self.book.poi_lon[poi],
                "activity": [ACTIVITIES[code] for code in visits["activity"]],
                "start": start.round("s"),
                "end": end.round("s"),
            },
            columns=list(STAY_COLUMNS),
        )
        return frame.sort_values(["agent_id", "start"], kind="stable").reset_index(
            drop=True
        )

    @property
    def visits_generated(self) -> int:
        """Visits generated so far (every individual, every day)."""
        return len(self._visits["agent_id"])

    @property
    def success_rate(self) -> float:
        """:meth:`workflow_success_rate` so far (a reporter of the data collector)."""
        return self.workflow_success_rate()

    def workflow_frame(self) -> pd.DataFrame:
        """One row per generated day: visits planned and grounded, and every fallback counted."""
        return pd.DataFrame(self._workflow_rows, columns=list(WORKFLOW_COLUMNS))

    def workflow_success_rate(self) -> float:
        """Share of the kept visits that got a POI, a start and a duration (1.0 when none)."""
        return workflow_success_rate(self.workflow_frame())

    # ------------------------------------------------------------------ run contract
    @classmethod
    def load_inputs(cls, parameters: TrajectoryParameters) -> GenerationInputs:
        """Read and check the history once, so a bad file writes nothing."""
        if parameters.hold_out == 0 and parameters.days == 0:
            raise ParameterError(
                "trajectory: nothing to generate: days is 0 and no hold-out"
            )
        return read_inputs(parameters)

    @classmethod
    def for_run(
        cls,
        parameters: TrajectoryParameters,
        run: RunDirectory,
        inputs: GenerationInputs,
        brain_options: BrainOptions,
        *,
        stays: str | None,
        **options: Any,
    ) -> Self:
        """The model of a run; ``stays`` also writes the generated stay points to a file."""
        model = cls(
            parameters.replace(history=inputs.history, hold_out=0),
            dates=inputs.dates,
            settings=inputs.settings,
            evidence=inputs.book,
            brain_options=brain_options,
            **options,
        )
        model.held_out = inputs.held_out
        model.stays_file = None if stays is None else check_stays_file(stays)
        return model

    def progress(self) -> Progress:
        """Days generated."""
        return Progress(self.day, len(self.dates), "day")

    def checkpoint_due(self) -> bool:
        """After every generated day."""
        return True

    def checkpoint_number(self) -> int:
        """Days generated."""
        return self.day

    @classmethod
    def ledger_after(cls, number: int) -> Callable[[Mapping[str, Any]], bool]:
        """The records of the days after day ``number``."""
        return lambda record: int((record.get("tags") or {}).get("day", 0)) > number

    def final_tables(self) -> dict[str, pd.DataFrame]:
        """The generated stay points, the decisions, the workflow and the held-out days."""
        tables = {
            "trajectories": self.trajectories_frame(),
            "decisions": self.decisions_frame(),
            "workflow": self.workflow_frame(),
        }
        if not self.held_out.empty:
            tables["held_out"] = self.held_out.drop(
                columns="source_row", errors="ignore"
            )
        return tables

    def write_outputs(self, run: RunDirectory) -> list[Path]:
        """The run's metadata; the stay-point file when asked for one."""
        return record_generation(
            run,
            {
                "trajectories": self.trajectories_frame(),
                "workflow": self.workflow_frame(),
            },
            brain=self.brain.name,
            individuals=len(self.individuals),
            dates=[date.date().isoformat() for date in self.dates],
            stays_file=self.stays_file,
        )

    def summary_lines(self, run: RunDirectory) -> list[str]:
        """Individuals, days, visits and the workflow's success."""
        people, days = len(self.individuals), len(self.dates)
        visits = self.visits_generated
        line = (
            f"{people} individuals x {days} days, brain {self.brain.name}, seed "
            f"{self.seed}: {visits} visits ({visits / max(people * days, 1):.2f} per day), "
            f"workflow success {self.workflow_success_rate():.1%}"
        )
        return [line]

    def apply_parameters(self, parameters: TrajectoryParameters) -> None:
        """More (or fewer) days after the history (a fork of a run without a hold-out)."""
        if parameters.days != self.parameters.days and not self.held_out.empty:
            raise ParameterError(
                "days: a run with held-out days generates those dates; it cannot change"
            )
        if parameters.days != self.parameters.days:
            first = self.dates[0]
            self.dates = [first + pd.Timedelta(days=k) for k in range(parameters.days)]
            self.running = self.day < len(self.dates)
        super().apply_parameters(
            parameters.replace(history=self.parameters.history, hold_out=0)
        )


def generate(
    history: pd.DataFrame,
    days: int = 7,
    *,
    brain: str | Brain | None = "rules",
    rng: int | np.random.Generator | None = None,
    start_date: str | pd.Timestamp | None = None,
    dates: Sequence[str | pd.Timestamp] | None = None,
    settings: WorkflowSettings | None = None,
    brain_options: BrainOptions | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Generate daily trajectories for every individual of a history.

    Args:
        history: A valid stay-point table (e.g. from :func:`~.staypoints.read_history`).
        days: Dates to generate, from the day after the history (or ``start_date``).
        brain: ``"rules"`` (offline), ``"llm:<model>"`` or a brain.
        rng: Seed or generator.
        start_date: First date to generate.
        dates: Exact dates to generate instead.
        settings: Workflow parameters.
        brain_options: Further brain options (``api_base``, ...).
        progress: Show a progress bar.

    Returns:
        The generated stay points, one row per visit.
    """
    settings = settings or WorkflowSettings()
    with TrajectoryModel(
        history,
        days=days,
        start_date=None if start_date is None else str(start_date),
        dates=dates,
        settings=settings,
        **settings_parameters(settings),
        brain=brain,
        brain_options=brain_options,
        rng=rng,
    ) as model:
        model.run(progress=progress)
        return model.trajectories_frame()
