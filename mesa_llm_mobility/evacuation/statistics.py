"""The statistics of the paper's experiment (Sec. 3.1.3), as small pure functions.

- :func:`fisher_exact_2x2`: Fisher's exact test of a 2 x 2 table with the sample odds ratio
  ``(a d) / (b c)`` (the paper: usable-exit knowledge vs evacuation, OR 800.7, p = 6.1e-118).
- :func:`auc`: the area under the ROC curve of a score separating two groups, as the
  Mann-Whitney probability ``P(X > Y) + P(X = Y) / 2`` (the paper: share of high-urgency,
  low-directness decisions, killed vs evacuated, AUC 0.839).
- :func:`sign_flip_test`: the two-sided paired sign-flip (randomisation) test that enumerates all
  ``2^n`` sign assignments of the block differences (the paper: 8 blocks, 256 assignments;
  seeded random assignments beyond 16 blocks).
- :func:`holm`: Holm's step-down adjustment of a family of p-values (the paper: the 10 pairwise
  comparisons of the 5 homogeneous compositions; all 8 block differences of one sign give
  ``p = 2/256``, Holm-adjusted ``10 x 2/256 = 0.078``, the value the paper reports).
- :func:`paired_comparisons`: every pair of compositions compared across blocks with the two.
- :func:`block_bootstrap_ci`: a percentile interval of a mean by resampling the paired blocks
  (the paper's Fig. 7 intervals and the directional-mismatch intervals).
- :func:`mann_whitney`: the AUC with the two-sided Mann-Whitney p-value (scipy; the paper: shout
  reach AUC 0.808, p = 6e-42).
- :func:`spearman`: Spearman's rank correlation with its p-value (scipy; the paper: knowers vs
  rescued per run, rho 0.607, p = 1.0e-7).
- :func:`seed_interval`: the mean over seeds with its 95 % t-interval (between-seed noise).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

_RELATIVE_TOLERANCE = 1 + 1e-7
"""Tables as probable as the observed one within this factor count as "as extreme" (as R and
scipy do), so rounding in the log-probabilities cannot drop the observed table's twins."""


@dataclass(frozen=True)
class FisherResult:
    """Fisher's exact test of a 2 x 2 table.

    Attributes:
        odds_ratio: ``(a d) / (b c)`` (``inf`` when ``b c = 0 < a d``, ``nan`` when both are 0).
        p_value: Two-sided: the summed probability of every table with the same margins that is
            no more probable than the observed one (hypergeometric).
    """

    odds_ratio: float
    p_value: float


