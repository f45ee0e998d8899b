"""The macroscopic experiment of GATSim (section 4.4) over seeds, on the shared sweep engine.

:func:`day_metrics` measures one run's days from its trips table: the 8:00 starters' mean first
departure and on-time count, punctuality of all commutes, mean delay, mode shares, the distinct
paths used in the morning peak and the **relative gap** (:func:`relative_gap`), the standard
convergence measure of day-to-day and dynamic user-equilibrium models. :func:`run_macro_experiment`
runs the days for every seed through :func:`~mesa_llm_mobility.experiment.sweeps.sweep` and
:func:`summarise` gives each metric's mean and 95 % interval (Student t) per day.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
from scipy import stats

from mesa_llm_mobility.cognition.settings import BrainOptions
from mesa_llm_mobility.experiment.executors import ExecutorName
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, format_hhmm
from mesa_llm_mobility.urban.decisions.learning import SMALL_1982, schedule_cost

EIGHT = 8 * 60
PEAK = (6 * 60 + 30, 9 * 60)
"""The morning peak (minutes of the day) over which distinct paths are counted."""
METRICS = (
    "starters",
    "starters_mean_departure",
    "starters_on_time",
    "punctuality",
    "mean_delay_min",
    "share_drive",
    "share_transit",
    "share_walk",
    "distinct_peak_paths",
    "relative_gap",
)
"""The per-day measures, in table order."""


def commute_costs(commutes: pd.DataFrame) -> pd.Series:
    """Each commute's generalised cost in travel minutes (Small 1982 scheduling cost / alpha).

    ``T + (beta/alpha) SDE + (gamma/alpha) SDL + (theta/alpha) [late]`` with the experienced
    travel time ``T`` and the arrival against the work start.
    """
    return pd.Series(
        [
            schedule_cost(row.departure, row.travel_time, row.planned_arrival)
            / SMALL_1982.travel
            for row in commutes.itertuples()
        ],
        index=commutes.index,
        dtype=float,
    )


def relative_gap(costs: pd.Series, groups: pd.Series) -> float:
    """``sum_i (c_i - c*_g(i)) / sum_i c_i``: how far travellers are from equal-best costs.

    ``c*_g`` is the best cost experienced that day in traveller ``i``'s group (same origin,
    destination, mode and work start): a cost that someone in the same situation achieved, so
    available. At a user equilibrium every traveller of a group has the group's best cost and
    the gap is 0 (Lu, Mahmassani and Zhou 2009 use this experienced form for dynamic user
    equilibrium).
    """
    if costs.empty or costs.sum() <= 0:
        return 0.0
    best = costs.groupby(groups).transform("min")
    return float((costs - best).sum() / costs.sum())


def day_metrics(trips: pd.DataFrame) -> pd.DataFrame:
    """One row per day of a run's trips table with the :data:`METRICS`.

    A commute is a traveller's first trip of the day with a target arrival (the work start);
    the 8:00 starters are the commuters whose target is 08:00.
    """
    rows = []
    done = trips[trips["arrival"].notna()]
    for day, today in done.groupby("day", sort=True):
        commutes = (
            today[today["planned_arrival"].notna()]
            .sort_values("departure")
            .groupby("agent")
            .head(1)
        )
        target = commutes["planned_arrival"] % MINUTES_PER_DAY
        starters = commutes[target == EIGHT]
        modes = today["mode"].value_counts(normalize=True)
        leave = today["departure"] % MINUTES_PER_DAY
        peak = today[(leave >= PEAK[0]) & (leave < PEAK[1])]
        groups = (
            commutes["origin"]
            + "|"
            + commutes["destination"]
            + "|"
            + commutes["mode"]
            + "|"
            + target.astype(str)
        )
        rows.append(
            {
                "day": int(day),
                "starters": len(starters),
                "starters_mean_departure": float(
                    (starters["departure"] % MINUTES_PER_DAY).mean()
                ),
                "starters_on_time": int((starters["late"] <= 0).sum()),
                "punctuality": float((commutes["late"] <= 0).mean()),
                "mean_delay_min": float(today["delay"].mean()),
                "share_drive": float(modes.get("drive", 0.0)),
                "share_transit": float(modes.get("transit", 0.0)),
                "share_walk": float(modes.get("walk", 0.0)),
                "distinct_peak_paths": int(peak["path"].map(tuple).nunique()),
                "relative_gap": relative_gap(commute_costs(commutes), groups),
            }
        )
    return pd.DataFrame(rows, columns=["day", *METRICS])


def interval(
    values: Iterable[float], level: float = 0.95
) -> tuple[float, float, float]:
    """Mean and the two-sided Student-t interval of the mean (``nan`` bounds for one value)."""
    data = [float(v) for v in values if not math.isnan(float(v))]
    if not data:
        return math.nan, math.nan, math.nan
    mean = sum(data) / len(data)
    if len(data) < 2:
        return mean, math.nan, math.nan
    sem = stats.sem(data)
    half = float(stats.t.ppf(0.5 + level / 2, len(data) - 1) * sem)
    return mean, mean - half, mean + half


def summarise(per_run: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95 % interval of every metric per day over runs (one row per day and metric)."""
    rows = []
    for day, frame in per_run.groupby("day", sort=True):
        for metric in METRICS:
            mean, low, high = interval(frame[metric])
            rows.append(
                {
                    "day": int(day),
                    "metric": metric,
                    "mean": mean,
                    "low": low,
                    "high": high,
                    "runs": int(frame[metric].notna().sum()),
                }
            )
    return pd.DataFrame(rows)


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Days as columns, ``mean [low, high]`` cells (departures as HH:MM)."""

    def cell(row: Any) -> str:
        if row.metric == "starters_mean_departure":
            values = [row.mean, row.low, row.high]
            if any(math.isnan(v) for v in values):
                return format_hhmm(round(row.mean)) if not math.isnan(row.mean) else ""
            return (
                f"{format_hhmm(round(row.mean))} "
                f"[{format_hhmm(round(row.low))}, {format_hhmm(round(row.high))}]"
            )
        digits = 3 if row.metric in ("punctuality", "relative_gap") else 2
        if row.metric.startswith("share_"):
            digits = 3
        text = f"{row.mean:.{digits}f}"
        if not math.isnan(row.low):
            text += f" [{row.low:.{digits}f}, {row.high:.{digits}f}]"
        return text

    table = summary.assign(cell=[cell(r) for r in summary.itertuples()]).pivot(
        index="metric", columns="day", values="cell"
    )
    table.columns = [f"day {d}" for d in table.columns]
    return table.reindex(list(METRICS))


def run_macro_experiment(
    out: str | Path,
    *,
    days: int = 3,
    seeds: int | Iterable[int] = 10,
    brain: str = "rules",
    executor: ExecutorName = "serial",
    max_workers: int | None = None,
    ray_address: str | None = None,
    num_cpus: int | None = None,
    brain_options: BrainOptions | None = None,
    progress: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the experiment for every seed (one run directory each) and measure it.

    Writes ``macro_runs.csv`` (one row per seed and day), ``macro_summary.csv`` (mean and
    95 % interval per day and metric) and ``figure10.png`` (the traffic snapshots at 07:00,
    07:30, 08:00 and 08:30 of each day of the first seed) into ``out``. ``executor``,
    ``max_workers``, ``ray_address`` and ``num_cpus`` are those of
    :func:`~mesa_llm_mobility.experiment.sweeps.sweep`.

    Returns:
        ``(per_run, summary)``.

    Raises:
        RuntimeError: If a run failed (its error is named).
    """
    from mesa_llm_mobility.experiment.sweeps import sweep  # noqa: PLC0415
    from mesa_llm_mobility.urban.model import UrbanMobilityModel  # noqa: PLC0415

    out = Path(out)
    parameters: dict[str, Any] = {"days": days}
    if brain != "rules":
        parameters["brain"] = brain
    results = sweep(
        UrbanMobilityModel,
        parameters,
        seeds=seeds,
        out=out,
        executor=executor,
        max_workers=max_workers,
        ray_address=ray_address,
        num_cpus=num_cpus,
        brain_options=brain_options,
        progress=progress,
    )
    failed = results[results["error"].notna()]
    if not failed.empty:
        first = failed.iloc[0]
        raise RuntimeError(f"run {first['run_dir']} failed: {first['error']}")
    runs = results.groupby("RunId", sort=True).head(1)
    frames = []
    for row in runs.itertuples():
        trips = RunDirectory.open(row.run_dir).read_table("trips")
        frames.append(day_metrics(trips).assign(seed=int(row.seed)))
    per_run = pd.concat(frames, ignore_index=True)
    summary = summarise(per_run)
    per_run.to_csv(out / "macro_runs.csv", index=False)
    summary.to_csv(out / "macro_summary.csv", index=False)
    snapshot = Path(runs.iloc[0]["run_dir"]) / "plots" / "traffic_snapshots.png"
    if snapshot.is_file():
        shutil.copyfile(snapshot, out / "figure10.png")
    return per_run, summary
