"""The trajectory model's parameters, declared once (:class:`TrajectoryParameters`).

The same object is :class:`~.model.TrajectoryModel`'s input (keyword arguments are accepted
too), a run's ``config.json``, the keys of ``mlm sweep traj --param``, the flags of
``mlm traj run`` and what ``mlm traj fork`` may change.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from mesa_llm_mobility.experiment.parameters import (
    Parameters,
    RunOptions,
    parameter,
)


@dataclass(frozen=True, kw_only=True)
class TrajectoryParameters(Parameters):
    """Parameters of a trajectory-generation run (TrajGenAgent on a history of stay points).

    Attributes:
        history: NumoSim folder, NumoSim stay file or schema file (or a loaded stay table).
        days: Dates to generate after the history (unused with a hold-out).
        start_date: First date to generate (none: the day after the history).
        hold_out: Hold out each individual's last days and generate those dates.
        timezone: Time zone of the history's times (none: the reader's default).
        durations: One duration decision per visit (the paper's worker), or per day (ours).
        alpha: The exploration gate of the location worker.
        peers: K of the similar-individual pool.
        kinematics: Distance-aware locations and travel times (false: the paper's ablation).
        colocation_weight: Weight of co-location in the peer matching (0: off).
    """

    model_name: ClassVar[str] = "trajectory"
    command: ClassVar[str] = "traj"
    model_class: ClassVar[str] = "mesa_llm_mobility.trajectory.model.TrajectoryModel"

    history: str | Path = parameter(
        "", "NumoSim folder, NumoSim stay file or schema file", loaded=True
    )
    days: int = parameter(
        7,
        "dates to generate after the history (unused with a hold-out)",
        unit="day",
        ge=0,
        forkable=True,
    )
    start_date: str | None = parameter(
        None, "first date to generate (none: the day after the history)"
    )
    hold_out: int = parameter(
        0,
        "hold out each individual's last N days and generate those dates",
        unit="day",
        ge=0,
    )
    timezone: str | None = parameter(
        None,
        "time zone of the history's times (none: Los Angeles for NumoSim, else UTC for "
        "naive times)",
    )
    durations: Literal["day", "visit"] = parameter(
        "visit",
        "one duration decision per visit (the paper's duration worker with its verifier), "
        "or one per day (ours: fewer calls)",
    )
    alpha: float = parameter(0.3, "exploration gate of the location worker", ge=0, le=1)
    peers: int = parameter(10, "K of the similar-individual pool", ge=1)
    kinematics: bool = parameter(
        True,
        "distance-aware locations and travel times from speed priors (the paper's method); "
        "false: its 'w/o kinematics' ablation (Tables VI-VII)",
    )
    colocation_weight: float = parameter(
        0.0,
        "weight of the co-location signal in the peer matching (0: off; the reference "
        "code's colocation_extract)",
        ge=0,
    )

    def check(self) -> None:
        """A history is given; the time zone and the start date are readable."""
        super().check()
        if isinstance(self.history, str) and not self.history.strip():
            raise ValueError("history: give a NumoSim folder or a stay-point file")
        if self.timezone is not None:
            try:
                zoneinfo.ZoneInfo(self.timezone)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                raise ValueError(
                    f"timezone {self.timezone!r} is not a known time zone "
                    "(e.g. America/Los_Angeles)"
                ) from None
        if self.start_date is not None:
            try:
                dt.date.fromisoformat(self.start_date)
            except ValueError:
                raise ValueError(
                    f"start_date must be a date (YYYY-MM-DD), got {self.start_date!r}"
                ) from None


@dataclass(frozen=True, kw_only=True)
class TrajectoryRunOptions(RunOptions):
    """How a trajectory run is carried out (none of it changes a result).

    Attributes:
        stays: Also write the generated stay points to this ``.parquet`` or ``.csv`` file.
    """

    model_name: ClassVar[str] = "trajectory"

    stays: str | None = parameter(
        None, "also write the generated stay points to this .parquet or .csv file"
    )
