"""``mlm urban published`` (urban/published_cli.py): offline, from a checkout, bad input."""

from __future__ import annotations

import json

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.experiment.run_directory import RunDirectory


def test_the_shipped_run_offline(capsys):
    assert main(["urban", "published"]) == 0
    out = capsys.readouterr().out
    assert "no minute missing" in out
    lines = {
        line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()
    }
    assert lines["starters_on_time"] == ["16", "19", "22"]
    assert lines["starters_median_departure"] == ["07:30", "07:30", "07:30"]
    assert "commutes leaving per 15 minutes:" in out


def test_from_a_checkout_to_data_and_a_run_directory(gatsim_checkout, tmp_path, capsys):
    code = main(
        [
            "urban",
            "published",
            "--from",
            str(gatsim_checkout),
            "--write-data",
            str(tmp_path / "data"),
            "--run-dir",
            str(tmp_path / "run"),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "trips 2 (2 arrived) of 2 travellers" in out
    info = json.loads((tmp_path / "data" / "info.json").read_text())
    assert info["simulation_name"] == "test"
    assert RunDirectory.open(tmp_path / "run").table_days("trips") == [1]


def test_a_bad_checkout_is_one_line(gatsim_checkout, tmp_path, capsys):
    assert main(["urban", "published", "--from", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mlm: error: ") and "not a GATSim checkout" in err
    assert len(err.strip().splitlines()) == 1
    (
        gatsim_checkout / "gatsim" / "storage" / "experiment_2" / "movements" / "7.json"
    ).unlink()
    assert main(["urban", "published", "--from", str(gatsim_checkout)]) == 2
    err = capsys.readouterr().err
    assert "1 of 501 minutes missing (7)" in err
    assert (
        main(["urban", "published", "--from", str(gatsim_checkout), "--allow-missing"])
        == 0
    )
    assert "missing: 7 (not interpolated)" in capsys.readouterr().out
