"""Five-Factor personality: archetypes, T-score bands, facets and behavioural anchors (paper Sec. 2.1).

Scores are T-scores (mean 50, sd 10) for openness (O), conscientiousness (C), extraversion (E),
agreeableness (A) and neuroticism (N). Bands: very low < 35, low 35-44, average 45-55, high 56-65,
very high > 65. The experiment's eight compositions A-H mix the archetypes of paper Table 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

DOMAINS = ("O", "C", "E", "A", "N")
DOMAIN_NAMES = {
    "O": "openness",
    "C": "conscientiousness",
    "E": "extraversion",
    "A": "agreeableness",
    "N": "neuroticism",
}


def band(score: float) -> str:
    """Interpretive band of a T-score: very low < 35, low 35-44, average 45-55, high 56-65, very high > 65."""
    if score < 35:
        return "very low"
    if score < 45:
        return "low"
    if score <= 55:
        return "average"
    if score <= 65:
        return "high"
    return "very high"


ANCHORS: dict[tuple[str, str], str] = {
    (
        "O",
        "low",
    ): "On an outing you keep to familiar paths and known places rather than trying unknown corners.",
    ("O", "average"): "On an outing you look around with ordinary curiosity.",
    (
        "O",
        "high",
    ): "On an outing you like to explore unfamiliar corners and try new ways through a place.",
    (
        "C",
        "low",
    ): "On an outing you drift and change plans easily; you rarely stick to a fixed route.",
    ("C", "average"): "On an outing you follow a loose plan and adjust it when needed.",
    (
        "C",
        "high",
    ): "On an outing you adhere to your plan and follow the route you chose.",
    ("E", "low"): "On an outing you keep to yourself and seldom speak to strangers.",
    ("E", "average"): "On an outing you chat when there is a reason to.",
    (
        "E",
        "high",
    ): "On an outing you talk readily with people around you and like being among others.",
    (
        "A",
        "low",
    ): "On an outing you decide for yourself and do not mind going against the crowd.",
    ("A", "average"): "On an outing you are cooperative but keep your own view.",
    (
        "A",
        "high",
    ): "On an outing you go along with others and help them; you tend to follow the group.",
    (
        "N",
        "low",
    ): "On an outing you stay calm when things are unclear and rarely second-guess yourself.",
    (
        "N",
        "average",
    ): "On an outing you feel ordinary unease when something seems wrong.",
    (
        "N",
        "high",
    ): "On an outing you hesitate and revisit choices when a situation is unclear; under threat you prefer nearby targets and change direction more often.",
}
"""Behavioural anchor per domain and band direction (very low/low -> low, high/very high -> high)."""

FACETS: dict[tuple[str, str], str] = {
    ("O", "low"): "prefers the familiar",
    ("O", "high"): "curious, exploratory",
    ("C", "low"): "spontaneous, flexible about plans",
    ("C", "high"): "dutiful, plan-keeping, orderly",
    ("E", "low"): "reserved, solitary",
    ("E", "high"): "sociable, talkative, seeks company",
    ("A", "low"): "independent, sceptical of others",
    ("A", "high"): "trusting, compliant, follows others",
    ("N", "low"): "composed, hard to alarm",
    ("N", "high"): "anxious, vulnerable to stress",
}
"""Salient facets, stated for domains outside the average band."""


def _direction(score: float) -> str:
    b = band(score)
    return (
        "low"
        if b in ("very low", "low")
        else "high"
        if b in ("high", "very high")
        else "average"
    )


@dataclass(frozen=True)
class Personality:
    """A Five-Factor profile (T-scores) with its archetype name."""

    archetype: str
    O: float  # noqa: E741
    C: float
    E: float
    A: float
    N: float

    def score(self, domain: str) -> float:
        """T-score of one domain (``"O"`` ... ``"N"``)."""
        return float(getattr(self, domain))

    def z(self, domain: str) -> float:
        """Standardised score (T - 50) / 10."""
        return (self.score(domain) - 50.0) / 10.0

    def bands(self) -> dict[str, str]:
        """Band of every domain."""
        return {d: band(self.score(d)) for d in DOMAINS}

    def anchors(self) -> dict[str, str]:
        """Behavioural anchor of every domain."""
        return {d: ANCHORS[(d, _direction(self.score(d)))] for d in DOMAINS}

    def facets(self) -> dict[str, str]:
        """Salient facets of the domains outside the average band."""
        return {
            d: FACETS[(d, _direction(self.score(d)))]
            for d in DOMAINS
            if _direction(self.score(d)) != "average"
        }

    def identity_text(self) -> str:
        """The identity section's personality lines: scores, bands, facets, anchors."""
        lines = [
            f"Personality ({self.archetype}), Five-Factor T-scores (mean 50, sd 10):"
        ]
        facets = self.facets()
        for d in DOMAINS:
            facet = f"; salient: {facets[d]}" if d in facets else ""
            lines.append(
                f"- {DOMAIN_NAMES[d]} {self.score(d):.0f} ({band(self.score(d))}{facet}). {self.anchors()[d]}"
            )
        return "\n".join(lines)


