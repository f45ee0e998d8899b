"""Scenario data for the urban model: nodes, facilities, road links, metro lines and events.

A scenario is one JSON file (format in ``docs/network.md``). :func:`load_scenario` parses it into
frozen data classes and validates it; every error names the file, the entry and the field, e.g.
``nguyen_dupuis.json: road_links[3] (Ave_2_link_3): field 'to': unknown node 'Node_99'``.

Times are minutes from 00:00 of day 1 (strings ``"HH:MM"`` are accepted wherever a clock time is
expected); road capacities are per direction. The reference scenario (the GATSim town on the
Nguyen-Dupuis topology) ships as ``scenarios/nguyen_dupuis.json``; :func:`grid_scenario_from_uxsim`
turns the plain-data export of UXsim's 11 x 11 grid benchmark into the same types.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mesa_llm_mobility.urban import clock
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY
from mesa_llm_mobility.urban.data_files import read_json_data

LinkModel = Literal["occupancy", "flow"]
LINK_MODELS: tuple[str, ...] = ("occupancy", "flow")


class ScenarioError(ValueError):
    """A scenario file (or dict) is invalid; the message names the file, the entry and the field."""


@dataclass(frozen=True, slots=True)
class Node:
    """A network node with drawing coordinates (tile units in the reference scenario).

    Attributes:
        id: Node id.
        x: Drawing x (tile units in the reference town, metres east in an imported city).
        y: Drawing y (metres north in an imported city).
        lon: Longitude (WGS 84) of an imported node, else None.
        lat: Latitude (WGS 84) of an imported node, else None.
    """

    id: str
    x: float
    y: float
    lon: float | None = None
    lat: float | None = None


@dataclass(frozen=True, slots=True)
class Facility:
    """An activity location at a node with a real-time capacity (queue at the door).

    Attributes:
        name: Unique facility name, e.g. ``"Office"``.
        node: Node the facility is attached to.
        capacity: Maximum number of people staying at once.
        average_stay: Average stay in minutes (used by the facility wait indicator).
        description: Free text shown to agents.
        kind: What the facility is (``"home"``, ``"Office"``, ``"School"``, ...; see
            :data:`~mesa_llm_mobility.urban.cities.tables.FACILITY_KINDS`); empty in the
            reference town, whose facility names are their kinds.
    """

    name: str
    node: str
    capacity: int
    average_stay: float
    description: str = ""
    kind: str = ""


@dataclass(frozen=True, slots=True)
class RoadLink:
    """A road link (drivable, walkable) between two nodes.

    Attributes:
        name: Unique link name, e.g. ``"Ave_2_link_2"``.
        from_node: Endpoint 0.
        to_node: Endpoint 1.
        free_time: Free travel time in minutes (given, or ``length / speed``).
        capacity: ``occupancy`` model: vehicles traversing at once per direction;
            ``flow`` model: exit flow capacity in vehicles per hour per direction.
        model: ``"occupancy"`` (GATSim) or ``"flow"`` (Vickrey point queue).
        two_way: Whether the link can be used from ``to_node`` to ``from_node`` too.
        length: Length (any unit consistent with ``speed``), if given.
        speed: Speed (length unit per minute), if given.
        storage_capacity: ``flow`` model only: vehicles the link can hold (spillback), or None.
        capacity_for_trip_ends: ``flow`` model only: whether vehicles ending their trip at the end
            node also pass the exit capacity (False: they leave after the free travel time).
        geometry: The road's course as drawn, ``(x, y)`` points from ``from_node`` to
            ``to_node`` (both ends included, in the nodes' coordinates), or None for a straight
            link. Only maps use it; lengths and times come from the fields above.
    """

    name: str
    from_node: str
    to_node: str
    free_time: float
    capacity: float
    model: LinkModel = "occupancy"
    two_way: bool = True
    length: float | None = None
    speed: float | None = None
    storage_capacity: int | None = None
    capacity_for_trip_ends: bool = True
    geometry: tuple[tuple[float, float], ...] | None = None


GEOMETRY_END_TOLERANCE = 1.0
"""How far (in node coordinates) a link geometry's first and last points may lie from its nodes."""


@dataclass(frozen=True, slots=True)
class MetroLine:
    """A metro line: ordered stops served in both directions on a fixed headway.

    Direction 0 runs ``stops[0] -> stops[-1]``, direction 1 the reverse. The link between
    ``stops[k]`` and ``stops[k + 1]`` is named ``link_names[k]`` in both directions. A train of
    direction d leaves its first stop at ``service_start + n * headway`` (while that is before
    ``service_end``), leaves its k-th stop ``k * (travel_time + dwell)`` later and arrives there
    ``dwell`` before it leaves.

    Attributes:
        name: Line name, e.g. ``"Metro_1"``.
        stops: Node ids in direction-0 order.
        link_names: Names of the links between consecutive stops.
        travel_time: Minutes between leaving a stop and arriving at the next.
        dwell: Minutes a train stands at a stop.
        headway: Minutes between trains of one direction.
        service_start: First departure from the first stop (minutes of the day).
        service_end: No departure from the first stop at or after this time (minutes of the day).
        train_capacity: Riders a train carries at once (per link and direction).
        static_wait: Expected wait in minutes used by routing before boarding.
    """

    name: str
    stops: tuple[str, ...]
    link_names: tuple[str, ...]
    travel_time: float
    dwell: float
    headway: float
    service_start: float
    service_end: float
    train_capacity: int
    static_wait: float


@dataclass(frozen=True, slots=True)
class Event:
    """A network event in the published GATSim format.

    Attributes:
        place: Link, facility or node name the event happens at.
        direction: Link direction affected (0, 1) or None for both / not applicable.
        attribute: ``"capacity"`` (changes the link or facility capacity) or ``"none"``.
        old_value: Value before the event (informative for ``"none"``).
        new_value: Value during the event.
        start_time: Absolute start minute (from 00:00 of day 1).
        preview_time: Absolute minute from which the event is announced.
        duration: Minutes the event lasts.
        content: Text shown to agents.
        keywords: Keywords for memory retrieval.
        spatial_scope: Places the event concerns.
        time_scope: Free-text time scope as published (e.g. ``"08:00-09:00"``).
        broadcast: Whether everyone perceives it (else only agents nearby).
    """

    place: str
    direction: int | None
    attribute: str
    old_value: float | str | None
    new_value: float | str | None
    start_time: float
    preview_time: float
    duration: float
    content: str = ""
    keywords: tuple[str, ...] = ()
    spatial_scope: tuple[str, ...] = ()
    time_scope: str = ""
    broadcast: bool = False

    @property
    def end_time(self) -> float:
        """Absolute minute at which the event ends."""
        return self.start_time + self.duration


@dataclass(frozen=True)
class Scenario:
    """A validated multimodal network scenario.

    Attributes:
        name: Scenario name.
        source: File the scenario was read from (or ``"<dict>"``).
        nodes: Nodes by id, in file order.
        facilities: Facilities by name.
        road_links: Road links by name.
        metro_lines: Metro lines by name.
        walking_factor: Walking time = factor x free travel time of the road link.
        events: Events in file order.
        description: Free text.
    """

    name: str
    source: str
    nodes: dict[str, Node]
    facilities: dict[str, Facility] = field(default_factory=dict)
    road_links: dict[str, RoadLink] = field(default_factory=dict)
    metro_lines: dict[str, MetroLine] = field(default_factory=dict)
    walking_factor: float = 2.0
    events: tuple[Event, ...] = ()
    description: str = ""

    def metro_link_names(self) -> dict[str, tuple[str, int]]:
        """Map each metro link name to ``(line name, index of its first stop)``."""
        return {
            link_name: (line.name, k)
            for line in self.metro_lines.values()
            for k, link_name in enumerate(line.link_names)
        }


def parse_clock(value: Any, where: str) -> float:
    """:func:`mesa_llm_mobility.urban.clock.parse_clock` raising :class:`ScenarioError`."""
    return clock.parse_clock(value, where, ScenarioError)


class _Reader:
    """Field accessors that build error messages naming file, entry and field."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, entry: str, message: str) -> ScenarioError:
        return ScenarioError(f"{self.source}: {entry}: {message}")

    def get(
        self,
        item: dict[str, Any],
        entry: str,
        key: str,
        kinds: tuple[type, ...],
        default: Any = ...,
    ) -> Any:
        if key not in item:
            if default is ...:
                raise self.fail(entry, f"missing field {key!r}")
            return default
        value = item[key]
        if value is None and default is None:
            return None
        if isinstance(value, bool) and bool not in kinds:
            raise self.fail(entry, f"field {key!r}: expected a number, got {value!r}")
        if not isinstance(value, kinds):
            names = " or ".join(k.__name__ for k in kinds)
            raise self.fail(entry, f"field {key!r}: expected {names}, got {value!r}")
        return value

    def number(
        self,
        item: dict[str, Any],
        entry: str,
        key: str,
        *,
        default: Any = ...,
        minimum: float = 0.0,
        strict: bool = False,
    ) -> float | None:
        value = self.get(item, entry, key, (int, float), default)
        if value is None:
            return None
        value = float(value)
        if not math.isfinite(value) or value < minimum or (strict and value == minimum):
            relation = ">" if strict else ">="
            what = "negative" if value < 0 else "invalid"
            raise self.fail(
                entry,
                f"field {key!r}: {what} value {value!r} (must be {relation} {minimum:g})",
            )
        return value

    def integer(
        self,
        item: dict[str, Any],
        entry: str,
        key: str,
        *,
        default: Any = ...,
        minimum: int = 0,
    ) -> int | None:
        value = self.number(item, entry, key, default=default, minimum=minimum)
        if value is None:
            return None
        if value != int(value):
            raise self.fail(
                entry, f"field {key!r}: expected a whole number, got {value!r}"
            )
        return int(value)

    def entries(
        self, data: dict[str, Any], key: str, *, required: bool
    ) -> list[dict[str, Any]]:
        if key not in data:
            if required:
                raise ScenarioError(f"{self.source}: missing top-level field {key!r}")
            return []
        items = data[key]
        if not isinstance(items, list):
            raise ScenarioError(f"{self.source}: field {key!r}: expected a list")
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise ScenarioError(
                    f"{self.source}: {key}[{index}]: expected an object"
                )
        return items


def _geometry(
    read: _Reader, item: dict[str, Any], entry: str, ends: tuple[Node, Node]
) -> tuple[tuple[float, float], ...] | None:
    """A road link's optional ``geometry``: at least two ``[x, y]`` points, ends at its nodes."""
    points = read.get(item, entry, "geometry", (list,), None)
    if points is None:
        return None
    if len(points) < 2:
        raise read.fail(entry, "field 'geometry': expected at least two [x, y] points")
    parsed = []
    for k, point in enumerate(points):
        if (
            not isinstance(point, list)
            or len(point) != 2
            or not all(
                isinstance(v, (int, float))
                and not isinstance(v, bool)
                and math.isfinite(v)
                for v in point
            )
        ):
            raise read.fail(
                entry,
                f"field 'geometry'[{k}]: expected [x, y] (two numbers), got {point!r}",
            )
        parsed.append((float(point[0]), float(point[1])))
    for k, node in ((0, ends[0]), (len(parsed) - 1, ends[1])):
        x, y = parsed[k]
        if math.hypot(x - node.x, y - node.y) > GEOMETRY_END_TOLERANCE:
            raise read.fail(
                entry,
                f"field 'geometry'[{k}]: ({x:g}, {y:g}) is not at node {node.id!r} "
                f"({node.x:g}, {node.y:g})",
            )
    return tuple(parsed)


def _entry(section: str, index: int, item: dict[str, Any], key: str) -> str:
    label = item.get(key)
    return (
        f"{section}[{index}] ({label})"
        if isinstance(label, str)
        else f"{section}[{index}]"
    )


def scenario_from_dict(data: dict[str, Any], source: str = "<dict>") -> Scenario:
    """Validate a scenario given as plain data (the parsed JSON document).

    Args:
        data: The scenario document (see ``docs/network.md``).
        source: Name used in error messages, usually the file name.

    Returns:
        The validated :class:`Scenario`.

    Raises:
        ScenarioError: On the first problem found, naming ``source``, the entry and the field.
    """
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: expected a JSON object at the top level")
    read = _Reader(source)
    name = data.get("name", Path(source).stem)
    if not isinstance(name, str):
        raise ScenarioError(f"{source}: field 'name': expected a string")

    nodes: dict[str, Node] = {}
    for i, item in enumerate(read.entries(data, "nodes", required=True)):
        entry = _entry("nodes", i, item, "id")
        node_id = read.get(item, entry, "id", (str,))
        if node_id in nodes:
            raise read.fail(entry, f"field 'id': duplicate node {node_id!r}")
        x = read.number(item, entry, "x", minimum=-math.inf)
        y = read.number(item, entry, "y", minimum=-math.inf)
        lon = read.number(item, entry, "lon", default=None, minimum=-180.0)
        lat = read.number(item, entry, "lat", default=None, minimum=-90.0)
        nodes[node_id] = Node(node_id, float(x), float(y), lon, lat)
    if not nodes:
        raise ScenarioError(f"{source}: field 'nodes': at least one node is required")

    def known_node(item: dict[str, Any], entry: str, key: str) -> str:
        node_id = read.get(item, entry, key, (str,))
        if node_id not in nodes:
            raise read.fail(entry, f"field {key!r}: unknown node {node_id!r}")
        return node_id

    facilities: dict[str, Facility] = {}
    for i, item in enumerate(read.entries(data, "facilities", required=False)):
        entry = _entry("facilities", i, item, "name")
        fac_name = read.get(item, entry, "name", (str,))
        if fac_name in nodes:
            raise read.fail(entry, f"field 'name': {fac_name!r} is also a node id")
        if fac_name in facilities:
            raise read.fail(entry, f"field 'name': duplicate facility {fac_name!r}")
        facilities[fac_name] = Facility(
            name=fac_name,
            node=known_node(item, entry, "node"),
            capacity=read.integer(item, entry, "capacity"),
            average_stay=read.number(item, entry, "average_stay"),
            description=read.get(item, entry, "description", (str,), ""),
            kind=read.get(item, entry, "kind", (str,), ""),
        )

    link_names: set[str] = set()
    endpoints: dict[tuple[str, str], str] = {}
    road_links: dict[str, RoadLink] = {}
    for i, item in enumerate(read.entries(data, "road_links", required=False)):
        entry = _entry("road_links", i, item, "name")
        link_name = read.get(item, entry, "name", (str,))
        if link_name in link_names:
            raise read.fail(entry, f"field 'name': duplicate link {link_name!r}")
        if link_name in nodes or link_name in facilities:
            raise read.fail(
                entry, f"field 'name': {link_name!r} is also a node or facility"
            )
        a = known_node(item, entry, "from")
        b = known_node(item, entry, "to")
        if a == b:
            raise read.fail(entry, f"field 'to': link starts and ends at {a!r}")
        two_way = read.get(item, entry, "two_way", (bool,), True)
        for pair in [(a, b), (b, a)] if two_way else [(a, b)]:
            if pair in endpoints:
                raise read.fail(
                    entry,
                    f"field 'to': duplicate link {pair[0]} -> {pair[1]} (also {endpoints[pair]!r})",
                )
            endpoints[pair] = link_name
        model = read.get(item, entry, "model", (str,), "occupancy")
        if model not in LINK_MODELS:
            raise read.fail(
                entry, f"field 'model': expected one of {LINK_MODELS}, got {model!r}"
            )
        length = read.number(item, entry, "length", default=None, strict=True)
        speed = read.number(item, entry, "speed", default=None, strict=True)
        free_time = read.number(item, entry, "free_time", default=None, strict=True)
        if free_time is None:
            if length is None or speed is None:
                raise read.fail(
                    entry, "field 'free_time': give free_time or both length and speed"
                )
            free_time = length / speed
        capacity = read.number(item, entry, "capacity")
        if model == "occupancy" and capacity != int(capacity):
            raise read.fail(
                entry, f"field 'capacity': expected a whole number, got {capacity!r}"
            )
        storage = read.integer(item, entry, "storage_capacity", default=None, minimum=1)
        if storage is not None and model != "flow":
            raise read.fail(
                entry, "field 'storage_capacity': only the 'flow' link model has one"
            )
        link_names.add(link_name)
        road_links[link_name] = RoadLink(
            name=link_name,
            from_node=a,
            to_node=b,
            free_time=free_time,
            capacity=capacity,
            model=model,
            two_way=two_way,
            length=length,
            speed=speed,
            storage_capacity=storage,
            capacity_for_trip_ends=read.get(
                item, entry, "capacity_for_trip_ends", (bool,), True
            ),
            geometry=_geometry(read, item, entry, (nodes[a], nodes[b])),
        )

    metro_lines: dict[str, MetroLine] = {}
    for i, item in enumerate(read.entries(data, "metro_lines", required=False)):
        entry = _entry("metro_lines", i, item, "name")
        line_name = read.get(item, entry, "name", (str,))
        if line_name in metro_lines:
            raise read.fail(entry, f"field 'name': duplicate metro line {line_name!r}")
        stops = read.get(item, entry, "stops", (list,))
        if len(stops) < 2:
            raise read.fail(entry, "field 'stops': a line needs at least two stops")
        for k, stop in enumerate(stops):
            if stop not in nodes:
                raise read.fail(
                    entry, f"field 'stops'[{k}]: stop {stop!r} is not a network node"
                )
        if len(set(stops)) != len(stops):
            raise read.fail(entry, "field 'stops': a stop appears twice")
        names = read.get(item, entry, "link_names", (list,), None)
        if names is None:
            names = [f"{line_name}_link_{k + 1}" for k in range(len(stops) - 1)]
        if len(names) != len(stops) - 1 or not all(isinstance(n, str) for n in names):
            raise read.fail(
                entry, "field 'link_names': need one name per pair of stops"
            )
        for link_name in names:
            if link_name in nodes or link_name in facilities:
                raise read.fail(
                    entry,
                    f"field 'link_names': {link_name!r} is also a node or facility",
                )
            if link_name in link_names:
                raise read.fail(
                    entry, f"field 'link_names': duplicate link {link_name!r}"
                )
            link_names.add(link_name)
        start = parse_clock(
            item.get("service_start", 0.0), f"{source}: {entry}: 'service_start'"
        )
        end = parse_clock(
            item.get("service_end", "24:00"), f"{source}: {entry}: 'service_end'"
        )
        if end <= start:
            raise read.fail(entry, "field 'service_end': must be after service_start")
        headway = read.number(item, entry, "headway", strict=True)
        metro_lines[line_name] = MetroLine(
            name=line_name,
            stops=tuple(stops),
            link_names=tuple(names),
            travel_time=read.number(item, entry, "travel_time", strict=True),
            dwell=read.number(item, entry, "dwell", default=0.0),
            headway=headway,
            service_start=start,
            service_end=end,
            train_capacity=read.integer(item, entry, "train_capacity", minimum=1),
            static_wait=read.number(item, entry, "static_wait", default=headway / 2.0),
        )

    places = set(nodes) | set(facilities) | link_names
    events: list[Event] = []
    for i, item in enumerate(read.entries(data, "events", required=False)):
        entry = _entry("events", i, item, "place")
        place = read.get(item, entry, "place", (str,))
        if place not in places:
            raise read.fail(
                entry, f"field 'place': unknown link, facility or node {place!r}"
            )
        attribute = read.get(item, entry, "attribute", (str,), "none")
        if attribute not in ("capacity", "none"):
            raise read.fail(
                entry,
                f"field 'attribute': expected 'capacity' or 'none', got {attribute!r}",
            )
        direction = item.get("direction")
        if direction not in (None, 0, 1) or isinstance(direction, bool):
            raise read.fail(
                entry, f"field 'direction': expected 0, 1 or null, got {direction!r}"
            )
        day = read.integer(item, entry, "day", default=1, minimum=1)
        offset = (day - 1) * MINUTES_PER_DAY
        start = offset + parse_clock(
            read.get(item, entry, "start_time", (str, int, float)),
            f"{source}: {entry}: 'start_time'",
        )
        preview = item.get("preview_time")
        preview_at = (
            start
            if preview is None
            else offset + parse_clock(preview, f"{source}: {entry}: 'preview_time'")
        )
        if preview_at > start:
            raise read.fail(entry, "field 'preview_time': must not be after start_time")
        new_value = item.get("new_value")
        if attribute == "capacity":
            if place in nodes:
                raise read.fail(entry, "field 'attribute': a node has no capacity")
            new_value = read.number(item, entry, "new_value")
        keywords = read.get(item, entry, "keywords", (list,), [])
        scope = read.get(item, entry, "spatial_scope", (list,), [place])
        events.append(
            Event(
                place=place,
                direction=direction,
                attribute=attribute,
                old_value=item.get("old_value"),
                new_value=new_value,
                start_time=start,
                preview_time=preview_at,
                duration=read.number(item, entry, "duration", strict=True),
                content=read.get(item, entry, "content", (str,), ""),
                keywords=tuple(str(k) for k in keywords),
                spatial_scope=tuple(str(s) for s in scope),
                time_scope=read.get(item, entry, "time_scope", (str,), ""),
                broadcast=read.get(item, entry, "broadcast", (bool,), False),
            )
        )

    walking_factor = read.number(
        data, "top level", "walking_factor", default=2.0, strict=True
    )
    return Scenario(
        name=name,
        source=source,
        nodes=nodes,
        facilities=facilities,
        road_links=road_links,
        metro_lines=metro_lines,
        walking_factor=walking_factor,
        events=tuple(events),
        description=data.get("description", ""),
    )


def load_scenario(path: str | Path) -> Scenario:
    """Load and validate a scenario JSON file.

    Args:
        path: A file path, or the name of a bundled scenario (``"nguyen_dupuis"``).

    Returns:
        The validated :class:`Scenario`.

    Raises:
        ScenarioError: If the file is missing, not JSON, or invalid (the message names the file,
            the entry and the field).
    """
    data, source = read_json_data(path, "scenario", ScenarioError)
    return scenario_from_dict(data, Path(source).name)


def grid_scenario_from_uxsim(
    data: dict[str, Any] | str | Path, *, point_queue: bool = True
) -> tuple[Scenario, list[dict[str, Any]]]:
    """Adapt the plain-data UXsim grid export (``bench/grid11_scenario.json``) to a scenario.

    Links become one-way ``flow`` links with free time ``length / free_flow_speed`` and exit
    capacity ``capacity_out`` (``point_queue=True``, UXsim's point-queue-like variant) or
    ``capacity``, converted from veh/s to veh/h; trips ending at a link's end node bypass the exit
    capacity, as in UXsim where a vehicle reaching its destination leaves without a node transfer.
    Seconds become minutes. Demand windows ``(orig, dest, t_start, t_end, flow)`` are returned as
    they are (seconds and veh/s); :func:`~mesa_llm_mobility.urban.demand.demand_from_windows`
    expands them into single vehicles.

    Args:
        data: The export as a dict, or a path to it.
        point_queue: Use ``links_pq_variant`` capacities (True) or the base link capacity.

    Returns:
        ``(scenario, demand windows)``.

    Raises:
        ScenarioError: If the export lacks nodes, links or demand.
    """
    source = "<dict>"
    if not isinstance(data, dict):
        source = Path(data).name
        data = json.loads(Path(data).read_text("utf-8"))
    for key in ("nodes", "links", "demand"):
        if key not in data:
            raise ScenarioError(f"{source}: missing top-level field {key!r}")
    pq = {item["name"]: item for item in data.get("links_pq_variant", [])}
    road_links = []
    for link in data["links"]:
        capacity = link["capacity"]
        if point_queue and pq.get(link["name"], {}).get("capacity_out") is not None:
            capacity = pq[link["name"]]["capacity_out"]
        road_links.append(
            {
                "name": link["name"],
                "from": link["from"],
                "to": link["to"],
                "length": link["length"],
                "speed": link["free_flow_speed"] * 60.0,
                "capacity": capacity * 3600.0 * link.get("number_of_lanes", 1),
                "model": "flow",
                "two_way": False,
                "capacity_for_trip_ends": False,
            }
        )
    doc = {
        "name": data.get("name", "grid"),
        "nodes": [{"id": n["name"], "x": n["x"], "y": n["y"]} for n in data["nodes"]],
        "road_links": road_links,
    }
    return scenario_from_dict(doc, source), list(data["demand"])
