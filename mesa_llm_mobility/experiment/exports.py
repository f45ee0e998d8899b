"""Exports of a finished run into the field's file formats: one registry, one command shape.

Each model declares the formats its runs export as :class:`ExportFormat` entries (a name, the
writer function's import path, the file suffixes it writes, the options it takes) and gets the
command ``mlm <model> export RUN_DIR --format NAME --out FILE`` from :func:`add_export_command`.
What every export does, whatever the model, lives here:

- the format is checked against the model's registry, the output's suffix against the format,
  and the options against what the format takes, before anything is read;
- the run directory is opened as a run of that model (:meth:`RunDirectory.open`);
- the writer module is imported when the export runs (the formats' libraries, geopandas,
  PedPy, MovingPandas, are the ``exports`` extra: a missing one is one line saying what to
  install), and writes through :func:`write_through_temp`, so a failed export leaves nothing
  under the output's name.

Writers are plain functions ``writer(run_dir, out, **options) -> Path``, usable from Python
without the registry; the registry is how the command line finds them.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mesa_llm_mobility.experiment.run_directory import RunDirectory

EXPORTS_EXTRA_HINT = 'pip install "mesa-llm-mobility[exports]"'

EXPORT_LIBRARIES = frozenset(
    {"geopandas", "pyarrow", "pedpy", "movingpandas", "shapely", "pyproj", "pyogrio"}
)
"""The ``exports`` extra's libraries (and what they bring): a missing one is the extra's hint."""


class ExportError(ValueError):
    """An export cannot be made: unknown format, wrong suffix, option or input (one line)."""


@dataclass(frozen=True)
class ExportFormat:
    """One file format a model's runs export to.

    Attributes:
        name: The format's name on the command line (``matsim-plans``).
        writer: Import path of the writer, ``"package.module:function"``; called as
            ``writer(run_dir, out, **options)``.
        suffixes: File suffixes the format writes (``(".xml", ".xml.gz")``); the output must
            end with one of them.
        help: One line: what the file holds, its units and coordinates.
        options: Names of the writer's keyword options the command line may pass.
    """

    name: str
    writer: str
    suffixes: tuple[str, ...]
    help: str
    options: tuple[str, ...] = ()

    def load_writer(self) -> Callable[..., Path]:
        """The writer function, imported now (its libraries with it).

        Raises:
            OSError: If a library of the ``exports`` extra is missing (one line, what to
                install).
        """
        module_name, _, function = self.writer.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            if (error.name or "").partition(".")[0] not in EXPORT_LIBRARIES:
                raise
            raise OSError(
                f"the {self.name} export needs the 'exports' extra ({error.name} is "
                f"missing): {EXPORTS_EXTRA_HINT}"
            ) from error
        return getattr(module, function)


def format_registry(*formats: ExportFormat) -> dict[str, ExportFormat]:
    """The formats by name (names must be unique)."""
    registry: dict[str, ExportFormat] = {}
    for entry in formats:
        if entry.name in registry:
            raise ValueError(f"export format {entry.name!r} is declared twice")
        registry[entry.name] = entry
    return registry


def check_export(
    formats: Mapping[str, ExportFormat],
    model: str,
    format_name: str,
    out: str | os.PathLike[str],
    options: Mapping[str, Any],
) -> ExportFormat:
    """Check a requested export against the model's formats, before anything is read.

    Args:
        formats: The model's formats by name.
        model: The model's name (``"urban"``), for messages.
        format_name: The requested format.
        out: The output file.
        options: The options given (None values are not given).

    Returns:
        The format.

    Raises:
        ExportError: For an unknown format, an output whose suffix the format does not write,
            or an option the format does not take.
    """
    entry = formats.get(format_name)
    if entry is None:
        raise ExportError(
            f"unknown {model} export format {format_name!r} (formats: "
            f"{', '.join(formats)})"
        )
    name = Path(out).name.lower()
    if not any(name.endswith(suffix) for suffix in entry.suffixes):
        raise ExportError(
            f"{out}: the {entry.name} format writes {' or '.join(entry.suffixes)} files"
        )
    unknown = [key for key, value in options.items() if value is not None]
    unknown = [key for key in unknown if key not in entry.options]
    if unknown:
        taken = ", ".join(_flag(o) for o in entry.options) or "none"
        raise ExportError(
            f"{_flag(unknown[0])} does not apply to the {entry.name} format (its options: "
            f"{taken})"
        )
    return entry


def export_run(
    formats: Mapping[str, ExportFormat],
    model: str,
    run_dir: str | os.PathLike[str],
    format_name: str,
    out: str | os.PathLike[str],
    **options: Any,
) -> Path:
    """Export a finished run of ``model`` to ``out`` in one of its formats.

    Args:
        formats: The model's formats by name.
        model: The model's name; the run must be one of its runs.
        run_dir: The run directory.
        format_name: The format.
        out: The file to write (replaced atomically; nothing is written on error).
        **options: The format's options (None: not given).

    Returns:
        The file written.

    Raises:
        ExportError: See :func:`check_export`, or a table the run lacks.
        RunDirectoryError: If ``run_dir`` is not a run of ``model``.
        OSError: If the format's library is missing, or the file cannot be written.
    """
    entry = check_export(formats, model, format_name, out, options)
    run = RunDirectory.open(run_dir, model=model)
    writer = entry.load_writer()
    given = {key: value for key, value in options.items() if value is not None}
    return writer(run, Path(out), **given)


def write_through_temp(
    out: str | os.PathLike[str], write: Callable[[Path], object]
) -> Path:
    """Let ``write`` fill a temporary file beside ``out``, then move it into place.

    The temporary file keeps ``out``'s suffixes (libraries choose their driver by them) and is
    removed if ``write`` fails, so a failed export never leaves a file under ``out``'s name
    nor a half-written one beside it.

    Args:
        out: The file to write.
        write: Writes the whole file at the path it is given.

    Returns:
        ``out`` as a path.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    suffix = "".join(out.suffixes[-2:]) if out.name.endswith(".gz") else out.suffix
    temp = out.with_name(f".{out.name}.{secrets.token_hex(4)}.tmp{suffix}")
    try:
        write(temp)
        os.replace(temp, out)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        raise
    return out


