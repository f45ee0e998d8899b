"""A run directory of ``mlm urban run``, opened read-only for replay in the app.

The scenario and the personas come from the run's day-0 checkpoint (the model as it started).
A run without checkpoints (the published GATSim run of ``mlm urban published --run-dir``, whose
agents are not ours) takes its scenario from ``config.json`` (events off when the run had them
off) and its personas from the population file it holds (``population.json``), else from the
population its ``config.json`` names. Everything that happened comes from its tables, read once:
``link_states`` for congestion, ``positions`` for where every traveller was, ``trips``,
``plans``, ``revisions``, ``decisions``, ``memories`` (and ``reflections`` when it has them); a
table the run does not have reads as empty (:meth:`SavedRun.recorded` tells them apart). Nothing
in the folder is written.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mesa_llm_mobility.experiment.run_directory import RunDirectory, RunDirectoryError
from mesa_llm_mobility.urban.agents import personas_from_population
from mesa_llm_mobility.urban.app.town_view import (
    TRAVELLER_COLUMNS,
    TownView,
    empty_link_states,
    trips_by,
)
from mesa_llm_mobility.urban.decisions import PersonaFacts
from mesa_llm_mobility.urban.population import PopulationError, load_population
from mesa_llm_mobility.urban.replay import load_run_scenario, open_urban_run
from mesa_llm_mobility.urban.scenario import Scenario

REPLAY_TABLES = ("link_states", "positions", "trips")
"""Tables a run needs for replay (runs written before ``positions`` existed cannot replay)."""
POPULATION_FILE = "population.json"
"""The population file a run without checkpoints holds (``mlm urban published --run-dir``)."""


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
        if 0 in run.checkpoint_numbers():
            model = run.read_checkpoint(0)["model"]
            personas = {name: agent.persona for name, agent in model.travellers.items()}
            return cls(run=run, scenario=model.town, personas=personas)
        scenario = load_run_scenario(run)
        if run.config.get("events") is False:
            scenario = dataclasses.replace(scenario, events=())
        positions = run.read_table("positions")
        personas = personas_of_run(run, scenario, set(positions["agent"]))
        return cls(run, scenario, personas, {"positions": positions})

    @property
    def path(self) -> Path:
        """The run directory."""
        return self.run.path

    @property
    def config(self) -> dict[str, Any]:
        """The run's ``config.json``."""
        return self.run.config

    @property
    def published(self) -> dict[str, Any] | None:
        """What ``mlm urban published`` recorded of a published run's source, else None."""
        found = self.run.metadata.get("extra", {}).get("published")
        return found if isinstance(found, dict) else None

    @property
    def has_checkpoints(self) -> bool:
        """Whether the run has checkpoints (a run without any cannot be forked)."""
        return bool(self.run.checkpoint_numbers())

    def recorded(self, name: str) -> bool:
        """Whether the run has a table ``name`` (:meth:`table` reads a missing one as empty)."""
        return name in self.run.table_names()

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


def population_source(run: RunDirectory) -> str | Path:
    """Where a run without checkpoints has its people.

    Its own ``population.json``, else the population its ``config.json`` names (a file or a
    bundled name).

    Raises:
        RunDirectoryError: If it has neither (a synthesised population is not stored).
    """
    own = run.path / POPULATION_FILE
    if own.is_file():
        return own
    named = run.config.get("population")
    if not isinstance(named, str) or not named or named == "synthetic":
        raise RunDirectoryError(
            f"{run.config_path}: the run has no checkpoint 0 and no {POPULATION_FILE}, and "
            f"its 'population' ({named!r}) is no file to read its travellers from"
        )
    return named


def personas_of_run(
    run: RunDirectory, scenario: Scenario, travellers: set[str]
) -> dict[str, PersonaFacts]:
    """The profiles of a run's ``travellers`` from its population file, by name.

    Raises:
        RunDirectoryError: If the population cannot be read or lacks a traveller of the run
            (the message names the file and a few of the missing).
    """
    source = population_source(run)
    try:
        population = load_population(source, scenario)
    except PopulationError as error:
        first, *more = str(error).splitlines()
        raise RunDirectoryError(
            f"{run.config_path}: the run's population cannot be read: {first}"
            + (f" (and {len(more)} more)" if more else "")
        ) from None
    # a run of fewer travellers than its population kept whole households and cut family
    # and friends to the travellers kept (as the model's scale_personas does)
    personas = {
        persona.name: dataclasses.replace(
            persona,
            family=tuple(name for name in persona.family if name in travellers),
            friends=tuple(name for name in persona.friends if name in travellers),
        )
        for persona in personas_from_population(population, scenario.facilities)
        if persona.name in travellers
    }
    missing = sorted(travellers - set(personas))
    if missing:
        raise RunDirectoryError(
            f"{source}: {len(missing)} traveller(s) of the run's positions are not in the "
            f"population (first: {', '.join(missing[:3])})"
        )
    return personas
