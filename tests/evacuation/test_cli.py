import pandas as pd

from mesa_llm_mobility.cli import build_parser, main


def test_evac_run_writes_run_directory_and_prints_summary(tmp_path, capsys):
    out = tmp_path / "e1"
    code = main(
        [
            "evac",
            "run",
            "--composition",
            "H",
            "--block",
            "3",
            "--time-limit",
            "20",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "anxious_conformist" in printed and "evacuated" in printed
    for name in (
        "positions",
        "decisions",
        "events",
        "outcomes",
        "pedestrians",
        "model",
    ):
        assert len(pd.read_parquet(out / f"{name}.parquet")) > 0
    assert (out / "trajectories.png").stat().st_size > 10_000
    assert (out / "config.json").exists()


def test_evac_run_parses_explicit_counts():
    args = build_parser().parse_args(
        [
            "evac",
            "run",
            "--composition",
            "rule_following=6,anxious_conformist=5",
            "--out",
            "x",
        ]
    )
    assert args.composition == {"rule_following": 6, "anxious_conformist": 5}


def test_evac_run_reports_bad_composition(tmp_path, capsys):
    code = main(["evac", "run", "--composition", "Q", "--out", str(tmp_path / "bad")])
    assert code == 2
    assert "unknown composition 'Q'" in capsys.readouterr().err
