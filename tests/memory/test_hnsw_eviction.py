"""Every agent stays queryable when Chroma evicts its vector index from the bounded cache.

Chroma's local backend keeps loaded HNSW indexes in an LRU cache split into 64 shards of
``size // 64`` indexes (at least one each). An evicted index is reloaded from disk, and the log
is replayed into a collection only on its first read in a process. So an index that was not on
disk when it was evicted came back empty ("Nothing found on disk"), or without its newest
records. These tests make eviction certain rather than waiting for it: the smallest cache keeps
one index per shard, so with more than 64 agents some agents' indexes are always evicted
between two rounds of queries (pigeonhole), whatever shards the random segment ids fall in.
An ephemeral index has no disk to come back from, so the in-memory client must not evict.
"""

import os
import resource
import subprocess
import sys
import textwrap

import pytest

from mesa_llm_mobility.memory.config import MemoryConfig
from mesa_llm_mobility.memory.store import MIN_HNSW_CACHE_SIZE, MemoryStore

AGENTS = 96  # more agents than the 64 shards of Chroma's index cache
MEMORIES = 3
SEMANTIC_ONLY = MemoryConfig(weights={"semantic": 1.0}, gamma=0.0, delta=0.0)


def text(agent, i):
    return f"memory {i} of agent {agent}: queue on link {agent * MEMORIES + i}"


def fill(store):
    for agent in range(AGENTS):
        stream = store.stream(agent)
        # One write per memory, as agents remember during a run: each is its own log chunk.
        for i in range(MEMORIES):
            stream.remember(text(agent, i), node_type="event", importance=0.5, now=i)


def query_every_agent(store):
    """Each agent's best match for each of its memories, the semantic mode only."""
    found = {}
    for agent in range(AGENTS):
        stream = store.stream(agent)
        for i in range(MEMORIES):
            best = stream.retrieve(100, text=text(agent, i), k=MEMORIES, touch=False)
            found[agent, i] = [
                (hit.node.id, round(hit.matches["semantic"], 5)) for hit in best
            ]
    return found


def assert_complete(found):
    for (agent, i), hits in found.items():
        assert len(hits) == MEMORIES, (agent, i, hits)
        assert hits[0] == (f"n{i}", pytest.approx(1.0, abs=1e-4)), (agent, i, hits)


@pytest.mark.slow
def test_evicted_indexes_reload_with_every_memory(tmp_path):
    store = MemoryStore.persistent(
        tmp_path / "m",
        embedding="hash",
        config=SEMANTIC_ONLY,
        hnsw_cache_size=MIN_HNSW_CACHE_SIZE,
    )
    fill(store)
    first = query_every_agent(store)  # first reads: Chroma replays each agent's log
    assert_complete(first)
    store.stream(0).retrieve(100, text=text(0, 0), k=1)  # touched: an update to write
    assert store.flush() == 1
    # Second reads: many indexes were evicted since, and must come back from disk as they were.
    second = query_every_agent(store)
    assert second == first
    store.close()


@pytest.mark.slow
def test_store_written_without_per_write_persistence_stays_queryable(tmp_path):
    """A store from before the fix: its collections persisted their index every 1,000 writes."""
    path = tmp_path / "m"
    script = textwrap.dedent(
        f"""
        from mesa_llm_mobility.memory import store as store_module
        from mesa_llm_mobility.memory.store import MemoryStore

        # Collections as the store made them before: Chroma's default sync threshold.
        store_module.HNSW_CONFIGURATION = {{"space": "cosine"}}
        store = MemoryStore.persistent({str(path)!r}, embedding="hash")
        for agent in range({AGENTS}):
            stream = store.stream(agent)
            for i in range({MEMORIES}):
                stream.remember(
                    f"memory {{i}} of agent {{agent}}: queue on link {{agent * {MEMORIES} + i}}",
                    node_type="event", importance=0.5, now=i,
                )
        store.close()
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=240)
    store = MemoryStore.open(
        path, config=SEMANTIC_ONLY, hnsw_cache_size=MIN_HNSW_CACHE_SIZE
    )
    first = query_every_agent(store)
    assert_complete(first)
    assert query_every_agent(store) == first
    store.close()


def test_ephemeral_store_keeps_every_index_under_a_low_open_file_limit():
    """An evicted ephemeral index has no disk to come back from: Chroma answers no neighbours.

    Chroma sizes its cache from the soft open-file limit when the process's ephemeral client
    starts; with a common default of 1,024 (or macOS's 256) a few dozen agents already evict.
    """
    script = textwrap.dedent(
        f"""
        import importlib.util
        import resource

        from mesa_llm_mobility.memory.store import MemoryStore

        spec = importlib.util.spec_from_file_location("eviction", {__file__!r})
        helpers = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(helpers)

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
        store = MemoryStore.ephemeral("hash", helpers.SEMANTIC_ONLY)
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (256, hard)
        helpers.fill(store)
        first = helpers.query_every_agent(store)
        helpers.assert_complete(first)
        assert helpers.query_every_agent(store) == first
        """
    )
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip(f"hard open-file limit {hard} leaves no room for a larger cache")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        env=env,
        timeout=240,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_ephemeral_store_says_so_when_the_open_file_limit_cannot_be_raised():
    script = textwrap.dedent(
        """
        import logging
        import resource

        from mesa_llm_mobility.memory.store import MemoryStore

        logging.basicConfig(level=logging.WARNING)
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        store = MemoryStore.ephemeral("hash")
        MemoryStore.ephemeral("hash")
        store.stream(1).remember("kept", node_type="event", importance=0.5, now=0)
        assert store.stream(1).retrieve(1, text="kept")[0].node.content == "kept"
        # one index per shard: none at risk yet; the second may share a shard: warned once
        for agent in (2, 3):
            store.stream(agent).remember("kept", node_type="event", importance=0.5, now=0)
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        env=env,
        timeout=240,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    warning = "the open-file limit (256) lets Chroma cache only 51 vector indexes (1 per shard)"
    assert result.stderr.count(warning) == 1, result.stderr
    assert "this process now has 2 agents' indexes" in result.stderr
