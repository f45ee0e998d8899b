import subprocess
import sys

import pytest

from mesa_llm_mobility.cli import main


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "demo" in capsys.readouterr().out


def test_demo_cognition_prints_the_ledger_summary(capsys):
    assert main(["demo", "cognition", "--agents", "5"]) == 0
    out = capsys.readouterr().out
    assert "brain: rules" in out
    assert "ledger summary" in out
    assert "DepartureChoice" in out


def test_demo_cognition_through_the_fake_llm(capsys, tmp_path):
    ledger = tmp_path / "ledger.jsonl"
    code = main(
        [
            "demo",
            "cognition",
            "--agents",
            "6",
            "--serve-fake-llm",
            "--latency",
            "0",
            "--ledger",
            str(ledger),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "brain: openai/fake-model" in out
    assert "local LLM server: 6 requests" in out
    assert len(ledger.read_text().splitlines()) == 6


def test_bad_brain_is_a_clear_error(capsys):
    assert main(["demo", "cognition", "--brain", "gpt"]) == 2
    assert "use 'rules' or 'llm:<litellm model>'" in capsys.readouterr().err


def test_console_script_entry_point():
    result = subprocess.run(
        [sys.executable, "-m", "mesa_llm_mobility.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.startswith("mlm ")
