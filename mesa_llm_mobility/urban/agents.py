"""Travellers of the urban model: persona, memory, today's plan and a state mirrored from traffic.

A :class:`TravellerAgent` never moves itself: the traffic engine moves it along the trips its plan
produced, and the model mirrors the engine's view into the agent (``state`` and ``cell``) after
each network step, only for agents that are travelling or due to leave. The agent keeps plain
data (plan, revisions, trip log, long-term reflection) so a model can be checkpointed at a day
boundary.

A traveller states its own decision requests (:meth:`TravellerAgent.plan_request` and its
siblings), in one hop: each context is built from its own state (persona, memory through
:mod:`.recall`, trips, plan, today) and the world facts it asks the read-only
:class:`~.contexts.WorldView` for. :meth:`TravellerAgent.node_revision_context` is the en-route
rule: who reconsiders at the node ahead, what it is shown, and where a new path is taken.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mesa.discrete_space import CellAgent

from mesa_llm_mobility.cognition.kinds import DecisionRequest
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, parse_hhmm
from mesa_llm_mobility.urban.decisions import (
    CHAT,
    CHAT_TURN,
    DAILY_PLAN,
    DAILY_REFLECTION,
    MAX_CHAT_TURNS,
    PLAN_REVISION,
    SCHOOL,
    TRAVEL_QUERY,
    TRIP_IMPORTANCE,
    ChatContext,
    ChatOutput,
    ChatTurnContext,
    ChatTurnOutput,
    PersonaFacts,
    PlanningContext,
    PlanRevisionOutput,
    ReflectionContext,
    ReflectionOutput,
    RevisionContext,
    Situation,
    SpeakerFacts,
    TravelQueryContext,
    TravelQueryOutput,
    TripExperience,
    TripImportanceContext,
    TripImportanceOutput,
    school_runs,
)
from mesa_llm_mobility.urban.perception import event_key, reconsider_key
from mesa_llm_mobility.urban.plans import (
    Activity,
    Appointment,
    DailyPlan,
    PlanFacts,
    pending_runs,
)
from mesa_llm_mobility.urban.recall import (
    recall_around,
    recall_for_plan,
    recall_text,
    recall_trips,
)
from mesa_llm_mobility.urban.traffic import Location, TravelState

if TYPE_CHECKING:
    from mesa import Model
    from mesa.discrete_space import Cell, Network

    from mesa_llm_mobility.memory import MemoryStore, MemoryStream
    from mesa_llm_mobility.urban.contexts import PathOffer, WorldView
    from mesa_llm_mobility.urban.conversations import Conversation
    from mesa_llm_mobility.urban.scenario import Event

STATE_OF: dict[TravelState, str] = {
    TravelState.STAYING: "staying",
    TravelState.FACILITY_QUEUE: "waiting_at_door",
    TravelState.WAITING: "waiting_at_node",
    TravelState.TRAVERSING: "driving",
    TravelState.QUEUED: "driving",
    TravelState.RIDING: "riding",
    TravelState.WALKING: "walking",
    TravelState.SCHEDULED: "at_node",
    TravelState.ARRIVED: "at_node",
    TravelState.AT_NODE: "at_node",
}
"""Traveller state shown by the model, from the engine's :class:`TravelState`."""


def traveller_state(location: Location) -> str:
    """Map an engine location to the agent's state."""
    return STATE_OF.get(location.state, str(location.state))


@dataclass
class TripRecord:
    """One engine trip of the agent and the activity it serves."""

    trip_id: str
    day: int
    activity: Activity
    origin: str
    destination: str
    planned_departure: float
    planned_arrival: float | None = None
    departure: float = math.nan
    arrival: float = math.nan
    delay: float = math.nan
    cancelled: bool = False
    memory_id: str = ""


@dataclass
class PlanRevisionRecord:
    """A revision of today's plan: when, in which situation, what was decided and why."""

    minute: float
    situation: str
    place: str
    action: str
    reason: str
    agent: str = ""


