"""The schedule of a scenario's capacity events: when each starts and ends in the engine.

A capacity event sets a link's or facility's capacity to ``new_value`` from ``start_time`` and
restores the scenario's capacity at ``end_time``. :class:`CapacitySchedule` keeps the starts and
ends in the order the :class:`~mesa_llm_mobility.urban.traffic.TrafficEngine` applies them (by
time; at one minute, in scenario order, each event's end before its start)
and hands out those due at each step.
"""

from __future__ import annotations

from collections.abc import Sequence

from mesa_llm_mobility.urban.scenario import Event

_EPS = 1e-9


class CapacitySchedule:
    """Pending starts and ends of capacity events, in application order.

    Args:
        events: The scenario's events (events of other attributes are ignored).
    """

    def __init__(self, events: Sequence[Event]) -> None:
        self._actions = self._actions_of(events, offset=0)
        self._position = 0

    @staticmethod
    def _actions_of(
        events: Sequence[Event], offset: int, since: float | None = None
    ) -> list[tuple[float, int, Event, bool]]:
        actions = []
        for k, event in enumerate(events):
            if event.attribute != "capacity":
                continue
            if since is not None and event.start_time < since - _EPS:
                continue
            actions.append((event.start_time, offset + 2 * k + 1, event, True))
            actions.append((event.end_time, offset + 2 * k, event, False))
        actions.sort(key=lambda item: (item[0], item[1]))
        return actions

    def due(self, t: float) -> list[tuple[Event, bool]]:
        """Take the actions due at or before ``t``: ``(event, starting)`` in order."""
        due = []
        while self._position < len(self._actions):
            when, _, event, starting = self._actions[self._position]
            if when > t + _EPS:
                break
            due.append((event, starting))
            self._position += 1
        return due

    def replace(self, events: Sequence[Event], now: float, offset: int) -> None:
        """Replace the pending actions by those of ``events`` from ``now`` on.

        Events already started keep their pending end (so the capacity they changed is
        restored); pending starts are dropped; ``events`` that start at or after ``now`` are
        scheduled.

        Args:
            events: The new events.
            now: The engine's clock.
            offset: Rank offset that orders the new events after the old ones at equal times.
        """
        done = self._actions[: self._position]
        started = {id(action[2]) for action in done if action[3]}
        pending = [
            action
            for action in self._actions[self._position :]
            if not action[3] and id(action[2]) in started
        ]
        pending += self._actions_of(events, offset, since=now)
        pending.sort(key=lambda item: (item[0], item[1]))
        self._actions = done + pending
