"""One stream's node embeddings in memory, and the exact cosine distances of a query to them.

A stream's semantic query is answered here rather than by Chroma's vector index: an agent holds
tens to a few hundred memories, for which an exact scan is cheaper than a Chroma query, and a
Chroma index costs about 2.6 MB of memory however few vectors it holds (hnswlib's label locks),
so 10,000 agents' indexes would need some 26 GB, or a cache that evicts them (an ephemeral index
evicted is lost). Chroma stays the store of record of a persistent store; the vectors written to
it are the ones kept here, so every node is embedded once.

Distances are Chroma's cosine distance, ``1 - <q / |q|, v / |v|>`` in single precision, as
hnswlib computes it for a collection in the ``cosine`` space.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

_TINY = np.float32(1e-30)
"""Added to a norm before dividing, as hnswlib does, so a zero vector gives distance 1."""


class NodeVectors:
    """The embeddings of one stream's nodes, computed on first need, in batches.

    Args:
        embed: Embeds a list of texts (a Chroma embedding function).
    """

    def __init__(self, embed: Callable[[list[str]], Sequence[Any]]) -> None:
        self._embed = embed
        self._raw: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self._raw)

    def of(self, items: Sequence[tuple[str, str]]) -> list[np.ndarray]:
        """The embeddings of ``(node id, content)`` pairs; the missing ones in one batch.

        Args:
            items: Node ids with their contents.

        Returns:
            One single-precision vector per item, in order.
        """
        missing = [
            (node_id, text) for node_id, text in items if node_id not in self._raw
        ]
        if missing:
            embedded = self._embed([text for _, text in missing])
            for (node_id, _), vector in zip(missing, embedded, strict=True):
                self._raw[node_id] = np.asarray(vector, dtype=np.float32)
        return [self._raw[node_id] for node_id, _ in items]

    def discard(self, node_ids: Iterable[str]) -> None:
        """Forget the vectors of removed nodes."""
        for node_id in node_ids:
            self._raw.pop(node_id, None)

    def distances(
        self, query: Any, items: Sequence[tuple[str, str]]
    ) -> dict[str, float]:
        """Cosine distances of the query embedding to the given nodes.

        Args:
            query: The embedded query.
            items: Node ids with their contents (embedded here when not yet).

        Returns:
            Node id -> cosine distance in [0, 2].
        """
        if not items:
            return {}
        matrix = np.stack(self.of(items))
        matrix = matrix / (np.linalg.norm(matrix, axis=1, keepdims=True) + _TINY)
        q = np.asarray(query, dtype=np.float32)
        q = q / (np.linalg.norm(q) + _TINY)
        values = np.float32(1.0) - matrix @ q
        return {
            node_id: float(value)
            for (node_id, _), value in zip(items, values, strict=True)
        }


class QueryVectors:
    """Embeddings of query texts, the most recent ``size`` kept (queries repeat across agents).

    A query is embedded alone, so a kept vector is the one embedding it again would give.

    Args:
        embed: Embeds a list of texts (a Chroma embedding function).
        size: Query texts kept.
    """

    def __init__(
        self, embed: Callable[[list[str]], Sequence[Any]], size: int = 4096
    ) -> None:
        self._embed = embed
        self._size = size
        self._kept: OrderedDict[str, np.ndarray] = OrderedDict()

    def __call__(self, text: str) -> np.ndarray:
        """The embedding of one query text."""
        vector = self._kept.get(text)
        if vector is None:
            vector = np.asarray(self._embed([text])[0], dtype=np.float32)
            vector.setflags(write=False)
            self._kept[text] = vector
            if len(self._kept) > self._size:
                self._kept.popitem(last=False)
        else:
            self._kept.move_to_end(text)
        return vector


def nearest(distances: dict[str, float], k: int) -> dict[str, float]:
    """The ``k`` smallest distances (ties by node id, so the choice is reproducible)."""
    chosen = sorted(distances, key=lambda node_id: (distances[node_id], node_id))[:k]
    return {node_id: distances[node_id] for node_id in chosen}
