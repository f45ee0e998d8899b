"""``EvacuationModel``: pedestrians escaping a moving threat in a plaza (the paper's world).

One Mesa step is one physical step of dt = 1/3 s. Each step: gates follow the emergency schedule;
perception is recomputed and written to the private beliefs; evidence (sightings, shouts, exit
information, fleeing neighbours) updates fear; due decisions are applied at 1 s boundaries; new
decision requests of the step go to the brain in one batch; the adversary plans; every entity
proposes one move and moves are resolved; evacuations and attacks are evaluated; the frame is
recorded. The run ends when every pedestrian evacuated or was reached, or at the time limit.
"""

from __future__ import annotations

import copyreg
import logging
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from time import perf_counter
from typing import Any, ClassVar, Literal, Self

import mesa
import numpy as np
import pandas as pd
from mesa.discrete_space import OrthogonalMooreGrid
from mesa.discrete_space.grid import pickle_gridcell
from mesa.discrete_space.property_layer import create_property_accessors

from mesa_llm_mobility.cognition.brain import Brain
from mesa_llm_mobility.cognition.kinds import (
    DecisionRequest,
    DecisionResult,
    OnInvalid,
    dispatch,
)
from mesa_llm_mobility.cognition.settings import BrainOptions
from mesa_llm_mobility.evacuation import run_files
from mesa_llm_mobility.evacuation.adversary_moves import attack, propose_move
from mesa_llm_mobility.evacuation.affect import (
    StimulusIntensities,
    recovery_rate,
    sensitivity,
)
from mesa_llm_mobility.evacuation.agents import (
    ACTIVE,
    EVACUATED,
    REACHED,
    STATUS_NAMES,
    Adversary,
    Pedestrian,
    PendingDecision,
)
from mesa_llm_mobility.evacuation.commit import (
    apply_decision,
    apply_decisions,
    send_new_routes,
)
from mesa_llm_mobility.evacuation.communication import communicate
from mesa_llm_mobility.evacuation.contexts import decision_requests, due_requests
from mesa_llm_mobility.evacuation.decisions import (
    EVACUATION_MOVE,
    EvacuationContext,
    EvacuationDecision,
)
from mesa_llm_mobility.evacuation.event_log import EventLog
from mesa_llm_mobility.evacuation.evidence import (
    observe,
    observe_initial,
    update_crowd_fear,
)
from mesa_llm_mobility.evacuation.exit_knowledge import ExitKnowledgeRecorder
from mesa_llm_mobility.evacuation.hearing import ShoutLog
from mesa_llm_mobility.evacuation.layers import (
    BeliefStore,
    EffectiveLayer,
    GateSchedule,
)
from mesa_llm_mobility.evacuation.memory_flow import (
    apply_due_revisions,
    defer_revision,
    memory_versions_frame,
)
from mesa_llm_mobility.evacuation.memory_role import (
    EVACUATION_MEMORY,
    MemoryContext,
    MemoryRevision,
)
from mesa_llm_mobility.evacuation.movement import (
    BLOCKED,
    MOVED,
    resolve_moves,
)
from mesa_llm_mobility.evacuation.outputs import outcome_measures
from mesa_llm_mobility.evacuation.parameters import (
    EvacuationParameters,
    EvacuationRunOptions,
)
from mesa_llm_mobility.evacuation.perception import (
    Perception,
    RepeatedViews,
    ViewGeometry,
    heading_index,
)
from mesa_llm_mobility.evacuation.personality import composition_profiles
from mesa_llm_mobility.evacuation.placement import (
    inner_cell,
    pocket_cells,
    shortest_exit_distances,
    start_cells,
)
from mesa_llm_mobility.evacuation.plaza import (
    MOORE_STEPS,
    Plaza,
    load_plaza,
    passable_mask,
)
from mesa_llm_mobility.evacuation.route_planner import RoutePlanner
from mesa_llm_mobility.evacuation.routing import GridGraph, bearing_deg
from mesa_llm_mobility.evacuation.run_files import MEMORY_EMBEDDING
from mesa_llm_mobility.evacuation.timing import (
    DT_S,
    STEPS_PER_SECOND,
    due_step,
)
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

