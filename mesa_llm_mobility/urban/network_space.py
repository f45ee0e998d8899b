"""The urban network as a Mesa ``Network`` space of node, facility and link cells.

Every place a traveller can be is a cell, so a traveller's ``cell`` always says where it is:

- a **node** cell per network node (waiting at a node or metro stop), at the node's coordinates;
- a **facility** cell per facility (staying at it or queueing at its door), connected to its node
  and drawn at the node's coordinates;
- a **link** cell per road or metro link (both directions share the cell), connected to its two
  end-node cells and drawn at the midpoint of its end nodes.

Cell coordinates (Mesa's logical keys) are the place names themselves: ``space["Node_5"]``,
``space["Office"]``, ``space["Ave_2_link_2"]``; ``cell.properties["kind"]`` holds the kind.
The scenario loader guarantees node, facility and link names never collide.
"""

from __future__ import annotations

from random import Random

import networkx as nx
from mesa.discrete_space import Cell, Network

from mesa_llm_mobility.urban.scenario import Scenario
from mesa_llm_mobility.urban.trips import Location


def network_graph(scenario: Scenario) -> nx.Graph:
    """Build the undirected place graph with ``kind`` and ``pos`` node attributes.

    Args:
        scenario: The validated scenario.

    Returns:
        A graph whose nodes are node ids, facility names and link names.
    """
    graph = nx.Graph()
    for node in scenario.nodes.values():
        graph.add_node(node.id, kind="node", pos=(node.x, node.y))
    for facility in scenario.facilities.values():
        anchor = scenario.nodes[facility.node]
        graph.add_node(facility.name, kind="facility", pos=(anchor.x, anchor.y))
        graph.add_edge(facility.name, facility.node)
    ends: dict[str, tuple[str, str]] = {
        link.name: (link.from_node, link.to_node)
        for link in scenario.road_links.values()
    }
    for line in scenario.metro_lines.values():
        for k, name in enumerate(line.link_names):
            ends[name] = (line.stops[k], line.stops[k + 1])
    for name, (a, b) in ends.items():
        pa, pb = scenario.nodes[a], scenario.nodes[b]
        graph.add_node(
            name, kind="link", pos=((pa.x + pb.x) / 2.0, (pa.y + pb.y) / 2.0)
        )
        graph.add_edge(name, a)
        graph.add_edge(name, b)
    return graph


def build_network_space(scenario: Scenario, random: Random | None = None) -> Network:
    """Create the Mesa ``Network`` space of a scenario.

    Args:
        scenario: The validated scenario.
        random: Random number generator for the space (pass ``model.random``).

    Returns:
        A ``mesa.discrete_space.Network`` with one cell per node, facility and link, each with
        its real drawing position and ``properties["kind"]``.
    """
    graph = network_graph(scenario)
    layout = {key: data["pos"] for key, data in graph.nodes(data=True)}
    space = Network(graph, random=random, layout=layout)
    for key, data in graph.nodes(data=True):
        space[key].properties["kind"] = data["kind"]
    return space


def cell_of(space: Network, location: Location) -> Cell:
    """Return the cell of an engine :class:`~mesa_llm_mobility.urban.trips.Location`.

    Args:
        space: The space from :func:`build_network_space`.
        location: Where the traveller is (``engine.location(agent)``).

    Returns:
        The node, facility or link cell.
    """
    return space[location.place]
