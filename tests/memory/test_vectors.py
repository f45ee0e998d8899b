"""A stream's vectors: embedded once, in batches, and Chroma's cosine distance computed exactly."""

import uuid

import chromadb
import numpy as np
import pytest

from mesa_llm_mobility.memory.embedding import HashEmbedding
from mesa_llm_mobility.memory.store import (
    HNSW_CONFIGURATION,
    MemoryStore,
    chroma_settings,
)
from mesa_llm_mobility.memory.vectors import NodeVectors, QueryVectors, nearest

TEXTS = [
    "took the metro to work and it was crowded",
    "the bus was late again this morning",
    "met Anna for lunch near the market square",
    "drove home through heavy traffic on the ring road",
    "bought groceries at the supermarket by the station",
    "",
]


class CountingEmbedding:
    def __init__(self):
        self.batches = []
        self.inner = HashEmbedding()

    def __call__(self, texts):
        self.batches.append(list(texts))
        return self.inner(texts)


def test_each_node_is_embedded_once_and_the_missing_ones_in_one_batch():
    embed = CountingEmbedding()
    vectors = NodeVectors(embed)
    items = [(f"n{i}", text) for i, text in enumerate(TEXTS[:3])]
    first = vectors.of(items[:2])
    vectors.of(items)
    assert embed.batches == [TEXTS[:2], TEXTS[2:3]]
    assert np.array_equal(vectors.of(items[:1])[0], first[0])
    vectors.discard(["n0", "unknown"])
    assert len(vectors) == 2
    vectors.of(items[:1])
    assert embed.batches[-1] == TEXTS[:1]


def test_distances_are_the_ones_a_chroma_cosine_collection_returns():
    """Against a real Chroma collection with our HNSW settings (exact for a few vectors)."""
    embed = HashEmbedding()
    items = [(f"n{i}", text) for i, text in enumerate(TEXTS[:5])]
    client = chromadb.EphemeralClient(settings=chroma_settings())
    collection = client.create_collection(
        f"t{uuid.uuid4().hex[:12]}", configuration={"hnsw": dict(HNSW_CONFIGURATION)}
    )
    try:
        vectors = NodeVectors(embed)
        collection.add(
            ids=[i for i, _ in items],
            embeddings=vectors.of(items),
            documents=[t for _, t in items],
        )
        for query in ("crowded metro to work", "lunch with a friend", TEXTS[3]):
            q = embed([query])[0]
            ours = vectors.distances(q, items)
            result = collection.query(
                query_embeddings=[q], n_results=len(items), include=["distances"]
            )
            theirs = dict(zip(result["ids"][0], result["distances"][0], strict=True))
            assert ours.keys() == theirs.keys()
            for node_id, distance in theirs.items():
                assert ours[node_id] == pytest.approx(distance, abs=1e-6)
            assert list(nearest(ours, 3)) == result["ids"][0][:3]
    finally:
        client.delete_collection(collection.name)


def test_an_identical_text_is_distance_zero_and_ties_go_by_node_id():
    vectors = NodeVectors(HashEmbedding())
    items = [("n2", TEXTS[0]), ("n1", TEXTS[0]), ("n0", TEXTS[1])]
    distances = vectors.distances(HashEmbedding()([TEXTS[0]])[0], items)
    assert distances["n1"] == distances["n2"] == pytest.approx(0.0, abs=1e-6)
    assert list(nearest(distances, 2)) == ["n1", "n2"]
    assert list(nearest(distances, 5)) == ["n1", "n2", "n0"]
    assert vectors.distances([1.0], []) == {}


def test_a_zero_vector_is_at_distance_one_not_a_division_by_zero():
    vectors = NodeVectors(lambda texts: [np.zeros(3, dtype=np.float32) for _ in texts])
    distances = vectors.distances(np.array([1.0, 0.0, 0.0]), [("n0", "x")])
    assert distances == {"n0": 1.0}


def test_a_query_text_is_embedded_once_and_the_oldest_is_dropped_past_the_size():
    embed = CountingEmbedding()
    queries = QueryVectors(embed, size=2)
    first = queries("plan today travel lessons")
    assert np.array_equal(first, HashEmbedding()(["plan today travel lessons"])[0])
    assert queries("plan today travel lessons") is first
    queries("congestion 7 route")
    queries("plan today travel lessons")  # the most recent again
    queries("home plan change")  # drops "congestion 7 route", the least recent
    assert len(embed.batches) == 3
    queries("plan today travel lessons")
    queries("congestion 7 route")
    assert embed.batches[-1] == ["congestion 7 route"] and len(embed.batches) == 4
    assert not first.flags.writeable


def test_the_streams_of_a_store_share_their_query_embeddings():
    store = MemoryStore.ephemeral("hash", defer_writes=True)
    embed = CountingEmbedding()
    store._query_vectors = QueryVectors(embed)
    try:
        for agent in (1, 2):
            stream = store.stream(agent)
            stream.remember("took the metro", node_type="event", importance=0.5, now=0)
            assert stream.retrieve(10, text="plan today travel lessons")
        assert embed.batches == [["plan today travel lessons"]]
    finally:
        store.close()
