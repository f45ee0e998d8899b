"""What an urban run writes into its run directory, and its summary for the command line.

The shared run lifecycle (:mod:`~mesa_llm_mobility.experiment.lifecycle`) runs the urban model
day by day; through the model's run contract it writes, per day, one Parquet part of each of
:data:`DAY_TABLES` (:func:`day_tables`) and a checkpoint with a copy of the memory store, and at
the end the memories table, the paper's plots (:func:`write_plots`: departure histograms per
day, traffic snapshots at 07:00, 07:30, 08:00 and 08:30 of each day, Figure 10, and mode shares
per day) and ``summary.json`` (:func:`write_summary`).

Times in the tables are minutes after midnight of day 1 (``departure``, ``arrival``,
``planned_departure``, ``planned_arrival``, ``time``), delays and lateness in minutes; see
``docs/run_directory.md`` for every table's columns and units.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from mesa_llm_mobility.cognition.ledger import Ledger, llm_summary_lines
from mesa_llm_mobility.experiment.run_directory import RunDirectory, RunDirectoryError
from mesa_llm_mobility.urban import plots
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, format_hhmm
from mesa_llm_mobility.urban.outputs import UrbanSummary

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.model import UrbanMobilityModel

SUMMARY_FILE = "summary.json"

DAY_TABLES = (
    "trips",
    "link_states",
    "decisions",
    "plans",
    "revisions",
    "positions",
    "chats",
    "tool_calls",
)
"""The tables an urban run writes one part per day of (``tables/<name>/day=<d>.parquet``)."""


def day_tables(model: UrbanMobilityModel, day: int) -> dict[str, pd.DataFrame]:
    """The rows of ``day`` of each of :data:`DAY_TABLES`."""
    links = model.engine.link_states_frame(since=(day - 1) * MINUTES_PER_DAY)
    in_day = (links["time"] // MINUTES_PER_DAY + 1) == day
    tables = {"link_states": links[in_day].reset_index(drop=True)}
    for name, frame in (
        ("trips", model.trips_frame()),
        ("decisions", model.decisions_frame()),
        ("plans", model.plans_frame()),
        ("revisions", model.revisions_frame()),
        ("positions", model.positions_frame()),
        ("chats", model.conversations_frame()),
        ("tool_calls", model.tool_calls_frame()),
    ):
        tables[name] = frame[frame["day"] == day].reset_index(drop=True)
    return {name: tables[name] for name in DAY_TABLES}


def restore_link_history(
    run: RunDirectory, model: UrbanMobilityModel, day: int
) -> None:
    """Give a model from a checkpoint the link rows of days 1..day back, from the tables.

    A checkpoint leaves the link rows of the days already written out (they are in
    ``tables/link_states``).

    Raises:
        RunDirectoryError: If a day's part is missing.
    """
    if day < 1:
        return
    days = list(range(1, day + 1))
    stored = run.table_days("link_states")
    if not set(days) <= set(stored):
        raise RunDirectoryError(
            f"{run.tables_dir}: link_states of day(s) "
            f"{', '.join(str(d) for d in days if d not in stored)} missing; the day {day} "
            "checkpoint needs them"
        )
    model.engine.restore_link_history(run.read_table("link_states", days=days))


def run_summary(run: RunDirectory, model: UrbanMobilityModel) -> UrbanSummary:
    """The model's summary; LLM use from the whole ledger file (a resumed brain saw a part)."""
    summary = model.summary()
    if run.ledger_path.is_file():
        summary["llm"] = Ledger.summarize_file(run.ledger_path)
    return summary


def write_plots(run: RunDirectory, model: UrbanMobilityModel) -> list[Path]:
    """The paper's figures of the run in ``plots/``; returns the files."""
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
        model.town, model.link_states_frame(), plots.SNAPSHOT_TIMES, path=path
    )
    written.append(path)
    return written


def write_summary(run: RunDirectory, summary: Mapping[str, Any]) -> Path:
    """``summary.json``: the summary's KPIs (JSON-ready), its LLM use by decision kind."""
    payload = {key: value for key, value in summary.items() if key != "llm"}
    payload["decisions"] = {
        " / ".join(map(str, key)): count
        for key, count in payload.get("decisions", {}).items()
    }
    llm = summary.get("llm")
    if isinstance(llm, pd.DataFrame) and not llm.empty:
        payload["llm"] = json.loads(llm.to_json(orient="index"))
    text = json.dumps(payload, indent=2, default=_json_default)
    path = run.path / SUMMARY_FILE
    path.write_text(text + "\n", encoding="utf-8")
    return path


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def daily_table(trips: pd.DataFrame) -> pd.DataFrame:
    """Per day: trips, completed, mean delay (min), punctuality and mean first departure.

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
                "first_departure_mean": format_hhmm(
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
    if "interruptions" in summary:
        lines.append(
            f"interrupted      {summary['interruptions']} trips (next activity due)"
        )
    errors = summary.get("plan_errors") or {}
    lines.append(
        "plan errors      "
        + (", ".join(f"{name}: {n}" for name, n in sorted(errors.items())) or "none")
    )
    llm = summary.get("llm")
    if isinstance(llm, pd.DataFrame):
        lines.extend(llm_summary_lines(llm))
    return lines
