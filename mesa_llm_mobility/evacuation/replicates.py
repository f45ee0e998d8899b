"""Between-seed noise: every statistic per seed, and composition differences against it.

An experiment replicated over seeds (``run_experiment(..., seeds=N)``) holds N complete paired
designs. :func:`seed_numbers` computes the report's numbers (:func:`~.report_numbers.analyse`)
for each seed alone; :func:`seed_intervals` gives each number's mean over seeds with a 95 %
t-interval. :func:`composition_differences` asks which composition differences exceed seed
noise: for every pair of compositions, the difference of their run-level means in each seed,
its mean over seeds with a 95 % t-interval, a two-sided sign-flip test over the seeds and
Holm's adjustment over the pairs. A difference *exceeds seed noise* when its interval excludes
zero; with Holm's adjustment it is also significant across the family of pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mesa_llm_mobility.evacuation.report_numbers import analyse
from mesa_llm_mobility.evacuation.statistics import (
    paired_comparisons,
    seed_interval,
)


def seed_numbers(
    pooled: dict[str, pd.DataFrame], run_keys: Sequence[str]
) -> pd.DataFrame:
    """The report's numbers for every seed alone (one row per seed, one column per number)."""
    seeds = sorted(pooled["pedestrians"]["seed"].unique().tolist())
    rows = {}
    for seed in seeds:
        subset = {
            name: frame[frame["seed"] == seed] if "seed" in frame.columns else frame
            for name, frame in pooled.items()
        }
        rows[seed] = analyse(subset, run_keys).numbers
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("seed")


def seed_intervals(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Each number's mean over seeds, 95 % t-interval, standard deviation and seed count."""
    rows = []
    for key in per_seed.columns:
        values = pd.to_numeric(per_seed[key], errors="coerce").replace(
            [np.inf, -np.inf], np.nan
        )
        interval = seed_interval(values.tolist())
        rows.append(
            {
                "key": key,
                "mean": interval.mean,
                "low": interval.low,
                "high": interval.high,
                "sd": interval.sd,
                "seeds": interval.seeds,
            }
        )
    return pd.DataFrame(rows).set_index("key")


def composition_differences(
    per_run: pd.DataFrame, measure: str, compositions: Sequence[str] | None = None
) -> pd.DataFrame:
    """Pairwise composition differences of a run-level measure against seed noise.

    Each composition's run-level ``measure`` is averaged over the blocks of every seed; the
    pairs are compared across the seeds as paired blocks
    (:func:`~.statistics.paired_comparisons`: sign-flip test, Holm over the pairs), and the
    per-seed differences get a 95 % t-interval.

    Args:
        per_run: One row per run with ``seed``, ``composition``, ``block`` and ``measure``.
        measure: The run-level measure (e.g. ``evacuated_share``).
        compositions: The compositions compared (default: all, sorted; those absent from
            ``per_run`` are left out).

    Returns:
        One row per pair: ``measure, first, second, seeds, mean_first, mean_second,
        mean_difference, low, high, exceeds_seed_noise, first_higher_in, p_value, p_holm``.
    """
    by_seed = per_run.groupby(["seed", "composition"])[measure].mean().reset_index()
    present = set(by_seed["composition"])
    groups = (
        sorted(present)
        if compositions is None
        else [c for c in compositions if c in present]
    )
    frame = paired_comparisons(by_seed, block="seed", measure=measure, groups=groups)
    if not len(frame):
        return frame
    wide = by_seed.pivot_table(index="seed", columns="composition", values=measure)
    intervals = [
        seed_interval((wide[first] - wide[second]).dropna().tolist())
        for first, second in zip(frame["first"], frame["second"], strict=True)
    ]
    frame.insert(0, "measure", measure)
    frame = frame.rename(columns={"blocks": "seeds"})
    frame.insert(
        frame.columns.get_loc("mean_difference") + 1,
        "low",
        [i.low for i in intervals],
    )
    frame.insert(frame.columns.get_loc("low") + 1, "high", [i.high for i in intervals])
    frame.insert(
        frame.columns.get_loc("high") + 1,
        "exceeds_seed_noise",
        [i.excludes(0.0) for i in intervals],
    )
    return frame


def composition_means(per_run: pd.DataFrame, measure: str) -> pd.DataFrame:
    """Per composition: the mean over seeds of its per-seed mean ``measure``, with interval."""
    by_seed = per_run.pivot_table(
        index="seed", columns="composition", values=measure, aggfunc="mean"
    )
    rows = []
    for composition in sorted(by_seed.columns):
        interval = seed_interval(by_seed[composition].tolist())
        rows.append(
            {
                "composition": composition,
                "measure": measure,
                "mean": interval.mean,
                "low": interval.low,
                "high": interval.high,
                "sd": interval.sd,
                "seeds": interval.seeds,
            }
        )
    return pd.DataFrame(rows)
