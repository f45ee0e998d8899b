import multiprocessing.forkserver
import os
import sys
from collections import Counter
from fractions import Fraction

import pytest

from mesa_llm_mobility.experiment import executors
from mesa_llm_mobility.experiment.executors import (
    ProcessExecutor,
    RayExecutor,
    SerialExecutor,
    WorkerLostError,
    default_start_method,
    make_executor,
    pickled_modules,
    prepare_process,
)

PROBE = "MLM_EXECUTOR_PROBE"
WARM_UPS = (
    "MLM_EXECUTOR_WARM_UPS"  # a worker counts its warm-ups in its own environment
)
PRELOADED = "xml.dom.minidom"  # a module nothing here imports


def _warm():
    os.environ[WARM_UPS] = str(int(os.environ.get(WARM_UPS, "0")) + 1)


def _failing_warm_up():
    raise RuntimeError("the warm-up could not load its kernel")


def _report(n):
    """What a task sees in its worker."""
    return {
        "n": n,
        "pid": os.getpid(),
        "parent": os.getppid(),
        "warm_ups": os.environ.get(WARM_UPS),
        "preloaded": PRELOADED in sys.modules,
        "probe": os.environ.get(PROBE),
    }


def _square_or_die(n):
    if n < 0:
        os._exit(3)
    return n * n


def test_pickled_modules_are_those_of_the_function_and_the_classes_it_carries():
    task = {"model": Counter, "share": [Fraction(1, 3), Fraction(2, 3)], "n": 4}
    assert pickled_modules(_report, task) == [__name__, "collections", "fractions"]
    assert pickled_modules(os.getpid) == ["posix"]
    # a lambda cannot be pickled: no preload (submitting it says why)
    assert pickled_modules(lambda n: n) == []


def test_a_worker_takes_many_tasks_and_warms_up_once(monkeypatch):
    monkeypatch.setenv(WARM_UPS, "0")
    with ProcessExecutor(2, warm_up=_warm) as pool:
        seen = list(pool.imap_unordered(_report, range(12)))
        seen += list(pool.imap_unordered(_report, range(4)))  # the same workers again
    assert sorted(r["n"] for r in seen) == sorted([*range(12), *range(4)])
    assert len({r["pid"] for r in seen}) <= 2
    assert {r["warm_ups"] for r in seen} == {"1"}
    assert os.getpid() not in {r["pid"] for r in seen}


def test_forked_workers_start_with_the_preload_and_the_current_environment(
    monkeypatch,
):
    monkeypatch.delenv(PROBE, raising=False)
    with ProcessExecutor(2, start_method="forkserver") as pool:
        before = list(pool.imap_unordered(_report, range(2)))
    # the fork server runs now; a variable set since must still reach the next pool's workers
    monkeypatch.setenv(PROBE, "set after the fork server started")
    with ProcessExecutor(2, start_method="forkserver", preload=[PRELOADED]) as pool:
        after = list(pool.imap_unordered(_report, range(4)))
    assert {r["probe"] for r in before} == {None}
    assert {r["probe"] for r in after} == {"set after the fork server started"}
    assert all(r["preloaded"] for r in after)
    # forked by the server, not by this process
    assert os.getpid() not in {r["parent"] for r in before + after}


def test_the_fork_server_preloads_the_modules_of_the_function_and_first_task(
    monkeypatch,
):
    asked = []

    def record(names):
        asked.append(list(names))
        preload(names)

    preload = multiprocessing.forkserver.set_forkserver_preload
    monkeypatch.setattr(multiprocessing.forkserver, "set_forkserver_preload", record)
    with ProcessExecutor(1, start_method="forkserver") as pool:
        [outcome] = pool.imap_unordered(_report, [Fraction(1, 2)])
    assert outcome["n"] == Fraction(1, 2)
    with ProcessExecutor(1, start_method="forkserver", preload=["json"]) as pool:
        list(pool.imap_unordered(_report, [1]))
    assert asked == [[__name__, "fractions"], ["json"]]


