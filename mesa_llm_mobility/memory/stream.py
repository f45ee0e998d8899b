"""One agent's memory stream: concept nodes in the agent's own Chroma collection.

The collection is the store of record (content, embedding, every node field as metadata). The
stream keeps the nodes' fields in memory as well, loaded on first use, so that keyword and
spatiotemporal matching, recency and importance need no round trip, and the nodes' embeddings
(computed on first need), so that the vector query is an exact scan in memory
(:mod:`~mesa_llm_mobility.memory.vectors`) and needs no Chroma index.

Retrieval (GATSim, section 3.3.3) scores each live node in up to three modes:

- keyword: Jaccard of query and node keywords;
- semantic: ``1 - d / d_max`` on the cosine distance of query and node embeddings;
- spatiotemporal: overlap of spatial scopes x overlap of temporal scopes;

each as ``score_r = w_r * match_r + gamma * importance + delta * recency``, takes the top-k of
each mode, then fuses the candidates: every candidate gets all three matches (a semantic
distance is fetched for candidates the vector query did not return) and is ranked by
``sum_r w_r * match_r + gamma * importance + delta * recency``, i.e. the mode scores added with
importance and recency counted once. Retrieved nodes are touched: last accessed becomes now and
expiration grows by the initial lifespan, capped at ``created + extension_cap x lifespan``.
"""

from __future__ import annotations

import heapq
import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from mesa_llm_mobility.memory.codec import node_to_metadata
from mesa_llm_mobility.memory.collection import StreamCollection
from mesa_llm_mobility.memory.config import RETRIEVAL_MODES
from mesa_llm_mobility.memory.formulas import (
    extended_expiration,
    jaccard,
    recency,
    semantic_match,
    spatiotemporal_match,
)
from mesa_llm_mobility.memory.node import (
    ConceptNode,
    NodeType,
    normalise_keywords,
    normalise_places,
    parse_interval,
    parse_node_type,
)
from mesa_llm_mobility.memory.vectors import NodeVectors, QueryVectors, nearest

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import Documents, EmbeddingFunction

    from mesa_llm_mobility.memory.config import MemoryConfig

logger = logging.getLogger(__name__)

_SEQUENTIAL_ID = re.compile(r"^n(\d+)$")


@dataclass(frozen=True, slots=True)
class RetrievedMemory:
    """One retrieved memory with the parts of its score.

    Attributes:
        node: The node, as updated by this retrieval (last accessed, expiration).
        score: Fused score: ``sum_r w_r * match_r + gamma * importance + delta * recency``.
        matches: Match in [0, 1] per active retrieval mode.
        recency: Recency at retrieval time (before the access update).
        modes: Modes whose top-k the node was in, in order keyword, semantic, spatiotemporal.
    """

    node: ConceptNode
    score: float
    matches: Mapping[str, float]
    recency: float
    modes: tuple[str, ...]


def _check_importance(importance: object) -> None:
    """Raise a ValueError naming the field unless ``importance`` is a number in [0, 1]."""
    if (
        isinstance(importance, bool)
        or not isinstance(importance, int | float)
        or not 0.0 <= importance <= 1.0
    ):
        raise ValueError(f"importance: must be in [0, 1], got {importance!r}")


def _wanted_types(
    node_types: Iterable[NodeType | str] | None,
) -> set[NodeType] | None:
    """The node types asked for, parsed; None for all."""
    if node_types is None:
        return None
    return {parse_node_type(t, "node_types") for t in node_types}


