"""Facilities in the traffic engine: door queues, visitors and admission.

A traveller whose trip ends at a facility joins its door queue; once per step each facility
admits ``min(queue, capacity - staying)`` travellers in FIFO order (GATSim's facility capacity).
A traveller leaving for its next trip frees its place (or leaves the queue). The wait indicator
shown to agents is :func:`~mesa_llm_mobility.urban.congestion.facility_wait_indicator`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mesa_llm_mobility.urban.congestion import facility_wait_indicator
from mesa_llm_mobility.urban.trips import TravelState, Trip

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.scenario import Facility


@dataclass(eq=False, slots=True)
class FacilityState:
    """Door queue and visitors of one facility.

    Attributes:
        name: Facility name.
        capacity: Current capacity (capacity events change it).
        base_capacity: The scenario's capacity.
        average_stay: Average stay in minutes (for the wait indicator).
        queue: Agents queueing at the door, in arrival order.
        staying: Agents inside.
    """

    name: str
    capacity: int
    base_capacity: int
    average_stay: float
    queue: deque[Hashable] = field(default_factory=deque)
    staying: set[Hashable] = field(default_factory=set)

    def wait_minutes(self) -> float:
        """Current wait indicator (minutes) at the door (see :mod:`.congestion`)."""
        return facility_wait_indicator(
            len(self.queue), self.capacity, self.average_stay
        )


class FacilityQueues(Mapping[str, FacilityState]):
    """The facilities of a scenario by name, with the arrivals awaiting admission.

    Args:
        facilities: The scenario's facilities.
    """

    def __init__(self, facilities: Iterable[Facility]) -> None:
        self._states = {
            f.name: FacilityState(f.name, f.capacity, f.capacity, f.average_stay)
            for f in facilities
        }
        self._awaiting: dict[Hashable, Trip] = {}
        self._touched: set[str] = set()

    def __getitem__(self, name: str) -> FacilityState:
        """The facility called ``name``."""
        return self._states[name]

    def __iter__(self) -> Iterator[str]:
        """Facility names, in scenario order."""
        return iter(self._states)

    def __len__(self) -> int:
        """Number of facilities."""
        return len(self._states)

    def arrive(self, trip: Trip) -> None:
        """Queue the traveller of ``trip`` at its destination facility's door."""
        self._states[trip.destination_facility].queue.append(trip.agent)
        self._touched.add(trip.destination_facility)
        self._awaiting[trip.agent] = trip

    def leave(self, agent: Hashable, name: str) -> None:
        """Take ``agent`` out of facility ``name`` (from inside, or from its door queue)."""
        facility = self._states[name]
        if agent in facility.staying:
            facility.staying.discard(agent)
        else:
            facility.queue.remove(agent)
            self._awaiting.pop(agent, None)
        self._touched.add(name)

    def set_capacity(self, name: str, capacity: int) -> None:
        """Change the current capacity of facility ``name``."""
        self._states[name].capacity = capacity
        self._touched.add(name)

    def admit(self, t: float, *, forget_empty: bool) -> list[Hashable]:
        """Admit queueing travellers at ``t``, up to each facility's free capacity.

        Args:
            t: The step's time (the trips' admission minute).
            forget_empty: Stop visiting facilities whose queue is empty until something
                changes there (when no per-step facility table is recorded).

        Returns:
            The agents admitted, in order.
        """
        admitted: list[Hashable] = []
        for name in sorted(self._touched):
            facility = self._states[name]
            free = facility.capacity - len(facility.staying)
            while facility.queue and free > 0:
                agent = facility.queue.popleft()
                facility.staying.add(agent)
                admitted.append(agent)
                free -= 1
                trip = self._awaiting.pop(agent, None)
                if trip is not None:
                    trip.admitted = t
                    trip.state = TravelState.STAYING
        if forget_empty:
            self._touched = {n for n in self._touched if self._states[n].queue}
        return admitted
