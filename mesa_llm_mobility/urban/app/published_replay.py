"""The paper's published GATSim run as a saved run the app replays (``-- --published``).

The tables shipped in the package (:func:`~mesa_llm_mobility.urban.published.load_published_run`)
are stored once as an urban run directory (:func:`~mesa_llm_mobility.urban.published.write_run_directory`,
about 2 s) in the user's cache folder, and the app opens that folder like any saved run. The
folder's name carries a hash of the shipped files, so a package with other data writes a new one.
It is written under a temporary name and renamed when whole: an interrupted write is never
opened, and two servers starting at once do not read each other's half.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import threading
from pathlib import Path

from mesa_llm_mobility.experiment.run_directory import RunDirectory, RunDirectoryError
from mesa_llm_mobility.urban.published import (
    bundled_folder,
    load_published_run,
    write_run_directory,
)

CACHE_VARIABLE = "MLM_CACHE_DIR"
"""Environment variable naming the cache folder (else ``$XDG_CACHE_HOME/mesa-llm-mobility``,
else ``~/.cache/mesa-llm-mobility``)."""
PUBLISHED_OPTION = "--published"
"""The app's option (after ``--``) that opens the published run."""
PUBLISHED_VARIABLE = "MLM_APP_PUBLISHED"
"""Environment variable that opens the published run when set to ``1``."""

_writing = threading.Lock()
"""One write at a time within a server (sessions share the folder, never a model)."""


def cache_dir() -> Path:
    """Where the app keeps what it derives from shipped data (see :data:`CACHE_VARIABLE`)."""
    named = os.environ.get(CACHE_VARIABLE)
    if named:
        return Path(named)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mesa-llm-mobility"


def shipped_data_hash() -> str:
    """The first 10 hex digits of the sha256 of the shipped published tables (names and bytes)."""
    digest = hashlib.sha256()
    for path in sorted(bundled_folder().iterdir()):
        if path.is_file():
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


def published_run_dir(cache: str | Path | None = None) -> Path:
    """The published run as a saved urban run, written into ``cache`` the first time.

    Args:
        cache: The cache folder (default :func:`cache_dir`).

    Returns:
        The run directory (``<cache>/gatsim_published_<hash>``).

    Raises:
        OSError: If the cache folder cannot be written.
    """
    target = Path(cache or cache_dir()) / f"gatsim_published_{shipped_data_hash()}"
    with _writing:
        if _whole(target):
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        try:
            write_run_directory(load_published_run(), partial)
            shutil.rmtree(
                target, ignore_errors=True
            )  # a folder left by an older version
            partial.rename(target)
        except OSError:
            if not _whole(target):  # not another server that finished first
                raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return target


def _whole(folder: Path) -> bool:
    """Whether ``folder`` holds the published run with every day of its link states."""
    try:
        run = RunDirectory.open(folder, model="urban")
    except (RunDirectoryError, OSError):
        return False
    days = int(run.metadata.get("extra", {}).get("published", {}).get("days", 0))
    return (
        days > 0
        and run.table_days("link_states") == list(range(1, days + 1))
        and (folder / "population.json").is_file()
    )


def published_from_argv(argv: list[str] | None = None) -> bool:
    """Whether ``--published`` follows ``--`` on the command line (or ``MLM_APP_PUBLISHED=1``)."""
    args = list(sys.argv if argv is None else argv)
    rest = args[args.index("--") + 1 :] if "--" in args else []
    return PUBLISHED_OPTION in rest or os.environ.get(PUBLISHED_VARIABLE) == "1"