@dataclass
class DayState:
    """What the model assigns each traveller at the start of a day."""

    day: int = 0
    workday: bool = False
    vehicle_available: bool = False
    school_duty: str | None = None
    household_drivers: tuple[str, ...] = ()
    mode: str | None = None
    chats: list[str] = field(default_factory=list)
    appointments: list[Appointment] = field(default_factory=list)
    daytime_chats: int = 0
    reconsidered: set[str] = field(default_factory=set)
    perceived: set[str] = field(default_factory=set)


class TravellerAgent(CellAgent):
    """A generative traveller (GATSim): persona, memory, plan, and its mirrored travel state.

    Attributes:
        persona: The profile.
        memory: The agent's memory stream (keyed by ``unique_id``).
        plan: Today's plan as decided at day start (``None`` before).
        activities: Today's activities as currently planned (revisions replace the future ones).
        revisions: Today's revisions.
        trips: Every trip of the run, in order.
        state: ``"staying"``, ``"waiting_at_door"``, ``"waiting_at_node"``, ``"driving"``,
            ``"riding"``, ``"walking"`` or ``"at_node"``.
        place: Facility, node or link the agent is at (the cell key).
        long_term_reflection: Rolling summary across days.
        used_topics: Chat topics already discussed, by partner name.
        today: What the model assigned for today (vehicle, school duty, mode).
        pending_reroute: ``(node, links)`` decided while approaching ``node``, applied on arrival.
    """

    def __init__(
        self, model: Model, persona: PersonaFacts, store: MemoryStore, cell: Cell
    ) -> None:
        super().__init__(model)
        self.persona = persona
        self.memory: MemoryStream = store.stream(self.unique_id)
        self.cell = cell
        self.plan: DailyPlan | None = None
        self.activities: list[Activity] = []
        self.revisions: list[PlanRevisionRecord] = []
        self.trips: list[TripRecord] = []
        self.state = "staying"
        self.place = persona.home
        self.long_term_reflection = ""
        self.used_topics: dict[str, list[str]] = {}
        self.today = DayState()
        self.pending_reroute: tuple[str, list[str]] | None = None
        self.check_version = 0

    def __getstate__(self) -> dict[str, Any]:
        """Everything but the memory stream, which the model reattaches from its store."""
        state = self.__dict__.copy()
        state["memory"] = None
        return state

    @property
    def name(self) -> str:
        """The persona's name (the engine's agent id)."""
        return self.persona.name

    def mirror(self, location: Location, space: Network) -> None:
        """Set ``state``, ``place`` and ``cell`` from the engine's location of the agent."""
        self.state = traveller_state(location)
        if location.place != self.place:
            self.place = location.place
            self.cell = space[location.place]

    def current_trip(self) -> TripRecord | None:
        """The trip under way (departed, not arrived), if any."""
        for record in reversed(self.trips):
            if record.cancelled:
                continue
            if not math.isnan(record.departure) and math.isnan(record.arrival):
                return record
            if not math.isnan(record.arrival):
                return None
        return None

    def pending_trips(self) -> list[TripRecord]:
        """Trips scheduled but not departed, in order."""
        return [r for r in self.trips if not r.cancelled and math.isnan(r.departure)]

    def end_place(self) -> str:
        """Where the agent will be once its departed trips are over (plans start there)."""
        for record in reversed(self.trips):
            if not record.cancelled and not math.isnan(record.departure):
                return record.destination
        return self.persona.home

    def current_activity(self) -> Activity | None:
        """The activity of the trip last departed today (``None`` before the first)."""
        for record in reversed(self.trips):
            if record.cancelled or math.isnan(record.departure):
                continue
            return record.activity if record.day == self.today.day else None
        return None

    def departed_today(self) -> list[TripRecord]:
        """Today's trips that have left (arrived or under way), in order."""
        return [
            r
            for r in self.trips
            if r.day == self.today.day
            and not r.cancelled
            and not math.isnan(r.departure)
        ]

    # ------------------------------------------------------------------ what it knows
    def contacts(self, view: WorldView) -> dict[str, str]:
        """Its family members and friends among the travellers, by relation."""
        travellers, persona = view.travellers, self.persona
        contacts = {n: "family" for n in persona.family if n in travellers}
        contacts.update(
            {
                n: "friend"
                for n in persona.friends
                if n in travellers and n not in contacts
            }
        )
        return contacts

    def plan_facts(self, view: WorldView, now: int, start_place: str) -> PlanFacts:
        """The facts its plans are validated against, starting at ``start_place``."""
        today, persona = self.today, self.persona
        return PlanFacts(
            home=persona.home,
            start_place=start_place,
            now=now,
            licensed=persona.licensed,
            vehicle_available=today.vehicle_available,
            vehicles=persona.vehicles,
            household_drivers=today.household_drivers,
            day_mode=today.mode,
            facilities=view.facilities,
            index=view.network,
            duties=school_runs(persona, today.school_duty, SCHOOL, view.facilities),
            visited=tuple(r.destination for r in self.departed_today()),
            appointments=tuple(today.appointments),
        )

    def speaker_facts(self, view: WorldView, t: int) -> SpeakerFacts:
        """What a conversation can change about its day at minute ``t`` (absolute).

        Both speakers of a conversation see these facts (:meth:`.WorldView.contact_facts`).
        """
        persona, today = self.persona, self.today
        works = (
            today.workday
            and persona.work_facility is not None
            and persona.work_facility != SCHOOL
        )
        departed = self.departed_today()
        late = [
            math.ceil(r.arrival - r.planned_arrival)
            for r in departed
            if r.planned_arrival is not None and not math.isnan(r.arrival)
        ]
        facts = self.plan_facts(view, t % MINUTES_PER_DAY, self.end_place())
        return SpeakerFacts(
            name=self.name,
            household=persona.household or persona.name,
            licensed=persona.licensed,
            has_car=today.vehicle_available,
            parent=bool(persona.children),
            works=works,
            school_duty=today.school_duty,
            plan=tuple(
                f"{a.facility} {a.departure_time or 'on arrival'}"
                for a in self.activities
            )
            if self.plan is not None and today.mode is not None
            else (),
            work_start=persona.work_start if works else None,
            work_end=persona.work_end if works else None,
            car_saving=view.car_saving(persona.home, persona.work_facility)
            if works
            else 0.0,
            late=max(0, *late) if late else 0,
            departed=bool(departed),
            drove=any(r.activity.mode == "drive" for r in departed),
            open_runs=tuple(duty.kind for duty in pending_runs(facts)),
            day_over=self.plan is not None and not self.pending_trips(),
        )

    def _speakers(
        self, view: WorldView, t: int, others: Iterable[str]
    ) -> dict[str, SpeakerFacts]:
        """Its own speaker facts and those ``others`` state, by name (itself first)."""
        return {
            self.name: self.speaker_facts(view, t),
            **{name: view.contact_facts(name, t) for name in others},
        }

    def _recall_trips(self, t: int) -> list[TripExperience]:
        """The trips it remembers (home and work first), oldest first."""
        persona = self.persona
        return recall_trips(self.memory, (persona.home, persona.work_facility or ""), t)

    def _day_places(self) -> tuple[list[str], list[tuple[int, int]]]:
        """The places of its day and the times of day it is there (what it plans around)."""
        persona, today = self.persona, self.today
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
        return places, windows

    # ------------------------------------------------------------------ requests
    def plan_request(
        self, view: WorldView, t: int
    ) -> DecisionRequest[PlanningContext, DailyPlan]:
        """Ask for today's plan (at minute ``t``, absolute)."""
        day, now = t // MINUTES_PER_DAY + 1, t % MINUTES_PER_DAY
        date, start = view.date(day), self.end_place()
        facts = self.plan_facts(view, now, start)
        context = PlanningContext(
            persona=self.persona,
            day=day,
            date=date.isoformat(),
            weekday=date.strftime("%A"),
            workday=self.today.workday,
            facts=facts,
            travel_times=view.travel_times,
            routes=view.routes,
            experiences=self._recall_trips(t),
            school_duty=self.today.school_duty,
            memories=recall_for_plan(
                self.memory, t, *self._day_places(), uses_llm=view.uses_llm
            ),
            long_term_reflection=self.long_term_reflection,
            chats=list(self.today.chats),
            events=view.events(t, start),
            offered_facilities=view.facilities_to_offer(
                (self.persona.home, self.persona.work_facility),
                (
                    start,
                    *(duty.school for duty in facts.duties),
                    *(meeting.facility for meeting in facts.appointments),
                ),
            ),
        )
        return DecisionRequest(DAILY_PLAN, self.name, context)

    def chat_request(
        self,
        view: WorldView,
        t: int,
        contacts: Mapping[str, str],
        *,
        medium: str = "by phone",
        morning: bool = True,
    ) -> DecisionRequest[ChatContext, ChatOutput]:
        """Ask for the opening of a chat with one of ``contacts``."""
        context = ChatContext(
            persona=self.persona,
            day=t // MINUTES_PER_DAY + 1,
            now=t % MINUTES_PER_DAY,
            contacts=dict(contacts),
            used_topics={n: list(self.used_topics.get(n, [])) for n in contacts},
            experiences=self._recall_trips(t),
            memories=recall_text(
                self.memory, t, "family friends plans", uses_llm=view.uses_llm
            ),
            speakers=self._speakers(view, t, contacts),
            vehicles=self.persona.vehicles,
            facilities=view.facilities,
            medium=medium,  # type: ignore[arg-type]
            morning=morning,
        )
        return DecisionRequest(CHAT, self.name, context)

    def chat_turn_request(
        self, view: WorldView, t: int, conversation: Conversation
    ) -> DecisionRequest[ChatTurnContext, ChatTurnOutput]:
        """Ask for this traveller's next turn in ``conversation``."""
        partner = (
            conversation.partner
            if self.name == conversation.initiator
            else conversation.initiator
        )
        on_table = conversation.proposal if conversation.proposer == partner else None
        context = ChatTurnContext(
            persona=self.persona,
            partner=partner,
            relation=conversation.relation,
            topic=conversation.topic,
            day=t // MINUTES_PER_DAY + 1,
            now=t % MINUTES_PER_DAY,
            turn=len(conversation.lines),
            max_turns=MAX_CHAT_TURNS,
            transcript=conversation.transcript(),
            proposal=on_table,
            speakers=self._speakers(view, t, [partner]),
            vehicles=self.persona.vehicles,
            facilities=view.facilities,
            medium=conversation.medium,
            morning=conversation.morning,
            experiences=self._recall_trips(t),
            memories=recall_text(
                self.memory,
                t,
                f"{partner} {conversation.topic}",
                uses_llm=view.uses_llm,
            ),
        )
        return DecisionRequest(CHAT_TURN, self.name, context)

    def reflection_request(
        self, view: WorldView, t: int
    ) -> DecisionRequest[ReflectionContext, ReflectionOutput]:
        """Ask for the day's reflection: its trips, plan and chats of the day."""
        day = t // MINUTES_PER_DAY + 1
        context = ReflectionContext(
            score_trips=not view.trips_scored_on_arrival,
            persona=self.persona,
            day=day,
            trips=self.experiences_today(day),
            plan=[
                f"{a.facility} leave {a.departure_time or 'on arrival'} by {a.mode}: {a.description}"
                for a in self.activities
            ],
            chats=list(self.today.chats),
            long_term_reflection=self.long_term_reflection,
        )
        return DecisionRequest(DAILY_REFLECTION, self.name, context)

    def revision_request(
        self, view: WorldView, t: int, situation: Situation
    ) -> DecisionRequest[RevisionContext, PlanRevisionOutput]:
        """Ask whether to revise the rest of the day while staying (a trip is pending)."""
        now = t % MINUTES_PER_DAY
        pending = self.pending_trips()
        following = pending[0]
        facts = self.plan_facts(view, now, self.end_place())
        target = next((r for r in pending if r.planned_arrival is not None), None)
        memories = recall_around(
            self.memory,
            t,
            [self.place, following.destination],
            (now - 30, now + 90),
            f"{self.place} plan change",
            uses_llm=view.uses_llm,
        )
        paths = view.next_trip_paths(
            facts.start_place,
            following.activity.facility,
            following.activity.path,
            facts.day_mode or following.activity.mode,
            max(float(t), following.planned_departure),
        )
        context = RevisionContext(
            persona=self.persona,
            situation=situation,
            social=view.contact_states(self.contacts(view)),
            day=t // MINUTES_PER_DAY + 1,
            place=self.place,
            facts=facts,
            future=[r.activity for r in pending],
            current=self.current_activity(),
            target_arrival=_target_arrival(target),
            target_place=None if target is None else target.destination,
            congestion=view.congestion_lines(t),
            events=view.events(t, self.place),
            memories=memories,
            **paths.as_context_fields(),
        )
        return DecisionRequest(PLAN_REVISION, self.name, context)

    def node_revision_context(self, view: WorldView, t: int) -> RevisionContext | None:
        """The en-route rule: whether to reconsider at the node ahead, and what it knows there.

        A traveller under way reconsiders when it is about to reach a node with links still
        ahead (:meth:`.WorldView.node_ahead`: a driver or walker whose link ends by minute
        ``t``, a transit rider queued for a train at a stop) and something ahead gives a
        reason (:func:`~.perception.en_route_trigger`):

        - driving, when the waits on the links ahead add up to at least
          :data:`~.perception.NODE_REVISION_WAIT` minutes: at every such node;
        - queued at a stop whose trains are full (a wait indicator of at least a headway), or
          walking or queued at a stop towards links an announced event concerns: once per
          trip and reason (:meth:`node_revision_request` remembers it in
          ``today.reconsidered``).

        Never while a path chosen en route is still to be taken. A driver or walker at a node
        is shown the links ahead, the fastest path to its destination now and, driving, a
        third path (:meth:`.WorldView.paths_from_node`; no reconsideration when no path
        leads on); a rider at a stop keeps its path (situation ``"at_stop"``).

        Who is asked: every minute the itinerary offers the travellers this rule may answer
        for (:meth:`.Itinerary.revision_opportunities`), and the model asks those whose plans
        no conversation changed that minute. Where the answer goes: a new path at a
        node is held in :attr:`pending_reroute` (:meth:`.Itinerary.revise`) and taken when
        the vehicle reaches that node (:meth:`.Itinerary._on_node_arrival`); arriving, or
        giving the travel up for the next activity, drops it.

        Returns:
            The context of the reconsideration, or ``None`` when the rule does not apply.
        """
        record = self.current_trip()
        if record is None or self.pending_reroute is not None:
            return None
        mode = record.activity.mode
        approach = view.node_ahead(record.trip_id, self.state, mode, t)
        if approach is None:
            return None
        node, ahead = approach
        trigger = view.reason_to_reconsider(mode, ahead, t)
        if trigger is None or (
            mode != "drive"
            and reconsider_key(record.trip_id, trigger) in self.today.reconsidered
        ):
            return None
        situation: Situation
        paths: PathOffer | None
        if self.state == "waiting_at_node":  # queued for a train: the path stays
            situation, paths = "at_stop", view.path_ahead(ahead, mode, t)
        else:
            situation = "at_node"
            paths = view.paths_from_node(record.trip_id, node, ahead, mode, t)
        if paths is None:
            return None
        now = t % MINUTES_PER_DAY
        pending = self.pending_trips()
        target = (
            record
            if record.planned_arrival is not None
            else next((r for r in pending if r.planned_arrival is not None), None)
        )
        recalled = recall_around(
            self.memory,
            t,
            [node, *paths.remaining_path],
            (now - 30, now + 60),
            f"congestion {node} route",
            uses_llm=view.uses_llm,
        )
        return RevisionContext(
            persona=self.persona,
            situation=situation,
            day=t // MINUTES_PER_DAY + 1,
            social=view.contact_states(self.contacts(view)),
            place=node,
            facts=self.plan_facts(view, now, record.destination),
            future=[r.activity for r in pending],
            destination=record.destination,
            current=record.activity,
            target_arrival=_target_arrival(target),
            target_place=None if target is None else target.destination,
            congestion=view.congestion_lines(t),
            events=view.events(t, node),
            memories=list(dict.fromkeys(recalled)),
            trigger=trigger,
            trip_id=record.trip_id,
            **paths.as_context_fields(),
        )

    def node_revision_request(
        self, view: WorldView, t: int
    ) -> DecisionRequest[RevisionContext, PlanRevisionOutput] | None:
        """Ask whether to change path at the node ahead (:meth:`node_revision_context`)."""
        context = self.node_revision_context(view, t)
        if context is None:
            return None
        self.today.reconsidered.add(reconsider_key(context.trip_id, context.trigger))
        return DecisionRequest(PLAN_REVISION, self.name, context)

    def travel_query_request(
        self, view: WorldView, t: int, before: DecisionRequest[Any, Any]
    ) -> DecisionRequest[TravelQueryContext, TravelQueryOutput]:
        """Ask which facts to look up before the decision ``before`` (a plan or revision)."""
        decided = before.context
        if isinstance(decided, PlanningContext):
            place, decision = decided.facts.start_place, "plan your day"
            offered = decided.offered_facilities
        else:
            place = decided.place
            decision = (
                f"reconsider your trip to {decided.destination} ({decided.trigger})"
            )
            offered = view.facilities_to_offer(
                (self.persona.home, self.persona.work_facility),
                (place, decided.destination),
            )
        names = view.place_names()
        context = TravelQueryContext(
            persona=self.persona,
            now=t % MINUTES_PER_DAY,
            place=place,
            decision=decision,
            facilities=names.facilities,
            nodes=names.nodes,
            links=names.links,
            stops=names.stops,
            offered_facilities=offered,
        )
        return DecisionRequest(TRAVEL_QUERY, self.name, context)

    def trip_importance_request(
        self, t: int, records: Sequence[TripRecord]
    ) -> DecisionRequest[TripImportanceContext, TripImportanceOutput]:
        """Ask how much the trips just completed (``records``) matter, to score their memories."""
        context = TripImportanceContext(
            persona=self.persona,
            day=t // MINUTES_PER_DAY + 1,
            now=t % MINUTES_PER_DAY,
            trips=[experience_of(r) for r in records],
            long_term_reflection=self.long_term_reflection,
        )
        return DecisionRequest(TRIP_IMPORTANCE, self.name, context)

    def rescore_trips(
        self, records: Sequence[TripRecord], importance: Sequence[float]
    ) -> int:
        """Give the memories of ``records`` these importances; how many were still there."""
        rescored = 0
        for record, score in zip(records, importance, strict=False):
            if record.memory_id in self.memory:
                self.memory.rescore(record.memory_id, score)
                rescored += 1
        return rescored

    def perceive(self, events: Iterable[Event], t: float) -> int:
        """Remember the events perceived for the first time today (event memories).

        Returns:
            How many were new.
        """
        new = 0
        for event in events:
            key = event_key(event)
            if key in self.today.perceived:
                continue
            self.today.perceived.add(key)
            self.memory.remember(
                event.content, node_type="event", importance=0.5, now=t,
                keywords=["event", *event.keywords],
                spatial_scope=[event.place, *event.spatial_scope],
                temporal_scope=(event.start_time, event.end_time),
            )  # fmt: skip
            new += 1
        return new

    # ------------------------------------------------------------------ commits
    def adopt_plan(self, plan: DailyPlan, t: float) -> None:
        """Make ``plan`` today's plan and remember its concepts (the model schedules it)."""
        self.plan = plan
        self.activities = list(plan.activities)
        self.today.mode = plan.activities[0].mode
        if plan.long_term_reflection:
            self.long_term_reflection = plan.long_term_reflection
        for concept in plan.concepts:
            self.memory.remember(
                concept.content, node_type="plan", importance=concept.importance, now=t,
                keywords=concept.keywords,
            )  # fmt: skip

    def remember_conversation(
        self, partner: TravellerAgent, conversation: Conversation, t: float
    ) -> None:
        """Both speakers remember the conversation's summary (and agreement) and its topic."""
        summary = conversation.summary
        if conversation.agreed is not None:
            summary += f" (agreed: {conversation.agreed.describe()})"
        for speaker, other in ((self, partner), (partner, self)):
            speaker.memory.remember(
                summary, node_type="chat", importance=conversation.importance, now=t,
                keywords=["chat", other.name, *conversation.topic.split()],
                spatial_scope=[speaker.place],
            )  # fmt: skip
            speaker.used_topics.setdefault(other.name, []).append(conversation.topic)
            speaker.today.chats.append(summary)

    def reflect(
        self, reflection: ReflectionOutput, t: float, *, rescore_trips: bool = True
    ) -> None:
        """Remember the day's reflections, take the new long-term reflection, rescore trips.

        ``reflection.trip_importance`` (an LLM's scores of today's trips, in order) replaces the
        importance the formula gave their memories, unless ``rescore_trips`` is false (they
        were scored on arrival); the rule reflection gives none.
        """
        if rescore_trips:
            self.rescore_trips(
                self.completed_today(self.today.day), reflection.trip_importance
            )
        for concept in reflection.reflections:
            self.memory.remember(
                concept.content, node_type="reflection", importance=concept.importance,
                now=t, keywords=concept.keywords,
            )  # fmt: skip
        if reflection.long_term_reflection:
            self.long_term_reflection = reflection.long_term_reflection

    def completed_today(self, day: int) -> list[TripRecord]:
        """The trips of ``day`` completed so far, in order."""
        return [
            r
            for r in self.trips
            if r.day == day and not r.cancelled and not math.isnan(r.arrival)
        ]

    def experiences_today(self, day: int) -> list[TripExperience]:
        """Today's completed trips as experiences."""
        return [experience_of(r) for r in self.completed_today(day)]


