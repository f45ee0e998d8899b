import argparse

import pytest

from mesa_llm_mobility.cognition.arguments import add_brain_arguments, brain_options
from mesa_llm_mobility.cognition.llm_brain import LLMBrain
from mesa_llm_mobility.cognition.settings import make_brain


def _parse(argv, **kwargs):
    parser = argparse.ArgumentParser(prog="mlm test")
    add_brain_arguments(parser, **kwargs)
    return parser.parse_args(argv)


def test_flags_become_brain_options_and_reach_the_brain():
    args = _parse(
        [
            "--brain=llm:openai/m",
            "--api-base=http://127.0.0.1:9/v1",
            "--concurrency=3",
            "--temperature=0.2",
            "--timeout=4",
            "--max-attempts=2",
            "--max-total=30",
            "--max-repairs=0",
        ]
    )
    options = brain_options(args)
    assert options == {
        "api_base": "http://127.0.0.1:9/v1",
        "max_concurrency": 3,
        "temperature": 0.2,
        "timeout_s": 4.0,
        "max_attempts": 2,
        "max_total_s": 30.0,
        "max_repairs": 0,
    }
    brain = make_brain(args.brain, **options)
    assert isinstance(brain, LLMBrain)
    assert brain.policy.timeout_s == 4.0 and brain.policy.max_total_s == 30.0
    assert brain.params["temperature"] == 0.2 and brain.max_repairs == 0


def test_flags_not_given_leave_the_environment_in_charge(monkeypatch):
    monkeypatch.setenv("MLM_TIMEOUT_S", "7")
    args = _parse([])
    assert args.brain == "rules"
    assert brain_options(args) == {}
    assert make_brain("llm:openai/m", **brain_options(args)).policy.timeout_s == 7.0


def test_a_resume_takes_no_brain_flag():
    assert not hasattr(_parse([], choose_brain=False), "brain")
    with pytest.raises(SystemExit):
        _parse(["--brain=rules"], choose_brain=False)


@pytest.mark.parametrize(
    "argv", [["--timeout=0"], ["--timeout=soon"], ["--max-repairs=-1"]]
)
def test_bad_values_are_refused_by_the_parser(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _parse(argv)
    assert exit_info.value.code == 2
    assert "expected" in capsys.readouterr().err


def test_token_limit_fail_fast_and_fallback_flags_reach_the_brain():
    args = _parse(
        [
            "--brain=llm:openai/m",
            "--max-tokens=256",
            "--max-transport-failures=2",
            "--allow-fallback-only",
        ]
    )
    options = brain_options(args)
    assert options == {
        "max_tokens": 256,
        "max_transport_failures": 2,
        "allow_fallback_only": True,
    }
    brain = make_brain(args.brain, **options)
    assert brain.params["max_tokens"] == 256
    assert brain.health.max_failures == 2 and brain.health.allow_fallback_only


def test_a_timeout_above_the_call_budget_raises_the_default_or_is_refused():
    args = _parse(["--brain=llm:openai/m", "--timeout=300"])
    brain = make_brain(args.brain, **brain_options(args))
    assert brain.policy.max_total_s == 600.0  # twice the timeout, not the 120 s default
    args = _parse(["--brain=llm:openai/m", "--timeout=300", "--max-total=120"])
    with pytest.raises(
        ValueError, match=r"--max-total .* \(120 s\) is below .* \(300 s\)"
    ):
        make_brain(args.brain, **brain_options(args))
