"""Plan execution: travellers' plans as engine trips, the wake-up schedule, and what trips leave.

:class:`Itinerary` turns adopted plans and revisions into trips of the
:class:`~mesa_llm_mobility.urban.traffic.TrafficEngine`, keeps the heap of wake-up minutes
(departures, reconsiderations during activities) so that agents just staying cost nothing per
minute, moves the network one minute and mirrors the engine's view into the travellers who are
under way. Its engine hooks remember completed trips (event memories with departure, travel time,
delay and lateness), apply en-route path decisions on reaching the node they were made for, and
interrupt a travel whose next activity is due (GATSim's ``InterruptCurrentTravel``).

It records what the model's tables show: plans (one row per planned activity), revisions (one
:class:`~mesa_llm_mobility.urban.agents.PlanRevisionRecord` per revision, also in the
traveller's ``revisions`` of the day), moves (state or place changes) and plan errors.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from mesa_llm_mobility.urban.agents import (
    PlanRevisionRecord,
    TravellerAgent,
    TripRecord,
    experience_of,
)
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, format_hhmm
from mesa_llm_mobility.urban.decisions import (
    PlanRevisionOutput,
    RevisionContext,
    Situation,
    formula_importance,
    trip_memory_text,
)
from mesa_llm_mobility.urban.perception import riders_who_may_reconsider
from mesa_llm_mobility.urban.plans import WORK_REFLECT_MINUTES, Activity, DailyPlan
from mesa_llm_mobility.urban.routing import PathError
from mesa_llm_mobility.urban.traffic import TrafficEngine, Trip

if TYPE_CHECKING:
    from mesa.discrete_space import Network

logger = logging.getLogger(__name__)

CHAT_MINUTE = 0
"""Minute of the day when morning chats open."""
PLAN_MINUTE = 1
"""Minute of the day when day plans are made."""
REFLECTION_MINUTE = 23 * 60 + 50
"""Minute of the day when travellers reflect on it."""


def is_day_phase(minute_of_day: int) -> bool:
    """Whether ``minute_of_day`` is one of the day's phases: chats, plans or reflections."""
    return minute_of_day in (CHAT_MINUTE, PLAN_MINUTE, REFLECTION_MINUTE)


PlanRow = tuple[int, int, str, str, int, str, str | None, str, str, int, str]
"""``(day, minute, agent, source, position, facility, departure_time, mode, path,
reflect_every, description)``."""
MoveRow = tuple[int, str, str, str]
"""``(time, agent, state, place)``."""


