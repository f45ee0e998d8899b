"""The statistics of GATSim's believability test (section 4.3.2) on judged pairs.

With ``wins`` (the generative agent judged more realistic), ``losses`` (the human) and ``ties``
out of ``n`` pairs:

- :func:`binomial_test`: is the judging better than random? H0: the agent's share of wins,
  ties counted as half a win, is at most 1/3; exact one-sided binomial test on
  ``round(wins + ties / 2)`` successes. The paper's 23 / 20 / 7 of 50 give p = 0.002.
- :func:`sign_test`: does the agent outperform the humans? Ties dropped, H0: ``p_AI <= 0.5``;
  one-sided exact binomial on ``wins`` of ``wins + losses``. The paper's counts give 0.380.
- :func:`posterior_at_least_as_good`: the posterior probability that the agent does at least
  as well as the humans: with ``q`` the chance that a pair is not lost (win or tie) and a
  uniform prior, ``q ~ Beta(1 + wins + ties, 1 + losses)`` and the probability is
  ``P(q >= 1/2)``. The paper's counts give 0.920 (its 92.0 %).

:func:`assumption_variants` runs the three under the paper's assumptions and under others as
defensible (the null that matches scoring a tie as half a win, the rounding, ties credited to
neither side or to the annotators, a Jeffreys prior): the binomial test's conclusion and the
posterior's strength depend on them, the sign test's does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats


@dataclass(frozen=True)
class BelievabilityTests:
    """The three tests on one set of verdicts (see the module docstring)."""

    wins: int
    losses: int
    ties: int
    binomial_p: float
    sign_p: float
    posterior_at_least_as_good: float

    @property
    def n(self) -> int:
        """Judged pairs."""
        return self.wins + self.losses + self.ties


def _check_counts(*counts: int) -> None:
    if any(c < 0 for c in counts):
        raise ValueError(f"counts must be >= 0, got {counts}")


def binomial_test(wins: int, ties: int, n: int, chance: float = 1 / 3) -> float:
    """One-sided exact binomial p-value of ``wins + ties / 2`` successes against ``chance``."""
    _check_counts(wins, ties, n)
    if wins + ties > n:
        raise ValueError(f"wins + ties ({wins + ties}) exceed the {n} pairs")
    successes = math.floor(wins + ties / 2 + 0.5)
    if n == 0:
        return 1.0
    return float(stats.binomtest(successes, n, chance, alternative="greater").pvalue)


def sign_test(wins: int, losses: int) -> float:
    """One-sided sign test p-value (ties dropped): H0 ``p_AI <= 0.5``."""
    _check_counts(wins, losses)
    if wins + losses == 0:
        return 1.0
    return float(
        stats.binomtest(wins, wins + losses, 0.5, alternative="greater").pvalue
    )


def posterior_at_least_as_good(wins: int, losses: int, ties: int) -> float:
    """``P(q >= 1/2)`` for ``q ~ Beta(1 + wins + ties, 1 + losses)`` (uniform prior)."""
    _check_counts(wins, losses, ties)
    return float(stats.beta.sf(0.5, 1 + wins + ties, 1 + losses))


def believability_tests(wins: int, losses: int, ties: int) -> BelievabilityTests:
    """All three tests on the counts."""
    n = wins + losses + ties
    return BelievabilityTests(
        wins,
        losses,
        ties,
        binomial_test(wins, ties, n),
        sign_test(wins, losses),
        posterior_at_least_as_good(wins, losses, ties),
    )


# ----------------------------------------------------------------------------- assumptions
@dataclass(frozen=True)
class AssumptionVariant:
    """One test under one set of assumptions.

    Attributes:
        test: ``binomial``, ``sign`` or ``bayes``.
        assumption: What is assumed (the null, how ties count, the rounding, the prior).
        value: The p-value (``binomial``, ``sign``) or the posterior probability (``bayes``).
        paper: Whether these are the paper's assumptions.
        conclusion: ``"significant at 5 %"`` / ``"not significant"`` for p-values; for the
            posterior, ``"strong (>= 0.9)"``, ``"moderate (0.75-0.9)"`` or ``"weak (< 0.75)"``.
    """

    test: str
    assumption: str
    value: float
    paper: bool
    conclusion: str


def _p_conclusion(p: float) -> str:
    return "significant at 5 %" if p < 0.05 else "not significant"


def _posterior_conclusion(probability: float) -> str:
    if probability >= 0.9:
        return "strong (>= 0.9)"
    return "moderate (0.75-0.9)" if probability >= 0.75 else "weak (< 0.75)"


def _greater(successes: int, n: int, chance: float) -> float:
    if n == 0:
        return 1.0
    return float(stats.binomtest(successes, n, chance, alternative="greater").pvalue)


def assumption_variants(wins: int, losses: int, ties: int) -> list[AssumptionVariant]:
    """The three tests under the paper's assumptions and under equally defensible others.

    The binomial test's null ("the judge picks at random") gives the agent a share of 1/3 with
    ties as half a win; but a judge choosing among first, second and tie at random gives the
    agent ``1/3 + (1/3) / 2 = 1/2`` of a win on average, so 1/2 is the null that matches the
    scoring. The paper rounds ``wins + ties / 2`` up (its script's ``ceil``). The sign test
    drops the ties; the paper's test is one-sided. The posterior counts a tie as the agent doing
    "at least as well": the same rule gives the annotators a high probability too, and without
    crediting the ties to either side the probability is that of ``P(win | not a tie) >= 1/2``.
    """
    n = wins + losses + ties
    _check_counts(wins, losses, ties)
    half = wins + ties / 2
    rows = [
        (
            "binomial",
            f"H0 share <= 1/3, ties half a win, {half:g} rounded up",
            True,
            _greater(math.ceil(half), n, 1 / 3),
        ),
        (
            "binomial",
            f"H0 share <= 1/3, ties half a win, {half:g} rounded down",
            False,
            _greater(math.floor(half), n, 1 / 3),
        ),
        (
            "binomial",
            (
                "H0 share <= 1/2 (a judge picking first/second/tie at random scores "
                "the agent 1/3 + 1/6), ties half a win, rounded up"
            ),
            False,
            _greater(math.ceil(half), n, 1 / 2),
        ),
        (
            "binomial",
            "H0 share <= 1/3, ties count as no win",
            False,
            _greater(wins, n, 1 / 3),
        ),
        (
            "binomial",
            "H0 share <= 1/3, only the pairs not tied",
            False,
            _greater(wins, wins + losses, 1 / 3),
        ),
        (
            "sign",
            "H0 p_agent <= 0.5, ties dropped, one-sided",
            True,
            _greater(wins, wins + losses, 0.5),
        ),
        (
            "sign",
            "H0 p_agent = 0.5, ties dropped, two-sided",
            False,
            1.0
            if wins + losses == 0
            else float(stats.binomtest(wins, wins + losses).pvalue),
        ),
        (
            "sign",
            "H0 p_agent <= 0.5, ties counted as agent wins",
            False,
            _greater(wins + ties, n, 0.5),
        ),
        (
            "sign",
            "H0 p_agent <= 0.5, ties counted as annotator wins",
            False,
            _greater(wins, n, 0.5),
        ),
    ]
    variants = [
        AssumptionVariant(test, text, value, paper, _p_conclusion(value))
        for test, text, paper, value in rows
    ]
    for text, paper, a, b in (
        (
            "P(P(agent wins or ties) >= 1/2), uniform prior",
            True,
            1 + wins + ties,
            1 + losses,
        ),
        (
            (
                "P(P(annotator wins or ties) >= 1/2), uniform prior: the same rule for the other "
                "side"
            ),
            False,
            1 + losses + ties,
            1 + wins,
        ),
        (
            "P(P(agent wins | not a tie) >= 1/2), uniform prior: ties to neither side",
            False,
            1 + wins,
            1 + losses,
        ),
        (
            "P(P(agent wins or ties) >= 1/2), Jeffreys prior Beta(1/2, 1/2)",
            False,
            0.5 + wins + ties,
            0.5 + losses,
        ),
    ):
        value = float(stats.beta.sf(0.5, a, b))
        variants.append(
            AssumptionVariant("bayes", text, value, paper, _posterior_conclusion(value))
        )
    return variants
