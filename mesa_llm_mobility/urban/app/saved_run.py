"""A run directory of ``mlm urban run``, opened read-only for replay in the app.

The scenario and the personas come from the run's day-0 checkpoint (the model as it started);
everything that happened comes from its tables, read once: ``link_states`` for congestion,
``positions`` for where every traveller was, ``trips``, ``plans``, ``revisions``, ``decisions``
and ``memories``. Nothing in the folder is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mesa_llm_mobility.experiment.run_directory import RunDirectory, RunDirectoryError
from mesa_llm_mobility.urban.app.town_view import (
    TRAVELLER_COLUMNS,
    TownView,
    empty_link_states,
    trips_by,
)
from mesa_llm_mobility.urban.decisions import PersonaFacts
from mesa_llm_mobility.urban.replay import open_urban_run
from mesa_llm_mobility.urban.scenario import Scenario

REPLAY_TABLES = ("link_states", "positions", "trips")
"""Tables a run needs for replay (runs written before ``positions`` existed cannot replay)."""


@dataclass
class SavedRun:
    """One urban run directory, read-only.

    Attributes:
        run: The run directory.
        scenario: The town (as the run used it: events off if the run had them off).
        personas: Every traveller's profile, by name.
    """

    run: RunDirectory
    scenario: Scenario
    personas: dict[str, PersonaFacts]
    _tables: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, path: str | Path) -> SavedRun:
        """Open an urban run directory for replay.

        Raises:
            RunDirectoryError: If ``path`` is not an urban run directory, or lacks its day-0
                checkpoint or a table replay needs (the message names the file).
        """
        run = open_urban_run(path)
        missing = [name for name in REPLAY_TABLES if name not in run.table_names()]
        if missing:
            raise RunDirectoryError(
                f"{run.tables_dir}: no {', '.join(missing)} table; the run has no day "
                "written yet, or was written by an older version (run it again)"
            )
        model = run.read_checkpoint(0)["model"]
        personas = {name: agent.persona for name, agent in model.travellers.items()}
        return cls(run=run, scenario=model.town, personas=personas)

    @property
    def path(self) -> Path:
        """The run directory."""
        return self.run.path

    @property
    def config(self) -> dict[str, Any]:
        """The run's ``config.json``."""
        return self.run.config

    def table(self, name: str) -> pd.DataFrame:
        """A table of the run (all days), read once; empty if the run has none of that name."""
        if name not in self._tables:
            self._tables[name] = (
                self.run.read_table(name)
                if name in self.run.table_names()
                else pd.DataFrame()
            )
        return self._tables[name]

    @cached_property
    def minutes(self) -> tuple[int, int]:
        """First and last step recorded (absolute minutes; the clock runs to ``last + 1``)."""
        times = self.table("link_states")["time"]
        return int(times.min()), int(times.max())

    @property
    def days(self) -> list[int]:
        """Days recorded."""
        return self.run.table_days("link_states")

    def view_at(self, minute: float) -> TownView:
        """The town at clock ``minute``: as the step before it left it (clipped to the run)."""
        first, last = self.minutes
        minute = int(min(max(minute, first), last + 1))
        step = max(minute - 1, first)
        times, table = self._links_in_time_order
        start, end = np.searchsorted(times, [step, step + 1])
        links = (
            table.iloc[start:end].reset_index(drop=True)
            if end > start
            else empty_link_states(self.scenario, step)
        )
        moves = self.table("positions")
        before = moves[moves["time"] <= step]
        travellers = (
            before.groupby("agent", sort=True)[["state", "place"]]
            .last()
            .reset_index()[TRAVELLER_COLUMNS]
        )
        return TownView(
            self.scenario,
            minute,
            links,
            travellers,
            trips_by(self.table("trips"), minute),
        )

    @cached_property
    def _links_in_time_order(self) -> tuple[np.ndarray, pd.DataFrame]:
        """The link table sorted by time, and its times (a minute's rows are one slice)."""
        frame = self.table("link_states").sort_values("time", kind="stable")
        return frame["time"].to_numpy(dtype=float), frame
