"""Factor models of evacuation outcome and time (paper Sec. 3.1.3, 4.1.3-4.1.4), with statsmodels.

Logistic regression compares the evacuated with the killed pedestrians (the unresolved are left
out, as in the paper's 462 vs 202); ordinary least squares regresses the log evacuation time of
the evacuated. Each factor group is fitted alone, then all together:

- geometry: the initial distance to the nearest designated evacuation exit (``shortest_exit_m``);
- personality: the composition (indicator columns, the first composition as reference);
- information: the exit-information category (``knowledge_source``, indicators), the numbers of
  distinct warning senders heard (``shouters_heard``) and recipients reached
  (``shouts_reached``), and whether and when threat evidence was first recorded
  (``threat_evidence``; ``threat_evidence_s`` is 0 without evidence, so its slope applies to
  those with evidence);
- affect: mean reported urgency, mean engine-computed fear and the share of high-urgency,
  low-directness decisions (0 for a pedestrian without an evaluated decision).

The outcome models report McFadden's pseudo-R2 (``1 - llf / llnull``; paper: information 0.6650,
affect 0.3541, geometry 0.0537, personality 0.0036, combined 0.7020), the time models the
ordinary R2 (paper: 0.6608 geometry, 0.6864 information, 0.6859 affect, 0.0031 personality,
0.8738 combined). Indicator columns without variation are dropped. When a category predicts the
outcome perfectly (e.g. everyone with only a closed gate was killed) the likelihood has no
finite maximum; the fit then stops at the iteration limit, its pseudo-R2 is the converging
value, and ``separation`` is set.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import statsmodels.api as sm
from statsmodels.tools.sm_exceptions import (
    ConvergenceWarning,
    HessianInversionWarning,
    PerfectSeparationWarning,
    SingularMatrixWarning,
)

FACTOR_GROUPS: dict[str, tuple[str, ...]] = {
    "information": (
        "knowledge_source",
        "shouters_heard",
        "shouts_reached",
        "threat_evidence",
        "threat_evidence_s",
    ),
    "affect": ("mean_urgency", "mean_fear", "high_urgency_low_directness"),
    "geometry": ("shortest_exit_m",),
    "personality": ("composition",),
}
"""The predictors of each factor group (``combined`` uses all)."""

CATEGORICAL = frozenset({"knowledge_source", "composition"})


@dataclass(frozen=True)
class FactorFit:
    """One fitted factor model.

    Attributes:
        group: The factor group (or ``combined``).
        kind: ``logit`` (evacuated vs killed) or ``ols`` (log evacuation time).
        n: Pedestrians in the fit.
        r2: McFadden's pseudo-R2 (``logit``) or R2 (``ols``).
        predictors: The design's columns (after dropping those without variation).
        separation: The logit's likelihood has no finite maximum (see the module docstring).
    """

    group: str
    kind: str
    n: int
    r2: float
    predictors: tuple[str, ...]
    separation: bool


def design_matrix(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Numeric predictors with a constant: categoricals as indicators (first level dropped).

    Args:
        frame: The pedestrians.
        columns: Predictor columns.

    Returns:
        The design (float), without constant columns other than ``const``.
    """
    parts = []
    for column in columns:
        if column in CATEGORICAL:
            parts.append(
                pd.get_dummies(
                    frame[column].astype(str), prefix=column, drop_first=True
                ).astype(float)
            )
        else:
            parts.append(frame[[column]].astype(float))
    design = pd.concat(parts, axis=1) if parts else pd.DataFrame(index=frame.index)
    varying = design.columns[design.nunique() > 1]
    return sm.add_constant(design[varying], has_constant="add")


def _logit(y: np.ndarray, x: pd.DataFrame) -> tuple[float, bool]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = sm.Logit(y, x).fit(method="newton", disp=0, maxiter=100)
        except np.linalg.LinAlgError:
            fit = sm.Logit(y, x).fit(method="bfgs", disp=0, maxiter=2000)
    trouble = (PerfectSeparationWarning, ConvergenceWarning, HessianInversionWarning)
    separation = any(issubclass(w.category, trouble) for w in caught)
    return float(fit.prsquared), separation


def fit_factor_models(pedestrians: pd.DataFrame) -> list[FactorFit]:
    """Logistic (evacuated vs killed) and OLS (log evacuation time) fits of every factor group.

    Args:
        pedestrians: One row per pedestrian with ``outcome``, ``evacuation_time_s`` and the
            predictors of :data:`FACTOR_GROUPS`.

    Returns:
        The logit fits, then the OLS fits, each for the groups in order and ``combined``.
    """
    groups = {
        **FACTOR_GROUPS,
        "combined": tuple(c for g in FACTOR_GROUPS.values() for c in g),
    }
    fits: list[FactorFit] = []
    decided = pedestrians[pedestrians["outcome"].isin(["evacuated", "killed"])]
    y = (decided["outcome"] == "evacuated").to_numpy(float)
    for group, columns in groups.items():
        x = design_matrix(decided, columns)
        if len(decided) < 3 or y.min() == y.max():
            fits.append(FactorFit(group, "logit", len(decided), np.nan, (), False))
            continue
        r2, separation = _logit(y, x)
        fits.append(
            FactorFit(group, "logit", len(decided), r2, tuple(x.columns), separation)
        )
    evacuated = pedestrians[
        (pedestrians["outcome"] == "evacuated") & (pedestrians["evacuation_time_s"] > 0)
    ]
    log_time = np.log(evacuated["evacuation_time_s"].to_numpy(float))
    for group, columns in groups.items():
        x = design_matrix(evacuated, columns)
        if len(evacuated) < 3:
            fits.append(FactorFit(group, "ols", len(evacuated), np.nan, (), False))
            continue
        with warnings.catch_warnings():
            # a small design can be rank-deficient: the R2 of the least-squares fit (pseudo-
            # inverse) is still defined
            warnings.simplefilter("ignore", SingularMatrixWarning)
            fit = sm.OLS(log_time, x).fit()
        fits.append(
            FactorFit(
                group,
                "ols",
                len(evacuated),
                float(fit.rsquared),
                tuple(x.columns),
                False,
            )
        )
    return fits


def factor_table(fits: Sequence[FactorFit]) -> pd.DataFrame:
    """The fits as a table: one row per group, logit pseudo-R2 and OLS R2 side by side."""
    rows: dict[str, dict[str, object]] = {}
    for fit in fits:
        row = rows.setdefault(fit.group, {"group": fit.group})
        if fit.kind == "logit":
            row.update(mcfadden_r2=fit.r2, n_logit=fit.n, separation=fit.separation)
        else:
            row.update(ols_r2=fit.r2, n_ols=fit.n)
    return pd.DataFrame(list(rows.values()))
