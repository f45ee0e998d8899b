"""The published micro-validation study (urban/published_micro.py) and ``judge --published``."""

from __future__ import annotations

import json

import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.cognition.settings import make_brain
from mesa_llm_mobility.cognition.testing import FakeLLMServer, json_content
from mesa_llm_mobility.urban.believability import blinded_pairs, evaluate
from mesa_llm_mobility.urban.published_micro import (
    cohens_kappa,
    counts_by_plan,
    evaluation_inputs,
    import_published_micro,
    load_published_micro,
    published_verdict_tests,
    read_published_micro,
    rejudge,
    verdict_counts,
    write_published_micro,
)
from mesa_llm_mobility.urban.published_movements import PublishedDataError

QUESTION = (
    "You are participating in a simulation.\nName: Ann Lee\nAge: 35\n"
    "Current time: Thu 2025-03-13 07:28\nSt_1_link_1 is jammed; work at the Office 08:00."
)


def write_study(root, verdicts=None, answers=None):
    folder = root / "research_results" / "experiment_1"
    (folder / "experiment_1_questions_with_context").mkdir(parents=True)
    for k in (1, 2, 3):
        (folder / "experiment_1_questions_with_context" / f"{k}.txt").write_text(
            QUESTION
        )
    answers = answers or [
        {
            "question_with_context": f"{k}.txt",
            "ai_reflection": "St_1_link_1 is jammed; I leave via Ave_4.",
            "ai_plan": "none"
            if k == 3
            else "[['Office', '07:35', 150, 'drive', 'Ave_4']]",
            "human_reflection": "Traffic.",
            "human_plan": "none",
        }
        for k in (1, 2, 3)
    ]
    (folder / "experiment_1_answers.json").write_text(json.dumps(answers))
    verdicts = verdicts or {"1.txt": "ai", "2.txt": "human", "3.txt": "tie"}
    (folder / "experiment_1_judgements.json").write_text(json.dumps(verdicts))
    return folder


def test_import_and_round_trip(tmp_path):
    write_study(tmp_path)
    cases = import_published_micro(tmp_path)
    assert [c.number for c in cases] == [1, 2, 3]
    assert verdict_counts(cases) == (1, 1, 1)
    assert counts_by_plan(cases) == {
        "different:ai": 1,
        "different:human": 1,
        "same:tie": 1,
    }
    path = write_published_micro(cases, tmp_path / "data")
    assert read_published_micro(path) == cases


@pytest.mark.parametrize(
    ("verdicts", "message"),
    [
        (
            {"1.txt": "ai", "2.txt": "robot", "3.txt": "tie"},
            "2.txt: verdict 'robot' is not",
        ),
        ({"1.txt": "ai", "2.txt": "ai"}, "3.txt: verdict None is not"),
        (
            {"1.txt": "ai", "2.txt": "ai", "3.txt": "tie", "9.txt": "ai"},
            "verdicts for scenarios without answers: 9.txt",
        ),
    ],
)
def test_bad_verdicts_are_named(tmp_path, verdicts, message):
    write_study(tmp_path, verdicts=verdicts)
    with pytest.raises(PublishedDataError, match=message):
        import_published_micro(tmp_path)


def test_a_missing_scenario_file_and_a_non_checkout(tmp_path):
    folder = write_study(tmp_path)
    (folder / "experiment_1_questions_with_context" / "2.txt").unlink()
    with pytest.raises(PublishedDataError, match=r"2\.txt: cannot read the scenario"):
        import_published_micro(tmp_path)
    with pytest.raises(PublishedDataError, match="not a GATSim checkout"):
        import_published_micro(tmp_path / "elsewhere")


def test_the_shipped_study_gives_the_papers_numbers():
    cases = load_published_micro()
    assert len(cases) == 50 and verdict_counts(cases) == (23, 20, 7)
    tests = published_verdict_tests(cases)
    assert round(tests.binomial_p, 3) == 0.002
    assert round(tests.sign_p, 3) == 0.380
    assert round(100 * tests.posterior_at_least_as_good, 1) == 92.0
    # every tie is a pair whose two plans are the same text, never shown to the judge
    assert counts_by_plan(cases)["same:tie"] == 7
    assert not any(key.startswith("different:tie") for key in counts_by_plan(cases))


