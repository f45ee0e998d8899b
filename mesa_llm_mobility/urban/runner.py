"""Running the urban model into a run directory: what ``mlm urban run`` does.

A run directory (:class:`~mesa_llm_mobility.experiment.run_directory.RunDirectory`) receives the
resolved configuration, the LLM ledger (for LLM brains), the persistent memory store, one Parquet
part per day of each table (trips, link states, decisions, plans), the end-of-run memories, the
summary as JSON, and the paper's plots: departure histograms per day, traffic-state snapshots at
07:00, 07:30, 08:00 and 08:30 of each day (Figure 10) and mode shares per day.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.urban import plots
from mesa_llm_mobility.urban.model import UrbanMobilityModel

logger = logging.getLogger(__name__)

MINUTES_PER_DAY = 1440
SNAPSHOT_TIMES = ("07:00", "07:30", "08:00", "08:30")


@dataclass(frozen=True)
class UrbanRunResult:
    """What a finished run left behind."""

    run: RunDirectory
    summary: dict[str, Any]
    plots: list[Path]


def urban_config(
    *,
    days: int = 3,
    brain: str = "rules",
    seed: int = 0,
    scenario: str = "nguyen_dupuis",
    population: str = "population_70",
    n_agents: int | None = None,
    events: bool = True,
    embedding: str = "hash",
    start_date: str = "2025-03-10",
) -> dict[str, Any]:
    """The resolved configuration of an urban run, as written to ``config.json``."""
    return {
        "model": "urban",
        "days": days,
        "brain": brain,
        "seed": seed,
        "scenario": scenario,
        "population": population,
        "n_agents": n_agents,
        "events": events,
        "embedding": embedding,
        "start_date": start_date,
    }


def run_urban(
    out: str | Path,
    config: Mapping[str, Any],
    *,
    overwrite: bool = False,
    progress: bool = True,
    brain_options: Mapping[str, Any] | None = None,
) -> UrbanRunResult:
    """Run the urban model day by day into the run directory ``out``.

    Args:
        out: Run directory to create.
        config: As built by :func:`urban_config`.
        overwrite: Replace an earlier run in ``out``.
        progress: Show a progress bar (simulated minutes).
        brain_options: Extra :func:`~mesa_llm_mobility.cognition.make_brain` options for LLM
            brains (``api_base``, ``max_concurrency``, ...); never written to the config.

    Returns:
        The run directory, the summary and the plot files.

    Raises:
        RunDirectoryError: when ``out`` holds another run and ``overwrite`` is false.
        ValueError: for invalid model parameters (from the model).
    """
    run = RunDirectory.create(out, dict(config), overwrite=overwrite)
    options = dict(brain_options or {})
    if str(config["brain"]).startswith("llm:"):
        options.setdefault("ledger", run.ledger_path)
    model = UrbanMobilityModel(
        scenario=config["scenario"],
        population=config["population"],
        days=int(config["days"]),
        start_date=config["start_date"],
        brain=config["brain"],
        embedding=config["embedding"],
        rng=config["seed"],
        events=bool(config["events"]),
        run_dir=run.path,
        n_agents=config["n_agents"],
        brain_options=options,
    )
    run.update_metadata({"memory": model.memory_store.run_metadata()})
    try:
        with tqdm(
            total=model.days * MINUTES_PER_DAY,
            unit="min",
            disable=not progress,
            desc="urban run",
        ) as bar:
            for day in range(1, model.days + 1):
                while model.running and model.minute < day * MINUTES_PER_DAY:
                    model.step()
                    bar.update(1)
                    if model.minute % 60 == 0:
                        bar.set_postfix(
                            day=day,
                            clock=_clock(model.minute),
                            trips=model.trips_in_progress,
                        )
                _write_day(run, model, day)
        summary = model.summary()
        run.write_table("memories", model.memories_frame())
        figures = _write_plots(run, model)
        _write_summary(run, summary)
    finally:
        model.close()
    return UrbanRunResult(run=run, summary=summary, plots=figures)


def _clock(minute: int) -> str:
    now = minute % MINUTES_PER_DAY
    return f"{now // 60:02d}:{now % 60:02d}"


def _write_day(run: RunDirectory, model: UrbanMobilityModel, day: int) -> None:
    trips = model.trips_frame()
    run.write_table("trips", trips[trips["day"] == day].reset_index(drop=True), day=day)
    links = model.link_states_frame()
    in_day = (links["time"] // MINUTES_PER_DAY + 1) == day
    run.write_table("link_states", links[in_day].reset_index(drop=True), day=day)
    for name, frame in (
        ("decisions", model.decisions_frame()),
        ("plans", model.plans_frame()),
    ):
        run.write_table(
            name, frame[frame["day"] == day].reset_index(drop=True), day=day
        )
    logger.info("day %d written to %s", day, run.path)


def _write_plots(run: RunDirectory, model: UrbanMobilityModel) -> list[Path]:
    run.plots_dir.mkdir(parents=True, exist_ok=True)
    trips = model.trips_frame()
    written = []
    departed = trips[trips["departure"].notna()]
    if len(departed):
        path = run.plots_dir / "departures_per_day.png"
        plots.departure_histograms(departed, path=path)
        written.append(path)
        path = run.plots_dir / "mode_shares.png"
        plots.mode_shares(departed, path=path)
        written.append(path)
    path = run.plots_dir / "traffic_snapshots.png"
    plots.traffic_snapshots_grid(
        model.town, model.link_states_frame(), SNAPSHOT_TIMES, path=path
    )
    written.append(path)
    return written


def _write_summary(run: RunDirectory, summary: Mapping[str, Any]) -> None:
    payload = {key: value for key, value in summary.items() if key != "llm"}
    payload["decisions"] = {
        " / ".join(map(str, key)): count
        for key, count in payload.get("decisions", {}).items()
    }
    llm = summary.get("llm")
    if isinstance(llm, pd.DataFrame) and not llm.empty:
        payload["llm"] = json.loads(llm.to_json(orient="index"))
    text = json.dumps(payload, indent=2, default=_json_default)
    (run.path / "summary.json").write_text(text + "\n", encoding="utf-8")


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def daily_table(trips: pd.DataFrame) -> pd.DataFrame:
    """Per day: trips, completed, mean delay (min), punctuality and mean departure (HH:MM).

    Punctuality is the share of completed trips with a planned arrival that arrived by it.
    """
    rows = []
    for day, frame in trips.groupby("day", sort=True):
        done = frame[frame["arrival"].notna()]
        targeted = done[done["planned_arrival"].notna()]
        departures = frame["departure"].dropna() % MINUTES_PER_DAY
        rows.append(
            {
                "day": int(day),
                "trips": len(frame),
                "completed": len(done),
                "mean_delay_min": round(float(done["delay"].mean()), 2)
                if len(done)
                else math.nan,
                "punctuality": round(float((targeted["late"] <= 0).mean()), 3)
                if len(targeted)
                else math.nan,
                "first_departure_mean": _clock(
                    int(departures.groupby(frame["agent"]).min().mean())
                )
                if len(departures)
                else "",
            }
        )
    return pd.DataFrame(rows)


def summary_lines(summary: Mapping[str, Any]) -> list[str]:
    """The summary as aligned text lines (for the command line)."""
    lines = [
        f"trips            {summary['trips']} ({summary['completed']} completed)",
        f"mean delay       {summary['mean_delay']:.1f} min",
        f"punctuality      {summary['punctuality']:.1%}",
        "mode shares      "
        + ", ".join(
            f"{mode} {share:.0%}"
            for mode, share in sorted(summary["mode_shares"].items())
        ),
    ]
    decisions = summary.get("decisions") or {}
    if decisions:
        lines.append(
            "decisions        "
            + ", ".join(
                f"{kind} {outcome}: {n}"
                for (kind, outcome), n in sorted(decisions.items())
            )
        )
    errors = summary.get("plan_errors") or {}
    lines.append(
        "plan errors      "
        + (", ".join(f"{name}: {n}" for name, n in sorted(errors.items())) or "none")
    )
    llm = summary.get("llm")
    if isinstance(llm, pd.DataFrame) and not llm.empty and "all" in llm.index:
        row = llm.loc["all"]
        lines.append(
            f"LLM calls        {int(row['calls'])} (ok {int(row['ok'])}, repaired {int(row['repaired'])}, "
            f"fallback {int(row['fallback'])}, replayed {int(row['replayed'])}), cost ${row['cost_usd']:.4f}"
        )
    return lines
