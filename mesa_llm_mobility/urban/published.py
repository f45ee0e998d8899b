"""The published GATSim run (the paper's macroscopic experiment) as the urban model's tables.

The authors of GATSim published their three-day LLM run of section 4.4 in the prototype's
repository (https://github.com/qiliuchn/gatsim, Apache-2.0): ``gatsim/storage/experiment_2``.
:func:`import_published_run` reads it from a checkout (or any GATSim run folder) into the tables
our urban runs write, so every measure of :mod:`.macro` applies to it unchanged:

- ``trips``: person, origin, destination, mode, the links taken, planned and actual departure,
  target (work start) and actual arrival, admission at the door, travel, uncongested and delay
  minutes, lateness (:func:`~.published_movements.trips_frame`);
- ``traversals``: when each trip reached and left every link (for the equilibrium gap);
- ``positions``: every change of state; ``link_states``: the traffic on every link each minute;
- ``activities``: every stay at a facility; ``plans``: every day plan and the last day's
  revisions; ``reflections``; ``memories``: every concept node the personas kept;
- the population, mapped onto our population format (:mod:`.published_population`).

:func:`load_published_run` reads the compact copy shipped in the package
(``mesa_llm_mobility/urban/published_data/experiment_2``, Apache-2.0 with its ``NOTICE``), so
``mlm urban published`` works offline; ``mlm urban published --from <checkout> --write-data
<folder>`` rebuilds it. :func:`write_run_directory` stores the run as a saved urban run (one
table part per day), so what reads saved runs (snapshots, animations, the app) reads it too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.experiment.storage import write_json
from mesa_llm_mobility.urban.population import (
    parse_work_time,
    population_from_dict,
    validate_population,
)
from mesa_llm_mobility.urban.published_movements import (
    MINUTES_PER_DAY,
    PublishedDataError,
    activities_frame,
    dense_link_states,
    describe_minutes,
    link_states_frame,
    link_traversals,
    positions_frame,
    read_movements,
    read_run_meta,
    trips_frame,
    walk_trips,
)
from mesa_llm_mobility.urban.published_population import (
    memories_frame,
    plans_frame,
    population_from_profiles,
    read_profiles,
    reflections_frame,
    remembered_trips,
    town_differences,
)
from mesa_llm_mobility.urban.routing import NetworkIndex
from mesa_llm_mobility.urban.scenario import Scenario, load_scenario

logger = logging.getLogger(__name__)

REPOSITORY = "https://github.com/qiliuchn/gatsim"
"""Where the published run comes from (Apache-2.0)."""
SNAPSHOT_COMMIT = "c97164a769f9594e484dfa4555ba7411fea87f67"
"""The repository commit the shipped tables were built from."""
RUN_FOLDER = Path("gatsim") / "storage" / "experiment_2"
"""The macroscopic experiment's run folder inside a checkout."""
POPULATION_NAME = "population_gatsim"
"""The bundled population file holding the published run's people (``scenarios/<name>.json``)."""
TABLES = (
    "trips",
    "traversals",
    "positions",
    "link_states",
    "activities",
    "plans",
    "reflections",
    "memories",
)
"""The run's tables, in the order they are written."""
INFO_FILE = "info.json"


@dataclass
class PublishedRun:
    """A GATSim run as the urban model's tables.

    Attributes:
        tables: The tables of :data:`TABLES` by name (``link_states`` has rows with traffic
            only; :meth:`link_states` gives every link at every minute).
        population: The people in our population format (``{"name", "description",
            "people"}``).
        info: Where it comes from and what the import found: ``source``, ``simulation_name``,
            ``start_date``, ``days``, ``last_minute``, ``files``, ``missing_minutes``,
            ``population_notes``, ``town_differences``, ``memory_check``, ``teleports``,
            ``returned_without_links``.
    """

    tables: dict[str, pd.DataFrame]
    population: dict[str, Any]
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def trips(self) -> pd.DataFrame:
        """The trips table."""
        return self.tables["trips"]

    def link_states(self, scenario: Scenario | None = None) -> pd.DataFrame:
        """Every directed link at every recorded minute (zeros added where there was no traffic)."""
        index = NetworkIndex(scenario or load_scenario("nguyen_dupuis"))
        last = int(self.info.get("last_minute", 0))
        return dense_link_states(self.tables["link_states"], index, range(last + 1))

    @property
    def days(self) -> int:
        """Days the data covers (the last one may be partial)."""
        return int(self.info.get("days", 0))


def run_folder(path: str | Path) -> Path:
    """The run folder of a checkout (``gatsim/storage/experiment_2``) or the folder itself.

    Raises:
        PublishedDataError: If neither holds a ``meta.json``.
    """
    path = Path(path)
    if (path / "meta.json").is_file():
        return path
    if (path / RUN_FOLDER / "meta.json").is_file():
        return path / RUN_FOLDER
    raise PublishedDataError(
        f"{path}: not a GATSim checkout (no {RUN_FOLDER}/meta.json) nor a GATSim run folder "
        "(no meta.json)"
    )


