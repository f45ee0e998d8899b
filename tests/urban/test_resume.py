"""Checkpoints, resume and fork of urban runs (``mesa_llm_mobility.urban.runner``)."""

from __future__ import annotations

import pandas as pd
import pytest

from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.memory import MemoryStore
from mesa_llm_mobility.urban.runner import resume_urban, run_urban, urban_config

TABLES = ("trips", "decisions", "plans", "link_states")
CONFIG = urban_config(days=2, n_agents=8, seed=3)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    return run_urban(tmp_path_factory.mktemp("runs") / "full", CONFIG, progress=False)


def _assert_same_tables(left: RunDirectory, right: RunDirectory) -> None:
    for name in TABLES:
        pd.testing.assert_frame_equal(left.read_table(name), right.read_table(name))


def test_every_day_boundary_has_a_checkpoint_and_a_memory_snapshot(uninterrupted):
    run = uninterrupted.run
    assert run.checkpoint_days() == [0, 1, 2]
    for day in (0, 1, 2):
        assert (run.checkpoints_dir / f"day_{day}_memory").is_dir()
    store = MemoryStore.open(run.checkpoints_dir / "day_2_memory")
    try:
        assert store.agent_ids()  # the snapshot reopens with its agents' memories
    finally:
        store.close()


def test_interrupted_run_resumed_equals_uninterrupted(uninterrupted, tmp_path):
    stopped = run_urban(tmp_path / "b", CONFIG, progress=False, stop_after_day=1)
    assert not stopped.finished and stopped.plots == []
    assert stopped.run.table_days("trips") == [1]
    resumed = resume_urban(tmp_path / "b", progress=False)
    assert resumed.finished
    _assert_same_tables(uninterrupted.run, resumed.run)
    pd.testing.assert_frame_equal(
        uninterrupted.run.read_table("memories"), resumed.run.read_table("memories")
    )
    assert resumed.summary["trips"] == uninterrupted.summary["trips"]
    assert {p.name for p in resumed.plots} == {p.name for p in uninterrupted.plots}
    again = resume_urban(tmp_path / "b", progress=False)  # finished: only reported
    assert again.finished and again.summary["trips"] == resumed.summary["trips"]


def test_corrupt_latest_checkpoint_falls_back_to_the_previous(uninterrupted, tmp_path):
    stopped = run_urban(tmp_path / "c", CONFIG, progress=False, stop_after_day=1)
    path = stopped.run.checkpoint_path(1)
    path.write_bytes(path.read_bytes()[:100])  # truncated
    resumed = resume_urban(tmp_path / "c", progress=False)  # from day 0
    _assert_same_tables(uninterrupted.run, resumed.run)
