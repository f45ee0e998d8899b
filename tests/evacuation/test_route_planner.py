"""Route planning on worker processes: the same run as in one process, and a dead worker is not fatal."""

from __future__ import annotations

import dataclasses
import gc
import logging
import os
import pickle
import signal
import time

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.evacuation import contexts, route_planner, scripted_llm
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.personality import mixed_composition
from mesa_llm_mobility.evacuation.route_planner import RoutePlanner, _balanced_chunks

FRAMES = ("decisions_frame", "positions_frame", "pedestrians_frame", "events_frame")


@pytest.fixture
def every_step_shared(monkeypatch):
    """Share out even a step with two queries (the default keeps small batches here)."""
    monkeypatch.setattr(route_planner, "MIN_QUERIES_PER_WORKER", 1)


def _frames(model):
    return {name: getattr(model, name)() for name in FRAMES}


def _assert_same_run(a, b):
    for name in FRAMES:
        pd.testing.assert_frame_equal(a[name], b[name], obj=name)


def _rule_run(workers, kill_after=None, steps=None):
    model = EvacuationModel(
        composition="A", rng=3, time_limit_s=25, route_workers=workers
    )
    try:
        while model.running:
            model.step()
            if kill_after is not None and model.tick == kill_after:
                pool = model.route_planner._pool
                assert pool is not None, "the workers should be up by now"
                for pid in list(pool._processes):
                    os.kill(pid, signal.SIGKILL)
        return _frames(model), model.route_planner
    finally:
        model.close()


@pytest.mark.slow
def test_route_workers_give_exactly_the_run_of_one_process(every_step_shared):
    alone, _ = _rule_run(1)
    shared, planner = _rule_run(2)
    _assert_same_run(alone, shared)
    assert planner.remote_queries > 0 and planner.failures == 0
    assert planner._pool is None  # closed with the model


