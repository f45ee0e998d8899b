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

Several runs at once (threads) share one freeze; the last to end undoes it. Undoing it
unfreezes every frozen object, also any the process froze before the run (a server before
``fork``, or the interpreter at its start): they are collected as usual again, which changes
nothing but when.
"""

from __future__ import annotations

import gc
import threading
from types import TracebackType


class _Freeze:
    """The process's one freeze: how many runs share it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs = 0


_FREEZE = _Freeze()


class LongRun:
    """``with LongRun(): ...`` around a model's step loop."""

    def __enter__(self) -> LongRun:
        with _FREEZE.lock:
            if _FREEZE.runs == 0:
                gc.freeze()
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
