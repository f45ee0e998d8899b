"""A private asyncio event loop in a daemon thread, so synchronous code can await coroutines.

Mesa's ``step()`` is synchronous, and in Jupyter an event loop already runs in the main thread, so
neither ``asyncio.run`` nor ``loop.run_until_complete`` is usable everywhere. Running our own loop
in a thread works in both places, and keeps one loop alive across steps, so HTTP connections are
pooled and reused between batches.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class BackgroundLoop:
    """Runs coroutines on a dedicated event loop thread, started on first use."""

    def __init__(self, name: str = "mlm-brain-loop") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop (started if needed)."""
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name=self._name, daemon=True
                )
                self._thread.start()
            return self._loop

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the loop and block until it returns (or raises)."""
        if self._thread is not None and threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError(
                "BackgroundLoop.run() called from its own loop thread; await the coroutine instead"
            )
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def close(self) -> None:
        """Stop the loop and join its thread."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=5)
        if not loop.is_running():
            loop.close()
