"""What one pedestrian hears or is told by another: a shout, and exit information.

A listener learns only the bearing and rough distance of a shout (no threat coordinate, paper
Sec. 2.3.7); a receiver of exit information learns the opening's kind, direction and rough
distance. These are the messages as they enter a decision context; who hears and tells whom is
:mod:`.communication`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from mesa_llm_mobility.evacuation.routing import compass


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