class MemoryStream:
    """The memory of one agent, backed by one Chroma collection.

    Streams are made by :meth:`MemoryStore.stream`; the collection is created on the first write.

    Args:
        agent_id: The agent's id (Mesa ``unique_id``).
        collection: Returns the agent's collection; with ``create=False`` it returns None when
            the collection does not exist yet.
        embedding: Embeds node contents and queries.
        config: Retrieval and forgetting settings.
        flush_every: Write access updates to Chroma once this many are pending (see
            :meth:`flush`); None writes only on :meth:`flush` and :meth:`prune`.
        location: Where the collection lives (store path and collection name), for errors.
        defer_writes: Keep Chroma writes (adds, deletes, updates) in a log, in order, and
            replay them, exactly as they would have been made, only at :meth:`write_pending`
            (vector queries are answered from the stream's own vectors). A deferred stream of
            a store (see :meth:`MemoryStore.flush`) never creates its collection. Off by
            default.
        query_vectors: Embeds query texts, keeping recent ones (a store shares one among its
            streams); by default the stream keeps its own few.
    """

    def __init__(
        self,
        agent_id: str,
        collection: Callable[[bool], Collection | None],
        embedding: EmbeddingFunction[Documents],
        config: MemoryConfig,
        flush_every: int | None = 512,
        location: str = "",
        defer_writes: bool = False,
        query_vectors: QueryVectors | None = None,
    ) -> None:
        self._agent_id = agent_id
        self._vectors = NodeVectors(embedding)
        self._chroma = StreamCollection(
            collection, self._vectors, location or f"agent {agent_id}"
        )
        self._query_vector = query_vectors or QueryVectors(embedding, size=64)
        self.config = config
        self._nodes: dict[str, ConceptNode] | None = None
        # Inverted indexes: only nodes sharing a keyword or a place can match those modes.
        self._by_keyword: dict[str, set[str]] = {}
        self._by_place: dict[str, set[str]] = {}
        self._next_sequence = 0
        self._dirty: set[str] = set()
        self.flush_every = flush_every
        self.defer_writes = defer_writes

    @property
    def agent_id(self) -> str:
        """The agent this memory belongs to."""
        return self._agent_id

    def _loaded(self) -> dict[str, ConceptNode]:
        if self._nodes is None:
            nodes, recorded = self._chroma.read()
            self._nodes = nodes
            for node in nodes.values():
                self._index(node)
            numbers = [int(m.group(1)) for m in map(_SEQUENTIAL_ID.match, nodes) if m]
            self._next_sequence = max(recorded, 1 + max(numbers, default=-1))
        return self._nodes

    def __len__(self) -> int:
        return len(self._loaded())

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._loaded()

    def get(self, node_id: str) -> ConceptNode:
        """Return one node.

        Args:
            node_id: The node id.

        Returns:
            The node.

        Raises:
            KeyError: If the agent has no such node.
        """
        try:
            return self._loaded()[node_id]
        except KeyError:
            raise KeyError(
                f"agent {self._agent_id!r} has no memory {node_id!r}"
            ) from None

    def nodes(
        self, node_types: Iterable[NodeType | str] | None = None
    ) -> list[ConceptNode]:
        """Return the nodes, oldest first.

        Args:
            node_types: Only these types, if given.

        Returns:
            The nodes, by creation time then id.
        """
        wanted = _wanted_types(node_types)
        selected = [
            n for n in self._loaded().values() if wanted is None or n.type in wanted
        ]
        return sorted(selected, key=lambda n: (n.created, n.id))

    def new_node(
        self,
        content: str,
        *,
        node_type: NodeType | str,
        importance: float,
        now: float,
        keywords: Iterable[str] = (),
        spatial_scope: Iterable[str] = (),
        temporal_scope: tuple[float, float] | None = None,
        node_id: str | None = None,
    ) -> ConceptNode:
        """Make (but do not store) a node, its lifespan and expiration from the config.

        Args:
            content: The memory in words.
            node_type: ``event``, ``chat``, ``reflection`` or ``plan``.
            importance: Importance in [0, 1].
            now: Simulation minute of creation.
            keywords: Keywords for keyword retrieval.
            spatial_scope: Place ids the memory is about.
            temporal_scope: ``(start, end)`` minutes the memory is about, or None.
            node_id: Id to use; by default the next ``n<number>`` of this stream.

        Returns:
            The node.

        Raises:
            ValueError: If a value is invalid; the message names the field.
        """
        if (
            isinstance(now, bool)
            or not isinstance(now, int | float)
            or not math.isfinite(now)
        ):
            raise ValueError(f"now: expected a finite simulation minute, got {now!r}")
        kind = parse_node_type(node_type, "node_type")
        _check_importance(importance)
        life = self.config.lifespans[kind].lifespan(float(importance))
        if node_id is None:
            self._loaded()
            node_id = f"n{self._next_sequence}"
            self._next_sequence += 1
        return ConceptNode(
            id=node_id,
            type=kind,
            content=content,
            importance=importance,
            created=now,
            expiration=now + life,
            lifespan=life,
            keywords=keywords,
            spatial_scope=spatial_scope,
            temporal_scope=temporal_scope,
        )

    def add(self, nodes: ConceptNode | Iterable[ConceptNode]) -> list[ConceptNode]:
        """Store nodes: embed their contents in one batch and write them to the collection.

        Args:
            nodes: One node or several.

        Returns:
            The stored nodes.

        Raises:
            ValueError: If an id is already in this memory or repeated in ``nodes``.
        """
        batch = [nodes] if isinstance(nodes, ConceptNode) else list(nodes)
        if not batch:
            return []
        known = self._loaded()
        seen: set[str] = set()
        for node in batch:
            if not isinstance(node, ConceptNode):
                raise ValueError(
                    f"nodes: expected ConceptNode, got {type(node).__name__}"
                )
            if node.id in known or node.id in seen:
                raise ValueError(
                    f"id: agent {self._agent_id!r} already has memory {node.id!r}"
                )
            seen.add(node.id)
        if self.defer_writes:
            self._chroma.defer("add", batch)
        else:
            self._chroma.apply("add", batch)
        for node in batch:
            known[node.id] = node
            self._index(node)
        return batch

    @property
    def deferred_writes(self) -> int:
        """Number of Chroma writes logged and not yet made (see ``defer_writes``)."""
        return self._chroma.deferred

    def write_pending(self) -> int:
        """Make the deferred Chroma writes, in the order they were logged.

        Returns:
            Number of writes made.
        """
        return self._chroma.write_pending()

    def unwritten_state(self) -> tuple[int, list[ConceptNode]]:
        """Its id counter and nodes, for a stream whose collection was never written.

        What its pending writes would make of an empty collection (see
        :mod:`~mesa_llm_mobility.memory.unwritten`); they stay pending, and
        :meth:`restore_unwritten` makes the same state pending in a reopened store.
        """
        return self._next_sequence, list(self._loaded().values())

    def restore_unwritten(self, next_sequence: int, nodes: list[ConceptNode]) -> None:
        """Give a stream the state :meth:`unwritten_state` kept, its Chroma writes pending."""
        self._nodes = {node.id: node for node in nodes}
        for node in nodes:
            self._index(node)
        self._next_sequence = next_sequence
        # one add per node, in the order they were added: a vector index built later is the
        # one immediate writes of single memories would have built (the same tie-breaking)
        for node in nodes:
            self._chroma.defer("add", [node])
        self._chroma.defer(
            "modify", {"agent_id": self._agent_id, "next_sequence": next_sequence}
        )

    def compact_pending(self) -> None:
        """Shorten a never-written stream's log to its state: one add per node, its id counter.

        A store keeps deferred streams out of Chroma (their vector queries need none; a
        persistent store keeps them in ``unwritten.parquet``); this keeps their logs from
        growing with every day's updates.
        """
        if self._chroma.opened or not self._chroma.deferred:
            return
        self._chroma.clear_log()
        self.restore_unwritten(*self.unwritten_state())

    @property
    def written(self) -> bool:
        """Whether this stream has a Chroma collection open (it was written or read)."""
        return self._chroma.opened

    def _index(self, node: ConceptNode) -> None:
        for keyword in node.keywords:
            self._by_keyword.setdefault(keyword, set()).add(node.id)
        for place in node.spatial_scope:
            self._by_place.setdefault(place, set()).add(node.id)

    def _unindex(self, node: ConceptNode) -> None:
        for keyword in node.keywords:
            self._by_keyword[keyword].discard(node.id)
        for place in node.spatial_scope:
            self._by_place[place].discard(node.id)

    def remember(
        self,
        content: str,
        *,
        node_type: NodeType | str,
        importance: float,
        now: float,
        keywords: Iterable[str] = (),
        spatial_scope: Iterable[str] = (),
        temporal_scope: tuple[float, float] | None = None,
    ) -> ConceptNode:
        """Make and store one node; see :meth:`new_node` for the arguments.

        Returns:
            The stored node.
        """
        node = self.new_node(
            content,
            node_type=node_type,
            importance=importance,
            now=now,
            keywords=keywords,
            spatial_scope=spatial_scope,
            temporal_scope=temporal_scope,
        )
        return self.add(node)[0]

    def rescore(self, node_id: str, importance: float) -> ConceptNode:
        """Give a stored node a new importance; its lifespan and expiration follow (eq. 7).

        For memories scored by a formula when made and by an LLM later (GATSim's agents score
        the importance of what they remember). Written to Chroma with the next flush.

        Args:
            node_id: The node's id.
            importance: The new importance in [0, 1].

        Returns:
            The updated node.

        Raises:
            KeyError: If no node has that id.
            ValueError: If the importance is not in [0, 1].
        """
        _check_importance(importance)
        known = self._loaded()
        node = known[node_id]
        life = self.config.lifespans[node.type].lifespan(float(importance))
        updated = replace(
            node,
            importance=float(importance),
            lifespan=life,
            expiration=max(node.created + life, node.last_accessed),
        )
        known[node_id] = updated
        self._dirty.add(node_id)
        return updated

    def prune(self, now: float) -> list[str]:
        """Forget the nodes that expired by ``now`` (models call this at day boundaries).

        Pending access updates of the remaining nodes are written too (see :meth:`flush`).

        Args:
            now: Simulation minute.

        Returns:
            Ids of the removed nodes.
        """
        known = self._loaded()
        expired = sorted(node.id for node in known.values() if node.is_expired(now))
        if expired:
            self._chroma.write("delete", expired)
            for node_id in expired:
                self._unindex(known.pop(node_id))
            self._vectors.discard(expired)
            # Remember the id counter: the newest ids may be gone, and must not be reused.
            self._chroma.write(
                "modify",
                {
                    "agent_id": self._agent_id,
                    "next_sequence": self._next_sequence,
                },
            )
            logger.debug(
                "agent %s forgot %d memories at minute %s",
                self._agent_id,
                len(expired),
                now,
            )
        self.flush()
        return expired

    def retrieve(
        self,
        now: float,
        *,
        text: str = "",
        keywords: Iterable[str] = (),
        spatial_scope: Iterable[str] = (),
        temporal_scope: tuple[float, float] | None = None,
        k: int | None = None,
        node_types: Iterable[NodeType | str] | None = None,
        touch: bool = True,
    ) -> list[RetrievedMemory]:
        """Retrieve the memories most relevant to a query, best first.

        A mode takes part when its weight is positive and the query has its input: ``keywords``
        for keyword, ``text`` for semantic, ``spatial_scope`` and ``temporal_scope`` for
        spatiotemporal. With no mode taking part, memories rank by importance and recency.
        Expired nodes (not yet pruned) are not retrieved.

        Args:
            now: Simulation minute of the retrieval.
            text: Query text, embedded for the semantic mode.
            keywords: Query keywords.
            spatial_scope: Query places.
            temporal_scope: Query interval ``(start, end)`` in minutes.
            k: Number of memories to return, and candidates per mode; ``config.top_k`` by default.
            node_types: Only retrieve these types.
            touch: Update last accessed and expiration of the returned nodes (the default).

        Returns:
            Up to ``k`` memories with their scores.

        Raises:
            ValueError: If a query value is invalid; the message names the field.
        """
        config = self.config
        k = config.top_k if k is None else k
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k: expected a positive integer, got {k!r}")
        if not isinstance(text, str):
            raise ValueError(f"text: expected a string, got {text!r}")
        query_keywords = normalise_keywords(keywords)
        query_places = normalise_places(spatial_scope)
        query_interval = parse_interval(temporal_scope)
        wanted = _wanted_types(node_types)
        live = [
            node
            for node in self._loaded().values()
            if not node.is_expired(now) and (wanted is None or node.type in wanted)
        ]
        if not live:
            return []

        weights = config.weights
        base = {
            node.id: config.gamma * node.importance
            + config.delta * recency(now - node.last_accessed, config.decay)
            for node in live
        }
        mode_matches: dict[str, dict[str, float]] = {}
        candidates: dict[str, list[str]] = {}
        base_top: list[str] = heapq.nlargest(k, base, key=lambda i: (base[i], i))
        known = self._loaded()

        def top(mode: str, scored: dict[str, float], *, exhaustive: bool) -> None:
            # ``exhaustive``: nodes missing from ``scored`` match 0, so the best of them by
            # importance and recency alone may still make this mode's top k.
            mode_matches[mode] = scored
            weight = weights[mode]
            pool = set(scored).union(base_top) if exhaustive else scored
            for node_id in heapq.nlargest(
                k, pool, key=lambda i: (weight * scored.get(i, 0.0) + base[i], i)
            ):
                candidates.setdefault(node_id, []).append(mode)

        if weights["keyword"] > 0 and query_keywords:
            sharing = set().union(
                *(self._by_keyword.get(word, ()) for word in query_keywords)
            )
            top(
                "keyword",
                {
                    node_id: jaccard(query_keywords, known[node_id].keywords)
                    for node_id in sharing
                    if node_id in base
                },
                exhaustive=True,
            )
        semantic = weights["semantic"] > 0 and bool(text.strip())
        distances: dict[str, float] = {}
        if semantic:
            distances = self._vectors.distances(
                self._query_vector(text), [(node.id, node.content) for node in live]
            )
            top(
                "semantic",
                {
                    node_id: semantic_match(distance, config.d_max)
                    for node_id, distance in nearest(distances, k).items()
                },
                exhaustive=False,
            )
        if (
            weights["spatiotemporal"] > 0
            and query_places
            and query_interval is not None
        ):
            sharing = set().union(
                *(self._by_place.get(place, ()) for place in query_places)
            )
            top(
                "spatiotemporal",
                {
                    node_id: spatiotemporal_match(
                        query_places,
                        known[node_id].spatial_scope,
                        query_interval,
                        known[node_id].temporal_scope,
                    )
                    for node_id in sharing
                    if node_id in base
                },
                exhaustive=True,
            )
        if not candidates:
            candidates = {node_id: [] for node_id in base_top}
        if semantic:
            known_semantic = mode_matches["semantic"]
            missing = [
                node_id for node_id in candidates if node_id not in known_semantic
            ]
            known_semantic.update(
                (node_id, semantic_match(distances[node_id], config.d_max))
                for node_id in missing
            )

        scored = []
        for node_id, modes in candidates.items():
            node_matches = {
                mode: values.get(node_id, 0.0) for mode, values in mode_matches.items()
            }
            fused = base[node_id] + sum(
                weights[mode] * value for mode, value in node_matches.items()
            )
            scored.append((fused, node_id, modes, node_matches))
        scored.sort(key=lambda item: (-item[0], -known[item[1]].created, item[1]))
        results = []
        for fused, node_id, modes, node_matches in scored[:k]:
            node = known[node_id]
            results.append(
                RetrievedMemory(
                    node=node,
                    score=fused,
                    matches=node_matches,
                    recency=recency(now - node.last_accessed, config.decay),
                    modes=tuple(m for m in RETRIEVAL_MODES if m in modes),
                )
            )
        if touch:
            results = self._touch(results, now)
        return results

    def _touch(
        self, results: list[RetrievedMemory], now: float
    ) -> list[RetrievedMemory]:
        """Spacing effect: update access time and expiration in memory; write them later."""
        known = self._loaded()
        touched = []
        for result in results:
            node = result.node
            updated = replace(
                node,
                last_accessed=max(node.last_accessed, float(now)),
                expiration=max(
                    node.expiration,
                    extended_expiration(
                        node.expiration,
                        node.created,
                        node.lifespan,
                        self.config.extension_cap,
                    ),
                ),
            )
            known[node.id] = updated
            self._dirty.add(node.id)
            touched.append(replace(result, node=updated))
        if self.flush_every is not None and len(self._dirty) >= self.flush_every:
            self.flush()
        return touched

    @property
    def pending_writes(self) -> int:
        """Number of nodes whose access update is not yet written to Chroma."""
        return len(self._dirty)

    def flush(self) -> int:
        """Write pending access updates (last accessed, expiration) to Chroma.

        Retrieval updates nodes in memory at once and writes them in batches, because a Chroma
        metadata update costs about a millisecond per node. Writes happen when
        ``flush_every`` updates are pending, at :meth:`prune` (day boundaries) and at
        :meth:`MemoryStore.flush` / :meth:`MemoryStore.close`.

        Returns:
            Number of nodes written.
        """
        if not self._dirty:
            return 0
        known = self._loaded()
        ids = sorted(node_id for node_id in self._dirty if node_id in known)
        self._dirty.clear()
        if ids:
            self._chroma.write(
                "update", ids, [node_to_metadata(known[node_id]) for node_id in ids]
            )
        return len(ids)
