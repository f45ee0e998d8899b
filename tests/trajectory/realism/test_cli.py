"""``mlm traj realism`` end to end on small files, and its one-line errors."""

import pandas as pd

from mesa_llm_mobility.cli import main


def test_realism_prints_and_writes_the_table(halves, tmp_path, capsys):
    real, other = halves
    real = real[real["agent_id"] < 10]
    other = other[other["agent_id"] < 10]
    real_path, generated_path = (
        tmp_path / "real.parquet",
        tmp_path / "generated.parquet",
    )
    real.to_parquet(real_path)
    other.to_parquet(generated_path)
    out = tmp_path / "realism.csv"
    argv = [
        "traj",
        "realism",
        "--real",
        str(real_path),
        "--generated",
        str(generated_path),
    ]
    assert main([*argv, "--seed", "3", "--csv", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "10 individuals compared (0 left out), seed 3" in printed
    for detector in ("visit", "individual", "classifier"):
        assert detector in printed
    table = pd.read_csv(out)
    assert table["detector"].tolist() == ["visit", "individual", "classifier"]
    assert table["auroc"].between(0, 1).all()
    assert (
        main([*argv, "--detectors", "visit_individual", "--classifier", "boosting"])
        == 0
    )
    assert "visit_individual" in capsys.readouterr().out


def test_realism_errors_are_one_line(halves, tmp_path, capsys):
    real, _ = halves
    real_path = tmp_path / "real.parquet"
    real[real["agent_id"] < 3].to_parquet(real_path)
    missing = tmp_path / "nothing.parquet"
    argv = ["traj", "realism", "--real", str(real_path), "--generated", str(missing)]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.startswith("mlm: error: ") and "nothing.parquet" in error
    assert error.count("\n") == 1
    other = real[real["agent_id"] >= 3]
    other_path = tmp_path / "other.parquet"
    real[real["agent_id"] == 3].to_parquet(other_path)
    del other
    argv[-1] = str(other_path)
    assert main(argv) == 2
    assert "no individual has both" in capsys.readouterr().err