def require_tables(run: RunDirectory, names: Iterable[str]) -> None:
    """Check that the run stored every table of ``names``.

    Raises:
        ExportError: Naming the run and the first missing table (a run still under way, or
            one that did not record it).
    """
    stored = set(run.table_names())
    for name in names:
        if name not in stored:
            raise ExportError(
                f"{run.path}: no {name!r} table (stored: {', '.join(sorted(stored)) or 'none'}"
                "); is the run finished?"
            )


# ---------------------------------------------------------------------------- command line
def add_export_command(
    commands: argparse._SubParsersAction,
    model: str,
    command: str,
    formats: Mapping[str, ExportFormat],
) -> argparse.ArgumentParser:
    """Add ``mlm <command> export RUN_DIR --format NAME --out FILE`` for one model.

    The model adds its options' flags to the returned parser (default None, ``dest`` the
    option's name); the handler passes those given to the format, and refuses one the format
    does not take.

    Args:
        commands: The model group's subparsers.
        model: The model's name (what the run's metadata says).
        command: The model's command (``evac`` for the evacuation model).
        formats: The model's formats by name.

    Returns:
        The ``export`` parser.
    """
    listing = "; ".join(
        f"{f.name} ({'/'.join(f.suffixes)}): {f.help}" for f in formats.values()
    )
    parser = commands.add_parser(
        "export",
        help=f"export a finished {model} run to a file of the field's formats",
        description=f"Read the tables of a finished {model} run (written by 'mlm {command} "
        f"run') and write one file in --format. Formats: {listing}. Nothing is written when "
        "the run, the format or an option is refused. See docs/exports.md.",
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the run directory")
    parser.add_argument(
        "--format",
        required=True,
        dest="export_format",
        metavar="FORMAT",
        help=f"one of: {', '.join(formats)}",
    )
    parser.add_argument("--out", required=True, help="the file to write")
    parser.set_defaults(
        handler=export_command, export_model=model, export_formats=formats
    )
    return parser


def export_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm <model> export``: write the file, print where."""
    formats: Mapping[str, ExportFormat] = args.export_formats
    names = {option for entry in formats.values() for option in entry.options}
    options = {name: getattr(args, name, None) for name in sorted(names)}
    path = export_run(
        formats,
        args.export_model,
        args.run_dir,
        args.export_format,
        args.out,
        **options,
    )
    print(f"{args.export_format} written to {path}")
    return 0


def _flag(option: str) -> str:
    return "--" + option.replace("_", "-")
