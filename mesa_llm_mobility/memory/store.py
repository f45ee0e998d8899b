"""The memory store of a run: one Chroma client, one collection per agent.

A run has one :class:`MemoryStore`. It is persistent under the run directory
(:meth:`MemoryStore.persistent`, reopened with :meth:`MemoryStore.open`) or ephemeral, in memory,
for tests and notebooks (:meth:`MemoryStore.ephemeral`). Streams and their collections are made
lazily, on first use. Next to Chroma's files the store writes ``memory.json``: the embedding
chosen (the ``"auto"`` setting resolves to MiniLM or hash and the choice must not change when a
run is reopened, since the stored vectors come from it), the memory settings and the Chroma
version. Chroma telemetry is off.

Persistent stores bound the number of vector indexes Chroma keeps loaded (``hnsw_cache_size``),
and every collection writes its index to disk on each write (:data:`HNSW_CONFIGURATION`), so
that an index the cache evicts reloads as it was.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import sys
import uuid
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chromadb
from chromadb.config import Settings

from mesa_llm_mobility.cognition.redaction import scrub_files
from mesa_llm_mobility.memory.config import MemoryConfig
from mesa_llm_mobility.memory.embedding import (
    HashEmbedding,
    register_embedding_functions,
    resolve_embedding,
)
from mesa_llm_mobility.memory.stream import MemoryStream
from mesa_llm_mobility.memory.unwritten import read_unwritten, write_unwritten
from mesa_llm_mobility.memory.vectors import QueryVectors

if TYPE_CHECKING:
    from collections.abc import Iterator

    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import Documents, EmbeddingFunction

    from mesa_llm_mobility.memory.embedding import EmbeddingChoice

logger = logging.getLogger(__name__)

METADATA_FILE = "memory.json"
"""Name of the store's metadata file, next to Chroma's files."""

CHROMA_FILE = "chroma.sqlite3"
"""Chroma's database file inside a persistent store."""

_AGENT_ID = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?$")
_PERSISTENT_PREFIX = "agent-"


DEFAULT_HNSW_CACHE_SIZE = 200
"""Vector indexes a persistent store keeps in memory: at most 192 (64 shards of 3), about 0.5 GB."""

MIN_HNSW_CACHE_SIZE = 16
"""Smallest cache bound: Chroma needs some open files of its own while it starts."""

HNSW_CONFIGURATION: dict[str, Any] = {"space": "cosine", "sync_threshold": 1}
"""HNSW settings of every agent's collection.

``sync_threshold=1`` makes Chroma write the index to disk after every write (add, update,
delete) instead of after every 1,000 records. The cache of loaded indexes drops an evicted
index without writing it, and Chroma replays the log into a collection only on its first read
in a process; so an index must be on disk, whole, whenever it can be evicted, or its agent's
next query fails ("Nothing found on disk") or misses the newest memories. Chroma writes only
the changed elements, plus the index's id map, so this costs little for agent-sized indexes.
Chroma's Rust type declares a minimum of 2, which it does not enforce for ``configuration``
(chromadb 1.5.9); 2 would leave a collection's newest record off disk.
"""

_EPHEMERAL_HNSW_CACHE_SIZE = 4000
"""Cache wanted for the ephemeral client: Chroma's default where the open-file limit is 20,000."""

_MACOS_OPEN_MAX = 10240


