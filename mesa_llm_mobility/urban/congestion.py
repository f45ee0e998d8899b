"""Congestion indicators and labels shown to agents (GATSim).

The prototype tells agents how long they would wait at a congested link or facility:

- road link: ``(queue / capacity + 0.5) x travel_time``, capped at ``5 x travel_time``;
- facility: ``(queue / capacity + 0.5) x average_stay``;

and labels a wait of at least 10 min *severe*, 5-9 min *moderate*, 1-4 min *light* (whole
minutes). An empty queue means no wait (indicator 0) rather than half a traversal: the prototype
reports only links and facilities with somebody waiting. A closed link or full-stop facility
(capacity 0) with a queue gets the cap (links) or ``5 x average_stay`` (facilities).

For the ``flow`` link model the natural indicator is the Vickrey queueing delay a vehicle entering
now would suffer, ``max(0, last_exit + 1 / capacity - (now + free_time))``, which
:mod:`~mesa_llm_mobility.urban.traffic` reports instead.
"""

from __future__ import annotations

import math

SEVERE_MINUTES = 10
MODERATE_MINUTES = 5
LIGHT_MINUTES = 1
LINK_WAIT_CAP_FACTOR = 5.0


def link_wait_indicator(queue: int, capacity: float, travel_time: float) -> float:
    """Estimated wait (minutes) to enter a road link.

    ``w = min((queue / capacity + 0.5) x travel_time, 5 x travel_time)`` if ``queue > 0``, else 0.

    Args:
        queue: Vehicles waiting to enter.
        capacity: Current capacity (vehicles traversing at once); 0 means closed.
        travel_time: Free travel time in minutes.

    Returns:
        The wait indicator in minutes.
    """
    if queue <= 0:
        return 0.0
    cap = LINK_WAIT_CAP_FACTOR * travel_time
    if capacity <= 0:
        return cap
    return min((queue / capacity + 0.5) * travel_time, cap)


def facility_wait_indicator(queue: int, capacity: float, average_stay: float) -> float:
    """Estimated wait (minutes) to be admitted to a facility.

    ``w = (queue / capacity + 0.5) x average_stay`` if ``queue > 0``, else 0; a facility with
    capacity 0 reports ``5 x average_stay``.

    Args:
        queue: People waiting at the door.
        capacity: Current capacity.
        average_stay: Average stay in minutes.

    Returns:
        The wait indicator in minutes.
    """
    if queue <= 0:
        return 0.0
    if capacity <= 0:
        return LINK_WAIT_CAP_FACTOR * average_stay
    return (queue / capacity + 0.5) * average_stay


def congestion_label(wait_minutes: float) -> str | None:
    """Label a wait: ``"severe"`` (>= 10 min), ``"moderate"`` (5-9), ``"light"`` (1-4), else None.

    The wait is rounded half up to whole minutes first (9.6 -> 10 -> severe).

    Args:
        wait_minutes: Wait indicator in minutes.

    Returns:
        The label, or None for no congestion.
    """
    minutes = math.floor(wait_minutes + 0.5)
    if minutes >= SEVERE_MINUTES:
        return "severe"
    if minutes >= MODERATE_MINUTES:
        return "moderate"
    if minutes >= LIGHT_MINUTES:
        return "light"
    return None
