import json
import os
import sys

import mesa
import pandas as pd
import pytest
import ray

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.evacuation import EvacuationModel
from mesa_llm_mobility.experiment.cli import parse_sweep_parameters
from mesa_llm_mobility.experiment.executors import (
    ProcessExecutor,
    RayExecutor,
    SerialExecutor,
    WorkerLostError,
    make_executor,
)
from mesa_llm_mobility.experiment.parameters import ParameterError
from mesa_llm_mobility.experiment.sweeps import (
    DONE_FILE,
    ERROR_FILE,
    endpoint_of,
    parameter_grid,
    run_name,
    share_endpoint_budget,
    sweep,
)
from mesa_llm_mobility.urban import UrbanMobilityModel
from mesa_llm_mobility.urban.parameters import UrbanParameters
from tests.urban.runs import run_urban

pytestmark = pytest.mark.slow  # its module fixtures take more than ten seconds

URBAN = {
    "population": ["population_70", "no_such_population"],
    "n_agents": 4,
    "days": 1,
}  # the second population file does not exist: a failed run


class Counter(mesa.Model):
    """A tiny model with a DataCollector; counts its constructions."""

    built = 0

    def __init__(self, rate=1, rng=None):
        super().__init__(rng=rng)
        if rate < 0:
            raise ValueError(f"rate must be >= 0, got {rate}")
        Counter.built += 1
        self.rate = rate
        self.total = 0.0
        self.datacollector = mesa.DataCollector(model_reporters={"total": "total"})
        self.datacollector.collect(self)

    def step(self):
        self.total += self.rate * self.rng.random()
        self.datacollector.collect(self)


def _urban(executor, out, **options):
    return sweep(
        UrbanMobilityModel,
        URBAN,
        seeds=2,
        out=out,
        executor=executor,
        progress=False,
        **options,
    )


def test_serial_process_and_ray_give_identical_results(tmp_path, local_ray):
    serial = _urban("serial", tmp_path / "serial")
    process = _urban("process", tmp_path / "process", max_workers=2)
    on_ray = _urban("ray", tmp_path / "ray")
    assert serial.attrs == {"executed": 4, "skipped": 0, "failed": 2}
    assert on_ray.attrs == process.attrs == serial.attrs
    for other in (process, on_ray):
        pd.testing.assert_frame_equal(
            serial.drop(columns="run_dir"), other.drop(columns="run_dir")
        )
    # the batch_run shape: run columns, parameters, seed, the DataCollector's reporters
    assert list(serial.columns[:7]) == [
        "RunId",
        "iteration",
        "Step",
        "population",
        "n_agents",
        "days",
        "seed",
    ]
    assert {"minute", "departed", "arrived", "mean_delay", "run_dir", "error"} <= set(
        serial.columns
    )
    ok = serial[serial["error"].isna()]
    assert sorted(ok["RunId"].unique()) == [0, 2]
    assert ok.groupby("RunId")["minute"].max().tolist() == [1439, 1439]
    # a different seed is a different run
    first, second = (ok[ok["RunId"] == i].reset_index(drop=True) for i in (0, 2))
    assert not first[["departed", "mean_delay"]].equals(
        second[["departed", "mean_delay"]]
    )


def test_a_failed_run_is_recorded_and_the_sweep_completes(tmp_path):
    results = _urban("serial", tmp_path)
    failed = results[results["error"].notna()]
    assert failed["RunId"].tolist() == [1, 3]
    assert failed["error"].str.contains("no_such_population: no such bundled").all()
    assert failed["Step"].isna().all()
    for run_dir in failed["run_dir"]:
        assert (
            "PopulationError" in (tmp_path / run_dir).joinpath(ERROR_FILE).read_text()
        )
        assert not (tmp_path / run_dir).joinpath(DONE_FILE).exists()
    for run_dir in results.loc[results["error"].isna(), "run_dir"].unique():
        assert (tmp_path / run_dir).joinpath("summary.json").is_file()  # the model's


