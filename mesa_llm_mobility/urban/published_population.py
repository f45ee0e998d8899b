"""The people, plans, reflections and memories of a GATSim run, and its town against ours.

The prototype keeps each persona's profile, day plans, plan revisions and daily reflections in
``personas/<name>/short_term_memory.json`` and its concept nodes (events, thoughts, chats) in
``long_term_memory.json``. Here they become the urban model's tables and population format:

- :func:`read_profiles`: the profiles, checked field by field (one-line
  :class:`~.published_movements.PublishedDataError` naming the file and field).
- :func:`population_from_profiles`: our population file (households, vehicles, children), with
  every change the mapping needed listed (:attr:`MappedPopulation.notes`): the prototype simulates
  adults only and names the children in ``other_family_members``; their profiles come from the
  checkout's ``create_population/population_info_complete.json`` when present.
- :func:`plans_frame`, :func:`reflections_frame`, :func:`memories_frame`: the urban model's
  plans and memories tables, and the reflections of every plan and day.
- :func:`town_differences`: the prototype's map (``gatsim/map``) against a scenario of ours,
  field by field.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from mesa_llm_mobility.urban import outputs
from mesa_llm_mobility.urban.metro import train_departure
from mesa_llm_mobility.urban.population import ADULT_AGE, MAX_FRIENDS
from mesa_llm_mobility.urban.published_movements import (
    PublishedDataError,
    load_json,
    minutes_since,
    parse_time,
)
from mesa_llm_mobility.urban.scenario import Scenario

PROFILE_FIELDS = (
    "name",
    "age",
    "gender",
    "family_role",
    "licensed_driver",
    "work_facility",
    "work_time",
    "occupation",
    "preferences_in_transportation",
    "innate",
    "lifestyle",
    "home_facility",
    "number_of_vehicles_in_family",
    "household_income",
    "friends",
    "other_description",
    "other_family_members",
)
"""Profile fields the import needs from each ``short_term_memory.json``."""
COMPLETE_POPULATION = Path("create_population") / "population_info_complete.json"
"""The prototype's population file with the children, relative to a checkout."""


def persona_folder(run: Path, name: str) -> Path:
    """``<run>/personas/<name>``."""
    return run / "personas" / name