def _log_binomial(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_exact_2x2(table: Sequence[Sequence[int]]) -> FisherResult:
    """Fisher's exact test of ``[[a, b], [c, d]]`` (rows: groups; columns: outcome yes / no).

    With the margins fixed, the count ``a`` is hypergeometric::

        P(a) = C(a + b, a) C(c + d, c) / C(n, a + c)

    and the two-sided p-value sums ``P(x)`` over every ``x`` with ``P(x) <= P(a)``.

    Args:
        table: Two rows of two non-negative counts.

    Returns:
        The odds ratio and the p-value.

    Raises:
        ValueError: If the table is not 2 x 2 of non-negative integers.
    """
    cells = np.asarray(table)
    if (
        cells.shape != (2, 2)
        or np.any(cells < 0)
        or not np.all(cells == cells.astype(int))
    ):
        raise ValueError(f"need a 2 x 2 table of non-negative counts, got {table!r}")
    (a, b), (c, d) = cells.astype(int).tolist()
    row1, row2, col1 = a + b, c + d, a + c
    n = row1 + row2
    ad, bc = a * d, b * c
    odds = ad / bc if bc else (math.inf if ad else math.nan)

    def log_p(x: int) -> float:
        return (
            _log_binomial(row1, x)
            + _log_binomial(row2, col1 - x)
            - _log_binomial(n, col1)
        )

    lo, hi = max(0, col1 - row2), min(row1, col1)
    observed = log_p(a)
    total = sum(
        math.exp(lp)
        for lp in (log_p(x) for x in range(lo, hi + 1))
        if lp <= observed + math.log(_RELATIVE_TOLERANCE)
    )
    return FisherResult(odds, min(1.0, total))


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """Area under the ROC curve of a score: ``P(X > Y) + P(X = Y) / 2``.

    ``X`` is the score of a random member of the positive group, ``Y`` of the negative group
    (the Mann-Whitney ``U`` of the positives divided by ``n_pos n_neg``).

    Args:
        positives: Scores of the group the score should rank higher (e.g. killed).
        negatives: Scores of the other group (e.g. evacuated).

    Returns:
        The AUC in [0, 1]; ``nan`` when a group is empty.
    """
    x = np.asarray(positives, dtype=float)
    y = np.asarray(negatives, dtype=float)
    if x.size == 0 or y.size == 0:
        return math.nan
    greater = (x[:, None] > y[None, :]).sum()
    ties = (x[:, None] == y[None, :]).sum()
    return float((greater + 0.5 * ties) / (x.size * y.size))


EXACT_SIGN_FLIP_BLOCKS = 16
"""Up to this many blocks the sign-flip test enumerates all ``2^n`` assignments."""

MONTE_CARLO_SIGN_FLIPS = 100_000
"""Random sign assignments drawn (seeded) for more blocks (e.g. 8 blocks x 10 seeds)."""


def sign_flip_test(differences: Sequence[float], *, seed: int = 0) -> float:
    """Two-sided paired sign-flip test of a mean difference of zero.

    Under the null each block's difference is as likely positive as negative, so all ``2^n``
    sign assignments are equally likely; the p-value is the share of them whose mean is at
    least as far from zero as the observed mean. Up to :data:`EXACT_SIGN_FLIP_BLOCKS` blocks
    every assignment is enumerated (the paper's 8 blocks: 256); beyond, the share is
    estimated from :data:`MONTE_CARLO_SIGN_FLIPS` random assignments plus the observed one
    (``(hits + 1) / (draws + 1)``, never 0).

    Args:
        differences: One difference per block (e.g. composition X minus Y in blocks 1-8).
        seed: Seed of the random assignments (more than 16 blocks).

    Returns:
        The p-value (1.0 for no differences or all zero).
    """
    d = np.asarray(differences, dtype=float)
    if d.size == 0:
        return 1.0
    observed = abs(d.mean())
    tolerance = observed - 1e-12 * max(1.0, observed)
    if d.size <= EXACT_SIGN_FLIP_BLOCKS:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
        means = np.abs(signs @ d) / d.size
        return float(np.mean(means >= tolerance))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, MONTE_CARLO_SIGN_FLIPS, 10_000):
        size = min(10_000, MONTE_CARLO_SIGN_FLIPS - start)
        signs = rng.choice((1.0, -1.0), size=(size, d.size))
        hits += int(np.sum(np.abs(signs @ d) / d.size >= tolerance))
    return (hits + 1) / (MONTE_CARLO_SIGN_FLIPS + 1)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: the k-th smallest of m p-values times ``m - k + 1``.

    Adjusted values are made non-decreasing in the order of the raw values and capped at 1.

    Args:
        p_values: The family's raw p-values.

    Returns:
        The adjusted p-values, in the input order.
    """
    p = np.asarray(p_values, dtype=float)
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[index]))
        adjusted[index] = running
    return adjusted.tolist()


def paired_comparisons(
    values: pd.DataFrame,
    *,
    group: str = "composition",
    block: str = "block",
    measure: str,
    groups: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Every pair of groups compared within blocks: mean difference, sign-flip p, Holm p.

    Args:
        values: One row per group and block with the run-level ``measure``.
        group: The group column.
        block: The block column (pairs are matched on it).
        measure: The compared column.
        groups: The groups to compare (default: all, sorted).

    Returns:
        One row per pair: ``first, second, blocks, mean_first, mean_second,
        mean_difference, first_higher_in, p_value, p_holm``.
    """
    wide = values.pivot_table(index=block, columns=group, values=measure)
    names = sorted(wide.columns) if groups is None else list(groups)
    rows = []
    for first, second in itertools.combinations(names, 2):
        pair = wide[[first, second]].dropna()
        diff = (pair[first] - pair[second]).to_numpy()
        rows.append(
            {
                "first": first,
                "second": second,
                "blocks": len(pair),
                "mean_first": float(pair[first].mean()),
                "mean_second": float(pair[second].mean()),
                "mean_difference": float(diff.mean()) if diff.size else math.nan,
                "first_higher_in": int((diff > 0).sum()),
                "p_value": sign_flip_test(diff),
            }
        )
    frame = pd.DataFrame(rows)
    if len(frame):
        frame["p_holm"] = holm(frame["p_value"].tolist())
    return frame


