"""``EvacuationModel``: pedestrians escaping a moving threat in a plaza (the paper's world).

One Mesa step is one physical step of dt = 1/3 s. Each step: gates follow the emergency schedule;
perception is recomputed and written to the private beliefs; evidence (sightings, shouts, exit
information, fleeing neighbours) updates fear; due decisions are applied at 1 s boundaries; new
decision requests of the step go to the brain in one batch; the adversary plans; every entity
proposes one move and moves are resolved; evacuations and attacks are evaluated; the frame is
recorded. The run ends when every pedestrian evacuated or was reached, or at the time limit.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import mesa
import numpy as np
import pandas as pd
from mesa.discrete_space import OrthogonalMooreGrid
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from mesa_llm_mobility.cognition.brain import Brain
from mesa_llm_mobility.cognition.kinds import DecisionRequest, DecisionResult
from mesa_llm_mobility.evacuation.adversary import (
    ATTACK_RADIUS_M,
    AdversaryMode,
    next_state,
)
from mesa_llm_mobility.evacuation.affect import (
    StimulusIntensities,
    fear_level,
    recovery_rate,
    sensitivity,
    update_fear,
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
from mesa_llm_mobility.evacuation.ascii_view import SymbolicView
from mesa_llm_mobility.evacuation.communication import (
    EXIT_INFO_RADIUS_M,
    SHOUT_RADIUS_M,
    ExitHint,
    approximate_distance_m,
    heard_shout,
    pairs_within,
)
from mesa_llm_mobility.evacuation.decisions import (
    EVACUATION_MOVE,
    EvacuationContext,
    EvacuationDecision,
    KnownOpening,
    PreviousDecision,
    StaleSighting,
)
from mesa_llm_mobility.evacuation.layers import (
    BeliefStore,
    EffectiveLayer,
    GateSchedule,
)
from mesa_llm_mobility.evacuation.movement import (
    BLOCKED,
    MOVED,
    SIDESTEP,
    resolve_moves,
)
from mesa_llm_mobility.evacuation.perception import (
    HEADING_VECTORS,
    Perception,
    ViewGeometry,
    perceive,
)
from mesa_llm_mobility.evacuation.personality import composition_profiles
from mesa_llm_mobility.evacuation.plaza import (
    MOORE_STEPS,
    Plaza,
    Terrain,
    load_plaza,
    passable_mask,
)
from mesa_llm_mobility.evacuation.routing import (
    COMMIT_CELLS,
    GridGraph,
    OpeningAnchor,
    bearing_deg,
    compass,
    path_to,
    route_options,
)
from mesa_llm_mobility.experiment.base_model import MobilityModel

logger = logging.getLogger(__name__)

DT_S = 1.0 / 3.0
STEPS_PER_SECOND = 3
MIN_BLOCK, MAX_BLOCK = 1, 8
"""Matched blocks of the paper's 8 x 8 design."""
SIGHT_RADIUS_M = 12.0
CONE_DEG = 120.0
INITIAL_CHEBYSHEV = 3
MEMORY_CHARS = 1200
SHOUT_MEMORY_S = 10.0
BLOCKED_STEPS_REDECIDE = 6
"""Steps (2 s) a pedestrian stands blocked before it asks for a new decision (our choice)."""


