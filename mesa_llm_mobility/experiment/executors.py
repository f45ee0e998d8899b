"""Executors: where the independent runs of a sweep (or any batch of tasks) execute.

One small interface, :class:`Executor`, with three implementations:

- :class:`SerialExecutor`: one task after the other in this process (the reference result);
- :class:`ProcessExecutor`: a local pool of worker processes
  (:class:`concurrent.futures.ProcessPoolExecutor`), for one machine;
- :class:`RayExecutor`: Ray tasks, on a local Ray instance or an existing cluster, for many.

Every executor yields results as tasks finish (in any order), so a caller can record progress
incrementally; the caller orders them. Tasks and the function must be picklable: the function
a module-level one, the tasks plain data. Open an executor with ``with``: it starts its pool
(or connects to Ray) on entry and releases it on exit.

Workers start once and take many tasks: a worker process imports the task's modules and warms
up (lazy imports, caches, compiled kernels) on its first task, and every later task it takes
runs at the speed of a serial run. The process executor's workers on Linux are forked from a
fork server that has imported the task function's package once (``preload``), so starting a
worker, and replacing a pool a crash broke, costs a fork rather than an interpreter and its
imports. ``preload`` (module names) and ``warm_up`` (a callable) prepare every worker process
before its first task.
"""

from __future__ import annotations

import collections
import concurrent.futures
import importlib
import inspect
import io
import logging
import multiprocessing
import os
import pickle
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler
from typing import Any, Literal, Protocol, Self

logger = logging.getLogger(__name__)

ExecutorName = Literal["serial", "process", "ray"]
EXECUTORS: tuple[ExecutorName, ...] = ("serial", "process", "ray")

StartMethod = Literal["forkserver", "spawn"]
START_METHODS: tuple[StartMethod, ...] = ("forkserver", "spawn")

LostTask = Callable[[Any, str], Any]
"""``on_lost(task, message)``: the result to yield for a task whose worker died under it."""

WarmUp = Callable[[], object]
"""A module-level function a worker process calls once, before its first task."""


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


# ---------------------------------------------------------------------------- worker set-up
_PREPARED: set[tuple[tuple[str, ...], str | None]] = set()
"""The (preload, warm_up name) pairs this process has run already (each once per process)."""


def _name_of(warm_up: WarmUp | None) -> str | None:
    """A warm-up's lasting name (a function Ray ships by value is a new object per task)."""
    if warm_up is None:
        return None
    module = getattr(warm_up, "__module__", None)
    qualname = getattr(warm_up, "__qualname__", None)
    if module is None or qualname is None:
        return repr(warm_up)
    return f"{module}.{qualname}"


def prepare_process(preload: Sequence[str] = (), warm_up: WarmUp | None = None) -> None:
    """Import ``preload`` and call ``warm_up()`` in this process, once per process.

    A module that cannot be imported is logged and skipped (preloading only saves time); an
    error of ``warm_up`` propagates, so the task that needed it fails loudly.

    Args:
        preload: Module names to import.
        warm_up: A function to call once.
    """
    key = (tuple(preload), _name_of(warm_up))
    if key in _PREPARED:
        return
    for name in preload:
        try:
            importlib.import_module(name)
        except ImportError as error:
            logger.warning("preload: cannot import %s (%s)", name, error)
    if warm_up is not None:
        warm_up()
    _PREPARED.add(key)


@dataclass(frozen=True)
class PreparedCall:
    """``fn(task)``, after :func:`prepare_process` in the worker that runs it (picklable).

    Attributes:
        fn: The task function.
        preload: Module names the worker imports before its first task.
        warm_up: A function the worker calls before its first task.
    """

    fn: Callable[[Any], Any]
    preload: tuple[str, ...] = ()
    warm_up: WarmUp | None = None

    def __call__(self, task: Any) -> Any:
        """Prepare this process (once), then run the task."""
        prepare_process(self.preload, self.warm_up)
        return self.fn(task)


def _prepared(
    fn: Callable[[Any], Any], preload: Sequence[str], warm_up: WarmUp | None
) -> Callable[[Any], Any]:
    """``fn`` itself when there is nothing to prepare, else a :class:`PreparedCall`."""
    if not preload and warm_up is None:
        return fn
    return PreparedCall(fn, tuple(preload), warm_up)


def _call(call: Callable[[Any], Any], task: Any) -> Any:
    """``call(task)``: what Ray runs for a callable object (e.g. a :class:`PreparedCall`)."""
    return call(task)


class _ModuleRecorder(ForkingPickler):
    """Pickles as a worker pool does; notes the module of every class and function."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), pickle.HIGHEST_PROTOCOL)
        self.modules: list[str] = []

    def reducer_override(self, obj: Any) -> Any:
        """Note ``obj``'s module if it is a class or a function; pickle it as usual."""
        if isinstance(obj, type) or inspect.isroutine(obj):
            module = getattr(obj, "__module__", None)
            if isinstance(module, str) and module not in self.modules:
                self.modules.append(module)
        return NotImplemented


