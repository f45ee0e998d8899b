"""OpenStreetMap to an urban scenario: the drivable network and the facilities of a local file.

:func:`import_osm` reads an OSM extract (``.osm`` / ``.xml``, or ``.osm.pbf`` through osmium),
never downloads anything, and returns a validated :class:`~mesa_llm_mobility.urban.scenario.Scenario`
(and writes its JSON with ``out``):

1. **Drivable graph** (osmnx, ``graph_from_xml``): the ways of the classes in
   :data:`~.tables.ROAD_CLASSES` (and their ``_link`` ramps), one-way where OSM says so,
   **simplified** (chains of degree-2 nodes become one link) and **consolidated**
   (intersections within ``consolidate_m`` metres become one node), so the many short links of
   a raw OSM graph do not gridlock a point queue nor cost a minute step each; then the
   **largest strongly connected** part, so every node reaches every other.
2. **Links**: one one-way ``flow`` link (Vickrey point queue) per direction, free time from the
   way's ``maxspeed`` or its class's default speed, exit capacity lanes x the class's capacity per
   lane (:data:`~.tables.ROAD_CLASSES`); parallel links keep the fastest; no storage limit
   (spillback off) unless ``storage=True`` (7.5 m per vehicle and lane).
3. **Walking**: on the same links, at ``walking_factor`` = the median drive speed over 5 km/h
   (the scenario format has one factor).
4. **Facilities**: OSM nodes and ways with a tag of :data:`~.tables.FACILITY_TAGS`, each at
   its nearest network node (within ``max_snap_m``), with capacity and average stay by kind
   (:data:`~.tables.FACILITY_DEFAULTS`; homes by ``building:flats`` or ``building:levels``), or
   the rows of a user CSV (``name,kind,lon,lat[,capacity,average_stay]``). The facility of each
   shared kind (School, Gym, ...) nearest the city's centre is named by its kind and holds the
   kind's whole capacity: the rule brain sends school runs and leisure there.
5. **Nodes** keep their position in metres (the extract's UTM zone) and their longitude and
   latitude; a link that is not straight keeps its road's course (osmnx's edge ``geometry``,
   simplified to within :data:`GEOMETRY_TOLERANCE_M`, rounded to 0.1 m) as its ``geometry``,
   which maps draw.

Bad input raises :class:`CityImportError` (a ``ValueError``) naming the file and the element.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import re
import statistics
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import geopandas as gpd
import networkx as nx
import numpy as np
import osmium
import osmnx as ox
from scipy.spatial import cKDTree

from mesa_llm_mobility.urban.cities.tables import (
    FACILITY_DEFAULTS,
    FACILITY_KINDS,
    FACILITY_TAGS,
    HOME_DWELLINGS_PER_FLOOR,
    ROAD_CLASSES,
)
from mesa_llm_mobility.urban.scenario import Scenario, ScenarioError, scenario_from_dict

logger = logging.getLogger(__name__)

OSM_SUFFIXES = (".osm", ".xml", ".pbf")
"""File suffixes :func:`import_osm` reads (``.osm.pbf`` ends in ``.pbf``)."""
WALK_SPEED_KMH = 5.0
"""Walking speed that sets the scenario's walking factor."""
VEHICLE_LENGTH_M = 7.5
"""Road length one queued vehicle takes (storage capacity, with ``storage=True``)."""
GEOMETRY_TOLERANCE_M = 1.0
"""A link's road geometry is simplified to within this many metres (shapely ``simplify``)."""
SHARED_KINDS = FACILITY_KINDS[3:]
"""Kinds the rule brain visits by name (school runs, leisure): one facility each is named so."""


class CityImportError(ScenarioError):
    """An OSM or GTFS file cannot become a scenario; the message names the file and element."""


@dataclass(frozen=True, slots=True)
class FeatureFacility:
    """A facility found in the extract (or a user CSV), before it is placed on the network."""

    name: str
    kind: str
    lon: float
    lat: float
    capacity: int
    average_stay: float


