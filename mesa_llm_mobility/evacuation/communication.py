"""Person-to-person communication: shouting and exit information (paper Secs. 2.1.2, 2.3.7).

A pedestrian who decided to escape shouts while moving; listeners within 15 m hear it without line
of sight and learn only the bearing and approximate distance of the shouter (no threat coordinate).
A pedestrian heading for an exit it observed itself tells pedestrians within 5 m where it is (its
direction and approximate distance); information passes one hop, sender -> receiver.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mesa_llm_mobility.evacuation.routing import compass

SHOUT_RADIUS_M = 15.0
EXIT_INFO_RADIUS_M = 5.0
"""Talking distance for exit information; the paper says "nearby" without a number."""


def pairs_within(
    receivers: np.ndarray, senders: np.ndarray, radius_cells: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All ``(receiver, sender, distance)`` index pairs closer than ``radius_cells`` (centres).

    Args:
        receivers: ``(n, 2)`` cells.
        senders: ``(m, 2)`` cells.
        radius_cells: Range in cells (inclusive).
    """
    if len(receivers) == 0 or len(senders) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    d = np.sqrt(((receivers[:, None, :] - senders[None, :, :]) ** 2).sum(axis=2))
    r, s = np.nonzero(d <= radius_cells + 1e-9)
    return r, s, d[r, s]


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
    dx, dy = shouter[0] - listener[0], shouter[1] - listener[1]
    return HeardShout(
        compass(dx, dy),
        approximate_distance_m(float(np.hypot(dx, dy)) * cell_size_m),
        age_s,
    )