def pickled_modules(*objects: Any) -> list[str]:
    """The modules a worker imports to unpickle ``objects``, in the order it meets them.

    They are the modules of the classes and functions the objects refer to (pickled by
    reference): for a sweep, the task function's module and the model's. ``__main__`` and
    ``builtins`` are left out (a worker has them), and so is a module this process has not
    imported.

    Args:
        *objects: Objects to pickle, e.g. the task function and a task.

    Returns:
        Module names; none if the objects cannot be pickled (submitting them will say why).
    """
    recorder = _ModuleRecorder()
    try:
        recorder.dump(objects)
    except Exception as error:
        logger.debug("no preload: the first task does not pickle (%s)", error)
        return []
    return [
        name
        for name in recorder.modules
        if name not in ("__main__", "__mp_main__", "builtins")
        and getattr(sys.modules.get(name), "__spec__", None) is not None
    ]


def default_start_method() -> StartMethod:
    """``"forkserver"`` on Linux, ``"spawn"`` elsewhere (as CPython 3.14 chooses)."""
    if sys.platform.startswith("linux") and (
        "forkserver" in multiprocessing.get_all_start_methods()
    ):
        return "forkserver"
    return "spawn"


def _adopt_environment(environment: dict[str, str]) -> None:
    """A forked worker's initializer: the environment of the parent when the pool started.

    Workers forked by the fork server inherit the server's environment, which is the parent's
    of the moment the server started; a variable set since then would be missing.
    """
    if dict(os.environ) != environment:
        os.environ.clear()
        os.environ.update(environment)


# ---------------------------------------------------------------------------- executors
class SerialExecutor:
    """Every task in this process, one after the other.

    Args:
        preload: Module names to import before the first task.
        warm_up: A function to call once before the first task.
    """

    name = "serial"

    def __init__(
        self, *, preload: Sequence[str] = (), warm_up: WarmUp | None = None
    ) -> None:
        self.preload = tuple(preload)
        self.warm_up = warm_up

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
        call = _prepared(fn, self.preload, self.warm_up)
        for task in tasks:
            yield call(task)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None


