import random

import pytest

from mesa_llm_mobility.memory.config import PAPER_LIFESPANS, MemoryConfig
from mesa_llm_mobility.memory.formulas import jaccard, recency, spatiotemporal_match
from mesa_llm_mobility.memory.node import NodeType
from mesa_llm_mobility.memory.store import MemoryStore

DAY = 1440


@pytest.fixture
def store():
    store = MemoryStore.ephemeral("hash")
    yield store
    store.close()


def fill(stream):
    stream.remember(
        "Long queue on the bridge St_1_link_2 at 7:40",
        node_type="event",
        importance=0.7,
        now=460,
        keywords=["queue", "bridge"],
        spatial_scope=["St_1_link_2"],
        temporal_scope=(450, 480),
    )
    stream.remember(
        "Anna says the metro is faster in the morning",
        node_type="chat",
        importance=0.95,  # a chat this important lives about 41 hours
        now=600,
        keywords=["metro", "anna"],
        spatial_scope=["Metro_1"],
        temporal_scope=(420, 540),
    )
    stream.remember(
        "Bought apples at the supermarket",
        node_type="event",
        importance=0.1,
        now=1000,
        keywords=["shopping"],
        spatial_scope=["Supermarket"],
        temporal_scope=(1000, 1020),
    )


def test_remember_computes_lifespan_and_sequential_ids(store):
    stream = store.stream(1)
    fill(stream)
    assert len(stream) == 3
    first = stream.get("n0")
    assert first.lifespan == pytest.approx(
        PAPER_LIFESPANS[NodeType.EVENT].lifespan(0.7)
    )
    assert first.expiration == pytest.approx(460 + first.lifespan)
    assert [n.id for n in stream.nodes()] == ["n0", "n1", "n2"]
    assert [n.id for n in stream.nodes(node_types=["chat"])] == ["n1"]
    assert "n2" in stream
    with pytest.raises(KeyError, match="n9"):
        stream.get("n9")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"content": ""}, "content"),
        ({"importance": 1.5}, "importance"),
        ({"node_type": "dream"}, "node_type"),
        ({"now": float("nan")}, "now"),
        ({"keywords": "queue"}, "keywords"),
    ],
)
def test_remember_rejects_bad_input(store, kwargs, field):
    arguments = {"content": "x", "node_type": "event", "importance": 0.5, "now": 0}
    arguments.update(kwargs)
    content = arguments.pop("content")
    with pytest.raises(ValueError, match=rf"^{field}"):
        store.stream(1).remember(content, **arguments)
    assert len(store.stream(1)) == 0


def test_duplicate_id_is_rejected(store):
    stream = store.stream(1)
    node = stream.new_node("a", node_type="plan", importance=0.5, now=0, node_id="x")
    stream.add(node)
    with pytest.raises(ValueError, match=r"^id:"):
        stream.add(node)


def test_keyword_mode_finds_keyword_match(store):
    stream = store.stream(1)
    fill(stream)
    results = stream.retrieve(1100, keywords=["metro"], k=1)
    assert [r.node.id for r in results] == ["n1"]
    assert results[0].matches == {"keyword": 0.5}
    assert results[0].modes == ("keyword",)


def test_spatiotemporal_mode_uses_overlap_product(store):
    stream = store.stream(1)
    fill(stream)
    results = stream.retrieve(
        1100, spatial_scope=["St_1_link_2", "Office"], temporal_scope=(460, 470), k=1
    )
    assert results[0].node.id == "n0"
    assert results[0].matches["spatiotemporal"] == 1.0


def test_semantic_mode_uses_chroma_distance(store):
    stream = store.stream(1)
    fill(stream)
    results = stream.retrieve(1100, text="queue on the bridge", k=3)
    assert results[0].node.id == "n0"
    assert 0.5 < results[0].matches["semantic"] <= 1.0
    assert all("semantic" in r.matches for r in results)


