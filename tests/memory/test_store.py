import json
import os
import resource
import subprocess
import sys
import textwrap

import pytest

from mesa_llm_mobility.memory.config import MemoryConfig
from mesa_llm_mobility.memory.embedding import HashEmbedding
from mesa_llm_mobility.memory.store import METADATA_FILE, MemoryStore, MemoryStoreError


def remember_two(store):
    store.stream(1).remember(
        "Queue on the bridge",
        node_type="event",
        importance=0.9,
        now=460,
        keywords=["queue"],
        spatial_scope=["St_1_link_2", "Office"],
        temporal_scope=(450, 480),
    )
    store.stream("agent_b").remember(
        "Leave earlier tomorrow", node_type="reflection", importance=0.6, now=1400
    )


def test_ephemeral_stores_are_isolated():
    first = MemoryStore.ephemeral("hash")
    second = MemoryStore.ephemeral("hash")
    remember_two(first)
    assert first.agent_ids() == ["1", "agent_b"]
    assert second.agent_ids() == []
    assert len(second.stream(1)) == 0
    first.close()
    assert first.agent_ids() == []
    second.close()


def test_one_collection_per_agent_created_lazily():
    store = MemoryStore.ephemeral("hash")
    store.stream(1)
    store.stream(2)
    assert store._collection_names() == []
    remember_two(store)
    assert sorted(store._collection_names()) == sorted(
        store._prefix + key for key in ("1", "agent_b")
    )
    assert store.stream(1) is store.stream("1")
    store.close()


@pytest.mark.parametrize("agent_id", ["", "a b", "-x", 1.5, None, True, "x" * 300])
def test_bad_agent_ids(agent_id):
    store = MemoryStore.ephemeral("hash")
    with pytest.raises(ValueError, match=r"^agent_id"):
        store.stream(agent_id)


def test_persisted_run_reopens_with_every_stream_and_field(tmp_path):
    path = tmp_path / "run" / "memory"
    config = MemoryConfig(decay=0.95, top_k=4)
    store = MemoryStore.persistent(path, embedding="hash", config=config)
    remember_two(store)
    store.stream(1).retrieve(
        600, keywords=["queue"]
    )  # touched: last accessed, expiration
    before = {key: store.stream(key).nodes() for key in store.agent_ids()}
    metadata = json.loads((path / METADATA_FILE).read_text())
    assert metadata["embedding"]["name"] == "hash"
    assert metadata["embedding"]["chroma_function"] == "mesa_llm_mobility_hash"
    assert metadata["config"]["decay"] == 0.95
    store.close()  # writes the pending access updates

    reopened = MemoryStore.open(path)
    assert reopened.agent_ids() == ["1", "agent_b"]
    assert {key: reopened.stream(key).nodes() for key in reopened.agent_ids()} == before
    assert reopened.config == config
    assert reopened.embedding.name == "hash"
    # Retrieval on the reopened store works, the semantic mode included.
    results = reopened.stream(1).retrieve(700, text="queue on the bridge")
    assert results[0].node.id == "n0"
    assert results[0].matches["semantic"] > 0.5
    # New ids continue the sequence.
    assert (
        reopened.stream(1)
        .remember("Next", node_type="plan", importance=0.2, now=800)
        .id
        == "n1"
    )


