"""A deferred persistent store keeps never-queried streams out of Chroma, in unwritten.parquet."""

import pytest

from mesa_llm_mobility.memory.store import MemoryStore, MemoryStoreError
from mesa_llm_mobility.memory.unwritten import UNWRITTEN_FILE

DAY = 1440


def _remember(stream, n, start=0):
    for i in range(start, start + n):
        stream.remember(
            f"trip {i} on link L{i % 3} took {10 + i} minutes",
            node_type="event",
            importance=0.2 if i % 2 else 0.9,
            now=60 * i,
            keywords=["trip", f"l{i % 3}"],
            spatial_scope=[f"L{i % 3}"],
        )


def _state(store, agent):
    stream = store.stream(agent)
    return sorted((n.id, n.content, n.expiration, n.keywords) for n in stream.nodes())


def _deferred(path):
    store = MemoryStore.persistent(path, embedding="hash")
    store.defer_writes = True
    return store


def _query(store, agent):
    hits = store.stream(agent).retrieve(600, text="link L1 trip", k=3, touch=False)
    return [hit.node.id for hit in hits]


def test_deferred_streams_skip_chroma_even_when_queried_and_come_back_whole(tmp_path):
    """A vector query is answered from the stream's own vectors: Chroma is never needed."""
    folder = tmp_path / "memory"
    store = _deferred(folder)
    for agent in ("a", "b", "c"):
        _remember(store.stream(agent), 5)
    asked = _query(store, "a")
    store.stream("b").prune(DAY)  # b forgets its unimportant memories
    _remember(store.stream("b"), 2, start=5)
    before = {agent: _state(store, agent) for agent in ("a", "b", "c")}
    store.close()
    assert (folder / UNWRITTEN_FILE).is_file()

    reopened = MemoryStore.open(folder)
    try:
        assert reopened._collection_names() == []
        assert reopened.agent_ids() == ["a", "b", "c"]
        assert {agent: _state(reopened, agent) for agent in ("a", "b", "c")} == before
        assert _query(reopened, "a") == asked
        # no id is reused after forgetting: the counter came back too
        node = reopened.stream("b").remember(
            "new", node_type="event", importance=0.5, now=DAY
        )
        assert node.id == "n7"
        assert _query(reopened, "c")
        # writing the pending writes makes the collection Chroma would have held all along
        reopened.stream("c").write_pending()
        assert reopened._collection_names() == ["agent-c"]
    finally:
        reopened.close()
    again = MemoryStore.open(folder)
    try:
        assert again._collection_names() == ["agent-c"]
        assert len(again.stream("b")) == len(before["b"]) + 1
        assert _state(again, "c") == before["c"]
        assert _query(again, "a") == asked
    finally:
        again.close()


def test_kept_streams_answer_like_immediately_written_ones(tmp_path):
    immediate = MemoryStore.persistent(tmp_path / "now", embedding="hash")
    deferred = _deferred(tmp_path / "later")
    for store in (immediate, deferred):
        _remember(store.stream("x"), 8)
        store.close()
    stores = [MemoryStore.open(tmp_path / name) for name in ("now", "later")]
    try:
        assert _state(*stores[:1], "x") == _state(stores[1], "x")
        assert _query(stores[0], "x") == _query(stores[1], "x")
    finally:
        for store in stores:
            store.close()


def test_a_damaged_file_is_a_clear_error(tmp_path):
    folder = tmp_path / "memory"
    store = _deferred(folder)
    _remember(store.stream("a"), 2)
    store.close()
    (folder / UNWRITTEN_FILE).write_bytes(b"not parquet")
    with pytest.raises(MemoryStoreError, match=f"{UNWRITTEN_FILE}: unreadable"):
        MemoryStore.open(folder)