def import_osm(
    path: str | Path,
    *,
    out: str | Path | None = None,
    facilities_csv: str | Path | None = None,
    name: str | None = None,
    consolidate_m: float = 40.0,
    max_snap_m: float = 400.0,
    storage: bool = False,
) -> Scenario:
    """Turn a local OpenStreetMap extract into a validated urban scenario.

    Args:
        path: ``.osm``, ``.xml`` or ``.osm.pbf`` file.
        out: Write the scenario JSON there (the file is written whole or not at all).
        facilities_csv: Take the facilities from this CSV instead of the extract's tags.
        name: Scenario name (default: the file's stem).
        consolidate_m: Intersections closer than this (metres) become one node.
        max_snap_m: Facilities farther than this from every node are left out.
        storage: Give links a storage capacity (spillback).

    Returns:
        The scenario.

    Raises:
        CityImportError: If the file is missing, unreadable, has no drivable network or no
            facilities, or a CSV row is bad (naming the file and the row or element).
    """
    path = Path(path)
    if not path.is_file():
        raise CityImportError(f"{path}: no such OSM file")
    if path.suffix.lower() not in OSM_SUFFIXES:
        raise CityImportError(
            f"{path.name}: expected an .osm, .xml or .osm.pbf file, got {path.suffix!r}"
        )
    if consolidate_m < 0 or max_snap_m <= 0:
        raise CityImportError(
            f"{path.name}: consolidate_m must be >= 0 and max_snap_m > 0"
        )
    with tempfile.TemporaryDirectory() as folder:
        xml = _as_xml(path, Path(folder))
        graph = _drivable_graph(xml, path.name, consolidate_m)
    features = (
        read_facilities_csv(facilities_csv)
        if facilities_csv is not None
        else osm_facilities(path)
    )
    doc = _scenario_doc(
        graph, features, name or path.name.split(".")[0], max_snap_m, storage, path.name
    )
    doc["description"] = (
        f"Imported from {path.name} (OpenStreetMap data (c) OpenStreetMap contributors, "
        f"ODbL 1.0) by mesa_llm_mobility.urban.cities.import_osm."
    )
    scenario = scenario_from_dict(doc, f"{doc['name']}.json")
    if out is not None:
        write_scenario_json(doc, out)
    return scenario


def write_scenario_json(doc: Mapping[str, Any], out: str | Path) -> Path:
    """Write a scenario document as JSON, whole or not at all (a temporary file renamed)."""
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json.dumps(doc, indent=1, ensure_ascii=False), "utf-8")
    partial.replace(target)
    return target


# ---------------------------------------------------------------------------- the graph
def _as_xml(path: Path, folder: Path) -> Path:
    """The extract's highways as OSM XML for osmnx, clipped to the nodes the file holds.

    osmnx reads XML only and refuses ways whose nodes an extract cut off; osmium reads both
    formats, keeps the ``highway`` ways and drops their references to missing nodes (a way
    left with fewer than two is dropped).
    """
    xml = folder / "highways.osm"
    try:
        present: set[int] = set()
        ways: list[tuple[int, list[int], dict[str, str]]] = []
        for obj in osmium.FileProcessor(str(path), osmium.osm.NODE | osmium.osm.WAY):
            if obj.is_node():
                present.add(obj.id)
            elif "highway" in obj.tags:
                refs = [n.ref for n in obj.nodes]
                ways.append((obj.id, refs, {t.k: t.v for t in obj.tags}))
        kept_nodes: set[int] = set()
        clipped = []
        for way_id, refs, tags in ways:
            refs = [ref for ref in refs if ref in present]
            if len(refs) >= 2:
                clipped.append(osmium.osm.mutable.Way(id=way_id, nodes=refs, tags=tags))
                kept_nodes.update(refs)
        if not clipped:
            raise CityImportError(_no_drivable_way(path.name))
        with osmium.SimpleWriter(str(xml)) as writer:
            for obj in osmium.FileProcessor(str(path), osmium.osm.NODE):
                if obj.id in kept_nodes:
                    writer.add_node(obj)
            for way in clipped:
                writer.add_way(way)
    except RuntimeError as error:
        raise CityImportError(
            f"{path.name}: not a readable OSM file ({error})"
        ) from error
    return xml


def _no_drivable_way(source: str) -> str:
    return f"{source}: no drivable way (highway={', '.join(ROAD_CLASSES)})"


def _road_class(highway: Any) -> str | None:
    values = highway if isinstance(highway, list) else [highway]
    for value in values:
        base = str(value).removesuffix("_link")
        if base in ROAD_CLASSES:
            return base
    return None


