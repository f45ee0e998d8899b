"""Checkpoints and resume of an evacuation run: an interrupted run finishes as if never stopped.

The rule brain (memory streams, a second route worker after the resume, a corrupt latest
checkpoint, a finished run, the command line) and the LLM brain through the real client against
the local server: provider faults, answers 0-0.3 s late, an idle gap, and a crash between two
checkpoints whose paid answers are replayed from the ledger.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time

import pytest
from pandas.testing import assert_frame_equal

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import FakeLLMServer, provider_faults
from mesa_llm_mobility.evacuation import route_planner, scripted_llm
from mesa_llm_mobility.evacuation.run_files import TABLES
from mesa_llm_mobility.experiment.lifecycle import resume_run
from mesa_llm_mobility.experiment.run_directory import RunDirectory, RunDirectoryError
from mesa_llm_mobility.memory.store import MemoryStore
from tests.conftest import local_server_options, slow_sometimes
from tests.evacuation.runs import run_evacuation

CONFIG = {"composition": "H", "seed": 3, "time_limit_s": 20}
"""11 pedestrians for 60 steps: some evacuate, some are reached, memories are revised."""

KEY = "sk-evac-resume-local"


def _same_tables(a: RunDirectory, b: RunDirectory) -> None:
    for name in TABLES:
        assert_frame_equal(a.read_table(name), b.read_table(name), check_exact=True)


def _stored_memories(run: RunDirectory) -> dict[int, list[str]]:
    store = MemoryStore.open(run.memory_dir)
    try:
        versions = run.read_table("memory_versions")
        return {
            int(agent): [n.content for n in store.stream(int(agent)).nodes()]
            for agent in versions["agent_id"].unique()
        }
    finally:
        store.close()


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("evac-resume") / "whole"
    return run_evacuation(out, CONFIG, memory_stream=True).run


@pytest.mark.slow
def test_a_stopped_run_resumes_to_the_same_run(tmp_path, uninterrupted, monkeypatch):
    monkeypatch.setattr(route_planner, "MIN_QUERIES_PER_WORKER", 1)
    stopped = run_evacuation(
        tmp_path / "run",
        CONFIG,
        memory_stream=True,
        checkpoint_every_s=5,
        stop_after=20,
    )
    assert not stopped.finished
    assert stopped.model.tick == 30  # the first checkpoint at or after step 20
    run = stopped.run
    # the latest two are kept (with their memory snapshots), the older ones removed
    assert run.checkpoint_numbers() == [15, 30]
    assert sorted(p.name for p in run.checkpoints_dir.iterdir()) == [
        "checkpoint_15.pkl",
        "checkpoint_15_memory",
        "checkpoint_30.pkl",
        "checkpoint_30_memory",
        "index.json",
    ]
    assert run.table_names() == []  # nothing of the run's end is written yet

    # resumed with two route workers: the routes, so the run, do not depend on them
    resumed = resume_run(run.path, route_workers=2)
    assert resumed.finished and resumed.model.tick == 60
    assert resumed.model.route_planner.workers == 2
    assert resumed.model.route_planner.remote_queries > 0
    # the restored model was checkpointed again, up to its end
    assert run.checkpoint_numbers() == [45, 60]
    _same_tables(uninterrupted, run)
    assert _stored_memories(run) == _stored_memories(uninterrupted)
    assert run.metadata["extra"]["steps"] == 60


def test_a_corrupt_latest_checkpoint_is_skipped(tmp_path, uninterrupted, caplog):
    stopped = run_evacuation(
        tmp_path / "run", CONFIG, checkpoint_every_s=5, stop_after=45
    )
    latest = stopped.run.checkpoints_dir / "checkpoint_45.pkl"
    latest.write_bytes(latest.read_bytes()[:1000])  # a crash while the disk filled up
    with caplog.at_level(logging.WARNING):
        resumed = resume_run(stopped.run.path)
    assert "skipping checkpoint 45" in caplog.text
    assert "checkpoint_45.pkl" in caplog.text
    assert resumed.finished
    _same_tables(uninterrupted, stopped.run)


@pytest.mark.slow
def test_a_finished_run_is_written_again_and_bad_run_directories_are_named(
    tmp_path, uninterrupted, capsys
):
    out = tmp_path / "cli"
    assert main(["evac", "run", "--composition", "H", "--seed", "3", "--time-limit", "20", "--checkpoint-every", "10", "--out", str(out)]) == 0  # fmt: skip
    run = RunDirectory.open(out)
    assert run.checkpoint_numbers() == [30, 60]
    _same_tables(uninterrupted, run)
    assert "60/60" in capsys.readouterr().err  # the progress bar, to its last step
    (run.tables_dir / "outcomes.parquet").unlink()  # a crash while writing the outputs
    assert main(["evac", "resume", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr()
    assert "ended at 20.0 s (60 steps)" in printed.out
    assert "60/60" not in printed.err
    _same_tables(uninterrupted, run)

    plain = run_evacuation(tmp_path / "plain", CONFIG)  # no interval asked for
    assert plain.run.checkpoint_numbers() == [0, 60]  # the start and the end
    bare = RunDirectory.create(
        tmp_path / "bare",
        plain.run.config,
        model="evacuation",
        model_class=plain.run.metadata["model_class"],
    )
    with pytest.raises(RunDirectoryError, match="no usable checkpoint to resume from"):
        resume_run(bare.path)
    urban_like = RunDirectory.create(tmp_path / "daily", {"days": 1}, model="urban")
    with pytest.raises(RunDirectoryError, match="a run of the urban model, not of the"):
        resume_run(urban_like.path, model="evacuation")
    with pytest.raises(
        ValueError, match="checkpoint_every_s must be at least one step"
    ):
        run_evacuation(tmp_path / "bad", CONFIG, checkpoint_every_s=0.1)
    with pytest.raises(SystemExit):
        main(["evac", "run", "--checkpoint-every", "nan", "--out", str(tmp_path / "x")])
    assert "--checkpoint-every: expected a finite number" in capsys.readouterr().err


def _faults_by_prompt(responder, every: int):
    """Fault the first sight of one prompt in ``every`` (by the prompt, not by arrival order).

    A resumed run then meets the same faults as an uninterrupted one, whatever order its
    answers arrive in; a retry of the same prompt is answered.
    """
    faults = provider_faults(hang_s=3.0)
    seen: set[str] = set()
    lock = threading.Lock()

    def respond(body):
        prompt = body["messages"][-1]["content"]
        digest = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
        with lock:
            first = prompt not in seen
            seen.add(prompt)
        if first and digest % every == 0:
            return faults[digest // every % len(faults)]
        return responder(body)

    return respond


LLM_CONFIG = {
    "composition": {"average": 3, "anxious_conformist": 3},
    "seed": 2,
    "brain": "llm:openai/fake-model",
    "time_limit_s": 10,
}


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_an_llm_run_resumes_after_a_crash_replaying_the_answers_it_paid_for(tmp_path):
    def responder():
        return _faults_by_prompt(
            scripted_llm.with_unoffered_routes(scripted_llm.respond, every=3), every=5
        )

    with FakeLLMServer(responder(), latency_s=slow_sometimes) as server:
        options = local_server_options(server, KEY)
        whole = run_evacuation(tmp_path / "whole", LLM_CONFIG, brain_options=options)
        asked_whole = server.request_count
    with FakeLLMServer(responder(), latency_s=slow_sometimes) as server:
        options = local_server_options(server, KEY)
        # a crash after step 24: the checkpoint of step 24 was being written and is torn
        stopped = run_evacuation(
            tmp_path / "run",
            LLM_CONFIG,
            brain_options=options,
            checkpoint_every_s=4,
            stop_after=24,
        )
        torn = stopped.run.checkpoints_dir / "checkpoint_24.pkl"
        torn.write_bytes(torn.read_bytes()[:-10])
        asked_before = server.request_count
        server.reset_stats()
        time.sleep(0.5)  # the server's connections sit idle until the user resumes
        resumed = resume_run(stopped.run.path, brain_options=options)
        asked_after = server.request_count
    run = stopped.run
    assert resumed.finished
    _same_tables(whole.run, run)
    decisions = run.read_table("decisions")
    assert set(decisions["outcome"]) >= {"ok", "rejected"}  # the faults showed
    records = Ledger.read(run.ledger_path)
    replayed = [r for r in records if r["replayed"]]
    # the steps 12-23 were asked before the crash: answered from the ledger, not the server
    assert replayed and {r["tags"]["step"] for r in replayed} <= set(range(12, 24))
    assert all(r["tags"]["step"] >= 12 for r in replayed)
    # a replayed record carries the calls its first recording made: the ledger adds up
    calls = sum(r["attempts"] + r["carried_attempts"] for r in records)
    assert calls == asked_before + asked_after
    # every call was paid once: the interrupted run made no more than the whole one
    assert asked_before + asked_after == asked_whole
    # the key reached no file of the run (config, ledger, checkpoints, tables)
    for path in run.path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in json.dumps(run.config)


def test_a_restored_model_has_one_cell_class_with_the_grid_layers_and_pickles_again():
    import pickle  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415

    from mesa_llm_mobility.evacuation.model import EvacuationModel  # noqa: PLC0415

    with EvacuationModel(rng=1, time_limit_s=4) as model:
        for _ in range(5):
            model.step()
        restored = pickle.loads(pickle.dumps(model))
    cells = list(restored.crowd.grid.all_cells)
    assert len({type(cell) for cell in cells}) == 1  # Mesa 3.5 gives each its own class
    layer = restored.crowd.grid._mesa_property_layers["empty"]
    assert np.array_equal(
        layer.data, model.crowd.grid._mesa_property_layers["empty"].data
    )
    for cell in cells:
        assert cell.empty == layer.data[cell.coordinate] == (not cell.agents)
    again = pickle.loads(
        pickle.dumps(restored)
    )  # a second checkpoint of the resumed run
    assert again.tick == model.tick == 5
