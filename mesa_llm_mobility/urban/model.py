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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

import mesa
import numpy as np
import pandas as pd

from mesa_llm_mobility.cognition import Brain, DecisionRequest
from mesa_llm_mobility.cognition.kinds import DecisionKind, DecisionResult, dispatch
from mesa_llm_mobility.cognition.settings import (
    BrainOptions,
    environment_options,
    parse_brain_setting,
)
from mesa_llm_mobility.experiment.base_model import MobilityModel, Progress
from mesa_llm_mobility.experiment.run_directory import RunDirectory, RunDirectoryError
from mesa_llm_mobility.memory import MemoryStore
from mesa_llm_mobility.urban import outputs, run_files
from mesa_llm_mobility.urban.agents import (
    DayState,
    TravellerAgent,
    TripRecord,
    personas_from_population,
)
from mesa_llm_mobility.urban.cities.load import check_network_load
from mesa_llm_mobility.urban.cities.population import (
    city_population,
    is_city,
    people_for_travellers,
)
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, format_hhmm
from mesa_llm_mobility.urban.contexts import WorldView
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
from mesa_llm_mobility.urban.free_flow import FreeFlowTable, free_flow_table
from mesa_llm_mobility.urban.itinerary import (
    PLAN_MINUTE,
    REFLECTION_MINUTE,
    Itinerary,
    is_day_phase,
)
from mesa_llm_mobility.urban.network_space import build_network_space
from mesa_llm_mobility.urban.outputs import UrbanSummary
from mesa_llm_mobility.urban.parameters import TRIP_IMPORTANCE_MODES, UrbanParameters
from mesa_llm_mobility.urban.plans import DailyPlan, issue_rule
from mesa_llm_mobility.urban.scenario import Event, Scenario, load_scenario
from mesa_llm_mobility.urban.synthesis import REFERENCE_SIZE, synthesize_population
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


SYNTHETIC_POPULATION = "synthetic"
"""``population=`` value that synthesises the residents for the scenario (rule sampler)."""
DEFAULT_POPULATION = "population_70"
"""The bundled population of the reference town (synthesised instead on an imported city)."""


def _load_population(
    population: str | Path | Population | Sequence[PersonaFacts],
    scenario: Scenario,
    n_agents: int | None,
    rng: np.random.Generator | None,
) -> Population | Sequence[PersonaFacts]:
    """The population asked for; ``"synthetic"`` (or the default on a city) is synthesised.

    Synthesis draws enough people for ``n_agents`` travellers (GATSim's 70 per 60; 70 without
    ``n_agents``) and, on an imported city, places them on its homes and workplaces.
    """
    if not isinstance(population, str | Path):
        return population
    name = str(population)
    city = is_city(scenario)
    if name == SYNTHETIC_POPULATION or (name == DEFAULT_POPULATION and city):
        people = REFERENCE_SIZE if n_agents is None else people_for_travellers(n_agents)
        if city:
            return city_population(scenario, people, rng)
        return synthesize_population(people, rng, scenario)
    from mesa_llm_mobility.urban import population as population_module  # noqa: PLC0415

    return population_module.load_population(name, scenario)


