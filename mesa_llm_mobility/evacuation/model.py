"""``EvacuationModel``: pedestrians escaping a moving threat in a plaza (the paper's world).

One Mesa step is one physical step of dt = 1/3 s. The world's state lives in a few objects, each
phase of the step is a function of the ones it reads and writes, and :meth:`EvacuationModel.step`
lists the phases in the paper's order (Sec. 2.3.1):

- :class:`~.scene.Scene`: the plaza, its effective layer (gate states) and fixed derived data;
- :class:`~.crowd.Crowd`: positions (their one home), headings, status and fear of everyone;
- :class:`~.senses.Senses`: this step's perception, the private beliefs, sightings, shouts heard;
- :class:`~.knowledge.Knowledge`: exit information passed and the record of exit knowledge;
- :class:`~.timing.Clock`: the step counter;
- :class:`~.memory_flow.MemoryFlow`: the memory role's requests and answers in flight;
- the records: events (:class:`~.event_log.EventLog`), positions
  (:class:`~.positions_log.PositionsLog`) and decisions (the base class's table).

Each step: gates follow the emergency schedule; perception is recomputed and written to the
private beliefs; at a 1 s boundary the answers due are taken, their new routes sent to the route
planner, and shouts and exit information pass; fear follows the strongest stimulus; at a boundary
due memory revisions and decisions are applied; new requests of the step go to the brain in one
batch; every entity proposes one move and moves are resolved (the adversary plans first);
evacuations and attacks are evaluated; the frame is recorded. The run ends when every pedestrian
evacuated or was reached, or at the time limit. :class:`~.stopwatch.PhaseTimer` times the phases.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

import mesa
import numpy as np
import pandas as pd

from mesa_llm_mobility.cognition.brain import Brain
from mesa_llm_mobility.cognition.kinds import (
    DecisionRequest,
    DecisionResult,
    OnInvalid,
    dispatch,
)
from mesa_llm_mobility.cognition.settings import BrainOptions
from mesa_llm_mobility.evacuation import run_files
from mesa_llm_mobility.evacuation.adversary_moves import attack
from mesa_llm_mobility.evacuation.affect import StimulusIntensities
from mesa_llm_mobility.evacuation.agents import (
    ACTIVE,
    EVACUATED,
    REACHED,
    STATUS_NAMES,
    Pedestrian,
    PendingDecision,
)
from mesa_llm_mobility.evacuation.commit import (
    apply_decision,
    apply_decisions,
    plan_routes_ahead,
    take_due_answers,
)
from mesa_llm_mobility.evacuation.communication import (
    communicate,
    provide_exit_information,
)
from mesa_llm_mobility.evacuation.contexts import decision_requests, due_requests
from mesa_llm_mobility.evacuation.crowd import Crowd, share_one_cell_class
from mesa_llm_mobility.evacuation.decision_context import EvacuationContext
from mesa_llm_mobility.evacuation.decision_output import EvacuationDecision
from mesa_llm_mobility.evacuation.decisions import EVACUATION_MOVE
from mesa_llm_mobility.evacuation.event_log import EventLog
from mesa_llm_mobility.evacuation.evidence import (
    observe,
    observe_initial,
    update_crowd_fear,
)
from mesa_llm_mobility.evacuation.exit_knowledge import ExitKnowledgeRecorder
from mesa_llm_mobility.evacuation.knowledge import Knowledge
from mesa_llm_mobility.evacuation.layers import GateSchedule
from mesa_llm_mobility.evacuation.memory_flow import MemoryFlow
from mesa_llm_mobility.evacuation.memory_role import (
    EVACUATION_MEMORY,
    MemoryContext,
    MemoryRevision,
)
from mesa_llm_mobility.evacuation.outputs import outcome_measures
from mesa_llm_mobility.evacuation.parameters import (
    EvacuationParameters,
    EvacuationRunOptions,
)
from mesa_llm_mobility.evacuation.personality import composition_profiles
from mesa_llm_mobility.evacuation.physical_step import (
    reach_openings,
    update_gates,
    walk,
)
from mesa_llm_mobility.evacuation.placement import (
    shortest_exit_distances,
    start_cells,
)
from mesa_llm_mobility.evacuation.plaza import Plaza, load_plaza
from mesa_llm_mobility.evacuation.positions_log import PositionsLog
from mesa_llm_mobility.evacuation.route_planner import RoutePlanner
from mesa_llm_mobility.evacuation.run_files import MEMORY_EMBEDDING
from mesa_llm_mobility.evacuation.scene import Scene
from mesa_llm_mobility.evacuation.senses import Senses
from mesa_llm_mobility.evacuation.stopwatch import PhaseTimer
from mesa_llm_mobility.evacuation.timing import STEPS_PER_SECOND, Clock, due_step
from mesa_llm_mobility.experiment.base_model import MobilityModel, Progress
from mesa_llm_mobility.experiment.collector import LongRun
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.memory.store import MemoryStore

logger = logging.getLogger(__name__)

type MoveResult = DecisionResult[EvacuationContext, EvacuationDecision]
"""A brain's answer to an ``EvacuationMove`` request."""

