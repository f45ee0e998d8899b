"""The macroscopic experiment of GATSim (section 4.4): the same measures on every source.

:func:`day_metrics` measures one run's days from its trips table: the 8:00 starters' mean and
spread of departure and on-time count, punctuality of all commutes, mean delay, mode shares,
travel times by mode, the distinct paths of the morning peak, the **standard relative gap**
(:mod:`.equilibrium_gap`: each commuter's cost against the best available to it) and, labelled
as what it is, the within-group gap (against the best cost experienced in the commuter's own
origin / destination / mode / start group). :func:`departures_per_bin` gives the peak's shape.

The sources: one of our runs (:func:`run_day_metrics`, from its run directory), the published
LLM run of the paper (:func:`published_day_metrics`) and :func:`run_macro_experiment`, which
runs our model for every seed on the sweep engine and summarises the seeds (:func:`summarise`:
mean and 95 % interval per day, Student t over seeds, clipped to [0, 1] for shares, punctuality
and gaps). :func:`comparison_table` puts the sources side by side (a single run's proportions
get a Wilson interval) and :func:`peaks_figure` draws their morning peaks day by day.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
from scipy import stats

from mesa_llm_mobility.cognition.settings import BrainOptions
from mesa_llm_mobility.experiment.executors import ExecutorName
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.experiment.sweeps import sweep
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, format_hhmm
from mesa_llm_mobility.urban.decisions.learning import SMALL_1982, schedule_cost
from mesa_llm_mobility.urban.equilibrium_gap import (
    relative_gaps,
    traversals_from_positions,
    usable_modes,
    with_directions,
)
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from mesa_llm_mobility.urban.population import (
    Population,
    load_population,
    population_from_dict,
)
from mesa_llm_mobility.urban.published import PublishedRun
from mesa_llm_mobility.urban.routing import NetworkIndex
from mesa_llm_mobility.urban.scenario import Scenario, load_scenario

EXPERIMENT_DAYS = 3
"""The paper's macroscopic experiment runs three days (Monday to Wednesday)."""

EIGHT = 8 * 60
PEAK = (6 * 60 + 30, 9 * 60)
"""The morning peak (minutes of the day) over which distinct paths are counted."""
PEAK_BINS = (5 * 60, 10 * 60, 15)
"""First and last minute of the day and width of the departure bins of the peak's shape."""
MODES = ("drive", "transit", "walk")
METRICS = (
    "starters",
    "starters_mean_departure",
    "starters_median_departure",
    "starters_sd_departure",
    "starters_group_sd",
    "starters_on_time",
    "starters_late_by_plan",
    "commutes",
    "punctuality",
    "mean_delay_min",
    "completed",
    "share_drive",
    "share_transit",
    "share_walk",
    "travel_drive_min",
    "travel_transit_min",
    "travel_walk_min",
    "distinct_peak_paths",
    "relative_gap",
    "within_group_gap",
)
"""The per-day measures, in table order."""
BOUNDED = {
    "punctuality": "commutes",
    "share_drive": "completed",
    "share_transit": "completed",
    "share_walk": "completed",
    "relative_gap": None,
    "within_group_gap": None,
}
"""Measures in [0, 1] and, for proportions, the count they are a share of (Wilson intervals)."""


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


def within_group_gap(costs: pd.Series, groups: pd.Series) -> float:
    """``sum_i (c_i - c*_g(i)) / sum_i c_i`` against the best cost *experienced* in ``i``'s group.

    ``c*_g`` is the least cost a commuter of the same origin, destination, mode and work start
    had that day. This is not the standard relative gap (:mod:`.equilibrium_gap`): a commuter
    alone in its group counts 0 however badly it did, the denominator still holds its cost, and
    a commuter who changes mode changes group. It is kept for comparison with earlier reports.
    """
    if costs.empty or costs.sum() <= 0:
        return 0.0
    best = costs.groupby(groups).transform("min")
    return float((costs - best).sum() / costs.sum())


def _od_mode(trips: pd.DataFrame) -> pd.Series:
    return (
        trips["origin"].astype(str)
        + "|"
        + trips["destination"].astype(str)
        + "|"
        + trips["mode"].astype(str)
    )