def read_profiles(run: Path, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Every persona's ``short_term_memory.json``, checked for the profile fields.

    Raises:
        PublishedDataError: For a missing or unreadable file or a missing field.
    """
    profiles = {}
    for name in names:
        path = persona_folder(run, name) / "short_term_memory.json"
        data = load_json(path)
        if not isinstance(data, dict):
            raise PublishedDataError(f"{path}: expected a JSON object")
        for key in PROFILE_FIELDS:
            if key not in data:
                raise PublishedDataError(f"{path}: missing field {key!r}")
        if data["name"] != name:
            raise PublishedDataError(
                f"{path}: field 'name' is {data['name']!r}, expected {name!r}"
            )
        profiles[name] = data
    return profiles


# ----------------------------------------------------------------------------- population
@dataclass
class MappedPopulation:
    """Our population file's content and what the mapping changed.

    Attributes:
        data: ``{"name", "description", "people": [...]}`` (see
            :func:`~mesa_llm_mobility.urban.population.population_from_dict`).
        notes: One sentence per change (a friend outside the population dropped, a household
            income unified, a child's age unknown, ...).
    """

    data: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def _children_profiles(checkout: Path | None) -> dict[str, dict[str, Any]]:
    if checkout is None:
        return {}
    path = checkout / COMPLETE_POPULATION
    if not path.is_file():
        return {}
    data = load_json(path)
    if not isinstance(data, dict):
        raise PublishedDataError(f"{path}: expected an object of profiles by name")
    return {
        name: profile
        for name, profile in data.items()
        if isinstance(profile, dict)
        and isinstance(profile.get("age"), int)
        and profile["age"] < ADULT_AGE
    }


def _households(profiles: Mapping[str, Mapping[str, Any]]) -> list[list[str]]:
    """Adults grouped by family (``other_family_members`` names), in file order."""
    seen: dict[str, int] = {}
    groups: list[list[str]] = []
    for name, profile in profiles.items():
        family = [
            member
            for member in (profile.get("other_family_members") or {}).values()
            if member in profiles
        ]
        known = next((seen[m] for m in [name, *family] if m in seen), None)
        if known is None:
            known = len(groups)
            groups.append([])
        for member in (name, *family):
            if member not in seen:
                seen[member] = known
                groups[known].append(member)
    return groups


def _person(
    profile: Mapping[str, Any], household: str, vehicles: int, income: str, home: str
) -> dict[str, Any]:
    child = profile["age"] < ADULT_AGE
    income = "middle" if income == "medium" else income
    return {
        "name": profile["name"],
        "gender": profile["gender"],
        "age": profile["age"],
        "family_role": profile["family_role"],
        "household": household,
        "household_vehicles": vehicles,
        "licensed_driver": bool(profile["licensed_driver"]) and not child,
        "work_facility": None if child else profile["work_facility"],
        "occupation": profile["occupation"],
        "work_time": None if child else profile["work_time"],
        "preferences_in_transportation": profile["preferences_in_transportation"],
        "innate": profile["innate"],
        "lifestyle": profile["lifestyle"],
        "home_facility": home,
        "household_income": income,
        "friends": list(profile.get("friends") or []),
        "other_description": profile.get("other_description", ""),
    }


def population_from_profiles(
    profiles: Mapping[str, Mapping[str, Any]],
    checkout: Path | None,
    *,
    name: str,
    description: str,
) -> MappedPopulation:
    """Our population format from the prototype's adult profiles and its children.

    Households are the families the profiles name; a household's vehicles, income and home are
    its first member's (differences noted). Children are taken from the checkout's complete
    population file (``None``: children are named only, with age 9 noted as assumed); a child is
    not a worker and not licensed. Friends outside the population are dropped (noted), and more
    than :data:`~mesa_llm_mobility.urban.population.MAX_FRIENDS` are cut (noted).
    """
    notes: list[str] = []
    children = _children_profiles(checkout)
    people: list[dict[str, Any]] = []
    for number, members in enumerate(_households(profiles), start=1):
        household = f"H{number:02d}"
        first = profiles[members[0]]
        vehicles = int(first["number_of_vehicles_in_family"])
        income = str(first["household_income"])
        home = str(first["home_facility"])
        kids: list[str] = []
        for member in members:
            profile = profiles[member]
            for key, value, own in (
                (
                    "number_of_vehicles_in_family",
                    vehicles,
                    profile["number_of_vehicles_in_family"],
                ),
                ("household_income", income, profile["household_income"]),
                ("home_facility", home, profile["home_facility"]),
            ):
                if own != value:
                    notes.append(
                        f"{member}: {key} {own!r} differs from {members[0]}'s {value!r} in the "
                        f"same family; the household takes {value!r}"
                    )
            people.append(_person(profile, household, vehicles, income, home))
            for role, kid in (profile.get("other_family_members") or {}).items():
                if (
                    role in ("son", "daughter")
                    and kid not in profiles
                    and kid not in kids
                ):
                    kids.append(kid)
        for kid in kids:
            profile = children.get(kid)
            if profile is None:
                role = next(
                    r
                    for m in members
                    for r, k in (profiles[m].get("other_family_members") or {}).items()
                    if k == kid
                )
                profile = {
                    "name": kid,
                    "age": 9,
                    "gender": "male" if role == "son" else "female",
                    "family_role": role,
                    "licensed_driver": False,
                    "work_facility": None,
                    "work_time": None,
                    "occupation": "student",
                    "preferences_in_transportation": "travels with the parents",
                    "innate": "",
                    "lifestyle": "",
                    "friends": [],
                    "other_description": "",
                }
                notes.append(f"{kid}: no published profile; age 9 assumed (a child)")
            people.append(_person(profile, household, vehicles, income, home))
    names = {person["name"] for person in people}
    for person in people:
        kept = [f for f in person["friends"] if f in names and f != person["name"]]
        dropped = [f for f in person["friends"] if f not in kept]
        if dropped:
            notes.append(
                f"{person['name']}: friend(s) {', '.join(dropped)} not in the population, "
                "dropped"
            )
        if len(kept) > MAX_FRIENDS:
            notes.append(
                f"{person['name']}: {len(kept)} friends, the first {MAX_FRIENDS} kept"
            )
            kept = kept[:MAX_FRIENDS]
        person["friends"] = kept
    data = {"name": name, "description": description, "people": people}
    return MappedPopulation(data, notes)


# ----------------------------------------------------------------------------- plans
PLAN_COLUMNS = outputs.PLAN_COLUMNS
"""Columns of :func:`plans_frame` (the urban model's plans table)."""


def _minute_of(start: dt.datetime, text: Any, where: str) -> int:
    return minutes_since(start, parse_time(text, where))


def _reflect_every(value: Any) -> int:
    if isinstance(value, int):
        return value
    text = str(value).strip().lower()
    return int(text) if text.isdigit() else -1


def plans_frame(
    profiles: Mapping[str, Mapping[str, Any]], run: Path, start: dt.datetime
) -> pd.DataFrame:
    """Every stored day plan (``plan``) and revision (``revision``) as the urban plans table.

    The prototype keeps every day plan (``original_plans``) but revisions (``revised_plans``)
    only since the last day's start. ``departure_time`` is ``"HH:MM"`` or empty for "none" (leave
    on arrival); ``reflect_every`` is -1 for "none".
    """
    rows = []
    for agent, profile in profiles.items():
        path = persona_folder(run, agent) / "short_term_memory.json"
        for source, key in (("plan", "original_plans"), ("revision", "revised_plans")):
            for k, entry in enumerate(profile.get(key) or []):
                where = f"{path}: {key}[{k}]"
                if not isinstance(entry, dict) or not isinstance(
                    entry.get("plan"), list
                ):
                    raise PublishedDataError(
                        f"{where}: expected an object with a 'plan' list"
                    )
                minute = _minute_of(
                    start, entry.get("datetime"), f"{where}: field 'datetime'"
                )
                for position, activity in enumerate(entry["plan"]):
                    if not isinstance(activity, list) or len(activity) != 6:
                        raise PublishedDataError(
                            f"{where}: activity {position} is not a list of 6 fields"
                        )
                    facility, leave, every, mode, route, text = activity
                    leave = "" if str(leave).lower() == "none" else str(leave)
                    rows.append(
                        (
                            minute // 1440 + 1,
                            minute % 1440,
                            agent,
                            source,
                            position,
                            str(facility),
                            leave,
                            str(mode),
                            str(route),
                            _reflect_every(every),
                            str(text),
                        )
                    )
    return pd.DataFrame(rows, columns=list(PLAN_COLUMNS))


REFLECTION_COLUMNS = ("agent_id", "day", "minute", "kind", "text")
"""Columns of :func:`reflections_frame`."""


def reflections_frame(
    profiles: Mapping[str, Mapping[str, Any]], run: Path, start: dt.datetime
) -> pd.DataFrame:
    """The reflection of every day plan (``plan``), revision (``revision``) and day (``daily``)."""
    rows = []
    for agent, profile in profiles.items():
        path = persona_folder(run, agent) / "short_term_memory.json"
        for kind, key in (
            ("plan", "original_plans"),
            ("revision", "revised_plans"),
            ("daily", "daily_reflections"),
        ):
            for k, entry in enumerate(profile.get(key) or []):
                where = f"{path}: {key}[{k}]"
                if not isinstance(entry, dict):
                    raise PublishedDataError(f"{where}: expected an object")
                minute = _minute_of(
                    start, entry.get("datetime"), f"{where}: field 'datetime'"
                )
                rows.append(
                    (
                        agent,
                        minute // 1440 + 1,
                        minute % 1440,
                        kind,
                        str(entry.get("reflection", "")),
                    )
                )
    return pd.DataFrame(rows, columns=list(REFLECTION_COLUMNS))


MEMORY_COLUMNS = (*outputs.MEMORY_COLUMNS, "keywords")
"""Columns of :func:`memories_frame` (the urban memories table plus ``keywords``)."""


def memories_frame(run: Path, names: Sequence[str], start: dt.datetime) -> pd.DataFrame:
    """Every persona's concept nodes as the urban memories table (minutes since the start).

    The prototype's ``thought`` nodes are reflections (``type`` ``reflection`` here); embeddings
    are not kept.
    """
    rows = []
    for agent in names:
        path = persona_folder(run, agent) / "long_term_memory.json"
        data = load_json(path)
        nodes = data.get("concept_nodes") if isinstance(data, dict) else None
        if not isinstance(nodes, list):
            raise PublishedDataError(f"{path}: expected an object with 'concept_nodes'")
        for k, node in enumerate(nodes):
            where = f"{path}: concept_nodes[{k}]"
            if not isinstance(node, dict) or "content" not in node:
                raise PublishedDataError(
                    f"{where}: expected a concept node with 'content'"
                )
            created = _iso_minutes(
                start, node.get("created"), f"{where}: field 'created'"
            )
            expiration = _iso_minutes(
                start, node.get("expiration"), f"{where}: field 'expiration'"
            )
            kind = str(node.get("type", ""))
            rows.append(
                (
                    agent,
                    str(node.get("id", k)),
                    "reflection" if kind == "thought" else kind,
                    str(node["content"]),
                    float(node.get("importance") or 0.0),
                    created,
                    expiration,
                    ", ".join(str(w) for w in node.get("keywords") or []),
                )
            )
    return pd.DataFrame(rows, columns=list(MEMORY_COLUMNS))


def _iso_minutes(start: dt.datetime, text: Any, where: str) -> float:
    if text is None:
        return math.nan
    try:
        when = dt.datetime.fromisoformat(str(text)).replace(tzinfo=dt.UTC)
    except ValueError:
        raise PublishedDataError(f"{where}: {text!r} is not an ISO time") from None
    return (when - start).total_seconds() / 60.0


TRIP_MEMORY = re.compile(
    r"^(?P<agent>.+?) travels from (?P<origin>.+?) to (?P<destination>.+?) by travel mode "
    r"(?P<mode>\w+); start time is \w+ (?P<start>\d{4}-\d\d-\d\d \d\d:\d\d); trip time is "
    r"(?P<minutes>-?\d+) minutes"
)
"""The prototype's event memory of a finished trip."""


def remembered_trips(memories: pd.DataFrame, start: dt.datetime) -> pd.DataFrame:
    """The trips the personas' memories record: agent, origin, destination, mode, start, minutes.

    The prototype writes one on every arrival; memories it forgot (expired) are not there.
    """
    rows = []
    for row in memories[memories["type"] == "event"].itertuples(index=False):
        match = TRIP_MEMORY.match(row.content)
        if match is None:
            continue
        when = dt.datetime.strptime(match["start"], "%Y-%m-%d %H:%M").replace(
            tzinfo=dt.UTC
        )
        rows.append(
            (
                match["agent"],
                match["origin"],
                match["destination"],
                match["mode"],
                minutes_since(start, when),
                int(match["minutes"]),
            )
        )
    columns = ["agent", "origin", "destination", "mode", "start", "minutes"]
    return pd.DataFrame(rows, columns=columns).drop_duplicates(ignore_index=True)


# ----------------------------------------------------------------------------- the town
def _near(a: float, b: float) -> bool:
    return math.isclose(float(a), float(b), abs_tol=1e-9)


def town_differences(checkout: Path, scenario: Scenario) -> list[str]:
    """Where the prototype's map (``gatsim/map`` of a checkout) differs from ``scenario``.

    Compares node coordinates, facility nodes, capacities and stays, road and metro links
    (endpoints, times, capacities, the metro's static wait), the metro timetable (the first
    train and headway of each line and direction, and the minutes between stops), the walking
    factor and the events file. Missing map files are reported, not raised.

    Returns:
        One sentence per difference (empty when the town is the same).
    """
    folder = checkout / "gatsim" / "map"
    found: list[str] = []

    def load(name: str) -> Any:
        path = folder / name
        if not path.is_file():
            found.append(f"gatsim/map/{name}: not in the checkout, not compared")
            return None
        return load_json(path)

    nodes = load("nodes_info.json") or {}
    for node, info in nodes.items():
        ours = scenario.nodes.get(node)
        if ours is None:
            found.append(f"node {node}: not in {scenario.name}")
        elif [ours.x, ours.y] != list(info.get("coord", [])):
            found.append(
                f"node {node}: at {info.get('coord')}, ours at [{ours.x:g}, {ours.y:g}]"
            )
    facilities = load("facilities_info.json") or {}
    node_of = {f: n for n, info in nodes.items() for f in info.get("facilities", [])}
    for name, info in facilities.items():
        ours = scenario.facilities.get(name)
        if ours is None:
            found.append(f"facility {name}: not in {scenario.name}")
            continue
        for what, theirs, mine in (
            ("node", node_of.get(name), ours.node),
            ("capacity", info.get("base_capacity"), ours.capacity),
            ("average stay", info.get("average_stay"), ours.average_stay),
        ):
            if theirs != mine and not (
                isinstance(theirs, int | float) and _near(theirs, mine)
            ):
                found.append(f"facility {name}: {what} {theirs}, ours {mine}")
    links = load("links_info.json") or {}
    metro = scenario.metro_link_names()
    for name, info in links.items():
        if info.get("type") == "road":
            road = scenario.road_links.get(name)
            if road is None:
                found.append(f"road link {name}: not in {scenario.name}")
                continue
            if sorted(info.get("endpoints", [])) != sorted(
                [road.from_node, road.to_node]
            ):
                found.append(
                    f"road link {name}: joins {info.get('endpoints')}, ours "
                    f"{[road.from_node, road.to_node]}"
                )
            for what, theirs, mine in (
                ("travel time", info.get("travel_time"), road.free_time),
                ("capacity", info.get("base_capacity"), road.capacity),
            ):
                if not _near(theirs, mine):
                    found.append(f"road link {name}: {what} {theirs}, ours {mine:g}")
        else:
            line_name = metro.get(name, (None, 0))[0]
            if line_name is None:
                found.append(f"metro link {name}: not in {scenario.name}")
                continue
            line = scenario.metro_lines[line_name]
            for what, theirs, mine in (
                ("travel time", info.get("travel_time"), line.travel_time),
                ("train capacity", info.get("base_capacity"), line.train_capacity),
                ("static wait", info.get("wait_time"), line.static_wait),
            ):
                if not _near(theirs, mine):
                    found.append(f"metro link {name}: {what} {theirs}, ours {mine:g}")
    found.extend(_timetable_differences(folder / "transit_schedule.csv", scenario))
    found.extend(_config_differences(checkout / "gatsim" / "config.py", scenario))
    events = load("events.json")
    if events is not None and len(events) != len(scenario.events):
        found.append(
            f"events: gatsim/map/events.json lists {len(events)}, {scenario.name} has "
            f"{len(scenario.events)} (run ours with events=False to match)"
        )
    return found


def _timetable_differences(path: Path, scenario: Scenario) -> list[str]:
    if not path.is_file():
        return [
            "gatsim/map/transit_schedule.csv: not in the checkout, the timetable not compared"
        ]
    first: dict[tuple[str, int, str], list[int]] = {}
    base: dt.date | None = None
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            when = parse_time(row.get("datetime"), f"{path}: field 'datetime'")
            base = base or when.date()
            minute = (when.date() - base).days * 1440 + when.hour * 60 + when.minute
            times = first.setdefault(
                (row["metro_line"], int(row["direction"]), row["node"]), []
            )
            if len(times) < 2:
                times.append(minute)
    found = []
    for line in scenario.metro_lines.values():
        for direction in (0, 1):
            stops = line.stops if direction == 0 else tuple(reversed(line.stops))
            for k, node in enumerate(stops[:-1]):
                times = first.get((line.name, direction, node))
                ours = train_departure(line, 0, 0, k)
                if not times:
                    found.append(
                        f"timetable: no train of {line.name} direction {direction} at {node}"
                    )
                    continue
                if times[0] != ours or (
                    len(times) > 1 and times[1] - times[0] != line.headway
                ):
                    found.append(
                        f"timetable: {line.name} direction {direction} at {node}: trains at "
                        f"{times[0]} (+{times[1] - times[0] if len(times) > 1 else '?'}), ours at "
                        f"{ours:g} (+{line.headway:g})"
                    )
    return found


_WALK_FACTOR = re.compile(r"^walk_time_factor\s*=\s*([0-9.]+)", re.MULTILINE)


def _config_differences(path: Path, scenario: Scenario) -> list[str]:
    if not path.is_file():
        return [
            "gatsim/config.py: not in the checkout, the walking factor not compared"
        ]
    match = _WALK_FACTOR.search(path.read_text(encoding="utf-8", errors="replace"))
    if match is None:
        return ["gatsim/config.py: no walk_time_factor, not compared"]
    if not _near(float(match.group(1)), scenario.walking_factor):
        return [f"walking factor: {match.group(1)}, ours {scenario.walking_factor:g}"]
    return []