def test_resume_skips_finished_runs_and_retries_failed_ones(tmp_path):
    Counter.built = 0
    grid = {"rate": [1, 2, -1]}
    first = sweep(Counter, grid, seeds=2, out=tmp_path, max_steps=5, progress=False)
    assert Counter.built == 4
    assert first.attrs == {"executed": 6, "skipped": 0, "failed": 2}
    again = sweep(Counter, grid, seeds=2, out=tmp_path, max_steps=5, progress=False)
    assert (
        Counter.built == 4
    )  # nothing finished ran again; the failed runs failed again
    assert again.attrs == {"executed": 2, "skipped": 4, "failed": 2}
    pd.testing.assert_frame_equal(first, again)
    # one more seed: only its runs execute
    more = sweep(Counter, grid, seeds=3, out=tmp_path, max_steps=5, progress=False)
    assert Counter.built == 6
    assert more.attrs["skipped"] == 4


def test_generic_models_follow_batch_run(tmp_path):
    results = sweep(
        Counter, {"rate": [1, 2]}, seeds=[7], out=tmp_path, max_steps=3, progress=False
    )
    expected = pd.DataFrame(
        mesa.batch_run(
            Counter,
            {"rate": [1, 2]},
            rng=[7],
            max_steps=3,
            data_collection_period=1,
            display_progress=False,
        )
    )
    assert results["total"].tolist() == expected["total"].tolist()
    assert results["Step"].tolist() == expected["Step"].tolist()
    assert results["RunId"].tolist() == expected["RunId"].tolist()


def test_evacuation_sweep(tmp_path):
    results = sweep(
        EvacuationModel,
        {"plaza": [None, "no_such_plaza.txt"], "time_limit_s": 2.0},
        seeds=1,
        out=tmp_path,
        progress=False,
    )
    assert results.attrs["failed"] == 1
    assert "no_such_plaza.txt: no such plaza map" in results["error"].dropna().iloc[0]
    ok = results[results["error"].isna()]
    assert {"time_s", "active", "evacuated", "reached"} <= set(ok.columns)
    assert ok["time_s"].max() == pytest.approx(2.0)


class RecordingExecutor(SerialExecutor):
    """Serial, but says it runs 4 tasks at a time, and records the tasks."""

    def __init__(self):
        self.tasks = []

    @property
    def workers(self):
        return 4

    def imap_unordered(self, fn, tasks, on_lost=None):
        for task in tasks:
            self.tasks.append(task)
            yield fn(task)


def test_concurrent_runs_share_the_endpoint_budget(tmp_path):
    assert share_endpoint_budget({"max_concurrency": 64}, 4)["max_concurrency"] == 16
    assert share_endpoint_budget({"max_concurrency": 10}, 4)["max_concurrency"] == 2
    assert share_endpoint_budget({"max_concurrency": 2}, 4)["max_concurrency"] == 1
    assert share_endpoint_budget({"api_base": "http://x"}, 4) == {
        "api_base": "http://x"
    }
    executor = RecordingExecutor()
    options = {"api_base": "http://vllm:8000/v1", "max_concurrency": 64}
    sweep(
        Counter,
        {"rate": [1, 2, 3]},
        seeds=2,
        out=tmp_path,
        max_steps=2,
        executor=executor,
        brain_options=options,
        progress=False,
    )
    assert [t.brain_options for t in executor.tasks] == [
        {"api_base": "http://vllm:8000/v1", "max_concurrency": 16}
    ] * 6
    assert options["max_concurrency"] == 64  # the caller's options are not changed


def test_the_grid_and_names():
    assert parameter_grid({"a": [1, 2], "b": "xy", "c": (True,)}) == [
        {"a": 1, "b": "xy", "c": True},
        {"a": 2, "b": "xy", "c": True},
    ]
    assert run_name({"n_agents": 4, "days": 1}, 3) == "days=1_n_agents=4_seed=3"
    assert run_name({"composition": {"a b": 1}}, 0) == "composition=-a-b-1-_seed=0"
    assert run_name({"rate": -1}, 0) != run_name({"rate": 1}, 0)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda out: sweep(UrbanMobilityModel, {"colour": 4}, out=out),
            "urban has no parameter 'colour'",
        ),
        (
            lambda out: sweep(UrbanMobilityModel, {"n_agents": [4, 0]}, out=out),
            "urban n_agents: must be >= 1, got 0",
        ),
        (
            lambda out: sweep(UrbanMobilityModel, {"days": 1.5}, out=out),
            "urban days: expected a whole number, got 1.5",
        ),
        (lambda out: sweep(Counter, {"rate": []}, out=out), "empty list"),
        (lambda out: sweep(Counter, {}, seeds=[], out=out), "at least one seed"),
        (lambda out: sweep(UrbanMobilityModel, {}, max_steps=3, out=out), "max_steps"),
        (
            lambda out: sweep(Counter, {}, executor="threads", out=out),
            "unknown executor",
        ),
    ],
)
def test_bad_sweeps_are_clear_errors(tmp_path, call, message):
    with pytest.raises(ValueError, match=message):
        call(tmp_path)
    assert not any(tmp_path.iterdir())  # refused before any run