def _target_arrival(record: TripRecord | None) -> int | None:
    """The minute of the day ``record`` should arrive by, if it has a target."""
    if record is None or record.planned_arrival is None:
        return None
    return int(record.planned_arrival) % MINUTES_PER_DAY


def experience_of(record: TripRecord) -> TripExperience:
    """A completed trip record as an experience (minutes of the day), with its target arrival."""
    late = target = None
    if record.planned_arrival is not None:
        late = max(0, math.ceil(record.arrival - record.planned_arrival))
        target = int(record.planned_arrival) % MINUTES_PER_DAY
    return TripExperience(
        origin=record.origin,
        destination=record.destination,
        mode=record.activity.mode,
        departure=int(record.departure) % MINUTES_PER_DAY,
        travel_time=round(record.arrival - record.departure),
        delay=max(0, round(record.delay)),
        late=late,
        day=record.day,
        target=target,
    )


# ----------------------------------------------------------------------------- personas
def _get(obj: Any, names: Iterable[str], default: Any = None) -> Any:
    for name in names:
        value = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
        if value is not None:
            return value
    return default


def _work_hours(text: Any) -> tuple[int | None, int | None]:
    if not text or not isinstance(text, str) or "-" not in text:
        return None, None
    start, end = (part.strip() for part in text.split("-", 1))
    try:
        return parse_hhmm(start), parse_hhmm(end)
    except ValueError:
        return None, None


