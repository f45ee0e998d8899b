"""The urban daily-travel model (GATSim) as a Mesa model.

One step is one simulated minute, in the order of the paper's Algorithm 1:

1. plan generation and revision: travellers state their requests of the minute (chats at 00:00,
   day plans at 00:01, revisions at revision opportunities, reflections at 23:50) from a
   read-only :class:`~.contexts.WorldView`; the model hands them to the brain in one batch and
   commits each answer through the handler of its kind (trips added to or withdrawn from the
   traffic engine by the :class:`~.itinerary.Itinerary`, memories written by the traveller);
2. activity state updates: departures that are due happen inside the engine (a trip leaves at
   its planned minute once the previous one has arrived); a traveller still en route when its
   next activity is due gives up the current one and heads for the next, decided at each node it
   reaches;
3. network movement: :meth:`TrafficEngine.step`; completed trips are remembered (event memories
   with departure, travel time, delay and lateness) and en-route path decisions are applied on
   reaching the node they were made for;
4. reflection where due (daily, 23:50);
5. state mirroring, data collection, time advance; memory pruning at day boundaries.

With ``reaction_minutes=d > 0`` revisions are decided asynchronously: asked at ``t``, applied at
``t + d`` while the world moves on (:mod:`.decision_schedule`); ``d = 0`` (the default) is
Algorithm 1 exactly.

Agents that are just staying cost nothing per minute: the itinerary keeps a heap of wake-up
minutes (departures, reconsiderations during activities) and mirrors only travellers. The tables
are built by :mod:`.outputs`; the minute's conversations are run by :mod:`.conversations`, tool
use before deciding by :mod:`.tool_use`, and each household's cars and school runs are given out
by :func:`~.decisions.household.assign_household_day`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import operator
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

import mesa
import numpy as np
import pandas as pd

from mesa_llm_mobility.cognition import Brain, DecisionRequest
from mesa_llm_mobility.cognition.kinds import DecisionKind, DecisionResult, dispatch
from mesa_llm_mobility.cognition.settings import BrainOptions
from mesa_llm_mobility.experiment.base_model import MobilityModel
from mesa_llm_mobility.memory import MemoryStore
from mesa_llm_mobility.urban import outputs
from mesa_llm_mobility.urban.agents import (
    DayState,
    TravellerAgent,
    TripRecord,
    personas_from_population,
)
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY
from mesa_llm_mobility.urban.contexts import FacilityPair, WorldView
from mesa_llm_mobility.urban.conversations import (
    Conversation,
    chat_openings,
    hold_conversations,
)
from mesa_llm_mobility.urban.decision_schedule import (
    STALE_ACTION,
    ReactionSchedule,
    revision_still_applies,
)
from mesa_llm_mobility.urban.decisions import (
    DAILY_PLAN,
    DAILY_REFLECTION,
    PLAN_REVISION,
    PersonaFacts,
    PlanningContext,
    PlanRevisionOutput,
    ReflectionContext,
    ReflectionOutput,
    RevisionContext,
    Situation,
)
from mesa_llm_mobility.urban.decisions.household import assign_household_day
from mesa_llm_mobility.urban.decisions.trip_importance import (
    TRIP_IMPORTANCE,
    TripImportanceContext,
    TripImportanceOutput,
)
from mesa_llm_mobility.urban.itinerary import (
    PLAN_MINUTE,
    REFLECTION_MINUTE,
    Itinerary,
    is_day_phase,
)
from mesa_llm_mobility.urban.network_space import build_network_space
from mesa_llm_mobility.urban.outputs import UrbanSummary
from mesa_llm_mobility.urban.plans import DailyPlan, issue_rule
from mesa_llm_mobility.urban.routing import (
    MODES,
    DirectedLink,
    NetworkIndex,
    PathError,
    Router,
)
from mesa_llm_mobility.urban.scenario import Event, Scenario, load_scenario
from mesa_llm_mobility.urban.tool_use import look_up, native_tool_calls
from mesa_llm_mobility.urban.tools import ToolCallRecord
from mesa_llm_mobility.urban.traffic import TrafficEngine

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.population import Population

__all__ = [
    "TRIP_IMPORTANCE_MODES",
    "UrbanMobilityModel",
    "free_flow_table",
    "scale_personas",
]

TRIP_IMPORTANCE_MODES = ("creation", "reflection")
"""When LLM travellers score their trip memories: on arrival, or at the daily reflection."""


def _load_population(
    population: str | Path | Population | Sequence[PersonaFacts], scenario: Scenario
) -> Population | Sequence[PersonaFacts]:
    if not isinstance(population, str | Path):
        return population
    from mesa_llm_mobility.urban import population as population_module  # noqa: PLC0415

    return population_module.load_population(str(population), scenario)


def free_flow_table(
    index: NetworkIndex, town: Scenario, facilities: frozenset[str]
) -> tuple[dict[FacilityPair, float], dict[FacilityPair, tuple[DirectedLink, ...]]]:
    """Free-flow minutes and shortest paths by (origin, destination, mode) facility pairs.

    Transit minutes include each metro line's static wait.
    """
    router = Router(index)
    table: dict[FacilityPair, float] = {}
    routes: dict[FacilityPair, tuple[DirectedLink, ...]] = {}
    for origin in facilities:
        for destination in facilities:
            for mode in MODES:
                try:
                    links = router.path(origin, destination, mode)
                except PathError:
                    continue
                extra = 0.0
                if mode == "transit":
                    extra = sum(
                        town.metro_lines[line].static_wait
                        for line in {link.line for link in links if link.line}
                    )
                table[(origin, destination, mode)] = (
                    router.free_flow_time(links, mode) + extra
                )
                routes[(origin, destination, mode)] = tuple(links)
    return table, routes


def scale_personas(
    personas: Sequence[PersonaFacts], n_agents: int | None, rng: np.random.Generator
) -> list[PersonaFacts]:
    """Subsample or replicate whole households to get ``n_agents`` travellers.

    Fewer: households in a seeded random order until ``n_agents`` (the last one truncated).
    More: copies of every household with new names (``"<name> #2"``) and household ids.
    """
    if n_agents is None or n_agents == len(personas):
        return list(personas)
    if n_agents < 1:
        raise ValueError(f"n_agents must be >= 1, got {n_agents}")
    households: dict[str, list[PersonaFacts]] = {}
    for persona in personas:
        households.setdefault(persona.household or persona.name, []).append(persona)
    keys = list(households)
    if n_agents < len(personas):
        chosen: list[PersonaFacts] = []
        for position in rng.permutation(len(keys)):
            chosen.extend(households[keys[int(position)]])
            if len(chosen) >= n_agents:
                break
        kept = {p.name for p in chosen[:n_agents]}
        return [
            dataclasses.replace(
                p,
                family=tuple(n for n in p.family if n in kept),
                friends=tuple(n for n in p.friends if n in kept),
            )
            for p in chosen[:n_agents]
        ]
    result = list(personas)
    copy = 2
    while len(result) < n_agents:

        def renamed(name: str, copy: int = copy) -> str:
            return f"{name} #{copy}"

        for persona in personas:
            if len(result) >= n_agents:
                break
            result.append(
                dataclasses.replace(
                    persona,
                    name=renamed(persona.name),
                    household=f"{persona.household or persona.name} #{copy}",
                    family=tuple(renamed(n) for n in persona.family),
                    friends=tuple(renamed(n) for n in persona.friends),
                    children=tuple(renamed(n) for n in persona.children),
                )
            )
        copy += 1
    names = {p.name for p in result}
    return [
        dataclasses.replace(
            p,
            family=tuple(n for n in p.family if n in names),
            friends=tuple(n for n in p.friends if n in names),
        )
        for p in result
    ]


class UrbanMobilityModel(MobilityModel):
    """GATSim in Mesa: generative (or rule-based) travellers on a multimodal network.

    Args:
        scenario: Scenario name (bundled), path, or a :class:`Scenario`.
        population: Population name (bundled), path, a ``Population``, or a list of
            :class:`PersonaFacts`.
        days: Days to simulate.
        start_date: Date of day 1 (ISO; default Monday 2025-03-10, as in the paper).
        brain: ``"rules"``, ``"llm:<model>"`` or a :class:`Brain`.
        embedding: Memory embedding: ``"auto"`` (the default: all-MiniLM-L6-v2 when it loads
            offline, else the hash; :attr:`memory_store` ``.embedding`` says which was used),
            ``"minilm"`` or ``"hash"`` (offline and deterministic).
        rng: Seed or generator.
        events: ``True``/``False`` for the scenario's events, or a list of :class:`Event`.
        run_dir: Directory for a persistent memory store (``None``: in memory).
        n_agents: Subsample or replicate households to this many travellers.
        chat_probability: Chance that a traveller with contacts opens a chat in the morning.
        daytime_chat_probability: Chance that a traveller reconsidering during an activity
            calls (or talks to, when together) a contact staying at an activity; at most one
            daytime chat a day each.
        tools: LLM travellers may call tools (travel times, metro timetable, congestion,
            occupancy) before planning and before reconsidering en route: one ``TravelQuery``
            decision each, at most :data:`~.tools.MAX_TOOL_CALLS` calls.
        collect_every: Minutes between data collections.
        brain_options: Further :func:`make_brain` arguments (``api_base``, ...).
        trip_importance: When an LLM traveller scores the importance of its trip memories:
            ``"creation"`` (the default, as in the paper: on arrival, one ``TripImportance``
            decision per traveller and minute of arrivals, batched with the minute's others)
            or ``"reflection"`` (once a day, in the daily reflection). Rule travellers keep the
            formula (:func:`~.decisions.trip_importance.formula_importance`) either way.
        reaction_minutes: ``d``: a revision asked at minute ``t`` is applied at ``t + d``
            while the traffic moves on, so an LLM's answers of many minutes overlap
            (:mod:`~mesa_llm_mobility.urban.decision_schedule`); ``0`` keeps Algorithm 1's
            synchronous minute.

    Attributes:
        travellers: Every traveller by name.
        conversations: Every conversation of the run, in order (its turns, proposals and
            agreement).
        tool_calls: Every tool call of the run with its answer (:class:`~.tools.ToolCallRecord`).
        engine: The traffic engine.
        itinerary: Plans as engine trips, the wake-up schedule and the records of the tables.
        view: What travellers see when they decide.
        minute: Minutes simulated (the next step simulates this absolute minute).
    """

    time_columns: ClassVar[tuple[str, ...]] = ("day", "minute")
    decision_columns: ClassVar[tuple[str, ...]] = ("action",)

    def __init__(
        self,
        scenario: str | Path | Scenario = "nguyen_dupuis",
        population: str | Path | Population | Sequence[PersonaFacts] = "population_70",
        days: int = 1,
        start_date: str = "2025-03-10",
        brain: str | Brain = "rules",
        embedding: str = "auto",
        rng: int | np.random.Generator | None = None,
        events: bool | Sequence[Event] = True,
        run_dir: str | Path | None = None,
        n_agents: int | None = None,
        chat_probability: float = 0.15,
        daytime_chat_probability: float = 0.05,
        tools: bool = False,
        collect_every: int = 15,
        brain_options: BrainOptions | None = None,
        reaction_minutes: int = 0,
        trip_importance: str = "creation",
    ) -> None:
        if days < 1:
            raise ValueError(f"days must be >= 1, got {days}")
        if trip_importance not in TRIP_IMPORTANCE_MODES:
            raise ValueError(
                f"trip_importance must be one of {', '.join(TRIP_IMPORTANCE_MODES)}, "
                f"got {trip_importance!r}"
            )
        self.trip_importance = trip_importance
        super().__init__(brain=brain, brain_options=brain_options, rng=rng)
        town = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        if events is False:
            town = dataclasses.replace(town, events=())
        elif events is not True:
            town = dataclasses.replace(town, events=tuple(events))
        self.town = town
        self.days = int(days)
        self.start_date = dt.date.fromisoformat(start_date)
        self.chat_probability = float(chat_probability)
        self.daytime_chat_probability = float(daytime_chat_probability)
        self.conversations: list[Conversation] = []
        self.tools = bool(tools)
        self.tool_calls: list[ToolCallRecord] = []
        self.collect_every = int(collect_every)
        self.reactions = ReactionSchedule(reaction_minutes)
        self._scoring: dict[tuple[str, int, int], list[TripRecord]] = {}
        """The trips of each ``TripImportance`` request on its way: (agent, day, minute)."""
        self.minute = 0
        self.engine = TrafficEngine(town, record_facility_states=False)
        self.space = build_network_space(town, random=self.random)
        self.memory_store = (
            MemoryStore.ephemeral(embedding=embedding)
            if run_dir is None
            else MemoryStore.persistent(Path(run_dir) / "memory", embedding=embedding)
        )
        # Deferred writes: a stream's collection is made at its first vector query, so a rule
        # brain (which never queries) costs no Chroma collection per traveller until the
        # day's checkpoint flush, which then writes each traveller's memories in one add.
        self.memory_store.defer_writes = True
        self.facilities = frozenset(town.facilities)
        self.travel_times, self.routes = free_flow_table(
            self.engine.index, town, self.facilities
        )

        loaded = _load_population(population, town)
        personas = (
            list(loaded)
            if isinstance(loaded, list)
            and all(isinstance(p, PersonaFacts) for p in loaded)
            else personas_from_population(loaded, self.facilities)
        )
        personas = scale_personas(personas, n_agents, self.rng)
        self.travellers: dict[str, TravellerAgent] = {}
        for persona in personas:
            if persona.home not in self.facilities:
                raise ValueError(
                    f"{persona.name}: unknown home facility {persona.home!r}"
                )
            self.engine.add_agent(persona.name, persona.home)
            agent = TravellerAgent(
                self, persona, self.memory_store, self.space[persona.home]
            )
            self.travellers[persona.name] = agent
        self.itinerary = Itinerary(self.engine, self.travellers, self.space)
        # a departure's revision is asked d minutes ahead, so its answer is there in time
        self.itinerary.decision_lead_minutes = self.reactions.reaction_minutes
        self.view = WorldView(
            engine=self.engine,
            town=town,
            start_date=self.start_date,
            facilities=self.facilities,
            travel_times=self.travel_times,
            routes=self.routes,
            travellers=self.travellers,
            uses_llm=self.uses_llm,
            trips_scored_on_arrival=self._scores_on_arrival,
        )
        self.datacollector = mesa.DataCollector(
            model_reporters={
                "minute": "minute",
                "trips_in_progress": "trips_in_progress",
                "departed": "departed",
                "arrived": "arrived",
                "mean_delay": "mean_delay",
            },
            # attrgetters, not attribute names: the collector is pickled with the model
            agent_reporters={
                "state": operator.attrgetter("state"),
                "cell": operator.attrgetter("place"),
            },
        )

    # ------------------------------------------------------------------ checkpoints
    def __getstate__(self) -> dict[str, Any]:
        """Everything but the brain, its options and the memory store; :meth:`attach` gives them back.

        The brain holds network clients and the ledger file, its options may hold an API key
        (never written to a checkpoint), the memory store a Chroma client.
        """
        state = super().__getstate__()
        state["memory_store"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a checkpoint; one pickled before reaction times existed decides as ``d = 0``."""
        state.setdefault("reactions", ReactionSchedule(0))
        state.setdefault("trip_importance", "reflection")  # what it did then
        state.setdefault("_scoring", {})
        super().__setstate__(state)

    def attach(
        self,
        brain: str | Brain,
        memory_store: MemoryStore,
        brain_options: BrainOptions | None = None,
    ) -> None:
        """Give an unpickled model its brain and memory store back.

        Args:
            brain: ``"rules"``, ``"llm:<model>"`` or a :class:`Brain`; built on the model's
                (restored) generator, so rule decisions continue the same random stream.
            memory_store: The store holding the memories as they were at the checkpoint.
            brain_options: Further :func:`make_brain` arguments (``ledger``, ``replay``, ...).
        """
        self.memory_store = memory_store
        memory_store.defer_writes = True
        for agent in self.travellers.values():
            agent.memory = memory_store.stream(agent.unique_id)
        self.attach_brain(brain, brain_options)
        self.view.uses_llm = self.uses_llm
        self.view.trips_scored_on_arrival = self._scores_on_arrival

    def replace_events(self, events: Sequence[Event]) -> None:
        """Replace the scenario's events from now on (e.g. a fork with events switched off).

        Args:
            events: The new events; see :meth:`TrafficEngine.replace_events`.
        """
        self.engine.replace_events(events)
        self.town = dataclasses.replace(self.town, events=tuple(events))
        self.view.town = self.town

    # ------------------------------------------------------------------ reporters
    @property
    def trips_in_progress(self) -> int:
        """Trips departed and not yet arrived."""
        return self.itinerary.in_progress

    @property
    def arrived(self) -> int:
        """Trips completed so far."""
        return self.itinerary.arrived

    @property
    def departed(self) -> int:
        """Trips departed so far."""
        return self.itinerary.arrived + self.itinerary.in_progress

    @property
    def mean_delay(self) -> float:
        """Mean delay (minutes) of the completed trips."""
        arrived = self.itinerary.arrived
        return self.itinerary.delay_sum / arrived if arrived else 0.0

    @property
    def day(self) -> int:
        """Current day number (1-based)."""
        return self.minute // MINUTES_PER_DAY + 1

    # ------------------------------------------------------------------ running
    def run(self, days: int | None = None) -> Self:
        """Run to the end of ``days`` (default: all the model's days).

        Returns:
            The model.
        """
        end = MINUTES_PER_DAY * (self.days if days is None else min(days, self.days))
        while self.running and self.minute < end:
            self.step()
        return self

    def step(self) -> None:
        """Simulate one minute (Algorithm 1)."""
        t = self.minute
        time = {"day": t // MINUTES_PER_DAY + 1, "minute": t % MINUTES_PER_DAY}
        if time["minute"] == 0:
            self._start_day(time["day"])
        asynchronous = self.reactions.reaction_minutes > 0
        if asynchronous:
            self._apply_due(t, time)
        staying, others = self.itinerary.revision_opportunities(t)
        talked = hold_conversations(self, chat_openings(self, t, staying), t, time)
        requests = self._requests(t, staying, others, talked)
        if self.tools and self.uses_llm:
            requests = look_up(self, requests, t, time)
        if asynchronous:
            self._submit_with_reaction_time(requests, t, time)
        else:
            self._apply(self.decide(requests, **time), time)
        self.itinerary.advance(t)
        self._score_trips(t, time)
        if (
            time["minute"] % self.collect_every == 0
            or t == self.days * MINUTES_PER_DAY - 1
        ):
            self.datacollector.collect(self)
        self.minute = t + 1
        if self.minute >= self.days * MINUTES_PER_DAY:
            self.running = False

    def close(self) -> None:
        """Close the brain and the memory store."""
        super().close()
        self.memory_store.close()

    # ------------------------------------------------------------------ day start
    def _start_day(self, day: int) -> None:
        """Prune memories; give each traveller its day: workday, car, school duty."""
        t = (day - 1) * MINUTES_PER_DAY
        if day > 1:
            self.memory_store.prune(t)
        weekday = (self.start_date + dt.timedelta(days=day - 1)).weekday()
        households: dict[str, list[TravellerAgent]] = {}
        for agent in self.travellers.values():
            persona = agent.persona
            agent.today = DayState(
                day=day, workday=weekday < 5 and persona.work_facility is not None
            )
            agent.revisions = []
            households.setdefault(persona.household or persona.name, []).append(agent)
        for members in households.values():
            assign_household_day(members, self.travel_times)

    # ------------------------------------------------------------------ trip importance
    @property
    def _scores_on_arrival(self) -> bool:
        return self.uses_llm and self.trip_importance == "creation"

    def _score_trips(self, t: int, time: dict[str, int]) -> None:
        """Let LLM travellers score the trip memories written this minute (one batch).

        One ``TripImportance`` decision per traveller with arrivals this minute; its scores
        replace the formula's in the memories (:attr:`trip_importance` ``"creation"``). With a
        reaction time the batch is sent and its scores applied when due, as revisions are
        (the memories keep the formula's score meanwhile), so the minute waits for no answer.
        """
        remembered = self.itinerary.take_remembered()
        if not remembered or not self._scores_on_arrival:
            return
        by_agent: dict[str, list[TripRecord]] = {}
        for name, record in remembered:
            by_agent.setdefault(name, []).append(record)
        requests = []
        for name, records in by_agent.items():
            requests.append(self.travellers[name].trip_importance_request(t, records))
            self._scoring[(name, time["day"], time["minute"])] = records
        if self.reactions.reaction_minutes and not is_day_phase(time["minute"]):
            self._submit_scores(requests, t, time)
        else:
            self._apply(self.decide(requests, **time), time)

    def _submit_scores(
        self, requests: list[DecisionRequest[Any, Any]], t: int, time: dict[str, int]
    ) -> None:
        """With a reaction time: send a minute's scoring, applied when due (busy nobody)."""
        due = min(
            t + self.reactions.reaction_minutes, time["day"] * MINUTES_PER_DAY - 1
        )
        self.reactions.add(
            self.brain.submit(requests, tags=time), frozenset(), time, due
        )
        if due == t:  # the day's last minute: nothing stays pending overnight
            for asked, batch in self.reactions.take_due(t):
                self._apply(batch.result(), dict(asked))

    def _commit_trip_importance(
        self, result: DecisionResult[TripImportanceContext, TripImportanceOutput]
    ) -> str:
        """Rescore the trips' memories; the action column lists the scores."""
        context = result.request.context
        name = str(result.agent_id)
        records = self._scoring.pop((name, context.day, context.now))
        scores = result.output.importance
        self.travellers[name].rescore_trips(records, scores)
        return ", ".join(f"{s:.2f}" for s in scores)

    # ------------------------------------------------------------------ tables
    def conversations_frame(self) -> pd.DataFrame:
        """One row per turn of every conversation (:func:`~.outputs.conversations_frame`)."""
        return outputs.conversations_frame(self.conversations)

    def tool_calls_frame(self) -> pd.DataFrame:
        """One row per tool call: day, minute, agent, tool, arguments (JSON), answer, ok."""
        return outputs.tool_calls_frame(self.tool_calls)

    # ------------------------------------------------------------------ gathering requests
    def _requests(
        self,
        t: int,
        staying: Sequence[tuple[TravellerAgent, Situation]],
        others: Sequence[TravellerAgent],
        talked: set[str] = frozenset(),  # type: ignore[assignment]
    ) -> list[DecisionRequest[Any, Any]]:
        """Every decision request of minute ``t`` after its conversations, as the travellers state them.

        ``talked``: travellers whose plans a daytime agreement changed; those not already
        reconsidering now get a ``"during_activity"`` revision.
        """
        view, now = self.view, t % MINUTES_PER_DAY
        requests: list[DecisionRequest[Any, Any]] = []
        if now == PLAN_MINUTE:
            requests.extend(a.plan_request(view, t) for a in self.travellers.values())
        if now == REFLECTION_MINUTE:
            requests.extend(
                a.reflection_request(view, t) for a in self.travellers.values()
            )
        requests.extend(
            agent.revision_request(view, t, situation) for agent, situation in staying
        )
        reconsidering = {agent.name for agent, _ in staying}
        for name in sorted(talked - reconsidering):
            agent = self.travellers[name]
            if agent.state == "staying" and agent.pending_trips():
                requests.append(agent.revision_request(view, t, "during_activity"))
        for agent in others:
            if agent.name in talked:
                continue
            request = agent.node_revision_request(view, t)
            if request is not None:
                requests.append(request)
        for request in requests:  # who looks around now remembers what it perceives
            if request.kind is PLAN_REVISION:
                agent = self.travellers[str(request.agent_id)]
                agent.perceive(view.perceived_events(t, request.context.place), t)
        return requests

    # ------------------------------------------------------------------ commits
    def _apply(
        self, results: Sequence[DecisionResult[Any, Any]], time: dict[str, int]
    ) -> None:
        """Commit each result through its kind's handler and record it at ``time``.

        The tools a result's model called natively join :attr:`tool_calls` first.
        """
        minute = (time["day"] - 1) * MINUTES_PER_DAY + time["minute"]
        self.tool_calls.extend(native_tool_calls(results, minute))
        actions = dispatch(results, self._commits())
        for result, action in zip(results, actions, strict=True):
            self.record_decision(result, time, action=action)

    def _apply_due(self, t: int, time: dict[str, int]) -> None:
        """With a reaction time: apply the answers due by minute ``t`` (all, at a day phase)."""
        for asked, pending in self.reactions.take_due(
            None if is_day_phase(time["minute"]) else t
        ):
            self._apply(pending.result(), dict(asked))

    def _submit_with_reaction_time(
        self, requests: list[DecisionRequest[Any, Any]], t: int, time: dict[str, int]
    ) -> None:
        """With a reaction time: send minute ``t``'s requests, due ``d`` minutes later.

        The day's phases (chats, plans, reflections) stay synchronous, after every pending
        revision; a traveller with a revision under way asks nothing more until it is applied.
        """
        if is_day_phase(time["minute"]):
            self._apply(self.decide(requests, **time), time)
            return
        requests = [r for r in requests if not self.reactions.is_busy(str(r.agent_id))]
        if not requests:
            return
        day_end = (time["day"]) * MINUTES_PER_DAY - 1
        due = min(t + self.reactions.reaction_minutes, day_end)
        pending = self.brain.submit(requests, tags=time)
        self.reactions.add(
            pending, frozenset(str(r.agent_id) for r in requests), time, due
        )
        if due == t:  # the day's last minute: nothing stays pending overnight
            for asked, batch in self.reactions.take_due(t):
                self._apply(batch.result(), dict(asked))

    def _commits(self) -> dict[DecisionKind[Any, Any], Callable[[Any], str]]:
        """The commit function of each kind; each returns the decision's action column."""
        return {
            DAILY_PLAN: self._commit_plan,
            PLAN_REVISION: self._commit_revision,
            DAILY_REFLECTION: self._commit_reflection,
            TRIP_IMPORTANCE: self._commit_trip_importance,
        }

    def _count_plan_errors(self, result: DecisionResult[Any, Any]) -> None:
        # what the plan validator found in the answers, whichever brain gave them
        self.itinerary.plan_errors.update(
            issue_rule(m) or "other" for m in result.domain_errors
        )

    def _commit_plan(self, result: DecisionResult[PlanningContext, DailyPlan]) -> str:
        """Adopt a day plan; the action column reads ``"<n> activities by <mode>"``."""
        self._count_plan_errors(result)
        plan = result.output
        agent = self.travellers[str(result.agent_id)]
        self.itinerary.adopt_plan(agent, plan, self.minute)
        return f"{len(plan.activities)} activities by {plan.activities[0].mode}"

    def _commit_revision(
        self, result: DecisionResult[RevisionContext, PlanRevisionOutput]
    ) -> str:
        """Apply a plan revision; the action column is the revision's action."""
        self._count_plan_errors(result)
        agent = self.travellers[str(result.agent_id)]
        if self.reactions.reaction_minutes and not revision_still_applies(
            agent, result.request.context, self.engine, self.minute
        ):
            return STALE_ACTION
        self.itinerary.revise(agent, result.request.context, result.output, self.minute)
        return result.output.action

    def _commit_reflection(
        self, result: DecisionResult[ReflectionContext, ReflectionOutput]
    ) -> str:
        """Remember the day's reflections; the action column reads ``"<n> reflections"``."""
        reflection = result.output
        self.travellers[str(result.agent_id)].reflect(
            reflection, self.minute, rescore_trips=not self._scores_on_arrival
        )
        return f"{len(reflection.reflections)} reflections"

    # ------------------------------------------------------------------ outputs
    def trips_frame(self) -> pd.DataFrame:
        """One row per trip (the engine's trips table) with day and lateness."""
        return outputs.trips_frame(self.engine, self.facilities)

    def link_states_frame(self) -> pd.DataFrame:
        """The engine's per-step link table."""
        return self.engine.link_states_frame()

    def plans_frame(self) -> pd.DataFrame:
        """One row per planned activity of every plan and revision."""
        return outputs.plans_frame(self.itinerary.plans)

    def revisions_frame(self) -> pd.DataFrame:
        """One row per plan revision: day, minute, agent, situation, place, action, reason.

        Interrupted travels (situation ``"en_route"``, action ``"interrupt"``) are rows too,
        although no brain decided them.
        """
        return outputs.revisions_frame(self.itinerary.revisions)

    def positions_frame(self) -> pd.DataFrame:
        """Where travellers are: one row per change of a traveller's state or place.

        Columns: time (absolute minute, the step after which the traveller is there), day,
        agent, state, place (facility, node or link: the cell key). Every traveller has a row
        at time 0 (at home, staying); its place at minute ``m`` is its last row at or before
        ``m``.
        """
        return outputs.positions_frame(self.itinerary.moves)

    def memories_frame(self) -> pd.DataFrame:
        """One row per memory of every traveller (live, not yet pruned)."""
        return outputs.memories_frame(self.travellers)

    def commute_frame(self) -> pd.DataFrame:
        """Per-day commute to work: departure, lead, punctuality and delay.

        See :func:`~mesa_llm_mobility.urban.outputs.commute_frame`.
        """
        return outputs.commute_frame(self.trips_frame())

    def departure_histogram(
        self, bin_minutes: int = 10, *, commute_only: bool = True
    ) -> pd.DataFrame:
        """Departures per time bin and day (peak spreading): rows ``"HH:MM"`` bins, columns days.

        Args:
            bin_minutes: Bin width in minutes.
            commute_only: Count only trips with a target arrival (the commute to work).

        Returns:
            The counts.
        """
        return outputs.departure_histogram(
            self.trips_frame(), bin_minutes, commute_only=commute_only
        )

    def summary(self) -> UrbanSummary:
        """Run KPIs: trips, delay, punctuality, mode shares, decisions, LLM use, plan errors.

        ``interruptions`` counts the travels given up for the next activity (see
        :meth:`revisions_frame`, action ``"interrupt"``).
        """
        ledger = self.ledger
        return outputs.summary(
            self.trips_frame(),
            self.decisions_frame(),
            llm=None if ledger is None else ledger.summary(),
            plan_errors=self.itinerary.plan_errors,
            revisions=self.itinerary.revisions,
        )