def test_make_executor():
    assert make_executor("serial").workers == 1
    assert make_executor("process", max_workers=3).workers == 3
    with pytest.raises(ValueError, match="max_workers"):
        make_executor("process", max_workers=0)


def test_cli_sweeps_and_resumes(tmp_path, capsys):
    argv = [
        "sweep",
        "evac",
        "--param",
        "composition=A,H",
        "--param",
        "time_limit_s=2",
        "--seeds",
        "2",
        "--out",
        str(tmp_path),
        "--no-progress",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "4 runs: 4 executed, 0 already complete, 0 failed" in out
    assert "composition" in out and "evacuated" in out
    assert (tmp_path / "results.csv").is_file()
    assert main(argv) == 0
    assert "4 runs: 0 executed, 4 already complete" in capsys.readouterr().out


def test_cli_urban_and_errors(tmp_path, capsys):
    argv = [
        "sweep",
        "urban",
        "--param",
        "days=1",
        "--param",
        "agents=4",
        "--out",
        str(tmp_path),
    ]
    assert main([*argv, "--no-progress"]) == 0
    assert "1 runs: 1 executed" in capsys.readouterr().out
    for extra, error in (
        ("colour=red", "mlm: error: urban has no parameter 'colour'"),
        ("days", "use NAME=VALUE"),
        ("days=1.5", "mlm: error: urban days: expected a whole number, got '1.5'"),
        ("composition=Z", "urban has no parameter 'composition'"),
    ):
        assert main([*argv, "--param", extra]) == 2, extra
        assert error in capsys.readouterr().err, extra
    for values, error in (
        ("agents=abc", "urban n_agents: expected a whole number or none, got 'abc'"),
        ("agents=-5", "urban n_agents: must be >= 1, got -5"),
    ):
        assert main([*argv[:4], "--param", values, "--out", str(tmp_path / "x")]) == 2
        assert error in capsys.readouterr().err
        assert not (tmp_path / "x").exists()  # refused before any run


def test_a_sweep_whose_runs_failed_exits_non_zero_with_the_first_error(
    tmp_path, capsys
):
    argv = ["sweep", "urban", "--param", "days=1", "--param", "agents=4"]
    argv += ["--param", "population=no_such_population", "--out", str(tmp_path)]
    assert main([*argv, "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert "1 failed" in captured.out
    error = captured.err.strip().splitlines()[-1]
    assert error.startswith("mlm: error: 1 of 1 runs failed; the first, ")
    assert "no_such_population: no such bundled population" in error


def test_parse_sweep_parameters():
    assert parse_sweep_parameters(
        UrbanParameters,
        ["days=1,2", "agents=70", "events=false", "embedding=hash,minilm"],
    ) == {
        "days": [1, 2],
        "n_agents": 70,
        "events": False,
        "embedding": ["hash", "minilm"],
    }
    with pytest.raises(ParameterError, match="twice"):
        parse_sweep_parameters(UrbanParameters, ["days=1", "n_agents=2", "days=2"])
    with pytest.raises(ParameterError, match="embedding: expected one of auto"):
        parse_sweep_parameters(UrbanParameters, ["embedding=bert"])


def test_an_interrupted_urban_run_resumes_from_its_checkpoint(tmp_path, caplog):
    grid = {"n_agents": 4, "days": 2}
    whole = sweep(
        UrbanMobilityModel, grid, seeds=[3], out=tmp_path / "a", progress=False
    )
    # the same run, stopped by a crash after its day 1 checkpoint, inside a sweep's folder
    run_dir = tmp_path / "b" / run_name(grid, 3)
    run_urban(run_dir, seed=3, stop_after=1, **grid)
    day_1 = run_dir / "tables" / "trips" / "day=1.parquet"
    written = day_1.stat().st_mtime_ns
    with caplog.at_level("INFO", logger="mesa_llm_mobility.experiment.sweeps"):
        resumed = sweep(
            UrbanMobilityModel, grid, seeds=[3], out=tmp_path / "b", progress=False
        )
    assert "resuming from its latest checkpoint" in caplog.text
    assert day_1.stat().st_mtime_ns == written  # day 1 was not run again
    pd.testing.assert_frame_equal(
        whole.drop(columns="run_dir"), resumed.drop(columns="run_dir")
    )


def test_a_folder_of_another_config_starts_again(tmp_path, caplog):
    grid = {"n_agents": 4, "days": 2}
    run_dir = tmp_path / run_name(grid, 3)
    run_urban(run_dir, n_agents=4, days=2, seed=3, events=False, stop_after=1)
    with caplog.at_level("INFO", logger="mesa_llm_mobility.experiment.sweeps"):
        results = sweep(
            UrbanMobilityModel, grid, seeds=[3], out=tmp_path, progress=False
        )
    assert "resuming" not in caplog.text
    assert results["error"].isna().all()
    assert json.loads((run_dir / "config.json").read_text())["events"] is True


class Crashing(Counter):
    """Kills its own process when built with ``crash=True`` (a segfault or an OOM kill)."""

    def __init__(self, rate=1, crash=False, rng=None):
        if crash:
            os._exit(3)
        super().__init__(rate=rate, rng=rng)


def _square_or_die(n):
    if n < 0:
        os._exit(3)
    return n * n


def test_a_dead_worker_fails_its_run_only(tmp_path):
    results = sweep(
        Crashing,
        {"rate": [1, 2, 3], "crash": [False, True]},
        seeds=1,
        out=tmp_path,
        max_steps=2,
        executor="process",
        max_workers=2,
        progress=False,
    )
    failed = results[results["error"].notna()]
    assert failed["crash"].tolist() == [True, True, True]
    assert failed["error"].str.startswith("WorkerLostError: worker died").all()
    assert results.loc[results["error"].isna(), "crash"].eq(False).all()
    assert results["RunId"].nunique() == 6
    for run_dir in failed["run_dir"]:
        assert "worker died" in (tmp_path / run_dir / ERROR_FILE).read_text()
    # the three good runs gave what a serial sweep gives
    good = sweep(
        Counter,
        {"rate": [1, 2, 3]},
        seeds=1,
        out=tmp_path / "s",
        max_steps=2,
        progress=False,
    )
    assert sorted(results["total"].dropna()) == sorted(good["total"])


@pytest.mark.parametrize("executor", ["process", "ray"])
def test_executors_hand_lost_tasks_to_on_lost(executor, local_ray):
    pool = (
        ProcessExecutor(max_workers=2)
        if executor == "process"
        else RayExecutor(max_retries=0)
    )
    if executor == "ray":
        # the test module is not importable in Ray's workers: ship the function by value
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    lost = []
    with pool:
        results = list(
            pool.imap_unordered(
                _square_or_die, [1, -1, 2, 3], lambda task, message: lost.append(task)
            )
        )
        assert sorted(r for r in results if r is not None) == [1, 4, 9]
        assert lost == [-1]
        with pytest.raises(WorkerLostError, match="worker died"):
            list(pool.imap_unordered(_square_or_die, [-2]))


class WithBrain(Counter):
    def __init__(self, rate=1, brain="rules", rng=None):
        super().__init__(rate=rate, rng=rng)
        self.brain_setting = brain


def test_runs_share_the_budget_of_their_own_endpoint(tmp_path):
    options = {"max_concurrency": 64}
    assert endpoint_of({"brain": "rules"}, options) is None
    assert endpoint_of({"brain": "llm:openai/m"}, options) == "openai"
    assert (
        endpoint_of({"brain": "llm:openai/m"}, {"api_base": "http://h/v1"})
        == "http://h/v1"
    )
    assert endpoint_of({}, options) == "default"
    executor = RecordingExecutor()  # 4 at a time
    sweep(
        WithBrain,
        {"rate": [1], "brain": ["rules", "llm:openai/m", "llm:anthropic/c"]},
        seeds=3,
        out=tmp_path,
        max_steps=1,
        executor=executor,
        brain_options=options,
        progress=False,
    )
    by_brain = {}
    for task in executor.tasks:
        by_brain.setdefault(task.parameters["brain"], set()).add(
            task.brain_options.get("max_concurrency")
        )
    # three runs per LLM endpoint can run at once: 64 // 3 each; the rule runs take none
    assert by_brain == {"rules": {64}, "llm:openai/m": {21}, "llm:anthropic/c": {21}}
