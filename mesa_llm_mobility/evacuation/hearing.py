"""Who heard whose shout: the recent shouts of every listener, and who was ever heard.

At a 1 s boundary every listener within 15 m of a shouter hears it: with a panicking crowd of
10,000 that is a million (listener, shouter) pairs a second. :class:`ShoutLog` keeps them as
arrays, one block a boundary (listeners ascending, then shouters, as
:func:`~.communication.pairs_within` gives them), for as long as a decision context reads them
(``SHOUT_MEMORY_S``), and every pair ever heard as one sorted array of pair keys (the
``shout_heard`` event is recorded only the first time a listener hears a shouter).
"""

from __future__ import annotations

from collections import deque

import numpy as np


class ShoutLog:
    """The shouts heard by ``n_pedestrians`` listeners (array rows)."""

    def __init__(self, n_pedestrians: int) -> None:
        self._stride = n_pedestrians + 1
        self._ever = np.zeros(0, dtype=np.int64)
        # (step, listeners, shouters, shouter x, shouter y), oldest first
        self._blocks: deque[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
        self._blocks = deque()

    def hear(
        self,
        step: int,
        listeners: np.ndarray,
        shouters: np.ndarray,
        shouter_cells: np.ndarray,
    ) -> np.ndarray:
        """Record the pairs heard at ``step``; returns the mask of pairs heard for the first time.

        Args:
            step: The boundary step.
            listeners: Listener rows, ascending (a listener's shouters ascending, no repeats).
            shouters: Shouter rows.
            shouter_cells: ``(k, 2)`` the shouters' cells at ``step``.
        """
        keys = listeners.astype(np.int64) * self._stride + shouters
        at = np.searchsorted(self._ever, keys)
        known = np.zeros(keys.size, dtype=bool)
        inside = at < self._ever.size
        known[inside] = self._ever[at[inside]] == keys[inside]
        first = ~known
        # keys ascend, so equal insertion points keep their order and the array stays sorted
        self._ever = np.insert(self._ever, at[first], keys[first])
        cells = np.asarray(shouter_cells, dtype=np.int64).reshape(-1, 2)
        self._blocks.append(
            (
                step,
                listeners.copy(),
                shouters.copy(),
                cells[:, 0].copy(),
                cells[:, 1].copy(),
            )
        )
        return first

    def forget_before(self, step: int) -> None:
        """Drop the blocks heard before ``step`` (no context reads them again)."""
        while self._blocks and self._blocks[0][0] < step:
            self._blocks.popleft()

    def recent(
        self, listener: int, since: int, limit: int
    ) -> list[tuple[int, int, int, int]]:
        """The latest ``limit`` shouters ``listener`` heard at or after step ``since``.

        Each shouter once, with the step it was last heard and its cell then, latest first and
        shouters of one step in row order: ``(step, shouter, x, y)``.
        """
        return self.recent_many([listener], since, limit)[0]

    def recent_many(
        self, listeners: list[int], since: int, limit: int
    ) -> list[list[tuple[int, int, int, int]]]:
        """:meth:`recent` of several listeners, each block searched once for all of them."""
        blocks = [block for block in reversed(self._blocks) if block[0] >= since]
        wanted = np.asarray(listeners, dtype=np.int64)
        spans = [
            (
                np.searchsorted(heard_by, wanted, side="left").tolist(),
                np.searchsorted(heard_by, wanted, side="right").tolist(),
            )
            for _step, heard_by, _s, _x, _y in blocks
        ]
        out: list[list[tuple[int, int, int, int]]] = []
        for row in range(len(listeners)):
            found: list[tuple[int, int, int, int]] = []
            taken: set[int] = set()
            for (step, _l, shouters, xs, ys), (los, his) in zip(
                blocks, spans, strict=True
            ):
                if len(found) >= limit:
                    break
                for k in range(los[row], his[row]):
                    s = int(shouters[k])
                    if s in taken:
                        continue
                    taken.add(s)
                    found.append((step, s, int(xs[k]), int(ys[k])))
                    if len(found) >= limit:
                        break
            out.append(found)
        return out
