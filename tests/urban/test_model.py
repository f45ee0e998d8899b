from __future__ import annotations

import dataclasses
import itertools
import json
import math

import mesa
import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.cognition import DecisionResult, RuleBrain
from mesa_llm_mobility.cognition.testing import FakeLLMServer, Fault, json_content
from mesa_llm_mobility.urban.clock import format_hhmm, parse_hhmm
from mesa_llm_mobility.urban.decisions import PersonaFacts, PlanRevisionOutput
from mesa_llm_mobility.urban.model import UrbanMobilityModel, scale_personas
from mesa_llm_mobility.urban.network_space import cell_of
from mesa_llm_mobility.urban.plans import Activity, DailyPlan
from mesa_llm_mobility.urban.routing import NetworkIndex, Router
from mesa_llm_mobility.urban.scenario import load_scenario

from .conftest import town_personas


def small_model(n: int = 12, seed: int = 5, **kw) -> UrbanMobilityModel:
    return UrbanMobilityModel(
        population=town_personas(), n_agents=n, days=1, rng=seed, **kw
    )


def test_scale_personas_subsamples_and_replicates_households():
    personas = town_personas()
    fewer = scale_personas(personas, 10, np.random.default_rng(0))
    names = {p.name for p in fewer}
    assert len(fewer) == 10 and all(set(p.family) <= names for p in fewer)
    more = scale_personas(personas, 150, np.random.default_rng(0))
    assert len(more) == 150 and len({p.name for p in more}) == 150
    copy = next(p for p in more if p.name == "Person 30-0 #2")
    assert copy.family == ("Person 30-1 #2",) and copy.household == "H30 #2"


def test_one_day_is_deterministic_for_a_seed():
    first, second = small_model(), small_model()
    first.run()
    second.run()
    pd.testing.assert_frame_equal(first.trips_frame(), second.trips_frame())
    pd.testing.assert_frame_equal(first.decisions_frame(), second.decisions_frame())
    trips = first.trips_frame()
    assert trips["arrival"].notna().all() and len(trips) >= 2 * 12
    summary = first.summary()
    assert summary["plan_errors"] == {}
    assert summary["completed"] == len(trips)
    assert not first.running


def test_cells_always_match_engine_locations():
    model = small_model(n=14, seed=2)
    seen_states = set()
    while model.running:
        model.step()
        for name, agent in model.travellers.items():
            location = model.engine.location(name)
            assert agent.cell is cell_of(model.space, location), (
                model.minute,
                name,
                location,
            )
            seen_states.add(agent.state)
    assert {"staying", "driving"} <= seen_states


def test_outputs_and_memories():
    model = small_model(n=8, seed=3, chat_probability=1.0)
    model.run()
    decisions = model.decisions_frame()
    assert set(decisions["kind"]) >= {
        "Chat",
        "DailyPlan",
        "DailyReflection",
        "PlanRevision",
    }
    plans = model.plans_frame()
    assert set(plans.groupby("agent")["facility"].last()) <= {
        "Uptown apartment",
        "Midtown apartment",
    }
    memories = model.memories_frame()
    assert set(memories["type"]) >= {"event", "chat", "reflection"}
    chats = memories[memories["type"] == "chat"]
    assert chats["content"].duplicated(keep=False).all()  # stored in both memories
    collected = model.datacollector.get_model_vars_dataframe()
    assert collected["arrived"].iloc[-1] == len(model.trips_frame())
    agents = model.datacollector.get_agent_vars_dataframe()
    assert {"state", "cell"} <= set(agents.columns)
    assert len(model.link_states_frame()) > 0


def test_batch_run_over_two_parameters():
    results = mesa.batch_run(
        UrbanMobilityModel,
        parameters={
            "population": [town_personas()],
            "n_agents": [4, 6],
            "chat_probability": [0.0, 0.5],
        },
        rng=[0],
        max_steps=600,
        number_processes=1,
        display_progress=False,
    )
    frame = pd.DataFrame(results)
    assert set(zip(frame["n_agents"], frame["chat_probability"], strict=True)) == {
        (4, 0.0), (4, 0.5), (6, 0.0), (6, 0.5)
    }  # fmt: skip
    # collected every 15 minutes: the last collection of 600 steps is minute 585
    assert (frame.groupby(["n_agents", "chat_probability"])["Step"].max() >= 585).all()
    assert {"state", "cell", "arrived", "mean_delay"} <= set(frame.columns)


