import pytest

from mesa_llm_mobility.cognition.brain import RuleBrain
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.llm_brain import LLMBrain
from mesa_llm_mobility.cognition.settings import make_brain, parse_brain_setting


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("rules", ("rules", None)),
        ("llm:openai/gpt-4o-mini", ("llm", "openai/gpt-4o-mini")),
        (" llm:ollama/llama3.1 ", ("llm", "ollama/llama3.1")),
    ],
)
def test_parse_brain_setting(setting, expected):
    assert parse_brain_setting(setting) == expected


@pytest.mark.parametrize("setting", ["", "llm:", "gpt-4o", "rule"])
def test_unknown_settings_are_explained(setting):
    with pytest.raises(ValueError, match="use 'rules' or 'llm:<litellm model>'"):
        parse_brain_setting(setting)


def test_default_is_the_rule_brain(monkeypatch):
    monkeypatch.delenv("MLM_BRAIN", raising=False)
    assert isinstance(make_brain(None), RuleBrain)


def test_environment_configures_the_llm_brain(monkeypatch, tmp_path):
    monkeypatch.setenv("MLM_BRAIN", "llm:openai/my-model")
    monkeypatch.setenv("MLM_API_BASE", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MLM_API_KEY", "sk-env")
    monkeypatch.setenv("MLM_MAX_CONCURRENCY", "7")
    brain = make_brain(None, ledger=tmp_path / "ledger.jsonl")
    assert isinstance(brain, LLMBrain)
    assert brain.model == "openai/my-model"
    assert brain.max_concurrency == 7
    assert isinstance(brain.ledger, Ledger)
    assert brain.ledger.path == tmp_path / "ledger.jsonl"
    assert "sk-env" not in repr(brain)
    brain.close()


def test_arguments_win_over_the_environment(monkeypatch):
    monkeypatch.setenv("MLM_MAX_CONCURRENCY", "7")
    brain = make_brain("llm:openai/m", max_concurrency=3)
    assert brain.max_concurrency == 3


def test_bad_concurrency_variable_is_named(monkeypatch):
    monkeypatch.setenv("MLM_MAX_CONCURRENCY", "many")
    with pytest.raises(
        ValueError, match="MLM_MAX_CONCURRENCY must be an integer, got 'many'"
    ):
        make_brain("llm:openai/m")


def test_an_existing_brain_is_returned_as_is():
    brain = RuleBrain(rng=1)
    assert make_brain(brain) is brain


def test_timeouts_and_retry_budgets_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("MLM_TIMEOUT_S", "2.5")
    monkeypatch.setenv("MLM_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("MLM_MAX_TOTAL_S", "9")
    monkeypatch.setenv("MLM_MAX_REPAIRS", "0")
    brain = make_brain("llm:openai/m")
    assert (brain.policy.timeout_s, brain.policy.max_attempts) == (2.5, 2)
    assert (brain.policy.max_total_s, brain.max_repairs) == (9.0, 0)
    brain = make_brain("llm:openai/m", timeout_s=1.0, max_attempts=None)
    assert (brain.policy.timeout_s, brain.policy.max_attempts) == (1.0, 2)


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [("MLM_TIMEOUT_S", "soon", "a number"), ("MLM_MAX_ATTEMPTS", "2.5", "an integer")],
)
def test_bad_timeout_variables_are_named(monkeypatch, variable, value, expected):
    monkeypatch.setenv(variable, value)
    with pytest.raises(
        ValueError, match=f"{variable} must be {expected}, got '{value}'"
    ):
        make_brain("llm:openai/m")


def test_token_limit_and_fail_fast_come_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MLM_MAX_TOKENS", "128")
    monkeypatch.setenv("MLM_MAX_TRANSPORT_FAILURES", "9")
    monkeypatch.setenv("MLM_ALLOW_FALLBACK_ONLY", "yes")
    brain = make_brain("llm:openai/m", ledger=tmp_path / "run" / "ledger.jsonl")
    assert brain.params["max_tokens"] == 128
    assert brain.health.max_failures == 9 and brain.health.allow_fallback_only
    # the response-mode cache lives next to a ledger file
    assert brain.response_modes._cache.path == tmp_path / "run" / "response_modes.json"
    monkeypatch.setenv("MLM_ALLOW_FALLBACK_ONLY", "maybe")
    with pytest.raises(ValueError, match="MLM_ALLOW_FALLBACK_ONLY must be 1 or 0"):
        make_brain("llm:openai/m")
