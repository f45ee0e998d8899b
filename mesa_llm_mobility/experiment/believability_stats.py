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
