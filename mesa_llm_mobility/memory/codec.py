"""Conversion between :class:`ConceptNode` and Chroma records (id, document, metadata).

Chroma metadata holds str, int, float, bool and non-empty homogeneous lists of those. So the
content is the document, sets are stored as sorted lists (left out when empty), and the
temporal scope as two floats ``t_start`` and ``t_end`` (left out when None).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mesa_llm_mobility.memory.node import ConceptNode

_TIMES = ("importance", "created", "last_accessed", "expiration", "lifespan")


def node_to_metadata(node: ConceptNode) -> dict[str, Any]:
    """Encode a node's fields (all but id and content) as Chroma metadata.

    Args:
        node: The node.

    Returns:
        A metadata dict Chroma accepts.
    """
    metadata: dict[str, Any] = {"type": node.type.value}
    for name in _TIMES:
        metadata[name] = float(getattr(node, name))
    if node.keywords:
        metadata["keywords"] = sorted(node.keywords)
    if node.spatial_scope:
        metadata["spatial_scope"] = sorted(node.spatial_scope)
    if node.temporal_scope is not None:
        metadata["t_start"], metadata["t_end"] = node.temporal_scope
    return metadata


def node_from_record(
    node_id: str, document: str | None, metadata: Mapping[str, Any] | None
) -> ConceptNode:
    """Decode a Chroma record into a node.

    Args:
        node_id: The record id.
        document: The record document (the node content).
        metadata: The record metadata, as written by :func:`node_to_metadata`.

    Returns:
        The node.

    Raises:
        ValueError: If the record is not a valid node; the message names the id and field.
    """
    if metadata is None:
        raise ValueError(f"node {node_id!r}: metadata is missing")
    try:
        missing = [name for name in ("type", *_TIMES) if name not in metadata]
        if missing:
            raise ValueError(f"{missing[0]}: missing from stored metadata")
        temporal = None
        if "t_start" in metadata or "t_end" in metadata:
            temporal = (metadata.get("t_start"), metadata.get("t_end"))
        return ConceptNode(
            id=node_id,
            type=metadata["type"],
            content=document if document is not None else "",
            importance=metadata["importance"],
            created=metadata["created"],
            last_accessed=metadata["last_accessed"],
            expiration=metadata["expiration"],
            lifespan=metadata["lifespan"],
            keywords=metadata.get("keywords", ()),
            spatial_scope=metadata.get("spatial_scope", ()),
            temporal_scope=temporal,
        )
    except ValueError as error:
        raise ValueError(f"node {node_id!r}: {error}") from None