def test_fused_score_is_weighted_sum_with_importance_and_recency_once(store):
    config = MemoryConfig(
        weights={"keyword": 2.0, "semantic": 0.5, "spatiotemporal": 1.0},
        gamma=0.3,
        delta=0.7,
    )
    stream = MemoryStore.ephemeral("hash", config).stream(2)
    fill(stream)
    now = 2 * DAY
    results = stream.retrieve(
        now,
        text="queue on the bridge",
        keywords=["queue", "metro"],
        spatial_scope=["St_1_link_2"],
        temporal_scope=(440, 470),
        k=3,
        touch=False,
    )
    assert {r.node.id for r in results} == {
        "n0",
        "n1",
    }  # the apples event (n2) has expired
    for result in results:
        node = result.node
        assert set(result.matches) == {"keyword", "semantic", "spatiotemporal"}
        expected = (
            2.0 * result.matches["keyword"]
            + 0.5 * result.matches["semantic"]
            + 1.0 * result.matches["spatiotemporal"]
            + 0.3 * node.importance
            + 0.7 * recency(now - node.created, 0.9)
        )
        assert result.score == pytest.approx(expected)
    assert [r.score for r in results] == sorted(
        (r.score for r in results), reverse=True
    )
    assert results[0].node.id == "n0"


def test_fusion_scores_keyword_only_candidate_semantically():
    config = MemoryConfig(
        weights={"keyword": 3.0, "semantic": 1.0, "spatiotemporal": 1.0}
    )
    store = MemoryStore.ephemeral("hash", config)
    stream = store.stream(1)
    fill(stream)
    # k=1: keyword top-1 is n1 (metro), semantic top-1 is n2 (apples); fusion ranks the union.
    results = stream.retrieve(
        1100, text="apples supermarket", keywords=["metro"], k=1, touch=False
    )
    assert [r.node.id for r in results] == ["n1"]
    assert results[0].modes == ("keyword",)
    # n1 was not a semantic candidate, yet its semantic match was fetched for the fused score.
    semantic_only = stream.retrieve(1100, text="apples supermarket", k=3, touch=False)
    expected = {r.node.id: r.matches["semantic"] for r in semantic_only}
    assert results[0].matches["semantic"] == pytest.approx(expected["n1"])
    assert expected["n2"] > expected["n1"]
    store.close()


def test_without_query_ranks_by_importance_and_recency(store):
    stream = store.stream(1)
    fill(stream)
    results = stream.retrieve(1100, k=2, touch=False)
    assert [r.node.id for r in results] == ["n1", "n0"]
    assert all(r.matches == {} for r in results)


def test_node_type_filter(store):
    stream = store.stream(1)
    fill(stream)
    results = stream.retrieve(
        1100, text="queue bridge metro apples", node_types=["chat"]
    )
    assert [r.node.id for r in results] == ["n1"]


def test_retrieval_touches_and_extends_expiration_up_to_cap(store):
    stream = store.stream(1)
    fill(stream)
    node = stream.get("n0")
    results = stream.retrieve(900, keywords=["queue"], k=1)
    touched = results[0].node
    assert touched.last_accessed == 900
    assert touched.expiration == pytest.approx(node.expiration + node.lifespan)
    stream.retrieve(950, keywords=["queue"], k=1)
    stream.retrieve(960, keywords=["queue"], k=1)
    assert stream.get("n0").expiration == pytest.approx(
        node.created + 3 * node.lifespan
    )
    # Access updates are written to Chroma in batches: on flush, prune, close.
    collection = store._client.get_collection(store._prefix + "1")
    assert collection.get(ids=["n0"])["metadatas"][0]["last_accessed"] == 460
    assert stream.pending_writes == 1
    assert stream.flush() == 1
    assert stream.pending_writes == 0
    stored = store._client.get_collection(store._prefix + "1").get(ids=["n0"])[
        "metadatas"
    ][0]
    assert stored["last_accessed"] == 960
    assert stored["expiration"] == pytest.approx(node.created + 3 * node.lifespan)