def _uses_llm(brain: object) -> bool:
    return isinstance(brain, str) and parse_brain_setting(brain)[0] == "llm"


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
        parameters: The run's :class:`~.parameters.UrbanParameters` (default: all defaults).
            ``scenario`` may be a loaded :class:`Scenario`, ``population`` a ``Population``
            or a list of :class:`PersonaFacts`, ``events`` a list of :class:`Event` and
            ``brain`` a :class:`Brain`.
        brain_options: Further :func:`make_brain` arguments (``api_base``, ...).
        rng: Seed or generator (a seed overrides the ``seed`` parameter).
        run_dir: Directory for a persistent memory store (``None``: in memory).
        **overrides: Parameter values by name (``days=2, n_agents=20``).

    With ``trip_importance="creation"`` (the paper's) an LLM traveller scores its trip
    memories on arrival, one ``TripImportance`` decision per traveller and minute of arrivals,
    batched with the minute's others; rule travellers keep the formula
    (:func:`~.decisions.trip_importance.formula_importance`) either way. With
    ``reaction_minutes=d`` a revision asked at minute ``t`` is applied at ``t + d`` while the
    traffic moves on (:mod:`~mesa_llm_mobility.urban.decision_schedule`). With ``tools`` an
    LLM traveller may call up to :data:`~.tools.MAX_TOOL_CALLS` tools before planning and
    before reconsidering en route (one ``TravelQuery`` decision each).

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

    parameters_class: ClassVar[type[UrbanParameters]] = UrbanParameters
    parameters: UrbanParameters
    time_columns: ClassVar[tuple[str, ...]] = ("day", "minute")
    decision_columns: ClassVar[tuple[str, ...]] = ("action",)
    checkpoint_unit: ClassVar[str] = "day"

    def __init__(
        self,
        parameters: UrbanParameters | None = None,
        /,
        *,
        brain_options: BrainOptions | None = None,
        rng: int | np.random.Generator | None = None,
        run_dir: str | Path | None = None,
        **overrides: Any,
    ) -> None:
        super().__init__(parameters, brain_options=brain_options, rng=rng, **overrides)
        p = self.parameters
        scenario = p.scenario
        town = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        if p.events is False:
            town = dataclasses.replace(town, events=())
        elif p.events is not True:
            town = dataclasses.replace(town, events=tuple(p.events))
        self.trip_importance = p.trip_importance
        self.town = town
        self.days = p.days
        self.start_date = dt.date.fromisoformat(p.start_date)
        self.chat_probability = p.chat_probability
        self.daytime_chat_probability = p.daytime_chat_probability
        self.conversations: list[Conversation] = []
        tools, embedding, n_agents = p.tools, p.embedding, p.n_agents
        self.tools = bool(tools)
        self.tool_calls: list[ToolCallRecord] = []
        self.collect_every = p.collect_every
        self.reactions = ReactionSchedule(p.reaction_minutes)
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
        # Deferred writes: no traveller costs a Chroma collection (an index of about 2.6 MB);
        # a persistent store keeps the memories in one file at each checkpoint, an ephemeral
        # one in memory, and vector queries scan each traveller's own vectors.
        self.memory_store.defer_writes = True
        self.facilities = frozenset(town.facilities)
        free_flow = FreeFlowTable(self.engine.index, town, self.facilities)
        self.travel_times, self.routes = free_flow.times, free_flow.routes

        loaded = _load_population(p.population, town, p.n_agents, self.rng)
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
        check_network_load(town, len(self.travellers), self.engine.index)
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

    # ------------------------------------------------------------------ run contract
    @classmethod
    def load_inputs(cls, parameters: UrbanParameters) -> None:
        """Load the scenario and a population file once, so a bad file writes nothing.

        A population to synthesise is synthesised by the model itself (from its generator).
        """
        scenario = parameters.scenario
        town = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        population = parameters.population
        synthesised = population == SYNTHETIC_POPULATION or (
            population == DEFAULT_POPULATION and is_city(town)
        )
        if isinstance(population, str | Path) and not synthesised:
            _load_population(population, town, parameters.n_agents, None)

    @classmethod
    def for_run(
        cls,
        parameters: UrbanParameters,
        run: RunDirectory,
        inputs: Any,
        brain_options: BrainOptions,
        **options: Any,
    ) -> Self:
        """The model of a run, its memory store under the run directory."""
        model = cls(
            parameters, brain_options=brain_options, run_dir=run.path, **options
        )
        run.update_metadata({"memory": model.memory_store.run_metadata()})
        return model

    def progress(self) -> Progress:
        """Simulated minutes of all the days."""
        return Progress(self.minute, self.days * MINUTES_PER_DAY, "min")

    def progress_status(self) -> dict[str, Any]:
        """The day, the clock and the trips under way, once an hour."""
        if self.minute % 60:
            return {}
        return {
            "day": self.day,
            "clock": format_hhmm(self.minute),
            "trips": self.trips_in_progress,
        }

    def checkpoint_due(self) -> bool:
        """At the end of each day."""
        return self.minute % MINUTES_PER_DAY == 0

    def checkpoint_number(self) -> int:
        """Days completed."""
        return self.minute // MINUTES_PER_DAY

    def checkpoint_state(self) -> dict[str, Any]:
        """The model, without the link rows of the days written (they are in the tables)."""
        self.engine.link_history_stored_until = float(self.minute)
        return {"model": self}

    def period_tables(self) -> dict[str, pd.DataFrame]:
        """The day's part of each of :data:`~.run_files.DAY_TABLES`."""
        return run_files.day_tables(self, self.checkpoint_number())

    def final_tables(self) -> dict[str, pd.DataFrame]:
        """The memories of every traveller at the end."""
        return {"memories": self.memories_frame()}

    def write_outputs(self, run: RunDirectory) -> list[Path]:
        """The paper's plots and ``summary.json``."""
        figures = run_files.write_plots(run, self)
        run_files.write_summary(run, run_files.run_summary(run, self))
        return figures

    def summary_lines(self, run: RunDirectory) -> list[str]:
        """The per-day table, the summary and the embedding used."""
        with pd.option_context("display.width", 160):
            daily = run_files.daily_table(run.read_table("trips")).to_string(
                index=False
            )
        lines = [daily, "", *run_files.summary_lines(run_files.run_summary(run, self))]
        embedding = run.metadata.get("extra", {}).get("memory", {}).get("embedding")
        if embedding:
            lines.append(f"embedding: {embedding['name']} ({embedding['backend']})")
        return lines

    def memory_embedding(self) -> str:
        """The run's embedding setting."""
        return self.parameters.embedding

    @classmethod
    def ledger_after(cls, number: int) -> Callable[[Mapping[str, Any]], bool]:
        """The records of the days after day ``number``."""
        return lambda record: int((record.get("tags") or {}).get("day", 0)) > number

    @classmethod
    def prepare(
        cls, parameters: UrbanParameters, brain_options: BrainOptions, where: str
    ) -> tuple[UrbanParameters, BrainOptions]:
        """An LLM run's tool calling: its parameter's, else the options', else the environment's.

        A run keeps the tool calling it started with.

        Raises:
            ValueError: Naming ``where`` when the options ask for another one than the run's.
        """
        if not _uses_llm(parameters.brain):
            return parameters, brain_options
        saved, given = parameters.tool_calling, brain_options.get("tool_calling")
        if saved is not None and given is not None and given != saved:
            raise ValueError(
                f"{where}: tool_calling is {saved!r}, the brain options ask for {given!r}; "
                "a run keeps the tool calling it was started with"
            )
        choice = saved or given or environment_options().get("tool_calling") or "auto"
        parameters = parameters.replace(tool_calling=choice)
        return parameters, BrainOptions(**{**brain_options, "tool_calling": choice})

    def restore(
        self,
        run: RunDirectory,
        number: int,
        memory_store: MemoryStore | None,
        brain_options: BrainOptions,
        **options: Any,
    ) -> None:
        """The link rows of the days written, the memory store and the brain back."""
        if memory_store is None:
            raise RunDirectoryError(
                f"{run.checkpoints_dir}: checkpoint {number} has no memory snapshot"
            )
        run_files.restore_link_history(run, self, number)
        self.attach(self.parameters.brain, memory_store, brain_options)

    def apply_parameters(self, parameters: UrbanParameters) -> None:
        """More (or fewer) days; the scenario's events on or off from now on."""
        if parameters.events != self.parameters.events:
            events = (
                load_scenario(parameters.scenario).events if parameters.events else ()
            )
            self.replace_events(events)
        self.days = parameters.days
        if self.minute < self.days * MINUTES_PER_DAY:
            self.running = True
        super().apply_parameters(parameters)

    @classmethod
    def check_fork(cls, parameters: UrbanParameters, number: int) -> None:
        """A fork's days reach at least past its checkpoint's day."""
        if parameters.days < max(number, 1):
            raise ValueError(
                f"days={parameters.days} is before the checkpoint of day {number}"
            )

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
        staying, approaching = self.itinerary.revision_opportunities(t)
        talked = hold_conversations(self, chat_openings(self, t, staying), t, time)
        requests = self._requests(t, staying, approaching, talked)
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
        approaching: Sequence[TravellerAgent],
        talked: set[str] = frozenset(),  # type: ignore[assignment]
    ) -> list[DecisionRequest[Any, Any]]:
        """Every decision request of minute ``t`` after its conversations, as the travellers state them.

        ``staying``: the staying travellers' revision opportunities. ``approaching``: travellers
        under way about to reach a node; each asks the en-route rule
        (:meth:`~.agents.TravellerAgent.node_revision_context`). ``talked``: travellers whose
        plans a daytime agreement changed; those not already reconsidering now get a
        ``"during_activity"`` revision, and none of them reconsiders en route this minute.
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
        for agent in approaching:
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