def _names(values: Any) -> tuple[str, ...]:
    if not values:
        return ()
    if isinstance(values, str):
        return tuple(v.strip() for v in values.split(",") if v.strip())
    return tuple(str(_get(v, ("name",), v)) for v in values)


def persona_from_person(
    person: Any,
    *,
    family: Sequence[str] = (),
    children: Sequence[str] = (),
    facilities: Iterable[str] = (),
) -> PersonaFacts:
    """Build the decision-facing profile from a population ``Person`` (or a mapping).

    Args:
        person: A ``Person`` of :mod:`mesa_llm_mobility.urban.population` or any object or
            mapping with the same field names.
        family: Names of the travelling adults of the same household.
        children: Names of the person's children.
        facilities: Known facilities; a work facility outside them means no work trip.
    """
    start, end = (
        _get(person, ("work_start",)),
        _get(person, ("work_end",)),
    )
    if start is None or end is None:
        start, end = _work_hours(_get(person, ("work_time",)))
    work = _get(person, ("work_facility",))
    known = set(facilities)
    if work is not None and known and work not in known:
        work = None
    if work is None:
        start = end = None
    traits = _get(person, ("innate", "innate_traits", "traits"), "")
    vehicles = _get(person, ("household_vehicles", "vehicles"), 0)
    return PersonaFacts(
        name=str(_get(person, ("name",))),
        age=int(_get(person, ("age",), 35)),
        gender=str(_get(person, ("gender",), "")),
        occupation=str(_get(person, ("occupation",), "") or ""),
        home=str(_get(person, ("home_facility", "home"))),
        work_facility=work,
        work_start=start,
        work_end=end,
        licensed=bool(_get(person, ("licensed_driver", "licensed"), False)),
        household=str(_get(person, ("household", "household_id"), "")),
        vehicles=int(vehicles)
        if not isinstance(vehicles, list | tuple)
        else len(vehicles),
        family=tuple(family),
        children=tuple(children),
        friends=_names(_get(person, ("friends",), ())),
        lifestyle=str(_get(person, ("lifestyle",), "") or ""),
        traits=", ".join(traits)
        if isinstance(traits, list | tuple)
        else str(traits or ""),
        preferences=str(
            _get(person, ("preferences_in_transportation", "preferences"), "") or ""
        ),
        description=str(_get(person, ("other_description", "description"), "") or ""),
    )


