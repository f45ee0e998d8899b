"""Executors: where the independent runs of a sweep (or any batch of tasks) execute.

One small interface, :class:`Executor`, with three implementations:

- :class:`SerialExecutor`: one task after the other in this process (the reference result);
- :class:`ProcessExecutor`: a local pool of spawned processes
  (:class:`concurrent.futures.ProcessPoolExecutor`), for one machine;
- :class:`RayExecutor`: Ray tasks, on a local Ray instance or an existing cluster, for many.

Every executor yields results as tasks finish (in any order), so a caller can record progress
incrementally; the caller orders them. Tasks and the function must be picklable: the function
a module-level one, the tasks plain data. Open an executor with ``with``: it starts its pool
(or connects to Ray) on entry and releases it on exit.
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Literal, Protocol, Self

logger = logging.getLogger(__name__)

ExecutorName = Literal["serial", "process", "ray"]
EXECUTORS: tuple[ExecutorName, ...] = ("serial", "process", "ray")

LostTask = Callable[[Any, str], Any]
"""``on_lost(task, message)``: the result to yield for a task whose worker died under it."""


class WorkerLostError(RuntimeError):
    """A task's worker died under it (and no ``on_lost`` was given)."""


def _lost(on_lost: LostTask | None, task: Any, message: str) -> Any:
    logger.warning("task %r lost: %s", task, message)
    if on_lost is None:
        raise WorkerLostError(message)
    return on_lost(task, message)


class Executor(Protocol):
    """Runs ``fn(task)`` for every task and yields the results as they finish."""

    name: str

    @property
    def workers(self) -> int:
        """How many tasks run at the same time (at most)."""
        ...

    def imap_unordered(
        self,
        fn: Callable[[Any], Any],
        tasks: Iterable[Any],
        on_lost: LostTask | None = None,
    ) -> Iterator[Any]:
        """Yield ``fn(task)`` for every task, in the order the tasks finish.

        ``on_lost(task, message)`` gives the result of a task whose worker died under it (a
        crash in native code, a kill for memory, a lost node); without it that raises
        :class:`WorkerLostError`.
        """
        ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc_info: object) -> None: ...


class SerialExecutor:
    """Every task in this process, one after the other."""

    name = "serial"

    @property
    def workers(self) -> int:
        """One task at a time."""
        return 1

    def imap_unordered(
        self,
        fn: Callable[[Any], Any],
        tasks: Iterable[Any],
        on_lost: LostTask | None = None,
    ) -> Iterator[Any]:
        """Yield ``fn(task)`` for each task in order (a crash here ends this process)."""
        for task in tasks:
            yield fn(task)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None