class EvacuationModel(MobilityModel):
    """Crowd evacuation under a moving threat on a plaza raster.

    Args:
        plaza: A :class:`Plaza`, a plaza file path, or ``None`` / ``"reference"``.
        composition: ``"A"``-``"H"`` (paper compositions) or archetype counts, e.g.
            ``{"rule_following": 6, "anxious_conformist": 5}``.
        block: Matched block (1-8): profiles are re-assigned among the start cells by a fixed
            permutation of the block number; ``None`` keeps the listed order.
        brain: Brain setting (``"rules"``, ``"llm:<model>"``) or a :class:`Brain`.
        rng: Seed or generator (Mesa ``rng``).
        brain_options: Further :func:`make_brain` arguments (``api_base``, ``timeout_s``,
            ``ledger``, ...).
        time_limit_s: Run length limit (240 s in the paper).
        gate_schedule: When gates close.
        random_spawn: Place pedestrians on random walkable cells instead of the start cells
            (default: only when there are more pedestrians than start cells).
        record_positions: Keep the per-step positions table (large for big crowds).
        stimuli: Fear stimulus intensities.

    The constructor builds the world and the first perception but calls no brain: the
    pedestrians' initial decisions are requested and applied at the start of the first
    :meth:`step` (recorded at step 0, as before).
    """

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
        plaza: Plaza | str | Path | None = None,
        composition: str | Mapping[str, int] = "A",
        block: int | None = None,
        brain: str | Brain | None = "rules",
        rng: int | np.random.Generator | None = None,
        time_limit_s: float = 240.0,
        gate_schedule: GateSchedule | None = None,
        random_spawn: bool | None = None,
        record_positions: bool = True,
        stimuli: StimulusIntensities | None = None,
        brain_options: Mapping[str, Any] | None = None,
    ) -> None:
        if time_limit_s <= 0:
            raise ValueError(f"time_limit_s must be positive, got {time_limit_s}")
        if round(time_limit_s * STEPS_PER_SECOND) > np.iinfo(np.int16).max:
            raise ValueError(
                f"time_limit_s {time_limit_s} exceeds the belief store's step range"
            )
        plaza = plaza if isinstance(plaza, Plaza) else load_plaza(plaza)
        super().__init__(brain=brain, brain_options=brain_options, rng=rng)
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
        starts = self._start_cells(n, block, random_spawn)
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
        self._by_uid = {a.unique_id: a for a in self.pedestrians}
        self.adversary = Adversary(self, n)
        self.adversary.cell = self.grid[plaza_.threat_cell]
        self.pos[n] = plaza_.threat_cell
        self.occupancy[plaza_.threat_cell] = n
        self.heading[n] = self.rng.integers(0, 8)
        self.belief = BeliefStore(plaza_, n)
        self.opening_cells = [
            np.array([x * height + y for x, y in o.cells]) for o in plaza_.openings
        ]
        self.opening_mask = plaza_.opening_index >= 0
        self.adversary_forbidden = {n: self.opening_mask}
        self._adversary_fields: dict[tuple[int, int], np.ndarray] = {}
        self.waypoints = tuple(
            self._inner_cell(o.center) for o in (*plaza_.exits, *plaza_.gates)
        )
        raw_pass = passable_mask(plaza_.raw)
        self.pocket = self._pocket_cells(raw_pass)
        self.shortest_exit_m = self._shortest_exit_distances(starts)
        self.heard_pairs = np.zeros((n, n), dtype=bool)
        self.heard_step = np.full((n, n), -1, dtype=np.int32)
        self.heard_from = np.zeros((n, n, 2), dtype=np.int16)
        self.info_sent = np.zeros((n, n, len(plaza_.openings)), dtype=bool)
        self._opening_number = {o.opening_id: k for k, o in enumerate(plaza_.openings)}
        self.seen_adversary_now = np.zeros(n, dtype=bool)
        self.seen_casualty_now = np.zeros(n, dtype=bool)
        self.hears_until = np.full(n, -1, dtype=np.int64)
        self.fleeing_seen = np.zeros(n, dtype=np.int64)
        self.adversary_distance_m = np.full(n, np.inf)
        self._perception: Perception | None = None
        self._batch_index = np.full(n, -1, dtype=np.int64)
        self._frames: list[dict[str, np.ndarray]] = []
        self._events: list[dict[str, object]] = []
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
        self.datacollector = mesa.DataCollector(
            model_reporters={
                "time_s": lambda m: m.tick * DT_S,
                "active": lambda m: int(np.count_nonzero(m.status == ACTIVE)),
                "evacuated": lambda m: int(np.count_nonzero(m.status == EVACUATED)),
                "reached": lambda m: int(np.count_nonzero(m.status == REACHED)),
                "mean_fear": lambda m: (
                    float(m.fear[m.status == ACTIVE].mean())
                    if np.any(m.status == ACTIVE)
                    else float("nan")
                ),
            }
        )
        for opening in plaza_.gates:
            self._event("gate_state", None, None, f"{opening.opening_id}:open")
        self._initial_observation()
        self._observe()
        self._started = False

    def _start(self) -> None:
        """The initial decisions of every pedestrian, applied at step 0 (first :meth:`step`)."""
        self._started = True
        requests = [
            self.decision_request(agent, "initial") for agent in self.pedestrians
        ]
        for result in self.decide(requests, step=self.tick):
            self._apply(self._by_uid[result.agent_id], result)
        self._record_frame()
        self.datacollector.collect(self)

    # ------------------------------------------------------------------ setup helpers
    def _start_cells(
        self, n: int, block: int | None, random_spawn: bool | None
    ) -> list[tuple[int, int]]:
        spawns = list(self.plaza.spawn_cells)
        if random_spawn is None:
            random_spawn = n > len(spawns)
        if random_spawn:
            cells = [
                tuple(c)
                for c in self.plaza.walkable_coords()
                if tuple(c) != self.plaza.threat_cell
            ]
            if n > len(cells):
                raise ValueError(
                    f"{n} pedestrians do not fit on {len(cells)} walkable cells"
                )
            chosen = self.rng.choice(len(cells), size=n, replace=False)
            return [(int(cells[k][0]), int(cells[k][1])) for k in chosen]
        if n > len(spawns):
            raise ValueError(
                f"{n} pedestrians but the plaza has {len(spawns)} start cells; use random_spawn=True"
            )
        if block is not None:
            if not MIN_BLOCK <= block <= MAX_BLOCK:
                raise ValueError(
                    f"block must be {MIN_BLOCK}-{MAX_BLOCK} (a matched block of the "
                    f"8 x 8 design), got {block}"
                )
            order = np.random.default_rng(block).permutation(len(spawns))
            spawns = [spawns[k] for k in order]
        return spawns[:n]

    def _inner_cell(self, cell: tuple[int, int]) -> tuple[int, int]:
        x, y = cell
        for dx, dy in MOORE_STEPS:
            nx, ny = x + dx, y + dy
            if (
                0 <= nx < self.plaza.width
                and 0 <= ny < self.plaza.height
                and self.plaza.raw[nx, ny] == Terrain.FLOOR
            ):
                return nx, ny
        raise ValueError(f"opening cell {cell} has no walkable neighbour")

    def _pocket_cells(self, passable: np.ndarray) -> np.ndarray:
        padded = np.pad(passable, 1, constant_values=False)
        count = (
            padded[2:, 1:-1].astype(int)
            + padded[:-2, 1:-1]
            + padded[1:-1, 2:]
            + padded[1:-1, :-2]
        )
        return passable & (count <= 2)

    def _shortest_exit_distances(self, starts: list[tuple[int, int]]) -> np.ndarray:
        height = self.plaza.height
        flat_pass = passable_mask(self.plaza.raw).ravel()
        weights = self.graph.weights_for(flat_pass)
        graph = csr_matrix(
            (weights, self.graph.indices, self.graph.indptr),
            shape=(self.graph.n_cells,) * 2,
        )
        kinds = {o.kind for o in self.plaza.openings}
        wanted = "exit" if "exit" in kinds else "gate"  # a plaza without exits: gates
        exit_cells = np.concatenate(
            [
                self.opening_cells[k]
                for k, o in enumerate(self.plaza.openings)
                if o.kind == wanted
            ]
        )
        dist = dijkstra(graph, indices=exit_cells, min_only=True)
        return np.array([dist[x * height + y] * self.cell_size_m for x, y in starts])

    # ------------------------------------------------------------------ bookkeeping
    @property
    def time_s(self) -> float:
        """Simulated seconds since the emergency started."""
        return self.tick * DT_S

    def _event(
        self, event: str, agent: int | None, other: int | None, detail: str = ""
    ) -> None:
        self._events.append(
            {
                "step": self.tick,
                "time_s": round(self.tick * DT_S, 4),
                "event": event,
                "agent_id": None if agent is None else self._uid(agent),
                "other_id": None if other is None else self._uid(other),
                "detail": detail,
            }
        )

    def _uid(self, index: int) -> int:
        return (
            self.adversary.unique_id
            if index == self.n_pedestrians
            else self.pedestrians[index].unique_id
        )

    def _active(self) -> np.ndarray:
        return np.flatnonzero(self.status == ACTIVE)

    # ------------------------------------------------------------------ perception and evidence
    def _initial_observation(self) -> None:
        active = self._active()
        perc = perceive(
            self.initial_view,
            self.effective.opaque,
            self.pos[active, 0],
            self.pos[active, 1],
            self.heading[active],
        )
        self.belief.observe(active[perc.viewer], perc.cell, 0, self.effective.codes)

    def _observe(self) -> None:
        """Perception of all active pedestrians; beliefs, sightings and fleeing neighbours."""
        n = self.n_pedestrians
        active = self._active()
        perc = perceive(
            self.view,
            self.effective.opaque,
            self.pos[active, 0],
            self.pos[active, 1],
            self.heading[active],
        )
        self._perception = perc
        self._batch_index[:] = -1
        self._batch_index[active] = np.arange(active.size)
        viewers = active[perc.viewer]
        self.belief.observe(viewers, perc.cell, self.tick, self.effective.codes)
        seen = self.occupancy.ravel()[perc.cell]
        other = (seen >= 0) & (seen != viewers)
        viewers, seen = viewers[other], seen[other]
        sees_a = np.zeros(n, dtype=bool)
        sees_a[viewers[seen == n]] = True
        is_ped = seen < n
        ped_viewers, ped_seen = viewers[is_ped], seen[is_ped]
        bodies = self.status[ped_seen] == REACHED
        sees_d = np.zeros(n, dtype=bool)
        sees_d[ped_viewers[bodies]] = True
        shouting = np.array([a.shouting for a in self.pedestrians], dtype=bool)
        fleeing = (self.status[ped_seen] == ACTIVE) & shouting[ped_seen]
        self.fleeing_seen = np.bincount(ped_viewers[fleeing], minlength=n)
        adversary_xy = self.pos[n]
        d = np.hypot(*(self.pos[:n] - adversary_xy).T) * self.cell_size_m
        self.adversary_distance_m = np.where(sees_a, d, np.inf)
        for i in np.flatnonzero(sees_a & ~self.seen_adversary_now):
            self._event("sighting_adversary", int(i), n, f"{d[i]:.1f} m")
        for i in np.flatnonzero(sees_d & ~self.seen_casualty_now):
            self._event("sighting_casualty", int(i), None)
        for i in np.flatnonzero(sees_a):
            self.pedestrians[i].memory.last_sighting = (
                (int(adversary_xy[0]), int(adversary_xy[1])),
                self.tick,
            )
        self.seen_adversary_now = sees_a
        self.seen_casualty_now = sees_d

    def _communicate(self) -> None:
        """Shouts heard within 15 m and exit information within 5 m (at 1 s boundaries)."""
        active = self._active()
        shouters = np.array(  # shouting while moving
            [
                i
                for i in active
                if self.pedestrians[i].shouting
                and self.pedestrians[i].route_remaining > 0
            ],
            dtype=np.int64,
        )
        if shouters.size:
            r, s, _ = pairs_within(
                self.pos[active], self.pos[shouters], SHOUT_RADIUS_M / self.cell_size_m
            )
            keep = active[r] != shouters[s]
            listeners, speakers = active[r[keep]], shouters[s[keep]]
            self.hears_until[listeners] = self.tick + STEPS_PER_SECOND
            self.heard_step[listeners, speakers] = self.tick
            self.heard_from[listeners, speakers] = self.pos[speakers]
            new = ~self.heard_pairs[listeners, speakers]
            self.heard_pairs[listeners, speakers] = True
            for li, si in zip(
                listeners[new].tolist(), speakers[new].tolist(), strict=True
            ):
                heard = heard_shout(
                    tuple(self.pos[li]), tuple(self.pos[si]), self.cell_size_m
                )
                self._event(
                    "shout_heard",
                    li,
                    si,
                    f"{heard.direction} ~{heard.approx_distance_m} m",
                )
        senders = [
            i
            for i in active
            if self.pedestrians[i].route_opening is not None
            and self.pedestrians[i].intent in ("seek_exit", "escape", "follow_others")
        ]
        if not senders:
            return
        sender_arr = np.array(senders, dtype=np.int64)
        opening_of = np.array(
            [self._opening_number[self.pedestrians[i].route_opening] for i in senders],
            dtype=np.int64,
        )
        r, s, _ = pairs_within(
            self.pos[active],
            self.pos[sender_arr],
            EXIT_INFO_RADIUS_M / self.cell_size_m,
        )
        receivers, senders_, openings = active[r], sender_arr[s], opening_of[s]
        keep = receivers != senders_
        receivers, senders_, openings = receivers[keep], senders_[keep], openings[keep]
        known = np.zeros(receivers.size, dtype=bool)
        for k, cells in enumerate(
            self.opening_cells
        ):  # only news: the receiver never saw it
            mine = openings == k
            if mine.any():
                known[mine] = np.any(
                    self.belief.seen_step[np.ix_(receivers[mine], cells)] >= 0, axis=1
                )
        fresh = ~known & ~self.info_sent[senders_, receivers, openings]
        for si, ri, k in zip(
            senders_[fresh].tolist(),
            receivers[fresh].tolist(),
            openings[fresh].tolist(),
            strict=True,
        ):
            self.info_sent[si, ri, k] = True
            opening = self.plaza.openings[k]
            cx, cy = opening.center
            dx, dy = cx - int(self.pos[ri, 0]), cy - int(self.pos[ri, 1])
            hint = ExitHint(
                sender=self._uid(si),
                opening_id=opening.opening_id,
                kind=opening.kind,
                direction=compass(dx, dy),
                approx_distance_m=approximate_distance_m(
                    math.hypot(dx, dy) * self.cell_size_m
                ),
                age_s=0.0,
                cell=(cx, cy),
            )
            receiver = self.pedestrians[ri]
            receiver.memory.hints[opening.opening_id] = hint
            receiver.memory.hint_steps[opening.opening_id] = self.tick
            self._event("exit_info_sent", si, ri, opening.opening_id)
            self._event("exit_info_received", ri, si, opening.opening_id)

    def _update_fear(self) -> None:
        z = self.stimuli.strongest(
            self.seen_adversary_now,
            self.adversary_distance_m,
            self.seen_casualty_now,
            self.fleeing_seen,
            self.hears_until > self.tick,
        )
        active = self.status == ACTIVE
        self.fear = np.where(
            active, update_fear(self.fear, z, self.kappa, self.rho, DT_S), self.fear
        )

    # ------------------------------------------------------------------ decisions
    def _known_openings(
        self, i: int, codes: np.ndarray
    ) -> tuple[list[KnownOpening], list[OpeningAnchor]]:
        height = self.plaza.height
        x, y = int(self.pos[i, 0]), int(self.pos[i, 1])
        known, anchors = [], []
        for k, opening in enumerate(self.plaza.openings):
            cells = self.opening_cells[k]
            seen = self.belief.seen_step[i, cells]
            if not np.any(seen >= 0):
                continue
            cells_known = cells[seen >= 0]
            state_code = int(codes[cells_known[0]])
            state = {
                Terrain.EXIT: "open",
                Terrain.GATE_OPEN: "open",
                Terrain.GATE_CLOSING: "closing",
                Terrain.GATE_CLOSED: "closed",
            }[Terrain(state_code)]
            cx, cy = np.divmod(cells_known, height)
            nearest = int(np.argmin((cx - x) ** 2 + (cy - y) ** 2))
            dx, dy = int(cx[nearest]) - x, int(cy[nearest]) - y
            age = (self.tick - int(seen.max())) * DT_S
            known.append(
                KnownOpening(
                    opening.opening_id,
                    opening.kind,
                    state,
                    (dx, dy),
                    compass(dx, dy),
                    round(math.hypot(dx, dy) * self.cell_size_m, 1),
                    round(age, 2),
                )
            )
            if state != "closed":
                anchors.append(
                    OpeningAnchor(
                        opening.opening_id, opening.kind, int(cells_known[nearest])
                    )
                )
        return known, anchors

    def _memory_text(self, agent: Pedestrian, known: list[KnownOpening]) -> str:
        """Rule-based first-person memory summary (the LLM memory role comes later)."""
        parts = []
        for o in known:
            parts.append(
                f"I saw {o.kind} {o.opening_id} ({o.state}) to the {o.direction}, about {o.distance_m:.0f} m away."
            )
        memory = agent.memory
        if memory.last_sighting is not None:
            _cell, step = memory.last_sighting
            parts.append(
                f"I saw an armed person at {(self.tick - step) * DT_S:.0f} s ago."
            )
        shouters = int(self.heard_pairs[agent.index].sum())
        if shouters:
            parts.append(f"I heard {shouters} people shouting.")
        for hint in memory.hints.values():
            parts.append(
                f"Pedestrian {hint.sender} told me about {hint.kind} {hint.opening_id}."
            )
        text = " ".join(parts)
        return text[:MEMORY_CHARS]

    def decision_request(self, agent: Pedestrian, trigger: str) -> DecisionRequest:
        """Build the decision request of one pedestrian from its current knowledge."""
        i = agent.index
        height, width = self.plaza.height, self.plaza.width
        x, y = int(self.pos[i, 0]), int(self.pos[i, 1])
        perc = self._perception
        assert perc is not None
        cells = perc.cells_of(int(self._batch_index[i]))
        occ = self.occupancy.ravel()[cells]
        entities: dict[int, str] = {}
        people, threats, threat_offsets = [], [], []
        for cell, e in zip(cells.tolist(), occ.tolist(), strict=True):
            if e < 0 or e == i:
                continue
            cx, cy = divmod(cell, height)
            if e == self.n_pedestrians:
                entities[cell] = "A"
                threats.append((cx, cy))
                threat_offsets.append((cx - x, cy - y))
            elif self.status[e] == REACHED:
                entities[cell] = "D"
                threats.append((cx, cy))
                threat_offsets.append((cx - x, cy - y))
            else:
                entities[cell] = "p"
                people.append((cx, cy))
        view = SymbolicView(
            cells, height, self.effective.codes.ravel().copy(), (x, y), entities
        )
        codes = self.belief.codes(i)
        known_mask = (codes != Terrain.UNKNOWN).reshape(width, height)
        passable = passable_mask(codes).reshape(width, height)
        known, anchors = self._known_openings(i, codes)
        start = _now()
        options, dist = route_options(
            self.graph,
            passable,
            known_mask,
            (x, y),
            anchors,
            agent.visited,
            np.array(people).reshape(-1, 2),
            np.array(threats).reshape(-1, 2),
            self.cell_size_m,
            sinks=self.opening_mask,
        )
        self.timing["routing"] += _now() - start
        memory = agent.memory
        heard = self.heard_step[i]
        recent = np.flatnonzero(
            (heard >= 0) & (heard >= self.tick - SHOUT_MEMORY_S * STEPS_PER_SECOND)
        )
        recent = recent[np.argsort(-self.heard_step[i, recent], kind="stable")][:5]
        shouts = tuple(
            heard_shout(
                (x, y),
                (int(self.heard_from[i, s, 0]), int(self.heard_from[i, s, 1])),
                self.cell_size_m,
                round(float(self.tick - heard[s]) * DT_S, 2),
            )
            for s in recent.tolist()
        )
        hints = tuple(
            ExitHint(
                h.sender,
                h.opening_id,
                h.kind,
                compass(h.cell[0] - x, h.cell[1] - y),
                approximate_distance_m(
                    math.hypot(h.cell[0] - x, h.cell[1] - y) * self.cell_size_m
                ),
                round((self.tick - memory.hint_steps[h.opening_id]) * DT_S, 2),
                h.cell,
            )
            for h in memory.hints.values()
        )
        stale = None
        if memory.last_sighting is not None and not self.seen_adversary_now[i]:
            (sx, sy), step = memory.last_sighting
            dx, dy = sx - x, sy - y
            stale = StaleSighting(
                (dx, dy),
                compass(dx, dy),
                round(math.hypot(dx, dy) * self.cell_size_m, 1),
                round((self.tick - step) * DT_S, 2),
            )
        stimuli = []
        if self.seen_adversary_now[i]:
            stimuli.append("armed person in sight")
        if self.seen_casualty_now[i]:
            stimuli.append("person lying motionless in sight")
        if self.fleeing_seen[i]:
            stimuli.append(f"{self.fleeing_seen[i]} people fleeing nearby")
        if self.hears_until[i] > self.tick:
            stimuli.append("shouting heard")
        context = EvacuationContext(
            agent_id=agent.unique_id,
            step=self.tick,
            time_s=round(self.tick * DT_S, 4),
            trigger=trigger,
            position=(x, y),
            heading=compass(*MOORE_STEPS[int(self.heading[i])]),
            view=view,
            personality=agent.personality,
            fear=round(float(self.fear[i]), 4),
            fear_level=fear_level(float(self.fear[i])),
            stimuli=tuple(stimuli),
            sees_adversary=bool(self.seen_adversary_now[i]),
            sees_casualty=bool(self.seen_casualty_now[i]),
            fleeing_neighbours=int(self.fleeing_seen[i]),
            visible_people=len(people),
            heard_shouts=shouts,
            exit_hints=hints,
            stale_sighting=stale,
            known_openings=tuple(known),
            options=tuple(options),
            capsule=agent.capsule,
            memory=self._memory_text(agent, known),
            previous=agent.previous,
            threat_offsets=tuple(threat_offsets),
            grid_size=(width, height),
            distances=dist,
            belief_codes=codes,
        )
        return DecisionRequest(EVACUATION_MOVE, agent.unique_id, context)

    def _revision_level(
        self,
        agent: Pedestrian,
        out: EvacuationDecision,
        anchor: tuple[int, int] | None,
        opening: str | None,
        route: list[int],
    ) -> str:
        prev = agent.previous
        if prev is None:
            return "none"
        if out.intent != prev.intent or out.situation != prev.situation:
            return "goal"
        same_anchor = (anchor is None and prev.anchor is None) or (
            anchor is not None
            and prev.anchor is not None
            and (
                max(abs(anchor[0] - prev.anchor[0]), abs(anchor[1] - prev.anchor[1]))
                <= 3
                or (opening is not None and opening == prev.opening_id)
            )
        )
        if not same_anchor:
            return "plan"
        if route[:3] != agent.route[agent.route_pos : agent.route_pos + 3]:
            return "execution"
        return "none"

    def _apply(self, agent: Pedestrian, result: DecisionResult) -> None:
        """Install a decision at its due step: validate the target against the current position, commit <= 20 cells."""
        context: EvacuationContext = result.request.context
        out: EvacuationDecision = result.output
        i = agent.index
        x, y = int(self.pos[i, 0]), int(self.pos[i, 1])
        anchor: tuple[int, int] | None = None
        opening: str | None = None
        kind: str | None = None
        route: list[int] = []
        accepted, reason = True, ""
        if out.action == "move":
            option = context.option(out.route_id) if out.route_id else None
            if option is not None:
                anchor = (
                    context.position[0] + option.anchor_offset[0],
                    context.position[1] + option.anchor_offset[1],
                )
                opening, kind = option.opening_id, option.anchor_kind
                route = self._stitch(i, (x, y), context.position, option.path)
            else:
                assert out.target_offset is not None
                anchor = (
                    context.position[0] + out.target_offset.dx,
                    context.position[1] + out.target_offset.dy,
                )
                kind = "target"
            if not route:
                route = self._route_now(i, (x, y), anchor, out, context)
                if not route and (x, y) != anchor:
                    accepted, reason = (
                        False,
                        "target no longer reachable through observed cells from your current cell",
                    )
        elif out.action == "turn_and_observe":
            if out.target_offset is not None and (
                out.target_offset.dx or out.target_offset.dy
            ):
                self.heading[i] = _heading_index(
                    out.target_offset.dx, out.target_offset.dy
                )
            else:
                self.heading[i] = (self.heading[i] + 4) % 8
        level = (
            self._revision_level(agent, out, anchor, opening, route)
            if accepted
            else "none"
        )
        committed = route[:COMMIT_CELLS]
        if accepted:
            agent.route, agent.route_pos = committed, 0
            agent.route_anchor, agent.route_opening = (
                anchor,
                opening if kind in ("exit", "gate") else None,
            )
            agent.situation, agent.intent, agent.urgency = (
                out.situation,
                out.intent,
                out.urgency,
            )
            agent.shouting = out.shout and out.action == "move"
            agent.capsule = out.context_capsule
            feedback = f"accepted: {out.action}" + (
                f", {len(committed)} cells committed toward {kind} {opening or ''}".rstrip()
                if out.action == "move"
                else ""
            )
        else:
            feedback = f"rejected: {reason}"
        agent.previous = PreviousDecision(
            out.intent, out.urgency, out.situation, kind, opening, anchor, feedback
        )
        agent.last_effect_step = self.tick
        agent.blocked_steps = 0
        nearest_known = None
        known = context.known_openings
        usable = [o for o in known if o.state != "closed"]
        if usable:
            nearest_known = min(usable, key=lambda o: o.distance_m).opening_id
        self.record_decision(
            result,
            {
                "request_step": context.step,
                "applied_step": self.tick,
                "time_s": round(self.tick * DT_S, 4),
            },
            trigger=context.trigger,
            inputs=context.summary(),
            fear=context.fear,
            sees_threat=context.sees_adversary or context.sees_casualty,
            remembered_threat=context.stale_sighting is not None,
            heard_shouts=len(context.heard_shouts),
            n_options=len(context.options),
            action=out.action,
            situation=out.situation,
            intent=out.intent,
            urgency=out.urgency,
            route_id=out.route_id,
            target_dx=out.target_offset.dx if out.target_offset else None,
            target_dy=out.target_offset.dy if out.target_offset else None,
            anchor_kind=kind,
            opening_id=opening,
            shout=bool(out.shout),
            cells_committed=len(committed) if accepted else 0,
            accepted=accepted,
            commit_reason=reason or None,
            revision_level=level,
            nearest_known_opening=nearest_known,
            x=x,
            y=y,
        )

    def _stitch(
        self,
        i: int,
        here: tuple[int, int],
        decided_at: tuple[int, int],
        path: tuple[int, ...],
    ) -> list[int]:
        """Join the option's path from the current cell without a new search, when possible.

        The pedestrian walked its old route while the decision was pending; if a cell of the new
        path (the farthest one) is one legal step away, the route continues from there.
        """
        if here == decided_at:
            return list(path)
        height = self.plaza.height
        believed = self.belief
        for j in range(min(len(path), 8) - 1, -1, -1):
            tx, ty = divmod(path[j], height)
            dx, dy = tx - here[0], ty - here[1]
            if (dx, dy) == (0, 0):
                return list(path[j + 1 :])
            if max(abs(dx), abs(dy)) == 1:
                if dx and dy:
                    a = (
                        believed.seen_step[i, (here[0] + dx) * height + here[1]] >= 0
                        and self.plaza.raw[here[0] + dx, here[1]] == Terrain.FLOOR
                    )
                    b = (
                        believed.seen_step[i, here[0] * height + here[1] + dy] >= 0
                        and self.plaza.raw[here[0], here[1] + dy] == Terrain.FLOOR
                    )
                    if not (a or b):
                        continue
                return list(path[j:])
        return []

    def _route_now(
        self,
        i: int,
        here: tuple[int, int],
        target: tuple[int, int],
        out: EvacuationDecision,
        context: EvacuationContext,
    ) -> list[int]:
        height = self.plaza.height
        flat_pass = self.belief.passable(i)
        src = here[0] * height + here[1]
        flat_pass[src] = True
        start = _now()
        sinks = self.opening_mask.ravel()
        weights = self.graph.weights_for(flat_pass, sinks, src)
        _, pred = self.graph.shortest_paths(flat_pass, src, weights)
        route: list[int] = []
        goal = target[0] * height + target[1]
        if out.waypoint_offset is not None:
            wp = (
                context.position[0] + out.waypoint_offset.dx,
                context.position[1] + out.waypoint_offset.dy,
            )
            wflat = wp[0] * height + wp[1]
            first = path_to(pred, src, wflat)
            if first:
                _, pred2 = self.graph.shortest_paths(
                    flat_pass, wflat, self.graph.weights_for(flat_pass, sinks, wflat)
                )
                second = path_to(pred2, wflat, goal)
                route = first + second if second or wflat == goal else []
        if not route:
            route = path_to(pred, src, goal)
        self.timing["routing"] += _now() - start
        return route

    def _triggers(self) -> list[DecisionRequest]:
        requests = []
        k = self.tick
        for i in self._active().tolist():
            agent = self.pedestrians[i]
            memory = agent.memory
            first_sight = (
                self.seen_adversary_now[i] and not memory.seen_adversary_ever
            ) or (self.seen_casualty_now[i] and not memory.seen_casualty_ever)
            memory.seen_adversary_ever |= bool(self.seen_adversary_now[i])
            memory.seen_casualty_ever |= bool(self.seen_casualty_now[i])
            trigger = None
            if first_sight:
                trigger = "first_sighting"
            elif (
                agent.pending is None and k - agent.last_effect_step >= STEPS_PER_SECOND
            ):
                if self.seen_adversary_now[i]:
                    trigger = "threat_visible"
                elif agent.blocked_steps >= BLOCKED_STEPS_REDECIDE:
                    trigger = "blocked"
                elif agent.route_remaining <= 3:
                    trigger = "route_end"
            if trigger is not None:
                requests.append(self.decision_request(agent, trigger))
        return requests

    # ------------------------------------------------------------------ adversary
    def _adversary_field(self, goal: tuple[int, int]) -> np.ndarray:
        """Distances to ``goal`` on the physical grid (openings excluded), cached for patrol goals."""
        cached = self._adversary_fields.get(goal)
        if cached is not None:
            return cached
        height = self.plaza.height
        flat_pass = (self.effective.passable & ~self.opening_mask).ravel()
        dist, _ = self.graph.shortest_paths(flat_pass, goal[0] * height + goal[1])
        if goal in self.waypoints:
            self._adversary_fields[goal] = dist
        return dist

    def _adversary_proposal(self) -> tuple[int, int]:
        n = self.n_pedestrians
        adversary = self.adversary
        here = (int(self.pos[n, 0]), int(self.pos[n, 1]))
        perc = perceive(
            self.view,
            self.effective.opaque,
            self.pos[n : n + 1, 0],
            self.pos[n : n + 1, 1],
            self.heading[n : n + 1],
        )
        seen = self.occupancy.ravel()[perc.cell]
        visible = {
            int(e): (int(self.pos[e, 0]), int(self.pos[e, 1]))
            for e in seen.tolist()
            if 0 <= e < n and self.status[e] == ACTIVE
        }
        adversary.state, goal = next_state(
            adversary.state, here, visible, self.waypoints
        )
        adversary.goal = goal
        dist = self._adversary_field(goal)
        height = self.plaza.height
        best, best_d = here, dist[here[0] * height + here[1]]
        for dx, dy in MOORE_STEPS:
            nx, ny = here[0] + dx, here[1] + dy
            d = dist[nx * height + ny] + (0.0 if not (dx and dy) else 1e-6)
            if (
                d < best_d - 1e-9
                and self.effective.passable[nx, ny]
                and not self.opening_mask[nx, ny]
                and (
                    self.effective.passable[nx, here[1]]
                    or self.effective.passable[here[0], ny]
                )
            ):
                occupant = self.occupancy[nx, ny]
                if occupant < 0 or (occupant < n and self.status[occupant] == ACTIVE):
                    best, best_d = (nx, ny), d
        return best

    # ------------------------------------------------------------------ the step
    def step(self) -> None:
        """Advance one physical step of dt = 1/3 s (the first also applies the initial decisions)."""
        if not self._started:
            self._start()
        t0 = _now()
        n = self.n_pedestrians
        changed = self.effective.update(self.time_s)
        if changed is not None:
            for opening in self.plaza.gates:
                self._event("gate_state", None, None, f"{opening.opening_id}:{changed}")
        self._observe()
        t1 = _now()
        self.timing["perception"] += t1 - t0
        boundary = self.tick % STEPS_PER_SECOND == 0
        routing_before = self.timing["routing"]
        if boundary:
            self._communicate()
        self._update_fear()
        if boundary:
            for agent in self.pedestrians:
                if (
                    self.status[agent.index] == ACTIVE
                    and agent.pending is not None
                    and agent.pending.due_step <= self.tick
                ):
                    pending, agent.pending = agent.pending, None
                    self._apply(agent, pending.result)
        t2 = _now()
        self.timing["other"] += t2 - t1 - (self.timing["routing"] - routing_before)
        routing_before = self.timing["routing"]
        requests = self._triggers()
        due = -(-(self.tick + STEPS_PER_SECOND) // STEPS_PER_SECOND) * STEPS_PER_SECOND
        for result in self.decide(requests, step=self.tick):
            agent = self._by_uid[result.agent_id]
            agent.pending = PendingDecision(self.tick, due, result)
        t3 = _now()
        self.timing["decisions"] += t3 - t2 - (self.timing["routing"] - routing_before)
        proposals = self.pos.copy()
        height = self.plaza.height
        for i in self._active().tolist():
            agent = self.pedestrians[i]
            if agent.route_pos < len(agent.route):
                tx, ty = divmod(agent.route[agent.route_pos], height)
                if max(abs(tx - self.pos[i, 0]), abs(ty - self.pos[i, 1])) == 1:
                    proposals[i] = (tx, ty)
                else:
                    agent.route, agent.route_pos = [], 0
        proposals[n] = self._adversary_proposal()
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
        moved = np.flatnonzero(np.any(self.pos != old, axis=1))
        movers = [
            self.adversary if e == n else self.pedestrians[e] for e in moved.tolist()
        ]
        # vacate first: Mesa cells hold one agent, and followers enter freed cells
        for agent in movers:
            agent.cell = None
        for e in moved.tolist():
            dx, dy = int(self.pos[e, 0] - old[e, 0]), int(self.pos[e, 1] - old[e, 1])
            self.heading[e] = _heading_index(dx, dy)
            agent = self.adversary if e == n else self.pedestrians[e]
            agent.cell = self.grid[(int(self.pos[e, 0]), int(self.pos[e, 1]))]
            if e < n:
                flat = int(self.pos[e, 0]) * height + int(self.pos[e, 1])
                agent.visited.add(flat)
                if result.status[e] == MOVED:
                    agent.route_pos += 1
        for i in self._active().tolist():
            agent = self.pedestrians[i]
            agent.blocked_steps = (
                agent.blocked_steps + 1 if result.status[i] == BLOCKED else 0
            )
            if result.status[i] == SIDESTEP:
                agent.blocked_steps = 0
        t4 = _now()
        self.timing["movement"] += t4 - t3
        self.tick += 1
        on_opening = self._active()[
            self.opening_mask[self.pos[self._active(), 0], self.pos[self._active(), 1]]
        ]
        for i in on_opening.tolist():
            self.status[i] = EVACUATED
            self.resolved_step[i] = self.tick
            opening = self.plaza.openings[
                int(self.plaza.opening_index[self.pos[i, 0], self.pos[i, 1]])
            ]
            self.exit_used[i] = opening.opening_id
            self._event("evacuated", i, None, opening.opening_id)
        self._attack()
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
        self.timing["other"] += _now() - t4

    def _attack(self) -> None:
        n = self.n_pedestrians
        active = self._active()
        if not active.size:
            return
        d = np.hypot(*(self.pos[active] - self.pos[n]).T) * self.cell_size_m
        within = d <= ATTACK_RADIUS_M + 1e-9
        if not within.any():
            return
        candidates = active[within]
        dist = d[within]
        victim = int(candidates[np.argmin(dist)])
        self.status[victim] = REACHED
        self.resolved_step[victim] = self.tick
        self.pedestrians[victim].shouting = False
        self.pedestrians[victim].pending = None
        self._event("reached", victim, n, f"{dist.min():.2f} m")
        if (
            self.adversary.state.mode == AdversaryMode.LOCK
            and self.adversary.state.target == victim
        ):
            self.adversary.state = self.adversary.state.__class__(
                AdversaryMode.PATROL, self.adversary.state.patrol_index
            )

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
        return pd.DataFrame(
            self._events,
            columns=["step", "time_s", "event", "agent_id", "other_id", "detail"],
        )

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

    def outcomes_frame(self) -> pd.DataFrame:
        """Per-pedestrian outcome measures (spec list; see :mod:`.outputs`)."""
        from mesa_llm_mobility.evacuation.outputs import outcome_measures  # noqa: PLC0415

        return outcome_measures(
            self.positions_frame(),
            self.decisions_frame(),
            self.events_frame(),
            self.pedestrians_frame(),
            self.pocket,
            self.cell_size_m,
        )


_HEADING_BEARINGS = [round(bearing_deg(*MOORE_STEPS[h]), 1) for h in range(8)]


_UNIT_HEADINGS = HEADING_VECTORS / np.linalg.norm(
    HEADING_VECTORS, axis=1, keepdims=True
)
_STEP_HEADING = {(dx, dy): h for h, (dx, dy) in enumerate(MOORE_STEPS)}


def _heading_index(dx: float, dy: float) -> int:
    """Heading index (0 east, counter-clockwise) nearest to the direction ``(dx, dy)``."""
    step = (
        _STEP_HEADING.get((int(dx), int(dy)))
        if float(dx).is_integer() and float(dy).is_integer()
        else None
    )
    if step is not None:
        return step
    return int(np.argmax(_UNIT_HEADINGS @ np.array([dx, dy], dtype=float)))


def _now() -> float:
    return time.perf_counter()
