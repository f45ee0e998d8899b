"""Time units shared by every model and the memory formulas.

Simulation time in the urban model and in memory records is counted in minutes since the start
of the run; the evacuation model counts steps of :data:`~mesa_llm_mobility.evacuation.timing`.
"""

from __future__ import annotations

MINUTES_PER_DAY = 1440
"""Minutes in one day: day ``d`` (1-based) starts at minute ``(d - 1) * MINUTES_PER_DAY``."""
