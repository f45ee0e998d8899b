"""Stay points: the table schema, validating loaders (CSV, Parquet, NumoSim) and the split.

A stay-point table has one row per visit: who (``agent_id``), where (``poi_id``, ``latitude``,
``longitude``), what (``activity``, a name of :data:`~.activities.ACTIVITIES`) and when
(``start``, ``end``: timezone-aware timestamps). :func:`validate_staypoints` checks a table and
names the file, the 1-based data row and the field of the first problem; every loader ends with
it, so a table that got past a loader is clean: no missing column or value, known activities,
POIs with coordinates, no visit ending before it starts, no overlapping visits of one person.

NumoSim's layout is two tables: stays ``agent_id, poi_id, start_datetime, end_datetime`` (and
optionally ``act_type``) and POIs ``poi_id, latitude, longitude, act_types``
(:func:`read_numosim`, :func:`write_numosim`). Any other CSV or Parquet file is read with a
column mapping (:func:`read_staypoints`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mesa_llm_mobility.trajectory.activities import ACTIVITIES, ACTIVITY_CODES
from mesa_llm_mobility.user_files import UserFileError

STAY_COLUMNS: tuple[str, ...] = (
    "agent_id",
    "poi_id",
    "latitude",
    "longitude",
    "activity",
    "start",
    "end",
)
"""The columns of a stay-point table, in order."""

ROW_COLUMN = "source_row"
"""Optional column: the 1-based data row of each stay in the file it was read from."""

NUMOSIM_STAYS_FILE = "staypoints"
NUMOSIM_POIS_FILE = "poi"
NUMOSIM_STAY_COLUMNS = ("agent_id", "poi_id", "start_datetime", "end_datetime")
NUMOSIM_POI_COLUMNS = ("poi_id", "latitude", "longitude", "act_types")


class StayPointError(UserFileError):
    """A stay-point file (or table) cannot be used; the message names file, row and field."""


def _show(value: Any) -> str:
    """A value for a message: numpy scalars as plain Python values."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _source(frame: pd.DataFrame, default: str = "stay points") -> str:
    return str(frame.attrs.get("source", default))


def _row_label(frame: pd.DataFrame, position: int) -> int:
    """The 1-based data row of the stay at ``position`` (its source row when known)."""
    if ROW_COLUMN in frame.columns:
        return int(frame[ROW_COLUMN].iloc[position])
    return position + 1


# ---------------------------------------------------------------------------- activities
def activity_names(values: pd.Series, source: str, field: str) -> pd.Series:
    """Map activity codes (``0``-``15``) or names to names, refusing anything else.

    Args:
        values: The column (integers, numeric strings or names).
        source: The file, for the message.
        field: The column's name in the file, for the message.

    Returns:
        The activity names.

    Raises:
        StayPointError: ``"<file>: row N, field <field>: unknown activity code 17 ..."``.
    """
    by_name = {name.lower(): name for name in ACTIVITIES}
    by_code = {str(code): name for code, name in ACTIVITY_CODES.items()}
    text = values.astype(str).str.strip()
    text = text.str.replace(r"\.0$", "", regex=True)  # 5.0 from a float column
    names = text.map(by_code)
    names = names.fillna(text.str.lower().map(by_name))
    unknown = np.flatnonzero(names.isna().to_numpy())
    if unknown.size:
        position = int(unknown[0])
        raise StayPointError(
            f"{source}: row {position + 1}, field {field}: unknown activity code "
            f"{values.iloc[position]} (codes 0-15 or names {', '.join(ACTIVITIES)})"
        )
    return names


_CODE_LIST = re.compile(r"-?\d+")


def _first_code(value: Any) -> Any:
    """The first activity code of a POI's ``act_types`` (a list, an array, "[5, 7]" or 5)."""
    if isinstance(value, list | tuple | np.ndarray):
        return value[0] if len(value) else None
    if isinstance(value, str):
        found = _CODE_LIST.search(value)
        return found.group(0) if found else (value.strip() or None)
    return value