def test_store_written_by_another_process_reopens_from_disk(tmp_path):
    path = tmp_path / "memory"
    script = textwrap.dedent(
        f"""
        from mesa_llm_mobility.memory.store import MemoryStore
        store = MemoryStore.persistent({str(path)!r}, embedding="hash")
        for agent in range(3):
            stream = store.stream(agent)
            for i in range(5):
                stream.remember(f"event {{i}} of agent {{agent}}", node_type="event", importance=0.5,
                                now=10 * i, keywords=[f"k{{i}}"], spatial_scope=[f"link{{i}}"],
                                temporal_scope=(10 * i, 10 * i + 5))
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=120)
    store = MemoryStore.open(path)
    assert store.agent_ids() == ["0", "1", "2"]
    node = store.stream(2).get("n4")
    assert (node.content, node.keywords, node.spatial_scope, node.temporal_scope) == (
        "event 4 of agent 2",
        frozenset({"k4"}),
        frozenset({"link4"}),
        (40.0, 45.0),
    )
    assert store.stream(1).retrieve(60, keywords=["k3"], k=1)[0].node.id == "n3"


def test_persistent_on_existing_store_reopens(tmp_path):
    store = MemoryStore.persistent(tmp_path / "m", embedding="hash")
    remember_two(store)
    again = MemoryStore.persistent(tmp_path / "m")
    assert again.agent_ids() == ["1", "agent_b"]


def test_missing_store_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        MemoryStore.open(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"empty.memory\.json"):
        MemoryStore.open(tmp_path / "empty")


def test_corrupt_metadata_names_the_file(tmp_path):
    path = tmp_path / "m"
    remember_two(MemoryStore.persistent(path, embedding="hash"))
    (path / METADATA_FILE).write_text("{not json")
    with pytest.raises(MemoryStoreError, match=r"memory\.json"):
        MemoryStore.open(path)


def test_corrupt_chroma_database_names_the_path(tmp_path):
    path = tmp_path / "m"
    MemoryStore.persistent(path, embedding="hash")
    (path / "chroma.sqlite3").write_bytes(b"this is not a database" * 100)
    with pytest.raises(MemoryStoreError, match=r"chroma\.sqlite3"):
        MemoryStore.open(path)


def test_missing_chroma_database_names_the_path(tmp_path):
    path = tmp_path / "m"
    MemoryStore.persistent(path, embedding="hash")
    (path / "chroma.sqlite3").unlink()
    with pytest.raises(MemoryStoreError, match=r"chroma\.sqlite3"):
        MemoryStore.open(path)


def test_non_empty_folder_without_store_is_refused(tmp_path):
    (tmp_path / "other.txt").write_text("x")
    with pytest.raises(MemoryStoreError, match="not empty"):
        MemoryStore.persistent(tmp_path, embedding="hash")


def test_reopening_with_another_embedding_is_refused(tmp_path):
    path = tmp_path / "m"
    MemoryStore.persistent(path, embedding="hash")
    with pytest.raises(MemoryStoreError, match="'hash'"):
        MemoryStore.open(path, embedding=HashEmbeddingNamedOther())


def test_custom_embedding_function_is_used_and_must_be_passed_on_reopen(tmp_path):
    path = tmp_path / "m"
    store = MemoryStore.persistent(path, embedding=HashEmbeddingNamedOther())
    assert store.embedding.setting == "custom"
    remember_two(store)
    with pytest.raises(MemoryStoreError, match="custom embedding"):
        MemoryStore.open(path)
    reopened = MemoryStore.open(path, embedding=HashEmbeddingNamedOther())
    assert len(reopened.stream(1)) == 1


def test_store_prune_covers_all_agents():
    store = MemoryStore.ephemeral("hash")
    remember_two(store)
    assert store.prune(0) == 0
    assert store.prune(10**7) == 2
    assert [len(store.stream(key)) for key in ("1", "agent_b")] == [0, 0]
    store.close()


class HashEmbeddingNamedOther(HashEmbedding):
    def __init__(self):
        super().__init__(dim=16)

    @staticmethod
    def name():
        return "test_other_hash"

    @staticmethod
    def build_from_config(config):
        return HashEmbeddingNamedOther()


def test_hnsw_cache_bound_restores_the_open_file_limit(tmp_path):
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    store = MemoryStore.persistent(tmp_path / "m", embedding="hash", hnsw_cache_size=20)
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == before
    # More agents than cached indexes: evicted indexes reload from disk and stay searchable.
    for agent in range(24):
        store.stream(agent).remember(
            f"queue at link {agent}", node_type="event", importance=0.9, now=0
        )
    for agent in range(24):
        result = store.stream(agent).retrieve(10, text=f"queue at link {agent}", k=1)
        assert result[0].node.content == f"queue at link {agent}"
        assert result[0].matches["semantic"] == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ValueError, match=r"^hnsw_cache_size"):
        MemoryStore.persistent(tmp_path / "other", embedding="hash", hnsw_cache_size=0)


def test_corrupt_node_record_names_store_collection_node_and_field(tmp_path):
    path = tmp_path / "m"
    store = MemoryStore.persistent(path, embedding="hash")
    remember_two(store)
    collection = store._client.get_collection("agent-1")
    collection.update(ids=["n0"], metadatas=[{"importance": 7.0}])
    with pytest.raises(
        ValueError, match=r"collection agent-1: node 'n0': importance"
    ) as info:
        MemoryStore.open(path).stream(1).nodes()
    assert str(path) in str(info.value)


def test_ids_of_pruned_memories_are_not_reused_after_reopening(tmp_path):
    path = tmp_path / "m"
    store = MemoryStore.persistent(path, embedding="hash")
    stream = store.stream(1)
    stream.remember("kept", node_type="reflection", importance=1.0, now=0)
    stream.remember("soon forgotten", node_type="event", importance=0.0, now=0)
    assert stream.prune(10_000) == ["n1"]
    store.close()
    reopened = MemoryStore.open(path)
    assert (
        reopened.stream(1)
        .remember("new", node_type="event", importance=0.5, now=10_000)
        .id
        == "n2"
    )


def test_hash_store_reopens_with_its_recorded_dimension(tmp_path):
    path = tmp_path / "m"
    store = MemoryStore.persistent(path, embedding=HashEmbedding(dim=32))
    assert store.embedding.name == "hash"
    remember_two(store)
    store.close()
    reopened = MemoryStore.open(path)
    assert reopened.embedding.function.dim == 32
    assert (
        reopened.stream(1).retrieve(600, text="queue on the bridge", k=1)[0].node.id
        == "n0"
    )


def test_flush_and_close_scrub_known_secrets_from_the_stores_files(tmp_path):
    """Chroma's index files carry uninitialised memory; a key read by the process is wiped."""
    from mesa_llm_mobility.cognition.redaction import register_secret  # noqa: PLC0415

    register_secret("store-scrub-secret-0042")
    store = MemoryStore.persistent(tmp_path / "memory", embedding="hash")
    store.stream("ada").remember(
        "took 30 min", node_type="event", importance=0.5, now=0
    )
    stray = tmp_path / "memory" / "segment" / "data_level0.bin"
    stray.parent.mkdir()
    stray.write_bytes(b"\x00garbage store-scrub-secret-0042 garbage")
    store.flush()
    assert b"store-scrub-secret-0042" not in stray.read_bytes()
    stray.write_bytes(b"again store-scrub-secret-0042")
    store.close()
    assert b"store-scrub-secret-0042" not in stray.read_bytes()
