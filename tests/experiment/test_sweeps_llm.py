"""Sweeps of LLM runs through the real client against the project's local server.

Two runs at a time share one endpoint budget: the server never sees more requests in flight than
the budget; the same deterministic answers give the same table on one process or two; with
provider faults, slow answers and an idle gap between the sweep and its resume, every run
finishes, every decision resolves, and the resumed sweep asks nothing again.
"""

from __future__ import annotations

import time

import pandas as pd
import pytest

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.evacuation import EvacuationModel
from mesa_llm_mobility.evacuation import scripted_llm as pedestrian
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.experiment.sweeps import sweep
from mesa_llm_mobility.urban import UrbanMobilityModel
from mesa_llm_mobility.urban import scripted_llm as traveller
from tests.conftest import latency_by_prompt, local_server_options

KEY = "sweep-suite-key-7f3a91c2"
BRAIN = "llm:openai/fake-model"
GRID = {"n_agents": 6, "days": 1, "brain": BRAIN}
RESOLVED = {"ok", "repaired", "fallback"}


_slow_sometimes = latency_by_prompt(5, 0.04)  # answers take 0-0.16 s, by the prompt


def _options(server, budget):
    return local_server_options(server, KEY, max_concurrency=budget)


def _sweep(out, server, executor, budget=4, model=UrbanMobilityModel, grid=GRID):
    return sweep(
        model,
        grid,
        seeds=2,
        out=out,
        executor=executor,
        max_workers=2,
        brain_options=_options(server, budget),
        progress=False,
    )


def _assert_no_secret(folder):
    leaked = [
        str(p)
        for p in folder.rglob("*")
        if p.is_file() and KEY.encode() in p.read_bytes()
    ]
    assert leaked == []


@pytest.mark.slow
def test_llm_runs_on_two_processes_equal_serial_and_share_the_budget(tmp_path):
    with FakeLLMServer(traveller.respond, latency_s=_slow_sometimes) as server:
        serial = _sweep(tmp_path / "serial", server, "serial")
        server.reset_stats()
        parallel = _sweep(tmp_path / "process", server, "process", budget=4)
        # two runs at once, each with 4 // 2 requests in flight at most
        assert 1 <= server.max_in_flight <= 4
    assert serial["error"].isna().all()
    pd.testing.assert_frame_equal(
        serial.drop(columns="run_dir"), parallel.drop(columns="run_dir")
    )
    _assert_no_secret(tmp_path)


@pytest.mark.slow
def test_faulty_slow_llm_sweep_completes_and_resumes_after_an_idle_gap(tmp_path):
    faults = provider_faults()
    with FakeLLMServer(
        with_faults(traveller.respond, faults, every=4), latency_s=_slow_sometimes
    ) as server:
        first = _sweep(tmp_path, server, "process")
        received = server.request_count
        time.sleep(2)  # idle: the resumed sweep reconnects from scratch
        again = _sweep(tmp_path, server, "process")
        assert (
            server.request_count == received
        )  # finished runs are read back, not re-asked
    assert first["error"].isna().all()
    assert again.attrs == {"executed": 0, "skipped": 2, "failed": 0}
    for run_dir in first["run_dir"].unique():
        run = RunDirectory.open(run_dir)
        records = Ledger.read(run.ledger_path)
        assert records and {r["outcome"] for r in records} <= RESOLVED
        assert any(r["outcome"] != "ok" for r in records)  # the faults were met
        decisions = run.read_table("decisions")
        assert decisions.loc[decisions["outcome"] == "fallback", "reason"].notna().all()
    _assert_no_secret(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["serial", "process"])
def test_evacuation_llm_sweep(tmp_path, executor):
    grid = {"composition": "A", "time_limit_s": 3.0, "brain": BRAIN}
    with FakeLLMServer(
        with_faults(pedestrian.respond, provider_faults(), every=5),
        latency_s=_slow_sometimes,
    ) as server:
        results = _sweep(tmp_path, server, executor, model=EvacuationModel, grid=grid)
        assert server.request_count > 0
    assert results["error"].isna().all()
    for run_dir in results["run_dir"].unique():
        records = Ledger.read(RunDirectory.open(run_dir).ledger_path)
        # evacuation rejects invalid answers by default, as the paper does (with the reason)
        assert records and {r["outcome"] for r in records} <= RESOLVED | {"rejected"}
        assert all(r["reason"] for r in records if r["outcome"] == "rejected")
    _assert_no_secret(tmp_path)
