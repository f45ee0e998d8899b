"""Shared test set-up: litellm must never reach the network, whatever the test imports first."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
