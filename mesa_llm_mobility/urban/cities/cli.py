"""``mlm urban import-osm`` and ``mlm urban import-gtfs``: real cities to scenario files.

The handlers import the importers (osmnx, osmium, gtfs-kit: the ``cities`` extra) when they
run, so that ``mlm --help`` and the other commands neither pay for nor need them.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

CITIES_EXTRA_HINT = 'pip install "mesa-llm-mobility[cities]"'


def add_urban_import_osm_command(urban_commands: Any) -> argparse.ArgumentParser:
    """Register ``mlm urban import-osm`` on the ``urban`` group's subparsers.

    Returns:
        The ``import-osm`` parser.
    """
    parser = urban_commands.add_parser(
        "import-osm",
        help="an OpenStreetMap extract (.osm, .xml, .osm.pbf) to a scenario JSON",
        description=(
            "Read a local OpenStreetMap extract (never a download) into an urban scenario: "
            "the drivable network simplified and consolidated, its largest strongly "
            "connected part, free-flow times and capacities from the road table, facilities "
            "from the tag table (or --facilities CSV), node coordinates. See docs/cities.md."
        ),
    )
    parser.add_argument("file", help="the .osm, .xml or .osm.pbf file")
    parser.add_argument("--out", required=True, help="scenario JSON to write")
    parser.add_argument(
        "--facilities",
        default=None,
        help="CSV of facilities (name,kind,lon,lat[,capacity,average_stay]) instead of "
        "the extract's tags",
    )
    parser.add_argument(
        "--name", default=None, help="scenario name (default: file stem)"
    )
    parser.add_argument(
        "--consolidate",
        type=float,
        default=40.0,
        metavar="METRES",
        help="merge intersections closer than this (default 40)",
    )
    parser.add_argument(
        "--max-snap",
        type=float,
        default=400.0,
        metavar="METRES",
        help="leave out facilities farther than this from the network (default 400)",
    )
    parser.add_argument(
        "--storage",
        action="store_true",
        help="give links a storage capacity (queues spill back upstream)",
    )
    parser.set_defaults(handler=_import_osm)
    return parser


def add_urban_import_gtfs_command(urban_commands: Any) -> argparse.ArgumentParser:
    """Register ``mlm urban import-gtfs`` on the ``urban`` group's subparsers.

    Returns:
        The ``import-gtfs`` parser.
    """
    parser = urban_commands.add_parser(
        "import-gtfs",
        help="add a GTFS feed's lines on a service day to a city scenario",
        description=(
            "Add the routes of a GTFS feed (.zip or folder), as they run on --date, to a "
            "scenario made by import-osm: stops snapped to its nodes, a regular timetable "
            "per line, vehicle capacity by route type. See docs/cities.md."
        ),
    )
    parser.add_argument("feed", help="the GTFS .zip or folder")
    parser.add_argument("--scenario", required=True, help="the city's scenario JSON")
    parser.add_argument(
        "--out", required=True, help="scenario JSON to write (may be --scenario)"
    )
    parser.add_argument(
        "--date", default=None, help="service day YYYY-MM-DD (default: the busiest)"
    )
    parser.add_argument(
        "--max-snap",
        type=float,
        default=300.0,
        metavar="METRES",
        help="leave out stops farther than this from the network (default 300)",
    )
    parser.set_defaults(handler=_import_gtfs)
    return parser


def _cities_module(name: str) -> Any:
    """The importer module ``name`` (heavy: osmnx, osmium, gtfs-kit), or a one-line error."""
    try:
        return importlib.import_module(f"mesa_llm_mobility.urban.cities.{name}")
    except ImportError as error:
        raise OSError(
            f"the city importers need the 'cities' extra ({error.name} is missing): "
            f"{CITIES_EXTRA_HINT}"
        ) from error


def _import_osm(args: argparse.Namespace) -> int:
    osm = _cities_module("osm")
    scenario = osm.import_osm(
        args.file,
        out=args.out,
        facilities_csv=args.facilities,
        name=args.name,
        consolidate_m=args.consolidate,
        max_snap_m=args.max_snap,
        storage=args.storage,
    )
    kinds: dict[str, int] = {}
    for facility in scenario.facilities.values():
        kinds[facility.kind] = kinds.get(facility.kind, 0) + 1
    homes = sum(f.capacity for f in scenario.facilities.values() if f.kind == "home")
    print(
        f"{args.out}: {len(scenario.nodes)} nodes, {len(scenario.road_links)} links, "
        f"{len(scenario.facilities)} facilities (homes for {homes} people)"
    )
    print("facilities: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    return 0


def _import_gtfs(args: argparse.Namespace) -> int:
    gtfs = _cities_module("gtfs")
    out = args.out
    scenario = gtfs.import_gtfs(
        args.feed, args.scenario, date=args.date, out=out, max_snap_m=args.max_snap
    )
    for line in scenario.metro_lines.values():
        print(
            f"{line.name}: {len(line.stops)} stops, every {line.headway:g} min "
            f"{line.service_start // 60:02.0f}:{line.service_start % 60:02.0f}-"
            f"{line.service_end // 60:02.0f}:{line.service_end % 60:02.0f}, "
            f"{line.travel_time:g} min between stops, {line.train_capacity} riders"
        )
    print(f"{out}: {len(scenario.metro_lines)} transit lines")
    return 0
