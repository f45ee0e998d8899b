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
  prompts and rule policies.
- :mod:`.agents`: :class:`~.agents.TravellerAgent` and profiles built from a population.
- :mod:`.model`: :class:`~.model.UrbanMobilityModel`, the GATSim Mesa model.
- :mod:`.population`: narrative person profiles, households and the validating loader.
- :mod:`.synthesis`: Table 2 statistics, the rule and LLM population synthesisers.
- :mod:`.plots`: departure histograms, traffic snapshots and mode shares from the tidy frames.
- :mod:`.runner`: runs into a run directory, checkpointed daily; resume and fork.
"""

from __future__ import annotations
