from __future__ import annotations

from pathlib import Path

from mesa_llm_mobility.viz.launch import open_or_error, option_from_argv


def test_options_after_the_double_dash_win_over_the_variable(monkeypatch):
    monkeypatch.setenv("MLM_APP_HISTORY", "data/env")
    argv = ["solara", "run", "app.py", "--", "--run", "r", "--history=data/x"]
    assert option_from_argv("--history", "MLM_APP_HISTORY", argv) == "data/x"
    assert option_from_argv("--run", "MLM_APP_RUN", argv) == "r"
    before = ["solara", "run", "--history", "data/y", "app.py"]  # solara's own options
    assert option_from_argv("--history", "MLM_APP_HISTORY", before) == "data/env"
    monkeypatch.delenv("MLM_APP_HISTORY")
    assert option_from_argv("--history", "MLM_APP_HISTORY", ["solara"]) is None


def test_open_or_error_keeps_the_failure_as_its_message(tmp_path):
    assert open_or_error(str.upper, "run") == ("RUN", None)
    opened, error = open_or_error(
        lambda p: Path(p).read_text(), str(tmp_path / "missing")
    )
    assert opened is None and "No such file" in error and "missing" in error
    assert open_or_error(int, "x")[1] == "invalid literal for int() with base 10: 'x'"