def test_the_study_as_harness_inputs():
    scenarios, human = evaluation_inputs(load_published_micro())
    assert len(scenarios) == 50 and set(human) == {s.scenario_id for s in scenarios}
    first = scenarios[0]
    assert first.scenario_id == "gatsim-01" and first.agent == "Isabella Rodriguez"
    assert (first.day, first.minute) == (4, 14 * 60 + 20)  # Thu 2025-03-13 14:20
    assert first.agent_response.startswith("Reflection: At 14:20")
    assert human["gatsim-01"].startswith("Reflection: My shift")
    pairs = blinded_pairs(scenarios, human, seed=1)
    assert len(pairs) == 50 and {p.first_source for p in pairs} == {"agent", "human"}


def test_kappa_by_hand():
    assert cohens_kappa(["a", "b"], ["a", "b"]) == 1.0
    # observed 0.5, expected 0.5: chance agreement
    assert cohens_kappa(["a", "a", "b", "b"], ["a", "b", "a", "b"]) == 0.0
    with pytest.raises(ValueError):
        cohens_kappa([], [])


def test_rejudge_ties_same_plans_unless_asked(tmp_path):
    write_study(tmp_path)
    cases = import_published_micro(tmp_path)
    brain = make_brain("rules", rng=0)
    try:
        result = rejudge(cases, brain, seed=0)
        both = rejudge(cases, brain, seed=0, judge_same_plans=True)
    finally:
        brain.close()
    assert result.verdicts["asked"].tolist() == [True, True, False]
    assert result.verdicts.loc[2, "new"] == "tie"
    assert both.verdicts["asked"].all()
    # the rule judge prefers the answer naming the scenario's link and times: the agent's
    assert result.verdicts.loc[0, "new"] == "ai"


def test_rejudge_through_the_local_server_with_worded_answers(tmp_path):
    write_study(tmp_path)
    cases = import_published_micro(tmp_path)
    answers = iter(
        [
            # extra fields, the reason omitted, a capitalised verdict the schema refuses
            {"verdict": "second", "confidence": 0.7},
            {"verdict": "First", "reason": "names the jammed link"},
            {"verdict": "first", "reason": "after a repair"},
        ]
    )

    def respond(body):
        return json_content(next(answers, {"verdict": "tie"}))

    with FakeLLMServer(respond) as server:
        brain = make_brain(
            "llm:openai/fake-judge",
            rng=0,
            api_base=server.api_base,
            api_key="k",
            timeout_s=2.0,
            max_attempts=2,
        )
        try:
            result = rejudge(cases, brain, seed=3)
        finally:
            brain.close()
    assert result.verdicts["asked"].sum() == 2
    pairs = blinded_pairs(*evaluation_inputs(cases), seed=3)
    source = {"agent": "ai", "human": "human"}
    # pair 1 said "second" (extra field ignored); pair 2 "First" was repaired to "first"
    assert result.verdicts["new"].tolist() == [
        source[pairs[0].second_source],
        source[pairs[1].first_source],
        "tie",
    ]
    assert result.tests.n == 3


def test_the_harness_judges_published_pairs_with_any_brain():
    scenarios, human = evaluation_inputs(load_published_micro()[:4])
    pairs = blinded_pairs(scenarios, human, seed=0)
    brain = make_brain("rules", rng=0)
    try:
        verdicts, tests = evaluate(pairs, brain)
    finally:
        brain.close()
    assert len(verdicts) == 4 and tests.n == 4


def test_cli_judge_published(capsys):
    assert main(["urban", "judge", "--published"]) == 0
    out = capsys.readouterr().out
    assert "agent 23, annotators 20, ties 7" in out
    assert "paper binomial p 0.0021" in out and "paper sign p     0.3804" in out
    assert "paper posterior  0.9196" in out
    assert (
        "binomial p 0.3359  not significant" in out
    )  # the null that matches the scoring
    assert main(["urban", "judge", "--published", "--rejudge"]) == 0
    assert "rejudged by rules (43 pairs asked" in capsys.readouterr().out


def test_cli_judge_published_bad_checkout(tmp_path, capsys):
    assert main(["urban", "judge", "--published", "--from", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mlm: error: ") and "not a GATSim checkout" in err