@contextlib.contextmanager
def _bounded_hnsw_cache(size: int | None) -> Iterator[None]:
    """Make the Chroma client created inside keep at most about ``size`` vector indexes in memory.

    Chroma's local (Rust) backend keeps loaded HNSW indexes in an LRU cache whose size it
    derives from the open-file limit (``RLIMIT_NOFILE // 5``) when the client starts; an index
    costs about 2.6 MB however few vectors it holds (hnswlib allocates 65,536 label locks per
    index), so with one collection per agent the cache, not the data, sets memory use. The
    settings ``chroma_memory_limit_bytes`` and ``chroma_segment_cache_policy`` do not reach this
    backend. So the soft limit is lowered while the client starts and restored at once.

    The cache is split into 64 shards of ``size // 64`` indexes (at least one each) by a hash of
    the segment id, so evictions begin before ``size`` indexes are loaded. An evicted index is
    reloaded from disk on its agent's next query, which is why every collection writes its index
    on every write (:data:`HNSW_CONFIGURATION`).
    """
    if size is None or sys.platform == "win32":  # no RLIMIT_NOFILE on Windows
        yield
        return
    import resource  # noqa: PLC0415 - POSIX only

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # Files already open, plus room for Chroma's own start-up, must stay below the limit, so the
    # cache may come out somewhat larger than asked in a process with many open files.
    wanted = max(5 * size + 4, _open_file_count() + 128)
    if soft != resource.RLIM_INFINITY and soft <= wanted:
        yield
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@contextlib.contextmanager
def _ample_hnsw_cache(size: int) -> Iterator[None]:
    """Make the Chroma client created inside cache at least ``size`` indexes, if the limits allow.

    An ephemeral index has no disk: when the cache evicts it, Chroma answers its next query as
    if the collection were empty or fails on its ids. Chroma derives the cache from the soft
    open-file limit (``RLIMIT_NOFILE // 5``, in 64 shards); a common soft limit of 1,024 (256 on
    macOS) gives a few indexes per shard, evicting with a few dozen agents. So the soft limit is
    raised, within the hard limit, while the client starts and restored at once.
    """
    if sys.platform == "win32":  # no RLIMIT_NOFILE on Windows
        yield
        return
    import resource  # noqa: PLC0415 - POSIX only

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 5 * size + 4
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        yield
        return
    allowed = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    raised = None
    # macOS refuses a soft limit above OPEN_MAX (10,240) even when the hard limit is unlimited.
    for limit in (allowed, min(allowed, _MACOS_OPEN_MAX)):
        if limit <= soft:
            continue
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
        except (ValueError, OSError):
            continue
        raised = limit
        break
    if (raised or soft) < wanted:
        _EPHEMERAL_CACHE["limit"] = raised or soft
    try:
        yield
    finally:
        if raised is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


_EPHEMERAL_CACHE: dict[str, int] = {"limit": 0, "collections": 0}
"""The soft open-file limit the process's ephemeral Chroma started with when it was too low
for the wanted cache (0: ample), and the ephemeral collections made since."""