# ---------------------------------------------------------------------------- times
def _timestamps(
    values: pd.Series, timezone: str | None, source: str, field: str
) -> pd.Series:
    """Parse a time column into timezone-aware timestamps in ``timezone``.

    Naive times are taken as local times of ``timezone`` (UTC when ``None``); aware ones are
    converted to it (kept in their own zone when ``None``).
    """
    if isinstance(
        values.dtype, pd.DatetimeTZDtype
    ) or pd.api.types.is_datetime64_any_dtype(values.dtype):
        parsed = values
    else:
        try:
            parsed = pd.to_datetime(values, format="ISO8601", errors="coerce")
        except (ValueError, TypeError):  # mixed UTC offsets
            parsed = pd.to_datetime(values, format="ISO8601", errors="coerce", utc=True)
    bad = np.flatnonzero(parsed.isna().to_numpy() & values.notna().to_numpy())
    if bad.size:
        position = int(bad[0])
        raise StayPointError(
            f"{source}: row {position + 1}, field {field}: not a timestamp: {_show(values.iloc[position])}"
        )
    if parsed.dt.tz is None:
        try:
            return parsed.dt.tz_localize(
                timezone or "UTC",
                ambiguous=np.zeros(len(parsed), dtype=bool),
                nonexistent="shift_forward",
            )
        except Exception as error:
            raise StayPointError(f"{source}: field {field}: {error}") from None
    return parsed if timezone is None else parsed.dt.tz_convert(timezone)


# ---------------------------------------------------------------------------- validation
def _require_columns(
    frame: pd.DataFrame, columns: tuple[str, ...], source: str
) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise StayPointError(
            f"{source}: missing column {missing[0]!r} (has: {', '.join(map(str, frame.columns))})"
        )


def _first_null(frame: pd.DataFrame, columns: tuple[str, ...], source: str) -> None:
    for column in columns:
        null = np.flatnonzero(frame[column].isna().to_numpy())
        if null.size:
            row = _row_label(frame, int(null[0]))
            raise StayPointError(f"{source}: row {row}, field {column}: missing value")