SIGHT_RADIUS_M = 12.0
CONE_DEG = 120.0
INITIAL_CHEBYSHEV = 3


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
    keep_checkpoints: ClassVar[int | None] = 2
    """The latest two (the one before, should the latest be torn): one holds the whole model,
    about 0.6 GB for 10,000 pedestrians."""
    run_options_class: ClassVar[type[EvacuationRunOptions]] = EvacuationRunOptions
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
        self.memory_store = memory_store
        self.memory_queue: list[DecisionRequest[MemoryContext, MemoryRevision]] = []
        """Memory revisions stated this step, sent with the step's decision requests."""
        self.memory_due: list[tuple[int, int, MemoryResult]] = []
        """Memory answers waiting for their boundary: (due step, request step, result)."""
        self.memory_rows: list[tuple[object, ...]] = []
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
                stimuli,
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
        gate_schedule: GateSchedule | None,
        random_spawn: bool | None,
        record_positions: bool,
        stimuli: StimulusIntensities | None,
        route_workers: int,
    ) -> None:
        """Build the world and the first perception (no brain call)."""
        self.plaza = plaza
        self.time_limit_s = float(time_limit_s)
        self.limit_steps = round(time_limit_s * STEPS_PER_SECOND)
        self.composition = (
            composition if isinstance(composition, str) else dict(composition)
        )
        self.block = block
        self.stimuli = stimuli or StimulusIntensities()
        self.record_positions = record_positions
        plaza_ = self.plaza
        width, height = plaza_.width, plaza_.height
        self.cell_size_m = plaza_.cell_size_m
        self.grid = OrthogonalMooreGrid(
            (width, height), torus=False, capacity=1, random=self.random
        )
        self.effective = EffectiveLayer(plaza_, gate_schedule or GateSchedule())
        self.graph = GridGraph(plaza_.raw)
        sight_cells = SIGHT_RADIUS_M / self.cell_size_m
        self.view = ViewGeometry.cone(sight_cells, CONE_DEG)
        self.initial_view = ViewGeometry.square(INITIAL_CHEBYSHEV)

        profiles = composition_profiles(composition)
        n = len(profiles)
        self.n_pedestrians = n
        self.views = RepeatedViews(self.view, n)
        """The pedestrians' perception, copying the cells of viewpoints that held."""
        starts = start_cells(plaza_, n, block, random_spawn, self.rng)
        self.pos = np.zeros((n + 1, 2), dtype=np.int64)
        self.heading = np.zeros(n + 1, dtype=np.int64)
        self.status = np.zeros(n, dtype=np.int8)
        self.fear = np.zeros(n)
        neuroticism = np.array([p.N for p in profiles], dtype=float)
        self.kappa = sensitivity(neuroticism)
        self.rho = recovery_rate(neuroticism)
        self.occupancy = np.full((width, height), -1, dtype=np.int64)
        self.pedestrians: list[Pedestrian] = []
        for i, (profile, start) in enumerate(zip(profiles, starts, strict=True)):
            agent = Pedestrian(self, i, profile, start)
            agent.cell = self.grid[start]
            self.pedestrians.append(agent)
            self.pos[i] = start
            self.occupancy[start] = i
        self.heading[:n] = self.rng.integers(0, 8, size=n)
        self.by_uid = {a.unique_id: a for a in self.pedestrians}
        self.pedestrian_ids = np.array(
            [a.unique_id for a in self.pedestrians], dtype=np.int64
        )
        """Agent id of every pedestrian row."""
        self.adversary = Adversary(self, n)
        self.adversary.cell = self.grid[plaza_.threat_cell]
        self.pos[n] = plaza_.threat_cell
        self.occupancy[plaza_.threat_cell] = n
        self.heading[n] = self.rng.integers(0, 8)
        self.belief = BeliefStore(plaza_, n)
        self.opening_cells = [
            np.array([x * height + y for x, y in o.cells]) for o in plaza_.openings
        ]
        self.opening_cells_flat = np.concatenate(self.opening_cells)
        """Every opening's cells in one array; opening ``k``'s are
        ``opening_bounds[k]:opening_bounds[k + 1]``."""
        self.opening_bounds = np.cumsum([0, *map(len, self.opening_cells)])
        self.opening_mask = plaza_.opening_index >= 0
        self.route_planner = RoutePlanner(
            plaza_.raw, self.graph, self.opening_mask, self.cell_size_m, route_workers
        )
        self.adversary_forbidden = {n: self.opening_mask}
        self.adversary_fields: dict[tuple[int, int], np.ndarray] = {}
        self.waypoints = tuple(
            inner_cell(plaza_, o.center) for o in (*plaza_.exits, *plaza_.gates)
        )
        raw_pass = passable_mask(plaza_.raw)
        self.pocket = pocket_cells(raw_pass)
        self.shortest_exit_m = shortest_exit_distances(
            plaza_, self.graph, self.opening_cells, starts
        )
        self.shouts = ShoutLog(n)
        """The shouts heard in the last ``SHOUT_MEMORY_S``, and who ever heard whom."""
        self.info_sent: set[tuple[int, int, int]] = set()
        """Exit information already passed on: (sender, receiver, opening number)."""
        self.opening_number = {o.opening_id: k for k, o in enumerate(plaza_.openings)}
        self.seen_adversary_now = np.zeros(n, dtype=bool)
        self.seen_casualty_now = np.zeros(n, dtype=bool)
        self.hears_until = np.full(n, -1, dtype=np.int64)
        self.fleeing_seen = np.zeros(n, dtype=np.int64)
        self.adversary_distance_m = np.full(n, np.inf)
        self.perception: Perception | None = None
        """This step's perception of the active pedestrians (for the decision contexts)."""
        self.batch_index = np.full(n, -1, dtype=np.int64)
        self._frames: list[dict[str, np.ndarray]] = []
        self.events = EventLog()
        self.exit_used: dict[int, str] = {}
        self.resolved_step = np.full(n, -1, dtype=np.int64)
        self.tick = 0
        # wall time per phase: perception, routing (all route searches), decisions (contexts and
        # brain, routing excluded), movement (proposals, adversary planning, resolution), other
        self.timing = {
            "perception": 0.0,
            "decisions": 0.0,
            "routing": 0.0,
            "movement": 0.0,
            "other": 0.0,
        }
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
        for opening in plaza_.gates:
            self.record_event("gate_state", None, None, f"{opening.opening_id}:open")
        self.exit_knowledge = ExitKnowledgeRecorder(plaza_)
        """Openings seen and exit information passed (:mod:`.exit_knowledge`)."""
        observe_initial(self)
        observe(self)
        self._started = False

    def _start(self) -> None:
        """The initial decisions of every pedestrian, applied at step 0 (first :meth:`step`)."""
        self._started = True
        requests = decision_requests(
            self, [(agent, "initial") for agent in self.pedestrians]
        )
        dispatch(
            self.decide(requests, step=self.tick),
            {EVACUATION_MOVE: self._apply_now},
        )
        self._record_frame()
        self.datacollector.collect(self)

    def _apply_now(self, result: MoveResult) -> None:
        apply_decision(self, self.by_uid[result.agent_id], result)

    def _defer(self, result: MoveResult, due: int) -> None:
        """Keep the answer pending until its 1 s boundary (the pedestrian walks on meanwhile)."""
        self.by_uid[result.agent_id].pending = PendingDecision(self.tick, due, result)

    # ------------------------------------------------------------------ setup helpers
    # ------------------------------------------------------------------ bookkeeping
    @property
    def time_s(self) -> float:
        """Simulated seconds since the emergency started."""
        return self.tick * DT_S

    @property
    def active_count(self) -> int:
        """Pedestrians still in the plaza."""
        return int(np.count_nonzero(self.status == ACTIVE))

    @property
    def evacuated_count(self) -> int:
        """Pedestrians who left through an opening."""
        return int(np.count_nonzero(self.status == EVACUATED))

    @property
    def reached_count(self) -> int:
        """Pedestrians the adversary reached."""
        return int(np.count_nonzero(self.status == REACHED))

    @property
    def mean_active_fear(self) -> float:
        """Mean fear of the pedestrians still in the plaza (NaN when none is)."""
        active = self.status == ACTIVE
        return float(self.fear[active].mean()) if np.any(active) else float("nan")

    def record_event(
        self, event: str, agent: int | None, other: int | None, detail: str = ""
    ) -> None:
        """Add one row to the events table (``agent`` and ``other`` are array rows)."""
        self.events.add(
            self.tick,
            event,
            None if agent is None else self.uid(agent),
            None if other is None else self.uid(other),
            detail,
        )

    def record_events(
        self,
        event: str,
        agents: np.ndarray,
        others: np.ndarray,
        details: list[str],
    ) -> None:
        """Add rows of one event at this step (``agents`` and ``others``: pedestrian rows)."""
        self.events.add_many(
            self.tick,
            event,
            self.pedestrian_ids[agents],
            self.pedestrian_ids[others],
            details,
        )

    def uid(self, index: int) -> int:
        """The agent id of array row ``index`` (the last row is the adversary)."""
        return (
            self.adversary.unique_id
            if index == self.n_pedestrians
            else self.pedestrians[index].unique_id
        )

    def active_indices(self) -> np.ndarray:
        """Rows of the pedestrians still in the plaza."""
        return np.flatnonzero(self.status == ACTIVE)

    # ------------------------------------------------------------------ perception and evidence
    # ------------------------------------------------------------------ decisions
    # ------------------------------------------------------------------ the step
    def step(self) -> None:
        """Advance one physical step of dt = 1/3 s (the first also applies the initial decisions)."""
        if not self._started:
            self._start()
        t0 = perf_counter()
        n = self.n_pedestrians
        changed = self.effective.update(self.time_s)
        if changed is not None:
            for opening in self.plaza.gates:
                self.record_event(
                    "gate_state", None, None, f"{opening.opening_id}:{changed}"
                )
        observe(self)
        t1 = perf_counter()
        self.timing["perception"] += t1 - t0
        boundary = self.tick % STEPS_PER_SECOND == 0
        routing_before = self.timing["routing"]
        if boundary:
            due = []
            state = self.status.tolist()
            for agent in self.pedestrians:
                if (
                    state[agent.index] == ACTIVE
                    and agent.pending is not None
                    and agent.pending.due_step <= self.tick
                ):
                    pending, agent.pending = agent.pending, None
                    due.append((agent, pending.result))
            routes = send_new_routes(self, due)  # the workers route while we talk
            communicate(self)
        update_crowd_fear(self)
        if boundary:
            apply_due_revisions(self)
            apply_decisions(self, due, routes)
        t2 = perf_counter()
        self.timing["other"] += t2 - t1 - (self.timing["routing"] - routing_before)
        routing_before = self.timing["routing"]
        requests = [*self.memory_queue, *due_requests(self)]
        self.memory_queue = []
        due = due_step(self.tick)
        dispatch(
            self.decide(requests, step=self.tick),
            {
                EVACUATION_MOVE: lambda result: self._defer(result, due),
                EVACUATION_MEMORY: lambda result: defer_revision(self, result, due),
            },
        )
        t3 = perf_counter()
        self.timing["decisions"] += t3 - t2 - (self.timing["routing"] - routing_before)
        proposals = self.pos.copy()
        height = self.plaza.height
        active = self.active_indices().tolist()
        xy = self.pos.tolist()
        walking, next_cells = [], []
        for i in active:
            agent = self.pedestrians[i]
            if agent.route_pos < len(agent.route):
                tx, ty = divmod(agent.route[agent.route_pos], height)
                x, y = xy[i]
                if max(abs(tx - x), abs(ty - y)) == 1:
                    walking.append(i)
                    next_cells.append((tx, ty))
                else:
                    agent.route, agent.route_pos = [], 0
        if walking:
            proposals[walking] = next_cells
        proposals[n] = propose_move(self)
        active_entities = np.append(self.status == ACTIVE, True)
        old = self.pos.copy()
        result = resolve_moves(
            self.pos,
            proposals,
            active_entities,
            self.effective.passable,
            self.occupancy,
            self.rng,
            self.adversary_forbidden,
        )
        self.pos = result.positions
        moved = np.flatnonzero(np.any(self.pos != old, axis=1)).tolist()
        movers = [self.adversary if e == n else self.pedestrians[e] for e in moved]
        status = result.status.tolist()
        # vacate first: Mesa cells hold one agent, and followers enter freed cells
        for agent in movers:
            agent.cell = None
        headings = []
        for e, agent, (x, y), (ox, oy) in zip(
            moved, movers, self.pos[moved].tolist(), old[moved].tolist(), strict=True
        ):
            headings.append(heading_index(x - ox, y - oy))
            agent.cell = self.grid[(x, y)]
            if e < n:
                agent.visited.add(x * height + y)
                if status[e] == MOVED:
                    agent.route_pos += 1
        self.heading[moved] = headings
        for i in active:  # a sidestep, like any move, ends a blocked spell
            agent = self.pedestrians[i]
            agent.blocked_steps = agent.blocked_steps + 1 if status[i] == BLOCKED else 0
        t4 = perf_counter()
        self.timing["movement"] += t4 - t3
        self.tick += 1
        on_opening = self.active_indices()[
            self.opening_mask[
                self.pos[self.active_indices(), 0], self.pos[self.active_indices(), 1]
            ]
        ]
        for i in on_opening.tolist():
            self.status[i] = EVACUATED
            self.resolved_step[i] = self.tick
            opening = self.plaza.openings[
                int(self.plaza.opening_index[self.pos[i, 0], self.pos[i, 1]])
            ]
            self.exit_used[i] = opening.opening_id
            self.record_event("evacuated", i, None, opening.opening_id)
        attack(self)
        self._record_frame()
        for i in on_opening.tolist():
            self.occupancy[self.pos[i, 0], self.pos[i, 1]] = -1
            self.pedestrians[i].cell = None
            self.pedestrians[i].pending = None
        self.datacollector.collect(self)
        if not np.any(self.status == ACTIVE) or self.tick >= self.limit_steps:
            self.running = False
            logger.info(
                "run ended at %.2f s: %d evacuated, %d reached, %d unresolved",
                self.time_s,
                np.count_nonzero(self.status == EVACUATED),
                np.count_nonzero(self.status == REACHED),
                np.count_nonzero(self.status == ACTIVE),
            )
        self.timing["other"] += perf_counter() - t4

    def _record_frame(self) -> None:
        if not self.record_positions:
            return
        n = self.n_pedestrians
        on_grid = np.flatnonzero(
            (self.status == ACTIVE)
            | (self.status == REACHED)
            | (self.resolved_step == self.tick)
        )
        ids = np.array(
            [self.pedestrians[i].unique_id for i in on_grid]
            + [self.adversary.unique_id]
        )
        situations = [
            STATUS_NAMES[int(self.status[i])]
            if self.status[i] != ACTIVE
            else self.pedestrians[i].situation
            for i in on_grid
        ]
        self._frames.append(
            {
                "step": np.full(ids.size, self.tick),
                "agent_id": ids,
                "kind": np.array(["pedestrian"] * on_grid.size + ["adversary"]),
                "x": np.append(self.pos[on_grid, 0], self.pos[n, 0]),
                "y": np.append(self.pos[on_grid, 1], self.pos[n, 1]),
                "heading": np.append(self.heading[on_grid], self.heading[n]),
                "fear": np.append(self.fear[on_grid], np.nan),
                "situation": np.array([*situations, str(self.adversary.state.mode)]),
            }
        )

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
        """Per-step positions: ``step, time_s, agent_id, kind, x, y, heading, fear, situation``.

        ``heading`` is a compass bearing in degrees (0 north, 90 east); ``situation`` is the
        pedestrian's appraisal while active, ``evacuated``/``reached`` on its resolving step
        (bodies stay as ``reached``), and the adversary's mode.
        """
        columns = [
            "step",
            "time_s",
            "agent_id",
            "kind",
            "x",
            "y",
            "heading",
            "fear",
            "situation",
        ]
        if not self._frames:
            return pd.DataFrame(columns=columns)
        data = {
            key: np.concatenate([f[key] for f in self._frames])
            for key in self._frames[0]
        }
        frame = pd.DataFrame(data)
        frame["time_s"] = (frame["step"] * DT_S).round(4)
        frame["heading"] = np.array([_HEADING_BEARINGS[h] for h in range(8)])[
            frame["heading"].to_numpy()
        ]
        return frame[columns]

    def events_frame(self) -> pd.DataFrame:
        """Events: sightings, shouts heard, exit info sent/received, gate states, evacuations, attacks."""
        return self.events.frame()

    def opening_observations_frame(self) -> pd.DataFrame:
        """Openings seen: one row per first sight and per changed state (:mod:`.exit_knowledge`)."""
        return self.exit_knowledge.observations_frame()

    def exit_information_frame(self) -> pd.DataFrame:
        """Exit information passed: sender, receiver, opening, its state, hops (:mod:`.exit_knowledge`)."""
        return self.exit_knowledge.information_frame()

    def pedestrians_frame(self) -> pd.DataFrame:
        """Static facts per pedestrian: archetype, start cell, shortest exit distance, outcome."""
        return pd.DataFrame(
            {
                "agent_id": [a.unique_id for a in self.pedestrians],
                "archetype": [a.personality.archetype for a in self.pedestrians],
                "start_x": [a.start[0] for a in self.pedestrians],
                "start_y": [a.start[1] for a in self.pedestrians],
                "shortest_exit_m": self.shortest_exit_m,
                "outcome": [
                    STATUS_NAMES[int(s)] if s != ACTIVE else "unresolved"
                    for s in self.status
                ],
                "resolved_step": [
                    int(s) if s >= 0 else None for s in self.resolved_step
                ],
                "exit_used": [self.exit_used.get(a.index) for a in self.pedestrians],
            }
        )

    def memory_versions_frame(self) -> pd.DataFrame:
        """Every long-term memory revision (see :func:`.memory_flow.memory_versions_frame`)."""
        return memory_versions_frame(self)

    # ------------------------------------------------------------------ checkpoints
    def __getstate__(self) -> dict[str, object]:
        """Everything but the brain, its options and the memory store; :meth:`attach` gives them back.

        The brain holds network clients and the ledger file, its options may hold an API key
        (never written to a checkpoint), the memory store a Chroma client; the route planner
        leaves its worker processes behind (:meth:`RoutePlanner.__getstate__`).
        """
        state = super().__getstate__()
        state["memory_store"] = None
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        """Restore a checkpoint; its grid's cells share one class again (see below)."""
        self.__dict__.update(state)
        _share_one_cell_class(self.grid)

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
        self.memory_store = memory_store
        if memory_store is not None:
            memory_store.defer_writes = True
        self.attach_brain(
            brain, {"temperature": PAPER_TEMPERATURE, **(brain_options or {})}
        )
        if route_workers is not None:
            self.route_planner.set_workers(route_workers)

    def close(self) -> None:
        """Release the brain and the route workers; write the memory store's deferred revisions."""
        planner = getattr(self, "route_planner", None)
        if planner is not None:
            planner.close()
        if self.memory_store is not None:
            self.memory_store.flush()
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
        self.limit_steps = round(parameters.time_limit_s * STEPS_PER_SECOND)
        self.running = (
            bool(np.any(self.status == ACTIVE)) and self.tick < self.limit_steps
        )
        super().apply_parameters(parameters.replace(plaza=self.parameters.plaza))

    @classmethod
    def check_fork(cls, parameters: EvacuationParameters, number: int) -> None:
        """A fork's time limit lies after its checkpoint."""
        if round(parameters.time_limit_s * STEPS_PER_SECOND) <= number:
            raise ValueError(
                f"time_limit_s={parameters.time_limit_s:g} ends before the checkpoint of "
                f"step {number}"
            )

    def outcomes_frame(self) -> pd.DataFrame:
        """Per-pedestrian outcome measures (spec list; see :mod:`.outputs`)."""
        return outcome_measures(
            self.positions_frame(),
            self.decisions_frame(),
            self.events_frame(),
            self.pedestrians_frame(),
            self.pocket,
            self.cell_size_m,
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


def _share_one_cell_class(grid: OrthogonalMooreGrid) -> None:
    """Give an unpickled grid's cells one cell class, set up as a new grid's is.

    Mesa 3.5 makes each grid's cell class at run time, registers how to pickle it and puts the
    grid's property layers (``empty``) on it; but it unpickles every cell into a class of its
    own, registered nowhere and, but for the first, without the layers' accessors. A restored
    model could then not be checkpointed again.
    """
    cells = list(grid._cells.values())
    if not cells:
        return
    klass = type(
        "GridCell",
        (type(cells[0]).__bases__[0],),
        {"_mesa_properties": set(), "__slots__": ()},
    )
    for layer in grid._mesa_property_layers.values():
        setattr(
            klass,
            layer.name,
            create_property_accessors(
                layer.data, docstring=f"accessor for {layer.name}"
            ),
        )
        klass._mesa_properties.add(layer.name)
    copyreg.pickle(klass, pickle_gridcell)
    for cell in cells:
        cell.__class__ = klass
    grid.cell_klass = klass


_HEADING_BEARINGS = [round(bearing_deg(*MOORE_STEPS[h]), 1) for h in range(8)]