def _persona(name, work, licensed=True, home="Uptown apartment"):
    return PersonaFacts(
        name=name, home=home, work_facility=work, work_start=480 if work else None,
        work_end=1020 if work else None, licensed=licensed, household=name, vehicles=1 if licensed else 0,
    )  # fmt: skip


def _respond(body):
    system = body["messages"][0]["content"]
    name = system.split("You are ", 1)[1].split(",", 1)[0]
    prompt = body["messages"][1]["content"]
    repair = body["messages"][-1]["content"].startswith("Your previous answer")
    if "Plan today" in prompt:
        home = {"activities": [], "long_term_reflection": "new week", "concepts": []}
        work = {
            "facility": "Office",
            "departure_time": "07:00",
            "mode": "drive",
            "reflect_every": 150,
        }
        back = {
            "facility": "Uptown apartment",
            "departure_time": "17:00",
            "mode": "drive",
        }
        if name == "Alice":  # malformed first, valid on repair
            return (
                json_content({**home, "activities": [work, back]})
                if repair
                else Fault.malformed_json()
            )
        if name == "Bob":  # forgets to return home, fixes it on repair
            activities = [work, back] if repair else [work]
            concepts = [{"content": "Leave by 7 to beat traffic", "importance": 0.7}]
            return json_content(
                {**home, "activities": activities, "concepts": concepts}
            )
        return json_content(
            {**home, "activities": [work, back]}
        )  # Carol cannot drive: fallback
    if "Choose action" in prompt:
        return json_content({"action": "keep", "reason": "fine"})
    if "is over" in prompt:
        return json_content({"reflections": [{"content": f"{name} had a fine day", "importance": 0.4}],
                             "long_term_reflection": "steady"})  # fmt: skip
    if "Rate how much each trip matters" in prompt:  # one trip arrives at a time here
        return json_content({"importance": [0.5]})
    return Fault.schema_violation()


def test_llm_brain_day_with_malformed_and_invalid_plans():
    personas = [
        _persona("Alice", "Office"),
        _persona("Bob", "Office"),
        _persona("Carol", None, licensed=False),
    ]
    with FakeLLMServer(_respond) as server:
        model = UrbanMobilityModel(
            population=personas, days=1, rng=0, chat_probability=0.0,
            brain="llm:openai/fake-model",
            brain_options={"api_base": server.api_base, "api_key": "sk-fake", "timeout_s": 10, "max_attempts": 1},
        )  # fmt: skip
        model.run()
        model.close()
    decisions = model.decisions_frame()
    plans = decisions[decisions["kind"] == "DailyPlan"].set_index("agent_id")["outcome"]
    assert plans.to_dict() == {
        "Alice": "repaired",
        "Bob": "repaired",
        "Carol": "fallback",
    }
    assert (decisions[decisions["kind"] != "DailyPlan"]["outcome"] == "ok").all()
    summary = model.summary()
    assert (
        summary["plan_errors"]["home"] >= 1 and summary["plan_errors"]["vehicle"] >= 1
    )
    assert summary["llm"].loc["all", "decisions"] == len(decisions)
    trips = model.trips_frame()
    assert set(trips["agent"]) >= {"Alice", "Bob"} and trips["arrival"].notna().all()
    assert set(trips[trips["agent"] == "Carol"]["mode"]) <= {"transit", "walk"}
    memories = model.memories_frame()
    assert "Leave by 7 to beat traffic" in set(memories["content"])
    assert model.travellers["Bob"].long_term_reflection == "steady"