def _checkout_of(folder: Path) -> Path | None:
    root = folder.parent.parent.parent
    return root if (root / "gatsim" / "map").is_dir() else None


def import_published_run(
    path: str | Path,
    *,
    scenario: Scenario | str = "nguyen_dupuis",
    allow_missing: bool = False,
) -> PublishedRun:
    """Read a GATSim run (by default the paper's experiment 2) into the urban model's tables.

    Args:
        path: A checkout of the prototype's repository, or a run folder (``meta.json``,
            ``movements/``, ``personas/``).
        scenario: The town to map it on (its names must cover every place the run visits).
        allow_missing: Read a run with missing movement files; they are listed in
            ``info["missing_minutes"]`` and nothing is interpolated.

    Returns:
        The run.

    Raises:
        PublishedDataError: One line naming the file (and persona, field) of the first problem.
    """
    town = load_scenario(scenario) if isinstance(scenario, str | Path) else scenario
    index = NetworkIndex(town)
    folder = run_folder(path)
    checkout = _checkout_of(folder)
    meta = read_run_meta(folder)
    places = set(town.nodes) | set(town.facilities) | set(index.by_name)
    movements = read_movements(meta, places, allow_missing=allow_missing)
    facilities = set(town.facilities)
    walks = {
        name: walk_trips(movements.segments[name], name, facilities)
        for name in meta.personas
    }
    profiles = read_profiles(folder, meta.personas)
    targets = {
        name: (str(p["work_facility"]), *parse_work_time(str(p["work_time"])))
        for name, p in profiles.items()
        if p.get("work_facility") and p.get("work_time")
    }
    trips = trips_frame(walks, index, targets, movements.missing)
    returned = trips[trips["path"].map(len) == 0]
    trips = trips[trips["path"].map(len) > 0].reset_index(drop=True)
    traversals = link_traversals(walks, index)
    traversals = traversals[traversals["trip_id"].isin(trips["trip_id"])].reset_index(
        drop=True
    )
    last = meta.step - 1
    memories = memories_frame(folder, meta.personas, meta.start)
    mapped = population_from_profiles(
        profiles,
        checkout,
        name=POPULATION_NAME,
        description=(
            "The 60 adults and 10 children of the GATSim prototype's macroscopic experiment "
            f"(experiment_2), from {REPOSITORY} (Apache-2.0, commit {SNAPSHOT_COMMIT[:7]}), "
            "mapped onto this package's population format by "
            "mesa_llm_mobility.urban.published (see its population_notes)."
        ),
    )
    tables = {
        "trips": trips,
        "traversals": traversals,
        "positions": positions_frame(movements.segments, index),
        "link_states": link_states_frame(movements.segments, traversals, index, last),
        "activities": activities_frame(movements.segments, walks, facilities),
        "plans": plans_frame(profiles, folder, meta.start),
        "reflections": reflections_frame(profiles, folder, meta.start),
        "memories": memories,
    }
    info = {
        "source": REPOSITORY,
        "licence": "Apache-2.0",
        "run_folder": str(RUN_FOLDER),
        "simulation_name": meta.name,
        "start_date": meta.start.strftime("%Y-%m-%d"),
        "days": last // MINUTES_PER_DAY + 1,
        "last_minute": last,
        "files": movements.files,
        "missing_minutes": movements.missing,
        "population_notes": mapped.notes,
        "town_differences": []
        if checkout is None
        else town_differences(checkout, town),
        "memory_check": memory_check(trips, remembered_trips(memories, meta.start)),
        "teleports": [
            [name, *move] for name, walk in walks.items() for move in walk.teleports
        ],
        "returned_without_links": [
            [row.agent, row.origin, row.departure] for row in returned.itertuples()
        ],
    }
    population = population_from_dict(mapped.data, POPULATION_NAME)
    validate_population(population, town)
    return PublishedRun(tables, mapped.data, info)


def memory_check(trips: pd.DataFrame, remembered: pd.DataFrame) -> dict[str, int]:
    """How the trips found in the movements agree with the trips the personas remember.

    ``exact``: a remembered trip with the same person, departure, origin, destination and
    minutes; ``later_start``: same person, arrival, origin and destination, but the memory
    counts from a later departure (the prototype times a trip from its activity's departure time,
    which a revision under way moves); ``unmatched``: neither.
    """
    done = trips[trips["arrival"].notna()]
    exact_keys = {
        (r.agent, int(r.departure), r.origin, r.destination, int(r.travel_time))
        for r in done.itertuples()
    }
    arrival_keys = {
        (r.agent, int(r.arrival), r.origin, r.destination) for r in done.itertuples()
    }
    counts = {
        "remembered": len(remembered),
        "exact": 0,
        "later_start": 0,
        "unmatched": 0,
    }
    for r in remembered.itertuples():
        if (r.agent, r.start, r.origin, r.destination, r.minutes) in exact_keys:
            counts["exact"] += 1
        elif (r.agent, r.start + r.minutes, r.origin, r.destination) in arrival_keys:
            counts["later_start"] += 1
        else:
            counts["unmatched"] += 1
    return counts