@pytest.mark.slow
def test_a_killed_route_worker_is_answered_here_and_the_run_is_unchanged(
    every_step_shared, caplog
):
    alone, _ = _rule_run(1)
    with caplog.at_level(logging.WARNING, logger=route_planner.__name__):
        shared, planner = _rule_run(2, kill_after=6)
    _assert_same_run(alone, shared)
    assert planner.failures == 1
    assert planner.remote_queries > 0  # before the kill
    assert any("route worker failed" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_a_run_restored_after_a_worker_failure_starts_its_workers_again(
    every_step_shared,
):
    """A failure gives up the workers of one process; a resumed run (a new one) tries again."""
    alone, _ = _rule_run(1)
    model = EvacuationModel(composition="A", rng=3, time_limit_s=25, route_workers=2)
    try:
        while model.tick < 12:
            model.step()
            if model.tick == 6:
                for pid in list(model.route_planner._pool._processes):
                    os.kill(pid, signal.SIGKILL)
        assert model.route_planner.failures == 1
        assert model.route_planner._pool is None
        restored = pickle.loads(pickle.dumps(model))
    finally:
        model.close()
    restored.attach("rules")
    before = restored.route_planner.remote_queries
    try:
        while restored.running:
            restored.step()
        assert restored.route_planner.remote_queries > before  # workers up again
        assert restored.route_planner.failures == 1  # the count is kept
        _assert_same_run(alone, _frames(restored))
    finally:
        restored.close()


@pytest.mark.parametrize("workers", [0, -1, 1.5])
def test_route_workers_must_be_a_positive_integer(workers):
    with pytest.raises(ValueError, match="route_workers must be an integer >= 1"):
        EvacuationModel(composition={"average": 2}, rng=0, route_workers=workers)


def test_chunks_keep_order_and_balance_the_window_cells():
    class Query:
        def __init__(self, cells):
            self.window = type("W", (), {"n_cells": cells})()

    queries = [Query(c) for c in (900, 100, 500, 400, 50, 450)]
    chunks = _balanced_chunks(queries, 2)
    assert sorted(p for c in chunks for p in c.positions) == list(range(6))
    for chunk in chunks:
        assert chunk.positions == sorted(chunk.positions)
        assert [queries[p] for p in chunk.positions] == list(chunk)
    # largest first to the least loaded: 900 | 500 450 | 400 -> A, 100 50 -> B
    loads = [sum(q.window.n_cells for q in c) for c in chunks]
    assert loads == [1300, 1100]
    assert [len(c) for c in _balanced_chunks(queries[:1], 3)] == [1, 0, 0]


def _options_queries(model, agents):
    """The route-options queries the agents would state now (no shouts heard)."""
    state = (model.crowd, model.senses, model.scene, model.clock)
    rows = [agent.index for agent in agents]
    seen = contexts._in_view(rows, model.crowd, model.senses, model.plaza.height)
    return [
        contexts._draft(agent, "blocked", [], view, *state)[0]
        for agent, view in zip(agents, seen, strict=True)
    ]


@pytest.mark.parametrize(
    ("rates", "sent"),
    [
        ({}, 11),  # nothing measured yet: equal shares of 22 queries
        ({"draft": 1.0, "here": 1.0, "workers": 3.0}, 11),  # m = (3 - 1) / (1 + 3)
        ({"draft": 0.5, "here": 1.0, "workers": 1.0}, 16),  # m = (1 - 0.5) / 2
        # m < 0: this process keeps its least share (2 %: none of 22)
        ({"draft": 2.0, "here": 1.0, "workers": 1.0}, 22),
        ({"draft": 0.5, "here": 1.0, "workers": 0.5}, 22),  # m = 0
    ],
)
@pytest.mark.slow
def test_a_stream_sends_the_workers_their_share_and_answers_in_order(
    monkeypatch, rates, sent
):
    monkeypatch.setattr(route_planner, "STREAM_CHUNK", 4)
    model = EvacuationModel(composition="A", rng=3, time_limit_s=25, route_workers=2)
    try:
        model.step()
        queries = (_options_queries(model, model.pedestrians) * 2)[:22]
        planner = model.route_planner
        planner.seconds_per_query = dict(rates)
        stream = planner.stream(len(queries))
        for query in queries:
            stream.add(query)
        answers = stream.answers()
        assert planner.remote_queries == sent and planner.failures == 0
        for mine, theirs in zip(answers, planner.solver.answer(queries), strict=True):
            assert mine.options == theirs.options
            assert np.array_equal(mine.reachable, theirs.reachable)
        assert set(planner.seconds_per_query) == {"draft", "here", "workers"}
    finally:
        model.close()


def test_a_planner_of_one_process_starts_no_worker():
    model = EvacuationModel(composition="A", rng=1, time_limit_s=3)
    try:
        model.run()
        planner: RoutePlanner = model.route_planner
        assert planner._pool is None and planner.remote_queries == 0
    finally:
        model.close()


def _llm_run(workers, ledger=None):
    """Scripted LLM answers with provider faults, answers 0-0.3 s late and idle gaps."""
    responder = with_faults(
        scripted_llm.with_unoffered_routes(scripted_llm.respond, every=4),
        provider_faults(),
        every=7,
    )

    def slow_sometimes(body):
        return (sum(map(ord, body["messages"][-1]["content"][-40:])) % 7) * 0.05

    with FakeLLMServer(responder, latency_s=slow_sometimes) as server:
        model = EvacuationModel(
            composition={"rule_following": 4, "anxious_conformist": 4},
            rng=5,
            brain="llm:openai/fake-model",
            brain_options={
                "api_base": server.api_base,
                "api_key": "sk-route-workers",
                "timeout_s": 1.0,
                "max_attempts": 3,
                "max_total_s": 8.0,
                "ledger": ledger,
            },
            time_limit_s=6,
            route_workers=workers,
        )
        try:
            while model.running:
                model.step()
                if model.tick % 5 == 0:
                    time.sleep(0.1)  # pooled connections and the route worker sit idle
            return _frames(model), model.route_planner, server.request_count
        finally:
            model.close()


@pytest.mark.slow
def test_the_llm_path_with_route_workers_sees_the_same_options(
    every_step_shared, tmp_path
):
    alone, _, _ = _llm_run(1)
    shared, planner, requests = _llm_run(2, ledger=tmp_path / "ledger.jsonl")
    _assert_same_run(alone, shared)
    assert planner.remote_queries > 0 and requests > 0
    decisions = shared["decisions_frame"]
    assert requests > len(decisions)  # the faults cost retries
    assert (decisions["outcome"] == "rejected").any()  # unoffered routes, validated
    assert "sk-route-workers" not in (tmp_path / "ledger.jsonl").read_text()


_ORPHAN_SCRIPT = """
import sys, time
from mesa_llm_mobility.evacuation import route_planner
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.personality import mixed_composition
if __name__ == "__main__":
    route_planner.MIN_QUERIES_PER_WORKER = 1
    model = EvacuationModel(composition="A", rng=3, time_limit_s=25, route_workers=2)
    model.step()
    print(*model.route_planner._pool._processes, flush=True)
    time.sleep(60)
"""


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (an ended process not yet reaped, a zombie, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_worker_ends_when_the_models_process_is_killed(tmp_path):
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    script = tmp_path / "orphan.py"
    script.write_text(_ORPHAN_SCRIPT)
    parent = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True
    )
    try:
        workers = [int(p) for p in parent.stdout.readline().split()]
        assert workers, "the model should have started its route worker"
    finally:
        parent.kill()  # no close(), no atexit: the worker is orphaned
        parent.wait()
    deadline = time.monotonic() + 15
    alive = set(workers)
    while alive and time.monotonic() < deadline:
        for pid in list(alive):
            if not _running(pid):
                alive.discard(pid)
        time.sleep(0.2)
    assert not alive, f"route workers {sorted(alive)} outlived their model's process"


def _crowded_run():
    model = EvacuationModel(
        composition=mixed_composition(120), random_spawn=True, rng=0, time_limit_s=15
    )
    model.run()
    model.close()
    return _frames(model), model.route_planner


def test_a_pedestrian_standing_on_an_unchanged_map_reuses_its_search(monkeypatch):
    """Reused searches give exactly the run of searching every query anew."""
    reused, planner = _crowded_run()
    assert planner.reused_queries > 0
    original = route_planner.QueryStream.add
    monkeypatch.setattr(
        route_planner.QueryStream,
        "add",
        lambda self, query, owner=None: original(self, query, None),
    )
    searched, fresh = _crowded_run()
    assert fresh.reused_queries == 0
    _assert_same_run(reused, searched)


def test_a_reused_answer_has_the_new_querys_attributes():
    model = EvacuationModel(composition="A", rng=3, time_limit_s=25)
    try:
        model.step()
        agent = model.pedestrians[0]
        (query,) = _options_queries(model, [agent])
        planner = model.route_planner
        first = planner.stream(1)
        first.add(query, agent.index)
        (answer,) = first.answers()
        moved = dataclasses.replace(
            query,
            people=np.array([query.source]),  # someone beside it now
            visited=frozenset(answer.options[0].path[:3]),
        )
        second = planner.stream(1)
        second.add(moved, agent.index)
        (again,) = second.answers()
        assert planner.reused_queries == 1
        expected = planner.solver.options(moved)
        assert again.options == expected.options != answer.options
        assert np.array_equal(again.reachable, expected.reachable)
        # a second reuse describes from the routes' cells the first one kept
        assert again.cells is not None and answer.cells is None
        threat = divmod(answer.options[0].path[-1], model.plaza.height)
        back = dataclasses.replace(  # nobody beside it, a threat at the first route's end
            query, people=query.people[:0], threats=np.array([threat])
        )
        third = planner.stream(1)
        third.add(back, agent.index)
        (latest,) = third.answers()
        assert planner.reused_queries == 2 and latest.cells is again.cells
        assert latest.options == planner.solver.options(back).options
        elsewhere = dataclasses.replace(
            query, source=(query.source[0] + 1, query.source[1])
        )
        assert not query.same_search(elsewhere)
        assert not query.same_search(
            dataclasses.replace(query, codes=np.where(query.codes == 0, 1, query.codes))
        )
    finally:
        model.close()


@pytest.mark.slow
def test_a_streamed_step_leaves_no_garbage_only_a_full_collection_frees(
    every_step_shared,
):
    """A step's queries are freed when the step ends (no cycle through the workers' futures)."""
    model = EvacuationModel(composition="A", rng=3, time_limit_s=25, route_workers=2)
    try:
        for _ in range(6):
            model.step()
        assert model.route_planner.remote_queries > 0
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for _ in range(6):
                model.step()
            gc.collect()
            kept = [type(o).__name__ for o in gc.garbage]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        assert "QueryStream" not in kept and "Future" not in kept, kept
    finally:
        model.close()


def test_queries_sent_ahead_all_go_to_the_workers_and_come_back_in_order():
    model = EvacuationModel(composition="A", rng=3, time_limit_s=25, route_workers=2)
    try:
        model.step()
        queries = (_options_queries(model, model.pedestrians) * 2)[:16]
        planner = model.route_planner
        before = planner.remote_queries
        sent = planner.send(queries)  # nothing kept here: the caller works meanwhile
        assert len(sent.futures) == 1 and sum(map(len, sent.remote)) == 16
        answers = sent.answers()
        assert planner.remote_queries - before == 16 and planner.failures == 0
        for mine, theirs in zip(answers, planner.solver.answer(queries), strict=True):
            assert mine.options == theirs.options
        few = planner.send(queries[:3])  # too few for a worker: answered here
        assert few.futures == [] and len(few.answers()) == 3
    finally:
        model.close()