def pooled_sd(values: pd.Series, groups: pd.Series) -> float:
    """The standard deviation of ``values`` within their groups, pooled (NaN if no group has two).

    For departures grouped by origin, destination and mode this is the spread of commuters
    sharing the same roads: the peak spreading of bottleneck theory, which the overall spread
    mixes with the differences between trips.
    """
    squares, freedom = 0.0, 0
    for _, part in values.groupby(groups):
        if len(part) > 1:
            squares += float(((part - part.mean()) ** 2).sum())
            freedom += len(part) - 1
    return math.sqrt(squares / freedom) if freedom else math.nan


def commutes_of(trips: pd.DataFrame) -> pd.DataFrame:
    """Each traveller's first completed trip of a day with a target arrival (the commute)."""
    done = trips[trips["arrival"].notna() & trips["planned_arrival"].notna()]
    return (
        done.sort_values("departure", kind="stable").groupby(["agent", "day"]).head(1)
    )


def day_metrics(
    trips: pd.DataFrame, gaps: Mapping[int, float] | None = None
) -> pd.DataFrame:
    """One row per day of a run's trips table with the :data:`METRICS`.

    A commute is a traveller's first completed trip of the day with a target arrival (the work
    start); the 8:00 starters are the commuters whose target is 08:00, their departure that of
    the trip reaching work; their spread is given overall and pooled within origin / destination /
    mode groups (:func:`pooled_sd`); ``starters_late_by_plan`` counts those who left too late to
    make 08:00 even at the engine's uncongested time of their path. Punctuality is the share of
    commutes admitted by their start; mean
    delay is over completed trips (experienced minus the engine's uncongested time); shares and
    travel times are over completed trips by mode.

    Args:
        trips: The trips table (day, agent, origin, destination, mode, path, departure,
            arrival, travel_time, planned_arrival, late, delay).
        gaps: The standard relative gap by day (:func:`standard_gaps`); NaN without.

    Returns:
        The measures, one row per day.
    """
    rows = []
    done = trips[trips["arrival"].notna()]
    all_commutes = commutes_of(trips)
    for day, today in done.groupby("day", sort=True):
        commutes = all_commutes[all_commutes["day"] == day]
        target = commutes["planned_arrival"] % MINUTES_PER_DAY
        starters = commutes[target == EIGHT]
        leave = starters["departure"] % MINUTES_PER_DAY
        modes = today["mode"].value_counts(normalize=True)
        clock = today["departure"] % MINUTES_PER_DAY
        peak = today[(clock >= PEAK[0]) & (clock < PEAK[1])]
        groups = _od_mode(commutes) + "|" + target.astype(str)
        uncongested = starters["departure"] + starters["free_flow_time"]
        row: dict[str, Any] = {
            "day": int(day),
            "starters": len(starters),
            "starters_mean_departure": float(leave.mean()),
            "starters_median_departure": float(leave.median()),
            "starters_sd_departure": (
                float(leave.std(ddof=1)) if len(leave) > 1 else math.nan
            ),
            "starters_group_sd": pooled_sd(leave, _od_mode(starters)),
            "starters_on_time": int((starters["late"] <= 0).sum()),
            "starters_late_by_plan": int(
                (uncongested > starters["planned_arrival"]).sum()
            ),
            "commutes": len(commutes),
            "punctuality": float((commutes["late"] <= 0).mean()),
            "mean_delay_min": float(today["delay"].mean()),
            "completed": len(today),
            "distinct_peak_paths": int(peak["path"].map(tuple).nunique()),
            "relative_gap": math.nan if gaps is None else gaps.get(int(day), math.nan),
            "within_group_gap": within_group_gap(commute_costs(commutes), groups),
        }
        for mode in MODES:
            row[f"share_{mode}"] = float(modes.get(mode, 0.0))
            row[f"travel_{mode}_min"] = float(
                today.loc[today["mode"] == mode, "travel_time"].mean()
            )
        rows.append(row)
    return pd.DataFrame(rows, columns=["day", *METRICS])


