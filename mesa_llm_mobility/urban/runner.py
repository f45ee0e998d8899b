"""Running the urban model into a run directory: what ``mlm urban run`` does.

A run directory (:class:`~mesa_llm_mobility.experiment.run_directory.RunDirectory`) receives the
resolved configuration, the LLM ledger (for LLM brains), the persistent memory store, one Parquet
part per day of each table (trips, link states, decisions, plans), the end-of-run memories, the
summary as JSON, and the paper's plots: departure histograms per day, traffic-state snapshots at
07:00, 07:30, 08:00 and 08:30 of each day (Figure 10) and mode shares per day.

After day 0 (the initial state) and after every day the runner writes a checkpoint: the pickled
model (without its brain and memory store) and a copy of the memory store as it was then
(``checkpoints/day_<d>_memory/``). :func:`resume_urban` continues an interrupted run from its
latest good checkpoint; :func:`fork_urban` starts a new run from any checkpoint of another with
changed parameters. LLM brains answer requests already in a ledger from that ledger (replay).
"""

from __future__ import annotations

import json
import logging
import math
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import pandas as pd
from tqdm.auto import tqdm

from mesa_llm_mobility.cognition.ledger import Ledger, ReplayIndex, llm_summary_lines
from mesa_llm_mobility.cognition.settings import (
    BrainOptions,
    environment_options,
    parse_brain_setting,
)
from mesa_llm_mobility.cognition.tool_calling import TOOL_CALLING_CHOICES
from mesa_llm_mobility.experiment.checkpoints import (
    record_tag,
    replay_after,
    restore_memory,
    snapshot_dir,
    snapshot_memory,
)
from mesa_llm_mobility.experiment.run_directory import (
    RunDirectory,
    RunDirectoryError,
    fork,
)
from mesa_llm_mobility.urban import plots
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, format_hhmm
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from mesa_llm_mobility.urban.outputs import UrbanSummary
from mesa_llm_mobility.urban.replay import load_run_scenario, open_urban_run

logger = logging.getLogger(__name__)

SUMMARY_FILE = "summary.json"
FORKABLE = frozenset({"brain", "days", "events"})
"""Config values a fork may change."""


class UrbanConfig(TypedDict):
    """The resolved configuration of an urban run (``config.json``); see :func:`urban_config`."""

    model: str
    days: int
    brain: str
    seed: int
    scenario: str
    population: str
    n_agents: int | None
    events: bool
    embedding: str
    start_date: str
    reaction_minutes: NotRequired[int]
    trip_importance: NotRequired[str]
    tools: NotRequired[bool]
    tool_calling: NotRequired[str]


class ForkChanges(TypedDict, total=False):
    """What a fork may change (:data:`FORKABLE`)."""

    brain: str
    days: int
    events: bool


@dataclass(frozen=True)
class UrbanRunResult:
    """What a run left behind.

    Attributes:
        run: The run directory.
        summary: The model's summary (:meth:`UrbanMobilityModel.summary`).
        plots: The plot files (none while the run is unfinished).
        finished: Whether every day ran; False after ``stop_after_day``.
    """

    run: RunDirectory
    summary: UrbanSummary
    plots: list[Path]
    finished: bool = True