@pytest.mark.slow
def test_three_days_reproduce_the_macro_pattern():
    model = UrbanMobilityModel(
        population=town_personas(), days=3, rng=1, collect_every=60
    )
    model.run()
    commute = model.commute_frame().set_index("day")
    day1, day3 = commute.loc[1], commute.loc[3]
    assert (
        "07:15" <= day1["mean_departure_hhmm"] <= "07:30"
    )  # free-flow expectations on day 1
    assert day1["late_share"] > 0.4  # congestion makes many late
    assert day3["mean_departure"] < day1["mean_departure"] - 5  # peak spreading earlier
    assert day3["late_share"] < day1["late_share"]  # punctuality rises
    histogram = model.departure_histogram(10)
    assert list(histogram.columns) == [1, 2, 3]
    assert (histogram.sum() == commute["commuters"]).all()
    assert (
        histogram.loc[:"06:50", 3].sum() > histogram.loc[:"06:50", 1].sum()
    )  # earlier peak
    rerouted = [  # en-route path decisions at nodes were applied by the engine
        record
        for agent in model.travellers.values()
        for record in agent.trips
        if record.activity.path == "shortest"
        and model.engine.trip(record.trip_id).route == "explicit"
    ]
    new_paths = model.decisions_frame().query("action == 'new_path'")
    assert 0 < len(rerouted) <= len(new_paths)
    assert math.isfinite(model.summary()["mean_delay"])
    json.dumps(model.summary()["plan_errors"])


def test_default_population_and_events_off():
    model = UrbanMobilityModel(n_agents=20, days=1, rng=4, events=False)
    assert len(model.travellers) == 20 and model.town.events == ()
    model.run()
    trips = model.trips_frame()
    assert trips["arrival"].notna().all()
    assert set(trips["agent"]) <= set(model.travellers)
    parents = [
        a for a in model.travellers.values() if a.persona.children and a.today.workday
    ]
    for parent in parents:  # school runs are shared out among working parents
        assert parent.today.school_duty in ("drop_off", "pick_up", "both")


def test_work_is_reconsidered_every_150_minutes():
    model = small_model(n=6, seed=1)
    model.run()
    decisions = model.decisions_frame()
    assert (decisions["kind"] == "PlanRevision").any()
    checked = 0
    for agent in model.travellers.values():
        at_work = [
            r.minute
            for r in agent.revisions
            if r.situation == "during_activity"
            and r.place == agent.persona.work_facility
        ]
        checked += len(at_work)
        assert all(b - a == 150 for a, b in itertools.pairwise(at_work))
    assert checked > 0


def test_persistent_memory_under_run_dir(tmp_path):
    model = small_model(n=3, seed=0, run_dir=tmp_path)
    model.run()
    stored = len(model.memories_frame())
    model.close()
    assert stored > 0 and (tmp_path / "memory" / "memory.json").exists()


