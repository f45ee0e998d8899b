"""Python's cyclic garbage collector during a long run: only the newest objects are examined.

A large model holds hundreds of thousands of container objects for its whole life (Mesa's grid
cells with their neighbour dicts and agent lists, the agents, their memories), and every step
adds decisions and contexts that live a few steps. Python's collector re-examines old objects
again and again: its full collections, triggered by that churn every few steps, took about a
tenth of a 10,000-pedestrian run. :class:`LongRun` freezes (:func:`gc.freeze`) the objects alive
when a run starts and again after every step, so a collection examines only what the current
step made; reference counting still frees everything at once, as always. When the run ends
the objects are unfrozen, so a reference cycle that became garbage meanwhile (the models make
none: measured) is collected by the next collection after the run.

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
    """``with LongRun() as run: ... run.settle()`` around a model's step loop."""

    def __enter__(self) -> LongRun:
        with _FREEZE.lock:
            _FREEZE.runs += 1
            gc.freeze()
        return self

    def settle(self) -> None:
        """After a step: leave the objects that outlived it out of later collections."""
        gc.freeze()

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
