"""Person-to-person communication: shouting and exit information (paper Secs. 2.1.2, 2.3.7).

A pedestrian who decided to escape shouts while moving; listeners within 15 m hear it without line
of sight and learn only the bearing and approximate distance of the shouter (no threat coordinate).
A pedestrian heading for an exit it observed itself tells pedestrians within 5 m where it is (its
direction and approximate distance); information passes one hop, sender -> receiver.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from scipy.spatial import cKDTree

from mesa_llm_mobility.evacuation.routing import compass
from mesa_llm_mobility.evacuation.timing import SHOUT_MEMORY_S, STEPS_PER_SECOND

if TYPE_CHECKING:
    from mesa_llm_mobility.evacuation.model import EvacuationModel

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


def approximate_distance_m(distance_m: float) -> int:
    """Distance as heard: rounded to the nearest 5 m, at least 5 m."""
    return max(5, round(distance_m / 5.0) * 5)


@dataclass(frozen=True)
class HeardShout:
    """A shout as a listener perceives it: direction and rough distance, nothing about the threat."""

    direction: str
    approx_distance_m: int
    age_s: float

    def describe(self) -> str:
        """Prompt line."""
        return f"someone shouting in alarm to the {self.direction}, about {self.approx_distance_m} m away ({self.age_s:.0f} s ago)"


@dataclass(frozen=True)
class ExitHint:
    """Exit information received from another pedestrian."""

    sender: int
    opening_id: str
    kind: str
    direction: str
    approx_distance_m: int
    age_s: float
    cell: tuple[int, int]

    def describe(self) -> str:
        """Prompt line."""
        return f"pedestrian {self.sender} told you an open {self.kind} lies to the {self.direction}, about {self.approx_distance_m} m away ({self.age_s:.0f} s ago)"


def heard_shout(
    listener: tuple[int, int],
    shouter: tuple[int, int],
    cell_size_m: float,
    age_s: float = 0.0,
) -> HeardShout:
    """What a listener at ``listener`` hears of a shouter at ``shouter``."""
    return _heard_from(
        shouter[0] - listener[0], shouter[1] - listener[1], cell_size_m, age_s
    )


@lru_cache(maxsize=1 << 16)
def _heard_from(dx: int, dy: int, cell_size_m: float, age_s: float) -> HeardShout:
    """:func:`heard_shout` of a shouter at offset ``(dx, dy)`` (a crowd repeats offsets)."""
    return HeardShout(
        compass(dx, dy),
        approximate_distance_m(float(np.hypot(dx, dy)) * cell_size_m),
        age_s,
    )


def shout_details(offsets: np.ndarray, cell_size_m: float) -> list[str]:
    """The ``shout_heard`` event details of shouters at ``offsets`` (``(k, 2)``, from the listener).

    Each is the direction and rough distance a listener hears (:func:`heard_shout`), computed
    once for each distinct offset (a crowd has millions of pairs but a few thousand offsets).
    """
    if not len(offsets):
        return []
    unique, at = np.unique(
        np.asarray(offsets).reshape(-1, 2), axis=0, return_inverse=True
    )
    texts = []
    for dx, dy in unique.tolist():
        heard = heard_shout((0, 0), (dx, dy), cell_size_m)
        texts.append(f"{heard.direction} ~{heard.approx_distance_m} m")
    return [texts[k] for k in at.ravel().tolist()]


def communicate(model: EvacuationModel) -> None:
    """Shouts heard within 15 m and exit information within 5 m (at 1 s boundaries).

    Listeners of a shout hear it for the next second and remember its direction; a pedestrian
    heading for an opening tells receivers within ``EXIT_INFO_RADIUS_M`` who never saw it (once
    per sender, receiver and opening). Both are recorded as events.

    Args:
        model: The model at a 1 s boundary.
    """
    active = model.active_indices()
    shouters = np.array(  # shouting while moving
        [
            i
            for i in active
            if model.pedestrians[i].shouting
            and model.pedestrians[i].route_remaining > 0
        ],
        dtype=np.int64,
    )
    if shouters.size:
        r, s, _ = pairs_within(
            model.pos[active], model.pos[shouters], SHOUT_RADIUS_M / model.cell_size_m
        )
        keep = active[r] != shouters[s]
        listeners, speakers = active[r[keep]], shouters[s[keep]]
        model.hears_until[listeners] = model.tick + STEPS_PER_SECOND
        first = model.shouts.hear(model.tick, listeners, speakers, model.pos[speakers])
        if first.any():
            new_listeners, new_speakers = listeners[first], speakers[first]
            model.record_events(
                "shout_heard",
                new_listeners,
                new_speakers,
                shout_details(
                    model.pos[new_speakers] - model.pos[new_listeners],
                    model.cell_size_m,
                ),
            )
    model.shouts.forget_before(model.tick - SHOUT_MEMORY_S * STEPS_PER_SECOND)
    senders = [
        i
        for i in active
        if model.pedestrians[i].route_opening is not None
        and model.pedestrians[i].intent in ("seek_exit", "escape", "follow_others")
    ]
    if not senders:
        return
    sender_arr = np.array(senders, dtype=np.int64)
    opening_of = np.array(
        [model.opening_number[model.pedestrians[i].route_opening] for i in senders],
        dtype=np.int64,
    )
    r, s, _ = pairs_within(
        model.pos[active],
        model.pos[sender_arr],
        EXIT_INFO_RADIUS_M / model.cell_size_m,
    )
    receivers, senders_, openings = active[r], sender_arr[s], opening_of[s]
    keep = receivers != senders_
    receivers, senders_, openings = receivers[keep], senders_[keep], openings[keep]
    known = np.zeros(receivers.size, dtype=bool)
    for k, cells in enumerate(
        model.opening_cells
    ):  # only news: the receiver never saw it
        mine = openings == k
        if mine.any():
            known[mine] = np.any(model.belief.known(receivers[mine], cells), axis=1)
    sent = model.info_sent
    news = np.flatnonzero(~known)  # most receivers already saw the opening
    here = model.pos[receivers[news]].tolist()
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
        opening = model.plaza.openings[k]
        cx, cy = opening.center
        dx, dy = cx - rx, cy - ry
        hint = ExitHint(
            sender=model.uid(si),
            opening_id=opening.opening_id,
            kind=opening.kind,
            direction=compass(dx, dy),
            approx_distance_m=approximate_distance_m(
                math.hypot(dx, dy) * model.cell_size_m
            ),
            age_s=0.0,
            cell=(cx, cy),
        )
        receiver = model.pedestrians[ri]
        receiver.memory.hints[opening.opening_id] = hint
        receiver.memory.hint_steps[opening.opening_id] = model.tick
        model.record_event("exit_info_sent", si, ri, opening.opening_id)
        model.record_event("exit_info_received", ri, si, opening.opening_id)
        model.exit_knowledge.inform(model, si, ri, k)
