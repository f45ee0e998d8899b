"""What an urban traveller knows when it decides: decision contexts from a read-only world view.

:class:`WorldView` is the part of the model a traveller may look at (the engine's queries, the
free-flow table, the other travellers' states, its own memory); its methods build the contexts
of the four decision kinds and change nothing. Travellers state their own requests from it
(:meth:`~mesa_llm_mobility.urban.agents.TravellerAgent.plan_request` and its siblings); the model
only gathers them.

Both brains get the same facts (announcements and the events near the traveller, congestion,
their contacts' states, paths for the next trip), except the recalled reflections, chats and
plans, which need the vector store: only LLM travellers recall those, which keeps rule runs
free of Chroma. Rule travellers recall their route lessons by keyword, which is what their
learning policies read (:mod:`~mesa_llm_mobility.urban.decisions.learning`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY
from mesa_llm_mobility.urban.decisions import (
    MAX_CHAT_TURNS,
    SCHOOL,
    ChatContext,
    ChatTurnContext,
    PersonaFacts,
    PlanningContext,
    ReflectionContext,
    RevisionContext,
    RouteOption,
    Situation,
    SpeakerFacts,
    TravelQueryContext,
    TripExperience,
    parse_trip_memory,
    school_runs,
)
from mesa_llm_mobility.urban.perception import (
    NODE_REVISION_WAIT,
    Surroundings,
    en_route_trigger,
    reconsider_key,
)
from mesa_llm_mobility.urban.plans import PlanFacts, pending_runs
from mesa_llm_mobility.urban.routing import (
    DirectedLink,
    PathError,
    alternative_path,
    validate_path,
)
from mesa_llm_mobility.urban.scenario import Scenario
from mesa_llm_mobility.urban.traffic import TrafficEngine, transit_journey
from mesa_llm_mobility.urban.trips import TravelState

__all__ = [
    "ALTERNATIVE_SLACK",
    "NODE_REVISION_WAIT",
    "RECALL_DAYS",
    "RECALL_K",
    "FacilityPair",
    "WorldView",
    "reconsider_key",
]

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.agents import TravellerAgent, TripRecord
    from mesa_llm_mobility.urban.conversations import Conversation
    from mesa_llm_mobility.urban.scenario import Event

ALTERNATIVE_SLACK = 1.5
"""Revisions offer a further path only when expected at most this much slower."""
RECALL_DAYS = 3
"""Past days the spatiotemporal recall looks at."""
RECALL_K = 3
"""Memories per spatiotemporal query."""

FacilityPair = tuple[str, str, str]
"""``(origin facility, destination facility, mode)``."""


@dataclass(eq=False)
class WorldView:
    """The world as travellers see it when they decide (queries only).

    Attributes:
        engine: The traffic engine (asked for trips, waits, congestion and events).
        town: The scenario (walking factor, metro lines).
        start_date: Date of day 1.
        facilities: The facility names.
        travel_times: Free-flow minutes by facility pair and mode.
        routes: Free-flow shortest paths by facility pair and mode.
        travellers: Every traveller by name (for contacts and their states).
        uses_llm: Whether an LLM answers (contexts then carry recalled text memories).
        trips_scored_on_arrival: Whether trip memories are scored on arrival (the reflection
            then does not score them again).
    """

    engine: TrafficEngine
    town: Scenario
    start_date: dt.date
    facilities: frozenset[str]
    travel_times: Mapping[FacilityPair, float]
    routes: Mapping[FacilityPair, tuple[DirectedLink, ...]]
    travellers: Mapping[str, TravellerAgent]
    uses_llm: bool = False
    trips_scored_on_arrival: bool = False
    _congestion: tuple[int, list[str]] | None = field(default=None, repr=False)
    _surroundings: Surroundings | None = field(default=None, repr=False)

    @property
    def surroundings(self) -> Surroundings:
        """Nearby places on the network (built on first use)."""
        if self._surroundings is None:
            self._surroundings = Surroundings(self.engine.index)
        return self._surroundings

    # ------------------------------------------------------------------ contexts
    def planning_context(self, agent: TravellerAgent, t: int) -> PlanningContext:
        """What ``agent`` knows when it plans its day at minute ``t`` (absolute)."""
        day, now = t // MINUTES_PER_DAY + 1, t % MINUTES_PER_DAY
        date = self.start_date + dt.timedelta(days=day - 1)
        return PlanningContext(
            persona=agent.persona,
            day=day,
            date=date.isoformat(),
            weekday=date.strftime("%A"),
            workday=agent.today.workday,
            facts=self.plan_facts(agent, now, agent.end_place()),
            travel_times=self.travel_times,
            routes=self.routes,
            experiences=self.recall_trips(agent, t),
            school_duty=agent.today.school_duty,
            memories=self.plan_recall(agent, t),
            long_term_reflection=agent.long_term_reflection,
            chats=list(agent.today.chats),
            events=self.events(t, agent.end_place()),
        )

    def chat_context(
        self,
        agent: TravellerAgent,
        contacts: Mapping[str, str],
        t: int,
        *,
        medium: str = "by phone",
        morning: bool = True,
    ) -> ChatContext:
        """What ``agent`` knows when it opens a chat with one of ``contacts``."""
        return ChatContext(
            persona=agent.persona,
            day=t // MINUTES_PER_DAY + 1,
            now=t % MINUTES_PER_DAY,
            contacts=dict(contacts),
            used_topics={n: list(agent.used_topics.get(n, [])) for n in contacts},
            experiences=self.recall_trips(agent, t),
            memories=self.recall_text(agent, t, "family friends plans"),
            speakers={
                n: self.speaker_facts(self.travellers[n], t)
                for n in (agent.name, *contacts)
            },
            vehicles=agent.persona.vehicles,
            facilities=self.facilities,
            medium=medium,  # type: ignore[arg-type]
            morning=morning,
        )

    def chat_turn_context(
        self, agent: TravellerAgent, conversation: Conversation, t: int
    ) -> ChatTurnContext:
        """What ``agent`` knows when it answers in ``conversation`` (its own memories and plan)."""
        partner = (
            conversation.partner
            if agent.name == conversation.initiator
            else conversation.initiator
        )
        on_table = conversation.proposal if conversation.proposer == partner else None
        return ChatTurnContext(
            persona=agent.persona,
            partner=partner,
            relation=conversation.relation,
            topic=conversation.topic,
            day=t // MINUTES_PER_DAY + 1,
            now=t % MINUTES_PER_DAY,
            turn=len(conversation.lines),
            max_turns=MAX_CHAT_TURNS,
            transcript=conversation.transcript(),
            proposal=on_table,
            speakers={
                n: self.speaker_facts(self.travellers[n], t)
                for n in (agent.name, partner)
            },
            vehicles=agent.persona.vehicles,
            facilities=self.facilities,
            medium=conversation.medium,
            morning=conversation.morning,
            experiences=self.recall_trips(agent, t),
            memories=self.recall_text(agent, t, f"{partner} {conversation.topic}"),
        )

    def travel_query_context(
        self, agent: TravellerAgent, before: PlanningContext | RevisionContext, t: int
    ) -> TravelQueryContext:
        """What ``agent`` knows when choosing what to look up before ``before``'s decision."""
        if isinstance(before, PlanningContext):
            place, decision = before.facts.start_place, "plan your day"
        else:
            place = before.place
            decision = (
                f"reconsider your trip to {before.destination} ({before.trigger})"
            )
        town = self.town
        return TravelQueryContext(
            persona=agent.persona,
            now=t % MINUTES_PER_DAY,
            place=place,
            decision=decision,
            facilities=self.facilities,
            nodes=frozenset(town.nodes),
            links=frozenset(self.engine.index.by_name),
            stops={name: tuple(line.stops) for name, line in town.metro_lines.items()},
        )

    def speaker_facts(self, agent: TravellerAgent, t: int = 0) -> SpeakerFacts:
        """What a conversation can change about ``agent``'s day at minute ``t`` (absolute)."""
        persona, today = agent.persona, agent.today
        works = (
            today.workday
            and persona.work_facility is not None
            and persona.work_facility != SCHOOL
        )
        departed = [
            r
            for r in agent.trips
            if r.day == today.day and not r.cancelled and not math.isnan(r.departure)
        ]
        late = [
            math.ceil(r.arrival - r.planned_arrival)
            for r in departed
            if r.planned_arrival is not None and not math.isnan(r.arrival)
        ]
        facts = self.plan_facts(agent, t % MINUTES_PER_DAY, agent.end_place())
        return SpeakerFacts(
            name=agent.name,
            household=persona.household or persona.name,
            licensed=persona.licensed,
            has_car=today.vehicle_available,
            parent=bool(persona.children),
            works=works,
            school_duty=today.school_duty,
            plan=tuple(
                f"{a.facility} {a.departure_time or 'on arrival'}"
                for a in agent.activities
            )
            if agent.plan is not None and agent.today.mode is not None
            else (),
            work_start=persona.work_start if works else None,
            work_end=persona.work_end if works else None,
            car_saving=self.car_saving(persona) if works else 0.0,
            late=max(0, *late) if late else 0,
            departed=bool(departed),
            drove=any(r.activity.mode == "drive" for r in departed),
            open_runs=tuple(duty.kind for duty in pending_runs(facts)),
            day_over=agent.plan is not None and not agent.pending_trips(),
        )

    def car_saving(self, persona: PersonaFacts) -> float:
        """Free-flow minutes the car saves on ``persona``'s commute against the best other mode."""
        if persona.work_facility is None:
            return 0.0
        key = (persona.home, persona.work_facility)
        drive = self.travel_times.get((*key, "drive"))
        others = [
            self.travel_times[(*key, mode)]
            for mode in ("transit", "walk")
            if (*key, mode) in self.travel_times
        ]
        if drive is None or not others:
            return 0.0
        return max(0.0, min(others) - drive)

    def reflection_context(self, agent: TravellerAgent, day: int) -> ReflectionContext:
        """What ``agent`` reflects on at the end of ``day``: its trips, plan and chats."""
        return ReflectionContext(
            score_trips=not self.trips_scored_on_arrival,
            persona=agent.persona,
            day=day,
            trips=agent.experiences_today(day),
            plan=[
                f"{a.facility} leave {a.departure_time or 'on arrival'} by {a.mode}: {a.description}"
                for a in agent.activities
            ],
            chats=list(agent.today.chats),
            long_term_reflection=agent.long_term_reflection,
        )

    def revision_context(
        self, agent: TravellerAgent, situation: Situation, t: int
    ) -> RevisionContext:
        """What a staying ``agent`` knows when it reconsiders the rest of its day."""
        now = t % MINUTES_PER_DAY
        pending = agent.pending_trips()
        facts = self.plan_facts(agent, now, agent.end_place())
        target = next((r for r in pending if r.planned_arrival is not None), None)
        context = RevisionContext(
            persona=agent.persona,
            situation=situation,
            social=self.social(agent),
            day=t // MINUTES_PER_DAY + 1,
            place=agent.place,
            facts=facts,
            future=[r.activity for r in pending],
            current=agent.current_activity(),
            target_arrival=None
            if target is None
            else int(target.planned_arrival) % MINUTES_PER_DAY,
            target_place=None if target is None else target.destination,
            congestion=self.congestion_lines(t),
            events=self.events(t, agent.place),
            memories=self.recall_place_time(
                agent,
                t,
                [agent.place, *(r.destination for r in pending[:1])],
                [(now - 30, now + 90)],
            )
            + self.recall_text(agent, t, f"{agent.place} plan change"),
        )
        self._next_trip_paths(context, pending[0], t)
        return context

    def node_revision_context(
        self, agent: TravellerAgent, t: int
    ) -> RevisionContext | None:
        """What a traveller knows reaching a node, if something ahead makes it reconsider.

        ``None`` unless ``agent`` is on a link it leaves next minute with links left and
        :func:`~.perception.en_route_trigger` gives a reason: a driver with waits ahead of at
        least :data:`~.perception.NODE_REVISION_WAIT` minutes (at every such node), a transit
        rider about to queue at a stop with full trains, a walker or rider with an announced
        event on the links ahead (once per trip and reason for these two).
        """
        record = agent.current_trip()
        if record is None or agent.pending_reroute is not None:
            return None
        engine, mode = self.engine, record.activity.mode
        trip = engine.trip(record.trip_id)
        if agent.state == "driving" and mode == "drive":
            approach = engine.approaching_node(record.trip_id, t)
        elif agent.state == "walking":
            approach = trip.approaching_node(TravelState.WALKING, t)
        elif (
            agent.state == "waiting_at_node"
            and mode == "transit"
            and trip.link is not None
            and trip.link.kind == "metro"
        ):
            approach = (trip.link.tail, (trip.link, *trip.remaining))
        else:
            approach = None
        if approach is None:
            return None
        node, ahead = approach
        trigger = en_route_trigger(engine, self.surroundings, mode, ahead, t)
        if trigger is None or (
            mode != "drive"
            and reconsider_key(record.trip_id, trigger) in agent.today.reconsidered
        ):
            return None
        if agent.state == "waiting_at_node":  # queued for a train: the path stays
            return self._en_route_context(
                agent, record, "at_stop", node, ahead, mode, trigger, t
            )
        destination = engine.trip(record.trip_id).destination_node
        try:
            alternative = engine.router.path(node, destination, mode)
        except PathError:
            return None
        remaining = [link.name for link in ahead]
        fastest = self.minutes_now(alternative, mode, t)
        other_paths = []
        if mode == "drive":  # a third path, when not much slower
            other = alternative_path(
                engine.index, node, destination, "drive",
                list(ahead) + alternative, engine.router.extra_costs,
            )  # fmt: skip
            names = None if other is None else [link.name for link in other]
            if other is not None and names not in (
                remaining,
                [link.name for link in alternative],
            ):
                minutes = self.minutes_now(other, "drive", t)
                if minutes <= ALTERNATIVE_SLACK * fastest:
                    other_paths.append(RouteOption(tuple(names), minutes))
        return self._en_route_context(
            agent, record, "at_node", node, ahead, mode, trigger, t,
            alternative_path=[link.name for link in alternative],
            alternative_minutes=fastest, other_paths=other_paths,
        )  # fmt: skip

    def _en_route_context(
        self,
        agent: TravellerAgent,
        record: TripRecord,
        situation: Situation,
        place: str,
        ahead: Sequence[DirectedLink],
        mode: str,
        trigger: str,
        t: int,
        **paths: Any,
    ) -> RevisionContext:
        """What a traveller knows reconsidering en route at ``place`` (``at_node``, ``at_stop``).

        ``paths``: the further paths offered (``alternative_path``, ``alternative_minutes``,
        ``other_paths``); none at a stop, where the trip's path stays.
        """
        now = t % MINUTES_PER_DAY
        target = record if record.planned_arrival is not None else None
        target = target or next(
            (r for r in agent.pending_trips() if r.planned_arrival is not None), None
        )
        remaining = [link.name for link in ahead]
        recalled = self.recall_place_time(
            agent, t, [place, *remaining], [(now - 30, now + 60)]
        ) + self.recall_text(agent, t, f"congestion {place} route")
        return RevisionContext(
            persona=agent.persona,
            situation=situation,
            day=t // MINUTES_PER_DAY + 1,
            social=self.social(agent),
            place=place,
            facts=self.plan_facts(agent, now, record.destination),
            future=[r.activity for r in agent.pending_trips()],
            destination=record.destination,
            remaining_path=remaining,
            remaining_minutes=self.minutes_now(ahead, mode, t),
            current=record.activity,
            target_arrival=None
            if target is None
            else int(target.planned_arrival) % MINUTES_PER_DAY,
            target_place=None if target is None else target.destination,
            congestion=self.congestion_lines(t),
            events=self.events(t, place),
            memories=list(dict.fromkeys(recalled)),
            trigger=trigger,
            trip_id=record.trip_id,
            **paths,
        )

    # ------------------------------------------------------------------ pieces of contexts
    def contacts(self, agent: TravellerAgent) -> dict[str, str]:
        """``agent``'s family members and friends among the travellers, by relation."""
        contacts = {n: "family" for n in agent.persona.family if n in self.travellers}
        contacts.update(
            {
                n: "friend"
                for n in agent.persona.friends
                if n in self.travellers and n not in contacts
            }
        )
        return contacts

    @staticmethod
    def recall_trips(agent: TravellerAgent, t: int) -> list[TripExperience]:
        """The trips ``agent`` remembers (home and work first), oldest first."""
        persona = agent.persona
        keywords = ["trip", persona.home, persona.work_facility or ""]
        hits = agent.memory.retrieve(
            t, keywords=[k for k in keywords if k], k=20, node_types=["event"]
        )
        found = [parse_trip_memory(hit.node.content) for hit in hits]
        return sorted(
            (f for f in found if f is not None), key=lambda e: (e.day, e.departure)
        )

    def recall_place_time(
        self,
        agent: TravellerAgent,
        t: int,
        places: Sequence[str],
        windows: Sequence[tuple[int, int]],
    ) -> list[str]:
        """Memories about ``places`` at these times of day (LLM travellers): the spatiotemporal mode.

        Memories' temporal scopes are absolute minutes, so each window (minutes of the day) is
        asked for today and each of the :data:`RECALL_DAYS` days before; the best
        :data:`RECALL_K` per query that match in place and time are merged, best first.
        """
        if not self.uses_llm or not places or not windows:
            return []
        day = t // MINUTES_PER_DAY
        found: dict[str, tuple[float, str]] = {}
        for past in range(max(0, day - RECALL_DAYS), day + 1):
            for start, end in windows:
                interval = (
                    past * MINUTES_PER_DAY + start,
                    past * MINUTES_PER_DAY + end,
                )
                for hit in agent.memory.retrieve(
                    t, spatial_scope=places, temporal_scope=interval, k=RECALL_K,
                    node_types=["event", "chat", "reflection"],
                ):  # fmt: skip
                    best = found.get(hit.node.id, (-1.0, ""))[0]
                    if hit.matches.get("spatiotemporal", 0.0) > 0 and hit.score > best:
                        found[hit.node.id] = (hit.score, hit.node.content)
        ranked = sorted(found.values(), key=lambda pair: -pair[0])
        return [content for _, content in ranked][: 2 * RECALL_K]

    def plan_recall(self, agent: TravellerAgent, t: int) -> list[str]:
        """What ``agent`` recalls when planning: by place and time of its day, then by text."""
        persona, today = agent.persona, agent.today
        places = [persona.home]
        windows: list[tuple[int, int]] = []
        if today.workday and persona.work_facility and persona.work_start is not None:
            places.append(persona.work_facility)
            windows.append((persona.work_start - 90, persona.work_start + 30))
            if persona.work_end is not None:
                windows.append((persona.work_end - 30, persona.work_end + 90))
        else:
            windows.append((8 * 60, 20 * 60))
        if today.school_duty:
            places.append(SCHOOL)
        for appointment in today.appointments:
            places.append(appointment.facility)
            windows.append((appointment.minute - 60, appointment.minute + 60))
        recalled = self.recall_place_time(agent, t, places, windows)
        return recalled + [
            m
            for m in self.recall_text(agent, t, "plan today travel lessons")
            if m not in recalled
        ]

    def recall_text(self, agent: TravellerAgent, t: int, text: str) -> list[str]:
        """Reflections, chats and plans ``agent`` recalls about ``text``.

        Rule travellers recall their route lessons by keyword (no vector query, so a rule run
        still makes no Chroma collection).
        """
        if not self.uses_llm:
            hits = agent.memory.retrieve(
                t, keywords=["queues", "route"], k=10, node_types=["reflection"]
            )
            return [hit.node.content for hit in hits]
        hits = agent.memory.retrieve(
            t, text=text, k=6, node_types=["reflection", "chat", "plan"]
        )
        return [hit.node.content for hit in hits]

    def plan_facts(
        self, agent: TravellerAgent, now: int, start_place: str
    ) -> PlanFacts:
        """The facts a plan of ``agent`` is validated against, starting at ``start_place``."""
        today, persona = agent.today, agent.persona
        visited = tuple(
            r.destination
            for r in agent.trips
            if r.day == today.day and not r.cancelled and not math.isnan(r.departure)
        )
        return PlanFacts(
            home=persona.home,
            start_place=start_place,
            now=now,
            licensed=persona.licensed,
            vehicle_available=today.vehicle_available,
            vehicles=persona.vehicles,
            household_drivers=today.household_drivers,
            day_mode=today.mode,
            facilities=self.facilities,
            index=self.engine.index,
            duties=school_runs(persona, today.school_duty, SCHOOL, self.facilities),
            visited=visited,
            appointments=tuple(today.appointments),
        )

    def perceived_events(self, t: int, place: str | None = None) -> list[Event]:
        """The broadcast announcements known at ``t``, and the events near ``place`` (if given)."""
        broadcast = [
            e for e in self.engine.announced_events(t, broadcast_only=True) if e.content
        ]
        if place is None:
            return broadcast
        return broadcast + self.surroundings.events_near(self.engine, place, t)

    def events(self, t: int, place: str | None = None) -> list[str]:
        """The texts of :meth:`perceived_events`."""
        return [e.content for e in self.perceived_events(t, place)]

    def congestion_lines(self, t: int) -> list[str]:
        """One line per congested place at ``t`` (computed once a minute)."""
        if self._congestion is None or self._congestion[0] != t:
            frame = self.engine.congestion()
            lines = [
                f"{row.place}{'' if row.direction is None or pd.isna(row.direction) else f' dir {int(row.direction)}'}: "
                f"{row.label}, ~{row.wait_minutes:.0f} min wait"
                for row in frame.itertuples()
            ]
            self._congestion = (t, lines)
        return self._congestion[1]

    def social(self, agent: TravellerAgent) -> list[str]:
        """Family members' and friends' states."""
        return [
            f"{name} ({relation}): {self.travellers[name].state} at {self.travellers[name].place}"
            for name, relation in self.contacts(agent).items()
        ]

    def minutes_now(
        self, links: Sequence[DirectedLink], mode: str, depart: float
    ) -> float:
        """Expected minutes along ``links`` leaving at ``depart`` (absolute), on current waits.

        Driving: free times plus the links' wait indicators; walking: the walking factor times
        the free times; transit: the timetable journey (waits for trains included) plus the
        crowding indicators of its metro links.
        """
        engine = self.engine
        if mode == "drive":
            return sum(link.free_time + engine.link_wait(link) for link in links)
        if mode == "walk":
            return self.town.walking_factor * sum(link.free_time for link in links)
        arrival, _ = transit_journey(engine.index, links, depart)
        crowding = sum(engine.link_wait(link) for link in links if link.kind == "metro")
        return arrival - depart + crowding

    def _next_trip_paths(
        self, context: RevisionContext, pending: TripRecord, t: int
    ) -> None:
        """Fill a staying revision's paths for the next trip: the planned one, and another.

        The planned path is the activity's explicit path, else the fastest now; the other one
        shares as few links with it as the network allows (for driving).
        """
        activity, origin = pending.activity, context.facts.start_place
        mode = context.facts.day_mode or activity.mode
        if activity.facility == origin:
            return
        engine = self.engine
        depart = max(float(t), pending.planned_departure)
        try:
            planned = (
                validate_path(
                    engine.index, origin, activity.facility, activity.path, mode
                )
                if isinstance(activity.path, list)
                else engine.router.path(origin, activity.facility, mode)
            )
        except PathError:
            return
        context.remaining_path = [link.name for link in planned]
        context.remaining_minutes = self.minutes_now(planned, mode, depart)
        if mode == "walk":
            return
        other = alternative_path(
            engine.index, origin, activity.facility, mode, planned,
            engine.router.extra_costs,
        )  # fmt: skip
        minutes = None if other is None else self.minutes_now(other, mode, depart)
        if (
            minutes is not None
            and minutes <= ALTERNATIVE_SLACK * context.remaining_minutes
        ):
            context.alternative_path = [link.name for link in other]
            context.alternative_minutes = minutes