class ProcessExecutor:
    """A pool of spawned worker processes on this machine.

    The ``spawn`` start method is used everywhere (not ``fork``): a worker starts a fresh
    interpreter, so no thread, event loop or open client of the parent leaks into it, and the
    behaviour is the same on Linux, macOS and Windows. Scripts that sweep with processes need
    the usual ``if __name__ == "__main__":`` guard.

    Args:
        max_workers: Worker processes (default: the machine's CPU count).
    """

    name = "process"

    def __init__(self, max_workers: int | None = None) -> None:
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self.max_workers = max_workers or os.cpu_count() or 1
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None

    @property
    def workers(self) -> int:
        """The number of worker processes."""
        return self.max_workers

    def imap_unordered(
        self,
        fn: Callable[[Any], Any],
        tasks: Iterable[Any],
        on_lost: LostTask | None = None,
    ) -> Iterator[Any]:
        """Keep ``max_workers`` tasks in flight; yield results as workers finish them.

        When a worker dies, the pool breaks and every task in flight fails with it. The pool
        is replaced, and those tasks run again one at a time: a task that breaks the pool
        alone is the one that kills its worker, and goes to ``on_lost``; the others' results
        are yielded as usual. The remaining tasks then run in parallel again.
        """
        if self._pool is None:
            raise RuntimeError("ProcessExecutor used outside its `with` block")
        waiting = collections.deque(tasks)
        suspects: collections.deque[Any] = collections.deque()
        in_flight: dict[concurrent.futures.Future[Any], Any] = {}
        while waiting or suspects or in_flight:
            if suspects:
                task = suspects.popleft()
                try:
                    result = self._pool.submit(fn, task).result()
                except BrokenProcessPool as error:
                    self._restart()
                    result = _lost(on_lost, task, _died(error))
                yield result
                continue
            while waiting and len(in_flight) < self.max_workers:
                task = waiting.popleft()
                in_flight[self._pool.submit(fn, task)] = task
            done, _ = concurrent.futures.wait(
                in_flight, return_when=concurrent.futures.FIRST_COMPLETED
            )
            if any(isinstance(f.exception(), BrokenProcessPool) for f in done):
                # the pool is broken: every future still in flight fails with it
                concurrent.futures.wait(in_flight)
                done = set(in_flight)
            for future in sorted(done, key=list(in_flight).index):
                task = in_flight.pop(future)
                if isinstance(future.exception(), BrokenProcessPool):
                    suspects.append(task)
                else:
                    yield future.result()
            if suspects:
                logger.warning(
                    "a worker process died; running its %d task(s) again one at a time",
                    len(suspects),
                )
                self._restart()

    def _start(self) -> None:
        self._pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=self.max_workers,
            mp_context=multiprocessing.get_context("spawn"),
        )

    def _restart(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._start()

    def __enter__(self) -> Self:
        self._start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class RayExecutor:
    """Ray tasks, on an existing cluster or a local Ray instance started here.

    With ``address`` (``"auto"`` for the cluster this node belongs to, or
    ``"ray://<head>:10001"``), the executor connects to that cluster. Without it, it uses the
    Ray instance this process already started (``ray.init`` called by the user), or starts a
    local one with ``num_cpus`` CPUs. It shuts Ray down on exit only if it started or
    connected it itself.

    Each task is a Ray task asking for ``num_cpus_per_run`` CPUs, so Ray runs at most
    (cluster CPUs / ``num_cpus_per_run``) at once; results are gathered one by one with
    ``ray.wait`` as tasks finish.

    Args:
        address: Cluster address, or ``None`` for a local instance.
        num_cpus: CPUs of a local instance (default: all of this machine's).
        num_cpus_per_run: CPUs each task reserves (a resource hint to Ray's scheduler).
        max_retries: Times Ray runs a task again whose worker died (as the process executor,
            one by default).
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        num_cpus_per_run: float = 1,
        max_retries: int = 1,
    ) -> None:
        if num_cpus_per_run <= 0:
            raise ValueError(f"num_cpus_per_run must be > 0, got {num_cpus_per_run}")
        if num_cpus is not None and num_cpus < 1:
            raise ValueError(f"num_cpus must be >= 1, got {num_cpus}")
        self.address = address
        self.num_cpus = num_cpus
        self.num_cpus_per_run = num_cpus_per_run
        self.max_retries = max_retries
        self._started = False

    @staticmethod
    def _ray() -> Any:
        try:
            import ray  # noqa: PLC0415  (an optional dependency)
        except ImportError:
            raise ValueError(
                "the ray executor needs Ray: pip install 'mesa-llm-mobility[ray]'"
            ) from None
        return ray

    @property
    def workers(self) -> int:
        """How many tasks the cluster runs at once (its CPUs / ``num_cpus_per_run``)."""
        cpus = float(self._ray().cluster_resources().get("CPU", 1))
        return max(1, int(cpus // self.num_cpus_per_run))

    def imap_unordered(
        self,
        fn: Callable[[Any], Any],
        tasks: Iterable[Any],
        on_lost: LostTask | None = None,
    ) -> Iterator[Any]:
        """Submit one Ray task per task; yield results as ``ray.wait`` reports them.

        A task whose worker dies (or whose node is lost) is retried ``max_retries`` times by
        Ray itself, then goes to ``on_lost``.
        """
        ray = self._ray()
        remote = ray.remote(
            num_cpus=self.num_cpus_per_run, max_retries=self.max_retries
        )(fn)
        refs = {remote.remote(task): task for task in tasks}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            try:
                result = ray.get(done[0])
            except (
                ray.exceptions.WorkerCrashedError,
                ray.exceptions.NodeDiedError,
                ray.exceptions.OutOfMemoryError,
                ray.exceptions.ObjectLostError,
            ) as error:
                result = _lost(on_lost, refs[done[0]], _died(error))
            yield result

    def __enter__(self) -> Self:
        ray = self._ray()
        if self.address is not None:
            logger.info("connecting to the Ray cluster at %s", self.address)
            ray.init(address=self.address)
            self._started = True
        elif not ray.is_initialized():
            logger.info("starting a local Ray instance (num_cpus=%s)", self.num_cpus)
            ray.init(num_cpus=self.num_cpus, include_dashboard=False)
            self._started = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._started:
            self._ray().shutdown()
            self._started = False


def _died(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    detail = text[0] if text else type(error).__name__
    return f"worker died while running this task ({detail})"


def make_executor(
    name: ExecutorName | Executor,
    *,
    max_workers: int | None = None,
    address: str | None = None,
    num_cpus: int | None = None,
    num_cpus_per_run: float = 1,
) -> Executor:
    """The executor called ``name`` (or ``name`` itself when it is an executor already).

    Args:
        name: ``"serial"``, ``"process"`` or ``"ray"``, or an :class:`Executor`.
        max_workers: Worker processes (``"process"``).
        address: Ray cluster address (``"ray"``; ``None``: local).
        num_cpus: CPUs of a local Ray instance (``"ray"``).
        num_cpus_per_run: CPUs each Ray task reserves (``"ray"``).

    Returns:
        The executor, not yet entered.

    Raises:
        ValueError: For an unknown name.
    """
    if not isinstance(name, str):
        return name
    if name == "serial":
        return SerialExecutor()
    if name == "process":
        return ProcessExecutor(max_workers)
    if name == "ray":
        return RayExecutor(
            address, num_cpus=num_cpus, num_cpus_per_run=num_cpus_per_run
        )
    raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")