def urban_config(
    *,
    days: int = 3,
    brain: str = "rules",
    seed: int = 0,
    scenario: str = "nguyen_dupuis",
    population: str = "population_70",
    n_agents: int | None = None,
    events: bool = True,
    embedding: str = "auto",
    start_date: str = "2025-03-10",
    reaction_minutes: int = 0,
    tools: bool = False,
    trip_importance: str = "creation",
    tool_calling: str | None = None,
) -> UrbanConfig:
    """The resolved configuration of an urban run, as written to ``config.json``.

    ``reaction_minutes`` (asynchronous decisions) is written only when not 0 and ``tools``
    (LLM travellers may call tools) only when on, and ``trip_importance`` only when not
    ``"creation"``, so earlier runs keep the configuration they always had. ``tool_calling``
    (how an LLM calls tools: ``auto``, ``native`` or ``structured``) is written when given;
    :func:`run_urban` writes the one an LLM run resolves (its brain options' ``tool_calling``,
    else ``$MLM_TOOL_CALLING``, else ``auto``) when it is not.

    Raises:
        ValueError: when ``reaction_minutes`` is negative or ``tool_calling`` not a choice.
    """
    if reaction_minutes < 0:
        raise ValueError(f"reaction_minutes must be >= 0, got {reaction_minutes}")
    config: UrbanConfig = {
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
    if reaction_minutes:
        config["reaction_minutes"] = int(reaction_minutes)
    if tools:
        config["tools"] = True
    if trip_importance != "creation":
        config["trip_importance"] = trip_importance
    if tool_calling is not None:
        config["tool_calling"] = _checked_tool_calling(tool_calling, "tool_calling")
    return config


def _checked_tool_calling(choice: str, where: str) -> str:
    if choice not in TOOL_CALLING_CHOICES:
        raise ValueError(
            f"{where} must be one of {', '.join(TOOL_CALLING_CHOICES)}, got {choice!r}"
        )
    return choice


def _tool_calling(
    config: Mapping[str, Any], options: Mapping[str, Any], where: str
) -> str:
    """How an LLM run calls tools: its config's setting, else the options', else the environment's.

    Raises:
        ValueError: naming ``where`` (the config) when the options ask for another setting
            than the config holds.
    """
    saved, given = config.get("tool_calling"), options.get("tool_calling")
    if saved is not None and given is not None and given != saved:
        raise ValueError(
            f"{where}: tool_calling is {saved!r}, the brain options ask for {given!r}; "
            "a run keeps the tool calling it was started with"
        )
    choice = saved or given or environment_options().get("tool_calling") or "auto"
    return _checked_tool_calling(str(choice), f"{where}: tool_calling")


def run_urban(
    out: str | Path,
    config: UrbanConfig,
    *,
    overwrite: bool = False,
    progress: bool = True,
    brain_options: BrainOptions | None = None,
    stop_after_day: int | None = None,
) -> UrbanRunResult:
    """Run the urban model day by day into the run directory ``out``.

    Args:
        out: Run directory to create.
        config: As built by :func:`urban_config`.
        overwrite: Replace an earlier run in ``out``.
        progress: Show a progress bar (simulated minutes).
        brain_options: Extra :func:`~mesa_llm_mobility.cognition.make_brain` options for LLM
            brains (``api_base``, ``max_concurrency``, ...); never written to the config.
        stop_after_day: Stop after this day's tables and checkpoint are written, as an
            interrupted run would (continue with :func:`resume_urban`).

    Returns:
        The run directory, the summary and the plot files.

    Raises:
        RunDirectoryError: when ``out`` holds another run and ``overwrite`` is false.
        ValueError: for invalid model parameters (from the model), or ``brain_options``
            asking for another ``tool_calling`` than ``config``.
    """
    options = dict(brain_options or {})
    if _is_llm(config):
        options["tool_calling"] = _tool_calling(config, options, "config")
        config = {**config, "tool_calling": options["tool_calling"]}
    run = RunDirectory.create(out, dict(config), overwrite=overwrite)
    if _is_llm(config):
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
        tools=bool(config.get("tools", False)),
        brain_options=options,
        reaction_minutes=int(config.get("reaction_minutes", 0)),
        trip_importance=config.get("trip_importance", "creation"),
    )
    run.update_metadata({"memory": model.memory_store.run_metadata()})
    try:
        checkpoint_model(run, model, 0)
    except BaseException:
        model.close()
        raise
    return _run_days(run, model, progress=progress, stop_after_day=stop_after_day)


