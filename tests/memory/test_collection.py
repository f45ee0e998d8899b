"""A stream's Chroma side: lazy opening, writes now or logged in order."""

import pytest

from mesa_llm_mobility.memory.collection import StreamCollection
from mesa_llm_mobility.memory.embedding import HashEmbedding
from mesa_llm_mobility.memory.node import ConceptNode, NodeType
from mesa_llm_mobility.memory.vectors import NodeVectors


class RecordingCollection:
    """Stands in for a Chroma collection: records the writes made to it, in order."""

    def __init__(self):
        self.calls = []
        self.metadata = {"agent_id": "a", "next_sequence": 7}

    def add(self, ids, embeddings, documents, metadatas):
        self.calls.append(("add", tuple(ids)))

    def delete(self, ids):
        self.calls.append(("delete", tuple(ids)))

    def modify(self, metadata):
        self.calls.append(("modify", metadata["next_sequence"]))

    def update(self, ids, metadatas):
        self.calls.append(("update", tuple(ids)))

    def get(self, include):
        return {"ids": [], "documents": [], "metadatas": []}


def _node(node_id):
    return ConceptNode(
        id=node_id,
        type=NodeType.EVENT,
        content=f"memory {node_id}",
        importance=0.5,
        created=0.0,
        expiration=100.0,
        lifespan=100.0,
    )


def _collection(opened):
    fake = RecordingCollection()

    def factory(create):
        opened.append(create)
        return fake if create or len(opened) > 1 else None

    return StreamCollection(factory, NodeVectors(HashEmbedding()), "agent a"), fake


def test_nothing_is_opened_until_needed_and_a_missing_collection_reads_empty():
    opened = []
    chroma, _ = _collection(opened)
    assert not chroma.opened
    assert chroma.read() == ({}, 0)
    assert opened == [False]
    assert not chroma.opened


def test_writes_after_a_logged_write_are_logged_and_replayed_in_order():
    opened = []
    chroma, fake = _collection(opened)
    chroma.defer("add", [_node("n0")])
    chroma.write("delete", ["n0"])
    chroma.write("modify", {"agent_id": "a", "next_sequence": 1})
    assert chroma.deferred == 3
    assert fake.calls == []
    assert not chroma.opened
    assert chroma.write_pending() == 3
    assert fake.calls == [("add", ("n0",)), ("delete", ("n0",)), ("modify", 1)]
    assert opened == [True]
    assert chroma.deferred == 0
    chroma.write("update", ["n1"], [{}])
    assert fake.calls[-1] == ("update", ("n1",))
    assert chroma.read() == ({}, 7)


def test_an_unknown_write_is_refused_by_name():
    chroma = StreamCollection(
        lambda create: RecordingCollection(), NodeVectors(HashEmbedding()), "agent a"
    )
    with pytest.raises(ValueError, match="operation: unknown Chroma write 'rename'"):
        chroma.apply("rename", "x")