def _drivable_graph(xml: Path, source: str, consolidate_m: float) -> nx.MultiDiGraph:
    ox.settings.use_cache = False
    ox.settings.log_console = False
    try:
        raw = ox.graph_from_xml(xml, simplify=False, retain_all=True)
    except Exception as error:  # osmnx raises many types on a broken file
        raise CityImportError(f"{source}: not a readable OSM file ({error})") from error
    drop = [
        (u, v, k)
        for u, v, k, data in raw.edges(keys=True, data=True)
        if _road_class(data.get("highway")) is None
    ]
    raw.remove_edges_from(drop)
    raw.remove_nodes_from([n for n in list(raw.nodes) if raw.degree(n) == 0])
    if raw.number_of_edges() == 0:
        raise CityImportError(_no_drivable_way(source))
    graph = ox.simplify_graph(raw)
    graph = ox.project_graph(graph)
    if consolidate_m > 0:
        graph = ox.consolidate_intersections(
            graph, tolerance=consolidate_m, rebuild_graph=True, dead_ends=True
        )
    graph = ox.truncate.largest_component(graph, strongly=True)
    if graph.number_of_nodes() < 2:
        raise CityImportError(
            f"{source}: the drivable network's largest strongly connected part has "
            f"{graph.number_of_nodes()} node(s)"
        )
    return graph


def _number(value: Any) -> float | None:
    """The first number in an OSM value (``"50"``, ``"50 mph"``, ``["30", "50"]``, ``"2;3"``)."""
    values = value if isinstance(value, list) else [value]
    numbers = []
    for item in values:
        match = re.search(r"\d+(\.\d+)?", str(item)) if item is not None else None
        if match:
            number = float(match.group())
            numbers.append(number * 1.609 if "mph" in str(item) else number)
    return min(numbers) if numbers else None


def _link_entry(
    u: str, v: str, data: Mapping[str, Any], storage: bool
) -> dict[str, Any]:
    """A one-way ``flow`` link from ``u`` to ``v`` (named later) of an osmnx edge's data."""
    road = ROAD_CLASSES[_road_class(data.get("highway")) or "unclassified"]
    speed = _number(data.get("maxspeed")) or road.speed_kmh
    lanes_total = _number(data.get("lanes"))
    one_way = bool(data.get("oneway", False))
    lanes = road.lanes
    if lanes_total:
        lanes = max(1, round(lanes_total if one_way else lanes_total / 2))
    length = max(float(data.get("length", 1.0)), 1.0)
    entry: dict[str, Any] = {
        "name": "",
        "from": u,
        "to": v,
        "length": round(length, 1),
        "speed": round(speed * 1000.0 / 60.0, 3),  # metres per minute
        "capacity": lanes * road.lane_capacity,
        "model": "flow",
        "two_way": False,
    }
    if storage:
        entry["storage_capacity"] = max(
            1, math.floor(lanes * length / VEHICLE_LENGTH_M)
        )
    return entry


def _link_geometry(
    line: Any, start: tuple[float, float], end: tuple[float, float]
) -> list[list[float]] | None:
    """A link's road course in metres from ``start`` to ``end`` (its nodes), or None if straight.

    osmnx's edge ``geometry`` (a projected LineString, extended to consolidated nodes) is
    oriented from the start node, simplified to within ``GEOMETRY_TOLERANCE_M``, its inner
    points rounded to 0.1 m and its ends replaced by the nodes' (rounded) positions, so the
    drawn road meets its nodes exactly.
    """
    if line is None or line.is_empty:
        return None
    coords = list(line.coords)
    first, last = np.asarray(coords[0]), np.asarray(coords[-1])
    if np.hypot(*(first - end)) + np.hypot(*(last - start)) < np.hypot(
        *(first - start)
    ) + np.hypot(*(last - end)):
        line = line.reverse()
    inner = list(line.simplify(GEOMETRY_TOLERANCE_M).coords)[1:-1]
    points = [list(start)]
    for x, y in inner:
        point = [round(float(x), 1), round(float(y), 1)]
        if point != points[-1]:
            points.append(point)
    if points[-1] == list(end):
        points.pop()
    points.append(list(end))
    return points if len(points) > 2 else None


# ---------------------------------------------------------------------------- facilities
def _kind_of(tags: Mapping[str, str]) -> str | None:
    for (key, value), kind in FACILITY_TAGS.items():
        if key in tags and (value == "*" or tags[key] == value):
            return kind
    return None


def _capacity(kind: str, tags: Mapping[str, str]) -> int:
    capacity = FACILITY_DEFAULTS[kind][0]
    if kind == "home":
        flats = _number(tags.get("building:flats"))
        levels = _number(tags.get("building:levels"))
        if tags.get("building") in ("house", "detached", "semidetached_house"):
            capacity = 4
        elif flats:
            capacity = int(2 * flats)
        elif levels:
            capacity = int(2 * HOME_DWELLINGS_PER_FLOOR * levels)
    else:
        stated = _number(tags.get("capacity"))
        if stated:
            capacity = int(stated)
    return max(1, capacity)


