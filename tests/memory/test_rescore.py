"""Rescoring a memory's importance: its lifespan and expiration follow the paper's eq. 7."""

from __future__ import annotations

import pytest

from mesa_llm_mobility.memory.store import MemoryStore

HOUR, DAY = 60, 1440


def test_rescore_gives_the_papers_lifespans_and_is_written_back(tmp_path):
    store = MemoryStore.persistent(tmp_path / "memory", embedding="hash")
    stream = store.stream("traveller")
    node = stream.remember(
        "Day 1: trip from Home to Office", node_type="event", importance=0.5, now=480
    )
    # event lifespans (paper): 2 h at importance 0, 4 days at importance 1
    high = stream.rescore(node.id, 1.0)
    assert high.lifespan == pytest.approx(4 * DAY)
    assert high.expiration == pytest.approx(480 + 4 * DAY)
    low = stream.rescore(node.id, 0.0)
    assert low.lifespan == pytest.approx(2 * HOUR)
    assert low.expiration == pytest.approx(480 + 2 * HOUR)
    stream.rescore(node.id, 0.9)
    store.close()
    again = MemoryStore.persistent(tmp_path / "memory", embedding="hash")
    assert again.stream("traveller").get(node.id).importance == pytest.approx(0.9)
    again.close()


def test_rescore_rejects_bad_input():
    store = MemoryStore.ephemeral("hash")
    stream = store.stream("t")
    node = stream.remember("x", node_type="event", importance=0.5, now=0)
    with pytest.raises(ValueError, match=r"importance: must be in \[0, 1\], got 1.5"):
        stream.rescore(node.id, 1.5)
    with pytest.raises(KeyError):
        stream.rescore("n99", 0.5)
    store.close()
