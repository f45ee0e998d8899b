"""A city's prompts stay a model's size: a choice of its facilities, not all 1,588 of them."""

from __future__ import annotations

import json
import re

from mesa_llm_mobility.cognition import Ledger
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.urban import scripted_llm
from mesa_llm_mobility.urban.decisions import DAILY_PLAN, TRAVEL_QUERY
from mesa_llm_mobility.urban.decisions.chat import ChatAgreement, validate_agreement
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from mesa_llm_mobility.urban.plans import (
    FACILITY_LIST_LIMIT,
    Activity,
    PlanFacts,
    check_plan,
)
from mesa_llm_mobility.urban.scenario import load_scenario

from ..conftest import local_llm_options, slow_sometimes, town_personas


def test_a_city_plan_prompt_names_the_travellers_places_and_the_nearest_of_each_kind(
    helsinki,
):
    path, town = helsinki
    assert len(town.facilities) > 1000
    with UrbanMobilityModel(
        scenario=path, n_agents=20, rng=1, embedding="hash"
    ) as model:
        view = model.view
        for agent in list(model.travellers.values())[:5]:
            request = agent.plan_request(view, 1)
            offered = request.context.offered_facilities
            persona = agent.persona
            assert persona.home in offered and persona.work_facility in (*offered, None)
            kinds = [town.facilities[name].kind for name in offered]
            assert kinds.count("home") == 1  # its own; no other resident's home
            assert len(offered) <= 2 * 3 * 11 + 5
            # the nearest of a kind to home is offered, the farthest is not
            home = town.nodes[town.facilities[persona.home].node]
            cafes = sorted(
                (
                    (town.nodes[f.node].x - home.x) ** 2
                    + (town.nodes[f.node].y - home.y) ** 2,
                    f.name,
                )
                for f in town.facilities.values()
                if f.kind == "Coffee shop"
            )
            assert cafes[0][1] in offered and cafes[-1][1] not in offered
            prompt = DAILY_PLAN.render_prompt(request.context)[1]["content"]
            assert len(prompt) < 8_000  # was some 44,000 characters
            assert f"Facilities: {', '.join(offered)}." in prompt.splitlines()
            query = agent.travel_query_request(view, 1, request).context
            assert query.offered_facilities == offered
            assert (
                f"facilities ({', '.join(offered)})"
                in TRAVEL_QUERY.render_prompt(query)[1]["content"]
            )
            # the plan may still name a facility it was not offered
            elsewhere = next(
                f.name
                for f in town.facilities.values()
                if f.kind != "home" and f.name not in offered
            )
            plan = [Activity(facility=elsewhere), Activity(facility=persona.home)]
            assert not [
                i
                for i in check_plan(plan, request.context.facts)
                if "unknown" in str(i)
            ]


def test_the_reference_town_plan_prompt_names_every_facility():
    with UrbanMobilityModel(population=town_personas(), n_agents=4, rng=0) as model:
        facilities = sorted(model.facilities)
        assert len(facilities) <= FACILITY_LIST_LIMIT
        agent = next(iter(model.travellers.values()))
        context = agent.plan_request(model.view, 1).context
        assert list(context.offered_facilities) == facilities
        prompt = DAILY_PLAN.render_prompt(context)[1]["content"]
        assert f"Facilities: {', '.join(facilities)}." in prompt


def _unknown_facility(plan: list[Activity], facts: PlanFacts) -> str:
    (issue,) = [str(i) for i in check_plan(plan, facts) if "unknown facility" in str(i)]
    return issue


def test_a_repair_names_every_town_facility_but_only_a_citys_closest_names(helsinki):
    town = frozenset(load_scenario("nguyen_dupuis").facilities)
    home = "Uptown apartment"
    issue = _unknown_facility(
        [Activity(facility="Ofice"), Activity(facility=home)],
        PlanFacts(home=home, start_place=home, facilities=town),
    )
    assert issue.endswith("choose one of " + ", ".join(sorted(town)))
    city = frozenset(helsinki[1].facilities)
    shop = "Alepa Kluuvi (n2001532381)"
    assert shop in city
    misspelt = "Alepa Kluvi (n2001532381)"
    issue = _unknown_facility(
        [Activity(facility=misspelt), Activity(facility=shop)],
        PlanFacts(home=shop, start_place=shop, facilities=city),
    )
    assert "closest names: " + shop in issue and len(issue) < 600
    # a chat's meeting place is told the same way
    (error,) = validate_agreement(
        ChatAgreement(meet_at=misspelt, meet_time="18:00"),
        "A",
        "B",
        {},
        vehicles=0,
        facilities=city,
        now=600,
        morning=False,
    )
    assert "closest names: " + shop in error and len(error) < 600


