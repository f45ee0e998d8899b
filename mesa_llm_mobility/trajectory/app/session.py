"""What one browser session of the trajectory app looks at: real days, generated days, scores.

A :class:`TrajectorySession` holds an individual-level comparison: the **history** (the evidence
days the generator read), the **held-out** real days (when the history was split) and the
**generated** days, plus what the app derives from them once (the seven metrics, the detector
score of every generated day, the decisions and the LLM summary). Three ways to make one:

* :func:`synthetic_session`: a small seeded synthetic city (:func:`~..synth.synthesize`), each
  individual's last days held out, those dates generated with the chosen brain (offline with
  the rule brain; the app's default);
* :func:`history_session`: the same from a user's history (a NumoSim folder or a stay-point
  file, :func:`~..staypoints.read_history`);
* :func:`run_session`: a finished ``mlm traj run`` run directory, read back (its history
  read again from the path in its ``config.json``).

:func:`open_session` picks the right one for a path.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.settings import parse_brain_setting
from mesa_llm_mobility.experiment.lifecycle import LLM_SUMMARY_TABLE
from mesa_llm_mobility.experiment.run_directory import CONFIG_FILE, RunDirectory
from mesa_llm_mobility.trajectory.metrics import evaluate
from mesa_llm_mobility.trajectory.model import TrajectoryModel
from mesa_llm_mobility.trajectory.staypoints import (
    STAY_COLUMNS,
    StayPointError,
    local_dates,
    read_history,
    split_history,
)
from mesa_llm_mobility.trajectory.synth import synthesize

logger = logging.getLogger(__name__)

DETECTOR_SEED = 0
"""Seed of the realism detectors behind the day scores."""


@dataclass(frozen=True)
class SessionSettings:
    """How the app makes a session when it generates (synthetic city or a user's history).

    Attributes:
        individuals: People of the synthetic city.
        weeks: Weeks of synthetic history.
        hold_out: Each individual's last days held out and generated.
        seed: Seed of the city and of the generation.
        brain: ``"rules"`` or ``"llm:<model>"`` (connection from the ``MLM_*`` settings).
        temperature: LLM sampling temperature (ignored by the rule brain).
    """

    individuals: int = 30
    weeks: int = 3
    hold_out: int = 7
    seed: int = 0
    brain: str = "rules"
    temperature: float = 0.7


class TrajectorySession:
    """Real and generated days of a population, and what the app shows of them.

    Args:
        history: The evidence days (a stay-point table).
        held_out: The held-out real days of the generated dates (may be empty).
        generated: The generated days (a stay-point table).
        label: What the session is, for the page (``"synthetic city: 30 individuals ..."``).
        brain: The brain that generated (its name).
        decisions: The generation's ``decisions_frame()`` (may be empty for a saved run).
        llm_summary: The LLM ledger's summary (empty for the rule brain).
    """

    def __init__(
        self,
        history: pd.DataFrame,
        held_out: pd.DataFrame,
        generated: pd.DataFrame,
        *,
        label: str,
        brain: str,
        decisions: pd.DataFrame | None = None,
        llm_summary: pd.DataFrame | None = None,
    ) -> None:
        self.history = _stays(history)
        self.held_out = _stays(held_out)
        self.generated = _stays(generated)
        self.label = label
        self.brain = brain
        self.decisions = decisions if decisions is not None else pd.DataFrame()
        self.llm_summary = llm_summary if llm_summary is not None else pd.DataFrame()

    @property
    def reference(self) -> pd.DataFrame:
        """The real days the generated ones are measured against: held out, else the history."""
        return self.held_out if len(self.held_out) else self.history

    @property
    def reference_name(self) -> str:
        """``"held-out days"`` or ``"history"``: what :attr:`reference` is."""
        return "held-out days" if len(self.held_out) else "history"

    @cached_property
    def real(self) -> pd.DataFrame:
        """Every real day: history and held out."""
        return (
            pd.concat([self.history, self.held_out], ignore_index=True)
            .sort_values(["agent_id", "start"], kind="stable")
            .reset_index(drop=True)
        )

    def individuals(self) -> list[Any]:
        """The individuals with generated days, sorted."""
        return sorted(self.generated["agent_id"].unique().tolist())

    @cached_property
    def pois(self) -> pd.DataFrame:
        """Every POI of the session's tables: ``poi_id, latitude, longitude, activity``.

        The activity is the one most often done there.
        """
        stays = pd.concat([self.real, self.generated], ignore_index=True)
        activity = (
            stays.groupby(["poi_id", "activity"]).size().rename("visits").reset_index()
        )
        activity = activity.sort_values(
            ["poi_id", "visits"], ascending=[True, False], kind="stable"
        ).drop_duplicates("poi_id")
        places = stays.drop_duplicates("poi_id")[["poi_id", "latitude", "longitude"]]
        return places.merge(activity[["poi_id", "activity"]], on="poi_id").sort_values(
            "poi_id", ignore_index=True
        )

    @cached_property
    def metrics(self) -> dict[str, float]:
        """The seven metrics of the generated days against :attr:`reference` (all individuals)."""
        return evaluate(self.reference, self.generated)

    @cached_property
    def day_scores(self) -> pd.DataFrame:
        """The realism detectors' score of every generated day (``agent_id, date, ...``)."""
        from mesa_llm_mobility.trajectory.realism import day_scores  # noqa: PLC0415

        return day_scores(self.real, self.generated, seed=DETECTOR_SEED)

    def summary(self) -> str:
        """One line: individuals, real and generated days, brain."""
        return (
            f"{len(self.individuals())} individuals; {_days(self.history)} history days, "
            f"{_days(self.held_out)} held out, {_days(self.generated)} generated "
            f"by {self.brain}"
        )


def _stays(frame: pd.DataFrame) -> pd.DataFrame:
    """The stay-point columns of a table, by individual and start."""
    return (
        frame[list(STAY_COLUMNS)]
        .sort_values(["agent_id", "start"], kind="stable")
        .reset_index(drop=True)
    )


def _days(stays: pd.DataFrame) -> int:
    """Daily trajectories of a table (individual x local start date)."""
    if stays.empty:
        return 0
    return int(stays.groupby(["agent_id", local_dates(stays)]).ngroups)


def generate_session(
    stays: pd.DataFrame, settings: SessionSettings, label: str
) -> TrajectorySession:
    """Hold out each individual's last days and generate those dates with the settings' brain.

    Args:
        stays: A valid stay-point table.
        settings: Hold-out days, seed, brain and temperature.
        label: What the stays are, for the page.

    Returns:
        The session.
    """
    split = split_history(stays, settings.hold_out)
    dates = sorted(set(local_dates(split.held_out))) if settings.hold_out else None
    options: dict[str, Any] = {}
    ledger = None
    if parse_brain_setting(settings.brain)[0] == "llm":
        ledger = Ledger()  # in memory: the page shows its summary
        options.update(temperature=float(settings.temperature), ledger=ledger)
    with TrajectoryModel(
        split.history,
        days=7,
        dates=dates,
        brain=settings.brain,
        brain_options=options,
        rng=settings.seed,
    ) as model:
        model.run()
        generated = model.trajectories_frame()
        decisions = model.decisions_frame()
        brain = model.brain.name
    return TrajectorySession(
        split.history,
        split.held_out,
        generated,
        label=label,
        brain=brain,
        decisions=decisions,
        llm_summary=ledger.summary() if ledger is not None else None,
    )


def synthetic_session(settings: SessionSettings | None = None) -> TrajectorySession:
    """A synthetic city's history, its last days held out and generated (offline by default).

    Args:
        settings: City size, weeks, hold-out, seed, brain (default :class:`SessionSettings`).

    Returns:
        The session.
    """
    settings = settings or SessionSettings()
    city = synthesize(settings.individuals, settings.weeks, seed=settings.seed)
    label = (
        f"synthetic city: {settings.individuals} individuals x {settings.weeks} weeks "
        f"(seed {settings.seed})"
    )
    return generate_session(city.stays, settings, label)


def history_session(
    path: str | Path, settings: SessionSettings | None = None
) -> TrajectorySession:
    """A user's history (NumoSim folder or stay-point file), its last days held out and generated.

    Raises:
        StayPointError: For a bad history file (the message names the file, row and field).
    """
    settings = settings or SessionSettings()
    return generate_session(read_history(path), settings, f"history {path}")


def run_session(path: str | Path) -> TrajectorySession:
    """A finished ``mlm traj run`` run directory, read back.

    The generated days are its ``trajectories`` table, the held-out days its ``held_out``
    table (when it held days out); the history is read again from its configuration's
    ``history`` path (as given, else relative to the run directory's folder) and split the same
    way.

    Raises:
        RunDirectoryError: When the folder is not a run directory.
        StayPointError: When it is not a trajectory run or its history cannot be read.
    """
    run = RunDirectory.open(path)
    config = run.config
    tables = run.table_names()
    if "trajectories" not in tables or "history" not in config:
        raise StayPointError(
            f"{run.path}: not a trajectory generation run (no trajectories table or "
            "history in config.json)"
        )
    history_path = Path(config["history"])
    if not history_path.exists() and (run.path.parent / history_path).exists():
        history_path = run.path.parent / history_path
    if not history_path.exists():
        raise StayPointError(
            f"{run.path / CONFIG_FILE}: field history: {config['history']} does not exist "
            "(the run's history was moved)"
        )
    stays = read_history(history_path, timezone=config.get("timezone"))
    hold_out = int(config.get("hold_out", 0))
    history = split_history(stays, hold_out).history if hold_out else stays
    held_out = (
        run.read_table("held_out") if "held_out" in tables else stays.iloc[:0].copy()
    )
    return TrajectorySession(
        history,
        held_out,
        run.read_table("trajectories"),
        label=f"run {run.path}",
        brain=str(run.metadata.get("extra", {}).get("brain", config.get("brain", "?"))),
        decisions=run.read_table("decisions") if "decisions" in tables else None,
        llm_summary=run.read_table(LLM_SUMMARY_TABLE).set_index("kind")
        if LLM_SUMMARY_TABLE in tables
        else None,
    )


def open_session(
    path: str | Path | None, settings: SessionSettings | None = None
) -> TrajectorySession:
    """A run directory (a folder with ``config.json``), a history path, or the synthetic city.

    Args:
        path: A run directory, a NumoSim folder or a stay-point file; ``None`` or ``""`` for
            the synthetic city.
        settings: How to generate (unused for a run directory).

    Returns:
        The session.

    Raises:
        StayPointError: When the path is missing or cannot be read (one line naming it).
    """
    settings = settings or SessionSettings()
    if not path:
        return synthetic_session(settings)
    path = Path(path)
    if not path.exists():
        raise StayPointError(f"{path}: no such run directory or history")
    if (path / CONFIG_FILE).is_file():
        return run_session(path)
    return history_session(path, settings)
