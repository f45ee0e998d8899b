"""Where an urban run's places are, for its exports: coordinates, their CRS, trips as node chains.

The reference town has no place in the real world: its nodes carry drawing coordinates (tile
units, ``y`` growing southwards as the town is drawn), and its exports keep them with no CRS.
A city imported from OpenStreetMap (:mod:`~mesa_llm_mobility.urban.cities`) gives each node its
position in metres in the extract's UTM zone (``x``, ``y``) and its longitude and latitude
(``lon``, ``lat``, WGS 84). :func:`scenario_coordinates` says which, and for a city names the
UTM zone's EPSG code, checked against the nodes' own longitude and latitude.

A facility stands at its node (the scenario snaps facilities to nodes), so its coordinates are
its node's. A trip's path is a list of link names; :func:`path_nodes` turns it into the nodes
it passes, from the origin's node. A road link drawn along its road (an imported city's
``geometry``) is exported along it too (:meth:`ScenarioCoordinates.link_course`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from pyproj import Transformer

from mesa_llm_mobility.urban.routing import NetworkIndex
from mesa_llm_mobility.urban.scenario import Scenario

WGS84 = "EPSG:4326"
"""Longitude and latitude in degrees: the CRS of every GeoJSON and GeoParquet of a city."""

UTM_TOLERANCE_M = 5.0
"""Nodes' ``x``/``y`` must lie this close to their ``lon``/``lat`` projected to the UTM zone."""


@dataclass(frozen=True)
class ScenarioCoordinates:
    """The nodes' positions and what they are measured in.

    Attributes:
        xy: Each node's ``(x, y)`` as the scenario gives it.
        lonlat: Each node's ``(lon, lat)`` in degrees (WGS 84), or None (the reference town).
        projected_crs: The CRS of ``xy`` (``"EPSG:32635"``) when it is a UTM zone in metres,
            else None (drawing units).
    """

    xy: dict[str, tuple[float, float]]
    lonlat: dict[str, tuple[float, float]] | None
    projected_crs: str | None

    @property
    def metres(self) -> bool:
        """Whether ``xy`` is in metres (distances between nodes are meaningful)."""
        return self.projected_crs is not None

    @property
    def geographic(self) -> dict[str, tuple[float, float]]:
        """Node positions for maps: ``lonlat`` for a city, else ``xy``."""
        return self.lonlat if self.lonlat is not None else self.xy

    @property
    def geographic_crs(self) -> str | None:
        """The CRS of :attr:`geographic`: WGS 84 for a city, None for drawing units."""
        return WGS84 if self.lonlat is not None else None

    @cached_property
    def _to_geographic(self) -> Transformer | None:
        if self.lonlat is None or self.projected_crs is None:
            return None
        return Transformer.from_crs(self.projected_crs, WGS84, always_xy=True)

    def link_course(
        self, scenario: Scenario, name: str, tail: str, head: str
    ) -> list[tuple[float, float]]:
        """A link's points from ``tail`` to ``head`` in :attr:`geographic` coordinates.

        A road link with a ``geometry`` follows it (reversed when travelled from its
        ``to_node``; projected to longitude and latitude for a city in UTM metres); any other
        link is its two end nodes. The first and last points are the nodes' own positions.
        """
        road = scenario.road_links.get(name)
        geographic = self.geographic
        ends = [geographic[tail], geographic[head]]
        if road is None or road.geometry is None:
            return ends
        points = list(road.geometry)
        if tail != road.from_node:
            points.reverse()
        inner = points[1:-1]
        if inner and self.lonlat is not None:
            if (
                self._to_geographic is None
            ):  # lon/lat whose x/y are not UTM: no projection
                return ends
            lons, lats = self._to_geographic.transform(
                [x for x, _ in inner], [y for _, y in inner]
            )
            inner = list(zip(lons, lats, strict=True))
        return [ends[0], *inner, ends[1]]

    def distance_m(self, a: str, b: str) -> float:
        """Straight-line distance between two nodes in metres (NaN in drawing units)."""
        if not self.metres:
            return math.nan
        (ax, ay), (bx, by) = self.xy[a], self.xy[b]
        return math.hypot(bx - ax, by - ay)


def utm_epsg(lon: float, lat: float) -> str:
    """The EPSG code of the UTM zone of a point (WGS 84; 326xx north, 327xx south)."""
    zone = math.floor((lon + 180.0) / 6.0) % 60 + 1
    return f"EPSG:{(32600 if lat >= 0 else 32700) + zone}"


def scenario_coordinates(scenario: Scenario) -> ScenarioCoordinates:
    """The nodes' positions and their CRS.

    A scenario whose every node has ``lon`` and ``lat`` is a city: its ``x``/``y`` are taken as
    UTM metres when they match the nodes' longitude and latitude projected to the UTM zone of
    their centre (within :data:`UTM_TOLERANCE_M`); otherwise they are drawing units.

    Args:
        scenario: The run's scenario.

    Returns:
        The coordinates.
    """
    xy = {node.id: (node.x, node.y) for node in scenario.nodes.values()}
    nodes = list(scenario.nodes.values())
    if any(node.lon is None or node.lat is None for node in nodes):
        return ScenarioCoordinates(xy, None, None)
    lonlat = {node.id: (float(node.lon), float(node.lat)) for node in nodes}  # type: ignore[arg-type]
    lons = [lon for lon, _ in lonlat.values()]
    lats = [lat for _, lat in lonlat.values()]
    crs = utm_epsg(sum(lons) / len(lons), sum(lats) / len(lats))
    east, north = Transformer.from_crs(WGS84, crs, always_xy=True).transform(lons, lats)
    worst = max(
        math.hypot(e - node.x, n - node.y)
        for e, n, node in zip(east, north, nodes, strict=True)
    )
    return ScenarioCoordinates(xy, lonlat, crs if worst <= UTM_TOLERANCE_M else None)


def place_node(scenario: Scenario, place: str) -> str:
    """The node of a facility name or node id.

    Raises:
        ValueError: If ``place`` is neither (a table that does not belong to the scenario).
    """
    if place in scenario.nodes:
        return place
    facility = scenario.facilities.get(place)
    if facility is None:
        raise ValueError(
            f"{scenario.source}: no facility or node {place!r} (a run of another scenario?)"
        )
    return facility.node


def link_ends(index: NetworkIndex, name: str) -> tuple[str, str]:
    """The two end nodes of a road or metro link (in its direction 0).

    Raises:
        ValueError: If the scenario has no such link.
    """
    directions = index.by_name.get(name)
    if not directions:
        raise ValueError(
            f"{index.scenario.source}: no link {name!r} (a run of another scenario?)"
        )
    first = min(directions, key=lambda link: link.direction)
    return first.tail, first.head


def path_nodes(index: NetworkIndex, origin: str, path: Sequence[str]) -> list[str]:
    """The nodes a trip passes: its origin's node, then the far end of each link in turn.

    Each link is taken from the end the chain has reached (walkers may go against a one-way
    road's direction). A link that does not touch the chain's end (never in a run's own
    paths) adds both its ends, in its direction 0.

    Args:
        index: The scenario's network index.
        origin: The trip's origin (facility name or node id).
        path: The link names, in travel order.

    Returns:
        The node ids, the origin's node first.
    """
    nodes = [place_node(index.scenario, origin)]
    for name in path:
        tail, head = link_ends(index, str(name))
        at = nodes[-1]
        if at == tail:
            nodes.append(head)
        elif at == head:
            nodes.append(tail)
        else:
            nodes.extend((tail, head))
    return nodes