def osm_facilities(path: str | Path) -> list[FeatureFacility]:
    """The facilities of an OSM extract: nodes and ways with a tag of :data:`~.tables.FACILITY_TAGS`.

    A way stands at the mean of its nodes' positions. Relations (multipolygons) are not read.
    """
    path = Path(path)
    keys = sorted({key for key, _ in FACILITY_TAGS})
    found: list[FeatureFacility] = []
    try:
        processor = (
            osmium.FileProcessor(str(path))
            .with_locations()
            .with_filter(osmium.filter.KeyFilter(*keys))
        )
        for obj in processor:
            if obj.is_relation():
                continue
            tags = {tag.k: tag.v for tag in obj.tags}
            kind = _kind_of(tags)
            if kind is None:
                continue
            if obj.is_node():
                if not obj.location.valid():
                    continue
                lon, lat = obj.location.lon, obj.location.lat
            else:
                points = [(n.lon, n.lat) for n in obj.nodes if n.location.valid()]
                if not points:
                    continue
                lon = sum(p[0] for p in points) / len(points)
                lat = sum(p[1] for p in points) / len(points)
            label = tags.get("name") or kind
            prefix = "n" if obj.is_node() else "w"
            found.append(
                FeatureFacility(
                    f"{label} ({prefix}{obj.id})",
                    kind,
                    lon,
                    lat,
                    _capacity(kind, tags),
                    FACILITY_DEFAULTS[kind][1],
                )
            )
    except RuntimeError as error:
        raise CityImportError(
            f"{path.name}: not a readable OSM file ({error})"
        ) from error
    return found


def read_facilities_csv(path: str | Path) -> list[FeatureFacility]:
    """Facilities from a CSV with columns ``name,kind,lon,lat[,capacity,average_stay]``.

    Raises:
        CityImportError: Naming the file, the row and the field of the first bad value.
    """
    path = Path(path)
    if not path.is_file():
        raise CityImportError(f"{path}: no such facilities file")
    rows: list[FeatureFacility] = []
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = {"name", "kind", "lon", "lat"} - set(reader.fieldnames or ())
        if missing:
            raise CityImportError(
                f"{path.name}: missing column(s) {', '.join(sorted(missing))}"
            )
        for line, row in enumerate(reader, start=2):
            where = f"{path.name}: row {line}"
            kind = (row["kind"] or "").strip()
            if kind not in FACILITY_KINDS:
                raise CityImportError(
                    f"{where}: field 'kind': {kind!r} is not one of {', '.join(FACILITY_KINDS)}"
                )
            values: dict[str, float] = {}
            for field, low, high in (("lon", -180, 180), ("lat", -90, 90)):
                try:
                    values[field] = float(row[field])
                except (TypeError, ValueError):
                    raise CityImportError(
                        f"{where}: field {field!r}: not a number: {row[field]!r}"
                    ) from None
                if not low <= values[field] <= high:
                    raise CityImportError(
                        f"{where}: field {field!r}: {values[field]} is out of range"
                    )
            capacity, stay = FACILITY_DEFAULTS[kind]
            for field in ("capacity", "average_stay"):
                text = (row.get(field) or "").strip()
                if not text:
                    continue
                try:
                    number = float(text)
                except ValueError:
                    raise CityImportError(
                        f"{where}: field {field!r}: not a number: {text!r}"
                    ) from None
                if number < 0 or (field == "capacity" and number != int(number)):
                    raise CityImportError(
                        f"{where}: field {field!r}: expected a whole number >= 0, got {text}"
                    )
                if field == "capacity":
                    capacity = int(number)
                else:
                    stay = number
            name = (row["name"] or "").strip()
            if not name:
                raise CityImportError(f"{where}: field 'name': empty")
            rows.append(
                FeatureFacility(
                    name, kind, values["lon"], values["lat"], capacity, stay
                )
            )
    if not rows:
        raise CityImportError(f"{path.name}: no facility rows")
    return rows