type MemoryResult = DecisionResult[MemoryContext, MemoryRevision]
"""A brain's answer to an ``EvacuationMemory`` request."""

type Rejection = Literal["paper", "repair"]
"""How the model treats an invalid LLM answer (see :class:`EvacuationModel`)."""

REJECTION_MODES: dict[str, OnInvalid] = {"paper": "reject", "repair": "repair"}
"""``rejection`` setting -> the requests' ``on_invalid``."""

PAPER_TEMPERATURE = 0.2
"""Sampling temperature of both LLM roles in the paper (Sec. 3.4)."""


class EvacuationModel(MobilityModel):
    """Crowd evacuation under a moving threat on a plaza raster.

    Args:
        parameters: The run's :class:`~.parameters.EvacuationParameters` (default: all
            defaults). ``plaza`` may be a loaded :class:`Plaza` and ``brain`` a
            :class:`Brain`.
        brain_options: Further :func:`make_brain` arguments (``api_base``, ``timeout_s``,
            ``ledger``, ...).
        rng: Seed or generator (a seed overrides the ``seed`` parameter).
        stimuli: Fear stimulus intensities (default: the paper's).
        record_positions: Keep the per-step positions table (large for big crowds).
        memory_store: A :class:`~mesa_llm_mobility.memory.MemoryStore` whose per-agent streams
            receive every long-term memory revision (``None``: the ``memory_versions`` table
            only).
        route_workers: Processes that plan a step's routes, this one included (1: none
            started). The results are the same for any number; more workers only make large
            crowds faster (:mod:`.route_planner`).
        checkpoint_every_s: A run's checkpoint interval in simulated seconds (``None``: at
            the start and the end only); used by the run lifecycle, changes no result.
        **overrides: Parameter values by name (``composition="H", block=2``).

    With ``rejection="paper"`` an LLM answer that fails validation is rejected: the pedestrian
    keeps its previous route, goal and capsule and is told why on its next turn; with
    ``"repair"`` it is re-prompted with the errors, then the rule policy answers in the same
    turn.

    LLM brains sample at temperature 0.2 (the paper's) unless ``brain_options`` says otherwise.

    The constructor builds the world and the first perception but calls no brain: the
    pedestrians' initial decisions are requested and applied at the start of the first
    :meth:`step` (recorded at step 0, as before).
    """

    parameters_class: ClassVar[type[EvacuationParameters]] = EvacuationParameters
    parameters: EvacuationParameters
    run_options_class: ClassVar[type[EvacuationRunOptions]] = EvacuationRunOptions
    keep_checkpoints: ClassVar[int | None] = 2
    """The latest two (the one before, should the latest be torn): one holds the whole model,
    about 0.6 GB for 10,000 pedestrians."""
    time_columns: ClassVar[tuple[str, ...]] = ("request_step", "applied_step", "time_s")
    decision_columns: ClassVar[tuple[str, ...]] = (
        "trigger",
        "inputs",
        "fear",
        "sees_threat",
        "remembered_threat",
        "heard_shouts",
        "n_options",
        "action",
        "situation",
        "goal",
        "intent",
        "urgency",
        "route_id",
        "target_dx",
        "target_dy",
        "anchor_kind",
        "opening_id",
        "shout",
        "cells_committed",
        "accepted",
        "commit_reason",
        "revision_level",
        "nearest_known_opening",
        "x",
        "y",
    )

    def __init__(
        self,
        parameters: EvacuationParameters | None = None,
        /,
        *,
        brain_options: BrainOptions | None = None,
        rng: int | np.random.Generator | None = None,
        stimuli: StimulusIntensities | None = None,
        record_positions: bool = True,
        memory_store: MemoryStore | None = None,
        route_workers: int = 1,
        checkpoint_every_s: float | None = None,
        **overrides: Any,
    ) -> None:
        options = {"temperature": PAPER_TEMPERATURE, **(brain_options or {})}
        super().__init__(parameters, brain_options=options, rng=rng, **overrides)
        p = self.parameters
        self.rejection: Rejection = p.rejection
        self.on_invalid: OnInvalid = REJECTION_MODES[p.rejection]
        self.initial_exit_information = p.initial_exit_information
        self.friction = p.friction
        self.memory = MemoryFlow(memory_store)
        """The memory role's requests and answers in flight, and its records."""
        self.checkpoint_every_steps = _checkpoint_steps(checkpoint_every_s)
        try:
            plaza = p.plaza if isinstance(p.plaza, Plaza) else load_plaza(p.plaza)
            if plaza.gates and not plaza.exits:
                logger.warning(
                    "plaza %s has gates but no exits: once the gates close (%.1f s), "
                    "nobody can leave",
                    plaza.name,
                    p.gates_closed_at_s,
                )
            self._build(
                plaza,
                p.composition,
                p.block,
                p.time_limit_s,
                GateSchedule(p.gates_closing_at_s, p.gates_closed_at_s),
                p.random_spawn,
                record_positions,
                stimuli or StimulusIntensities(),
                route_workers,
            )
        except BaseException:
            self.close()  # a refused world releases the brain it already opened
            raise

    def _build(
        self,
        plaza: Plaza,
        composition: str | Mapping[str, int],
        block: int | None,
        time_limit_s: float,
        gate_schedule: GateSchedule,
        random_spawn: bool | None,
        record_positions: bool,
        stimuli: StimulusIntensities,
        route_workers: int,
    ) -> None:
        """Build the world's state and the first perception (no brain call)."""
        self.time_limit_s = float(time_limit_s)
        self.composition = (
            composition if isinstance(composition, str) else dict(composition)
        )
        self.block = block
        self.stimuli = stimuli
        self.clock = Clock(round(time_limit_s * STEPS_PER_SECOND))
        self.scene = scene = Scene(plaza, gate_schedule)
        profiles = composition_profiles(composition)
        n = len(profiles)
        starts = start_cells(plaza, n, block, random_spawn, self.rng)
        self.crowd = crowd = Crowd(
            self, plaza.raw.shape, profiles, starts, plaza.threat_cell, self.rng
        )
        self.senses = Senses(plaza, n, scene.view)
        self.knowledge = Knowledge(
            ExitKnowledgeRecorder(plaza), scene.effective, crowd, self.clock
        )
        self.timer = PhaseTimer()
        """Wall seconds per phase of the steps (:data:`~.stopwatch.STEP_PHASES`)."""
        self.route_planner = RoutePlanner(
            plaza.raw,
            scene.graph,
            scene.opening_mask,
            scene.cell_size_m,
            route_workers,
            self.timer,
        )
        self.shortest_exit_m = shortest_exit_distances(
            plaza, scene.graph, scene.opening_cells, starts
        )
        """Metres from each pedestrian's start cell to the nearest exit."""
        self.events = EventLog(crowd.ids)
        self.positions = PositionsLog(record_positions)
        # attribute names, not lambdas: the collector is pickled with the model (checkpoints)
        self.datacollector = mesa.DataCollector(
            model_reporters={
                "time_s": "time_s",
                "active": "active_count",
                "evacuated": "evacuated_count",
                "reached": "reached_count",
                "mean_fear": "mean_active_fear",
            }
        )
        for opening in plaza.gates:
            self.events.record(
                0, "gate_state", None, None, f"{opening.opening_id}:open"
            )
        observe_initial(crowd, self.senses, self.knowledge, scene)
        if self.initial_exit_information:
            provide_exit_information(
                crowd, scene, self.knowledge, self.clock, self.events
            )
        observe(crowd, self.senses, self.knowledge, scene, self.clock, self.events)
        self._started = False

    # ------------------------------------------------------------------ the step
    def step(self) -> None:
        """Advance one physical step of dt = 1/3 s (the first also applies the initial decisions).

        The phases in the paper's order (Sec. 2.3.1), each timed by :attr:`timer`.
        """
        if not self._started:
            self._start()
        crowd, senses, knowledge, scene = (
            self.crowd,
            self.senses,
            self.knowledge,
            self.scene,
        )
        clock, events, timer = self.clock, self.events, self.timer
        boundary = clock.at_boundary
        with timer("perception"):
            update_gates(scene, clock, events)
            observe(crowd, senses, knowledge, scene, clock, events)
        with timer("other"):
            if boundary:
                due = take_due_answers(crowd, clock.tick)
                # the route workers plan the new routes while the next phases run
                routes = plan_routes_ahead(
                    due, crowd, senses.belief, scene.plaza.raw, self.route_planner
                )
                communicate(crowd, senses, knowledge, scene, clock, events)
            update_crowd_fear(crowd, senses, self.stimuli, clock)
            if boundary:
                self.memory.apply_due(clock.tick, crowd.by_uid)
                apply_decisions(
                    due,
                    routes,
                    crowd,
                    senses.belief,
                    scene.plaza.raw,
                    clock,
                    self.memory,
                    self.record_decision,
                )
        with timer("decisions"):
            self._decide()
        with timer("movement"):
            walk(crowd, scene, self.rng, self.friction)
        with timer("other"):
            clock.advance()
            evacuated = reach_openings(crowd, scene, clock, events)
            attack(crowd, scene, clock, events)
            self.positions.record(crowd, clock.tick)
            crowd.leave(evacuated)
            self.datacollector.collect(self)
            self._end_when_done()

    def _start(self) -> None:
        """The initial decisions of every pedestrian, applied at step 0 (first :meth:`step`)."""
        self._started = True
        requests = self._requests([(agent, "initial") for agent in self.pedestrians])
        dispatch(
            self.decide(requests, step=self.clock.tick),
            {EVACUATION_MOVE: self.apply_decision},
        )
        self.positions.record(self.crowd, self.clock.tick)
        self.datacollector.collect(self)

    def _decide(self) -> None:
        """The step's memory revisions and due decision requests, answered in one batch.

        Every answer is kept until its 1 s boundary (a pedestrian walks on meanwhile).
        """
        clock = self.clock
        requests = [
            *self.memory.take_queue(),
            *due_requests(
                self.crowd,
                self.senses,
                self.scene,
                clock,
                self.route_planner,
                self.on_invalid,
            ),
        ]
        due, step = due_step(clock.tick), clock.tick
        by_uid = self.crowd.by_uid

        def keep(result: MoveResult) -> None:
            by_uid[result.agent_id].pending = PendingDecision(step, due, result)

        dispatch(
            self.decide(requests, step=step),
            {
                EVACUATION_MOVE: keep,
                EVACUATION_MEMORY: lambda result: self.memory.defer(result, due, step),
            },
        )

    def _end_when_done(self) -> None:
        """Stop the run when nobody is left in the plaza or at the time limit."""
        if self.active_count and not self.clock.timed_out:
            return
        self.running = False
        logger.info(
            "run ended at %.2f s: %d evacuated, %d reached, %d unresolved",
            self.time_s,
            self.evacuated_count,
            self.reached_count,
            self.active_count,
        )

    def _requests(
        self, due: list[tuple[Pedestrian, str]]
    ) -> list[DecisionRequest[EvacuationContext, EvacuationDecision]]:
        return decision_requests(
            due,
            self.crowd,
            self.senses,
            self.scene,
            self.clock,
            self.route_planner,
            self.on_invalid,
        )

    def decision_request(
        self, agent: Pedestrian, trigger: str
    ) -> DecisionRequest[EvacuationContext, EvacuationDecision]:
        """The ``EvacuationMove`` request ``agent`` would state now (for inspection and tests).

        Args:
            agent: The pedestrian.
            trigger: Why it decides (``initial``, ``first_sighting``, ...).
        """
        return self._requests([(agent, trigger)])[0]

    def apply_decision(self, result: MoveResult) -> None:
        """Install an ``EvacuationMove`` answer now (the initial decisions; inspection, tests)."""
        apply_decision(
            self.crowd.by_uid[result.agent_id],
            result,
            self.crowd,
            self.senses.belief,
            self.scene.plaza.raw,
            self.clock,
            self.memory,
            self.record_decision,
            planner=self.route_planner,
        )

    # ------------------------------------------------------------------ reading the state
    @property
    def plaza(self) -> Plaza:
        """The plaza."""
        return self.scene.plaza

    @property
    def tick(self) -> int:
        """Physical steps done so far."""
        return self.clock.tick

    @property
    def limit_steps(self) -> int:
        """The time limit in steps."""
        return self.clock.limit_steps

    @property
    def time_s(self) -> float:
        """Simulated seconds since the emergency started."""
        return self.clock.time_s

    @property
    def n_pedestrians(self) -> int:
        """Pedestrians of the run."""
        return self.crowd.n_pedestrians

    @property
    def pedestrians(self) -> list[Pedestrian]:
        """The pedestrian agents, by row."""
        return self.crowd.pedestrians

    @property
    def timing(self) -> dict[str, float]:
        """Wall seconds per phase so far (:attr:`timer`)."""
        return self.timer.seconds

    @property
    def memory_store(self) -> MemoryStore | None:
        """The store receiving the memory revisions, if any."""
        return self.memory.store

    @property
    def active_count(self) -> int:
        """Pedestrians still in the plaza."""
        return self.crowd.count(ACTIVE)

    @property
    def evacuated_count(self) -> int:
        """Pedestrians who left through an opening."""
        return self.crowd.count(EVACUATED)

    @property
    def reached_count(self) -> int:
        """Pedestrians the adversary reached."""
        return self.crowd.count(REACHED)

    @property
    def mean_active_fear(self) -> float:
        """Mean fear of the pedestrians still in the plaza (NaN when none is)."""
        active = self.crowd.status == ACTIVE
        return float(self.crowd.fear[active].mean()) if np.any(active) else float("nan")

    # ------------------------------------------------------------------ running and results
    def run(self, max_steps: int | None = None) -> EvacuationModel:
        """Step until the run ends (or ``max_steps`` more steps); returns the model."""
        steps = 0
        with LongRun():
            while self.running and (max_steps is None or steps < max_steps):
                self.step()
                steps += 1
        return self

    def positions_frame(self) -> pd.DataFrame:
        """Per-step positions (:meth:`.positions_log.PositionsLog.frame`)."""
        return self.positions.frame()

    def events_frame(self) -> pd.DataFrame:
        """Events: sightings, shouts heard, exit info sent/received, gate states, evacuations, attacks."""
        return self.events.frame()

    def opening_observations_frame(self) -> pd.DataFrame:
        """Openings seen: one row per first sight and per changed state (:mod:`.exit_knowledge`)."""
        return self.knowledge.recorder.observations_frame()

    def exit_information_frame(self) -> pd.DataFrame:
        """Exit information passed: sender, receiver, opening, its state, hops (:mod:`.exit_knowledge`)."""
        return self.knowledge.recorder.information_frame()

    def pedestrians_frame(self) -> pd.DataFrame:
        """Static facts per pedestrian: archetype, start cell, shortest exit distance, outcome."""
        crowd = self.crowd
        return pd.DataFrame(
            {
                "agent_id": [a.unique_id for a in crowd.pedestrians],
                "archetype": [a.personality.archetype for a in crowd.pedestrians],
                "start_x": [a.start[0] for a in crowd.pedestrians],
                "start_y": [a.start[1] for a in crowd.pedestrians],
                "shortest_exit_m": self.shortest_exit_m,
                "outcome": [
                    STATUS_NAMES[int(s)] if s != ACTIVE else "unresolved"
                    for s in crowd.status
                ],
                "resolved_step": [
                    int(s) if s >= 0 else None for s in crowd.resolved_step
                ],
                "exit_used": [crowd.exit_used.get(a.index) for a in crowd.pedestrians],
            }
        )

    def memory_versions_frame(self) -> pd.DataFrame:
        """Every long-term memory revision (:meth:`.memory_flow.MemoryFlow.frame`)."""
        return self.memory.frame()

    def outcomes_frame(self) -> pd.DataFrame:
        """Per-pedestrian outcome measures (spec list; see :mod:`.outputs`)."""
        return outcome_measures(
            self.positions_frame(),
            self.decisions_frame(),
            self.events_frame(),
            self.pedestrians_frame(),
            self.scene.pocket,
            self.scene.cell_size_m,
        )

    # ------------------------------------------------------------------ checkpoints
    def __setstate__(self, state: dict[str, object]) -> None:
        """Restore a checkpoint (without the brain and the memory store: :meth:`attach`).

        The brain holds network clients and the ledger file, its options may hold an API key
        (never written to a checkpoint), the memory store a Chroma client; the route planner
        leaves its worker processes behind. The grid's cells share one class again
        (:func:`~.crowd.share_one_cell_class`).
        """
        self.__dict__.update(state)
        share_one_cell_class(self.crowd.grid)

    def attach(
        self,
        brain: str | Brain,
        memory_store: MemoryStore | None = None,
        brain_options: BrainOptions | None = None,
        route_workers: int | None = None,
    ) -> None:
        """Give an unpickled model its brain and memory store back.

        Args:
            brain: ``"rules"``, ``"llm:<model>"`` or a :class:`Brain`; built on the model's
                (restored) generator, so the run continues the same random stream.
            memory_store: The store holding the memory revisions as they were at the
                checkpoint (``None``: the run keeps none).
            brain_options: Further :func:`~mesa_llm_mobility.cognition.make_brain` arguments
                (``api_base``, ``ledger``, ``replay``, ...); the paper's temperature unless
                they set one.
            route_workers: Processes that plan the routes from now on (``None``: as before);
                the routes do not depend on it.
        """
        self.memory.store = memory_store
        if memory_store is not None:
            memory_store.defer_writes = True
        self.attach_brain(
            brain, {"temperature": PAPER_TEMPERATURE, **(brain_options or {})}
        )
        if route_workers is not None:
            self.route_planner.set_workers(route_workers)

    def close(self) -> None:
        """Release the brain and the route workers; write the memory store's deferred revisions."""
        planner = getattr(
            self, "route_planner", None
        )  # None in a world refused mid-build
        if planner is not None:
            planner.close()
        if self.memory.store is not None:
            self.memory.store.flush()
        super().close()

    # ------------------------------------------------------------------ run contract
    @classmethod
    def load_inputs(cls, parameters: EvacuationParameters) -> Plaza:
        """Load and check the plaza once, so a bad file writes nothing."""
        plaza = parameters.plaza
        return plaza if isinstance(plaza, Plaza) else load_plaza(plaza)

    @classmethod
    def for_run(
        cls,
        parameters: EvacuationParameters,
        run: RunDirectory,
        inputs: Plaza,
        brain_options: BrainOptions,
        *,
        memory_stream: bool,
        **options: Any,
    ) -> Self:
        """The model of a run (:class:`~.parameters.EvacuationRunOptions`).

        ``memory_stream`` keeps the memory revisions in ``memory/`` (Chroma).
        """
        store = None
        if memory_stream:
            store = MemoryStore.persistent(run.memory_dir, embedding=MEMORY_EMBEDDING)
            store.defer_writes = True
        try:
            return cls(
                parameters.replace(plaza=inputs),
                brain_options=brain_options,
                memory_store=store,
                **options,
            )
        except BaseException:
            if store is not None:
                store.close()
            raise

    def progress(self) -> Progress:
        """Steps of the time limit."""
        return Progress(self.tick, self.limit_steps, "step")

    def progress_status(self) -> dict[str, Any]:
        """Pedestrians still in the plaza, evacuated and reached, once a second."""
        if self.tick % STEPS_PER_SECOND:
            return {}
        return {
            "active": self.active_count,
            "evacuated": self.evacuated_count,
            "reached": self.reached_count,
        }

    def checkpoint_due(self) -> bool:
        """Every ``checkpoint_every_s`` simulated seconds, and at the end."""
        every = self.checkpoint_every_steps
        return not self.running or bool(every and self.tick % every == 0)

    def checkpoint_number(self) -> int:
        """Steps taken."""
        return self.tick

    def final_tables(self) -> dict[str, pd.DataFrame]:
        """Every table of :data:`~.run_files.TABLES`."""
        return run_files.run_tables(self)

    def write_outputs(self, run: RunDirectory) -> list[Path]:
        """The knowledge graph, the run's metadata and the trajectory plot."""
        return run_files.write_outputs(self, run)

    def summary_lines(self, run: RunDirectory) -> list[str]:
        """Where and when the run ended, and the outcome table."""
        return run_files.summary_lines(self, run)

    def memory_embedding(self) -> str:
        """The memory streams' offline embedding."""
        return MEMORY_EMBEDDING

    def long_run(self) -> AbstractContextManager[Any]:
        """The collector leaves the world built before the run out of its passes."""
        return LongRun()

    def restore(
        self,
        run: RunDirectory,
        number: int,
        memory_store: MemoryStore | None,
        brain_options: BrainOptions,
        *,
        route_workers: int,
        **options: Any,
    ) -> None:
        """The brain, the memory store and the route workers back.

        The checkpoint interval stays the run's.
        """
        self.attach(self.parameters.brain, memory_store, brain_options, route_workers)

    def apply_parameters(self, parameters: EvacuationParameters) -> None:
        """A longer (or shorter) time limit from now on."""
        self.time_limit_s = parameters.time_limit_s
        self.clock.limit_steps = round(parameters.time_limit_s * STEPS_PER_SECOND)
        self.running = bool(self.active_count) and not self.clock.timed_out
        super().apply_parameters(parameters.replace(plaza=self.parameters.plaza))

    @classmethod
    def check_fork(cls, parameters: EvacuationParameters, number: int) -> None:
        """A fork's time limit lies after its checkpoint."""
        if round(parameters.time_limit_s * STEPS_PER_SECOND) <= number:
            raise ValueError(
                f"time_limit_s={parameters.time_limit_s:g} ends before the checkpoint of "
                f"step {number}"
            )


def _checkpoint_steps(every_s: float | None) -> int:
    """Steps between a run's checkpoints (0: at the start and the end only), checked."""
    if every_s is None:
        return 0
    steps = round(every_s * STEPS_PER_SECOND)
    if not every_s > 0 or steps < 1:
        raise ValueError(
            f"checkpoint_every_s must be at least one step (1/{STEPS_PER_SECOND} s), "
            f"got {every_s!r}"
        )
    return steps
