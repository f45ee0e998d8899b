"""Reading the files users give us, with one-line errors that name the file.

Every loader of a user file (a scenario, a population, a plaza map, a run's JSON) reads it with
:func:`read_text`, so that a path that is missing, a directory, unreadable or not UTF-8 always
gives the same kind of message: ``<path>: <problem>``, as a :class:`UserFileError` (a
``ValueError``) or the loader's own subclass of it. The command line's error boundary prints such
errors as one line and exits with status 2.
"""

from __future__ import annotations

from pathlib import Path


class UserFileError(ValueError):
    """A user file cannot be used; the message starts with its path."""


def read_text(
    path: str | Path, what: str = "file", error: type[ValueError] = UserFileError
) -> str:
    """Read a user's UTF-8 text file.

    Args:
        path: The file.
        what: What it should hold (``"plaza map"``, ``"scenario"``), for the messages.
        error: The exception type to raise (a ``ValueError`` subclass, e.g. a loader's own).

    Returns:
        The text.

    Raises:
        error: ``"<path>: no such <what>"``, ``"<path>: is a directory, not a <what>"``,
            ``"<path>: cannot read <what> (<reason>)"`` or ``"<path>: <what> is not UTF-8 text
            (byte 0x.. at offset N)"``.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not a {what}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"{path}: {what} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None
