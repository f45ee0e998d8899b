"""The memory formulas of GATSim, each a small pure function.

Every function quotes its equation from the paper (GATSim, section 3.3, equations 1-7) and is
tested against the paper's own numbers. Times are simulation minutes; one day is 1440 minutes.
"""

from __future__ import annotations

from collections.abc import Set

from mesa_llm_mobility.clock import MINUTES_PER_DAY

RECENCY_RECENT = 0.90
"""Recency decay preset that emphasises recent patterns (paper, Table 1)."""

RECENCY_HABITS = 0.95
"""Recency decay preset that preserves medium-term habits (paper, Table 1)."""

COSINE_DISTANCE_MAX = 1.0
"""Default ``d_max`` of the semantic score: the cosine distance of unrelated (orthogonal) texts.

With ``d_max = 1`` the semantic score is the cosine similarity clipped at 0, so unrelated texts
score 0 like a non-match in the other modes; ``d_max = 2`` (the largest cosine distance) maps
the whole range but gives unrelated texts 0.5.
"""


def jaccard(query: Set[str], memory: Set[str]) -> float:
    """Keyword match, the Jaccard coefficient (paper, eq. 1).

    ``keyword_score(K_q, K_m) = |K_q n K_m| / |K_q u K_m|``

    Args:
        query: Keyword set of the query.
        memory: Keyword set of the memory.

    Returns:
        The coefficient in [0, 1]; 0.0 when both sets are empty (nothing to match).
    """
    union = len(query | memory)
    if union == 0:
        return 0.0
    return len(query & memory) / union


def overlap(first: Set[str], second: Set[str]) -> float:
    """Overlap (Szymkiewicz-Simpson) coefficient of two sets (paper, eq. 3).

    ``Overlap(A, B) = |A n B| / min(|A|, |B|)``; a subset scores 1.

    Args:
        first: One set.
        second: The other set.

    Returns:
        The coefficient in [0, 1]; 0.0 when either set is empty (no scope, no evidence of
        relevance).
    """
    smaller = min(len(first), len(second))
    if smaller == 0:
        return 0.0
    return len(first & second) / smaller


def interval_overlap(
    first: tuple[float, float] | None, second: tuple[float, float] | None
) -> float:
    """Overlap coefficient of two time intervals (paper, eq. 3, with interval lengths as sizes).

    ``Overlap(T_a, T_b) = |T_a n T_b| / min(|T_a|, |T_b|)``, where ``|T|`` is the length of a
    closed interval ``[start, end]``. A zero-length interval (an instant) is a subset of any
    interval that contains it, so it scores 1 there and 0 elsewhere, keeping the paper's
    "subsets score perfectly" property.

    Args:
        first: ``(start, end)`` in simulation minutes, or None for no temporal scope.
        second: ``(start, end)`` in simulation minutes, or None for no temporal scope.

    Returns:
        The coefficient in [0, 1]; 0.0 when either interval is None.
    """
    if first is None or second is None:
        return 0.0
    start = max(first[0], second[0])
    end = min(first[1], second[1])
    if end < start:
        return 0.0
    shorter = min(first[1] - first[0], second[1] - second[0])
    if shorter <= 0.0:
        return 1.0
    return (end - start) / shorter


def spatiotemporal_match(
    query_places: Set[str],
    memory_places: Set[str],
    query_interval: tuple[float, float] | None,
    memory_interval: tuple[float, float] | None,
) -> float:
    """Spatiotemporal match (paper, eq. 4).

    ``spatiotemporal_score(q, m) = Overlap(S_q, S_m) x Overlap(T_q, T_m)``

    Args:
        query_places: Spatial scope of the query (place ids: links, facilities).
        memory_places: Spatial scope of the memory.
        query_interval: Temporal scope of the query, or None.
        memory_interval: Temporal scope of the memory, or None.

    Returns:
        The product in [0, 1].
    """
    spatial = overlap(query_places, memory_places)
    if spatial == 0.0:
        return 0.0
    return spatial * interval_overlap(query_interval, memory_interval)


