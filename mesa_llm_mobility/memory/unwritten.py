"""The memories of a persistent store that were never written to Chroma.

A store whose streams defer their writes (:attr:`MemoryStore.defer_writes`) writes a stream to
Chroma only when asked (its vector queries are answered from its own vectors). Writing every
traveller's collection at a checkpoint or at the close of the store costs one Chroma collection,
one add and a dozen file syncs per traveller (minutes at 10,000).
So a persistent store keeps those streams in one file next to Chroma's, ``unwritten.parquet``:
each stream's nodes as they are (content and metadata as Chroma would hold them) and its id
counter. The file is rewritten whole, atomically, at every flush; reopening the store restores
those streams with their writes pending, so writing them to Chroma later makes the collections
they would have had.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from mesa_llm_mobility.memory.codec import node_from_record, node_to_metadata
from mesa_llm_mobility.memory.node import ConceptNode

UNWRITTEN_FILE = "unwritten.parquet"
"""The file, inside a persistent store's folder, of the streams not in Chroma."""

_COLUMNS = ("agent_id", "next_sequence", "node_id", "content", "metadata")


def write_unwritten(
    folder: Path, streams: Mapping[str, tuple[int, Sequence[ConceptNode]]]
) -> int:
    """Replace the store's file of unwritten streams (removed when there are none).

    Args:
        folder: The store's folder.
        streams: Agent id -> (id counter, nodes) of each stream that is not in Chroma.

    Returns:
        Number of nodes written.
    """
    path = folder / UNWRITTEN_FILE
    rows = [
        (agent, sequence, node.id, node.content, json.dumps(node_to_metadata(node)))
        for agent, (sequence, nodes) in streams.items()
        for node in nodes
    ]
    # a stream that forgot everything still keeps its id counter
    rows += [
        (agent, sequence, None, None, None)
        for agent, (sequence, nodes) in streams.items()
        if not nodes
    ]
    if not streams:
        path.unlink(missing_ok=True)
        return 0
    frame = pd.DataFrame(rows, columns=list(_COLUMNS))
    handle, temporary = tempfile.mkstemp(
        dir=folder, prefix=".unwritten.", suffix=".tmp"
    )
    os.close(handle)
    try:
        frame.to_parquet(temporary, index=False)
        os.replace(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)
    return int(frame["node_id"].notna().sum())


def read_unwritten(folder: Path) -> dict[str, tuple[int, list[ConceptNode]]]:
    """The streams of the store's file of unwritten streams (none without the file).

    Raises:
        ValueError: If the file is unreadable or a record is not a valid node; the message
            names the file, the agent and the node.
    """
    path = folder / UNWRITTEN_FILE
    if not path.is_file():
        return {}
    try:
        frame = pd.read_parquet(path)
    except Exception as error:
        raise ValueError(f"{path}: unreadable ({error})") from None
    missing = [c for c in _COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: column {missing[0]!r} missing")
    streams: dict[str, tuple[int, list[ConceptNode]]] = {}
    for agent, sequence, node_id, content, metadata in frame[list(_COLUMNS)].itertuples(
        index=False
    ):
        _, nodes = streams.setdefault(str(agent), (int(sequence), []))
        if node_id is None:
            continue
        try:
            nodes.append(node_from_record(node_id, content, json.loads(metadata)))
        except ValueError as error:
            raise ValueError(f"{path}: agent {agent!r}: {error}") from None
    return streams
