"""Person-to-person communication: shouting and exit information (paper Secs. 2.1.2, 2.3.7).

A pedestrian who decided to escape (:func:`~.decisions.decides_to_escape`: it moves after a
direct sighting, or assesses danger, or states the goal escape) shouts while moving; listeners
within 15 m hear it without line of sight and learn only the bearing and approximate distance of
the shouter (no threat coordinate). A leaving pedestrian (goal category seek_exit, follow_others
or escape: :data:`~.decision_output.EVACUATING_GOALS`) heading for an opening it observed itself
tells pedestrians within 5 m where it is (its direction and approximate distance); information
passes one hop, sender -> receiver. Both channels read the answer's enumerated fields, never the
words of its free-text intent.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import cKDTree

from mesa_llm_mobility.evacuation.crowd import Crowd
from mesa_llm_mobility.evacuation.decision_output import EVACUATING_GOALS
from mesa_llm_mobility.evacuation.event_log import EventLog
from mesa_llm_mobility.evacuation.knowledge import Knowledge
from mesa_llm_mobility.evacuation.messages import (
    ExitHint,
    approximate_distance_m,
    shout_details,
)
from mesa_llm_mobility.evacuation.routing import compass
from mesa_llm_mobility.evacuation.scene import Scene
from mesa_llm_mobility.evacuation.senses import Senses
from mesa_llm_mobility.evacuation.timing import (
    SHOUT_MEMORY_S,
    STEPS_PER_SECOND,
    Clock,
)

SHOUT_RADIUS_M = 15.0
EXIT_INFO_RADIUS_M = 5.0
"""Talking distance for exit information; the paper says "nearby" without a number."""


def pairs_within(
    receivers: np.ndarray, senders: np.ndarray, radius_cells: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All ``(receiver, sender, distance)`` index pairs closer than ``radius_cells`` (centres).

    The pairs come in row-major order (by receiver, then sender). Candidates come from a k-d
    tree over the senders (a little beyond the range), and each candidate's distance is then
    computed and compared exactly as a full receiver x sender table would, so the pairs and
    distances are those of the table without its n x m cost.

    Args:
        receivers: ``(n, 2)`` cells.
        senders: ``(m, 2)`` cells.
        radius_cells: Range in cells (inclusive).
    """
    if len(receivers) == 0 or len(senders) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    near = cKDTree(receivers).sparse_distance_matrix(
        cKDTree(senders), radius_cells + 1e-6, output_type="ndarray"
    )
    order = np.lexsort((near["j"], near["i"]))
    r = near["i"][order].astype(np.int64)
    s = near["j"][order].astype(np.int64)
    d = np.sqrt(((receivers[r] - senders[s]) ** 2).sum(axis=1))
    keep = d <= radius_cells + 1e-9
    return r[keep], s[keep], d[keep]


