"""Agent memory: concept nodes in per-agent Chroma collections (GATSim, section 3.3).

Each agent's memories are :class:`ConceptNode` records in its own Chroma collection. Retrieval
combines keyword (Jaccard), semantic (cosine) and spatiotemporal (overlap) matching with
importance and recency; memories expire after an importance-dependent lifespan. See
``docs/memory.md``.
"""

from __future__ import annotations

from mesa_llm_mobility.memory.config import (
    PAPER_LIFESPANS,
    LifespanParams,
    MemoryConfig,
)
from mesa_llm_mobility.memory.embedding import (
    EmbeddingChoice,
    HashEmbedding,
    MiniLMEmbedding,
    register_embedding_functions,
    resolve_embedding,
)
from mesa_llm_mobility.memory.formulas import RECENCY_HABITS, RECENCY_RECENT
from mesa_llm_mobility.memory.node import ConceptNode, NodeType
from mesa_llm_mobility.memory.store import MemoryStore, MemoryStoreError
from mesa_llm_mobility.memory.stream import MemoryStream, RetrievedMemory

__all__ = [
    "PAPER_LIFESPANS",
    "RECENCY_HABITS",
    "RECENCY_RECENT",
    "ConceptNode",
    "EmbeddingChoice",
    "HashEmbedding",
    "LifespanParams",
    "MemoryConfig",
    "MemoryStore",
    "MemoryStoreError",
    "MemoryStream",
    "MiniLMEmbedding",
    "NodeType",
    "RetrievedMemory",
    "register_embedding_functions",
    "resolve_embedding",
]