def block_bootstrap_ci(
    by_block: Mapping[int, float] | pd.Series,
    *,
    draws: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of the mean of per-block values, resampling blocks with replacement.

    Args:
        by_block: One value per block.
        draws: Bootstrap resamples.
        level: Coverage.
        seed: Seed of the resampling.

    Returns:
        ``(low, high)``; ``(nan, nan)`` without values.
    """
    values = np.asarray(list(pd.Series(by_block).dropna()), dtype=float)
    if values.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(draws, values.size))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class RankTest:
    """A rank statistic and its two-sided p-value.

    Attributes:
        statistic: The AUC (:func:`mann_whitney`) or Spearman's rho (:func:`spearman`).
        p_value: Two-sided p-value (``nan`` when undefined).
        n: Observations (both groups together for :func:`mann_whitney`).
    """

    statistic: float
    p_value: float
    n: int


def mann_whitney(positives: Sequence[float], negatives: Sequence[float]) -> RankTest:
    """The AUC of a score for two groups with the two-sided Mann-Whitney U test.

    The AUC is :func:`auc`; the p-value is scipy's asymptotic one with the tie correction
    (counts such as "shouters heard" have many ties).

    Args:
        positives: Scores of the group the score should rank higher.
        negatives: Scores of the other group.

    Returns:
        AUC, p-value and the number of scores.
    """
    x = np.asarray(positives, dtype=float)
    y = np.asarray(negatives, dtype=float)
    if x.size == 0 or y.size == 0:
        return RankTest(math.nan, math.nan, int(x.size + y.size))
    if np.all(np.concatenate([x, y]) == x[0]):
        return RankTest(0.5, 1.0, int(x.size + y.size))
    result = stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic")
    return RankTest(auc(x, y), float(result.pvalue), int(x.size + y.size))


def spearman(x: Sequence[float], y: Sequence[float]) -> RankTest:
    """Spearman's rank correlation with scipy's two-sided p-value (t distribution, n - 2 df).

    Args:
        x: First variable.
        y: Second variable (same length).

    Returns:
        rho, p-value and n (``nan`` for fewer than three pairs or a constant variable).
    """
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    if a.size < 3 or np.all(a == a[0]) or np.all(b == b[0]):
        return RankTest(math.nan, math.nan, int(a.size))
    result = stats.spearmanr(a, b)
    return RankTest(float(result.statistic), float(result.pvalue), int(a.size))


@dataclass(frozen=True)
class SeedInterval:
    """A statistic over seeds: its mean and a 95 % t-interval of that mean.

    Attributes:
        mean: Mean over the seeds.
        low: Lower end of the interval (``nan`` with fewer than two seeds).
        high: Upper end.
        seeds: Seeds with a value.
        sd: Standard deviation between seeds.
    """

    mean: float
    low: float
    high: float
    seeds: int
    sd: float

    def excludes(self, value: float) -> bool:
        """Whether ``value`` lies outside the interval (``False`` when it is undefined)."""
        return bool(self.low > value or self.high < value)


def seed_interval(values: Sequence[float], level: float = 0.95) -> SeedInterval:
    """Mean of per-seed values with the t-interval ``mean +- t(n-1) sd / sqrt(n)``.

    Args:
        values: One value per seed (NaN ignored).
        level: Coverage.

    Returns:
        The mean, interval, count and standard deviation.
    """
    v = np.asarray([x for x in values if x is not None], dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return SeedInterval(math.nan, math.nan, math.nan, 0, math.nan)
    mean = float(v.mean())
    if v.size < 2:
        return SeedInterval(mean, math.nan, math.nan, 1, math.nan)
    sd = float(v.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, v.size - 1)) * sd / math.sqrt(v.size)
    return SeedInterval(mean, mean - half, mean + half, int(v.size), sd)