# ----------------------------------------------------------------------------- files
def bundled_folder() -> Path:
    """The folder of the shipped tables (``mesa_llm_mobility/urban/published_data/experiment_2``)."""
    return Path(
        str(
            resources.files("mesa_llm_mobility.urban")
            / "published_data"
            / "experiment_2"
        )
    )


def write_published_tables(run: PublishedRun, folder: str | Path) -> list[Path]:
    """Write the run as compact files: one zstd parquet per table, ``info.json``, the population.

    Returns:
        The files written.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in TABLES:
        frame = run.tables[name].copy()
        if name == "trips":
            frame["path"] = frame["path"].map(list)
        path = folder / f"{name}.parquet"
        frame.to_parquet(path, index=False, compression="zstd", compression_level=19)
        written.append(path)
    write_json(folder / INFO_FILE, run.info)
    write_json(folder / "population.json", run.population)
    written += [folder / INFO_FILE, folder / "population.json"]
    return written


def read_published_tables(folder: str | Path) -> PublishedRun:
    """Read tables written by :func:`write_published_tables`.

    Raises:
        PublishedDataError: For a missing or unreadable file.
    """
    folder = Path(folder)
    tables = {}
    for name in TABLES:
        path = folder / f"{name}.parquet"
        try:
            frame = pd.read_parquet(path)
        except (OSError, ValueError) as error:
            raise PublishedDataError(
                f"{path}: cannot read the table ({error})"
            ) from None
        if name == "trips":
            frame["path"] = frame["path"].map(
                lambda links: tuple(str(x) for x in links)
            )
        tables[name] = frame
    info, population = (
        _read_json_file(folder / INFO_FILE),
        _read_json_file(folder / "population.json"),
    )
    return PublishedRun(tables, population, info)


def _read_json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise PublishedDataError(f"{path}: cannot read ({error})") from None


def load_published_run() -> PublishedRun:
    """The published run from the tables shipped in the package (offline)."""
    return read_published_tables(bundled_folder())


def write_run_directory(
    run: PublishedRun, out: str | Path, *, overwrite: bool = False
) -> RunDirectory:
    """Store the published run as a saved urban run: ``config.json`` and per-day table parts.

    The metadata names the model ``urban``; the config the town ``nguyen_dupuis``, the population file
    written next to it and the days; ``metadata.json`` says where the data comes from. Tables:
    ``trips``, ``positions``, ``link_states`` (every link, every minute), ``plans``,
    ``activities`` and ``reflections`` per day; ``memories`` and ``traversals`` whole. It has no
    checkpoints (it cannot be resumed: the prototype's agents are not ours).

    Returns:
        The run directory.
    """
    out = Path(out)
    population_path = out / "population.json"
    config = {
        "source": "published",
        "days": run.days,
        "brain": f"published:{run.info.get('simulation_name', 'gatsim')}",
        "seed": None,
        "scenario": "nguyen_dupuis",
        "population": str(population_path),
        "events": False,
        "start_date": run.info.get("start_date", "2025-03-10"),
    }
    directory = RunDirectory.create(
        out, config, model="urban", overwrite=overwrite, extra={"published": run.info}
    )
    write_json(population_path, run.population)
    dense = run.link_states()
    for name, frame in (
        ("trips", run.tables["trips"]),
        ("positions", run.tables["positions"]),
        (
            "link_states",
            dense.assign(day=(dense["time"] // MINUTES_PER_DAY + 1).astype(int)),
        ),
        ("plans", run.tables["plans"]),
        ("activities", run.tables["activities"]),
        ("reflections", run.tables["reflections"]),
    ):
        for day, part in frame.groupby("day", sort=True):
            directory.write_table(name, part.reset_index(drop=True), day=int(day))
    directory.write_table("memories", run.tables["memories"])
    directory.write_table("traversals", run.tables["traversals"])
    return directory


def summary_lines(run: PublishedRun) -> list[str]:
    """What the import found, one line each (source, minutes, checks, mapping notes)."""
    info: Mapping[str, Any] = run.info
    missing = info.get("missing_minutes") or []
    check = info.get("memory_check") or {}
    lines = [
        (
            f"source: {info.get('source')} ({info.get('licence')}), {info.get('run_folder')} "
            f"({info.get('simulation_name')}), from {info.get('start_date')}"
        ),
        f"minutes 0-{info.get('last_minute')} ({info.get('days')} days, the last partial); "
        + (
            f"missing: {describe_minutes(missing)} (not interpolated)"
            if missing
            else "no minute missing"
        ),
        (
            f"trips {len(run.trips)} ({int(run.trips['arrival'].notna().sum())} arrived) of "
            f"{run.trips['agent'].nunique()} travellers"
        ),
        (
            f"memory check: of {check.get('remembered', 0)} trips the personas remember, "
            f"{check.get('exact', 0)} match a trip exactly, {check.get('later_start', 0)} are "
            f"timed from a later departure, {check.get('unmatched', 0)} match none"
        ),
    ]
    for note in info.get("town_differences") or []:
        lines.append(f"town: {note}")
    for note in info.get("population_notes") or []:
        lines.append(f"population: {note}")
    return lines
