"""Urban daily-travel model (GATSim): multimodal network, point-queue traffic, travellers.

Submodules are imported on demand so that ``import mesa_llm_mobility.urban`` stays light:

- :mod:`.scenario`: scenario data classes and the validating loader.
- :mod:`.network_space`: the Mesa ``Network`` space of nodes, facilities and links.
- :mod:`.traffic`: the point-queue traffic engine (step-driven).
- :mod:`.routing`: shortest paths, transit routing and path validation.
- :mod:`.congestion`: wait indicators and congestion labels shown to agents.
- :mod:`.demand`: :func:`~.demand.simulate_demand`, a plain dynamic network loader.
- :mod:`.plans`: activities, day plans and their rule-based validation.
- :mod:`.decisions`: decision kinds (day plan, plan revision, chat, daily reflection) with
  prompts and rule policies, one module each.
- :mod:`.agents`: :class:`~.agents.TravellerAgent` and profiles built from a population.
- :mod:`.contexts`: the read-only world view travellers build their decision contexts from.
- :mod:`.itinerary`: plan execution, the wake-up schedule and the engine hooks.
- :mod:`.outputs`: the tidy tables and KPIs of a run.
- :mod:`.model`: :class:`~.model.UrbanMobilityModel`, the GATSim Mesa model.
- :mod:`.population`: narrative person profiles, households and the validating loader.
- :mod:`.synthesis`: Table 2 statistics, the rule and LLM population synthesisers.
- :mod:`.plots`: departure histograms, traffic snapshots and mode shares from the tidy frames.
- :mod:`.parameters`: :class:`~.parameters.UrbanParameters`, the model's declared parameters.
- :mod:`.run_files`: what a run writes into its run directory (day tables, plots, summary).
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.agents import TravellerAgent
    from mesa_llm_mobility.urban.decisions import PersonaFacts
    from mesa_llm_mobility.urban.demand import simulate_demand
    from mesa_llm_mobility.urban.model import UrbanMobilityModel
    from mesa_llm_mobility.urban.outputs import UrbanSummary
    from mesa_llm_mobility.urban.parameters import UrbanParameters
    from mesa_llm_mobility.urban.population import Population, load_population
    from mesa_llm_mobility.urban.scenario import Event, Scenario, load_scenario
    from mesa_llm_mobility.urban.traffic import TrafficEngine

_EXPORTS = {
    "Event": "scenario",
    "PersonaFacts": "decisions",
    "Population": "population",
    "Scenario": "scenario",
    "TrafficEngine": "traffic",
    "TravellerAgent": "agents",
    "UrbanMobilityModel": "model",
    "UrbanParameters": "parameters",
    "UrbanSummary": "outputs",
    "load_population": "population",
    "load_scenario": "scenario",
    "simulate_demand": "demand",
}

__all__ = [
    "Event",
    "PersonaFacts",
    "Population",
    "Scenario",
    "TrafficEngine",
    "TravellerAgent",
    "UrbanMobilityModel",
    "UrbanParameters",
    "UrbanSummary",
    "load_population",
    "load_scenario",
    "simulate_demand",
]


def __getattr__(name: str) -> Any:
    """The public names, imported from their module on first use."""
    if name == "TravelerAgent":
        warnings.warn(
            "TravelerAgent is deprecated; use TravellerAgent",
            DeprecationWarning,
            stacklevel=2,
        )
        name = "TravellerAgent"
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