def test_access_updates_are_written_at_prune_and_when_many_are_pending():
    store = MemoryStore.ephemeral("hash")
    stream = store.stream(1)
    fill(stream)
    stream.retrieve(900, keywords=["queue"], k=2)
    assert stream.pending_writes == 2
    stream.prune(900)
    assert stream.pending_writes == 0
    collection = store._client.get_collection(store._prefix + "1")
    assert collection.get(ids=["n0"])["metadatas"][0]["last_accessed"] == 900
    stream.flush_every = 2
    stream.retrieve(950, keywords=["queue"], k=1)
    assert stream.pending_writes == 1
    stream.retrieve(960, keywords=["metro"], k=1)
    assert stream.pending_writes == 0
    assert collection.get(ids=["n1"])["metadatas"][0]["last_accessed"] == 960
    store.close()


def test_recency_counts_from_last_access(store):
    stream = store.stream(1)
    fill(stream)
    stream.retrieve(DAY, keywords=["queue"], k=1)
    result = stream.retrieve(2 * DAY, keywords=["queue"], k=1, touch=False)[0]
    assert result.recency == pytest.approx(0.9)


def test_prune_forgets_expired_nodes_and_retrieve_skips_them(store):
    stream = store.stream(1)
    fill(stream)
    apples = stream.get("n2")  # importance 0.1: lives a little over 2 hours
    after = apples.expiration + 1
    assert "n2" not in {
        r.node.id
        for r in stream.retrieve(after, text="apples supermarket", touch=False)
    }
    assert stream.prune(after) == ["n2"]
    assert "n2" not in stream
    assert store._client.get_collection(store._prefix + "1").count() == 2
    assert stream.prune(after) == []


def test_empty_stream_retrieves_nothing_and_creates_no_collection(store):
    stream = store.stream(5)
    assert stream.retrieve(0, text="anything", keywords=["x"]) == []
    assert store.agent_ids() == []


def test_bad_queries_name_the_field(store):
    stream = store.stream(1)
    fill(stream)
    with pytest.raises(ValueError, match=r"^k:"):
        stream.retrieve(0, k=0)
    with pytest.raises(ValueError, match=r"^temporal_scope"):
        stream.retrieve(0, temporal_scope=(5, 1))
    with pytest.raises(ValueError, match=r"^node_types"):
        stream.retrieve(0, node_types=["dream"])


def test_semantic_mode_with_many_excluded_nodes_restricts_the_vector_query(store):
    stream = store.stream(1)
    fill(stream)
    stream.add(
        stream.new_node(
            f"queue on the bridge, chat {i}", node_type="chat", importance=1.0, now=500
        )
        for i in range(60)
    )
    # 61 chats excluded by the type filter: more than 4 k + 32, so Chroma gets the live ids.
    results = stream.retrieve(
        1100, text="queue on the bridge", node_types=["event"], k=1
    )
    assert [r.node.id for r in results] == ["n0"]
    assert results[0].matches["semantic"] > 0.5


def brute_force(nodes, now, config, keywords, places, interval, k):
    live = [n for n in nodes if not n.is_expired(now)]
    base = {
        n.id: config.gamma * n.importance
        + config.delta * recency(now - n.last_accessed, config.decay)
        for n in live
    }
    matches = {
        "keyword": {n.id: jaccard(frozenset(keywords), n.keywords) for n in live},
        "spatiotemporal": {
            n.id: spatiotemporal_match(
                frozenset(places), n.spatial_scope, interval, n.temporal_scope
            )
            for n in live
        },
    }
    candidates = set()
    for mode, values in matches.items():
        ranked = sorted(
            values,
            key=lambda i: config.weights[mode] * values[i] + base[i],
            reverse=True,
        )
        candidates.update(ranked[:k])
    fused = {
        i: base[i] + sum(config.weights[m] * matches[m][i] for m in matches)
        for i in candidates
    }
    return sorted(fused.items(), key=lambda item: -item[1])[:k]


