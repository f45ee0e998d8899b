"""Files of a run directory: JSON-safe configuration values and atomic writes.

:func:`to_jsonable` turns a configuration into plain JSON types (naming where a value JSON cannot
hold sits); :func:`write_atomic` and :func:`write_json` write through a temporary file in the same
folder and ``os.replace``, so a crash never leaves a half-written file under its final name.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import enum
import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any

import numpy as np


def to_jsonable(value: Any, where: str = "config") -> Any:
    """Convert a configuration value to plain JSON types.

    Paths become strings, numpy scalars and arrays Python numbers and lists, tuples and sets
    lists (sets sorted), enums their value, dates ISO strings, dataclasses and pydantic models
    dicts; mapping keys must be strings (ints, floats and bools are converted with ``str``).

    Args:
        value: The value to convert.
        where: Where the value sits, for error messages (e.g. ``config['brain']``).

    Returns:
        A value made of dicts, lists, strings, numbers, booleans and None.

    Raises:
        TypeError: For a value JSON cannot hold, naming where it is.
        ValueError: For a NaN or infinite number (not valid JSON), naming where it is.
    """
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, np.generic):
        return to_jsonable(value.item(), where)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: {value!r} is not valid JSON")
        return float(value)
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value, where)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist(), where)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value), where)
    if hasattr(value, "model_dump") and not isinstance(value, type):  # pydantic
        return to_jsonable(value.model_dump(mode="json"), where)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(key, np.generic):
                key = key.item()
            if isinstance(key, bool | int | float):
                key = str(key)
            if not isinstance(key, str):
                raise TypeError(
                    f"{where}: key {key!r} of type {type(key).__name__} is not a string"
                )
            out[key] = to_jsonable(item, f"{where}[{key!r}]")
        return out
    if isinstance(value, set | frozenset):
        items = [to_jsonable(item, f"{where}[...]") for item in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    if isinstance(value, list | tuple):
        return [to_jsonable(item, f"{where}[{k}]") for k, item in enumerate(value)]
    raise TypeError(
        f"{where}: cannot store a value of type {type(value).__name__} in JSON ({value!r})"
    )


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``.

    Raises:
        OSError: Naming ``path`` (a full disk, a folder without write permission): the
            command line's error boundary prints it as ``<path>: <problem>``.
    """
    temp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
        )
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException as error:
        if temp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
        if isinstance(error, OSError) and error.filename is None:
            raise OSError(
                error.errno, error.strerror or str(error), str(path)
            ) from error
        raise


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` as indented UTF-8 JSON (no NaN) through :func:`write_atomic`."""
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_atomic(path, text.encode())
