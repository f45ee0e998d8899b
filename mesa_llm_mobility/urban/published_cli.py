"""``mlm urban published``: the paper's published LLM run, measured like ours.

Without arguments it reads the tables shipped in the package (offline) and prints what the
import found and the per-day measures of :mod:`.macro` (the 8:00 starters' departures and
punctuality, mode shares, travel times, distinct peak paths, the standard relative gap) and the
shape of the morning peak. ``--from`` reads a checkout of the prototype's repository instead,
``--write-data`` writes the compact tables (the command that rebuilds the shipped ones) and
``--run-dir`` stores the run as a saved urban run. Like the other ``cli`` modules it prints:
tables are what a command line is for.
"""

from __future__ import annotations

import argparse
from typing import Any

from mesa_llm_mobility.urban.clock import format_hhmm


def add_urban_published_command(urban_commands: Any) -> argparse.ArgumentParser:
    """Register ``mlm urban published``.

    Returns:
        The ``published`` parser.
    """
    parser = urban_commands.add_parser(
        "published",
        help="the paper's published 3-day LLM run (GATSim experiment_2): per-day measures",
        description=(
            "Measure the GATSim authors' published macroscopic run (their repository's "
            "gatsim/storage/experiment_2, Apache-2.0) like our runs: the 8:00 starters' mean, "
            "spread and on-time count, punctuality, delay, mode shares, travel times by mode, "
            "distinct peak paths and the standard relative gap per day, and the commutes "
            "leaving per 15 minutes. Reads the tables shipped in the package unless --from "
            "names a checkout."
        ),
    )
    parser.add_argument(
        "--from",
        dest="source",
        default=None,
        metavar="PATH",
        help="a checkout of github.com/qiliuchn/gatsim (or a GATSim run folder) to import",
    )
    parser.add_argument(
        "--allow-missing",
        action="store_true",
        help="import a run with missing minute files (they are listed, never interpolated)",
    )
    parser.add_argument(
        "--write-data",
        default=None,
        metavar="DIR",
        help="write the compact tables here (rebuilds the package's published_data)",
    )
    parser.add_argument(
        "--run-dir",
        default=None,
        metavar="DIR",
        help="also store the run as a saved urban run directory (tables per day)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing --run-dir"
    )
    parser.set_defaults(handler=_published)
    return parser


def _published(args: argparse.Namespace) -> int:
    import pandas as pd  # noqa: PLC0415 - heavy imports in the handler keep --help fast

    from mesa_llm_mobility.urban import macro, published  # noqa: PLC0415

    run = (
        published.load_published_run()
        if args.source is None
        else published.import_published_run(
            args.source, allow_missing=args.allow_missing
        )
    )
    for line in published.summary_lines(run):
        print(line)
    if args.write_data is not None:
        written = published.write_published_tables(run, args.write_data)
        print(f"wrote {len(written)} files to {args.write_data}")
    if args.run_dir is not None:
        directory = published.write_run_directory(
            run, args.run_dir, overwrite=args.overwrite
        )
        print(f"saved as an urban run: {directory.path}")
    measures = macro.published_day_metrics(run)
    table = macro.summary_table(macro.summarise(measures))
    with pd.option_context("display.width", 200, "display.max_colwidth", 40):
        print("\nper day (proportions with a 95 % Wilson interval):")
        print(table.to_string())
        peaks = macro.departures_per_bin(run.trips)
        shape = peaks.pivot(index="day", columns="bin", values="departures")
        shape.columns = [format_hhmm(int(c)) for c in shape.columns]
        print("\ncommutes leaving per 15 minutes:")
        print(shape.to_string())
    print(
        f"\nday {run.days} ends at minute {run.info.get('last_minute')} of the run: its "
        "evening trips are missing (the morning measures are whole)"
    )
    return 0
