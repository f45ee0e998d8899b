"""Concept nodes: the typed records an agent's memory is made of.

A :class:`ConceptNode` is one memory (an event seen, a chat held, a reflection made, a plan
chosen) with the scopes that retrieval matches on and the times that forgetting works from. It is
immutable and validated at construction; a bad value raises :class:`ValueError` naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum


class NodeType(StrEnum):
    """The kinds of memory GATSim records."""

    EVENT = "event"
    CHAT = "chat"
    REFLECTION = "reflection"
    PLAN = "plan"


def parse_node_type(value: object, field_name: str = "type") -> NodeType:
    """Turn a string or :class:`NodeType` into a :class:`NodeType`.

    Args:
        value: The value to parse.
        field_name: Name of the field, for the error message.

    Returns:
        The node type.

    Raises:
        ValueError: If the value is not a known node type.
    """
    try:
        return NodeType(value)
    except ValueError:
        known = ", ".join(t.value for t in NodeType)
        raise ValueError(
            f"{field_name}: unknown node type {value!r}; expected one of {known}"
        ) from None


def _number(value: object, field_name: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
    ):
        raise ValueError(f"{field_name}: expected a finite number, got {value!r}")
    return float(value)


def _labels(values: Iterable[str], field_name: str, *, lower: bool) -> frozenset[str]:
    if isinstance(values, str):
        raise ValueError(
            f"{field_name}: expected a collection of strings, got the string {values!r}"
        )
    labels = set()
    for value in values:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{field_name}: expected non-empty strings, got {value!r}")
        label = value.strip()
        labels.add(label.lower() if lower else label)
    return frozenset(labels)


def normalise_keywords(keywords: Iterable[str]) -> frozenset[str]:
    """Normalise keywords as nodes store them: stripped and lower-cased.

    Args:
        keywords: Keywords as given.

    Returns:
        The keyword set.

    Raises:
        ValueError: If a keyword is not a non-empty string.
    """
    return _labels(keywords, "keywords", lower=True)


def normalise_places(places: Iterable[str]) -> frozenset[str]:
    """Normalise a spatial scope: place ids stripped, case kept (ids are names such as ``St_1_link_2``).

    Args:
        places: Place ids as given.

    Returns:
        The place set.

    Raises:
        ValueError: If a place id is not a non-empty string.
    """
    return _labels(places, "spatial_scope", lower=False)


def parse_interval(
    value: object, field_name: str = "temporal_scope"
) -> tuple[float, float] | None:
    """Validate a temporal scope: None or ``(start, end)`` in minutes with ``start <= end``.

    Args:
        value: The value to check.
        field_name: Name of the field, for the error message.

    Returns:
        The interval as a tuple of floats, or None.

    Raises:
        ValueError: If the value is not a valid interval.
    """
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, tuple | list) or len(value) != 2:
        raise ValueError(
            f"{field_name}: expected (start, end) in minutes or None, got {value!r}"
        )
    start = _number(value[0], f"{field_name}.start")
    end = _number(value[1], f"{field_name}.end")
    if end < start:
        raise ValueError(f"{field_name}: end {end} is before start {start}")
    return (start, end)


@dataclass(frozen=True, slots=True)
class ConceptNode:
    """One memory of one agent.

    Attributes:
        id: Unique id within the agent's memory.
        type: Kind of memory, a :class:`NodeType` (strings are accepted and converted).
        content: The memory in words; it is what gets embedded.
        keywords: Keywords for keyword retrieval, normalised to lower case.
        spatial_scope: Place ids (links, facilities) the memory is about.
        temporal_scope: ``(start, end)`` in simulation minutes the memory is about, or None.
        importance: LLM- or rule-assigned significance in [0, 1].
        created: Simulation minute of creation.
        last_accessed: Simulation minute of the last retrieval (``created`` at first).
        expiration: Simulation minute after which the memory is forgotten.
        lifespan: Initial lifespan in minutes (GATSim eq. 7); retrieval extends expiration by it.
    """

    id: str
    type: NodeType
    content: str
    importance: float
    created: float
    expiration: float
    lifespan: float
    keywords: frozenset[str] = field(default_factory=frozenset)
    spatial_scope: frozenset[str] = field(default_factory=frozenset)
    temporal_scope: tuple[float, float] | None = None
    last_accessed: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise ValueError(f"id: expected a non-empty string, got {self.id!r}")
        object.__setattr__(self, "type", parse_node_type(self.type))
        if not isinstance(self.content, str) or not self.content.strip():
            raise ValueError(f"content: expected non-empty text, got {self.content!r}")
        importance = _number(self.importance, "importance")
        if not 0.0 <= importance <= 1.0:
            raise ValueError(f"importance: must be in [0, 1], got {self.importance!r}")
        object.__setattr__(self, "importance", importance)
        created = _number(self.created, "created")
        object.__setattr__(self, "created", created)
        lifespan = _number(self.lifespan, "lifespan")
        if lifespan <= 0.0:
            raise ValueError(f"lifespan: must be positive, got {self.lifespan!r}")
        object.__setattr__(self, "lifespan", lifespan)
        expiration = _number(self.expiration, "expiration")
        if expiration < created:
            raise ValueError(f"expiration: {expiration} is before created {created}")
        object.__setattr__(self, "expiration", expiration)
        last_accessed = (
            created
            if self.last_accessed is None
            else _number(self.last_accessed, "last_accessed")
        )
        if last_accessed < created:
            raise ValueError(
                f"last_accessed: {last_accessed} is before created {created}"
            )
        object.__setattr__(self, "last_accessed", last_accessed)
        object.__setattr__(self, "keywords", normalise_keywords(self.keywords))
        object.__setattr__(self, "spatial_scope", normalise_places(self.spatial_scope))
        object.__setattr__(self, "temporal_scope", parse_interval(self.temporal_scope))

    def is_expired(self, now: float) -> bool:
        """Tell whether the memory is forgotten at ``now``.

        Args:
            now: Simulation minute.

        Returns:
            True when ``now`` is past the expiration.
        """
        return now > self.expiration
