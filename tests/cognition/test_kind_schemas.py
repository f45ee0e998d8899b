"""Every decision kind's schema decodes under llama.cpp's grammar, and its bounds hold.

The schemas a provider decodes under are the kinds' own and, where a kind tightens them per
request (``request_schema``: an array's length, the ids offered as an enum, the move's
route-or-offset rule), the request's. Both must compile to a llama.cpp grammar (as its server
does with ``json_object`` + schema), a request's schema must accept the rule policy's answer to
it (it may not be stricter than the domain), and an answer outside a bound must be rejected by
the kind's check whatever the provider decoded (llama.cpp's grammar keeps no numeric bound).
"""

from __future__ import annotations

import json
from collections import defaultdict

import jsonschema
import pytest

from mesa_llm_mobility.cognition.demo import DEPARTURE_CHOICE
from mesa_llm_mobility.cognition.dry_run import DryRunBrain
from mesa_llm_mobility.cognition.structured_output import grammar_safe
from mesa_llm_mobility.evacuation.decisions import EVACUATION_MOVE
from mesa_llm_mobility.evacuation.memory_role import EVACUATION_MEMORY
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.trajectory.baselines import HISTORICAL_CHAIN
from mesa_llm_mobility.trajectory.durations import DAY_DURATIONS, VISIT_DURATION
from mesa_llm_mobility.trajectory.model import TrajectoryModel
from mesa_llm_mobility.trajectory.orchestrator import ACTIVITY_CHAIN
from mesa_llm_mobility.trajectory.synth import synthesize
from mesa_llm_mobility.urban.decisions.chat import CHAT
from mesa_llm_mobility.urban.decisions.chat_turn import CHAT_TURN
from mesa_llm_mobility.urban.decisions.daily_plan import DAILY_PLAN
from mesa_llm_mobility.urban.decisions.judge import REALISM_JUDGEMENT
from mesa_llm_mobility.urban.decisions.plan_revision import PLAN_REVISION
from mesa_llm_mobility.urban.decisions.reflection import DAILY_REFLECTION
from mesa_llm_mobility.urban.decisions.travel_query import TRAVEL_QUERY
from mesa_llm_mobility.urban.decisions.trip_importance import TRIP_IMPORTANCE
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from mesa_llm_mobility.urban.synthesis.population_batch import POPULATION_BATCH

llama_cpp = pytest.importorskip("llama_cpp")

KINDS = [
    EVACUATION_MOVE, EVACUATION_MEMORY, POPULATION_BATCH, CHAT, TRIP_IMPORTANCE, CHAT_TURN,
    REALISM_JUDGEMENT, DAILY_REFLECTION, DAILY_PLAN, PLAN_REVISION, TRAVEL_QUERY,
    VISIT_DURATION, DAY_DURATIONS, ACTIVITY_CHAIN, HISTORICAL_CHAIN, DEPARTURE_CHOICE,
]  # fmt: skip
TIGHTENED = {
    "TripImportance", "DailyReflection", "Chat", "EvacuationMove", "ActivityChain",
    "DayDurations", "VisitDuration",
}  # fmt: skip
PER_KIND = 12  # requests checked per kind


def _grammar(schema):
    return llama_cpp.LlamaGrammar.from_json_schema(
        json.dumps(grammar_safe(schema)), verbose=False
    )


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_every_kinds_schema_compiles_to_a_llama_cpp_grammar(kind):
    assert _grammar(kind.json_schema()) is not None


class _Collecting(DryRunBrain):
    """The rule answers, each request kept with its answer."""

    def __init__(self, found, **options):
        super().__init__("openai/gpt-4o-mini", **options)
        self.found = found

    def decide_all(self, requests, *, tags=None):
        results = super().decide_all(requests, tags=tags)
        for result in results:
            if len(self.found[result.kind]) < PER_KIND:
                self.found[result.kind].append(result)
        return results


@pytest.fixture(scope="module")
def answered():
    """Requests of every tightened kind, from small runs of the three models."""
    found = defaultdict(list)
    for seed, scoring in ((1, "creation"), (2, "reflection")):
        urban = UrbanMobilityModel(
            days=1, rng=seed, n_agents=4, chat_probability=1.0,
            brain=_Collecting(found, rng=seed), trip_importance=scoring,
        )  # fmt: skip
        urban.run()
        urban.close()
    evacuation = EvacuationModel(
        composition={"average": 4},
        rng=2,
        time_limit_s=4,
        brain=_Collecting(found, rng=2),
    )
    evacuation.run()
    evacuation.close()
    history = synthesize(4, 2, seed=3).stays
    for durations in ("day", "visit"):
        with TrajectoryModel(
            history,
            days=1,
            durations=durations,
            brain=_Collecting(found, rng=3),
            rng=3,
        ) as trajectories:
            trajectories.step()
    return found


@pytest.mark.slow
def test_request_schemas_compile_and_accept_the_rule_answers(answered):
    assert set(answered) >= TIGHTENED  # every tightened kind was asked
    for name in TIGHTENED:
        for result in answered[name]:
            kind = result.request.kind
            schema = kind.schema_for(result.request.context)
            assert schema != kind.json_schema()  # the request's own
            _grammar(schema)
            jsonschema.validate(result.output.model_dump(mode="json"), schema)


def _bounded_answers(result):
    """Answers outside a bound of the request's schema, for each tightened kind."""
    context, answer = result.request.context, result.output.model_dump(mode="json")
    name = result.kind
    if name == "TripImportance":
        n = len(context.trips)
        return [{"importance": [0.5] * (n + 1)}, {"importance": [2.0] * n}]
    if name == "DailyReflection":
        return [answer | {"trip_importance": [1.5] * max(len(context.trips), 1)}]
    if name == "Chat":
        return [answer | {"partner": "Nobody Known"}]
    if name == "EvacuationMove":
        both = answer | {"action": "move", "route_id": "R1"}
        both["target_offset"] = {"dx": 1, "dy": 0}
        neither = answer | {"action": "move", "route_id": None, "target_offset": None}
        return [both, neither, answer | {"urgency": 2.0}]
    if name == "ActivityChain":
        return [{"activities": ["not an activity"]}]
    if name == "DayDurations":
        return [{"durations_minutes": [*answer["durations_minutes"], 30]}]
    if name == "VisitDuration":
        return [{"duration_minutes": 100_000}]
    raise AssertionError(name)


@pytest.mark.slow
def test_answers_outside_a_bound_are_refused_by_the_schema_and_the_kind(answered):
    for name in TIGHTENED:
        for result in answered[name]:
            kind, context = result.request.kind, result.request.context
            schema = kind.schema_for(context)
            for bad in _bounded_answers(result):
                with pytest.raises(jsonschema.ValidationError):
                    jsonschema.validate(bad, schema)
                if name == "DailyReflection" and not context.score_trips:
                    continue  # scored on arrival: the kind ignores any scores given here
                checked = kind.check(context, json.dumps(bad))
                assert checked.output is None, (name, bad)


def test_the_move_schema_offers_only_the_routes_offered(answered):
    moves = [r for r in answered["EvacuationMove"] if r.request.context.options]
    assert moves
    for result in moves:
        schema = EVACUATION_MOVE.schema_for(result.request.context)
        offered = [option.route_id for option in result.request.context.options]
        by_route = [b for b in schema["anyOf"] if "route_id" in b["properties"]]
        assert by_route[0]["properties"]["route_id"]["enum"] == offered
        assert schema["type"] == "object"
