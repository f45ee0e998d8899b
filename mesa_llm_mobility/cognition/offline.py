"""Importing litellm without touching the network.

litellm fetches its model cost map from the internet at import unless
``LITELLM_LOCAL_MODEL_COST_MAP`` is set; we set it (unless the user chose otherwise) before the
first import, and import litellm lazily so that importing our package never loads it.
"""

from __future__ import annotations

import os
from types import ModuleType


def import_litellm() -> ModuleType:
    """Import litellm with its bundled (offline) cost map and quiet debug output."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # noqa: PLC0415  (lazy on purpose: see module docstring)

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm
