"""Route planning for a step's decisions, here or on worker processes.

Every ``EvacuationMove`` request carries route options over the pedestrian's believed map
(:func:`~.routing.route_options`), and an applied decision whose option path cannot be joined
is routed anew (:func:`route_to`). Both are pure functions of a small query (the believed codes
inside the pedestrian's belief window, its cell, the anchors) and of the plaza, which never
changes. :class:`RoutePlanner` answers the queries of one step together: in this process, or
split over ``workers`` processes (this one and ``workers - 1`` spawned helpers, each holding its
own copy of the plaza's graph). The answers are the same either way, computed by the same
functions on the same inputs; only the wall time differs.

Worker processes are started with ``spawn`` (like the process executor of sweeps), once, on
the first step that has work for them; scripts that use them need the usual
``if __name__ == "__main__":`` guard. A worker that dies or fails is not fatal: its queries are
answered here, a warning is logged, and the planner works in this process from then on
(:attr:`RoutePlanner.failures` counts such events). A worker whose model's process was killed
ends by itself within about a second.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import logging
import multiprocessing
import os
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from mesa_llm_mobility.evacuation.layers import BeliefWindow
from mesa_llm_mobility.evacuation.plaza import Terrain, passable_mask
from mesa_llm_mobility.evacuation.routing import (
    GridGraph,
    OpeningAnchor,
    RouteCells,
    RouteOption,
    RoutePaths,
    describe_routes,
    path_to,
    redescribe_routes,
    route_paths,
)
from mesa_llm_mobility.evacuation.stopwatch import PhaseTimer

logger = logging.getLogger(__name__)

PARENT_CHECK_S = 1.0
"""How often a worker checks that the model's process is still there."""

MIN_QUERIES_PER_WORKER = 8
"""Below this many queries per process a step's queries are answered here (no round trip)."""

MIN_SHARE_HERE = 0.02
"""This process answers at least this share of a streamed step's searched queries (and so keeps
timing them); with many pedestrians drafting alone keeps it busier than the workers."""

STREAM_CHUNK = 32
"""Queries sent to a worker at a time while a step's queries are still being drafted."""


@dataclass(frozen=True)
class OptionsQuery:
    """What :func:`~.routing.route_options` needs of one pedestrian (plaza coordinates).

    Attributes:
        codes: Believed terrain codes inside ``window`` (``[x, y]``, ``UNKNOWN`` unseen).
        window: The pedestrian's belief window.
        source: Its cell.
        anchors: Known, believed-usable openings.
        visited: Flat cells it already walked.
        people: ``(k, 2)`` visible pedestrians' cells.
        threats: ``(m, 2)`` visible A and D cells.
    """

    codes: np.ndarray
    window: BeliefWindow
    source: tuple[int, int]
    anchors: tuple[OpeningAnchor, ...]
    visited: frozenset[int]
    people: np.ndarray
    threats: np.ndarray

    def search_key(self) -> tuple[object, ...]:
        """What the routes depend on: the cell, the window, the anchors and the believed map.

        The rest of a query (people, threats, cells walked) changes only the routes'
        attributes (:func:`~.routing.describe_routes`). The map enters as a 128-bit digest of
        its codes (a planner keeps one key per pedestrian; the codes would be 10-40 KB each).
        """
        digest = hashlib.blake2b(np.ascontiguousarray(self.codes).data, digest_size=16)
        return (self.source, self.window, self.anchors, digest.digest())

    def same_search(self, other: OptionsQuery) -> bool:
        """Whether ``other`` has the same routes (the same :meth:`search_key`)."""
        return self.search_key() == other.search_key()


@dataclass(frozen=True)
class OptionsAnswer:
    """The route options of one query and the cells its search reached (``[x, y]`` in its window).

    ``reachable`` is read-only: the answer of a query with the same search shares it
    (:meth:`RouteSolver.redescribe`).
    """

    options: tuple[RouteOption, ...]
    reachable: np.ndarray
    paths: RoutePaths = field(repr=False, compare=False)
    cells: RouteCells | None = field(default=None, repr=False, compare=False)
    """The routes' cells, once a reuse needed them (kept for the next; never sent between
    processes)."""


@dataclass(frozen=True)
class RouteQuery:
    """A route from ``source`` to ``goal`` (via ``waypoint``) over believed ``codes`` (plaza cells)."""

    codes: np.ndarray
    window: BeliefWindow
    source: tuple[int, int]
    goal: tuple[int, int]
    waypoint: tuple[int, int] | None


@dataclass(frozen=True, eq=False)
class RouteSolver:
    """What every query shares: the plaza's grid graph, its opening cells and cell size."""

    graph: GridGraph
    opening_mask: np.ndarray
    cell_size_m: float

    def options(self, query: OptionsQuery) -> OptionsAnswer:
        """The route options of one query (:func:`~.routing.route_options`)."""
        paths, dist = route_paths(
            self.graph,
            passable_mask(query.codes),
            query.codes != Terrain.UNKNOWN,
            query.source,
            list(query.anchors),
            query.window,
            sinks=query.window.crop(self.opening_mask),
        )
        reachable = np.isfinite(dist).reshape(query.codes.shape)
        reachable.flags.writeable = False
        return OptionsAnswer(self._describe(query, paths), reachable, paths)

    def redescribe(self, query: OptionsQuery, earlier: OptionsAnswer) -> OptionsAnswer:
        """The answer of ``query`` from the ``earlier`` answer of a query with the same search.

        Equal to :meth:`options` of ``query`` (the searches are skipped; see
        :meth:`OptionsQuery.same_search`).
        """
        cells = earlier.cells
        if cells is None and earlier.paths.routes:
            cells = RouteCells.of(earlier.paths, query.window)
        options = redescribe_routes(
            earlier.options,
            cells,  # type: ignore[arg-type]  (None only without routes)
            query.visited,
            query.people,
            query.threats,
            self.cell_size_m,
            query.window,
        )
        return OptionsAnswer(tuple(options), earlier.reachable, earlier.paths, cells)

    def _describe(
        self, query: OptionsQuery, paths: RoutePaths
    ) -> tuple[RouteOption, ...]:
        return tuple(
            describe_routes(
                paths,
                query.source,
                query.visited,
                query.people,
                query.threats,
                self.cell_size_m,
                query.window,
            )
        )

    def route(self, query: RouteQuery) -> list[int]:
        """The flat plaza cells of one route (empty when the goal is unreachable).

        The search runs inside the query's window with openings as sinks; with a waypoint the
        route goes through it when both legs exist, else straight to the goal.
        """
        window = query.window
        flat_pass = passable_mask(query.codes).ravel()
        height = window.plaza_height
        src = int(window.to_local(query.source[0] * height + query.source[1]))
        flat_pass[src] = True
        graph = self.graph.window(window)
        sinks = window.crop(self.opening_mask).ravel()
        _, pred = graph.search(flat_pass, sinks, src)
        route: list[int] = []
        goal = int(window.to_local(query.goal[0] * height + query.goal[1]))
        if query.waypoint is not None:
            wflat = int(window.to_local(query.waypoint[0] * height + query.waypoint[1]))
            first = path_to(pred, src, wflat)
            if first:
                _, pred2 = graph.search(flat_pass, sinks, wflat)
                second = path_to(pred2, wflat, goal)
                route = first + second if second or wflat == goal else []
        if not route:
            route = path_to(pred, src, goal)
        return window.to_plaza(route).tolist()

    def answer(
        self, queries: list[OptionsQuery | RouteQuery]
    ) -> list[OptionsAnswer | list[int]]:
        """The answers of a list of queries, in order."""
        return [
            self.options(q) if isinstance(q, OptionsQuery) else self.route(q)
            for q in queries
        ]


_WORKER: dict[str, RouteSolver] = {}
"""A worker process's solver (built once by its initializer)."""


def _start_worker(
    raw_codes: np.ndarray, opening_mask: np.ndarray, cell_size_m: float
) -> None:
    _WORKER["solver"] = RouteSolver(GridGraph(raw_codes), opening_mask, cell_size_m)
    threading.Thread(
        target=_exit_with_parent, args=(os.getppid(),), daemon=True
    ).start()


def _exit_with_parent(parent: int) -> None:
    """End this worker when the model's process is gone (killed before it could close us).

    A pool's worker holds both ends of its task queue, so it would wait for tasks forever.
    """
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os._exit(0)


def _answer_in_worker(
    queries: list[OptionsQuery | RouteQuery],
) -> tuple[list[OptionsAnswer | list[int]], float]:
    """The answers, and the seconds the worker spent on them (its pace, without the wait)."""
    started = time.perf_counter()
    answers = _WORKER["solver"].answer(queries)
    return answers, time.perf_counter() - started


class RoutePlanner:
    """Answers a step's route queries, in this process or split over worker processes.

    Args:
        raw_codes: The plaza's raw terrain codes (the graph's candidates).
        graph: The plaza's grid graph (this process's copy).
        opening_mask: ``[x, y]`` opening cells (routes may end in them but not cross them).
        cell_size_m: Cell size, for clearances.
        workers: Processes that share the work, this one included (1: no worker process).
        timer: Times every wait for answers as the phase ``"routing"`` (``None``: a timer of
            its own).
    """

    def __init__(
        self,
        raw_codes: np.ndarray,
        graph: GridGraph,
        opening_mask: np.ndarray,
        cell_size_m: float,
        workers: int = 1,
        timer: PhaseTimer | None = None,
    ) -> None:
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self.workers = 1
        self.set_workers(workers)
        self.solver = RouteSolver(graph, opening_mask, cell_size_m)
        self._raw_codes = raw_codes
        self.failures = 0
        """Worker failures met (their queries were answered in this process)."""
        self._gave_up = False
        """A worker failed in this process: no pool is started again until a checkpoint's
        restore (a new process, whose workers may well start)."""
        self.remote_queries = 0
        """Queries answered by worker processes so far."""
        self.seconds_per_query: dict[str, float] = {}
        """Measured and smoothed: ``draft`` (drafting a query, reused or searched), ``here``
        (answering a searched one in this process) and ``workers`` (the seconds a worker
        spends answering one, measured in the worker)."""
        self.reused_queries = 0
        """Streamed queries answered from their owner's last answer (no search) so far."""
        self.last_answers: dict[int, tuple[tuple[object, ...], OptionsAnswer]] = {}
        """Each owner's last streamed query's :meth:`~OptionsQuery.search_key` and answer
        (:meth:`QueryStream.add`)."""
        self.timer = timer if timer is not None else PhaseTimer()
        """Where the time spent answering (here or waiting for workers) goes, as
        ``"routing"``."""

    def __getstate__(self) -> dict[str, object]:
        """The planner for a checkpoint: no worker processes, no owners' last answers.

        The workers start again on the first step that has work for them, even after a worker
        failure (:attr:`failures` keeps its count); without the last answers every owner's next
        query is searched, which gives the same answer as a reuse.
        """
        state = self.__dict__.copy()
        state["_pool"] = None
        state["_gave_up"] = False
        state["last_answers"] = {}
        return state

    def set_workers(self, workers: int) -> None:
        """Plan with ``workers`` processes from the next step on (the routes do not change).

        Raises:
            ValueError: If ``workers`` is not an integer >= 1.
        """
        if int(workers) != workers or workers < 1:
            raise ValueError(f"route_workers must be an integer >= 1, got {workers!r}")
        if int(workers) != self.workers:
            self.close()
            self.workers = int(workers)

    def answer(
        self, queries: list[OptionsQuery | RouteQuery]
    ) -> list[OptionsAnswer | list[int]]:
        """The answers of ``queries``, in order, whichever process computed them.

        With worker processes this process answers one share while the workers answer theirs.
        """
        return self.send(queries, share_here=True).answers()

    def route(self, query: RouteQuery) -> list[int]:
        """One route, searched in this process now (:meth:`RouteSolver.route`)."""
        with self.timer("routing"):
            return self.solver.route(query)

    def send(
        self, queries: list[OptionsQuery | RouteQuery], share_here: bool = False
    ) -> SentQueries:
        """Send ``queries`` to the worker processes now; :meth:`SentQueries.answers` gives them.

        Without ``share_here`` the workers get them all: for queries known before other work of
        the step, which this process does while the workers answer. Without workers (or with
        fewer than ``MIN_QUERIES_PER_WORKER`` queries a worker) this process answers them when
        asked.
        """
        here = 1 if share_here else 0
        parts = min(self.workers - 1, len(queries) // MIN_QUERIES_PER_WORKER - here)
        if parts < 1:
            return SentQueries(self, queries, [], [])
        chunks = _balanced_chunks(queries, parts + here)
        pool = self._ensure_pool()
        futures: list[concurrent.futures.Future] = []
        if pool is not None:
            try:
                for chunk in chunks[here:]:
                    futures.append(pool.submit(_answer_in_worker, list(chunk)))
            except (RuntimeError, concurrent.futures.BrokenExecutor) as error:
                self._give_up(error)
        return SentQueries(self, queries, chunks[here:], futures)

    def stream(self, expected: int) -> QueryStream:
        """A step's options queries, taken one by one as they are drafted.

        With worker processes, the first queries go to the workers in chunks while the rest are
        drafted, and this process answers the last ones: the workers get the share that lets
        both finish together (from the measured drafting and answering times).

        Args:
            expected: How many queries the step will add.
        """
        return QueryStream(self, expected)

    def _ensure_pool(self) -> concurrent.futures.ProcessPoolExecutor | None:
        if self._pool is None and not self._gave_up:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=self.workers - 1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker,
                initargs=(
                    self._raw_codes,
                    self.solver.opening_mask,
                    self.solver.cell_size_m,
                ),
            )
        return self._pool

    def _give_up(self, error: BaseException) -> None:
        """Note a worker failure and work in this process from now on."""
        if self._pool is not None:
            logger.warning(
                "a route worker failed (%s: %s); routing in this process from now on "
                "(the routes are the same)",
                type(error).__name__,
                error,
            )
            self.failures += 1
            self._gave_up = True
            self.close()

    def close(self) -> None:
        """Stop the worker processes (a later step starts none again after a failure)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class SentQueries:
    """Queries sent to worker processes by :meth:`RoutePlanner.send`, answered in order.

    ``remote`` are the chunks sent (``futures``, one each; a chunk without one, or whose worker
    failed, is answered here); every other query is answered here when :meth:`answers` is
    called, before the workers' answers are collected.
    """

    def __init__(
        self,
        planner: RoutePlanner,
        queries: list[OptionsQuery | RouteQuery],
        remote: list[_Chunk],
        futures: list[concurrent.futures.Future],
    ) -> None:
        self.planner = planner
        self.queries = queries
        self.remote = remote
        self.futures = futures

    def answers(self) -> list[OptionsAnswer | list[int]]:
        """Every query's answer, in the order sent."""
        with self.planner.timer("routing"):
            return self._answers()

    def _answers(self) -> list[OptionsAnswer | list[int]]:
        solver = self.planner.solver
        ordered: list[OptionsAnswer | list[int] | None] = [None] * len(self.queries)
        sent = {p for chunk in self.remote for p in chunk.positions}
        here = [p for p in range(len(self.queries)) if p not in sent]
        for position, answer in zip(
            here, solver.answer([self.queries[p] for p in here]), strict=True
        ):
            ordered[position] = answer
        for k, chunk in enumerate(self.remote):
            part = None
            if k < len(self.futures):
                try:
                    part = self.futures[k].result()[0]
                    self.planner.remote_queries += len(chunk)
                except Exception as error:  # a dead or failing worker: answer here
                    self.planner._give_up(error)
            if part is None:
                part = solver.answer(chunk)
            for position, answer in zip(chunk.positions, part, strict=True):
                ordered[position] = answer
        return ordered  # type: ignore[return-value]


