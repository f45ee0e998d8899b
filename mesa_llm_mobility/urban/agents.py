"""Travellers of the urban model: persona, memory, today's plan and a state mirrored from traffic.

A :class:`TravellerAgent` never moves itself: the traffic engine moves it along the trips its plan
produced, and the model mirrors the engine's view into the agent (``state`` and ``cell``) after
each network step, only for agents that are travelling or due to leave. The agent keeps plain
data (plan, revisions, trip log, long-term reflection) so a model can be checkpointed at a day
boundary.
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
from mesa_llm_mobility.urban.contexts import reconsider_key
from mesa_llm_mobility.urban.decisions import (
    CHAT,
    CHAT_TURN,
    DAILY_PLAN,
    DAILY_REFLECTION,
    PLAN_REVISION,
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
    TravelQueryContext,
    TravelQueryOutput,
    TripExperience,
    TripImportanceContext,
    TripImportanceOutput,
)
from mesa_llm_mobility.urban.perception import event_key
from mesa_llm_mobility.urban.plans import Activity, Appointment, DailyPlan
from mesa_llm_mobility.urban.traffic import Location, TravelState

if TYPE_CHECKING:
    from mesa import Model
    from mesa.discrete_space import Cell, Network

    from mesa_llm_mobility.memory import MemoryStore, MemoryStream
    from mesa_llm_mobility.urban.contexts import WorldView
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

    # ------------------------------------------------------------------ requests
    def plan_request(
        self, view: WorldView, t: int
    ) -> DecisionRequest[PlanningContext, DailyPlan]:
        """Ask for today's plan (at minute ``t``, absolute)."""
        return DecisionRequest(DAILY_PLAN, self.name, view.planning_context(self, t))

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
        context = view.chat_context(self, contacts, t, medium=medium, morning=morning)
        return DecisionRequest(CHAT, self.name, context)

    def chat_turn_request(
        self, view: WorldView, t: int, conversation: Conversation
    ) -> DecisionRequest[ChatTurnContext, ChatTurnOutput]:
        """Ask for this traveller's next turn in ``conversation``."""
        context = view.chat_turn_context(self, conversation, t)
        return DecisionRequest(CHAT_TURN, self.name, context)

    def reflection_request(
        self, view: WorldView, t: int
    ) -> DecisionRequest[ReflectionContext, ReflectionOutput]:
        """Ask for the day's reflection."""
        day = t // MINUTES_PER_DAY + 1
        return DecisionRequest(
            DAILY_REFLECTION, self.name, view.reflection_context(self, day)
        )

    def revision_request(
        self, view: WorldView, t: int, situation: Situation
    ) -> DecisionRequest[RevisionContext, PlanRevisionOutput]:
        """Ask whether to revise the rest of the day while staying."""
        return DecisionRequest(
            PLAN_REVISION, self.name, view.revision_context(self, situation, t)
        )

    def node_revision_request(
        self, view: WorldView, t: int
    ) -> DecisionRequest[RevisionContext, PlanRevisionOutput] | None:
        """Ask whether to change path at the node ahead, when driving into waits."""
        context = view.node_revision_context(self, t)
        if context is None:
            return None
        self.today.reconsidered.add(reconsider_key(context.trip_id, context.trigger))
        return DecisionRequest(PLAN_REVISION, self.name, context)

    def travel_query_request(
        self, view: WorldView, t: int, before: DecisionRequest[Any, Any]
    ) -> DecisionRequest[TravelQueryContext, TravelQueryOutput]:
        """Ask which facts to look up before the decision ``before`` (a plan or revision)."""
        context = view.travel_query_context(self, before.context, t)
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