def _count_ephemeral_collection() -> None:
    """Count an ephemeral collection; warn once when indexes may now be evicted.

    A shard of Chroma's cache holds ``limit // 5 // 64`` indexes: with no more collections than
    that in the process, no shard can overflow, whatever the hash, and no memory is at risk.
    """
    _EPHEMERAL_CACHE["collections"] += 1
    limit = _EPHEMERAL_CACHE["limit"]
    if limit and _EPHEMERAL_CACHE["collections"] > max(1, limit // 5 // 64):
        _warn_small_ephemeral_cache(limit)


@functools.cache  # once per process
def _warn_small_ephemeral_cache(limit: int) -> None:
    logger.warning(
        "the open-file limit (%d) lets Chroma cache only %d vector indexes (%d per shard); an "
        "ephemeral store loses the memories of an agent whose index it evicts, and this "
        "process now has %d agents' indexes: use a persistent store (a run directory) or "
        "raise the open-file limit (ulimit -n)",
        limit,
        limit // 5,
        max(1, limit // 5 // 64),
        _EPHEMERAL_CACHE["collections"],
    )


def _open_file_count() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 1024


def _persist_every_write(collection: Collection) -> None:
    """Give a collection made before :data:`HNSW_CONFIGURATION` its sync threshold.

    Stores written by earlier versions kept Chroma's default (an index written every 1,000
    records), so their indexes may not be on disk at all. Chroma reads the threshold when it
    loads an index, and an index is first loaded by the first read after the collection is
    opened, which then replays the log and, with the new threshold, writes the index.
    """
    wanted = HNSW_CONFIGURATION["sync_threshold"]
    hnsw = collection.configuration_json.get("hnsw") or {}
    if hnsw.get("sync_threshold") != wanted:
        collection.modify(configuration={"hnsw": {"sync_threshold": wanted}})
        logger.debug(
            "collection %s: HNSW sync threshold set to %d", collection.name, wanted
        )


class MemoryStoreError(RuntimeError):
    """A persisted memory store is missing, corrupt or incompatible; the message names the path."""


def chroma_settings() -> Settings:
    """Chroma settings of every store: telemetry off, no reset.

    Returns:
        The settings.
    """
    return Settings(anonymized_telemetry=False, allow_reset=False)


def _agent_key(agent_id: object) -> str:
    key = str(agent_id)
    if (
        isinstance(agent_id, bool)
        or not isinstance(agent_id, int | str)
        or not _AGENT_ID.match(key)
    ):
        raise ValueError(
            f"agent_id: expected an int or a string of letters, digits, '.', '_', '-' "
            f"(at most 200, starting and ending with a letter or digit), got {agent_id!r}"
        )
    return key


class MemoryStore:
    """All agents' memories of one run.

    Use the constructors :meth:`ephemeral`, :meth:`persistent` and :meth:`open`.

    Args:
        client: The Chroma client.
        embedding: The resolved embedding.
        config: Retrieval and forgetting settings.
        path: Folder of a persistent store, None for an ephemeral one.
        prefix: Prefix of this store's collection names.

    Attributes:
        defer_writes: Streams made from now on log their Chroma writes and make them only
            when Chroma is needed (see :class:`MemoryStream`); a stream that is never queried
            costs no collection. Off by default; :meth:`flush` and :meth:`close` make them.
    """

    def __init__(
        self,
        client: ClientAPI,
        embedding: EmbeddingChoice,
        config: MemoryConfig,
        path: Path | None,
        prefix: str,
    ) -> None:
        self._client = client
        self.embedding = embedding
        self.config = config
        self.path = path
        self._prefix = prefix
        self._streams: dict[str, MemoryStream] = {}
        # query texts repeat across agents ("plan today travel lessons"): embedded once each
        self._query_vectors = QueryVectors(embedding.function)
        self._closed = False
        self.defer_writes = False

    @classmethod
    def ephemeral(
        cls,
        embedding: str | EmbeddingFunction[Documents] = "hash",
        config: MemoryConfig | None = None,
        defer_writes: bool = False,
    ) -> MemoryStore:
        """Make an in-memory store (tests, notebooks).

        Chroma shares one in-memory database per process; each ephemeral store uses its own
        collection-name prefix, so stores do not see each other. :meth:`close` deletes its
        collections. An evicted in-memory index cannot be reloaded, so the first ephemeral
        store of a process raises the soft open-file limit (within the hard one) while Chroma
        starts, for a cache of 4,000 indexes (see docs/memory.md).

        Args:
            embedding: ``"auto"``, ``"minilm"``, ``"hash"`` or a Chroma embedding function.
            config: Settings; defaults to :class:`MemoryConfig`.
            defer_writes: See :attr:`defer_writes`.

        Returns:
            The store.
        """
        register_embedding_functions()
        choice = resolve_embedding(embedding)
        # Only the process's first ephemeral client starts Chroma; later ones share it.
        with _ample_hnsw_cache(_EPHEMERAL_HNSW_CACHE_SIZE):
            client = chromadb.EphemeralClient(settings=chroma_settings())
        prefix = f"m{uuid.uuid4().hex[:12]}-"
        store = cls(client, choice, config or MemoryConfig(), None, prefix)
        store.defer_writes = defer_writes
        return store

    @classmethod
    def persistent(
        cls,
        path: str | Path,
        embedding: str | EmbeddingFunction[Documents] = "auto",
        config: MemoryConfig | None = None,
        hnsw_cache_size: int | None = DEFAULT_HNSW_CACHE_SIZE,
    ) -> MemoryStore:
        """Make a new store, or reopen an existing one, in the folder ``path``.

        Args:
            path: Folder of the store, typically ``<run dir>/memory``.
            embedding: ``"auto"``, ``"minilm"``, ``"hash"`` or a Chroma embedding function. On
                reopening, ``"auto"`` means the embedding recorded in ``memory.json``.
            config: Settings; defaults to the recorded ones on reopening, else
                :class:`MemoryConfig`.
            hnsw_cache_size: Vector indexes Chroma keeps in memory (about 2.6 MB each, whatever
                their size), in 64 shards of ``hnsw_cache_size // 64`` (at least one each);
                evicted ones are reloaded from disk on use. None keeps Chroma's default.

        Returns:
            The store.

        Raises:
            MemoryStoreError: If the folder holds a corrupt or incompatible store.
        """
        folder = Path(path)
        if (folder / METADATA_FILE).exists():
            return cls.open(
                folder,
                embedding=embedding,
                config=config,
                hnsw_cache_size=hnsw_cache_size,
            )
        if folder.exists() and any(folder.iterdir()):
            raise MemoryStoreError(
                f"{folder}: folder is not empty and holds no {METADATA_FILE}"
            )
        register_embedding_functions()
        choice = resolve_embedding(embedding)
        config = config or MemoryConfig()
        folder.mkdir(parents=True, exist_ok=True)
        client = cls._client_at(folder, hnsw_cache_size)
        store = cls(client, choice, config, folder, _PERSISTENT_PREFIX)
        store._write_metadata()
        logger.info(
            "memory store at %s, embedding %s (%s)", folder, choice.name, choice.backend
        )
        return store

    @classmethod
    def open(
        cls,
        path: str | Path,
        embedding: str | EmbeddingFunction[Documents] = "auto",
        config: MemoryConfig | None = None,
        hnsw_cache_size: int | None = DEFAULT_HNSW_CACHE_SIZE,
    ) -> MemoryStore:
        """Reopen a persisted store; every agent's stream is restored.

        Args:
            path: Folder of the store.
            embedding: ``"auto"`` (the recorded embedding), or a setting that must resolve to
                the recorded embedding.
            config: Settings; by default the recorded ones.
            hnsw_cache_size: See :meth:`persistent`.

        Returns:
            The store.

        Raises:
            FileNotFoundError: If the folder or its ``memory.json`` does not exist.
            MemoryStoreError: If the store is corrupt or was built with another embedding.
        """
        folder = Path(path)
        if not folder.is_dir():
            raise FileNotFoundError(f"memory store not found: {folder}")
        metadata_file = folder / METADATA_FILE
        if not metadata_file.is_file():
            raise FileNotFoundError(f"memory store metadata not found: {metadata_file}")
        try:
            recorded = json.loads(metadata_file.read_text(encoding="utf-8"))
            recorded_embedding = recorded["embedding"]
            recorded_name = recorded_embedding["name"]
            recorded_config = recorded["config"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise MemoryStoreError(
                f"{metadata_file}: corrupt memory store metadata ({error!r})"
            ) from None
        if not (folder / CHROMA_FILE).is_file():
            raise MemoryStoreError(f"{folder / CHROMA_FILE}: Chroma database missing")
        register_embedding_functions()
        choice = cls._reopened_embedding(embedding, recorded_embedding, metadata_file)
        if choice.name != recorded_name:
            raise MemoryStoreError(
                f"{metadata_file}: store was built with embedding {recorded_name!r}, "
                f"but embedding={choice.name!r} was given; its vectors would not be comparable"
            )
        if config is None:
            try:
                config = MemoryConfig.from_dict(recorded_config)
            except (ValueError, KeyError, TypeError) as error:
                raise MemoryStoreError(
                    f"{metadata_file}: corrupt memory settings ({error})"
                ) from None
        client = cls._client_at(folder, hnsw_cache_size)
        store = cls(client, choice, config, folder, _PERSISTENT_PREFIX)
        try:
            names = store._collection_names()
        except Exception as error:
            raise MemoryStoreError(
                f"{folder / CHROMA_FILE}: cannot read Chroma database ({error})"
            ) from error
        store._restore_unwritten()
        logger.info(
            "reopened memory store at %s: %d agents, embedding %s",
            folder,
            len(names),
            choice.name,
        )
        return store

    @staticmethod
    def _reopened_embedding(
        embedding: str | EmbeddingFunction[Documents],
        recorded: dict[str, Any],
        metadata_file: Path,
    ) -> EmbeddingChoice:
        if embedding != "auto":
            return resolve_embedding(embedding)
        name = recorded["name"]
        if name == "hash":
            return resolve_embedding(HashEmbedding(dim=int(recorded.get("dim", 384))))
        if name == "minilm":
            try:
                return resolve_embedding("minilm")
            except RuntimeError as error:
                raise MemoryStoreError(
                    f"{metadata_file}: store needs MiniLM embeddings: {error}"
                ) from None
        raise MemoryStoreError(
            f"{metadata_file}: store was built with custom embedding {name!r}; pass it as embedding="
        )

    @staticmethod
    def _client_at(folder: Path, hnsw_cache_size: int | None) -> ClientAPI:
        if hnsw_cache_size is not None and (
            isinstance(hnsw_cache_size, bool)
            or not isinstance(hnsw_cache_size, int)
            or hnsw_cache_size < MIN_HNSW_CACHE_SIZE
        ):
            raise ValueError(
                f"hnsw_cache_size: expected an integer >= {MIN_HNSW_CACHE_SIZE} or None, "
                f"got {hnsw_cache_size!r}"
            )
        try:
            with _bounded_hnsw_cache(hnsw_cache_size):
                return chromadb.PersistentClient(
                    path=str(folder), settings=chroma_settings()
                )
        except Exception as error:
            raise MemoryStoreError(
                f"{folder / CHROMA_FILE}: cannot open Chroma database ({error})"
            ) from error

    def _write_metadata(self) -> None:
        assert self.path is not None
        (self.path / METADATA_FILE).write_text(
            json.dumps(self.run_metadata(), indent=2), encoding="utf-8"
        )

    def run_metadata(self) -> dict[str, Any]:
        """What a run records about its memory: embedding choice, settings, Chroma version.

        Returns:
            JSON-ready metadata.
        """
        return {
            "embedding": self.embedding.to_dict()
            | (
                {"dim": self.embedding.function.dim}
                if isinstance(self.embedding.function, HashEmbedding)
                else {}
            ),
            "config": self.config.to_dict(),
            "chromadb": version("chromadb"),
            "persistent": self.path is not None,
        }

    def _collection_names(self) -> list[str]:
        return [
            name
            for name in (
                c if isinstance(c, str) else c.name
                for c in self._client.list_collections()
            )
            if name.startswith(self._prefix)
        ]

    def agent_ids(self) -> list[str]:
        """Ids of the agents that have memories in this store (persisted ones included).

        Returns:
            Agent ids as strings, sorted.
        """
        keys = {name.removeprefix(self._prefix) for name in self._collection_names()}
        return sorted(
            keys | {key for key, stream in self._streams.items() if len(stream)}
        )

    def stream(self, agent_id: int | str) -> MemoryStream:
        """Return the memory stream of an agent, creating it lazily.

        Args:
            agent_id: The agent's ``unique_id``.

        Returns:
            The stream; its collection is created on its first write.

        Raises:
            ValueError: If the id cannot name a collection.
        """
        key = _agent_key(agent_id)
        stream = self._streams.get(key)
        if stream is None:
            where = str(self.path) if self.path is not None else "ephemeral store"
            stream = MemoryStream(
                key,
                self._collection_factory(key),
                self.embedding.function,
                self.config,
                location=f"{where}: collection {self._prefix + key}",
                defer_writes=self.defer_writes,
                query_vectors=self._query_vectors,
            )
            self._streams[key] = stream
        return stream

    def _collection_factory(self, key: str) -> Any:
        name = self._prefix + key

        def collection(create: bool) -> Collection | None:
            # Streams embed texts themselves, so an existing collection is opened without an
            # embedding function: Chroma would refuse one whose name differs from the recorded
            # one (e.g. our MiniLM vs Chroma's ONNX MiniLM).
            try:
                found = self._client.get_collection(name)
            except chromadb.errors.NotFoundError:
                if not create:
                    return None
                if self.path is None:
                    _count_ephemeral_collection()
                return self._client.create_collection(
                    name,
                    embedding_function=self.embedding.function,
                    configuration={"hnsw": dict(HNSW_CONFIGURATION)},
                    metadata={"agent_id": key},
                )
            _persist_every_write(found)
            return found

        return collection

    def prune(self, now: float) -> int:
        """Forget expired memories of every agent (models call this at day boundaries).

        Args:
            now: Simulation minute.

        Returns:
            Number of memories removed.
        """
        return sum(
            len(self.stream(agent_id).prune(now)) for agent_id in self.agent_ids()
        )

    def flush(self) -> int:
        """Write every stream's pending access updates to Chroma (call before a checkpoint).

        Deferred streams never written to Chroma stay out of it: a persistent store keeps them
        in ``unwritten.parquet``, an ephemeral one in memory.

        A persistent store then scrubs its files of known secrets: Chroma's vector index files
        hold uninitialised memory, which may contain an HTTP response the process read
        (:func:`~mesa_llm_mobility.cognition.redaction.scrub_files`).

        Returns:
            Number of nodes written.
        """
        written = sum(stream.flush() for stream in self._streams.values())
        unwritten = self._unwritten_streams()
        for key, stream in self._streams.items():
            if key in unwritten:
                stream.compact_pending()  # its log shortened to its state, kept out of Chroma
            else:
                stream.write_pending()
        if self.path is not None:
            write_unwritten(
                self.path,
                {key: stream.unwritten_state() for key, stream in unwritten.items()},
            )
            scrub_files(self.path)
        return written

    def _unwritten_streams(self) -> dict[str, MemoryStream]:
        """Deferred streams that have no Chroma collection (yet): they stay out of Chroma.

        Their semantic queries need no index (:mod:`~mesa_llm_mobility.memory.vectors`), and in
        an ephemeral store an index the cache evicted would be lost with its memories.
        """
        if not self.defer_writes:
            return {}
        in_chroma = set(self._collection_names())
        return {
            key: stream
            for key, stream in self._streams.items()
            if stream.defer_writes
            and not stream.written
            and self._prefix + key not in in_chroma
            and (len(stream) or stream.deferred_writes)
        }

    def _restore_unwritten(self) -> None:
        """Reopen the streams kept in ``unwritten.parquet`` with their writes pending."""
        assert self.path is not None
        try:
            kept = read_unwritten(self.path)
        except ValueError as error:
            raise MemoryStoreError(str(error)) from None
        in_chroma = set(self._collection_names())
        for key, (next_sequence, nodes) in kept.items():
            if self._prefix + key in in_chroma:
                continue  # written to Chroma after the file was: Chroma is newer
            stream = self.stream(key)
            stream.defer_writes = True
            stream.restore_unwritten(next_sequence, nodes)
        if kept:
            # its streams stay deferred; so do the streams made from now on
            self.defer_writes = True

    def close(self) -> None:
        """Write pending updates and release the store; an ephemeral store deletes its collections.

        A persistent store also closes its Chroma client, so that the folder can be replaced
        (e.g. by a checkpoint's memory snapshot) and reopened in the same process. Closing a
        closed store does nothing.
        """
        if self._closed:
            return
        self._closed = True
        if self.path is not None:
            self.flush()
            self._client.close()
            scrub_files(self.path)
        else:
            for name in self._collection_names():
                self._client.delete_collection(name)
        self._streams.clear()