class QueryStream:
    """A step's queries, added as they are drafted; :meth:`answers` gives them in order.

    Made by :meth:`RoutePlanner.stream`. A query whose owner's last answered query had the same
    search (:meth:`OptionsQuery.same_search`: a pedestrian that stood still on an unchanged map)
    is answered at once from that answer (:meth:`RouteSolver.redescribe`). The other queries
    need their searches. With ``h`` worker processes, this process drafts all ``N`` queries
    and then answers its share ``m`` of the ``S`` searched ones, while the workers answer the
    rest from the first chunk on; both finish together when

        d N + m S a = (1 - m) S w / h,   so   m = (S w / h - d N) / (S (a + w / h)),

    with ``d``, ``a`` and ``w`` the seconds a query takes to draft, to answer here and to
    answer in a worker (:attr:`RoutePlanner.seconds_per_query`, measured at every step). A
    worker measures ``w`` itself: timed from sending to answer, it would include the waits for
    queries still being drafted, so it would be the drafting pace, and the workers, idle most
    of the step, would look slow and get too small a share. ``S`` is
    projected from the share of searched queries so far (it differs much between steps:
    pedestrians standing blocked redecide together). Until the rates are measured the shares
    are equal. Which process answers a query, and whether its search is run or reused, never
    changes its answer.
    """

    def __init__(self, planner: RoutePlanner, expected: int) -> None:
        self.planner = planner
        self.queries: list[OptionsQuery] = []
        """The queries that need their searches, in the order added."""
        self._answers: list[OptionsAnswer | None] = []
        # (position, owner, search key) of each searched query
        self._searched: list[tuple[int, int | None, tuple[object, ...] | None]] = []
        self._started = time.perf_counter()
        self._helpers = max(
            min(planner.workers - 1, expected // MIN_QUERIES_PER_WORKER - 1), 0
        )
        self._expected = expected
        self._sent = 0
        self._futures: list[tuple[int, int, concurrent.futures.Future]] = []

    def add(self, query: OptionsQuery, owner: int | None = None) -> None:
        """Take the next query (a full chunk within the workers' share is sent at once).

        Args:
            query: The query.
            owner: Who asks (a pedestrian's index): its last answered query's search is reused
                when this one's is the same. ``None``: never reused.
        """
        key = query.search_key() if owner is not None else None
        earlier = self.planner.last_answers.get(owner) if owner is not None else None
        if earlier is not None and earlier[0] == key:
            answer = self.planner.solver.redescribe(query, earlier[1])
            self.planner.last_answers[owner] = (key, answer)
            self.planner.reused_queries += 1
            self._answers.append(answer)
            return
        self._searched.append((len(self._answers), owner, key))
        self._answers.append(None)
        self.queries.append(query)
        if len(self.queries) - self._sent >= STREAM_CHUNK:
            self._send(min(len(self.queries), self._quota()))

    def answers(self) -> list[OptionsAnswer]:
        """Every query's answer, in the order they were added."""
        with self.planner.timer("routing"):
            return self._answers_in_order()

    def _answers_in_order(self) -> list[OptionsAnswer]:
        drafted = time.perf_counter() - self._started
        self._expected = len(self._answers)
        self._send(min(len(self.queries), self._quota()))
        started = time.perf_counter()
        local = self.queries[self._sent :]
        found: list[OptionsAnswer | None] = [None] * self._sent
        found += self.planner.solver.answer(local)  # type: ignore[arg-type]
        answered = time.perf_counter() - started
        remote, busy = 0, 0.0
        for first, last, future in self._futures:
            try:
                part, seconds = future.result()
                remote += last - first
                busy += seconds
            except Exception as error:  # a dead or failing worker: answer here
                self.planner._give_up(error)
                part = self.planner.solver.answer(self.queries[first:last])
            found[first:last] = part
        self.planner.remote_queries += remote
        for (position, owner, key), answer in zip(self._searched, found, strict=True):
            self._answers[position] = answer
            if owner is not None:
                self.planner.last_answers[owner] = (key, answer)  # type: ignore[assignment]
        measured = {"draft": drafted / max(len(self._answers), 1)}
        if local:
            measured["here"] = answered / len(local)
        if remote:
            measured["workers"] = busy / remote
        rates = self.planner.seconds_per_query
        for name, value in measured.items():
            rates[name] = (
                value if name not in rates else 0.7 * rates[name] + 0.3 * value
            )
        return self._answers  # type: ignore[return-value]

    def _quota(self) -> int:
        """How many of the searched queries the workers answer (the class's ``(1 - m) S``)."""
        if not self._helpers:
            return 0
        added, searched = len(self._answers), len(self.queries)
        if added < self._expected:
            searched += (self._expected - added) * searched / added
        rates = self.planner.seconds_per_query
        if {"draft", "here", "workers"} <= rates.keys() and searched:
            pace = rates["workers"] / self._helpers
            here = (searched * pace - rates["draft"] * max(added, self._expected)) / (
                searched * (rates["here"] + pace)
            )
        else:
            here = 1.0 / (self._helpers + 1)
        here = min(max(here, MIN_SHARE_HERE), 1.0)
        return round(searched * (1.0 - here))

    def _send(self, until: int) -> None:
        """Send the queries up to ``until`` to a worker, or keep them here (no workers)."""
        if until <= self._sent:
            return
        pool = self.planner._ensure_pool()
        if pool is None:
            return  # no workers (or they failed): this process answers them
        try:
            future = pool.submit(_answer_in_worker, self.queries[self._sent : until])
        except (RuntimeError, concurrent.futures.BrokenExecutor) as error:
            self.planner._give_up(error)
            return
        self._futures.append((self._sent, until, future))
        self._sent = until


class _Chunk(list):
    """Queries for one process, with their positions in the step's list."""

    positions: list[int]


def _balanced_chunks(
    queries: list[OptionsQuery | RouteQuery], parts: int
) -> list[_Chunk]:
    """Split queries into ``parts`` chunks of about equal work (window cells as the cost).

    Queries go, largest first, to the chunk with the least work so far; each chunk keeps its
    queries in their original order.
    """
    costs = np.array([q.window.n_cells for q in queries], dtype=np.int64)
    load = np.zeros(parts, dtype=np.int64)
    owner = np.empty(len(queries), dtype=np.int64)
    for position in np.argsort(-costs, kind="stable").tolist():
        k = int(np.argmin(load))
        owner[position] = k
        load[k] += costs[position]
    chunks = []
    for k in range(parts):
        positions = np.flatnonzero(owner == k).tolist()
        chunk = _Chunk(queries[p] for p in positions)
        chunk.positions = positions
        chunks.append(chunk)
    return chunks
