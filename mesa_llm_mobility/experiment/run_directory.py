"""Run directories: everything one simulation run leaves on disk, in standard places.

A run directory is model-agnostic. It holds::

    <run>/
        config.json          the run's parameters (JSON)
        metadata.json        format version, the model, package, Python and Mesa versions,
                             creation time (UTC), extras
        ledger.jsonl         the decision ledger (written by the brain, see cognition.ledger)
        memory/              the agents' memory store (Chroma), if any
        tables/<name>.parquet               a whole-run table
        tables/<name>/day=<d>.parquet       one part per day of a per-day table
        checkpoints/checkpoint_<n>.pkl      the model's state at its checkpoint n (pickle); what
                                            n counts is the model's (urban: days completed,
                                            evacuation: steps, trajectory: days generated)
        checkpoints/checkpoint_<n>_memory/  the memory store then, if the model has one
        checkpoints/index.json              number, file, sha256 and creation time of each
        plots/               figures

Every file the class writes is written atomically (a temporary file in the same folder, then
``os.replace``), so a crash never leaves a half-written config, table part or checkpoint under
its final name. Appending a day writes one new table part and never rewrites earlier ones.

``metadata.json`` carries :data:`FORMAT_VERSION` and the model's name: :meth:`RunDirectory.open`
refuses, in one line that says what to do, a folder of another format or another model. A run
can be resumed from :meth:`RunDirectory.latest_checkpoint` and forked from any checkpoint with
changed parameters by :func:`fork`; the fork records where it came from, so a brain can replay
the source's ledger (:attr:`RunDirectory.source_ledger_path`).

Checkpoints are pickles: open only run directories you trust.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.metadata
import json
import logging
import os
import pickle
import platform
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mesa_llm_mobility import __version__
from mesa_llm_mobility.experiment.storage import to_jsonable, write_atomic, write_json
from mesa_llm_mobility.user_files import read_text

logger = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
METADATA_FILE = "metadata.json"
LEDGER_FILE = "ledger.jsonl"
MEMORY_DIR = "memory"
TABLES_DIR = "tables"
CHECKPOINTS_DIR = "checkpoints"
PLOTS_DIR = "plots"
CHECKPOINT_INDEX = "index.json"

FORMAT_VERSION = 2
"""The run-directory layout this version writes and reads (``metadata.json``'s
``format_version``). 2: checkpoints numbered neutrally, the model named in the metadata."""

_TABLE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_PART_NAME = re.compile(r"^day=(\d+)\.parquet$")


class RunDirectoryError(ValueError):
    """A run directory is missing, incomplete or invalid; the message names the path."""


class CheckpointError(RunDirectoryError):
    """A checkpoint is missing, corrupt or truncated; the message names the file."""


# ---------------------------------------------------------------------------- files
def _read_json(path: Path) -> Any:
    if not path.exists():
        raise RunDirectoryError(f"{path}: missing")
    text = read_text(path, "JSON file", RunDirectoryError)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise RunDirectoryError(
            f"{path}: not valid JSON (line {error.lineno}, column {error.colno}): {error.msg}"
        ) from error


def _check_number(number: Any, what: str = "day") -> int:
    if isinstance(number, np.integer):
        number = int(number)
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise ValueError(f"{what} must be a whole number >= 0, got {number!r}")
    return number


def _utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------- the run directory
class RunDirectory:
    """One run's folder: config, metadata, ledger, memory, tables, checkpoints and plots.

    ``RunDirectory(path)`` only binds the path; use :meth:`create` for a new run and
    :meth:`open` for an existing one (which checks that it is a run directory).

    Example::

        run = RunDirectory.create("runs/baseline", {"days": 3, "seed": 0}, model="urban")
        run.write_table("trips", trips, day=1)
        run.write_checkpoint(1, {"model": state})
        ...
        run = RunDirectory.open("runs/baseline", model="urban")
        number, state = run.latest_checkpoint()

    Args:
        path: The run's folder.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDirectory({str(self.path)!r})"

    # ------------------------------------------------------------------ create / open
    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        config: Mapping[str, Any],
        *,
        model: str,
        model_class: str | None = None,
        overwrite: bool = False,
        extra: Mapping[str, Any] | None = None,
    ) -> RunDirectory:
        """Create a run directory with its ``config.json`` and ``metadata.json``.

        Args:
            path: The run's folder (created with its parents).
            config: The run's parameters; converted by :func:`to_jsonable`.
            model: The model's name (``"urban"``), checked by :meth:`open`.
            model_class: The model class's import path (``module.Class``), which the run
                lifecycle imports to resume the run.
            overwrite: Replace an existing run directory (one with a ``config.json``). A
                non-empty folder that is not a run directory is never deleted.
            extra: Free-form metadata, e.g. the embedding actually used (also settable later
                with :meth:`update_metadata`).

        Returns:
            The new run directory.

        Raises:
            RunDirectoryError: If ``path`` is a file, or a non-empty folder and ``overwrite`` is
                False, or a non-empty folder that is not a run directory.
            TypeError, ValueError: If the config holds a value JSON cannot hold.
        """
        run = cls(path)
        config_json = to_jsonable(dict(config), "config")
        extra_json = to_jsonable(dict(extra or {}), "extra")
        target = run.path
        if target.exists() and not target.is_dir():
            raise RunDirectoryError(f"{target}: exists and is not a directory")
        _remove_interrupted_creation(target)
        if target.is_dir() and any(target.iterdir()):
            if not overwrite:
                raise RunDirectoryError(
                    f"{target}: a non-empty directory already exists; pick another path or "
                    "pass overwrite=True (mlm: --overwrite) to replace the run stored there"
                )
            if not run.config_path.is_file():
                raise RunDirectoryError(
                    f"{target}: is not empty and is not a run directory (no {CONFIG_FILE}); "
                    "refusing to delete it"
                )
            logger.info("replacing run directory %s", target)
            shutil.rmtree(target)
        made = not target.exists()
        target.mkdir(parents=True, exist_ok=True)
        try:
            write_json(run.config_path, config_json)
            write_json(
                run.metadata_path, _base_metadata(extra_json, model, model_class)
            )
        except BaseException:
            if made:  # a full disk, say: leave nothing behind
                shutil.rmtree(target, ignore_errors=True)
            raise
        logger.info("created run directory %s", target)
        return run

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, model: str | None = None
    ) -> RunDirectory:
        """Open an existing run directory, checking its config, metadata, format and model.

        Args:
            path: The run's folder.
            model: The model the caller expects (``"urban"``); None accepts any.

        Returns:
            The run directory.

        Raises:
            RunDirectoryError: If the folder does not exist, is not a run directory (no
                ``config.json``), lacks ``metadata.json``, either file is not valid JSON
                (the message gives the line and column), it was written in another format
                (:data:`FORMAT_VERSION`) or by another model.
        """
        run = cls(path)
        if not run.path.exists():
            raise RunDirectoryError(f"{run.path}: no such run directory")
        if not run.path.is_dir():
            raise RunDirectoryError(f"{run.path}: not a directory")
        if not run.config_path.is_file():
            raise RunDirectoryError(
                f"{run.path}: not a run directory (missing {CONFIG_FILE})"
            )
        if not run.metadata_path.is_file():
            raise RunDirectoryError(
                f"{run.path}: incomplete run directory (missing {METADATA_FILE})"
            )
        run.config  # noqa: B018 - parse now, so that errors show at open
        metadata = run.metadata
        version = metadata.get("format_version")
        if version != FORMAT_VERSION:
            written = metadata.get("package_version", "an unknown version")
            raise RunDirectoryError(
                f"{run.path}: written by mesa-llm-mobility {written} in run-directory format "
                f"{version if version is not None else 1}; this version reads format "
                f"{FORMAT_VERSION}: run it again, or open it with the version that wrote it"
            )
        if model is not None and metadata.get("model") != model:
            raise RunDirectoryError(
                f"{run.path}: a run of the {metadata.get('model')} model, not of the "
                f"{model} model: open it with its own model's command"
            )
        return run

    @property
    def model_name(self) -> str:
        """The name of the model that wrote the run (``metadata.json``)."""
        return str(self.metadata.get("model"))

    # ------------------------------------------------------------------ locations
    @property
    def config_path(self) -> Path:
        """``config.json``: the resolved configuration."""
        return self.path / CONFIG_FILE

    @property
    def metadata_path(self) -> Path:
        """``metadata.json``: versions, creation time and free-form extras."""
        return self.path / METADATA_FILE

    @property
    def ledger_path(self) -> Path:
        """``ledger.jsonl``: the decision ledger of this run."""
        return self.path / LEDGER_FILE

    @property
    def memory_dir(self) -> Path:
        """``memory/``: the agents' persistent memory store."""
        return self.path / MEMORY_DIR

    @property
    def tables_dir(self) -> Path:
        """``tables/``: Parquet tables."""
        return self.path / TABLES_DIR

    @property
    def checkpoints_dir(self) -> Path:
        """``checkpoints/``: pickled states and their index."""
        return self.path / CHECKPOINTS_DIR

    @property
    def plots_dir(self) -> Path:
        """``plots/``: figures."""
        return self.path / PLOTS_DIR

    # ------------------------------------------------------------------ config and metadata
    @property
    def config(self) -> dict[str, Any]:
        """The resolved configuration, read from ``config.json``."""
        data = _read_json(self.config_path)
        if not isinstance(data, dict):
            raise RunDirectoryError(f"{self.config_path}: expected a JSON object")
        return data

    @property
    def metadata(self) -> dict[str, Any]:
        """The run's metadata, read from ``metadata.json``."""
        data = _read_json(self.metadata_path)
        if not isinstance(data, dict):
            raise RunDirectoryError(f"{self.metadata_path}: expected a JSON object")
        return data

    def update_metadata(self, extra: Mapping[str, Any]) -> dict[str, Any]:
        """Merge free-form values into the metadata's ``extra`` (e.g. the embedding used).

        Args:
            extra: Values to add or replace.

        Returns:
            The updated metadata.
        """
        metadata = self.metadata
        metadata["extra"] = {
            **metadata.get("extra", {}),
            **to_jsonable(dict(extra), "extra"),
        }
        write_json(self.metadata_path, metadata)
        return metadata

    @property
    def source_ledger_path(self) -> Path | None:
        """The ledger of the run this one was forked from (for replay), or None."""
        source = self.metadata.get("forked_from")
        return None if source is None else Path(source) / LEDGER_FILE

    # ------------------------------------------------------------------ tables
    def table_path(self, name: str, day: int | None = None) -> Path:
        """Where table ``name`` (or its part for ``day``) is stored.

        Args:
            name: Table name (letters, digits, ``_``, ``.``, ``-``).
            day: Day of a per-day part, or None for a whole-run table.

        Returns:
            ``tables/<name>.parquet`` or ``tables/<name>/day=<d>.parquet``.
        """
        if not isinstance(name, str) or not _TABLE_NAME.match(name):
            raise ValueError(
                f"table name {name!r}: use letters, digits, '_', '.' and '-' "
                "(starting with a letter or digit)"
            )
        if day is None:
            return self.tables_dir / f"{name}.parquet"
        return self.tables_dir / name / f"day={_check_number(day)}.parquet"

    def write_table(
        self, name: str, frame: pd.DataFrame, *, day: int | None = None
    ) -> Path:
        """Write a table as Parquet, whole or as one day's part.

        A per-day part stores the frame with a ``day`` column (added if missing); writing the
        same day again replaces that part only. A table is either whole or per-day, not both.
        The index is not stored: ``reset_index()`` first to keep a meaningful one.

        Args:
            name: Table name (letters, digits, ``_``, ``.``, ``-``).
            frame: The table.
            day: Day of the part, or None for a whole-run table.

        Returns:
            The file written.

        Raises:
            ValueError: For a bad name or day, or a ``day`` column that disagrees with ``day``.
            RunDirectoryError: If the table already exists in the other layout.
        """
        path = self.table_path(name, day)
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(
                f"table {name!r}: expected a pandas DataFrame, got {type(frame).__name__}"
            )
        other = self.table_path(name) if day is not None else self.tables_dir / name
        if other.exists():
            layout = "whole-run" if day is not None else "per-day"
            raise RunDirectoryError(
                f"{other}: table {name!r} is already stored {layout}"
            )
        if day is not None:
            if "day" in frame.columns:
                if not (frame["day"] == day).all():
                    raise ValueError(
                        f"table {name!r}: column 'day' disagrees with day={day}"
                    )
                frame = frame.drop(columns="day")
            frame = frame.assign(day=np.int64(day))
        write_atomic(path, frame.to_parquet(index=False))
        logger.debug("wrote %s (%d rows)", path, len(frame))
        return path

    def table_names(self) -> list[str]:
        """Names of the stored tables, sorted."""
        if not self.tables_dir.is_dir():
            return []
        names = {
            entry.name.removesuffix(".parquet") if entry.is_file() else entry.name
            for entry in self.tables_dir.iterdir()
            if not entry.name.startswith(".")
            and (entry.is_dir() or entry.name.endswith(".parquet"))
        }
        return sorted(names)

    def table_days(self, name: str) -> list[int]:
        """Days stored for the per-day table ``name`` (empty for a whole-run table)."""
        folder = self.tables_dir / name
        if not folder.is_dir():
            return []
        days = []
        for part in folder.iterdir():
            match = _PART_NAME.match(part.name)
            if match:
                days.append(int(match.group(1)))
        return sorted(days)

    def read_table(self, name: str, days: Sequence[int] | None = None) -> pd.DataFrame:
        """Read a table; the parts of a per-day table are concatenated in day order.

        Args:
            name: Table name.
            days: Read only these days' parts of a per-day table (in this order).

        Returns:
            The table (a per-day table has its ``day`` column).

        Raises:
            RunDirectoryError: If no such table exists (the message lists the stored ones),
                or ``days`` asks for a day it does not store or of a whole-run table.
        """
        whole = self.table_path(name)
        if whole.is_file() and days is None:
            return pd.read_parquet(whole)
        stored_days = self.table_days(name)
        if not stored_days and not whole.is_file():
            stored = ", ".join(self.table_names()) or "none"
            raise RunDirectoryError(
                f"{self.tables_dir}: no table {name!r} (stored tables: {stored})"
            )
        if days is not None:
            missing = [day for day in days if day not in stored_days]
            if missing or not stored_days:
                raise RunDirectoryError(
                    f"{self.tables_dir}: table {name!r} has no day "
                    f"{', '.join(map(str, missing or days))} (stored days: "
                    f"{', '.join(map(str, stored_days)) or 'none, a whole-run table'})"
                )
            stored_days = list(days)
        parts = [pd.read_parquet(self.table_path(name, day)) for day in stored_days]
        return pd.concat(parts, ignore_index=True)

    # ------------------------------------------------------------------ checkpoints
    @property
    def checkpoint_index_path(self) -> Path:
        """``checkpoints/index.json``."""
        return self.checkpoints_dir / CHECKPOINT_INDEX

    def checkpoint_index(self) -> list[dict[str, Any]]:
        """Entries of the checkpoint index (number, file, sha256, created), in number order."""
        if not self.checkpoint_index_path.is_file():
            return []
        data = _read_json(self.checkpoint_index_path)
        entries = data.get("checkpoints") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise CheckpointError(
                f"{self.checkpoint_index_path}: expected an object with a 'checkpoints' list"
            )
        for k, entry in enumerate(entries):
            if not (
                isinstance(entry, dict)
                and isinstance(entry.get("number"), int)
                and isinstance(entry.get("file"), str)
                and isinstance(entry.get("sha256"), str)
            ):
                raise CheckpointError(
                    f"{self.checkpoint_index_path}: checkpoints[{k}] needs an integer "
                    f"'number' and string 'file' and 'sha256', got {entry!r}"
                )
        return sorted(entries, key=lambda entry: entry["number"])

    def checkpoint_numbers(self) -> list[int]:
        """The numbers of the run's checkpoints, ascending (what they count is the model's)."""
        return [entry["number"] for entry in self.checkpoint_index()]

    def checkpoint_path(self, number: int) -> Path:
        """``checkpoints/checkpoint_<n>.pkl``."""
        return (
            self.checkpoints_dir
            / f"checkpoint_{_check_number(number, 'checkpoint')}.pkl"
        )

    def memory_snapshot_path(self, number: int) -> Path:
        """``checkpoints/checkpoint_<n>_memory/``: the memory store at checkpoint ``number``."""
        return (
            self.checkpoints_dir
            / f"checkpoint_{_check_number(number, 'checkpoint')}_memory"
        )

    def write_checkpoint(self, number: int, state: Mapping[str, Any]) -> Path:
        """Write a state atomically as checkpoint ``number`` and record it in the index.

        The pickle is written to a temporary file and moved into place, then the index is
        rewritten the same way; a crash leaves at worst an unindexed (ignored) checkpoint.

        Args:
            number: The checkpoint's number (0 for the initial state; what it counts is the
                model's: days completed, steps).
            state: Picklable mapping, e.g. ``{"model": ...}``.

        Returns:
            The checkpoint file.
        """
        number = _check_number(number, "checkpoint")
        if not isinstance(state, Mapping):
            raise TypeError(
                f"checkpoint state must be a mapping, got {type(state).__name__}"
            )
        data = pickle.dumps(dict(state), protocol=pickle.HIGHEST_PROTOCOL)
        path = self.checkpoint_path(number)
        write_atomic(path, data)
        self._index_checkpoint(number, path, _sha256(data))
        logger.info("checkpoint %d written to %s", number, path)
        return path

    def remove_checkpoint(self, number: int) -> None:
        """Remove checkpoint ``number``: first from the index, then its file and snapshot.

        A crash in between leaves at worst an unindexed (ignored) file.

        Raises:
            CheckpointError: If there is no such checkpoint.
        """
        number = _check_number(number, "checkpoint")
        entries = self.checkpoint_index()
        kept = [entry for entry in entries if entry["number"] != number]
        if len(kept) == len(entries):
            raise CheckpointError(
                f"{self.checkpoints_dir}: no checkpoint {number} to remove"
            )
        write_json(self.checkpoint_index_path, {"checkpoints": kept})
        for entry in entries:
            if entry["number"] == number:
                (self.checkpoints_dir / entry["file"]).unlink(missing_ok=True)
        shutil.rmtree(self.memory_snapshot_path(number), ignore_errors=True)

    def _index_checkpoint(self, number: int, path: Path, sha256: str) -> None:
        entries = [e for e in self.checkpoint_index() if e["number"] != number]
        entries.append(
            {
                "number": number,
                "file": path.name,
                "sha256": sha256,
                "created": _utc_now(),
            }
        )
        entries.sort(key=lambda entry: entry["number"])
        write_json(self.checkpoint_index_path, {"checkpoints": entries})

    def _checkpoint_bytes(self, number: int) -> bytes:
        """Return the verified bytes of checkpoint ``number``."""
        number = _check_number(number, "checkpoint")
        entry = next(
            (e for e in self.checkpoint_index() if e["number"] == number), None
        )
        if entry is None:
            numbers = self.checkpoint_numbers()
            raise CheckpointError(
                f"{self.checkpoints_dir}: no checkpoint {number} "
                f"(checkpoints: {', '.join(map(str, numbers)) or 'none'})"
            )
        path = self.checkpoints_dir / entry["file"]
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise CheckpointError(f"{path}: checkpoint file is missing") from None
        if _sha256(data) != entry["sha256"]:
            raise CheckpointError(
                f"{path}: corrupt or truncated checkpoint (sha256 does not match the index)"
            )
        return data

    def read_checkpoint(self, number: int) -> dict[str, Any]:
        """Read and verify checkpoint ``number``.

        Raises:
            CheckpointError: If there is no such checkpoint, the file is missing, its sha256
                does not match the index (corrupt or truncated), or it cannot be unpickled.
        """
        data = self._checkpoint_bytes(number)
        path = self.checkpoint_path(number)
        try:
            # pickles of our own runs; the docs say to open only trusted run directories
            return pickle.loads(data)  # noqa: S301
        except Exception as error:
            raise CheckpointError(
                f"{path}: cannot unpickle checkpoint ({type(error).__name__}: {error})"
            ) from error

    def latest_checkpoint(
        self, *, skip_corrupt: bool = False
    ) -> tuple[int, dict[str, Any]] | None:
        """Return the latest checkpoint as ``(number, state)``, or None if there is none.

        Args:
            skip_corrupt: Fall back to the previous good checkpoint when the latest is corrupt,
                truncated or missing (logging a warning that names the file) instead of raising.

        Raises:
            CheckpointError: If the latest checkpoint is bad and ``skip_corrupt`` is False.
        """
        for number in reversed(self.checkpoint_numbers()):
            try:
                return number, self.read_checkpoint(number)
            except CheckpointError as error:
                if not skip_corrupt:
                    raise
                logger.warning("skipping checkpoint %d: %s", number, error)
        return None


