"""The Chroma side of one memory stream: its collection and its writes.

A :class:`~mesa_llm_mobility.memory.stream.MemoryStream` keeps its nodes in memory and works on
them; this module holds what it asks of Chroma. The collection is opened on first use (created on
the first write). Writes are made at once, or kept in a log, in order, and replayed exactly as
they would have been made when Chroma is needed (the stream's ``defer_writes``): at
:meth:`StreamCollection.write_pending`. Once a write is logged, the writes after it are logged
too, so the replay keeps their order. Vector queries do not come here: the stream answers them
from its own vectors (:mod:`~mesa_llm_mobility.memory.vectors`), which are the ones written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mesa_llm_mobility.memory.codec import node_from_record, node_to_metadata

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

    from mesa_llm_mobility.memory.node import ConceptNode
    from mesa_llm_mobility.memory.vectors import NodeVectors


class StreamCollection:
    """One stream's Chroma collection, opened lazily, with its log of deferred writes.

    Args:
        factory: Returns the collection; with ``create=False`` it returns None when the
            collection does not exist yet.
        vectors: The stream's node embeddings (computed on first need), written with the nodes.
        location: Where the collection lives (store path and collection name), for errors.
    """

    def __init__(
        self,
        factory: Callable[[bool], Collection | None],
        vectors: NodeVectors,
        location: str,
    ) -> None:
        self._factory = factory
        self._collection: Collection | None = None
        self._vectors = vectors
        self._location = location
        # Deferred Chroma writes, in order: (operation, arguments).
        self._log: list[tuple[str, tuple[Any, ...]]] = []

    @property
    def opened(self) -> bool:
        """Whether the collection is open (it was written or read)."""
        return self._collection is not None

    @property
    def deferred(self) -> int:
        """Number of writes logged and not yet made."""
        return len(self._log)

    def _open(self, create: bool) -> Collection | None:
        if self._collection is None:
            self._collection = self._factory(create)
        return self._collection

    def read(self) -> tuple[dict[str, ConceptNode], int]:
        """Read the stored nodes and the id counter recorded in the collection's metadata.

        Returns:
            Node id -> node, and the recorded counter; empty and 0 when there is no collection.

        Raises:
            ValueError: If a stored record is not a valid node; the message names the location.
        """
        collection = self._open(False)
        if collection is None:
            return {}, 0
        nodes: dict[str, ConceptNode] = {}
        records = collection.get(include=["documents", "metadatas"])
        for node_id, document, metadata in zip(
            records["ids"],
            records["documents"] or [],
            records["metadatas"] or [],
            strict=True,
        ):
            try:
                nodes[node_id] = node_from_record(node_id, document, metadata)
            except ValueError as error:
                raise ValueError(f"{self._location}: {error}") from None
        recorded = 0
        if collection.metadata:
            recorded = int(collection.metadata.get("next_sequence", 0))
        return nodes, recorded

    def apply(self, operation: str, *arguments: Any) -> None:
        """Make one write now.

        Args:
            operation: ``add`` (nodes), ``delete`` (ids), ``modify`` (collection metadata) or
                ``update`` (ids and node metadatas).
            *arguments: The operation's arguments.
        """
        if operation == "add":
            (batch,) = arguments
            embeddings = self._vectors.of([(node.id, node.content) for node in batch])
            collection = self._open(True)
            assert collection is not None
            collection.add(
                ids=[node.id for node in batch],
                embeddings=embeddings,
                documents=[node.content for node in batch],
                metadatas=[node_to_metadata(node) for node in batch],
            )
            return
        collection = self._open(False)
        assert collection is not None
        if operation == "delete":
            (ids,) = arguments
            collection.delete(ids=ids)
        elif operation == "modify":
            (metadata,) = arguments
            collection.modify(metadata=metadata)
        elif operation == "update":
            ids, metadatas = arguments
            collection.update(ids=ids, metadatas=metadatas)
        else:
            raise ValueError(f"operation: unknown Chroma write {operation!r}")

    def defer(self, operation: str, *arguments: Any) -> None:
        """Log one write (see :meth:`apply` for the operations), to be made later."""
        self._log.append((operation, arguments))

    def clear_log(self) -> None:
        """Drop the logged writes (the stream logs its state again instead)."""
        self._log = []

    def write(self, operation: str, *arguments: Any) -> None:
        """Make one write now, or log it when writes are pending (so the order is kept)."""
        if self._log:
            self.defer(operation, *arguments)
        else:
            self.apply(operation, *arguments)

    def write_pending(self) -> int:
        """Make the logged writes, in the order they were logged.

        Returns:
            Number of writes made.
        """
        log, self._log = self._log, []
        for operation, arguments in log:
            self.apply(operation, *arguments)
        return len(log)