def departures_per_bin(
    trips: pd.DataFrame, bins: tuple[int, int, int] = PEAK_BINS
) -> pd.DataFrame:
    """The commutes' departures per bin of the morning (the peak's shape), every day.

    Returns:
        Columns ``day``, ``bin`` (first minute of the day of the bin), ``departures``; every
        bin from ``bins[0]`` to ``bins[1]`` of every day, zeros included.
    """
    start, end, width = bins
    commutes = commutes_of(trips)
    clock = commutes["departure"] % MINUTES_PER_DAY
    inside = commutes[(clock >= start) & (clock < end)]
    counts = (
        ((inside["departure"] % MINUTES_PER_DAY - start) // width * width + start)
        .astype(int)
        .groupby(inside["day"])
        .value_counts()
    )
    days = sorted(trips["day"].dropna().astype(int).unique())
    rows = [
        (day, minute, int(counts.get((day, minute), 0)))
        for day in days
        for minute in range(start, end, width)
    ]
    return pd.DataFrame(rows, columns=["day", "bin", "departures"])


# ----------------------------------------------------------------------------- sources
def standard_gaps(
    trips: pd.DataFrame,
    traversals: pd.DataFrame,
    index: NetworkIndex,
    population: Population,
    *,
    node_minutes: int,
) -> dict[int, float]:
    """The standard relative gap by day (:func:`~.equilibrium_gap.relative_gaps`)."""
    modes = usable_modes(population, index)
    for agent in trips["agent"].astype(str).unique():
        if agent not in modes and " #" in agent:  # a copied household (n_agents)
            modes[agent] = modes.get(agent.split(" #")[0], ("walk", "transit"))
    results = relative_gaps(trips, traversals, index, modes, node_minutes=node_minutes)
    return {result.day: result.gap for result in results}


def run_day_metrics(run_dir: str | Path | RunDirectory) -> pd.DataFrame:
    """:func:`day_metrics` of one of our saved runs, with the standard relative gap."""
    run = run_dir if isinstance(run_dir, RunDirectory) else RunDirectory.open(run_dir)
    config = run.config
    trips = run.read_table("trips")
    scenario = load_scenario(config.get("scenario", "nguyen_dupuis"))
    if config.get("events") is False:
        scenario = _without_events(scenario)
    index = NetworkIndex(scenario)
    population = load_population(config.get("population", "population_70"), scenario)
    traversals = with_directions(
        traversals_from_positions(run.read_table("positions"), trips), trips, index
    )
    gaps = standard_gaps(trips, traversals, index, population, node_minutes=0)
    return day_metrics(trips, gaps)


def _without_events(scenario: Scenario) -> Scenario:
    return replace(scenario, events=())


def published_day_metrics(run: PublishedRun) -> pd.DataFrame:
    """:func:`day_metrics` of the published run, with the standard relative gap.

    The prototype spends a minute at every node and at the door (``node_minutes=1``) and the
    published run had no network events.
    """
    scenario = _without_events(load_scenario("nguyen_dupuis"))
    index = NetworkIndex(scenario)
    population = population_from_dict(run.population, "published population")
    gaps = standard_gaps(
        run.trips, run.tables["traversals"], index, population, node_minutes=1
    )
    return day_metrics(run.trips, gaps)


# ----------------------------------------------------------------------------- intervals
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


def wilson(successes: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion (``nan`` for ``n = 0``)."""
    if n <= 0:
        return math.nan, math.nan
    z = float(stats.norm.ppf(0.5 + level / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def summarise(per_run: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95 % interval of every metric per day over runs (one row per day and metric).

    Over several runs: Student t over the runs' values, clipped to [0, 1] for the
    :data:`BOUNDED` measures and at 0 for the others (counts, minutes, spreads). A single run: a Wilson interval for its proportions (punctuality of
    its commutes, shares of its trips), no interval otherwise.
    """
    rows = []
    for day, frame in per_run.groupby("day", sort=True):
        for metric in METRICS:
            if metric not in frame:
                continue
            mean, low, high = interval(frame[metric])
            runs = int(frame[metric].notna().sum())
            if metric in BOUNDED:
                if runs == 1 and BOUNDED[metric] is not None:
                    n = int(frame[BOUNDED[metric]].iloc[0])
                    low, high = wilson(mean * n, n)
                elif not math.isnan(low):
                    low, high = max(0.0, low), min(1.0, high)
            elif not math.isnan(low):
                low = max(0.0, low)  # every measure is a count, a time or a spread
            rows.append(
                {
                    "day": int(day),
                    "metric": metric,
                    "mean": mean,
                    "low": low,
                    "high": high,
                    "runs": runs,
                }
            )
    return pd.DataFrame(rows)


def _cell(row: Any) -> str:
    if math.isnan(row.mean):
        return ""
    if row.metric in ("starters_mean_departure", "starters_median_departure"):
        text = format_hhmm(round(row.mean))
        if not math.isnan(row.low):
            text += f" [{format_hhmm(round(row.low))}, {format_hhmm(round(row.high))}]"
        return text
    digits = 3 if row.metric in BOUNDED else 1
    if (
        float(row.mean).is_integer()
        and math.isnan(row.low)
        and row.metric not in BOUNDED
    ):
        digits = 0
    text = f"{row.mean:.{digits}f}"
    if not math.isnan(row.low):
        text += f" [{row.low:.{digits}f}, {row.high:.{digits}f}]"
    return text


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Days as columns, ``mean [low, high]`` cells (departures as HH:MM)."""
    table = summary.assign(cell=[_cell(r) for r in summary.itertuples()]).pivot(
        index="metric", columns="day", values="cell"
    )
    table.columns = [f"day {d}" for d in table.columns]
    return table.reindex([m for m in METRICS if m in table.index])


def comparison_table(sources: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Sources side by side: one row per metric, one column per source and day.

    Args:
        sources: Summaries (:func:`summarise`) by source name, in column order.
    """
    parts = []
    for name, summary in sources.items():
        table = summary_table(summary)
        table.columns = [f"{name}, {column}" for column in table.columns]
        parts.append(table)
    combined = pd.concat(parts, axis=1)
    days = sorted({c.split(", day ")[1] for c in combined.columns}, key=int)
    ordered = [f"{name}, day {d}" for d in days for name in sources]
    return combined.reindex(columns=[c for c in ordered if c in combined.columns])


# ----------------------------------------------------------------------------- the experiment
def run_macro_experiment(
    out: str | Path,
    parameters: Mapping[str, Any] | None = None,
    *,
    seeds: int | Iterable[int] = 10,
    executor: ExecutorName = "serial",
    max_workers: int | None = None,
    ray_address: str | None = None,
    num_cpus: int | None = None,
    brain_options: BrainOptions | None = None,
    progress: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the experiment for every seed (one run directory each) and measure it.

    Writes ``macro_runs.csv`` (one row per seed and day), ``macro_summary.csv`` (mean and
    95 % interval per day and metric), ``macro_peaks.csv`` (departures per bin, seed and day)
    and ``figure10.png`` (the traffic snapshots at 07:00, 07:30, 08:00 and 08:30 of each day of
    the first seed) into ``out``.

    Args:
        out: The experiment folder.
        parameters: The urban model's parameters for every run
            (:class:`~.parameters.UrbanParameters` names; default: the paper's 3 days, the
            model's other defaults).
        seeds: A number of seeds (``0..n-1``) or the seeds.
        executor: As :func:`~mesa_llm_mobility.experiment.sweeps.sweep` (and
            ``max_workers``, ``ray_address``, ``num_cpus``).
        max_workers: Worker processes (``"process"``).
        ray_address: Ray cluster address (``"ray"``).
        num_cpus: CPUs of a local Ray instance.
        brain_options: LLM brain options.
        progress: Show the sweep's progress bar.

    Returns:
        ``(per_run, summary)``.

    Raises:
        ParameterError: For a parameter the model does not have, or a bad value.
        RuntimeError: If a run failed (its error is named).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results = sweep(
        UrbanMobilityModel,
        {"days": EXPERIMENT_DAYS, **dict(parameters or {})},
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
    frames, peaks = [], []
    for row in runs.itertuples():
        run = RunDirectory.open(row.run_dir)
        frames.append(run_day_metrics(run).assign(seed=int(row.seed)))
        peaks.append(
            departures_per_bin(run.read_table("trips")).assign(seed=int(row.seed))
        )
    per_run = pd.concat(frames, ignore_index=True)
    summary = summarise(per_run)
    per_run.to_csv(out / "macro_runs.csv", index=False)
    summary.to_csv(out / "macro_summary.csv", index=False)
    pd.concat(peaks, ignore_index=True).to_csv(out / "macro_peaks.csv", index=False)
    snapshot = Path(runs.iloc[0]["run_dir"]) / "plots" / "traffic_snapshots.png"
    if snapshot.is_file():
        shutil.copyfile(snapshot, out / "figure10.png")
    return per_run, summary


def mean_peaks(peaks: pd.DataFrame) -> pd.DataFrame:
    """Departures per bin and day averaged over seeds (a ``seed`` column is averaged away)."""
    if "seed" not in peaks:
        return peaks[["day", "bin", "departures"]]
    return peaks.groupby(["day", "bin"], as_index=False)["departures"].mean()


def peaks_figure(
    sources: Mapping[str, pd.DataFrame],
    path: str | Path | None = None,
    days: Sequence[int] | None = None,
) -> Any:
    """The morning peaks of every source, one panel per day (commutes leaving per bin).

    Args:
        sources: Departures per bin (:func:`departures_per_bin`, a ``seed`` column averaged)
            by source name.
        path: Write the figure as PNG here.
        days: Days to draw (default: every day of the first source).

    Returns:
        The matplotlib figure.
    """
    from matplotlib.figure import Figure  # noqa: PLC0415 - drawing only when asked

    frames = {name: mean_peaks(frame) for name, frame in sources.items()}
    first = next(iter(frames.values()))
    days = list(days or sorted(first["day"].unique()))
    figure = Figure(figsize=(4.2 * len(days), 3.2), layout="constrained")
    axes = figure.subplots(1, len(days), sharey=True, squeeze=False)[0]
    for ax, day in zip(axes, days, strict=True):
        for name, frame in frames.items():
            part = frame[frame["day"] == day]
            ax.step(part["bin"], part["departures"], where="post", label=name)
        ticks = list(range(PEAK_BINS[0], PEAK_BINS[1] + 1, 60))
        ax.set_xticks(ticks, [format_hhmm(t) for t in ticks])
        ax.set_title(f"day {day}")
        ax.set_xlabel("departure (15-minute bins)")
    axes[0].set_ylabel("commutes leaving")
    axes[-1].legend(fontsize=8)
    if path is not None:
        figure.savefig(path, dpi=150)
    return figure


def compare_with_published(
    out: str | Path,
    runs: Mapping[str, tuple[pd.DataFrame, pd.DataFrame]],
    published: PublishedRun,
) -> tuple[pd.DataFrame, Path]:
    """The published LLM run beside our experiments: a table and the figure of the peaks.

    Args:
        out: Folder for ``comparison.csv`` and ``peaks.png``.
        runs: For each source name, its per-run measures and its departures per bin (with a
            ``seed`` column), as :func:`run_macro_experiment` writes them.
        published: The published run.

    Returns:
        The table and the figure's path.
    """
    out = Path(out)
    sources = {"published LLM run": summarise(published_day_metrics(published))}
    peaks = {"published LLM run": departures_per_bin(published.trips)}
    for name, (per_run, bins) in runs.items():
        sources[name] = summarise(per_run)
        peaks[name] = bins
    days = sorted(
        set(sources["published LLM run"]["day"]).intersection(
            *(set(s["day"]) for s in sources.values())
        )
    )
    trimmed = {name: s[s["day"].isin(days)] for name, s in sources.items()}
    table = comparison_table(trimmed)
    table.to_csv(out / "comparison.csv")
    path = out / "peaks.png"
    peaks_figure(peaks, path, days)
    return table, path
