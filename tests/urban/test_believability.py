"""The believability harness: scenarios, annotator files, blinding, the judge through any brain."""

from __future__ import annotations

import pandas as pd
import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.cognition.settings import make_brain
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.urban import scripted_llm
from mesa_llm_mobility.urban.believability import (
    AGENT,
    HUMAN,
    BlindedPair,
    EvaluationScenario,
    blinded_pairs,
    evaluate,
    generate_scenarios,
    read_human_responses,
    read_scenarios,
    tally,
    write_annotator_files,
    write_pairs,
)
from mesa_llm_mobility.urban.decisions.judge import (
    REALISM_JUDGEMENT,
    JudgeContext,
    judge_rule_policy,
)
from mesa_llm_mobility.user_files import UserFileError


def scenario(k: int) -> EvaluationScenario:
    return EvaluationScenario(
        f"DailyPlan-A-d1-{k}", "DailyPlan", "A", 1, k,
        "Today you are at Uptown apartment; work at the Office 08:00; St_1_link_1 is jammed.",
        '{"activities": "leave 07:10 for the Office avoiding St_1_link_1"}',
        '{"activities": "leave 07:30"}', "llm:x",
    )  # fmt: skip


def _slow(body):
    return (sum(map(ord, body["messages"][-1]["content"][-30:])) % 5) * 0.05


def test_rule_judge_prefers_the_specific_response():
    ctx = JudgeContext(
        "p",
        "Office at 08:00, St_1_link_1 jammed",
        "Office 07:10 St_1_link_1",
        "nice day",
    )
    assert judge_rule_policy(ctx, None).verdict == "first"
    same = JudgeContext("p", "Office", "go Office", "go Office")
    assert judge_rule_policy(same, None).verdict == "tie"
    assert "Response 2:" in REALISM_JUDGEMENT.render_prompt(ctx)[1]["content"]


def test_blinding_and_tally_by_hand(tmp_path):
    pairs = blinded_pairs([scenario(k) for k in range(8)], seed=3)
    assert {p.first_source for p in pairs} == {
        AGENT,
        "rule_baseline",
    }  # both orders occur
    write_pairs(pairs, tmp_path)
    shown = pd.read_csv(tmp_path / "pairs.csv")
    assert list(shown.columns) == [
        "pair_id",
        "situation",
        "first",
        "second",
    ]  # no source
    assert len(pd.read_csv(tmp_path / "key.csv")) == 8
    hand = [
        BlindedPair("a", "s", "x", "1", "2", AGENT, HUMAN),
        BlindedPair("b", "s", "x", "1", "2", HUMAN, AGENT),
        BlindedPair("c", "s", "x", "1", "2", HUMAN, AGENT),
    ]
    verdicts = pd.DataFrame(
        {"pair_id": ["a", "b", "c"], "verdict": ["first", "first", "tie"]}
    )
    assert tally(verdicts, hand) == (1, 1, 1)


def test_annotator_files_round_trip_and_bad_input(tmp_path):
    scenarios = [scenario(1), scenario(2)]
    write_annotator_files(scenarios, tmp_path)
    sheet = pd.read_csv(tmp_path / "annotators.csv", dtype=str, keep_default_na=False)
    assert "leave 07:10" not in sheet.to_string()  # annotators never see a response
    assert read_scenarios(tmp_path / "responses.json") == scenarios
    sheet.loc[0, ["reflection", "plan"]] = ["Jam ahead", "Leave 07:00"]
    sheet.to_csv(tmp_path / "filled.csv", index=False)
    human = read_human_responses(tmp_path / "filled.csv")
    assert list(human) == [scenarios[0].scenario_id]
    assert len(blinded_pairs(scenarios, human)) == 1
    sheet.drop(columns=["plan"]).to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(
        UserFileError, match=r"bad.csv, line 1: missing column\(s\) plan"
    ):
        read_human_responses(tmp_path / "bad.csv")
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(UserFileError, match=r"broken\.json: not a scenario list"):
        read_scenarios(tmp_path / "broken.json")


def test_rule_scenarios_cover_plans_revisions_and_reflections():
    found = generate_scenarios(9, agents=4, seed=1)
    assert {s.kind for s in found} == {"DailyPlan", "PlanRevision", "DailyReflection"}
    assert all(s.situation and s.agent_response and s.baseline_response for s in found)
    assert len({s.scenario_id for s in found}) == len(found)


@pytest.mark.slow
def test_llm_scenarios_and_judge_against_the_local_server_with_faults(tmp_path):
    faults = provider_faults()
    options = {
        "timeout_s": 1.0,
        "max_attempts": 3,
        "max_total_s": 8.0,
        "api_key": "k-test-1",
    }
    with FakeLLMServer(
        with_faults(scripted_llm.respond, faults, every=4), latency_s=_slow
    ) as server:
        found = generate_scenarios(
            6, agents=3, seed=2, n_agents=8, brain="llm:openai/fake-model",
            brain_options={**options, "api_base": server.api_base},
        )  # fmt: skip
    assert {s.kind for s in found} >= {"DailyPlan", "DailyReflection"}
    assert all(
        s.agent_brain == "openai/fake-model" or "fake" in s.agent_brain for s in found
    )
    pairs = blinded_pairs(found, seed=0)
    with FakeLLMServer(
        with_faults(scripted_llm.respond_as_judge, faults, every=3), latency_s=_slow
    ) as server:
        brain = make_brain(
            "llm:openai/fake-judge", rng=0, api_base=server.api_base, **options
        )
        try:
            verdicts, tests = evaluate(pairs, brain)
        finally:
            brain.close()
        received = server.request_count
    assert len(verdicts) == len(pairs) and received >= len(pairs)
    assert set(verdicts["outcome"]) <= {"ok", "repaired", "fallback"}
    assert "repaired" in set(verdicts["outcome"]) or "fallback" in set(
        verdicts["outcome"]
    )
    # the scripted judge and the rule judge agree wherever the LLM answered
    for pair, row in zip(pairs, verdicts.itertuples(), strict=True):
        rule = judge_rule_policy(
            JudgeContext(pair.pair_id, pair.situation, pair.first, pair.second), None
        )
        assert row.verdict == rule.verdict
    assert tests.n == len(pairs)


def test_cli_scenarios_and_judge(tmp_path, capsys):
    assert (
        main(
            [
                "urban",
                "scenarios",
                "--out",
                str(tmp_path),
                "--scenarios",
                "6",
                "--agents",
                "3",
            ]
        )
        == 0
    )
    assert main(["urban", "judge", "--scenarios", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "6 scenarios" in out and "sign test" in out
    assert (tmp_path / "verdicts.csv").is_file()
