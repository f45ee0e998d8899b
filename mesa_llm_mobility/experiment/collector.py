"""Python's cyclic garbage collector during a long run: the model's setup left out of its passes.

A large model holds hundreds of thousands of container objects for its whole life (Mesa's grid
cells with their neighbour dicts and agent lists, the agents, their memories). Python's
collector re-examines all of them at every full collection, which the churn of a run's
decisions triggers every few steps: at 10,000 pedestrians that was about a tenth of the run.
:class:`LongRun` freezes (:func:`gc.freeze`) the objects alive when a run starts, so the
collections during the run examine only what the run made. Everything the run makes is
collected as always; reference counting frees the frozen objects as always too. Only a
reference cycle among the frozen objects that becomes garbage during the run waits until the
run ends, when the objects are unfrozen.

The freeze is taken once, not after every step: the objects a step leaves behind include
reference cycles that only the collector frees (a library's internals, an LLM client's), and
frozen they would be kept to the end of the run.

During the run the youngest generation is collected every :data:`RUN_YOUNG_THRESHOLD`
allocations instead of every 700. A step makes and drops many short-lived containers (contexts,
options, rows); collected every 700 they are examined while alive and promoted to the older
generations, which then need collecting too. Over the first 61 steps of a 10,000-pedestrian
run (the first outside the run, then 60 with the freeze) the collector took 6.2 s of 66.1 with
Python's thresholds, 3.6 s of 61.6 with 20,000 and 1.9 s of 60.1 with 100,000 (at least
0.9 s of it in the first step: all its collections of the older generations). The cycles a
step makes are still collected within a few steps.

Several runs at once (threads) share one freeze; the last to end undoes it and restores the
thresholds. Undoing it unfreezes every frozen object, also any the process froze before the
run (a server before ``fork``, or the interpreter at its start): they are collected as usual
again, which changes nothing but when.
"""

from __future__ import annotations

import gc
import threading
from types import TracebackType

RUN_YOUNG_THRESHOLD = 100_000
"""Allocations between collections of the youngest generation during a run (Python's: 700)."""


class _Freeze:
    """The process's one freeze: how many runs share it, and the thresholds before it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs = 0
        self.thresholds: tuple[int, ...] = ()


_FREEZE = _Freeze()


class LongRun:
    """``with LongRun(): ...`` around a model's step loop."""

    def __enter__(self) -> LongRun:
        with _FREEZE.lock:
            if _FREEZE.runs == 0:
                gc.freeze()
                _FREEZE.thresholds = gc.get_threshold()
                young, *older = _FREEZE.thresholds
                if young:  # 0: the process turned collection off; leave it so
                    gc.set_threshold(max(young, RUN_YOUNG_THRESHOLD), *older)
            _FREEZE.runs += 1
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        with _FREEZE.lock:
            _FREEZE.runs -= 1
            if _FREEZE.runs == 0:
                gc.unfreeze()
                gc.set_threshold(*_FREEZE.thresholds)
