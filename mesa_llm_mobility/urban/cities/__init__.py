"""Real cities in: OpenStreetMap and GTFS files to an urban scenario, and a population for it.

- :func:`import_osm` (:mod:`.osm`): a local OSM extract to a scenario (drivable graph,
  facilities, coordinates);
- :func:`import_gtfs` (:mod:`.gtfs`): a GTFS feed's lines, on a chosen date, added to a
  scenario as transit lines;
- :func:`city_population` (:mod:`.population`): synthesised residents placed on the city's
  homes and workplaces;
- :func:`check_network_load` (:mod:`.load`): expected peak-hour demand against road capacity.

The importers need the ``cities`` extra (osmnx, osmium, gtfs-kit); they are imported on first
use of their names, so that this package and the model load without it.
"""

from __future__ import annotations

import importlib
from typing import Any

from mesa_llm_mobility.urban.cities.load import (
    NetworkLoad,
    check_network_load,
    network_load,
)
from mesa_llm_mobility.urban.cities.population import (
    city_population,
    is_city,
    people_for_travellers,
)

_LAZY = {
    "import_osm": "mesa_llm_mobility.urban.cities.osm",
    "CityImportError": "mesa_llm_mobility.urban.cities.osm",
    "import_gtfs": "mesa_llm_mobility.urban.cities.gtfs",
}

__all__ = [
    "CityImportError",
    "NetworkLoad",
    "check_network_load",
    "city_population",
    "import_gtfs",
    "import_osm",
    "is_city",
    "network_load",
    "people_for_travellers",
]


def __getattr__(name: str) -> Any:
    """The importers, loaded with their heavy libraries when first named (PEP 562)."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