def test_retrieval_equals_brute_force_over_all_nodes():
    rng = random.Random(7)
    config = MemoryConfig(
        weights={"keyword": 1.0, "spatiotemporal": 2.0}, gamma=0.7, delta=0.4
    )
    store = MemoryStore.ephemeral("hash", config)
    stream = store.stream(1)
    words = [f"w{i}" for i in range(12)]
    places = [f"p{i}" for i in range(8)]
    for _ in range(300):
        start = rng.uniform(0, 1400)
        stream.remember(
            "x",
            node_type=rng.choice(list(NodeType)),
            importance=rng.random(),
            now=rng.uniform(0, 2000),
            keywords=rng.sample(words, rng.randint(0, 3)),
            spatial_scope=rng.sample(places, rng.randint(0, 3)),
            temporal_scope=(start, start + rng.uniform(0, 90)),
        )
    for _ in range(25):
        now = rng.uniform(2000, 4000)
        keywords = rng.sample(words, rng.randint(1, 3))
        query_places = rng.sample(places, rng.randint(1, 2))
        start = rng.uniform(0, 1400)
        interval = (start, start + 60)
        k = rng.randint(1, 12)
        expected = brute_force(
            stream.nodes(), now, config, keywords, query_places, interval, k
        )
        got = stream.retrieve(
            now,
            keywords=keywords,
            spatial_scope=query_places,
            temporal_scope=interval,
            k=k,
            touch=False,
        )
        assert [r.node.id for r in got] == [i for i, _ in expected]
        assert [r.score for r in got] == pytest.approx([score for _, score in expected])
    store.close()


def _history(stream):
    """Writes, prunes, keyword and semantic retrievals, in an order that mixes them."""
    fill(stream)
    answers = [stream.retrieve(700, keywords=["metro", "queue"])]  # no vector query
    apples = stream.get("n2")
    stream.prune(apples.expiration + 1)  # forgets n2 before any write was needed
    stream.remember(
        "The ring road was closed after an accident",
        node_type="event",
        importance=0.5,
        now=1300,
        keywords=["accident"],
        spatial_scope=["Ring"],
        temporal_scope=(1290, 1310),
    )
    answers.append(stream.retrieve(1400, text="metro faster morning", k=2))
    answers.append(stream.retrieve(1500, text="accident ring road", keywords=["queue"]))
    return answers


def test_deferred_writes_answer_like_immediate_writes():
    stores = [MemoryStore.ephemeral("hash"), MemoryStore.ephemeral("hash")]
    stores[1].defer_writes = True
    try:
        immediate, deferred = (store.stream(1) for store in stores)
        assert deferred.defer_writes and not immediate.defer_writes
        assert _history(immediate) == _history(deferred)
        for store in stores:
            store.flush()
        # the ephemeral store kept the deferred stream out of Chroma, its log shortened to
        # the stream's state; written now, it makes the collection immediate writes made
        assert not deferred.written
        assert deferred.deferred_writes == len(deferred) + 1
        deferred.write_pending()
        records = [
            store._client.get_collection(store._prefix + "1").get(
                include=["documents", "metadatas"]
            )
            for store in stores
        ]
        assert records[0]["ids"] == records[1]["ids"]
        assert records[0]["metadatas"] == records[1]["metadatas"]
    finally:
        for store in stores:
            store.close()


def test_a_deferred_stream_makes_no_collection_even_when_queried():
    store = MemoryStore.ephemeral("hash", defer_writes=True)
    try:
        stream = store.stream(1)
        fill(stream)
        assert stream.retrieve(700, text="metro to work", keywords=["metro"])
        assert not store._collection_names()
        stream.prune(10 * DAY)
        assert len(stream) == 0 and not store._collection_names()
        assert stream.deferred_writes > 0
        fill(store.stream(2))
        assert store.agent_ids() == ["2"]  # streams with memories count, written or not
        store.flush()  # an ephemeral store keeps deferred streams in memory for good
        assert not store._collection_names()
        assert (
            store.stream(2).deferred_writes == 3 + 1
        )  # one add per memory, the counter
        store.stream(2).write_pending()
        assert store.stream(2).deferred_writes == 0
        assert store._client.get_collection(store._prefix + "2").count() == 3
    finally:
        store.close()
