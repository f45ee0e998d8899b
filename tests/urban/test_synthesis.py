import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.cognition.kinds import DecisionRequest, Outcome
from mesa_llm_mobility.cognition.testing import FakeLLMServer, json_content
from mesa_llm_mobility.urban.population import load_population
from mesa_llm_mobility.urban.scenario import load_scenario
from mesa_llm_mobility.urban.synthesis import (
    POPULATION_BATCH,
    TARGET_STATISTICS,
    PopulationBrief,
    largest_remainder,
    population_statistics,
    proportional_targets,
    statistics_mismatches,
    statistics_table,
    synthesize_population,
    synthesize_with_brain,
)

SHIPPED = (
    Path(__file__).parents[2] / "mesa_llm_mobility/urban/scenarios/population_70.json"
)

TABLE_2 = {
    ("gender", "female"): 36,
    ("gender", "male"): 34,
    ("age", "young"): 60,
    ("age", "children"): 10,
    ("role", "single"): 26,
    ("role", "husband"): 17,
    ("role", "wife"): 17,
    ("role", "son"): 5,
    ("role", "daughter"): 5,
    ("families", "total"): 43,
    ("families", 1): 26,
    ("families", 2): 8,
    ("families", 3): 8,
    ("families", 4): 1,
    ("income", "low"): 10,
    ("income", "middle"): 43,
    ("income", "high"): 17,
    ("licensed", True): 50,
    ("vehicles", 0): 4,
    ("vehicles", 1): 25,
    ("vehicles", 2): 14,
    ("workers", "Coffee shop"): 3,
    ("workers", "Factory"): 20,
    ("workers", "Hospital"): 3,
    ("workers", "Gym"): 3,
    ("workers", "Office"): 17,
    ("workers", "Food court"): 3,
    ("workers", "Amusement park"): 2,
    ("workers", "Museum"): 2,
    ("workers", "Cinema"): 2,
    ("workers", "Supermarket"): 3,
    ("workers", "School"): 2,
    ("residents", "Uptown apartment"): 36,
    ("residents", "Midtown apartment"): 34,
}


@pytest.fixture(scope="module")
def scenario():
    return load_scenario("nguyen_dupuis")


def test_shipped_file_matches_table_2_exactly():
    """Recomputed from the raw JSON, independently of population_statistics."""
    people = json.loads(SHIPPED.read_text("utf-8"))["people"]
    households = {}
    for person in people:
        households.setdefault(person["household"], []).append(person)
    counted = Counter()
    for person in people:
        counted["gender", person["gender"]] += 1
        counted["age", "young" if person["age"] >= 18 else "children"] += 1
        counted["role", person["family_role"]] += 1
        counted["income", person["household_income"]] += 1
        counted["licensed", person["licensed_driver"]] += 1
        if person["work_facility"]:
            counted["workers", person["work_facility"]] += 1
        counted["residents", person["home_facility"]] += 1
    counted["families", "total"] = len(households)
    for members in households.values():
        counted["families", len(members)] += 1
        counted["vehicles", members[0]["household_vehicles"]] += 1
    counted.pop(("licensed", False))
    assert dict(counted) == TABLE_2
    assert len(people) == 70
    assert sum(60 <= p["age"] <= 75 for p in people) == 7  # 10 % elderly (text)
    assert all(len(p["friends"]) <= 3 for p in people)


def test_shipped_population_statistics_equal_the_targets(scenario):
    population = load_population("population_70", scenario)
    assert population_statistics(population) == TARGET_STATISTICS
    assert statistics_table(population_statistics(population))["match"].all()


def test_shipped_narratives_are_varied():
    people = json.loads(SHIPPED.read_text("utf-8"))["people"]
    for field in ("name", "other_description"):
        assert len({p[field] for p in people}) == 70
    assert len({p["innate"] for p in people}) >= 60
    assert len({p["lifestyle"] for p in people}) >= 25
    assert len({p["preferences_in_transportation"] for p in people}) >= 10


def test_table_2_is_consistent():
    targets = TARGET_STATISTICS
    n = sum(targets["gender"].values())
    assert n == 70
    for category in ("age_group", "family_role", "household_income", "residents"):
        assert sum(targets[category].values()) == n, category
    families = targets["family_structure"]
    assert families["total families"] == sum(
        families[f"{k}-member"] for k in (1, 2, 3, 4)
    )
    assert sum(k * families[f"{k}-member"] for k in (1, 2, 3, 4)) == n
    assert sum(targets["vehicles_per_family"].values()) == families["total families"]
    assert (
        sum(targets["workers_per_facility"].values()) == targets["age_group"]["young"]
    )


