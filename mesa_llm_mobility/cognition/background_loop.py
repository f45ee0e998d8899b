"""One private asyncio event loop in a daemon thread, so synchronous code can await coroutines.

Mesa's ``step()`` is synchronous, and in Jupyter an event loop already runs in the main thread, so
neither ``asyncio.run`` nor ``loop.run_until_complete`` is usable everywhere. Running our own loop
in a thread works in both places. The loop is shared by every brain of the process and lives as
long as the process: litellm keeps loop-bound state (pooled HTTP clients, its logging worker), and
a loop that closed under it would leave that state broken. The thread starts on first use, never
at import.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def background_loop() -> asyncio.AbstractEventLoop:
    """The shared loop, started on first use."""
    global _loop, _thread  # noqa: PLW0603  (one loop per process, see module docstring)
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            _thread = threading.Thread(
                target=_loop.run_forever, name="mlm-brain-loop", daemon=True
            )
            _thread.start()
        return _loop


def run_in_background[T](coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on the shared loop and block until it returns (or raises).

    Raises:
        RuntimeError: when called from the loop's own thread (await the coroutine there instead).
    """
    loop = background_loop()
    if threading.current_thread() is _thread:
        coroutine.close()
        raise RuntimeError(
            "run_in_background() called from the brain loop itself; await the coroutine instead"
        )
    return asyncio.run_coroutine_threadsafe(coroutine, loop).result()


def is_background_loop(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` is the shared brain loop (which lives as long as the process)."""
    return loop is _loop
