"""What an app was started with: ``solara run examples/<app>.py -- --run DIR``."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence


def run_from_argv(argv: Sequence[str] | None = None) -> str | None:
    """The ``--run DIR`` given after ``--`` to ``solara run`` (or ``MLM_APP_RUN``)."""
    args = list(sys.argv if argv is None else argv)
    if "--" in args:
        rest = args[args.index("--") + 1 :]
        for k, arg in enumerate(rest):
            if arg == "--run" and k + 1 < len(rest):
                return rest[k + 1]
            if arg.startswith("--run="):
                return arg.split("=", 1)[1]
    return os.environ.get("MLM_APP_RUN") or None