def personas_from_population(
    population: Any, facilities: Iterable[str] = ()
) -> list[PersonaFacts]:
    """Profiles of a population's travellers (adults), with family and children resolved.

    ``population`` needs ``travellers()`` and ``children_of(person)`` (the
    :class:`~mesa_llm_mobility.urban.population.Population` contract); a plain list of persons is
    taken as travellers without children.
    """
    facilities = list(facilities)
    travellers = (
        list(population.travellers())
        if hasattr(population, "travellers")
        else list(population)
    )
    by_household: dict[Hashable, list[str]] = {}
    for person in travellers:
        by_household.setdefault(
            str(_get(person, ("household", "household_id"), "")), []
        ).append(str(_get(person, ("name",))))
    personas = []
    for person in travellers:
        name = str(_get(person, ("name",)))
        household = str(_get(person, ("household", "household_id"), ""))
        children = (
            _names(population.children_of(person))
            if hasattr(population, "children_of")
            else ()
        )
        family = tuple(
            n for n in by_household.get(household, []) if n != name and household
        )
        personas.append(
            persona_from_person(
                person, family=family, children=children, facilities=facilities
            )
        )
    return personas


def __getattr__(name: str) -> Any:
    """Deprecated names: ``TravelerAgent`` is :class:`TravellerAgent`."""
    if name == "TravelerAgent":
        warnings.warn(
            "TravelerAgent is deprecated; use TravellerAgent",
            DeprecationWarning,
            stacklevel=2,
        )
        return TravellerAgent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