def test_largest_remainder():
    assert largest_remainder(10, {"a": 1, "b": 1, "c": 1}) == {"a": 4, "b": 3, "c": 3}
    assert largest_remainder(35, {"low": 10, "middle": 43, "high": 17}) == {
        "low": 5,
        "middle": 22,
        "high": 8,
    }
    assert largest_remainder(0, {"a": 1}) == {"a": 0}
    with pytest.raises(ValueError, match="cannot apportion"):
        largest_remainder(3, {"a": 0})


def test_proportional_targets():
    assert proportional_targets(70) == TARGET_STATISTICS
    doubled = {
        category: {key: 2 * count for key, count in counts.items()}
        for category, counts in TARGET_STATISTICS.items()
    }
    assert proportional_targets(140) == doubled
    half = proportional_targets(35)
    assert sum(half["gender"].values()) == 35
    assert half["family_role"]["husband"] == half["family_role"]["wife"]
    assert half["gender"] == {"female": 18, "male": 17}
    assert half["household_income"] == {"low": 5, "middle": 22, "high": 8}
    assert half["residents"] == {"Uptown apartment": 18, "Midtown apartment": 17}
    assert sum(half["workers_per_facility"].values()) == half["age_group"]["young"]
    with pytest.raises(ValueError, match="must be >= 1"):
        proportional_targets(0)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 7])
def test_synthesizer_matches_table_2_exactly(scenario, seed):
    population = synthesize_population(70, np.random.default_rng(seed), scenario)
    assert population_statistics(population) == TARGET_STATISTICS


@pytest.mark.parametrize("n", [140, 35, 9, 1])
@pytest.mark.parametrize("seed", [0, 5])
def test_synthesizer_matches_proportional_targets(scenario, n, seed):
    population = synthesize_population(n, seed, scenario)
    assert len(population) == n
    assert (
        statistics_mismatches(
            population_statistics(population), proportional_targets(n)
        )
        == []
    )


def test_synthesizer_is_deterministic_per_seed(scenario):
    first = synthesize_population(70, np.random.default_rng(11), scenario)
    again = synthesize_population(70, np.random.default_rng(11), scenario)
    other = synthesize_population(70, np.random.default_rng(12), scenario)
    assert first.people == again.people
    assert first.people != other.people


def test_friendships_are_mutual_and_within_age_group(scenario):
    population = synthesize_population(70, 4, scenario)
    for person in population:
        assert len(person.friends) <= 3
        for name in person.friends:
            friend = population.person(name)
            assert person.name in friend.friends
            assert friend.is_child == person.is_child
            assert friend.household != person.household


def test_synthesizer_needs_the_target_facilities():
    with pytest.raises(ValueError, match="scenario lacks the target facilities"):
        synthesize_population(10, 0, ["Uptown apartment", "Office"])


# ---------------------------------------------------------------------------- LLM route


def _brief(n=70, match_statistics=True):
    return PopulationBrief(
        n=n,
        targets=proportional_targets(n),
        facilities=list(load_scenario("nguyen_dupuis").facilities),
        match_statistics=match_statistics,
    )


def _answer(population):
    return json_content({"people": [p.model_dump(mode="json") for p in population]})


def test_prompt_states_the_target_statistics():
    messages = POPULATION_BATCH.messages(_brief())
    text = messages[1]["content"]
    assert "Create exactly 70 people in 43 households" in text
    assert "Factory: 20" in text
    assert "low: 10, middle: 43, high: 17" in text
    assert "0 vehicles: 4, 1 vehicle: 25, 2 vehicles: 14" in text
    assert "Isabella Rodriguez" in text
    assert '"people"' in messages[0]["content"]  # the JSON schema


def test_domain_validation_reports_statistics_and_population_errors(scenario):
    population = synthesize_population(70, 2, scenario)
    people = [p.model_dump(mode="json") for p in population]
    people[0]["friends"] = ["Nobody Here"]
    single = next(p for p in people if p["family_role"] == "single")
    single["household_income"] = next(
        level for level in ("low", "high") if level != single["household_income"]
    )
    output, errors = POPULATION_BATCH.parse(_brief(), json.dumps({"people": people}))
    assert output is None
    assert any(
        f"person {people[0]['name']!r}: field 'friends': 'Nobody Here'" in e
        for e in errors
    )
    assert any(e.startswith("statistic household_income/") for e in errors)
    loose = _brief(match_statistics=False)
    people[0]["friends"] = []
    output, errors = POPULATION_BATCH.parse(loose, json.dumps({"people": people}))
    assert errors == [] and len(output.people) == 70