def _remove_interrupted_creation(target: Path) -> None:
    """Empty ``target`` if all it holds is the temporary files of a creation cut short.

    A process killed inside :meth:`RunDirectory.create` (a sweep worker whose pool broke, a
    run stopped at its start) can leave only ``.config.json.*.tmp`` / ``.metadata.json.*.tmp``
    behind; such a folder never held a run, so creating one there again is not an overwrite.
    """
    if not target.is_dir():
        return
    entries = list(target.iterdir())
    if entries and all(_INTERRUPTED_WRITE.fullmatch(entry.name) for entry in entries):
        for entry in entries:
            entry.unlink(missing_ok=True)


_INTERRUPTED_WRITE = re.compile(
    rf"\.(?:{re.escape(CONFIG_FILE)}|{re.escape(METADATA_FILE)})\..+\.tmp"
)


def _base_metadata(
    extra: Mapping[str, Any], model: str, model_class: str | None
) -> dict[str, Any]:
    try:
        mesa_version = importlib.metadata.version("mesa")
    except importlib.metadata.PackageNotFoundError:
        mesa_version = None
    return {
        "format_version": FORMAT_VERSION,
        "model": model,
        "model_class": model_class,
        "package": "mesa-llm-mobility",
        "package_version": __version__,
        "python": platform.python_version(),
        "mesa_version": mesa_version,
        "platform": platform.platform(),
        "created": _utc_now(),
        "extra": dict(extra),
    }


