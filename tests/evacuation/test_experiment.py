"""The compositions x blocks experiment on the sweep engine, its report and its commands."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    Fault,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.evacuation import model as evacuation_model
from mesa_llm_mobility.evacuation import scripted_llm as pedestrian
from mesa_llm_mobility.evacuation.experiment import (
    EXPERIMENT_FILE,
    block_list,
    parse_compositions,
    read_pooled,
    run_experiment,
)
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.report import NUMBERS_FILE, REPORT_FILE

pytestmark = pytest.mark.slow  # its module fixtures take more than ten seconds

SHORT = 25.0  # seconds: enough for sightings, exit information and evacuations


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("exp") / "exp"
    return run_experiment(
        out, compositions="A,H", blocks=2, time_limit_s=SHORT, progress=False
    )


@pytest.mark.slow
def test_seeds_replicate_the_paired_design(tmp_path):
    result = run_experiment(
        tmp_path / "seeds",
        compositions="A,H",
        blocks=[1],
        seed=4,
        seeds=2,
        factors={"time_limit_s": [8.0, 10.0]},
        time_limit_s=10,
        progress=False,
    )
    peds = result.pooled["pedestrians"]
    assert sorted(peds["seed"].unique()) == [4, 5]
    assert set(peds["time_limit_s"]) == {8.0, 10.0}
    assert len(peds) == 2 * 2 * 2 * 11  # seeds x factor values x compositions
    assert result.results["RunId"].nunique() == 8
    # each run's seed is in its folder name and is the model's seed
    for row in result.results.drop_duplicates("RunId").itertuples():
        assert f"seed={row.seed}" in row.run_dir
    alone = EvacuationModel(composition="H", block=1, rng=5, time_limit_s=10).run()
    mine = peds[(peds["seed"] == 5) & (peds["composition"] == "H")]
    assert (
        mine[mine["time_limit_s"] == 10.0]["resolved_step"].fillna(-1).tolist()
        == alone.pedestrians_frame()["resolved_step"].fillna(-1).tolist()
    )
    experiment = json.loads((result.out / EXPERIMENT_FILE).read_text())
    assert experiment["seeds"] == [4, 5] and experiment["factors"] == {
        "time_limit_s": [8.0, 10.0]
    }
    numbers = json.loads((result.out / NUMBERS_FILE).read_text())
    assert numbers["seeds"]["evacuated_share"]["seeds"] == 2
    differences = numbers["composition_differences"]
    assert any(d["first"] == "A" and d["second"] == "H" for d in differences)
    assert "Outcomes by time_limit_s" in (result.out / REPORT_FILE).read_text()


def test_bad_seeds_and_factors_are_refused(tmp_path):
    with pytest.raises(ValueError, match="seeds"):
        run_experiment(tmp_path / "x", seeds=0, progress=False)
    with pytest.raises(ValueError, match="seeds"):
        run_experiment(tmp_path / "x", seeds=[1, 1], progress=False)
    with pytest.raises(ValueError, match="composition cannot be a factor"):
        run_experiment(tmp_path / "x", factors={"composition": ["A"]}, progress=False)


def test_parse_compositions_and_blocks():
    assert parse_compositions("A-H") == list("ABCDEFGH")
    assert parse_compositions("a, d,H") == ["A", "D", "H"]
    assert parse_compositions("ABD") == ["A", "B", "D"]
    with pytest.raises(ValueError, match="unknown Z"):
        parse_compositions("A,Z")
    with pytest.raises(ValueError, match="bad range"):
        parse_compositions("H-A")
    assert block_list(8) == list(range(1, 9))
    with pytest.raises(ValueError, match="blocks must be 1-8"):
        block_list(9)


def test_every_run_is_one_model_run_pooled_with_its_keys(small):
    pooled = small.pooled
    peds = pooled["pedestrians"]
    assert len(peds) == 4 * 11
    assert set(zip(peds["composition"], peds["block"], strict=False)) == {
        ("A", 1),
        ("A", 2),
        ("H", 1),
        ("H", 2),
    }
    # a run of the sweep is the plain model run with the same parameters and seed
    model = EvacuationModel(composition="H", block=2, rng=0, time_limit_s=SHORT).run()
    mine = peds[(peds["composition"] == "H") & (peds["block"] == 2)]
    expected = model.pedestrians_frame()["outcome"].map(
        {"evacuated": "evacuated", "reached": "killed", "unresolved": "unresolved"}
    )
    assert mine["outcome"].tolist() == expected.tolist()
    info = pooled["information"]
    runs_info = info[(info["composition"] == "H") & (info["block"] == 2)]
    assert len(runs_info) == len(model.exit_information_frame())
    decisions = pooled["decisions"]
    assert (decisions["trigger"] != "initial").all()
    assert decisions["evidence"].isin(["none", "remembered", "direct"]).all()


def test_report_numbers_agree_with_the_pooled_tables(small):
    numbers = json.loads((small.out / NUMBERS_FILE).read_text())["ours"]
    peds = read_pooled(small.out)["pedestrians"]
    assert numbers["pedestrians"] == len(peds)
    assert numbers["evacuated_share"] == pytest.approx(
        (peds["outcome"] == "evacuated").mean()
    )
    knew = peds["usable_exits_known"] > 0
    assert numbers["evacuated_if_usable_known"] == pytest.approx(
        (peds.loc[knew, "outcome"] == "evacuated").mean()
    )
    assert (
        numbers["evacuated_if_usable_exit_known"]
        == numbers["evacuated_if_usable_known"]
    )
    report = (small.out / REPORT_FILE).read_text()
    for heading in (
        "Every statistic beside the paper's",
        "Outcomes by composition",
        "exceed seed noise",
        "Exit knowledge (Fig. 9)",
        "Shouts and exit information",
        "Decision revisions (Fig. 6)",
        "Danger appraisal",
        "Urgency x directness (Fig. 7)",
        "sign-flip",
        "Directional mismatch",
        "Factor models",
    ):
        assert heading in report
    for figure in (
        "outcomes",
        "exit_knowledge",
        "urgency_directness",
        "danger_appraisal",
        "revisions",
        "networks",
    ):
        assert (small.out / "figures" / f"{figure}.png").stat().st_size > 0
    statistics = pd.read_csv(small.out / "tables" / "statistics.csv")
    assert {"logit_r2_combined", "auc_shouts_reached", "spearman_rho"} <= set(
        statistics["key"]
    )
    experiment = json.loads((small.out / EXPERIMENT_FILE).read_text())
    assert experiment["runs"] == 4 and experiment["failed"] == 0
    assert experiment["wall_s"] > 0 and experiment["cpu_s"] > 0


def test_resume_skips_finished_runs(small):
    again = run_experiment(
        small.out,
        compositions="A,H",
        blocks=2,
        time_limit_s=SHORT,
        progress=False,
        report=False,
    )
    assert again.results.attrs["executed"] == 0 and again.results.attrs["skipped"] == 4
    pd.testing.assert_frame_equal(
        again.pooled["pedestrians"], small.pooled["pedestrians"]
    )


class _FailsForH(EvacuationModel):
    def step(self):
        if self.composition == "H":
            raise RuntimeError("injected failure of composition H")
        super().step()


def test_a_failed_run_is_recorded_and_run_again_on_resume(tmp_path, monkeypatch):
    out = tmp_path / "exp"
    monkeypatch.setattr(evacuation_model, "EvacuationModel", _FailsForH)
    first = run_experiment(
        out, compositions="A,H", blocks=1, time_limit_s=5, progress=False
    )
    assert first.results.attrs["failed"] == 1
    experiment = json.loads((out / EXPERIMENT_FILE).read_text())
    ((failed_dir, message),) = experiment["failures"].items()
    assert "composition=H" in failed_dir and "injected failure" in message
    assert (
        "injected failure"
        in (
            out / "runs" / failed_dir.rsplit("/", 1)[-1] / "sweep_error.txt"
        ).read_text()
    )
    assert set(first.pooled["pedestrians"]["composition"]) == {"A"}
    monkeypatch.undo()
    second = run_experiment(
        out, compositions="A,H", blocks=1, time_limit_s=5, progress=False
    )
    assert (
        second.results.attrs["executed"] == 1 and second.results.attrs["skipped"] == 1
    )
    assert set(second.pooled["pedestrians"]["composition"]) == {"A", "H"}


def test_process_executor_gives_the_serial_tables(small, tmp_path):
    parallel = run_experiment(
        tmp_path / "p",
        compositions="A,H",
        blocks=[2],
        time_limit_s=SHORT,
        executor="process",
        max_workers=2,
        progress=False,
        report=False,
    )
    for name in ("pedestrians", "decisions", "information", "shouts"):
        serial = small.pooled[name]
        pd.testing.assert_frame_equal(
            parallel.pooled[name],
            serial[serial["block"] == 2].reset_index(drop=True),
        )


def test_cli_experiment_and_report(tmp_path, capsys):
    out = tmp_path / "cli"
    assert (
        main(
            [
                "evac",
                "experiment",
                "--compositions",
                "B",
                "--blocks",
                "1",
                "--time-limit",
                "10",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "1 runs (1 executed" in printed and "paper: 65.6 / 28.7 / 5.7 %" in printed
    (out / REPORT_FILE).unlink()
    doc = tmp_path / "docs" / "evacuation.md"
    assert main(["evac", "report", str(out), "--doc", str(doc)]) == 0
    assert (out / REPORT_FILE).is_file()
    printed = capsys.readouterr().out
    # every statistic printed beside the paper's
    assert "McFadden R2, combined" in printed and "(paper 0.702)" in printed
    assert "Spearman rho, knowers vs rescued per run" in printed
    page = doc.read_text()
    assert "What does not, and why" in page
    assert (doc.parent / "img" / "evacuation_exit_knowledge.png").is_file()


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert (
        main(
            [
                "evac",
                "experiment",
                "--compositions",
                "A,Q",
                "--out",
                str(tmp_path / "x"),
            ]
        )
        != 0
    )
    assert "unknown Q" in capsys.readouterr().err
    assert main(["evac", "report", str(tmp_path / "nothing")]) != 0
    assert "no pooled table" in capsys.readouterr().err


def _slow_sometimes(body):
    return (sum(map(ord, body["messages"][-1]["content"][-40:])) % 7) * 0.05


def test_one_llm_block_through_the_local_server_with_faults(tmp_path):
    faults = (*provider_faults(hang_s=5.0), Fault.hang(0.4, content="{}"))
    key = "sk-experiment-local-3f2a"
    with FakeLLMServer(
        with_faults(pedestrian.respond, faults, every=4), latency_s=_slow_sometimes
    ) as server:
        result = run_experiment(
            tmp_path / "llm",
            compositions="A,H",
            blocks=1,
            time_limit_s=8,
            brain="llm:openai/fake-model",
            brain_options={
                "api_base": server.api_base,
                "api_key": key,
                "timeout_s": 3.0,  # normal answers never time out under load; the 5 s hang does
                "max_attempts": 3,
                "max_total_s": 15.0,
                "max_concurrency": 16,
            },
            progress=False,
        )
        received = server.request_count
    assert result.results.attrs["failed"] == 0
    decisions = result.pooled["decisions"]
    # the paper's rejection is the default: an invalid answer is rejected, with its reason
    assert len(decisions) and set(decisions["brain_outcome"]) <= {
        "ok",
        "repaired",
        "fallback",
        "rejected",
    }
    calls = 0
    for run_dir in result.results["run_dir"].unique():
        records = Ledger.read(f"{run_dir}/ledger.jsonl")
        assert records and all(
            r["outcome"] in {"ok", "repaired", "fallback"}
            or (r["outcome"] == "rejected" and r["reason"])
            for r in records
        )
        calls += Ledger.summarize_file(f"{run_dir}/ledger.jsonl").loc[
            "all", "http_calls"
        ]
    assert calls == received
    assert (result.out / REPORT_FILE).is_file()
    leaked = [
        p
        for p in (tmp_path / "llm").rglob("*")
        if p.is_file() and key.encode() in p.read_bytes()
    ]
    assert leaked == []