def semantic_match(distance: float, d_max: float = COSINE_DISTANCE_MAX) -> float:
    """Semantic match from a cosine distance (paper, eq. 2).

    ``semantic_score(q, m) = 1 - d(e_q, e_m) / d_max``

    Args:
        distance: Cosine distance between query and memory embeddings, in [0, d_max].
        d_max: Distance that scores 0; 1.0 (orthogonal) by default, 2.0 for the full range.

    Returns:
        The score, clipped to [0, 1] against rounding.

    Raises:
        ValueError: If ``d_max`` is not positive.
    """
    if d_max <= 0.0:
        raise ValueError(f"d_max: must be positive, got {d_max}")
    return min(1.0, max(0.0, 1.0 - distance / d_max))


def recency(elapsed_minutes: float, decay: float = RECENCY_RECENT) -> float:
    """Recency score, exponential decay per simulated day (paper, eq. 5 and Table 1).

    ``recency_score(m) = lambda ** t_m`` with ``t_m`` the days elapsed since the memory was
    created or last accessed.

    Args:
        elapsed_minutes: Simulation minutes since creation or last access (negative counts as 0).
        decay: ``lambda`` in (0, 1); see :data:`RECENCY_RECENT` and :data:`RECENCY_HABITS`.

    Returns:
        The score in (0, 1].

    Raises:
        ValueError: If ``decay`` is outside (0, 1).
    """
    if not 0.0 < decay < 1.0:
        raise ValueError(f"decay: lambda must be in (0, 1), got {decay}")
    return decay ** (max(0.0, elapsed_minutes) / MINUTES_PER_DAY)


def mode_score(
    match: float,
    importance: float,
    recency_score: float,
    weight: float,
    gamma: float,
    delta: float,
) -> float:
    """Composite score of one retrieval mode (paper, eq. 6).

    ``score_r(m) = w_r * matching_score_r(m) + gamma * importance(m) + delta * recency(m)``

    Args:
        match: The mode's matching score in [0, 1].
        importance: The memory's importance in [0, 1].
        recency_score: The memory's recency in (0, 1].
        weight: ``w_r``, the mode weight.
        gamma: Weight of importance.
        delta: Weight of recency.

    Returns:
        The composite score.
    """
    return weight * match + gamma * importance + delta * recency_score


def lifespan(importance: float, minimum: float, maximum: float, power: float) -> float:
    """Initial lifespan of a memory, in minutes (paper, eq. 7).

    ``lifespan_init = lifespan_min + (lifespan_max - lifespan_min) x importance ** power``

    Args:
        importance: Importance in [0, 1].
        minimum: Lifespan at importance 0, in minutes.
        maximum: Lifespan at importance 1, in minutes.
        power: Exponent; larger values keep only very important memories long.

    Returns:
        The lifespan in minutes, between ``minimum`` and ``maximum``.

    Raises:
        ValueError: If importance is outside [0, 1].
    """
    if not 0.0 <= importance <= 1.0:
        raise ValueError(f"importance: must be in [0, 1], got {importance}")
    return minimum + (maximum - minimum) * importance**power


def extended_expiration(
    expiration: float, created: float, initial_lifespan: float, cap_factor: float = 3.0
) -> float:
    """Expiration after one retrieval: the spacing effect (paper, section 3.3.4).

    A retrieval extends expiration by the initial lifespan; we cap the total at
    ``created + cap_factor x lifespan`` so a memory recalled every day cannot live forever.

    Args:
        expiration: Current expiration, in simulation minutes.
        created: Creation time, in simulation minutes.
        initial_lifespan: The memory's initial lifespan, in minutes.
        cap_factor: Largest lifetime in units of the initial lifespan.

    Returns:
        The new expiration, in simulation minutes.
    """
    return min(expiration + initial_lifespan, created + cap_factor * initial_lifespan)
