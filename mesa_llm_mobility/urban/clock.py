"""The urban model's clock: days, minutes and ``HH:MM`` times, in one place.

The model counts absolute minutes from the start of day 1 (:data:`MINUTES_PER_DAY` each day);
plans, prompts, tables and the app show clock times. Parsing is strict where people and LLMs
write times (:func:`parse_hhmm`) and lenient where files may give minutes (:func:`parse_clock`).
"""

from __future__ import annotations

import re
from typing import Any

from mesa_llm_mobility.clock import MINUTES_PER_DAY

__all__ = [
    "MINUTES_PER_DAY",
    "day_and_minute",
    "day_clock",
    "format_clock",
    "format_hhmm",
    "parse_clock",
    "parse_hhmm",
    "spoken_clock",
]

_CLOCK = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def parse_hhmm(text: str) -> int:
    """Parse ``"H:MM"`` / ``"HH:MM"`` (00:00-23:59) into minutes of the day.

    Raises:
        ValueError: naming the text when it is not a clock time.
    """
    match = _CLOCK.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a clock time HH:MM between 00:00 and 23:59")
    return int(match.group(1)) * 60 + int(match.group(2))


def parse_clock(value: Any, where: str, error: type[ValueError] = ValueError) -> float:
    """Parse ``"HH:MM"`` or a number of minutes into minutes.

    Args:
        value: ``"07:30"`` (-> 450.0), ``"24:00"`` (-> 1440.0) or a number of minutes.
        where: Location prefix for the error message.
        error: The exception type to raise (a loader's own ``ValueError`` subclass).

    Returns:
        Minutes as a float.

    Raises:
        error: If the value is neither.
    """
    if isinstance(value, bool):
        raise error(f"{where}: expected 'HH:MM' or minutes, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        parts = value.strip().split(":")
        if len(parts) == 2 and all(p.isdigit() for p in parts):
            hours, minutes = int(parts[0]), int(parts[1])
            if minutes < 60:
                return float(hours * 60 + minutes)
    raise error(f"{where}: expected 'HH:MM' or minutes, got {value!r}")


def format_hhmm(minute: float) -> str:
    """Format minutes (of the day, or absolute: taken modulo one day) as ``"HH:MM"``."""
    whole = round(minute) % MINUTES_PER_DAY
    return f"{whole // 60:02d}:{whole % 60:02d}"


def format_clock(minutes: float) -> str:
    """Format minutes after midnight as ``"HH:MM"`` without wrapping (``1440`` -> ``"24:00"``)."""
    whole = round(minutes)
    return f"{whole // 60:02d}:{whole % 60:02d}"


def day_and_minute(minute: float) -> tuple[int, float]:
    """Day number (1-based) and minute of that day of an absolute minute."""
    day = int(minute // MINUTES_PER_DAY) + 1
    return day, minute - (day - 1) * MINUTES_PER_DAY


def day_clock(minute: float, sep: str = " ") -> str:
    """``"day 2 07:30"`` for an absolute minute (``sep`` goes between day and clock)."""
    day, clock = day_and_minute(minute)
    return f"day {day}{sep}{format_clock(clock)}"


def spoken_clock(minute: int) -> str:
    """A time of day as people write it in prose: ``"8am"``, ``"5:30pm"``."""
    minute %= MINUTES_PER_DAY
    hours, minutes = divmod(minute, 60)
    suffix = "am" if hours < 12 else "pm"
    hours = hours % 12 or 12
    return f"{hours}{suffix}" if minutes == 0 else f"{hours}:{minutes:02d}{suffix}"