# ---------------------------------------------------------------------------- fork
def fork(
    source: RunDirectory | str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    at: int,
    config: Mapping[str, Any],
    changes: Mapping[str, Any],
    overwrite: bool = False,
) -> RunDirectory:
    """Start a new run directory from checkpoint ``at`` of another, with a new config.

    The fork gets ``config`` (the source's parameters with ``changes`` applied), metadata
    recording ``forked_from`` (the source path), ``forked_at`` and the changes, the verified
    checkpoint ``at`` as its only (so latest) checkpoint, keeping its number, that checkpoint's
    memory snapshot if it has one, and the parts of per-day tables for days ``<= at`` (the
    caller's model numbers its checkpoints by day when it writes per-day tables; whole-run
    tables are not copied: they describe the source's whole run). The source's ledger is not
    copied: :attr:`RunDirectory.source_ledger_path` points at it for replay.

    Args:
        source: The run to fork (a path or an opened run).
        target: The new run's folder.
        at: The number of the source checkpoint to start from.
        config: The fork's parameters.
        changes: What differs from the source's (recorded in the metadata).
        overwrite: Replace an existing run directory at ``target``.

    Returns:
        The new run directory.

    Raises:
        RunDirectoryError: If ``source`` is not a run directory or ``target`` is taken.
        CheckpointError: If the source has no good checkpoint ``at``.
    """
    src = source if isinstance(source, RunDirectory) else RunDirectory.open(source)
    at = _check_number(at, "checkpoint")
    data = src._checkpoint_bytes(at)  # verified before anything is written
    if src.path.resolve() == Path(target).resolve():
        raise RunDirectoryError(f"{target}: a run cannot be forked into itself")
    metadata = src.metadata
    run = RunDirectory.create(
        target,
        config,
        model=str(metadata.get("model")),
        model_class=metadata.get("model_class"),
        overwrite=overwrite,
        extra=dict(metadata.get("extra", {})),
    )
    forked = run.metadata
    forked.update(
        forked_from=str(src.path.resolve()),
        forked_at=at,
        changes=to_jsonable(dict(changes), "changes"),
    )
    write_json(run.metadata_path, forked)

    snapshot = src.memory_snapshot_path(at)
    if snapshot.is_dir():
        shutil.copytree(snapshot, run.memory_snapshot_path(at))
    path = run.checkpoint_path(at)
    write_atomic(path, data)
    run._index_checkpoint(at, path, _sha256(data))

    for name in src.table_names():
        for day in src.table_days(name):
            if day <= at:
                part = run.table_path(name, day)
                part.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src.table_path(name, day), part)
    logger.info("forked %s (checkpoint %d) into %s", src.path, at, run.path)
    return run