def _check_coordinates(
    frame: pd.DataFrame, source: str
) -> tuple[np.ndarray, np.ndarray]:
    """Latitudes and longitudes as floats; a missing or impossible one names its POI.

    Raises:
        StayPointError: ``"<file>: row N, field latitude: POI 11 has no valid coordinate"``.
    """
    checked = []
    for field, limit in (("latitude", 90.0), ("longitude", 180.0)):
        values = pd.to_numeric(frame[field], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(values) | (np.abs(values) > limit)
        if bad.any():
            position = int(np.flatnonzero(bad)[0])
            raise StayPointError(
                f"{source}: row {_row_label(frame, position)}, field {field}: POI "
                f"{_show(frame['poi_id'].iloc[position])} has no valid coordinate "
                f"({_show(frame[field].iloc[position])})"
            )
        checked.append(values)
    return checked[0], checked[1]


def validate_staypoints(stays: pd.DataFrame, source: str | None = None) -> pd.DataFrame:
    """Check a stay-point table and return it sorted by agent and start.

    Args:
        stays: A table with :data:`STAY_COLUMNS` (and optionally :data:`ROW_COLUMN`).
        source: The file it came from, for messages (default: ``stays.attrs["source"]``).

    Returns:
        The table, sorted by ``agent_id`` then ``start`` (stable), with a fresh index; its
        ``attrs["source"]`` is kept.

    Raises:
        StayPointError: For the first problem: a missing column or value, an unknown
            activity, a POI without valid coordinates, naive or unparsable times, a visit that
            ends before it starts, or two overlapping visits of one person, naming the file,
            the row and the field.
    """
    source = source or _source(stays)
    _require_columns(stays, STAY_COLUMNS, source)
    _first_null(stays, ("agent_id", "poi_id", "activity", "start", "end"), source)
    unknown = ~stays["activity"].isin(ACTIVITIES).to_numpy()
    if unknown.any():
        position = int(np.flatnonzero(unknown)[0])
        raise StayPointError(
            f"{source}: row {_row_label(stays, position)}, field activity: unknown activity "
            f"{_show(stays['activity'].iloc[position])}"
        )
    _check_coordinates(stays, source)
    for field in ("start", "end"):
        if not isinstance(stays[field].dtype, pd.DatetimeTZDtype):
            raise StayPointError(
                f"{source}: field {field}: times must be timezone-aware timestamps "
                f"(got {stays[field].dtype})"
            )
    backwards = (stays["end"] < stays["start"]).to_numpy()
    if backwards.any():
        position = int(np.flatnonzero(backwards)[0])
        raise StayPointError(
            f"{source}: row {_row_label(stays, position)}, field end: the visit ends "
            f"({stays['end'].iloc[position]}) before it starts ({stays['start'].iloc[position]})"
        )
    ordered = stays.sort_values(["agent_id", "start"], kind="stable").reset_index(
        drop=True
    )
    ordered.attrs["source"] = source
    same_agent = (
        ordered["agent_id"].to_numpy()[1:] == ordered["agent_id"].to_numpy()[:-1]
    )
    overlap = same_agent & (
        ordered["start"].to_numpy()[1:] < ordered["end"].to_numpy()[:-1]
    )
    if overlap.any():
        position = int(np.flatnonzero(overlap)[0]) + 1
        raise StayPointError(
            f"{source}: row {_row_label(ordered, position)}, field start: the visit of "
            f"{_show(ordered['agent_id'].iloc[position])} starting {ordered['start'].iloc[position]} "
            f"overlaps the one of row {_row_label(ordered, position - 1)} ending "
            f"{ordered['end'].iloc[position - 1]}"
        )
    return ordered


# ---------------------------------------------------------------------------- files
def _read_table(path: Path, what: str, *, rows: int | None = None) -> pd.DataFrame:
    """Read a CSV or Parquet file (by suffix), with one-line errors naming it.

    ``rows=0`` reads only a CSV's header.
    """
    if not path.exists():
        raise StayPointError(f"{path}: no such {what}")
    if path.is_dir():
        raise StayPointError(f"{path}: is a directory, not a {what}")
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            return pd.read_parquet(path)
        if suffix in (".csv", ".gz"):
            return pd.read_csv(path, encoding="utf-8", nrows=rows)
    except UnicodeDecodeError as error:
        raise StayPointError(
            f"{path}: {what} is not UTF-8 text (byte 0x{error.object[error.start]:02x} "
            f"at offset {error.start}); save it as UTF-8"
        ) from None
    except Exception as error:
        raise StayPointError(f"{path}: cannot read {what} ({error})") from None
    raise StayPointError(
        f"{path}: unknown {what} format {suffix!r} (use .csv or .parquet)"
    )


def _with_rows(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    frame = frame.copy()
    frame[ROW_COLUMN] = np.arange(1, len(frame) + 1)
    frame.attrs["source"] = source
    return frame


def read_staypoints(
    path: str | Path,
    *,
    columns: Mapping[str, str] | None = None,
    timezone: str | None = None,
) -> pd.DataFrame:
    """Read a stay-point CSV or Parquet file with one row per visit.

    Args:
        path: The file (``.csv`` or ``.parquet``).
        columns: Schema column -> the file's column, for the columns named differently
            (e.g. ``{"start": "arrival", "activity": "act_type"}``).
        timezone: The time zone of naive times, and the one aware times are converted to
            (``None``: naive times are UTC, aware ones keep their zone).

    Returns:
        The validated table (:data:`STAY_COLUMNS` plus :data:`ROW_COLUMN`), sorted by agent
        and start.

    Raises:
        StayPointError: Naming the file, row and field of the first problem.
    """
    path = Path(path)
    # positions, not a stored index (a Parquet file keeps its frame's), align the columns below
    raw = _read_table(path, "stay-point file").reset_index(drop=True)
    mapping = {name: name for name in STAY_COLUMNS} | dict(columns or {})
    unknown = set(mapping) - set(STAY_COLUMNS)
    if unknown:
        raise StayPointError(
            f"{path}: column mapping names unknown schema columns {sorted(unknown)} "
            f"(schema: {', '.join(STAY_COLUMNS)})"
        )
    source = str(path)
    file_columns = tuple(mapping[name] for name in STAY_COLUMNS)
    _require_columns(raw, file_columns, source)
    frame = pd.DataFrame({name: raw[mapping[name]].to_numpy() for name in STAY_COLUMNS})
    frame.attrs["source"] = source
    frame = _with_rows(frame, source)
    _first_null(frame, ("agent_id", "poi_id", "activity", "start", "end"), source)
    frame["activity"] = activity_names(
        raw[mapping["activity"]], source, mapping["activity"]
    )
    for name in ("start", "end"):
        frame[name] = _timestamps(raw[mapping[name]], timezone, source, mapping[name])
    return validate_staypoints(frame, source)


def read_pois(path: str | Path) -> pd.DataFrame:
    """Read a NumoSim POI table ``poi_id, latitude, longitude, act_types``.

    Returns:
        The table with ``activity`` (the name of the first listed code) added.

    Raises:
        StayPointError: For a missing column, a POI without coordinates, a duplicate POI id or
            an unknown activity code, naming the file, the row and the field.
    """
    path = Path(path)
    source = str(path)
    pois = _read_table(path, "POI file")
    _require_columns(pois, NUMOSIM_POI_COLUMNS, source)
    pois = _with_rows(pois, source)
    _first_null(pois, ("poi_id",), source)
    pois["latitude"], pois["longitude"] = _check_coordinates(pois, source)
    duplicate = np.flatnonzero(pois["poi_id"].duplicated().to_numpy())
    if duplicate.size:
        position = int(duplicate[0])
        raise StayPointError(
            f"{source}: row {position + 1}, field poi_id: duplicate POI {_show(pois['poi_id'].iloc[position])}"
        )
    first = pois["act_types"].map(_first_code)
    missing = np.flatnonzero(first.isna().to_numpy())
    if missing.size:
        raise StayPointError(
            f"{source}: row {int(missing[0]) + 1}, field act_types: no activity code"
        )
    pois["activity"] = activity_names(first, source, "act_types")
    return pois


def _numosim_file(folder: Path, stem: str) -> Path:
    for suffix in (".parquet", ".csv"):
        candidate = folder / f"{stem}{suffix}"
        if candidate.exists():
            return candidate
    raise StayPointError(f"{folder}: no {stem}.parquet or {stem}.csv")


def read_numosim(
    stays: str | Path,
    pois: str | Path | None = None,
    *,
    timezone: str = "America/Los_Angeles",
) -> pd.DataFrame:
    """Read NumoSim's layout: a stay table joined with its POI table.

    Args:
        stays: The stay file (``agent_id, poi_id, start_datetime, end_datetime`` and optionally
            ``act_type``), or a folder holding ``staypoints.(parquet|csv)`` and
            ``poi.(parquet|csv)``.
        pois: The POI file (``poi_id, latitude, longitude, act_types``); default: ``poi.*``
            beside the stays.
        timezone: Time zone of naive times (NumoSim is Los Angeles).

    Returns:
        The validated stay-point table. A stay's activity is its ``act_type`` when the stay
        table has one, else its POI's first listed code.

    Raises:
        StayPointError: For the first problem, naming the file, the row and the field (a stay
            at a POI the POI table does not list is an unknown POI).
    """
    stays_path = Path(stays)
    if stays_path.is_dir():
        folder = stays_path
        stays_path = _numosim_file(folder, NUMOSIM_STAYS_FILE)
        pois_path = (
            Path(pois) if pois is not None else _numosim_file(folder, NUMOSIM_POIS_FILE)
        )
    else:
        pois_path = (
            Path(pois)
            if pois is not None
            else _numosim_file(stays_path.parent, NUMOSIM_POIS_FILE)
        )
    poi_table = read_pois(pois_path)
    source = str(stays_path)
    raw = _read_table(stays_path, "stay file")
    _require_columns(raw, NUMOSIM_STAY_COLUMNS, source)
    raw = _with_rows(raw, source)
    _first_null(raw, NUMOSIM_STAY_COLUMNS, source)
    lookup = poi_table.set_index("poi_id")
    known = raw["poi_id"].isin(lookup.index).to_numpy()
    if not known.all():
        position = int(np.flatnonzero(~known)[0])
        raise StayPointError(
            f"{source}: row {position + 1}, field poi_id: unknown POI {_show(raw['poi_id'].iloc[position])} "
            f"(not in {pois_path})"
        )
    located = lookup.loc[raw["poi_id"].to_numpy()]
    if "act_type" in raw.columns:
        _first_null(raw, ("act_type",), source)
        activity = activity_names(raw["act_type"], source, "act_type")
    else:
        activity = located["activity"]
    frame = pd.DataFrame(
        {
            "agent_id": raw["agent_id"].to_numpy(),
            "poi_id": raw["poi_id"].to_numpy(),
            "latitude": located["latitude"].to_numpy(dtype=float),
            "longitude": located["longitude"].to_numpy(dtype=float),
            "activity": np.asarray(activity, dtype=object),
            "start": _timestamps(
                raw["start_datetime"], timezone, source, "start_datetime"
            ),
            "end": _timestamps(raw["end_datetime"], timezone, source, "end_datetime"),
            ROW_COLUMN: raw[ROW_COLUMN].to_numpy(),
        }
    )
    return validate_staypoints(frame, source)


def write_numosim(stays: pd.DataFrame, folder: str | Path) -> tuple[Path, Path]:
    """Write a stay-point table in NumoSim's layout (Parquet).

    Args:
        stays: A valid stay-point table; each POI must have one activity.
        folder: Created if needed; gets ``staypoints.parquet`` and ``poi.parquet``.

    Returns:
        The two files.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    codes = {name: code for code, name in ACTIVITY_CODES.items()}
    pois = stays.drop_duplicates("poi_id")[
        ["poi_id", "latitude", "longitude", "activity"]
    ]
    poi_table = pd.DataFrame(
        {
            "poi_id": pois["poi_id"].to_numpy(),
            "latitude": pois["latitude"].to_numpy(dtype=float),
            "longitude": pois["longitude"].to_numpy(dtype=float),
            "act_types": [[codes[name]] for name in pois["activity"]],
        }
    ).sort_values("poi_id", kind="stable")
    stay_table = pd.DataFrame(
        {
            "agent_id": stays["agent_id"].to_numpy(),
            "poi_id": stays["poi_id"].to_numpy(),
            "start_datetime": stays["start"],
            "end_datetime": stays["end"],
            "act_type": stays["activity"].map(codes).astype("int64").to_numpy(),
        }
    )
    stays_path = folder / f"{NUMOSIM_STAYS_FILE}.parquet"
    pois_path = folder / f"{NUMOSIM_POIS_FILE}.parquet"
    stay_table.to_parquet(stays_path, index=False)
    poi_table.to_parquet(pois_path, index=False)
    return stays_path, pois_path


def read_history(path: str | Path, *, timezone: str | None = None) -> pd.DataFrame:
    """Read a history given as a NumoSim folder, a NumoSim stay file or a schema file.

    A folder is read as NumoSim's layout; a file with ``start_datetime`` as NumoSim's stay
    table (its POI table beside it); any other file as a schema table (:data:`STAY_COLUMNS`).

    Args:
        path: Folder or file.
        timezone: Time zone of the times (default: Los Angeles for NumoSim; otherwise aware
            times keep their zone and naive ones are UTC).

    Returns:
        The validated stay-point table.
    """
    path = Path(path)
    if path.is_dir():
        return read_numosim(path, timezone=timezone or "America/Los_Angeles")
    if path.suffix.lower() == ".parquet" and path.exists():
        names = set(pd.read_parquet(path).columns) if path.stat().st_size else set()
    elif path.suffix.lower() == ".csv" and path.is_file():
        names = set(_read_table(path, "stay-point file", rows=0).columns)
    else:
        names = set()
    if "start_datetime" in names:
        return read_numosim(path, timezone=timezone or "America/Los_Angeles")
    return read_staypoints(path, timezone=timezone)


# ---------------------------------------------------------------------------- days and split
def local_dates(stays: pd.DataFrame) -> pd.Series:
    """The local calendar date each visit starts on (the day its trajectory belongs to)."""
    return stays["start"].dt.normalize()


@dataclass(frozen=True)
class HistorySplit:
    """History (evidence) and held-out days of every individual.

    Attributes:
        history: The visits of the evidence days.
        held_out: The visits of each individual's last ``held_out_days`` days.
    """

    history: pd.DataFrame
    held_out: pd.DataFrame


def split_history(stays: pd.DataFrame, held_out_days: int = 7) -> HistorySplit:
    """Hold out each individual's last ``held_out_days`` days (by local start date).

    Args:
        stays: A valid stay-point table.
        held_out_days: Days per individual to hold out (>= 0).

    Returns:
        The split; an individual with no more than ``held_out_days`` days keeps one day of
        history (its first), the rest held out.

    Raises:
        ValueError: If ``held_out_days`` < 0.
    """
    if held_out_days < 0:
        raise ValueError(f"held_out_days must be >= 0, got {held_out_days}")
    dates = local_dates(stays)
    day_rank = (
        pd.DataFrame({"agent_id": stays["agent_id"], "date": dates})
        .groupby("agent_id", sort=False)["date"]
        .rank(method="dense", ascending=False)
        .to_numpy()
    )
    days_per_agent = (
        pd.DataFrame({"agent_id": stays["agent_id"], "date": dates})
        .groupby("agent_id", sort=False)["date"]
        .transform("nunique")
        .to_numpy()
    )
    held = (day_rank <= held_out_days) & ~(
        (days_per_agent <= held_out_days) & (day_rank == days_per_agent)
    )
    history = stays.loc[~held].reset_index(drop=True)
    held_out = stays.loc[held].reset_index(drop=True)
    history.attrs = dict(stays.attrs)
    held_out.attrs = dict(stays.attrs)
    return HistorySplit(history, held_out)