def test_the_scripted_answerer_shops_at_a_facility_the_city_prompt_names(helsinki):
    path, town = helsinki
    with UrbanMobilityModel(
        scenario=path, n_agents=20, rng=1, embedding="hash"
    ) as model:
        agent = next(iter(model.travellers.values()))
        context = agent.plan_request(model.view, 1).context
        prompt = DAILY_PLAN.render_prompt(context)[1]["content"]
    day_off = prompt.replace("a workday", "no work")
    shop = scripted_llm._plan(day_off)["activities"][0]["facility"]
    assert shop in context.offered_facilities and town.facilities[shop].kind != "home"


def _like_a_real_model(body):
    """A city plan answered as a model would: in prose around the JSON, optional fields left out,
    an extra field, and first a misspelt facility, fixed from the repair's closest names."""
    messages = body["messages"]
    prompt = messages[1]["content"]
    if "Plan today" not in prompt:
        return scripted_llm.respond(body)
    home = re.search(r"lives at (?P<home>[^;]+);", prompt)["home"]
    offered = re.search(r"^Facilities: (.+)\.$", prompt, re.MULTILINE)[1].split(", ")
    place = next(n for n in offered if n != home and not n.startswith("home ("))
    suggested = re.search(r"closest names: ([^,)]+\))", messages[-1]["content"])
    if suggested:  # the repair round of a misspelt name: take the first suggestion
        place = suggested[1]
    elif "cut off" not in messages[-1]["content"]:  # misspell the name's last letter
        name = place.split(" (")[0]
        place = place.replace(name, name[:-1] + "x", 1)
    plan = {
        "activities": [
            {"facility": place, "departure_time": "10:00", "why": "errands"},
            {"facility": home, "departure_time": "12:00"},
        ],
        "mood": "fine",
    }
    return f"Sure! Here is my plan for today:\n{json.dumps(plan)}\nHave a nice day."


def test_a_city_plan_is_repaired_from_the_closest_names_through_the_brain(
    helsinki, tmp_path
):
    path, town = helsinki
    ledger = tmp_path / "ledger.jsonl"
    responder = with_faults(_like_a_real_model, provider_faults(hang_s=3.0), every=7)
    with (
        FakeLLMServer(responder, latency_s=slow_sometimes) as server,
        UrbanMobilityModel(
            scenario=path, n_agents=6, rng=1, embedding="hash", days=1,
            brain="llm:openai/fake-model", reaction_minutes=5,
            brain_options=local_llm_options(server, ledger=Ledger(ledger)),
        ) as model,
    ):  # fmt: skip
        model.run()
        decisions = model.decisions_frame()
        trips = model.trips_frame()
    plans = decisions[decisions["kind"] == "DailyPlan"]
    assert (
        plans["outcome"] == "repaired"
    ).sum() >= 4  # faults may send a few to the rules
    records = [r for r in Ledger.read(ledger) if r["kind"] == "DailyPlan"]
    for record in records:
        prompt = record["messages"][1]["content"]
        assert len(prompt) < 8_000
        if record["outcome"] == "repaired":
            told = " ".join(map(str, record["rounds"][0]["errors"]))
            if "unknown facility" in told:  # (not a fault's cut-off answer)
                assert "closest names: " in told and len(told) < 2_000
    # the repaired places are where the travellers went
    shops = {
        json.loads(r["rounds"][-1]["raw"].split("\n")[1])["activities"][0]["facility"]
        for r in records
        if r["outcome"] == "repaired" and "unknown facility" in str(r["rounds"][0])
    }
    assert len(shops) >= 3 and shops <= set(trips["destination"])
    assert all(town.facilities[s].kind != "home" for s in shops)
