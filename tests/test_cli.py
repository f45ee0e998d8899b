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


def _commands(parser, prefix=()):
    """Every command of the ``mlm`` parser, as the words that name it."""
    import argparse  # noqa: PLC0415 - only this walk needs argparse's internals

    yield prefix
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*prefix, name))


def test_every_help_prints_without_a_traceback(capsys):
    from mesa_llm_mobility.cli import build_parser  # noqa: PLC0415

    commands = list(_commands(build_parser()))
    assert ("urban", "run") in commands and ("sweep", "traj") in commands
    assert ("evac", "fork") in commands and ("traj", "resume") in commands
    for words in commands:
        with pytest.raises(SystemExit) as exit_info:
            main([*words, "--help"])
        assert exit_info.value.code == 0, words
        assert "usage: mlm" in capsys.readouterr().out, words


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["urban", "run", "--days", "0"], "argument --days: must be >= 1 day, got 0"),
        (["urban", "run", "--agents", "0"], "argument --agents: must be >= 1, got 0"),
        (["urban", "run", "--days", "1.5"], "expected a whole number, got '1.5'"),
        (["evac", "run", "--block", "9"], "argument --block: must be <= 8, got 9"),
        (["evac", "run", "--time-limit", "-1"], "must be > 0 s, got -1.0"),
        (["traj", "run", "--history", "h", "--alpha", "2"], "must be <= 1, got 2.0"),
    ],
)
def test_a_value_out_of_bounds_is_refused_before_anything_runs(
    tmp_path, capsys, argv, expected
):
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--out", str(tmp_path / "out")])
    assert exit_info.value.code == 2
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_urban_input_errors_name_the_file_and_the_choices(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["urban", "run", "--scenario", "nguyen", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "nguyen: no such bundled scenario and no such file (bundled: " in error
    assert "nguyen_dupuis" in error and error.count("\n") == 1
    folder = tmp_path / "scenario"
    folder.mkdir()
    assert main(["urban", "run", "--scenario", str(folder), "--out", str(out)]) == 2
    assert f"{folder}: is a directory, not a scenario" in capsys.readouterr().err
    assert not out.exists()
    # the corrected command is not refused: nothing was half-written
    corrected = ["urban", "run", "--agents", "3", "--embedding", "hash"]
    assert main([*corrected, "--no-progress", "--out", str(out)]) == 0


def test_a_utf16_stay_point_file_is_one_line_naming_it(tmp_path, capsys):
    stays = tmp_path / "stays.csv"
    stays.write_text("agent_id,poi_id\n1,2\n", encoding="utf-16")
    out = tmp_path / "gen"
    assert main(["traj", "run", "--history", str(stays), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"mlm: error: {stays}: stay-point file is not UTF-8 text")
    assert "save it as UTF-8" in error and error.count("\n") == 1
    assert not out.exists()


GATES_ONLY = """[plaza]
name: walled
cell_size_m: 0.4
[openings]
4 gate1 gate 0.4
[map]
##4###
#s...#
#.T..#
#..a.#
######
"""


def test_a_plaza_with_gates_and_no_exits_is_warned_about(tmp_path, caplog):
    from mesa_llm_mobility.evacuation import EvacuationModel  # noqa: PLC0415

    plaza = tmp_path / "walled.txt"
    plaza.write_text(GATES_ONLY, encoding="utf-8")
    with caplog.at_level("WARNING"):
        EvacuationModel(plaza=str(plaza), composition={"average": 1}).close()
    assert "plaza walled has gates but no exits: once the gates close" in caplog.text


def test_holding_out_more_days_than_a_history_has_is_warned_about(tmp_path, caplog):
    from mesa_llm_mobility.trajectory import TrajectoryParameters, synthesize  # noqa: PLC0415
    from mesa_llm_mobility.trajectory.run_files import read_inputs  # noqa: PLC0415

    stays = synthesize(6, 2, seed=0).stays  # 14 days each
    with caplog.at_level("WARNING"):
        read_inputs(TrajectoryParameters(history=stays, hold_out=30))
    assert "hold_out 30: 6 of 6 individuals have no more than 30 days (at most 14)" in (
        caplog.text
    )