def resume_urban(
    run_dir: str | Path,
    *,
    progress: bool = True,
    brain_options: BrainOptions | None = None,
    stop_after_day: int | None = None,
) -> UrbanRunResult:
    """Continue a run from its latest good checkpoint to its last day.

    The model is unpickled from the checkpoint, its memory store is replaced by the
    checkpoint's snapshot, and a new brain is built from the run's config. An LLM brain appends
    to the run's ledger; the ledger's records of days after the checkpoint (a day that was
    under way when the run stopped) are taken out of it and answer the same requests again
    without calling the model. A forked run also replays its source's ledger. Tables and plots
    are written as :func:`run_urban` does. A finished run is only reported.

    Args:
        run_dir: The run directory.
        progress: Show a progress bar.
        brain_options: Extra :func:`~mesa_llm_mobility.cognition.make_brain` options
            (``api_base``, ...).
        stop_after_day: As in :func:`run_urban`.

    Returns:
        The run directory, the summary and the plot files.

    Raises:
        RunDirectoryError: If ``run_dir`` is not a run directory, has no usable checkpoint
            or its checkpoint has no memory snapshot.
        ValueError: If ``brain_options`` ask for another ``tool_calling`` than the run's
            config holds (a resumed LLM run calls tools as it was started to).
    """
    run = open_urban_run(run_dir)
    config = run.config
    latest = run.latest_checkpoint(skip_corrupt=True)
    if latest is None:
        raise RunDirectoryError(
            f"{run.path}: no usable checkpoint to resume from (see {run.checkpoints_dir})"
        )
    day, state = latest
    model: UrbanMobilityModel = state["model"]
    _restore_link_history(run, model, day)
    model.days = int(config["days"])
    if day >= model.days and (run.path / SUMMARY_FILE).is_file():
        logger.info("%s: finished (%d days); nothing to resume", run.path, model.days)
        return UrbanRunResult(
            run=run,
            summary=_run_summary(run, model),
            plots=sorted(run.plots_dir.glob("*.png")),
        )
    if model.minute < model.days * MINUTES_PER_DAY:
        model.running = True
    options = dict(brain_options or {})
    if _is_llm(config):
        options["tool_calling"] = _tool_calling(config, options, str(run.config_path))
    store = restore_memory(run, day, state, config["embedding"])
    if _is_llm(config):
        options.setdefault("ledger", run.ledger_path)
        options.setdefault("replay", _replay_after(run, day))
    try:
        model.attach(config["brain"], store, options)
    except BaseException:
        store.close()
        raise
    logger.info("resuming %s after day %d", run.path, day)
    return _run_days(run, model, progress=progress, stop_after_day=stop_after_day)


def fork_urban(
    source: str | Path,
    target: str | Path,
    *,
    from_day: int,
    changes: ForkChanges | None = None,
    overwrite: bool = False,
    progress: bool = True,
    brain_options: BrainOptions | None = None,
) -> UrbanRunResult:
    """Start a new run from the checkpoint of ``from_day`` of another, with changed parameters.

    The fork's tables hold the source's days up to ``from_day``; then it runs on with its own
    config. An LLM brain answers the requests its source already asked identically from the
    source's ledger, so re-running a day that nothing changed makes no calls.

    Args:
        source: The run to fork.
        target: The new run directory.
        from_day: Day of the source checkpoint to start from (0: the initial state).
        changes: Config values to change: ``brain`` (another brain setting), ``days`` (at
            least ``from_day``; more extends the run) and ``events`` (on or off from
            ``from_day`` on).
        overwrite: Replace an earlier run in ``target``.
        progress: Show a progress bar.
        brain_options: Extra brain options (``api_base``, ...).

    Returns:
        The fork's run directory, summary and plots.

    Raises:
        ValueError: For a change of another parameter, or ``days`` below ``from_day``.
        RunDirectoryError: If ``source`` is not a run or ``target`` is taken.
        CheckpointError: If the source has no good checkpoint of ``from_day``.
    """
    changes = dict(changes or {})
    unknown = sorted(set(changes) - FORKABLE)
    if unknown:
        raise ValueError(
            f"fork of {source}: cannot change {', '.join(map(repr, unknown))}; "
            f"forkable parameters: {', '.join(sorted(FORKABLE))}"
        )
    if "days" in changes and int(changes["days"]) < max(from_day, 1):
        raise ValueError(
            f"fork of {source}: days={changes['days']} is before from_day={from_day}"
        )
    if "brain" in changes:
        parse_brain_setting(str(changes["brain"]))
    snapshot = snapshot_dir(RunDirectory.open(source), from_day)
    if not snapshot.is_dir():
        raise RunDirectoryError(
            f"{snapshot}: memory snapshot of day {from_day} missing"
        )
    run = fork(
        source,
        target,
        from_day=from_day,
        config_changes=changes,
        overwrite=overwrite,
        copy_memory=False,  # resume_urban restores the snapshot of from_day
    )
    shutil.copytree(snapshot, snapshot_dir(run, from_day))
    if "events" in changes:
        state = run.read_checkpoint(from_day)
        model: UrbanMobilityModel = state["model"]
        events = load_run_scenario(run).events
        model.replace_events(events if changes["events"] else ())
        run.write_checkpoint(from_day, {**state, "model": model})
    return resume_urban(run.path, progress=progress, brain_options=brain_options)