ARCHETYPES: dict[str, Personality] = {
    "average": Personality("average", 50, 50, 50, 50, 50),
    "calm_independent": Personality("calm_independent", 50, 55, 40, 45, 30),
    "rule_following": Personality("rule_following", 40, 70, 45, 60, 50),
    "anxious_conformist": Personality("anxious_conformist", 40, 45, 62, 60, 72),
    "bold_solitary": Personality("bold_solitary", 68, 35, 35, 40, 32),
}
"""The five archetypes of paper Table 1."""

COMPOSITIONS: dict[str, dict[str, int]] = {
    "A": {"average": 11},
    "B": {"calm_independent": 11},
    "C": {"bold_solitary": 11},
    "D": {"rule_following": 11},
    "E": {"rule_following": 8, "anxious_conformist": 3},
    "F": {"rule_following": 6, "anxious_conformist": 5},
    "G": {"rule_following": 3, "anxious_conformist": 8},
    "H": {"anxious_conformist": 11},
}
"""The eight experimental compositions of the eleven-person group (spec, paper Sec. 3.2)."""


def mixed_composition(n: int) -> dict[str, int]:
    """``n`` pedestrians spread evenly over the five archetypes (the rest are bold solitaries).

    The crowd the scaling benchmarks use, so that every archetype's behaviour is present.

    Args:
        n: Number of pedestrians (>= 1).

    Returns:
        Archetype counts, in :data:`ARCHETYPES` order, summing to ``n``.
    """
    if n < 1:
        raise ValueError(f"a mixed composition needs at least one pedestrian, got {n}")
    counts = {name: n // len(ARCHETYPES) for name in ARCHETYPES}
    counts["bold_solitary"] += n - sum(counts.values())
    return counts


def composition_profiles(composition: str | Mapping[str, int]) -> list[Personality]:
    """Profiles of a composition letter (A-H) or of explicit archetype counts, in a fixed order.

    Raises:
        ValueError: for an unknown letter or archetype, or a negative count.
    """
    if isinstance(composition, str):
        key = composition.strip().upper()
        if key not in COMPOSITIONS:
            raise ValueError(
                f"unknown composition {composition!r}: use one of {', '.join(COMPOSITIONS)} or archetype counts"
            )
        counts: Mapping[str, int] = COMPOSITIONS[key]
    else:
        counts = composition
    profiles: list[Personality] = []
    for name, count in counts.items():
        if name not in ARCHETYPES:
            raise ValueError(
                f"unknown archetype {name!r}: use one of {', '.join(ARCHETYPES)}"
            )
        if int(count) < 0:
            raise ValueError(f"archetype {name!r} has a negative count {count}")
        profiles.extend([ARCHETYPES[name]] * int(count))
    if not profiles:
        raise ValueError("the composition has no pedestrians")
    return profiles