def test_spawned_workers_import_the_preload_themselves(monkeypatch):
    monkeypatch.setenv(PROBE, "spawn")
    with ProcessExecutor(2, start_method="spawn", preload=[PRELOADED]) as pool:
        seen = list(pool.imap_unordered(_report, range(3)))
    assert all(r["preloaded"] for r in seen)
    assert {r["parent"] for r in seen} == {os.getpid()}
    assert {r["probe"] for r in seen} == {"spawn"}


def test_a_failing_warm_up_fails_the_call_loudly():
    with (
        ProcessExecutor(1, warm_up=_failing_warm_up) as pool,
        pytest.raises(RuntimeError, match="could not load its kernel"),
    ):
        list(pool.imap_unordered(_report, range(2)))
    with pytest.raises(RuntimeError, match="could not load its kernel"):
        list(SerialExecutor(warm_up=_failing_warm_up).imap_unordered(_report, [1]))


@pytest.mark.parametrize("start_method", ["forkserver", "spawn"])
def test_a_dead_worker_loses_its_task_only_and_the_pool_is_replaced(start_method):
    lost = []
    with ProcessExecutor(2, start_method=start_method) as pool:
        results = list(
            pool.imap_unordered(
                _square_or_die,
                [1, -1, 2, 3, -2, 4],
                lambda task, message: lost.append((task, message)),
            )
        )
        # the replaced pool still serves the next call
        assert sorted(pool.imap_unordered(_square_or_die, [5, 6])) == [25, 36]
    assert sorted(r for r in results if r is not None) == [1, 4, 9, 16]
    assert sorted(task for task, _ in lost) == [-2, -1]
    assert all("worker died" in message for _, message in lost)


def test_serial_prepares_once_in_this_process(monkeypatch, caplog):
    monkeypatch.setattr(executors, "_PREPARED", set())
    monkeypatch.setenv(WARM_UPS, "0")
    executor = make_executor("serial", warm_up=_warm)
    with executor:
        seen = list(executor.imap_unordered(_report, range(3)))
        seen += list(executor.imap_unordered(_report, range(2)))
    assert [r["warm_ups"] for r in seen] == ["1"] * 5
    # a module that cannot be imported is skipped with a warning: preloading only saves time
    prepare_process([PRELOADED, "no_such_module_here"])
    assert PRELOADED in sys.modules
    assert "cannot import no_such_module_here" in caplog.text


def test_options_and_errors():
    assert default_start_method() == (
        "forkserver" if sys.platform.startswith("linux") else "spawn"
    )
    process = make_executor(
        "process", max_workers=3, start_method="spawn", preload=["json"]
    )
    assert isinstance(process, ProcessExecutor)
    assert (process.workers, process.start_method, process.preload) == (
        3,
        "spawn",
        ("json",),
    )
    with pytest.raises(ValueError, match="unknown start_method 'fork'"):
        ProcessExecutor(2, start_method="fork")
    with pytest.raises(RuntimeError, match="outside its `with` block"):
        list(ProcessExecutor(1).imap_unordered(_report, [1]))
    with (
        pytest.raises(WorkerLostError, match="worker died"),
        ProcessExecutor(1) as pool,
    ):
        list(pool.imap_unordered(_square_or_die, [-3]))


def test_ray_workers_prepare_once_each(local_ray, monkeypatch):
    monkeypatch.setenv(WARM_UPS, "0")
    import ray  # noqa: PLC0415  (only this test needs Ray)

    # the test module is not importable in Ray's workers: ship its functions by value
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    with RayExecutor(preload=[PRELOADED], warm_up=_warm) as pool:
        seen = list(pool.imap_unordered(_report, range(8)))
    assert sorted(r["n"] for r in seen) == list(range(8))
    assert all(r["preloaded"] for r in seen)
    assert {r["warm_ups"] for r in seen} == {"1"}
    assert os.getpid() not in {r["pid"] for r in seen}