class ScriptedRevisions(RuleBrain):
    """Rule answers, except: leave home 20 min later, then go to the Gym after work."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.delayed: dict[str, int] = {}
        self.replaced: set[str] = set()
        self.pathed: dict[str, list[str]] = {}
        self.router = Router(NetworkIndex(load_scenario("nguyen_dupuis")))

    def _script(self, agent, ctx):
        leaving_work = (
            ctx.situation == "end_of_activity"
            and ctx.place == ctx.persona.work_facility
        )
        if leaving_work and agent not in self.replaced and agent not in self.pathed:
            mode = ctx.facts.day_mode
            links = [
                link.name
                for link in self.router.path(ctx.place, ctx.future[0].facility, mode)
            ]
            self.pathed[agent] = links
            return PlanRevisionOutput(action="new_path", new_path=links)
        if (
            ctx.situation == "end_of_activity"
            and agent not in self.delayed
            and ctx.place == ctx.persona.home
        ):
            self.delayed[agent] = ctx.facts.now + 20
            return PlanRevisionOutput(
                action="new_departure_time",
                new_departure_time=format_hhmm(ctx.facts.now + 20),
            )
        if (
            ctx.situation == "during_activity"
            and agent not in self.replaced
            and ctx.place == ctx.persona.work_facility
        ):
            self.replaced.add(agent)
            mode = ctx.facts.day_mode
            # a parent fetching the children keeps the pick-up (else: a duty error)
            pick_up = any(d.kind == "pick_up" for d in ctx.facts.duties)
            school = [Activity(facility="School", departure_time="17:00", mode=mode)]
            return PlanRevisionOutput(
                action="replace_activities",
                activities=[
                    *(school if pick_up else []),
                    Activity(
                        facility="Gym",
                        departure_time="17:20" if pick_up else "17:00",
                        mode=mode,
                    ),
                    Activity(
                        facility=ctx.persona.home, departure_time="18:30", mode=mode
                    ),
                ],
            )
        return None

    def decide_all(self, requests, *, tags=None):
        results = []
        for result in super().decide_all(requests, tags=tags):
            ctx = result.request.context
            out = (
                self._script(result.agent_id, ctx)
                if result.kind == "PlanRevision"
                else None
            )
            if out is not None:
                assert result.request.kind.validate(ctx, out) == []
                result = DecisionResult(result.request, out, result.outcome)
            results.append(result)
        return results


def test_revisions_change_departures_and_replace_activities():
    brain = ScriptedRevisions()
    model = UrbanMobilityModel(
        population=town_personas(), n_agents=5, days=1, rng=3, brain=brain
    )
    model.run()
    trips = model.trips_frame()
    assert brain.delayed and brain.replaced
    for name, minute in brain.delayed.items():
        first = trips[trips["agent"] == name].iloc[0]
        assert first["planned_departure"] == minute and first["departure"] == minute
    for name in brain.replaced:
        visits = list(trips[trips["agent"] == name]["destination"])
        home = model.travellers[name].persona.home
        assert visits[-2:] == ["Gym", home]
        assert [a.facility for a in model.travellers[name].activities][-2:] == [
            "Gym",
            home,
        ]
    assert set(model.decisions_frame()["action"]) >= {
        "new_departure_time",
        "replace_activities",
    }
    assert (model.plans_frame()["source"] == "revision").any()


def test_llm_brain_that_never_answers_well_falls_back_and_the_day_completes():
    alice, bob = _persona("Alice", "Office"), _persona("Bob", "Factory")
    personas = [dataclasses.replace(alice, friends=("Bob",)), bob]
    with FakeLLMServer(lambda body: Fault.schema_violation()) as server:
        model = UrbanMobilityModel(
            population=personas, days=1, rng=0, chat_probability=1.0,
            brain="llm:openai/fake-model",
            brain_options={"api_base": server.api_base, "api_key": "sk-fake", "timeout_s": 10,
                           "max_attempts": 1, "max_repairs": 1},
        )  # fmt: skip
        model.run()
        model.close()
    decisions = model.decisions_frame()
    assert (decisions["outcome"] == "fallback").all()
    assert set(decisions["kind"]) >= {
        "Chat",
        "DailyPlan",
        "DailyReflection",
        "PlanRevision",
    }
    assert decisions["reason"].str.contains("no valid answer").all()
    assert model.trips_frame()["arrival"].notna().all() and not model.running


def test_positions_replay_every_cell_and_revisions_keep_their_reasons():
    model = small_model(n=10, seed=4)
    expected: dict[int, dict[str, str]] = {}
    while model.running:
        model.step()
        if model.minute % 97 == 0:
            expected[model.minute - 1] = {
                name: agent.place for name, agent in model.travellers.items()
            }
    moves = model.positions_frame()
    assert list(moves.columns) == ["time", "day", "agent", "state", "place"]
    assert set(moves[moves["time"] == 0]["agent"]) == set(model.travellers)
    for minute, places in expected.items():
        last = moves[moves["time"] <= minute].groupby("agent").last()
        assert last["place"].to_dict() == places, minute
    assert {"driving", "staying"} <= set(moves["state"])

    revisions = model.revisions_frame()
    decided = model.decisions_frame()
    assert len(revisions) == (decided["kind"] == "PlanRevision").sum() > 0
    assert revisions["reason"].str.len().gt(0).all()
    first = model.travellers[revisions["agent"].iloc[-1]].revisions[-1]
    assert revisions.iloc[-1]["reason"] == first.reason


def test_late_is_counted_at_the_door_that_lets_them_in():
    town = load_scenario("nguyen_dupuis")
    office = dataclasses.replace(town.facilities["Office"], capacity=1)
    town = dataclasses.replace(town, facilities={**town.facilities, "Office": office})
    # from Midtown the Office is 35 minutes, "forty" by habit: both reach the door at 07:55
    people = [
        _persona("Ann", "Office", home="Midtown apartment"),
        _persona("Ben", "Office", home="Midtown apartment"),
    ]
    model = UrbanMobilityModel(
        scenario=town, population=people, days=1, rng=0, chat_probability=0.0
    )
    model.run()
    commute = model.trips_frame().dropna(subset=["planned_arrival"]).set_index("agent")
    first, second = commute.sort_values("arrival").index
    assert commute.loc[first, "admitted"] == commute.loc[first, "arrival"]
    assert commute.loc[first, "late"] == 0
    # the one-person office never lets the second in: not punctual, though at the door on time
    assert commute.loc[second, "arrival"] < commute.loc[second, "planned_arrival"]
    assert np.isnan(commute.loc[second, "admitted"]) and np.isnan(
        commute.loc[second, "late"]
    )
    assert model.summary()["punctuality"] == 0.5
    assert model.commute_frame()["late_share"].iloc[0] == 0.5


class FarFirstErrand(RuleBrain):
    """Dana heads for the Factory at 07:00 but is due to leave it for work soon after."""

    def __init__(self, mode="drive", due="07:10", **kw):
        super().__init__(**kw)
        self.mode, self.due = mode, due

    def decide_all(self, requests, *, tags=None):
        results = []
        for result in super().decide_all(requests, tags=tags):
            if result.agent_id == "Dana" and result.kind == "DailyPlan":
                plan = DailyPlan(
                    activities=[
                        Activity(
                            facility="Factory", departure_time="07:00", mode=self.mode
                        ),
                        Activity(
                            facility="Office", departure_time=self.due, mode=self.mode
                        ),
                        Activity(
                            facility="Uptown apartment",
                            departure_time="17:00",
                            mode=self.mode,
                        ),
                    ]
                )
                result = DecisionResult(result.request, plan, result.outcome)
            elif result.agent_id == "Dana" and result.kind == "PlanRevision":
                keep = PlanRevisionOutput(action="keep", reason="as planned")
                result = DecisionResult(result.request, keep, result.outcome)
            results.append(result)
        return results


@pytest.mark.parametrize(("mode", "due"), [("drive", "07:10"), ("walk", "07:20")])
def test_travel_is_interrupted_when_the_next_activity_is_due(mode, due):
    dana = dataclasses.replace(_persona("Dana", "Office"), licensed=mode == "drive")
    model = UrbanMobilityModel(
        population=[dana, _persona("Eve", "Office")],
        days=1, rng=0, chat_probability=0.0, brain=FarFirstErrand(mode, due),
    )  # fmt: skip
    model.run()
    trips = model.trips_frame()
    dana = trips[trips["agent"] == "Dana"].reset_index(drop=True)
    # the 07:00 trip ends at the Office (a work target of 08:00); the Factory is never reached
    assert list(dana["origin"]) == ["Uptown apartment", "Office"]
    assert list(dana["destination"]) == ["Office", "Uptown apartment"]
    first, back = dana.iloc[0], dana.iloc[1]
    assert (first["departure"], first["planned_arrival"]) == (420, 480)
    assert first["mode"] == mode and first["arrival"] > first["departure"]
    if mode == "drive":
        assert first["arrival"] < 480
    assert back["departure"] == 1020 and back["arrival"] > 1020  # later trip as planned
    positions = model.positions_frame()
    assert "Factory" not in set(positions[positions["agent"] == "Dana"]["place"])
    revisions = model.revisions_frame()
    interrupts = revisions[revisions["action"] == "interrupt"]
    assert len(interrupts) == 1
    row = interrupts.iloc[0]
    assert (row["agent"], row["situation"], row["day"]) == ("Dana", "en_route", 1)
    assert row["minute"] >= parse_hhmm(due)  # the first node reached when due
    assert row["reason"] == (
        f"activity at Office due at {due} while still travelling to Factory"
    )
    agent = model.travellers["Dana"]
    assert [r.action for r in agent.revisions if r.situation == "en_route"] == [
        "interrupt"
    ]
    assert [a.facility for a in agent.activities] == ["Office", "Uptown apartment"]
    kept = [r for r in agent.trips if not r.cancelled]
    assert [(r.origin, r.destination) for r in kept] == [
        ("Uptown apartment", "Office"),
        ("Office", "Uptown apartment"),
    ]
    assert kept[0].activity.facility == "Office"
    assert model.summary()["interruptions"] == 1  # Eve's rule plan goes as planned


def test_a_normal_day_has_no_interruptions():
    model = small_model()
    model.run()
    assert model.summary()["interruptions"] == 0
    assert "interrupt" not in set(model.revisions_frame()["action"])


# ----------------------------------------------------------------------------- school runs
def _parent(name: str, child: str) -> PersonaFacts:
    return dataclasses.replace(_persona(name, "Office"), children=(child,))


def _answer_parents(body):
    """Dora drops the school runs, adds them when told; Eve never does.

    At work, Dora first wants to go straight home (dropping the pick-up), then keeps the plan.
    """
    name = body["messages"][0]["content"].split("You are ", 1)[1].split(",", 1)[0]
    prompt = body["messages"][1]["content"]
    repair = body["messages"][-1]["content"].startswith("Your previous answer")
    drive = {"mode": "drive"}
    if "Plan today" in prompt:
        work = {
            "facility": "Office",
            "departure_time": "07:00",
            "reflect_every": 150,
            **drive,
        }
        home = {"facility": "Uptown apartment", "departure_time": "17:00", **drive}
        if name == "Dora" and repair:
            activities = [
                {"facility": "School", "departure_time": "06:50", **drive},
                {**work, "departure_time": None},
                {"facility": "School", "departure_time": "17:00", **drive},
                {**home, "departure_time": None},
            ]
        else:
            activities = [work, home]
        return json_content({"activities": activities})
    if "Choose action" in prompt:
        if name == "Dora" and "You are at Office, staying" in prompt and not repair:
            return json_content(
                {"action": "replace_activities", "reason": "tired",
                 "activities": [{"facility": "Uptown apartment", "departure_time": "16:00", **drive}]}
            )  # fmt: skip
        return json_content({"action": "keep", "reason": "fine"})
    if "is over" in prompt:
        return json_content({"reflections": [{"content": "ok", "importance": 0.3}]})
    return Fault.schema_violation()


def test_llm_plans_that_drop_a_school_run_are_repaired_or_replaced(tmp_path):
    personas = [_parent("Dora", "Finn"), _parent("Eve", "Gus")]
    ledger = tmp_path / "ledger.jsonl"
    with FakeLLMServer(_answer_parents) as server:
        model = UrbanMobilityModel(
            population=personas, days=1, rng=0, chat_probability=0.0,
            brain="llm:openai/fake-model",
            brain_options={"api_base": server.api_base, "api_key": "sk-fake", "timeout_s": 10,
                           "max_attempts": 1, "ledger": ledger},
        )  # fmt: skip
        model.run()
        model.close()
        prompts = [body["messages"][1]["content"] for body in server.requests]
    assert {a.today.school_duty for a in model.travellers.values()} == {"both"}
    decisions = model.decisions_frame()
    plans = decisions[decisions["kind"] == "DailyPlan"].set_index("agent_id")
    assert plans["outcome"].to_dict() == {"Dora": "repaired", "Eve": "fallback"}
    gus = "duty: you must drop Gus off at School before work (08:00) today"
    assert gus in plans.loc["Eve", "reason"]
    records = {
        (r["kind"], r["agent_id"], r["outcome"]): r
        for r in (json.loads(line) for line in ledger.read_text().splitlines())
    }
    first = records[("DailyPlan", "Dora", "repaired")]["rounds"][0]["errors"]
    assert first == [
        (
            "duty: you must drop Finn off at School before work (08:00) today, and the plan "
            "drops it: add a School activity before the Office one"
        ),
        (
            "duty: you must pick Finn up from School after work (17:00) today, and the plan "
            "drops it: add a School activity after the Office one, before returning home"
        ),
    ]
    # at work, a replacement that goes straight home drops the pick-up too
    replaced = records[("PlanRevision", "Dora", "repaired")]["rounds"][0]["errors"]
    assert replaced and replaced[0].startswith(
        "duty: you must pick Finn up from School"
    )
    assert model.summary()["plan_errors"]["duty"] >= 2 + 2 * 3 + 1
    trips = model.trips_frame()
    for name in ("Dora", "Eve"):  # both parents drive the children both ways
        visits = list(trips[trips["agent"] == name]["destination"])
        assert visits == ["School", "Office", "School", "Uptown apartment"], name
    # the prompts carry the runs, the profile and the paths
    plan = next(p for p in prompts if "Plan today" in p and "Dora" in p)
    assert "Required school runs: drop Finn off at School before work (08:00)" in plan
    at_work = next(p for p in prompts if "You are at Office, staying" in p)
    assert "Profile: " in at_work and "Still to do: pick " in at_work
    leaving = next(p for p in prompts if "about to leave for your next activity" in p)
    assert "Paths by drive " in leaving and "~" in leaving


class CheckingRules(RuleBrain):
    """Rule answers; every day plan validated against its context on the way out."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.checked: list[tuple[str, list[str]]] = []

    def decide_all(self, requests, *, tags=None):
        results = super().decide_all(requests, tags=tags)
        for result in results:
            if result.kind == "DailyPlan":
                ctx = result.request.context
                runs = "+".join(d.kind for d in ctx.facts.duties)
                self.checked.append(
                    (runs, result.request.kind.validate(ctx, result.output))
                )
        return results