class ProcessExecutor:
    """A pool of worker processes on this machine; each takes many tasks.

    No worker is ever a plain ``fork`` of the caller, so no thread, event loop or open client
    of the caller leaks into it:

    - ``"forkserver"`` (the default on Linux): workers are forked from a fork server, a fresh
      interpreter started once per calling process, which has imported ``preload`` (by default
      the modules of the task function and of the classes in the first task, e.g. the sweep
      and the model: :func:`pickled_modules`). A worker then starts with those modules loaded,
      and a pool replaced after a crash starts as fast. The server lives until the caller
      exits and is shared by every pool the caller opens; it keeps the preload of the first.
      Workers get the caller's environment variables of the moment their pool started.
    - ``"spawn"`` (the default elsewhere): every worker starts a fresh interpreter and imports
      what it needs (``preload`` included) itself.

    Either way a worker takes tasks until the pool closes (no task limit per worker). Scripts
    that sweep with processes need the usual ``if __name__ == "__main__":`` guard.

    Args:
        max_workers: Worker processes (default: the machine's CPU count).
        start_method: ``"forkserver"`` or ``"spawn"`` (default: :func:`default_start_method`).
        preload: Module names every worker has imported before its first task (``None``: with
            ``"forkserver"``, :func:`pickled_modules` of the function and the first task;
            with ``"spawn"``, none).
        warm_up: A module-level function every worker calls once, before its first task; its
            error fails that task's ``imap_unordered`` call.

    Raises:
        ValueError: For ``max_workers < 1`` or a start method this platform lacks.
    """

    name = "process"

    def __init__(
        self,
        max_workers: int | None = None,
        *,
        start_method: StartMethod | None = None,
        preload: Sequence[str] | None = None,
        warm_up: WarmUp | None = None,
    ) -> None:
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        available = [
            method
            for method in START_METHODS
            if method in multiprocessing.get_all_start_methods()
        ]
        if start_method is not None and start_method not in available:
            raise ValueError(
                f"unknown start_method {start_method!r}; choose one of "
                f"{', '.join(available)}"
            )
        self.max_workers = max_workers or os.cpu_count() or 1
        self.start_method: StartMethod = start_method or default_start_method()
        self.preload = None if preload is None else tuple(preload)
        self.warm_up = warm_up
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._open = False
        self._pool_preload: tuple[str, ...] = ()
        self._first_call: tuple[Any, ...] = ()

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

        The pool starts with the first call (the default preload comes from ``fn`` and the
        first task) and serves every later call of the same ``with`` block.

        When a worker dies, the pool breaks and every task in flight fails with it. The pool
        is replaced, and those tasks run again one at a time: a task that breaks the pool
        alone is the one that kills its worker, and goes to ``on_lost``; the others' results
        are yielded as usual. The remaining tasks then run in parallel again.
        """
        if not self._open:
            raise RuntimeError("ProcessExecutor used outside its `with` block")
        waiting = collections.deque(tasks)
        if self._pool is None:
            self._first_call = (fn, *list(waiting)[:1])
            self._start()
        pool_of = self._current_pool
        call = _prepared(fn, self._pool_preload, self.warm_up)
        suspects: collections.deque[Any] = collections.deque()
        in_flight: dict[concurrent.futures.Future[Any], Any] = {}
        while waiting or suspects or in_flight:
            if suspects:
                task = suspects.popleft()
                try:
                    result = pool_of().submit(call, task).result()
                except BrokenProcessPool as error:
                    self._restart()
                    result = _lost(on_lost, task, _died(error))
                yield result
                continue
            while waiting and len(in_flight) < self.max_workers:
                task = waiting.popleft()
                in_flight[pool_of().submit(call, task)] = task
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

    def _current_pool(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._pool is None:
            raise RuntimeError("ProcessExecutor used outside its `with` block")
        return self._pool

    def _start(self) -> None:
        context = multiprocessing.get_context(self.start_method)
        options: dict[str, Any] = {}
        if self.start_method == "forkserver":
            self._pool_preload = (
                tuple(pickled_modules(*self._first_call))
                if self.preload is None
                else self.preload
            )
            # takes effect when the (per-process) fork server starts, i.e. for the first pool
            context.set_forkserver_preload(list(self._pool_preload))
            options = {
                "initializer": _adopt_environment,
                "initargs": (dict(os.environ),),
            }
        else:
            self._pool_preload = self.preload or ()
        self._pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=self.max_workers, mp_context=context, **options
        )

    def _restart(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._start()

    def __enter__(self) -> Self:
        self._open = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._open = False
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
    ``ray.wait`` as tasks finish. Ray keeps its worker processes and gives each many tasks, so
    a worker imports and warms up once.

    Args:
        address: Cluster address, or ``None`` for a local instance.
        num_cpus: CPUs of a local instance (default: all of this machine's).
        num_cpus_per_run: CPUs each task reserves (a resource hint to Ray's scheduler).
        max_retries: Times Ray runs a task again whose worker died (as the process executor,
            one by default).
        preload: Module names every worker imports before its first task.
        warm_up: A module-level function every worker calls once, before its first task.
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        num_cpus_per_run: float = 1,
        max_retries: int = 1,
        preload: Sequence[str] = (),
        warm_up: WarmUp | None = None,
    ) -> None:
        if num_cpus_per_run <= 0:
            raise ValueError(f"num_cpus_per_run must be > 0, got {num_cpus_per_run}")
        if num_cpus is not None and num_cpus < 1:
            raise ValueError(f"num_cpus must be >= 1, got {num_cpus}")
        self.address = address
        self.num_cpus = num_cpus
        self.num_cpus_per_run = num_cpus_per_run
        self.max_retries = max_retries
        self.preload = tuple(preload)
        self.warm_up = warm_up
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
        options = {"num_cpus": self.num_cpus_per_run, "max_retries": self.max_retries}
        call = _prepared(fn, self.preload, self.warm_up)
        if inspect.isfunction(call):
            remote = ray.remote(**options)(call)
            refs = {remote.remote(task): task for task in tasks}
        else:  # a callable object (Ray remotes only functions): shipped once, called by _call
            remote = ray.remote(**options)(_call)
            shared = ray.put(call)
            refs = {remote.remote(shared, task): task for task in tasks}
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
    start_method: StartMethod | None = None,
    preload: Sequence[str] | None = None,
    warm_up: WarmUp | None = None,
) -> Executor:
    """The executor called ``name`` (or ``name`` itself when it is an executor already).

    Args:
        name: ``"serial"``, ``"process"`` or ``"ray"``, or an :class:`Executor`.
        max_workers: Worker processes (``"process"``).
        address: Ray cluster address (``"ray"``; ``None``: local).
        num_cpus: CPUs of a local Ray instance (``"ray"``).
        num_cpus_per_run: CPUs each Ray task reserves (``"ray"``).
        start_method: How worker processes start (``"process"``; see
            :class:`ProcessExecutor`).
        preload: Module names every worker imports before its first task (``"process"``:
            ``None`` lets :class:`ProcessExecutor` choose).
        warm_up: A module-level function every worker calls once before its first task.

    Returns:
        The executor, not yet entered.

    Raises:
        ValueError: For an unknown name or start method.
    """
    if not isinstance(name, str):
        return name
    if name == "serial":
        return SerialExecutor(preload=preload or (), warm_up=warm_up)
    if name == "process":
        return ProcessExecutor(
            max_workers, start_method=start_method, preload=preload, warm_up=warm_up
        )
    if name == "ray":
        return RayExecutor(
            address,
            num_cpus=num_cpus,
            num_cpus_per_run=num_cpus_per_run,
            preload=preload or (),
            warm_up=warm_up,
        )
    raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")