# ---------------------------------------------------------------------------- the document
def _scenario_doc(
    graph: nx.MultiDiGraph,
    features: Iterable[FeatureFacility],
    name: str,
    max_snap_m: float,
    storage: bool,
    source: str,
) -> dict[str, Any]:
    node_ids = {node: f"n{node}" for node in graph.nodes}
    nodes = []
    xy = []
    for node, data in graph.nodes(data=True):
        x, y = float(data["x"]), float(data["y"])
        xy.append((x, y))
        nodes.append(
            {
                "id": node_ids[node],
                "x": round(x, 1),
                "y": round(y, 1),
            }
        )
    _fill_lon_lat(graph, nodes)
    at = {n["id"]: (n["x"], n["y"]) for n in nodes}
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for u, v, data in graph.edges(data=True):
        if u == v:
            continue
        entry = _link_entry(node_ids[u], node_ids[v], data, storage)
        geometry = _link_geometry(
            data.get("geometry"), at[node_ids[u]], at[node_ids[v]]
        )
        if geometry is not None:
            entry["geometry"] = geometry
        key = (entry["from"], entry["to"])
        old = best.get(key)
        if (
            old is None
            or entry["length"] / entry["speed"] < old["length"] / old["speed"]
        ):
            best[key] = entry
    links = []
    for index, key in enumerate(sorted(best, key=lambda k: (k[0], k[1]))):
        entry = best[key]
        entry["name"] = f"l{index}"
        links.append(entry)
    speeds = [entry["speed"] * 60.0 / 1000.0 for entry in links]
    walking_factor = round(statistics.median(speeds) / WALK_SPEED_KMH, 2)
    facilities = _place_facilities(
        graph, nodes, np.asarray(xy), list(features), max_snap_m, source
    )
    return {
        "name": name,
        "walking_factor": walking_factor,
        "crs": str(graph.graph.get("crs", "")),
        "nodes": nodes,
        "facilities": facilities,
        "road_links": links,
    }


def _fill_lon_lat(graph: nx.MultiDiGraph, nodes: list[dict[str, Any]]) -> None:
    """Longitude and latitude of each node, from its projected position."""
    points = gpd.GeoSeries.from_xy(
        [n["x"] for n in nodes], [n["y"] for n in nodes], crs=graph.graph["crs"]
    ).to_crs(4326)
    for node, point in zip(nodes, points, strict=True):
        node["lon"], node["lat"] = round(point.x, 7), round(point.y, 7)


def _place_facilities(
    graph: nx.MultiDiGraph,
    nodes: list[dict[str, Any]],
    xy: np.ndarray,
    features: list[FeatureFacility],
    max_snap_m: float,
    source: str,
) -> list[dict[str, Any]]:
    if not features:
        raise CityImportError(
            f"{source}: no facility (no amenity, shop, office or building of the tag table)"
        )
    points = gpd.GeoSeries.from_xy(
        [f.lon for f in features], [f.lat for f in features], crs=4326
    ).to_crs(graph.graph["crs"])
    tree = cKDTree(xy)
    distance, nearest = tree.query(np.column_stack([points.x, points.y]))
    placed: list[dict[str, Any]] = []
    used: set[str] = {n["id"] for n in nodes}
    dropped = 0
    for feature, far, at in zip(features, distance, nearest, strict=True):
        if far > max_snap_m:
            dropped += 1
            continue
        label = feature.name
        while label in used:
            label += "'"
        used.add(label)
        placed.append(
            {
                "name": label,
                "node": nodes[int(at)]["id"],
                "capacity": int(feature.capacity),
                "average_stay": float(feature.average_stay),
                "kind": feature.kind,
                "description": feature.name,
            }
        )
    if dropped:
        logger.info(
            "%s: %d facilities farther than %g m left out", source, dropped, max_snap_m
        )
    if not placed:
        raise CityImportError(
            f"{source}: no facility within {max_snap_m:g} m of the drivable network"
        )
    _name_shared_kinds(placed, nodes, xy)
    return placed


def _name_shared_kinds(
    placed: list[dict[str, Any]], nodes: list[dict[str, Any]], xy: np.ndarray
) -> None:
    """Name the facility of each shared kind nearest the centre by its kind, with the kind's capacity."""
    centre = xy.mean(axis=0)
    position = {n["id"]: xy[i] for i, n in enumerate(nodes)}
    for kind in SHARED_KINDS:
        members = [f for f in placed if f["kind"] == kind]
        if not members or any(f["name"] == kind for f in placed):
            continue
        main = min(
            members,
            key=lambda f: float(np.hypot(*(position[f["node"]] - centre))),
        )
        main["name"] = kind
        main["capacity"] = sum(f["capacity"] for f in members)
