"""mesa-llm-mobility: a Mesa extension for LLM-driven human-mobility simulation.

Three flagship models (urban daily travel, crowd evacuation, trajectory generation) share one
cognition core: agents state typed decision requests, a brain (rule-based or any LLM through
litellm) answers them in batches, and the world moves deterministically.

Importing this package has no side effects beyond defining names: nothing is downloaded and no
network is touched.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