def checkpoint_model(run: RunDirectory, model: UrbanMobilityModel, day: int) -> Path:
    """Checkpoint ``model`` after ``day``: memory snapshot first, then the pickled model.

    The memory store is flushed and its folder copied to ``checkpoints/day_<d>_memory/``
    (through a temporary folder, so a crash never leaves a partial snapshot under that name);
    then :meth:`RunDirectory.write_checkpoint` records the model, so an indexed checkpoint
    always has its snapshot.

    Args:
        run: The run directory.
        model: The model, between two days.
        day: Days completed (0: the initial state).

    Returns:
        The checkpoint file.
    """
    # the link rows of the days written are in tables/link_states: not in every checkpoint
    model.engine.link_history_stored_until = float(day * MINUTES_PER_DAY)
    snapshot = snapshot_memory(run, day, model.memory_store)
    return run.write_checkpoint(
        day, {"model": model, "day": day, "memory_snapshot": snapshot}
    )


def _run_summary(run: RunDirectory, model: UrbanMobilityModel) -> UrbanSummary:
    """The model's summary; LLM use from the whole ledger file (a resumed brain saw a part)."""
    summary = model.summary()
    if run.ledger_path.is_file():
        summary["llm"] = Ledger.summarize_file(run.ledger_path)
    return summary


def _restore_link_history(
    run: RunDirectory, model: UrbanMobilityModel, day: int
) -> None:
    """Give a model from a checkpoint the link rows of days 1..day back, from the tables."""
    if model.engine.link_history_stored_until is None or day < 1:
        return  # a checkpoint written before link rows were left out holds them all
    days = list(range(1, day + 1))
    stored = run.table_days("link_states")
    if not set(days) <= set(stored):
        raise RunDirectoryError(
            f"{run.tables_dir}: link_states of day(s) "
            f"{', '.join(str(d) for d in days if d not in stored)} missing; the day {day} "
            "checkpoint needs them"
        )
    model.engine.restore_link_history(run.read_table("link_states", days=days))


def _is_llm(config: Mapping[str, Any]) -> bool:
    return parse_brain_setting(str(config["brain"]))[0] == "llm"


def _replay_after(run: RunDirectory, day: int) -> ReplayIndex:
    """Replay index of the ledger records of days after ``day`` (see :func:`replay_after`)."""
    return replay_after(run, lambda record: record_tag(record, "day") > day)


def _run_days(
    run: RunDirectory,
    model: UrbanMobilityModel,
    *,
    progress: bool,
    stop_after_day: int | None,
) -> UrbanRunResult:
    """Run ``model`` from its current day boundary to its last day; close it."""
    try:
        with tqdm(
            total=model.days * MINUTES_PER_DAY,
            initial=model.minute,
            unit="min",
            disable=not progress,
            desc="urban run",
        ) as bar:
            for day in range(model.minute // MINUTES_PER_DAY + 1, model.days + 1):
                while model.running and model.minute < day * MINUTES_PER_DAY:
                    model.step()
                    bar.update(1)
                    if model.minute % 60 == 0:
                        bar.set_postfix(
                            day=day,
                            clock=format_hhmm(model.minute),
                            trips=model.trips_in_progress,
                        )
                _write_day(run, model, day)
                checkpoint_model(run, model, day)
                if stop_after_day is not None and stop_after_day <= day < model.days:
                    logger.info("%s: stopped after day %d", run.path, day)
                    return UrbanRunResult(
                        run=run,
                        summary=_run_summary(run, model),
                        plots=[],
                        finished=False,
                    )
        summary = _run_summary(run, model)
        run.write_table("memories", model.memories_frame())
        figures = _write_plots(run, model)
        _write_summary(run, summary)
    finally:
        model.close()
    return UrbanRunResult(run=run, summary=summary, plots=figures)


def _write_day(run: RunDirectory, model: UrbanMobilityModel, day: int) -> None:
    trips = model.trips_frame()
    run.write_table("trips", trips[trips["day"] == day].reset_index(drop=True), day=day)
    links = model.engine.link_states_frame(since=(day - 1) * MINUTES_PER_DAY)
    in_day = (links["time"] // MINUTES_PER_DAY + 1) == day
    run.write_table("link_states", links[in_day].reset_index(drop=True), day=day)
    for name, frame in (
        ("decisions", model.decisions_frame()),
        ("plans", model.plans_frame()),
        ("revisions", model.revisions_frame()),
        ("positions", model.positions_frame()),
        ("chats", model.conversations_frame()),
        ("tool_calls", model.tool_calls_frame()),
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
        model.town, model.link_states_frame(), plots.SNAPSHOT_TIMES, path=path
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
    (run.path / SUMMARY_FILE).write_text(text + "\n", encoding="utf-8")


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
