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


# ----------------------------------------------------------------------------- judge --published
def add_published_judge_arguments(judge: argparse.ArgumentParser) -> None:
    """Add ``--published`` and its options to ``mlm urban judge``."""
    judge.add_argument(
        "--published",
        action="store_true",
        help=(
            "the paper's published study (50 scenarios, agents' and annotators' answers, o1 "
            "verdicts): recompute its tests, show them under other assumptions"
        ),
    )
    judge.add_argument(
        "--rejudge",
        action="store_true",
        help="with --published: judge the 50 pairs again with --brain (order seeded by --seed)",
    )
    judge.add_argument(
        "--judge-same-plans",
        action="store_true",
        help="with --rejudge: also ask the judge about pairs whose plans are the same text "
        "(the study tied them without asking)",
    )
    judge.add_argument(
        "--from",
        dest="published_from",
        default=None,
        metavar="PATH",
        help="with --published: read the study from a checkout instead of the shipped copy",
    )
    judge.add_argument(
        "--write-data",
        dest="published_write",
        default=None,
        metavar="DIR",
        help="with --published: write the study's compressed copy here (rebuilds the shipped one)",
    )


def judge_published(args: argparse.Namespace) -> int:
    """``mlm urban judge --published``: the paper's tests, their assumptions, a new judging."""
    from mesa_llm_mobility.cognition.arguments import brain_options  # noqa: PLC0415
    from mesa_llm_mobility.cognition.settings import make_brain  # noqa: PLC0415
    from mesa_llm_mobility.experiment.believability_stats import (  # noqa: PLC0415
        assumption_variants,
    )
    from mesa_llm_mobility.urban import published_micro  # noqa: PLC0415

    cases = (
        published_micro.load_published_micro()
        if args.published_from is None
        else published_micro.import_published_micro(args.published_from)
    )
    if args.published_write is not None:
        path = published_micro.write_published_micro(cases, args.published_write)
        print(f"wrote {path}")
    wins, losses, ties = published_micro.verdict_counts(cases)
    same = sum(case.same_plan for case in cases)
    tied_same = sum(case.same_plan and case.verdict == "tie" for case in cases)
    print(
        f"published study: {len(cases)} scenarios; o1 verdicts: agent {wins}, annotators "
        f"{losses}, ties {ties}\n"
        f"ties: {tied_same} of the {ties} are pairs whose two plans are the same text "
        f"({same} such pairs), which the study's script scored a tie without asking the judge"
    )
    print("\nthe paper's tests recomputed, and under other assumptions:")
    for variant in assumption_variants(wins, losses, ties):
        mark = "paper" if variant.paper else "     "
        name = "posterior" if variant.test == "bayes" else f"{variant.test} p"
        print(
            f"  {mark} {name:<10} {variant.value:.4f}  {variant.conclusion:<20} "
            f"{variant.assumption}"
        )
    print(
        "  all three assume 50 independent pairs; the five annotators answered 10 scenarios "
        "each (which ones is not published), so the pairs are clustered by annotator"
    )
    if not args.rejudge:
        return 0
    brain = make_brain(args.brain, rng=args.seed, **brain_options(args))
    try:
        result = published_micro.rejudge(
            cases, brain, seed=args.seed, judge_same_plans=args.judge_same_plans
        )
    finally:
        brain.close()
    tests = result.tests
    asked = int(result.verdicts["asked"].sum())
    print(
        f"\nrejudged by {brain.name} ({asked} pairs asked, order seeded by {args.seed}): "
        f"agent {tests.wins}, annotators {tests.losses}, ties {tests.ties}; agreement with "
        f"the published verdicts {result.agreement:.2f} (Cohen's kappa {result.kappa:.2f})\n"
        f"binomial p = {tests.binomial_p:.4f}, sign p = {tests.sign_p:.4f}, posterior = "
        f"{tests.posterior_at_least_as_good:.4f}"
    )
    return 0