def test_rules_brain_is_the_rule_synthesizer(scenario):
    report = synthesize_with_brain(70, scenario, brain="rules", rng=3)
    assert report.result.outcome is Outcome.OK
    assert report.brain == "rules"
    assert report.population.people == synthesize_population(70, 3, scenario).people
    assert report.statistics()["match"].all()


def _llm(server, **options):
    return {
        "brain": "llm:openai/fake-model",
        "api_base": server.api_base,
        "api_key": "sk-local-fake",
        "timeout_s": 10.0,
        "max_attempts": 1,
        **options,
    }


def test_llm_answer_is_accepted(scenario):
    expected = synthesize_population(70, 21, scenario)
    with FakeLLMServer(lambda body: _answer(expected)) as server:
        report = synthesize_with_brain(70, scenario, rng=0, **_llm(server))
    assert report.result.outcome is Outcome.OK
    assert report.brain == "openai/fake-model"
    assert report.population.people == expected.people
    assert server.request_count == 1


def test_invalid_llm_answer_is_repaired(scenario):
    valid = synthesize_population(70, 22, scenario)
    broken = [p.model_dump(mode="json") for p in valid]
    broken[4]["licensed_driver"] = True
    broken[4]["age"] = 12
    with FakeLLMServer(
        script=[json_content({"people": broken}), _answer(valid)]
    ) as server:
        report = synthesize_with_brain(70, scenario, rng=0, **_llm(server))
        repair_prompt = server.requests[1]["messages"][-1]["content"]
    assert report.result.outcome is Outcome.REPAIRED
    assert report.population.people == valid.people
    assert f"person {broken[4]['name']!r}: field 'licensed_driver'" in repair_prompt


def test_unrepairable_llm_answer_falls_back_to_the_rule_synthesizer(scenario):
    with FakeLLMServer(lambda body: json_content({"people": []})) as server:
        report = synthesize_with_brain(
            35, scenario, rng=8, **_llm(server, max_repairs=1)
        )
    assert report.result.outcome is Outcome.FALLBACK
    assert "answer has 0 people, expected 35" in report.result.reason
    assert server.request_count == 2
    assert report.population.people == synthesize_population(35, 8, scenario).people


def test_population_batch_request_needs_a_brief():
    with pytest.raises(TypeError, match="context must be PopulationBrief"):
        DecisionRequest(POPULATION_BATCH, "population", {"n": 3})


# ---------------------------------------------------------------------------- CLI


def test_cli_synthesize_prints_statistics_and_writes_the_population(
    capsys, tmp_path, scenario
):
    out = tmp_path / "people.json"
    assert main(["urban", "synthesize", "--seed", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "brain: rules  outcome: ok" in printed
    assert "targets: GATSim Table 2\n" in printed
    assert "Factory" in printed and "all statistics match their targets" in printed
    population = load_population(out, scenario)
    assert population.people == synthesize_population(70, 1, scenario).people


def test_cli_synthesize_through_an_llm_falls_back_and_says_why(capsys, monkeypatch):
    with FakeLLMServer(lambda body: json_content({"people": []})) as server:
        monkeypatch.setenv("MLM_API_BASE", server.api_base)
        monkeypatch.setenv("MLM_API_KEY", "sk-local-fake")
        code = main(
            [
                "urban",
                "synthesize",
                "--n",
                "20",
                "--brain",
                "llm:openai/fake-model",
                "--max-repairs",
                "0",
            ]
        )
    assert code == 0
    printed = capsys.readouterr().out
    assert "brain: openai/fake-model  outcome: fallback" in printed
    assert "answer has 0 people, expected 20" in printed
    assert "scaled to 20 people" in printed
    assert server.request_count == 1


def test_cli_synthesize_errors(capsys):
    assert main(["urban", "synthesize", "--n", "0"]) == 2
    assert "--n must be >= 1" in capsys.readouterr().err
    assert main(["urban", "synthesize", "--brain", "gpt"]) == 2
    assert "use 'rules' or 'llm:<litellm model>'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["urban"])