@pytest.mark.slow
def test_every_rule_plan_of_the_reference_run_keeps_its_school_runs():
    brain = CheckingRules(rng=0)
    model = UrbanMobilityModel(days=3, rng=0, brain=brain, collect_every=60)
    model.run()
    assert len(brain.checked) == 3 * len(model.travellers)
    assert all(errors == [] for _, errors in brain.checked)
    runs = {runs for runs, _ in brain.checked}
    assert {"drop_off", "pick_up"} <= runs
    assert model.summary()["plan_errors"] == {}


class _NoCallBrain(RuleBrain):
    """A rule brain that counts its batches."""

    def __init__(self) -> None:
        super().__init__(rng=0)
        self.batches = 0

    def decide_all(self, requests, **kwargs):
        self.batches += 1
        return super().decide_all(requests, **kwargs)


def test_the_model_has_the_shape_of_every_model():
    brain = _NoCallBrain()
    with UrbanMobilityModel(
        population=town_personas(), n_agents=6, rng=3, brain=brain
    ) as model:
        assert brain.batches == 0  # the constructor never asks the brain
        assert model.seed == 3 and model.brain is brain
        assert model.run(days=1) is model and brain.batches > 0
        decisions = model.decisions_frame()
        assert list(decisions.columns[:6]) == [
            "day", "minute", "agent_id", "kind", "outcome", "reason",
        ]  # fmt: skip
        assert "action" in decisions.columns
        assert set(decisions["agent_id"]) <= set(model.travellers)


def test_a_checkpointed_model_pickles_without_its_brain_and_keeps_its_collected_data():
    import pickle  # noqa: PLC0415

    from mesa_llm_mobility.memory import MemoryStore  # noqa: PLC0415

    model = small_model(n=6)
    model.run()
    restored = pickle.loads(pickle.dumps(model))
    assert restored.brain is None and restored.ledger is None
    pd.testing.assert_frame_equal(
        restored.datacollector.get_agent_vars_dataframe(),
        model.datacollector.get_agent_vars_dataframe(),
    )
    restored.attach("rules", MemoryStore.ephemeral())
    assert not restored.uses_llm
    restored.close()
    model.close()


def test_a_checkpoint_holds_no_brain_option(tmp_path):
    import pickle  # noqa: PLC0415

    model = small_model(
        n=4,
        brain="llm:openai/fake-model",
        brain_options={
            "api_base": "http://127.0.0.1:9",
            "api_key": "sk-never-in-a-checkpoint",
            "ledger": tmp_path / "ledger.jsonl",
        },
    )
    assert model.brain_options["api_key"] == "sk-never-in-a-checkpoint"
    assert b"sk-never-in-a-checkpoint" not in pickle.dumps(model)
    model.close()
