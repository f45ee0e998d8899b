"""The documented tables of the city importers: road classes, facility tags, transit capacities.

Plain data, no heavy imports; ``docs/cities.md`` prints them. Speeds are km/h, capacities
vehicles per hour per lane (roads) or riders per vehicle (transit).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RoadClass:
    """Defaults of one OSM ``highway`` class.

    Attributes:
        speed_kmh: Free speed when the way has no usable ``maxspeed``.
        lane_capacity: Exit capacity per lane (vehicles per hour).
        lanes: Lanes per direction when the way has no usable ``lanes``.
    """

    speed_kmh: float
    lane_capacity: float
    lanes: int


ROAD_CLASSES: dict[str, RoadClass] = {
    "motorway": RoadClass(100.0, 1900.0, 2),
    "trunk": RoadClass(80.0, 1800.0, 2),
    "primary": RoadClass(50.0, 1500.0, 2),
    "secondary": RoadClass(50.0, 1200.0, 1),
    "tertiary": RoadClass(40.0, 1000.0, 1),
    "unclassified": RoadClass(30.0, 800.0, 1),
    "residential": RoadClass(30.0, 700.0, 1),
    "living_street": RoadClass(10.0, 400.0, 1),
}
"""Drivable classes (``<class>_link`` ramps take their class's values); other ways (service,
footway, cycleway, ...) are left out of the drivable graph."""


FACILITY_KINDS: tuple[str, ...] = (
    "home",
    "Office",
    "Factory",
    "School",
    "Hospital",
    "Supermarket",
    "Coffee shop",
    "Food court",
    "Gym",
    "Cinema",
    "Museum",
    "Amusement park",
)
"""The model's facility kinds: homes, and the reference town's facilities (GATSim's)."""

FACILITY_TAGS: dict[tuple[str, str], str] = {
    ("amenity", "cafe"): "Coffee shop",
    ("shop", "coffee"): "Coffee shop",
    ("amenity", "restaurant"): "Food court",
    ("amenity", "fast_food"): "Food court",
    ("amenity", "food_court"): "Food court",
    ("amenity", "pub"): "Food court",
    ("amenity", "bar"): "Food court",
    ("amenity", "school"): "School",
    ("amenity", "kindergarten"): "School",
    ("amenity", "college"): "School",
    ("amenity", "university"): "School",
    ("amenity", "hospital"): "Hospital",
    ("amenity", "clinic"): "Hospital",
    ("amenity", "doctors"): "Hospital",
    ("amenity", "dentist"): "Hospital",
    ("amenity", "pharmacy"): "Hospital",
    ("amenity", "cinema"): "Cinema",
    ("amenity", "theatre"): "Cinema",
    ("amenity", "arts_centre"): "Museum",
    ("tourism", "museum"): "Museum",
    ("tourism", "gallery"): "Museum",
    ("tourism", "theme_park"): "Amusement park",
    ("leisure", "amusement_arcade"): "Amusement park",
    ("leisure", "water_park"): "Amusement park",
    ("leisure", "fitness_centre"): "Gym",
    ("leisure", "sports_centre"): "Gym",
    ("leisure", "sports_hall"): "Gym",
    ("shop", "supermarket"): "Supermarket",
    ("shop", "convenience"): "Supermarket",
    ("shop", "*"): "Supermarket",
    ("office", "*"): "Office",
    ("amenity", "townhall"): "Office",
    ("amenity", "bank"): "Office",
    ("amenity", "post_office"): "Office",
    ("building", "office"): "Office",
    ("building", "commercial"): "Office",
    ("building", "industrial"): "Factory",
    ("building", "warehouse"): "Factory",
    ("landuse", "industrial"): "Factory",
    ("man_made", "works"): "Factory",
    ("craft", "*"): "Factory",
    ("building", "apartments"): "home",
    ("building", "residential"): "home",
    ("building", "house"): "home",
    ("building", "detached"): "home",
    ("building", "terrace"): "home",
    ("building", "semidetached_house"): "home",
    ("building", "dormitory"): "home",
    ("building", "yes"): "home",
}
"""OSM tag (key, value) to facility kind; ``"*"`` matches any value of the key. A feature takes
the kind of its first matching tag in this order (so a café in an office building is a Coffee
shop, and a plain ``building=yes`` with no other tag of the table is taken as homes); other
features are not facilities."""

FACILITY_DEFAULTS: dict[str, tuple[int, float]] = {
    "home": (40, 600.0),
    "Office": (40, 480.0),
    "Factory": (60, 480.0),
    "School": (200, 480.0),
    "Hospital": (40, 120.0),
    "Supermarket": (30, 45.0),
    "Coffee shop": (20, 45.0),
    "Food court": (40, 60.0),
    "Gym": (40, 90.0),
    "Cinema": (150, 120.0),
    "Museum": (100, 120.0),
    "Amusement park": (200, 180.0),
}
"""Kind to (capacity: people at once, average stay in minutes) of an imported facility."""

HOME_DWELLINGS_PER_FLOOR = 4
"""An apartment building with ``building:levels`` holds this many dwellings per floor (two
residents each); without levels it takes the ``home`` default capacity."""


@dataclass(frozen=True, slots=True)
class TransitMode:
    """Defaults of one GTFS ``route_type``.

    Attributes:
        label: What the mode is called.
        capacity: Riders a vehicle carries.
    """

    label: str
    capacity: int


TRANSIT_MODES: dict[int, TransitMode] = {
    0: TransitMode("tram", 200),
    1: TransitMode("subway", 900),
    2: TransitMode("rail", 1200),
    3: TransitMode("bus", 80),
    4: TransitMode("ferry", 300),
    5: TransitMode("cable tram", 60),
    6: TransitMode("aerial lift", 40),
    7: TransitMode("funicular", 100),
    11: TransitMode("trolleybus", 80),
    12: TransitMode("monorail", 400),
}
"""GTFS ``route_type`` to vehicle capacity (extended route types 100-1799 map to their basic
type: 100-199 rail, 400-499 subway, 700-799 bus, 900-999 tram, 1000-1099 ferry)."""

EXTENDED_ROUTE_TYPES: dict[range, int] = {
    range(100, 200): 2,
    range(400, 500): 1,
    range(700, 800): 3,
    range(900, 1000): 0,
    range(1000, 1100): 4,
}
"""Extended GTFS route types (hundreds) to the basic type whose capacity they take."""


def transit_mode(route_type: int) -> TransitMode | None:
    """The :class:`TransitMode` of a GTFS ``route_type`` (basic or extended), or ``None``."""
    if route_type in TRANSIT_MODES:
        return TRANSIT_MODES[route_type]
    for span, basic in EXTENDED_ROUTE_TYPES.items():
        if route_type in span:
            return TRANSIT_MODES[basic]
    return None