class Itinerary:
    """Travellers' plans as engine trips, their wake-up minutes and their mirrored states.

    Args:
        engine: The traffic engine the trips run in (its hooks are registered here).
        travellers: Every traveller by name.
        space: The model's network space (the travellers' cells).

    Attributes:
        active: Names of the travellers under way or due to leave; of these, each minute
            mirrors the ones the engine touched and the ones that joined, and offers the
            drivers, walkers and riders at a node ahead a reconsideration.
        plans: One row per planned activity of every plan and revision.
        revisions: Every revision of the run, in order (interruptions included).
        moves: One row whenever a traveller's state or place changes.
        plan_errors: Plan validation messages by rule (``"unschedulable"``: skipped activities).
        arrived: Trips completed so far.
        delay_sum: Summed delay (minutes, at least 0 each) of the completed trips.
        in_progress: Trips departed and not yet arrived.
    """

    decision_lead_minutes: int = 0
    """Minutes ahead of a departure its revision is asked (the model's reaction time); a class
    default so that checkpoints pickled before reaction times existed still load."""

    def __init__(
        self,
        engine: TrafficEngine,
        travellers: Mapping[str, TravellerAgent],
        space: Network,
    ) -> None:
        self.engine = engine
        self.travellers = travellers
        self.space = space
        self.minute = 0
        self.active: set[str] = set()
        self.plans: list[PlanRow] = []
        self.revisions: list[PlanRevisionRecord] = []
        self.moves: list[MoveRow] = [
            (0, name, agent.state, agent.place) for name, agent in travellers.items()
        ]
        self.plan_errors: Counter[str] = Counter()
        self.arrived = 0
        self.delay_sum = 0.0
        self.in_progress = 0
        self._wake: list[tuple[float, int, str, str, str]] = []
        self._seq = 0
        self._trip_records: dict[str, TripRecord] = {}
        self._joined: set[str] = set()
        engine.on_trip_complete.append(self._on_trip_complete)
        engine.on_node_arrival.append(self._on_node_arrival)

    # ------------------------------------------------------------------ the minute
    def advance(self, t: int) -> None:
        """Move the network through minute ``t`` and mirror the travellers under way."""
        self.minute = t
        self.engine.step()
        self._mirror(t)

    def revision_opportunities(
        self, t: int
    ) -> tuple[list[tuple[TravellerAgent, Situation]], list[TravellerAgent]]:
        """Who may revise at minute ``t``: staying travellers woken now, and drivers.

        Wake-ups of ``t`` are taken off the heap (a departure's traveller is mirrored from now
        on). A departure still planned gives an ``"end_of_activity"`` revision, a
        reconsideration still valid a ``"during_activity"`` one (and the next one is
        scheduled); none at the chat and plan minutes, at most one per traveller.

        Returns:
            ``(traveller, situation)`` pairs, and the other mirrored travellers (drivers may
            reconsider at the node ahead), by name.
        """
        staying: list[tuple[TravellerAgent, Situation]] = []
        seen: set[str] = set()
        while self._wake and self._wake[0][0] <= t:
            _, _, name, purpose, payload = heapq.heappop(self._wake)
            agent = self.travellers[name]
            if purpose == "mirror":
                self._join(name)
                continue
            if purpose == "sync" or (
                purpose == "departure" and not self.decision_lead_minutes
            ):  # leaving: mirror the agent from now on
                self._join(name)
            if name in seen or t % MINUTES_PER_DAY in (CHAT_MINUTE, PLAN_MINUTE):
                continue
            pending = agent.pending_trips()
            situation: Situation
            if purpose == "departure":
                if (
                    not pending
                    or pending[0].trip_id != payload
                    or agent.state != "staying"
                ):
                    continue
                situation = "end_of_activity"
            else:
                if (
                    payload != f"{agent.place}#{agent.check_version}"
                    or agent.state != "staying"
                    or not pending
                ):
                    continue
                situation = "during_activity"
                self._schedule_check(agent, t)
            seen.add(name)
            staying.append((agent, situation))
        return staying, self._approaching_nodes(t, seen)

    def _join(self, name: str) -> None:
        """Mirror ``name`` from now on (and at least at this minute's end)."""
        self.active.add(name)
        self.__dict__.setdefault("_joined", set()).add(name)

    def _approaching_nodes(self, t: int, seen: set[str]) -> list[TravellerAgent]:
        """Travellers under way who may reconsider at the node ahead at ``t``, by name.

        Drivers and walkers whose link ends by ``t`` and riders queued at a stop: everyone
        :meth:`~.agents.TravellerAgent.node_revision_context` (the en-route rule) may answer
        for, and only them.
        """
        engine = self.engine
        trips = engine.changes.at_link_end(t)
        for link, queue in engine.metro.queues_by_link():
            trips.extend(
                riders_who_may_reconsider(engine, link, queue, self._reconsidered, t)
            )
        names = {str(trip.agent) for trip in trips}
        names &= self.active
        return [self.travellers[name] for name in sorted(names - seen)]

    # ------------------------------------------------------------------ commits
    def adopt_plan(self, agent: TravellerAgent, plan: DailyPlan, t: int) -> None:
        """Make ``plan`` the traveller's day: remember its concepts, schedule its trips."""
        agent.adopt_plan(plan, t)
        self._record_plan(agent, t, "plan", agent.activities)
        self._schedule(agent, agent.activities, t)

    def revise(
        self,
        agent: TravellerAgent,
        context: RevisionContext,
        out: PlanRevisionOutput,
        t: int,
    ) -> None:
        """Apply a revision: keep, a new path (now or at the next node), time or activities."""
        self._record_revision(
            agent, t, context.situation, context.place, out.action, out.reason
        )
        if out.concept is not None:
            agent.memory.remember(
                out.concept.content, node_type="reflection", importance=out.concept.importance,
                now=t, keywords=out.concept.keywords,
            )  # fmt: skip
        if out.action == "keep":
            return
        if out.action == "new_path" and context.situation == "at_node":
            agent.pending_reroute = (context.place, list(out.new_path or []))
            return
        future = [r.activity for r in agent.pending_trips()]
        if out.action == "new_path":
            if not future:
                return
            future[0] = future[0].model_copy(update={"path": list(out.new_path or [])})
        elif out.action == "new_departure_time":
            if not future:
                return
            future[0] = future[0].model_copy(
                update={"departure_time": out.new_departure_time}
            )
        else:
            future = list(out.activities or [])
        self._withdraw(agent)
        done = len(agent.activities) - len(context.future)
        agent.activities = agent.activities[: max(done, 0)] + future
        self._record_plan(agent, t, "revision", future)
        self._schedule(agent, future, t)

    # ------------------------------------------------------------------ records
    def _record_plan(
        self,
        agent: TravellerAgent,
        t: int,
        source: str,
        activities: Sequence[Activity],
    ) -> None:
        day, now = t // MINUTES_PER_DAY + 1, t % MINUTES_PER_DAY
        for position, a in enumerate(activities):
            self.plans.append(
                (day, now, agent.name, source, position, a.facility, a.departure_time, a.mode,
                 a.path if isinstance(a.path, str) else " ".join(a.path), a.reflect_every, a.description)
            )  # fmt: skip

    def _record_revision(
        self,
        agent: TravellerAgent,
        t: int,
        situation: str,
        place: str,
        action: str,
        reason: str,
    ) -> None:
        record = PlanRevisionRecord(t, situation, place, action, reason, agent.name)
        agent.revisions.append(record)
        self.revisions.append(record)

    # ------------------------------------------------------------------ scheduling
    def _push(self, minute: float, name: str, purpose: str, payload: str = "") -> None:
        self._seq += 1
        heapq.heappush(self._wake, (minute, self._seq, name, purpose, payload))

    def _schedule(
        self,
        agent: TravellerAgent,
        activities: Sequence[Activity],
        t: int,
        day: int | None = None,
    ) -> None:
        """Add engine trips for ``activities`` of ``day`` (default: ``t``'s) from where the agent will be."""
        day = t // MINUTES_PER_DAY + 1 if day is None else day
        day_start = (day - 1) * MINUTES_PER_DAY
        place = agent.end_place()
        previous_departure = float(t)
        work_seen = any(
            r.day == day
            and r.destination == agent.persona.work_facility
            and not r.cancelled
            and not math.isnan(r.departure)
            for r in agent.trips
        )
        for activity in activities:
            if activity.facility == place:
                continue
            minute = activity.departure_minute
            depart = (
                float(day_start + minute) if minute is not None else previous_departure
            )
            depart = max(depart, float(t))
            planned_arrival = None
            persona = agent.persona
            if (
                activity.facility == persona.work_facility
                and not work_seen
                and persona.work_start is not None
            ):
                planned_arrival = float(day_start + persona.work_start)
                work_seen = True
            trip_id = f"{agent.name}|d{day}|{len(agent.trips)}"
            try:
                self.engine.add_trip(
                    trip_id, place, activity.facility, depart, mode=activity.mode,
                    path=activity.path if isinstance(activity.path, list) else "shortest",
                    agent=agent.name, planned_arrival=planned_arrival,
                )  # fmt: skip
            except (PathError, ValueError) as error:
                # a plan the validator let through must not stop the run: skip the activity
                logger.warning(
                    "%s: activity at %s skipped: %s",
                    agent.name,
                    activity.facility,
                    error,
                )
                self.plan_errors["unschedulable"] += 1
                continue
            record = TripRecord(
                trip_id,
                day,
                activity,
                place,
                activity.facility,
                depart,
                planned_arrival,
            )
            agent.trips.append(record)
            self._trip_records[trip_id] = record
            if minute is not None and self.decision_lead_minutes:
                # the revision is asked ahead; the traveller is mirrored from its departure
                self._push(depart, agent.name, "mirror", trip_id)
                self._push(
                    depart - self.decision_lead_minutes,
                    agent.name,
                    "departure",
                    trip_id,
                )
            else:
                self._push(
                    depart,
                    agent.name,
                    "departure" if minute is not None else "sync",
                    trip_id,
                )
            previous_departure = depart
            place = activity.facility

    def _withdraw(self, agent: TravellerAgent) -> None:
        pending = agent.pending_trips()
        if pending:
            self.engine.cancel_trip(pending[0].trip_id)
            for record in pending:
                record.cancelled = True

    def _schedule_check(
        self, agent: TravellerAgent, t: int, *, arrived: bool = False
    ) -> None:
        if arrived:
            agent.check_version += 1
        done = [r for r in agent.trips if not r.cancelled and not math.isnan(r.arrival)]
        every = done[-1].activity.reflect_every if done else 60
        if agent.place == agent.persona.work_facility:
            every = max(every, WORK_REFLECT_MINUTES)
        self._push(
            t + every, agent.name, "check", f"{agent.place}#{agent.check_version}"
        )

    # ------------------------------------------------------------------ mirroring
    def _reconsidered(self, trip: Trip) -> set[str]:
        """The reconsideration keys of ``trip``'s traveller today."""
        return self.travellers[str(trip.agent)].today.reconsidered

    def _mirror(self, t: int) -> None:
        """Copy the engine's view into the travellers it touched this minute or who joined.

        The others under way are where they were: the engine moves nobody without touching
        them (:mod:`.step_changes`).
        """
        names = {str(agent) for agent in self.engine.changes.take_touched()}
        names |= self.__dict__.setdefault("_joined", set())
        self._joined = set()
        for name in sorted(names & self.active):
            agent = self.travellers[name]
            for pending in agent.pending_trips()[:2]:  # departures happen in order
                departure = self.engine.trip(pending.trip_id).departure
                if math.isnan(departure):
                    break
                pending.departure = departure
            record = agent.current_trip()
            location = self.engine.location(name)
            before = (agent.state, agent.place)
            agent.mirror(location, self.space)
            if (agent.state, agent.place) != before:
                self.moves.append((t, name, agent.state, agent.place))
            if record is None and agent.state == "staying":
                self.active.discard(name)
                self._schedule_check(agent, t, arrived=True)
        self.in_progress = self.engine.trips_under_way

    # ------------------------------------------------------------------ engine hooks
    def _on_trip_complete(
        self, engine: TrafficEngine, trip: Trip, node: str, when: float
    ) -> None:
        record = self._trip_records.get(trip.trip_id)
        if record is None:
            return
        record.departure, record.arrival, record.delay = (
            trip.departure,
            trip.arrival,
            trip.delay,
        )
        self.arrived += 1
        self.delay_sum += max(0.0, trip.delay)
        agent = self.travellers[str(trip.agent)]
        agent.pending_reroute = None
        experience = experience_of(record)
        late = experience.late or 0
        importance = formula_importance(experience)
        target = (
            None
            if record.planned_arrival is None
            else int(record.planned_arrival) % MINUTES_PER_DAY
        )
        record.memory_id = agent.memory.remember(
            trip_memory_text(experience, target),
            node_type="event",
            importance=importance,
            now=when,
            keywords=["trip", record.origin, record.destination, record.activity.mode,
                      "late" if late else "on time"],
            spatial_scope=[record.origin, record.destination, *trip.path],
            temporal_scope=(trip.departure, trip.arrival),
        ).id  # fmt: skip
        # checkpoints pickled before this list existed have none
        self.__dict__.setdefault("_remembered", []).append((agent.name, record))

    def take_remembered(self) -> list[tuple[str, TripRecord]]:
        """The ``(traveller, trip)`` memories written since the last call (arrivals), in order."""
        remembered = self.__dict__.get("_remembered", [])
        self._remembered: list[tuple[str, TripRecord]] = []
        return remembered

    def _on_node_arrival(
        self, engine: TrafficEngine, trip: Trip, node: str, when: float
    ) -> None:
        agent = self.travellers.get(str(trip.agent))
        if agent is None or self._interrupt(agent, trip, node):
            return
        if agent.pending_reroute is None:
            return
        at, links = agent.pending_reroute
        if at != node:
            return
        agent.pending_reroute = None
        try:
            engine.reroute(trip, links)
        except (PathError, ValueError) as error:
            logger.warning("%s: reroute at %s refused: %s", agent.name, node, error)

    def _interrupt(self, agent: TravellerAgent, trip: Trip, node: str) -> bool:
        """GATSim's ``InterruptCurrentTravel`` (Algorithm 1, step 2), checked at each node.

        En route to activity k when the departure minute of activity k + 1 (an explicit
        departure time) has come: give up activity k and head for k + 1's facility from here.
        The current trip takes over k + 1's destination, activity and target arrival; the trip
        k -> k + 1 is dropped, and the later activities are scheduled again from k + 1's
        facility (the engine cancels the trips that started at k's). A state update, not a
        decision: no brain is asked.

        Returns:
            Whether the trip was redirected.
        """
        record = self._trip_records.get(trip.trip_id)
        pending = agent.pending_trips()
        if record is None or not pending:
            return False
        following = pending[0]
        due = following.planned_departure
        if following.activity.departure_minute is None or self.engine.now + 1e-9 < due:
            return False
        try:
            self.engine.redirect(
                trip, following.destination, planned_arrival=following.planned_arrival
            )
        except (PathError, ValueError) as error:
            logger.warning(
                "%s: interruption at %s refused: %s", agent.name, node, error
            )
            return False
        for cancelled in pending:
            cancelled.cancelled = True
        reason = (
            f"activity at {following.destination} due at "
            f"{format_hhmm(int(due) % MINUTES_PER_DAY)} while still travelling to "
            f"{record.destination}"
        )
        given_up = record.activity
        record.destination = following.destination
        record.activity = following.activity
        record.planned_arrival = following.planned_arrival
        agent.pending_reroute = None  # chosen for the old destination
        agent.activities = [a for a in agent.activities if a is not given_up]
        t = self.minute
        self._schedule(agent, [r.activity for r in pending[1:]], t, following.day)
        self._record_revision(agent, t, "en_route", node, "interrupt", reason)
        return True