def communicate(
    crowd: Crowd,
    senses: Senses,
    knowledge: Knowledge,
    scene: Scene,
    clock: Clock,
    events: EventLog,
) -> None:
    """Shouts heard within 15 m and exit information within 5 m (at 1 s boundaries).

    Listeners of a shouter (a pedestrian shouting while it moves) hear it for the next second
    and remember its direction; a leaving pedestrian (its goal in ``EVACUATING_GOALS``) heading
    for an opening tells receivers within ``EXIT_INFO_RADIUS_M`` who never saw it (once per
    sender, receiver and opening).

    Reads the crowd, the beliefs and the scene; writes the senses (hearing), the receivers'
    exit hints, the knowledge (information passed) and the events (``shout_heard``,
    ``exit_info_sent``, ``exit_info_received``).
    """
    active = crowd.active_indices()
    pos, cell_size = crowd.pos, scene.cell_size_m
    pedestrians = crowd.pedestrians
    shouters = np.array(  # shouting while moving
        [
            i
            for i in active
            if pedestrians[i].shouting and pedestrians[i].route_remaining > 0
        ],
        dtype=np.int64,
    )
    if shouters.size:
        r, s, _ = pairs_within(pos[active], pos[shouters], SHOUT_RADIUS_M / cell_size)
        keep = active[r] != shouters[s]
        listeners, speakers = active[r[keep]], shouters[s[keep]]
        senses.hears_until[listeners] = clock.tick + STEPS_PER_SECOND
        first = senses.shouts.hear(clock.tick, listeners, speakers, pos[speakers])
        if first.any():
            new_listeners, new_speakers = listeners[first], speakers[first]
            events.record_many(
                clock.tick,
                "shout_heard",
                new_listeners,
                new_speakers,
                shout_details(pos[new_speakers] - pos[new_listeners], cell_size),
            )
    senses.shouts.forget_before(clock.tick - SHOUT_MEMORY_S * STEPS_PER_SECOND)
    senders = [
        i
        for i in active
        if pedestrians[i].route_opening is not None
        and pedestrians[i].goal in EVACUATING_GOALS
    ]
    if not senders:
        return
    sender_arr = np.array(senders, dtype=np.int64)
    opening_of = np.array(
        [scene.opening_number[pedestrians[i].route_opening] for i in senders],
        dtype=np.int64,
    )
    r, s, _ = pairs_within(pos[active], pos[sender_arr], EXIT_INFO_RADIUS_M / cell_size)
    receivers, senders_, openings = active[r], sender_arr[s], opening_of[s]
    keep = receivers != senders_
    receivers, senders_, openings = receivers[keep], senders_[keep], openings[keep]
    known = np.zeros(receivers.size, dtype=bool)
    for k, cells in enumerate(scene.opening_cells):  # only news: never saw it
        mine = openings == k
        if mine.any():
            known[mine] = np.any(senses.belief.known(receivers[mine], cells), axis=1)
    sent = knowledge.info_sent
    news = np.flatnonzero(~known)  # most receivers already saw the opening
    here = pos[receivers[news]].tolist()
    for si, ri, k, (rx, ry) in zip(
        senders_[news].tolist(),
        receivers[news].tolist(),
        openings[news].tolist(),
        here,
        strict=True,
    ):
        if (si, ri, k) in sent:
            continue
        sent.add((si, ri, k))
        opening = scene.plaza.openings[k]
        cx, cy = opening.center
        dx, dy = cx - rx, cy - ry
        hint = ExitHint(
            sender=crowd.uid(si),
            opening_id=opening.opening_id,
            kind=opening.kind,
            direction=compass(dx, dy),
            approx_distance_m=approximate_distance_m(math.hypot(dx, dy) * cell_size),
            age_s=0.0,
            cell=(cx, cy),
        )
        receiver = pedestrians[ri]
        receiver.memory.hints[opening.opening_id] = hint
        receiver.memory.hint_steps[opening.opening_id] = clock.tick
        events.record(clock.tick, "exit_info_sent", si, ri, opening.opening_id)
        events.record(clock.tick, "exit_info_received", ri, si, opening.opening_id)
        knowledge.inform(si, ri, k)


def provide_exit_information(
    crowd: Crowd, scene: Scene, knowledge: Knowledge, clock: Clock, events: EventLog
) -> None:
    """System-provided exit information at initialisation (the condition of paper Fig. 9b).

    Every pedestrian is told the direction and rough distance of each evacuation exit (the
    openings of kind ``exit``, which never close) from its cell, as exit information without
    a sender; it enters the decision context as messages do and is recorded as an
    ``exit_info_system`` event (detail: the opening id) and as an ``exit_information`` row with
    ``source`` ``"system"``. Gates are not announced.

    Reads the crowd's positions and the scene; writes the pedestrians' exit hints, the knowledge
    record and the events.
    """
    number = {o.opening_id: k for k, o in enumerate(scene.plaza.openings)}
    exits = [o for o in scene.plaza.openings if o.kind == "exit"]
    for i in crowd.active_indices().tolist():
        x, y = (int(v) for v in crowd.pos[i])
        memory = crowd.pedestrians[i].memory
        for opening in exits:
            cx, cy = opening.center
            dx, dy = cx - x, cy - y
            memory.hints[opening.opening_id] = ExitHint(
                sender=None,
                opening_id=opening.opening_id,
                kind=opening.kind,
                direction=compass(dx, dy),
                approx_distance_m=approximate_distance_m(
                    math.hypot(dx, dy) * scene.cell_size_m
                ),
                age_s=0.0,
                cell=(cx, cy),
            )
            memory.hint_steps[opening.opening_id] = clock.tick
            events.record(clock.tick, "exit_info_system", i, None, opening.opening_id)
            knowledge.provide(i, number[opening.opening_id])
