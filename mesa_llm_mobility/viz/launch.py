"""What an app was started with (``solara run examples/<app>.py -- --run DIR``) and opening it."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Sequence

logger = logging.getLogger(__name__)


def option_from_argv(
    flag: str, variable: str, argv: Sequence[str] | None = None
) -> str | None:
    """The value of ``flag`` given after ``--`` to ``solara run``, else of ``$variable``.

    Args:
        flag: The option, e.g. ``"--run"`` (``--run DIR`` and ``--run=DIR`` both work).
        variable: The environment variable read when the option is not given.
        argv: The command line (default ``sys.argv``).

    Returns:
        The value, or ``None`` when neither is set.
    """
    args = list(sys.argv if argv is None else argv)
    if "--" in args:
        rest = args[args.index("--") + 1 :]
        for k, arg in enumerate(rest):
            if arg == flag and k + 1 < len(rest):
                return rest[k + 1]
            if arg.startswith(f"{flag}="):
                return arg.split("=", 1)[1]
    return os.environ.get(variable) or None


def run_from_argv(argv: Sequence[str] | None = None) -> str | None:
    """The ``--run DIR`` given after ``--`` to ``solara run`` (or ``MLM_APP_RUN``)."""
    return option_from_argv("--run", "MLM_APP_RUN", argv)


def open_or_error[Opened](
    opener: Callable[[str], Opened], path: str
) -> tuple[Opened | None, str | None]:
    """Open what a page shows (a saved run, a history) and keep a failure as its message.

    Args:
        opener: Reads ``path`` (raises ``OSError``, ``ValueError`` or ``KeyError`` when it
            cannot).
        path: What to open.

    Returns:
        ``(opened, None)``, or ``(None, message)`` for the page to show (the failure is logged).
    """
    try:
        return opener(path), None
    except (OSError, ValueError, KeyError) as error:
        logger.warning("cannot open %s: %s", path, error)
        return None, str(error)
