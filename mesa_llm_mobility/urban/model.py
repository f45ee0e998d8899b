"""The urban daily-travel model (GATSim) as a Mesa model.

One step is one simulated minute, in the order of the paper's Algorithm 1:

1. plan generation and revision: every decision request of the minute (chats at 00:00, day plans
   at 00:01, revisions at revision opportunities, reflections at 23:50) goes to the brain in one
   ``decide_all`` call, and the answers are applied (trips added to or withdrawn from the traffic
   engine);
2. activity state updates: departures that are due happen inside the engine (a trip leaves at
   its planned minute once the previous one has arrived); a traveller still en route when its
   next activity is due gives up the current one and heads for the next, decided at each node it
   reaches (``UrbanMobilityModel._interrupt``);
3. network movement: :meth:`TrafficEngine.step`; completed trips are remembered (event memories
   with departure, travel time, delay and lateness) and en-route path decisions are applied on
   reaching the node they were made for;
4. reflection where due (daily, 23:50);
5. state mirroring, data collection, time advance; memory pruning at day boundaries.

Agents that are just staying cost nothing per minute: the model keeps a heap of wake-up minutes
(departures, reconsiderations during activities) and mirrors only travellers.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import heapq
import logging
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mesa
import numpy as np
import pandas as pd

from mesa_llm_mobility.cognition import (
    Brain,
    DecisionRequest,
    RuleBrain,
    make_brain,
)
from mesa_llm_mobility.memory import MemoryStore
from mesa_llm_mobility.urban.agents import (
    DayState,
    PlanRevisionRecord,
    TravellerAgent,
    TripRecord,
    experience_of,
    personas_from_population,
)
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, format_hhmm
from mesa_llm_mobility.urban.decisions import (
    CHAT,
    DAILY_PLAN,
    DAILY_REFLECTION,
    PLAN_REVISION,
    SCHOOL,
    ChatContext,
    PersonaFacts,
    PlanningContext,
    ReflectionContext,
    RevisionContext,
    RouteOption,
    TripExperience,
    parse_trip_memory,
    school_runs,
    trip_memory_text,
)
from mesa_llm_mobility.urban.network_space import build_network_space
from mesa_llm_mobility.urban.plans import (
    WORK_REFLECT_MINUTES,
    Activity,
    PlanFacts,
    issue_rule,
)
from mesa_llm_mobility.urban.routing import (
    MODES,
    DirectedLink,
    PathError,
    Router,
    alternative_path,
    validate_path,
)
from mesa_llm_mobility.urban.scenario import Event, Scenario, load_scenario
from mesa_llm_mobility.urban.traffic import TrafficEngine, TravelState, transit_journey

logger = logging.getLogger(__name__)

CHAT_MINUTE = 0
PLAN_MINUTE = 1
REFLECTION_MINUTE = 23 * 60 + 50
NODE_REVISION_WAIT = 5.0
"""Drivers reconsider their path at a node when the waits ahead add up to this many minutes."""
ALTERNATIVE_SLACK = 1.5
"""LLM revisions offer a further path only when expected at most this much slower."""
_COLLECTED_FIELDS = (
    "model_vars",
    "_collection_steps",
    "_agent_records",
    "_agenttype_records",
    "tables",
    "_validated",
)


def _load_population(population: Any, scenario: Scenario) -> Any:
    if not isinstance(population, str | Path):
        return population
    from mesa_llm_mobility.urban import population as population_module  # noqa: PLC0415

    return population_module.load_population(str(population), scenario)


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


class UrbanMobilityModel(mesa.Model):
    """GATSim in Mesa: generative (or rule-based) travellers on a multimodal network.

    Args:
        scenario: Scenario name (bundled), path, or a :class:`Scenario`.
        population: Population name (bundled), path, a ``Population``, or a list of
            :class:`PersonaFacts`.
        days: Days to simulate.
        start_date: Date of day 1 (ISO; default Monday 2025-03-10, as in the paper).
        brain: ``"rules"``, ``"llm:<model>"`` or a :class:`Brain`.
        embedding: Memory embedding (``"hash"``: offline and deterministic).
        rng: Seed or generator.
        events: ``True``/``False`` for the scenario's events, or a list of :class:`Event`.
        run_dir: Directory for a persistent memory store (``None``: in memory).
        n_agents: Subsample or replicate households to this many travellers.
        chat_probability: Chance that a traveller with contacts opens a chat in the morning.
        collect_every: Minutes between data collections.
        brain_options: Further :func:`make_brain` arguments (``api_base``, ...).
    """

    def __init__(
        self,
        scenario: str | Path | Scenario = "nguyen_dupuis",
        population: Any = "population_70",
        days: int = 1,
        start_date: str = "2025-03-10",
        brain: str | Brain = "rules",
        embedding: str = "hash",
        rng: Any = None,
        events: bool | Sequence[Event] = True,
        run_dir: str | Path | None = None,
        n_agents: int | None = None,
        chat_probability: float = 0.15,
        collect_every: int = 15,
        brain_options: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(rng=rng)
        if days < 1:
            raise ValueError(f"days must be >= 1, got {days}")
        town = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        if events is False:
            town = dataclasses.replace(town, events=())
        elif events is not True:
            town = dataclasses.replace(town, events=tuple(events))
        self.town = town
        self.days = int(days)
        self.start_date = dt.date.fromisoformat(start_date)
        self.chat_probability = float(chat_probability)
        self.collect_every = int(collect_every)
        self.minute = 0
        self.engine = TrafficEngine(town, record_facility_states=False)
        self.space = build_network_space(town, random=self.random)
        self.memory_store = (
            MemoryStore.ephemeral(embedding=embedding)
            if run_dir is None
            else MemoryStore.persistent(Path(run_dir) / "memory", embedding=embedding)
        )
        # rule decisions are many and cheap: the model's decisions table records them; LLM
        # brains keep their own ledger (calls, outcomes, tokens)
        self.brain = make_brain(brain, rng=self.rng, **(brain_options or {}))
        self._llm = not isinstance(self.brain, RuleBrain)
        self.facilities = frozenset(town.facilities)
        self.travel_times, self.routes = self._free_flow_table()

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
        self.engine.on_trip_complete.append(self._on_trip_complete)
        self.engine.on_node_arrival.append(self._on_node_arrival)

        self._wake: list[tuple[float, int, str, str, str]] = []
        self._seq = 0
        self._active: set[str] = set()
        self._trip_records: dict[str, TripRecord] = {}
        self._decisions: list[tuple] = []
        self._plans: list[tuple] = []
        self._revisions: list[tuple] = []
        # (time, agent, state, place) whenever a traveller's state or place changes
        self._moves: list[tuple] = [
            (0, name, agent.state, agent.place)
            for name, agent in self.travellers.items()
        ]
        self._issues: Counter[str] = Counter()
        self._n_arrived = 0
        self._delay_sum = 0.0
        self._in_progress = 0
        self._congestion_cache: tuple[int, list[str]] | None = None
        self.datacollector = self._make_datacollector()

    @staticmethod
    def _make_datacollector() -> mesa.DataCollector:
        return mesa.DataCollector(
            model_reporters={
                "minute": "minute",
                "trips_in_progress": "trips_in_progress",
                "departed": "departed",
                "arrived": "arrived",
                "mean_delay": "mean_delay",
            },
            agent_reporters={"state": "state", "cell": "place"},
        )

    # ------------------------------------------------------------------ checkpoints
    def __getstate__(self) -> dict[str, Any]:
        """Everything but the brain, the memory store and the data collector's reporters.

        The brain (network clients, ledger file) and the memory store (a Chroma client) are
        reattached by :meth:`attach` after unpickling; the data collector, whose reporters are
        closures, is rebuilt around its collected data.
        """
        state = self.__dict__.copy()
        state["brain"] = None
        state["memory_store"] = None
        collector = state.pop("datacollector")
        state["_collected"] = {
            name: getattr(collector, name) for name in _COLLECTED_FIELDS
        }
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled model; call :meth:`attach` before stepping it."""
        state = dict(state)
        collected = state.pop("_collected")
        state.setdefault("_revisions", [])  # checkpoints of earlier versions
        state.setdefault("_moves", [])
        self.__dict__.update(state)
        if "routes" not in state:  # checkpoints of earlier versions
            self.travel_times, self.routes = self._free_flow_table()
        self.datacollector = self._make_datacollector()
        for name, value in collected.items():
            setattr(self.datacollector, name, value)

    def attach(
        self,
        brain: str | Brain,
        memory_store: MemoryStore,
        brain_options: dict[str, Any] | None = None,
    ) -> None:
        """Give an unpickled model its brain and memory store back.

        Args:
            brain: ``"rules"``, ``"llm:<model>"`` or a :class:`Brain`; built on the model's
                (restored) generator, so rule decisions continue the same random stream.
            memory_store: The store holding the memories as they were at the checkpoint.
            brain_options: Further :func:`make_brain` arguments (``ledger``, ``replay``, ...).
        """
        self.memory_store = memory_store
        for agent in self.travellers.values():
            agent.memory = memory_store.stream(agent.unique_id)
        self.brain = make_brain(brain, rng=self.rng, **(brain_options or {}))
        self._llm = not isinstance(self.brain, RuleBrain)

    def replace_events(self, events: Sequence[Event]) -> None:
        """Replace the scenario's events from now on (e.g. a fork with events switched off).

        Args:
            events: The new events; see :meth:`TrafficEngine.replace_events`.
        """
        self.engine.replace_events(events)
        self.town = dataclasses.replace(self.town, events=tuple(events))

    # ------------------------------------------------------------------ reporters
    @property
    def trips_in_progress(self) -> int:
        """Trips departed and not yet arrived."""
        return self._in_progress

    @property
    def arrived(self) -> int:
        """Trips completed so far."""
        return self._n_arrived

    @property
    def departed(self) -> int:
        """Trips departed so far."""
        return self._n_arrived + self._in_progress

    @property
    def mean_delay(self) -> float:
        """Mean delay (minutes) of the completed trips."""
        return self._delay_sum / self._n_arrived if self._n_arrived else 0.0

    @property
    def day(self) -> int:
        """Current day number (1-based)."""
        return self.minute // MINUTES_PER_DAY + 1

    # ------------------------------------------------------------------ running
    def run(self, days: int | None = None) -> None:
        """Run to the end of ``days`` (default: all the model's days)."""
        end = MINUTES_PER_DAY * (self.days if days is None else min(days, self.days))
        while self.running and self.minute < end:
            self.step()

    def step(self) -> None:
        """Simulate one minute (Algorithm 1)."""
        t = self.minute
        day, now = t // MINUTES_PER_DAY + 1, t % MINUTES_PER_DAY
        if now == 0:
            self._start_day(day)
        requests = self._requests(t, day, now)
        if requests:
            results = self.brain.decide_all(requests, tags={"day": day, "minute": now})
            for result in results:
                self._apply(result, t, day, now)
        self.engine.step()
        self._mirror(t)
        if now % self.collect_every == 0 or t == self.days * MINUTES_PER_DAY - 1:
            self.datacollector.collect(self)
        self.minute = t + 1
        if self.minute >= self.days * MINUTES_PER_DAY:
            self.running = False

    def close(self) -> None:
        """Close the brain and the memory store."""
        self.brain.close()
        self.memory_store.close()

    # ------------------------------------------------------------------ day start
    def _start_day(self, day: int) -> None:
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
            drivers = sorted(
                (a for a in members if a.persona.licensed),
                key=lambda a: (
                    not a.today.workday,
                    -self._free_flow(
                        a.persona.home, a.persona.work_facility or a.persona.home
                    ),
                    a.name,
                ),
            )
            vehicles = max((a.persona.vehicles for a in members), default=0)
            with_car = [a.name for a in drivers[:vehicles]]
            for agent in members:
                agent.today.vehicle_available = agent.name in with_car
                agent.today.household_drivers = tuple(
                    n for n in with_car if n != agent.name
                )
            parents = sorted(
                (a for a in members if a.persona.children and a.today.workday),
                key=lambda a: a.name,
            )
            if len(parents) == 1:
                parents[0].today.school_duty = "both"
            elif len(parents) >= 2:
                parents[0].today.school_duty = "drop_off"
                parents[1].today.school_duty = "pick_up"

    def _free_flow(self, origin: str, destination: str, mode: str = "drive") -> float:
        return self.travel_times.get((origin, destination, mode), 0.0)

    def _free_flow_table(
        self,
    ) -> tuple[
        dict[tuple[str, str, str], float],
        dict[tuple[str, str, str], tuple[DirectedLink, ...]],
    ]:
        """Free-flow minutes and shortest paths by (origin, destination, mode) facility pairs."""
        router, table, routes = Router(self.engine.index), {}, {}
        for origin in self.facilities:
            for destination in self.facilities:
                for mode in MODES:
                    try:
                        links = router.path(origin, destination, mode)
                    except PathError:
                        continue
                    extra = 0.0
                    if mode == "transit":
                        extra = sum(
                            self.town.metro_lines[line].static_wait
                            for line in {link.line for link in links if link.line}
                        )
                    table[(origin, destination, mode)] = (
                        router.free_flow_time(links, mode) + extra
                    )
                    routes[(origin, destination, mode)] = tuple(links)
        return table, routes

    # ------------------------------------------------------------------ requests
    def _push(self, minute: float, name: str, purpose: str, payload: str = "") -> None:
        self._seq += 1
        heapq.heappush(self._wake, (minute, self._seq, name, purpose, payload))

    def _requests(self, t: int, day: int, now: int) -> list[DecisionRequest]:
        requests: list[DecisionRequest] = []
        if now == CHAT_MINUTE and self.chat_probability > 0:
            for agent in self.travellers.values():
                contacts = self._contacts(agent)
                if contacts and self.rng.random() < self.chat_probability:
                    requests.append(
                        DecisionRequest(
                            CHAT,
                            agent.name,
                            self._chat_context(agent, contacts, day, now),
                        )
                    )
        if now == PLAN_MINUTE:
            for agent in self.travellers.values():
                requests.append(
                    DecisionRequest(
                        DAILY_PLAN, agent.name, self._planning_context(agent, day, now)
                    )
                )
        if now == REFLECTION_MINUTE:
            for agent in self.travellers.values():
                requests.append(
                    DecisionRequest(
                        DAILY_REFLECTION,
                        agent.name,
                        self._reflection_context(agent, day),
                    )
                )
        requests.extend(self._revision_requests(t, now))
        return requests

    def _contacts(self, agent: TravellerAgent) -> dict[str, str]:
        contacts = {n: "family" for n in agent.persona.family if n in self.travellers}
        contacts.update(
            {
                n: "friend"
                for n in agent.persona.friends
                if n in self.travellers and n not in contacts
            }
        )
        return contacts

    def _recall_trips(self, agent: TravellerAgent, t: int) -> list[TripExperience]:
        persona = agent.persona
        keywords = ["trip", persona.home, persona.work_facility or ""]
        hits = agent.memory.retrieve(
            t, keywords=[k for k in keywords if k], k=20, node_types=["event"]
        )
        found = [parse_trip_memory(hit.node.content) for hit in hits]
        return sorted(
            (f for f in found if f is not None), key=lambda e: (e.day, e.departure)
        )

    def _recall_text(self, agent: TravellerAgent, t: int, text: str) -> list[str]:
        if not self._llm:
            return []
        hits = agent.memory.retrieve(
            t, text=text, k=6, node_types=["reflection", "chat", "plan"]
        )
        return [hit.node.content for hit in hits]

    def _plan_facts(
        self, agent: TravellerAgent, now: int, start_place: str
    ) -> PlanFacts:
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
        )

    def _events(self, t: int) -> list[str]:
        return [
            e.content
            for e in self.engine.announced_events(t, broadcast_only=True)
            if e.content
        ]

    def _planning_context(
        self, agent: TravellerAgent, day: int, now: int
    ) -> PlanningContext:
        t = self.minute
        date = self.start_date + dt.timedelta(days=day - 1)
        return PlanningContext(
            persona=agent.persona,
            day=day,
            date=date.isoformat(),
            weekday=date.strftime("%A"),
            workday=agent.today.workday,
            facts=self._plan_facts(agent, now, agent.end_place()),
            travel_times=self.travel_times,
            routes=self.routes,
            experiences=self._recall_trips(agent, t),
            school_duty=agent.today.school_duty,
            memories=self._recall_text(agent, t, "plan today travel lessons"),
            long_term_reflection=agent.long_term_reflection,
            chats=list(agent.today.chats),
            events=self._events(t),
        )

    def _chat_context(
        self, agent: TravellerAgent, contacts: dict[str, str], day: int, now: int
    ) -> ChatContext:
        return ChatContext(
            persona=agent.persona,
            day=day,
            now=now,
            contacts=contacts,
            used_topics={n: list(agent.used_topics.get(n, [])) for n in contacts},
            experiences=self._recall_trips(agent, self.minute),
            memories=self._recall_text(agent, self.minute, "family friends plans"),
        )

    def _reflection_context(self, agent: TravellerAgent, day: int) -> ReflectionContext:
        return ReflectionContext(
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

    def _congestion_lines(self, t: int) -> list[str]:
        if self._congestion_cache is None or self._congestion_cache[0] != t:
            frame = self.engine.congestion()
            lines = [
                f"{row.place}{'' if row.direction is None or pd.isna(row.direction) else f' dir {int(row.direction)}'}: "
                f"{row.label}, ~{row.wait_minutes:.0f} min wait"
                for row in frame.itertuples()
            ]
            self._congestion_cache = (t, lines)
        return self._congestion_cache[1]

    def _social(self, agent: TravellerAgent) -> list[str]:
        """Family members' and friends' states (perceived by LLM travellers only)."""
        if not self._llm:
            return []
        return [
            f"{name} ({relation}): {self.travellers[name].state} at {self.travellers[name].place}"
            for name, relation in self._contacts(agent).items()
        ]

    def _future(self, agent: TravellerAgent) -> list[Activity]:
        return [r.activity for r in agent.pending_trips()]

    def _revision_requests(self, t: int, now: int) -> list[DecisionRequest]:
        requests: list[DecisionRequest] = []
        seen: set[str] = set()
        while self._wake and self._wake[0][0] <= t:
            _, _, name, purpose, payload = heapq.heappop(self._wake)
            agent = self.travellers[name]
            if purpose != "check":  # leaving: mirror the agent from now on
                self._active.add(name)
            if name in seen or self.minute % MINUTES_PER_DAY in (
                CHAT_MINUTE,
                PLAN_MINUTE,
            ):
                continue
            pending = agent.pending_trips()
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
            facts = self._plan_facts(agent, now, agent.end_place())
            target = next((r for r in pending if r.planned_arrival is not None), None)
            context = RevisionContext(
                persona=agent.persona,
                situation=situation,
                social=self._social(agent),
                place=agent.place,
                facts=facts,
                future=[r.activity for r in pending],
                current=self._current_activity(agent),
                target_arrival=None
                if target is None
                else int(target.planned_arrival) % MINUTES_PER_DAY,
                target_place=None if target is None else target.destination,
                congestion=self._congestion_lines(t) if self._llm else [],
                events=self._events(t),
                memories=self._recall_text(agent, t, f"{agent.place} plan change"),
            )
            if self._llm:
                self._next_trip_paths(context, pending[0], t)
            requests.append(DecisionRequest(PLAN_REVISION, name, context))
        for name in sorted(self._active - seen):
            request = self._node_request(self.travellers[name], t, now)
            if request is not None:
                requests.append(request)
        return requests

    def _node_request(
        self, agent: TravellerAgent, t: int, now: int
    ) -> DecisionRequest | None:
        if agent.state != "driving":
            return None
        record = agent.current_trip()
        if (
            record is None
            or record.activity.mode != "drive"
            or agent.pending_reroute is not None
        ):
            return None
        trip = self.engine.trip(record.trip_id)
        if (
            trip.state is not TravelState.TRAVERSING
            or trip.link is None
            or trip.ready > t + 1e-9
            or not trip.remaining
        ):
            return None
        engine = self.engine
        waits = sum(engine.link_wait(link) for link in trip.remaining)
        if waits < NODE_REVISION_WAIT:
            return None
        node = trip.link.head
        try:
            alternative = engine.router.path(node, trip.destination_node, "drive")
        except PathError:
            return None
        remaining = [link.name for link in trip.remaining]
        fastest = sum(link.free_time + engine.link_wait(link) for link in alternative)
        other_paths = []
        if self._llm:  # a third path for the prompt, when not much slower
            other = alternative_path(
                engine.index, node, trip.destination_node, "drive",
                list(trip.remaining) + alternative, engine.router.extra_costs,
            )  # fmt: skip
            names = None if other is None else [link.name for link in other]
            if other is not None and names not in (
                remaining,
                [link.name for link in alternative],
            ):
                minutes = self._minutes_now(other, "drive", t)
                if minutes <= ALTERNATIVE_SLACK * fastest:
                    other_paths.append(RouteOption(tuple(names), minutes))
        target = record if record.planned_arrival is not None else None
        target = target or next(
            (r for r in agent.pending_trips() if r.planned_arrival is not None), None
        )
        context = RevisionContext(
            persona=agent.persona,
            situation="at_node",
            social=self._social(agent),
            place=node,
            facts=self._plan_facts(agent, now, record.destination),
            future=self._future(agent),
            destination=record.destination,
            remaining_path=remaining,
            remaining_minutes=sum(link.free_time for link in trip.remaining) + waits,
            alternative_path=[link.name for link in alternative],
            alternative_minutes=fastest,
            other_paths=other_paths,
            current=record.activity,
            target_arrival=None
            if target is None
            else int(target.planned_arrival) % MINUTES_PER_DAY,
            target_place=None if target is None else target.destination,
            congestion=self._congestion_lines(t) if self._llm else [],
            events=self._events(t),
            memories=self._recall_text(agent, t, f"congestion {node} route"),
        )
        return DecisionRequest(PLAN_REVISION, agent.name, context)

    def _current_activity(self, agent: TravellerAgent) -> Activity | None:
        """The activity of the trip last departed today (``None`` before the first)."""
        for record in reversed(agent.trips):
            if record.cancelled or math.isnan(record.departure):
                continue
            return record.activity if record.day == agent.today.day else None
        return None

    def _minutes_now(
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
        context.remaining_minutes = self._minutes_now(planned, mode, depart)
        if mode == "walk":
            return
        other = alternative_path(
            engine.index, origin, activity.facility, mode, planned,
            engine.router.extra_costs,
        )  # fmt: skip
        minutes = None if other is None else self._minutes_now(other, mode, depart)
        if (
            minutes is not None
            and minutes <= ALTERNATIVE_SLACK * context.remaining_minutes
        ):
            context.alternative_path = [link.name for link in other]
            context.alternative_minutes = minutes

    # ------------------------------------------------------------------ applying decisions
    def _apply(self, result: Any, t: int, day: int, now: int) -> None:
        agent = self.travellers[result.agent_id]
        context, output = result.request.context, result.output
        action = ""
        if result.is_kind(DAILY_PLAN) or result.is_kind(PLAN_REVISION):
            # what the plan validator found in the answers, whichever brain gave them
            self._issues.update(issue_rule(m) or "other" for m in result.domain_errors)
        if result.is_kind(DAILY_PLAN):
            action = (
                f"{len(output.activities)} activities by {output.activities[0].mode}"
            )
            self._adopt_plan(agent, output, t, day, now)
        elif result.is_kind(PLAN_REVISION):
            action = output.action
            self._revise(agent, context, output, t, now)
        elif result.is_kind(CHAT):
            action = f"{output.partner}: {output.topic}"
            self._chat(agent, output, t)
        elif result.is_kind(DAILY_REFLECTION):
            action = f"{len(output.reflections)} reflections"
            for concept in output.reflections:
                agent.memory.remember(
                    concept.content, node_type="reflection", importance=concept.importance,
                    now=t, keywords=concept.keywords,
                )  # fmt: skip
            if output.long_term_reflection:
                agent.long_term_reflection = output.long_term_reflection
        self._decisions.append(
            (
                day,
                now,
                agent.name,
                result.kind,
                str(result.outcome),
                action,
                result.reason,
            )
        )

    def _adopt_plan(
        self, agent: TravellerAgent, plan: Any, t: int, day: int, now: int
    ) -> None:
        agent.plan = plan
        agent.activities = list(plan.activities)
        agent.today.mode = plan.activities[0].mode
        if plan.long_term_reflection:
            agent.long_term_reflection = plan.long_term_reflection
        for concept in plan.concepts:
            agent.memory.remember(
                concept.content, node_type="plan", importance=concept.importance, now=t,
                keywords=concept.keywords,
            )  # fmt: skip
        self._record_plan(agent, day, now, "plan", agent.activities)
        self._schedule(agent, agent.activities, t, day)

    def _record_plan(
        self,
        agent: TravellerAgent,
        day: int,
        now: int,
        source: str,
        activities: Sequence[Activity],
    ) -> None:
        for position, a in enumerate(activities):
            self._plans.append(
                (day, now, agent.name, source, position, a.facility, a.departure_time, a.mode,
                 a.path if isinstance(a.path, str) else " ".join(a.path), a.reflect_every, a.description)
            )  # fmt: skip

    def _schedule(
        self, agent: TravellerAgent, activities: Sequence[Activity], t: int, day: int
    ) -> None:
        """Add engine trips for ``activities`` from where the agent will be."""
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
                self._issues["unschedulable"] += 1
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

    def _revise(
        self,
        agent: TravellerAgent,
        context: RevisionContext,
        out: Any,
        t: int,
        now: int,
    ) -> None:
        agent.revisions.append(
            PlanRevisionRecord(
                t, context.situation, context.place, out.action, out.reason
            )
        )
        self._revisions.append(
            (t // MINUTES_PER_DAY + 1, now, agent.name, context.situation,
             context.place, out.action, out.reason)
        )  # fmt: skip
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
        day = t // MINUTES_PER_DAY + 1
        self._withdraw(agent)
        done = len(agent.activities) - len(context.future)
        agent.activities = agent.activities[: max(done, 0)] + future
        self._record_plan(agent, day, now, "revision", future)
        self._schedule(agent, future, t, day)

    def _chat(self, agent: TravellerAgent, out: Any, t: int) -> None:
        partner = self.travellers[out.partner]
        for speaker, other in ((agent, partner), (partner, agent)):
            speaker.memory.remember(
                out.summary, node_type="chat", importance=out.importance, now=t,
                keywords=["chat", other.name, *out.topic.split()],
            )  # fmt: skip
            speaker.used_topics.setdefault(other.name, []).append(out.topic)
            speaker.today.chats.append(out.summary)

    # ------------------------------------------------------------------ engine hooks
    def _on_trip_complete(
        self, engine: TrafficEngine, trip: Any, node: str, when: float
    ) -> None:
        record = self._trip_records.get(trip.trip_id)
        if record is None:
            return
        record.departure, record.arrival, record.delay = (
            trip.departure,
            trip.arrival,
            trip.delay,
        )
        self._n_arrived += 1
        self._delay_sum += max(0.0, trip.delay)
        agent = self.travellers[str(trip.agent)]
        agent.pending_reroute = None
        experience = experience_of(record)
        late = experience.late or 0
        importance = min(1.0, 0.5 + experience.delay / 40 + late / 30)
        target = (
            None
            if record.planned_arrival is None
            else int(record.planned_arrival) % MINUTES_PER_DAY
        )
        agent.memory.remember(
            trip_memory_text(experience, target),
            node_type="event",
            importance=importance,
            now=when,
            keywords=["trip", record.origin, record.destination, record.activity.mode,
                      "late" if late else "on time"],
            spatial_scope=[record.origin, record.destination, *trip.path],
            temporal_scope=(trip.departure, trip.arrival),
        )  # fmt: skip

    def _on_node_arrival(
        self, engine: TrafficEngine, trip: Any, node: str, when: float
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

    def _interrupt(self, agent: TravellerAgent, trip: Any, node: str) -> bool:
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
        agent.revisions.append(
            PlanRevisionRecord(t, "en_route", node, "interrupt", reason)
        )
        self._revisions.append(
            (t // MINUTES_PER_DAY + 1, t % MINUTES_PER_DAY, agent.name, "en_route",
             node, "interrupt", reason)
        )  # fmt: skip
        return True

    # ------------------------------------------------------------------ mirroring
    def _mirror(self, t: int) -> None:
        in_progress = 0
        for name in sorted(self._active):
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
                self._moves.append((t, name, agent.state, agent.place))
            if record is not None:
                in_progress += 1
            elif agent.state == "staying":
                self._active.discard(name)
                self._schedule_check(agent, t, arrived=True)
        self._in_progress = in_progress

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

    # ------------------------------------------------------------------ outputs
    def trips_frame(self) -> pd.DataFrame:
        """One row per trip (the engine's trips table) with day and lateness."""
        frame = self.engine.trips_frame()
        frame = frame[frame["state"] != "cancelled"].reset_index(drop=True)
        frame["day"] = (frame["planned_departure"] // MINUTES_PER_DAY + 1).astype(int)
        # late at the door that lets them in (empty if a full facility never did)
        to_facility = frame["destination"].isin(self.facilities)
        at_door = frame["admitted"].where(to_facility, frame["arrival"])
        frame["late"] = (at_door - frame["planned_arrival"]).clip(lower=0)
        return frame

    def link_states_frame(self) -> pd.DataFrame:
        """The engine's per-step link table."""
        return self.engine.link_states_frame()

    def decisions_frame(self) -> pd.DataFrame:
        """One row per decision: day, minute, agent, kind, outcome, action, reason."""
        return pd.DataFrame(
            self._decisions,
            columns=["day", "minute", "agent", "kind", "outcome", "action", "reason"],
        )

    def plans_frame(self) -> pd.DataFrame:
        """One row per planned activity of every plan and revision."""
        return pd.DataFrame(
            self._plans,
            columns=["day", "minute", "agent", "source", "position", "facility", "departure_time",
                     "mode", "path", "reflect_every", "description"],
        )  # fmt: skip

    def revisions_frame(self) -> pd.DataFrame:
        """One row per plan revision: day, minute, agent, situation, place, action, reason.

        Interrupted travels (situation ``"en_route"``, action ``"interrupt"``) are rows too,
        although no brain decided them.
        """
        return pd.DataFrame(
            self._revisions,
            columns=[
                "day",
                "minute",
                "agent",
                "situation",
                "place",
                "action",
                "reason",
            ],
        )

    def positions_frame(self) -> pd.DataFrame:
        """Where travellers are: one row per change of a traveller's state or place.

        Columns: time (absolute minute, the step after which the traveller is there), day,
        agent, state, place (facility, node or link: the cell key). Every traveller has a row
        at time 0 (at home, staying); its place at minute ``m`` is its last row at or before
        ``m``.
        """
        frame = pd.DataFrame(self._moves, columns=["time", "agent", "state", "place"])
        frame.insert(1, "day", (frame["time"] // MINUTES_PER_DAY + 1).astype(int))
        return frame

    def memories_frame(self) -> pd.DataFrame:
        """One row per memory of every traveller (live, not yet pruned)."""
        rows = [
            (
                name,
                node.id,
                str(node.type),
                node.content,
                node.importance,
                node.created,
                node.expiration,
            )
            for name, agent in self.travellers.items()
            for node in agent.memory.nodes()
        ]
        return pd.DataFrame(
            rows,
            columns=[
                "agent",
                "node_id",
                "type",
                "content",
                "importance",
                "created",
                "expiration",
            ],
        )

    def commute_frame(self) -> pd.DataFrame:
        """Per-day commute to work: departure, lead, punctuality and delay.

        Columns: day, commuters, mean_departure (minute of the day), mean_lead (minutes between
        leaving and the work start), late_share, mean_late, mean_delay, mean_departure_hhmm.
        """
        trips = self.trips_frame()
        work = trips[trips["planned_arrival"].notna() & trips["arrival"].notna()]
        if work.empty:
            return pd.DataFrame(
                columns=[
                    "day",
                    "commuters",
                    "mean_departure",
                    "mean_lead",
                    "late_share",
                    "mean_late",
                    "mean_delay",
                ]
            )
        work = work.assign(lead=work["planned_arrival"] - work["departure"])
        grouped = work.assign(
            dep=work["departure"] % MINUTES_PER_DAY, is_late=~(work["late"] <= 0)
        ).groupby("day")
        frame = grouped.agg(
            commuters=("agent", "count"),
            mean_departure=("dep", "mean"),
            mean_lead=("lead", "mean"),
            late_share=("is_late", "mean"),
            mean_late=("late", "mean"),
            mean_delay=("delay", "mean"),
        ).reset_index()
        frame["mean_departure_hhmm"] = frame["mean_departure"].map(format_hhmm)
        return frame

    def departure_histogram(
        self, bin_minutes: int = 10, *, commute_only: bool = True
    ) -> pd.DataFrame:
        """Departures per time bin and day (peak spreading): rows ``"HH:MM"`` bins, columns days.

        Args:
            bin_minutes: Bin width in minutes.
            commute_only: Count only trips with a target arrival (the commute to work).
        """
        trips = self.trips_frame()
        trips = trips[trips["departure"].notna()]
        if commute_only:
            trips = trips[trips["planned_arrival"].notna()]
        bins = (trips["departure"] % MINUTES_PER_DAY) // bin_minutes * bin_minutes
        table = (
            trips.assign(bin=bins.astype(int))
            .groupby(["bin", "day"])
            .size()
            .unstack("day", fill_value=0)
            .sort_index()
        )
        table.index = [format_hhmm(minute) for minute in table.index]
        table.index.name = "departure"
        return table

    def summary(self) -> dict[str, Any]:
        """Run KPIs: trips, delay, punctuality, mode shares, decisions, LLM use, plan errors.

        ``interruptions`` counts the travels given up for the next activity (see
        :meth:`revisions_frame`, action ``"interrupt"``).
        """
        trips = self.trips_frame()
        done = trips[trips["arrival"].notna()]
        targeted = done[done["planned_arrival"].notna()]
        ledger = getattr(self.brain, "ledger", None)
        decisions = self.decisions_frame()
        return {
            "trips": len(trips),
            "completed": len(done),
            "mean_delay": float(done["delay"].mean()) if len(done) else math.nan,
            "punctuality": float((targeted["late"] <= 0).mean())
            if len(targeted)
            else math.nan,
            "mode_shares": done["mode"].value_counts(normalize=True).to_dict(),
            "decisions": decisions.groupby(["kind", "outcome"]).size().to_dict()
            if len(decisions)
            else {},
            "llm": ledger.summary() if ledger is not None else pd.DataFrame(),
            "plan_errors": dict(self._issues),
            "interruptions": sum(1 for row in self._revisions if row[5] == "interrupt"),
        }
