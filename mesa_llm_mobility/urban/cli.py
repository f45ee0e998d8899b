"""The ``mlm urban`` command group: population synthesis now, model runs as they arrive.

:func:`add_urban_commands` creates the ``urban`` command and its subcommands on the ``mlm``
parser; each subcommand has its own ``add_urban_<name>_command`` so that more can join the group.
Like ``mesa_llm_mobility.cli``, this module prints: summary tables are what a command line is for.
Heavy imports happen inside the handlers, so ``mlm --help`` stays fast.
"""

from __future__ import annotations

import argparse
from typing import Any

from mesa_llm_mobility.cognition.arguments import add_brain_arguments, brain_options


def add_urban_commands(commands: Any) -> Any:
    """Register the ``urban`` command group on the ``mlm`` subparsers.

    Args:
        commands: The ``mlm`` parser's subparsers (from ``add_subparsers``).

    Returns:
        The ``urban`` group's subparsers, for further ``urban`` subcommands.
    """
    urban = commands.add_parser(
        "urban",
        help="the urban daily-travel model (GATSim)",
        description="The urban daily-travel model of GATSim on the Nguyen-Dupuis town.",
    )
    urban_commands = urban.add_subparsers(
        dest="urban_command", required=True, metavar="URBAN_COMMAND"
    )
    add_urban_synthesize_command(urban_commands)
    add_urban_run_command(urban_commands)
    add_urban_resume_command(urban_commands)
    add_urban_fork_command(urban_commands)
    add_urban_snapshot_command(urban_commands)
    add_urban_animate_command(urban_commands)
    return urban_commands


def add_urban_run_command(urban_commands: Any) -> argparse.ArgumentParser:
    """Register ``mlm urban run`` on the ``urban`` group's subparsers.

    Returns:
        The ``run`` parser.
    """
    parser = urban_commands.add_parser(
        "run",
        help="run the urban model into a run directory; prints a summary table, writes plots",
        description=(
            "Run the urban model (70 residents of the Nguyen-Dupuis town by default) for N days "
            "on the offline rule brain or any LLM ('llm:<litellm model>'). Writes the resolved "
            "config, per-day Parquet tables, the ledger, memories, summary.json and plots "
            "into --out, and prints a summary table."
        ),
    )
    parser.add_argument(
        "--days", type=int, default=3, help="days to simulate (default 3)"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--out", default="runs/urban", help="run directory (default runs/urban)"
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an earlier run in --out"
    )
    parser.add_argument(
        "--scenario", default="nguyen_dupuis", help="bundled scenario name or JSON file"
    )
    parser.add_argument(
        "--population",
        default="population_70",
        help="bundled population name or JSON file",
    )
    parser.add_argument(
        "--agents", type=int, default=None, help="scale the population to N travellers"
    )
    parser.add_argument(
        "--no-events", action="store_true", help="switch the scenario's events off"
    )
    parser.add_argument(
        "--embedding", default="hash", help="'hash' (default), 'minilm' or 'auto'"
    )
    parser.add_argument(
        "--tools",
        action="store_true",
        help="LLM travellers may look up travel times, the metro timetable, congestion "
        "and occupancy before planning and en route (one extra decision each)",
    )
    add_brain_arguments(parser)
    _add_progress_option(parser)
    parser.set_defaults(handler=_run)
    return parser


def _add_progress_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-progress", action="store_true", help="hide the progress bar"
    )


def _run(args: argparse.Namespace) -> int:
    from mesa_llm_mobility.urban import runner  # noqa: PLC0415

    config = runner.urban_config(
        days=args.days,
        brain=args.brain,
        seed=args.seed,
        scenario=args.scenario,
        population=args.population,
        n_agents=args.agents,
        events=not args.no_events,
        embedding=args.embedding,
        tools=args.tools,
    )
    result = runner.run_urban(
        args.out,
        config,
        overwrite=args.overwrite,
        progress=not args.no_progress,
        brain_options=brain_options(args),
    )
    return _print_result(result)


def _print_result(result: Any) -> int:
    """Print what ``run``, ``resume`` and ``fork`` print: daily table, summary, plots."""
    import pandas as pd  # noqa: PLC0415

    from mesa_llm_mobility.urban import runner  # noqa: PLC0415

    print(f"run directory: {result.run.path}")
    with pd.option_context("display.width", 160):
        print(runner.daily_table(result.run.read_table("trips")).to_string(index=False))
    print()
    for line in runner.summary_lines(result.summary):
        print(line)
    print("plots: " + ", ".join(path.name for path in result.plots))
    return 0


def add_urban_resume_command(urban_commands: Any) -> argparse.ArgumentParser:
    """Register ``mlm urban resume`` on the ``urban`` group's subparsers.

    Returns:
        The ``resume`` parser.
    """
    parser = urban_commands.add_parser(
        "resume",
        help="continue an interrupted urban run from its latest good checkpoint",
        description=(
            "Continue a run written by 'mlm urban run' from its latest good checkpoint (a "
            "corrupt one is skipped) to its last day. An LLM brain answers the requests of a "
            "day that was under way from the run's ledger. A finished run is only reported."
        ),
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the run directory")
    add_brain_arguments(parser, choose_brain=False)
    _add_progress_option(parser)
    parser.set_defaults(handler=_resume)
    return parser


def _resume(args: argparse.Namespace) -> int:
    from mesa_llm_mobility.urban import runner  # noqa: PLC0415

    result = runner.resume_urban(
        args.run_dir, progress=not args.no_progress, brain_options=brain_options(args)
    )
    return _print_result(result)


def add_urban_fork_command(urban_commands: Any) -> argparse.ArgumentParser:
    """Register ``mlm urban fork`` on the ``urban`` group's subparsers.

    Returns:
        The ``fork`` parser.
    """
    parser = urban_commands.add_parser(
        "fork",
        help="start a new urban run from a day's checkpoint of another, with changes",
        description=(
            "Copy the checkpoint of --from-day (and the tables up to it) of RUN_DIR into --out "
            "and run on with another brain, more days or events off. An LLM brain answers "
            "requests identical to the source's from the source's ledger, without calls."
        ),
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the run to fork")
    parser.add_argument(
        "--from-day",
        type=int,
        required=True,
        help="day of the checkpoint to start from (0: the initial state)",
    )
    parser.add_argument("--out", required=True, help="the new run directory")
    parser.add_argument(
        "--days", type=int, default=None, help="total days of the fork (extend the run)"
    )
    parser.add_argument(
        "--no-events",
        action="store_true",
        help="switch the scenario's events off from --from-day on",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an earlier run in --out"
    )
    add_brain_arguments(parser, default=None)
    _add_progress_option(parser)
    parser.set_defaults(handler=_fork)
    return parser


def _fork(args: argparse.Namespace) -> int:
    from mesa_llm_mobility.urban import runner  # noqa: PLC0415

    changes: dict[str, Any] = {}
    if args.brain is not None:
        changes["brain"] = args.brain
    if args.days is not None:
        changes["days"] = args.days
    if args.no_events:
        changes["events"] = False
    result = runner.fork_urban(
        args.run_dir,
        args.out,
        from_day=args.from_day,
        changes=changes,
        overwrite=args.overwrite,
        progress=not args.no_progress,
        brain_options=brain_options(args),
    )
    return _print_result(result)


def _comma_list(
    text: str | None, convert: Any, option: str, what: str
) -> list[Any] | None:
    """A comma-separated option value (``"1,2"``) as a list; None when not given."""
    if text is None:
        return None
    try:
        return [convert(item.strip()) for item in text.split(",") if item.strip()]
    except ValueError:
        raise ValueError(
            f"{option}: expected {what} separated by commas, got {text!r}"
        ) from None


def add_urban_snapshot_command(urban_commands: Any) -> argparse.ArgumentParser:
    """Register ``mlm urban snapshot`` on the ``urban`` group's subparsers.

    Returns:
        The ``snapshot`` parser.
    """
    parser = urban_commands.add_parser(
        "snapshot",
        help="draw traffic snapshots of a saved urban run as a PNG grid (days x times)",
        description=(
            "Draw the road network of a run written by 'mlm urban run', each link coloured by "
            "its congestion, with one row per day and one column per time of day (the "
            "paper's Figure 10), from the run's link_states table. Prints the PNG written."
        ),
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the run directory")
    parser.add_argument(
        "--times",
        default=None,
        help="clock times of the columns (default 07:00,07:30,08:00,08:30)",
    )
    parser.add_argument(
        "--days",
        default=None,
        help="days of the rows, e.g. 1,2 (default: every day of the run)",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="PNG to write (default RUN_DIR/plots/snapshot_<times>[_day<days>].png)",
    )
    parser.add_argument("--dpi", type=int, default=150, help="resolution (default 150)")
    parser.set_defaults(handler=_snapshot)
    return parser


def _snapshot(args: argparse.Namespace) -> int:
    from mesa_llm_mobility.urban import plots, replay  # noqa: PLC0415

    times = _comma_list(args.times, str, "--times", "clock times")
    path = replay.snapshot_run(
        args.run_dir,
        plots.SNAPSHOT_TIMES if times is None else times,
        _comma_list(args.days, int, "--days", "day numbers"),
        out=args.out,
        dpi=args.dpi,
    )
    print(f"snapshots written to {path}")
    return 0


def add_urban_animate_command(urban_commands: Any) -> argparse.ArgumentParser:
    """Register ``mlm urban animate`` on the ``urban`` group's subparsers.

    Returns:
        The ``animate`` parser.
    """
    parser = urban_commands.add_parser(
        "animate",
        help="animate the traffic of one day of a saved urban run as a GIF",
        description=(
            "Animate the road network of one day of a run written by 'mlm urban run', each "
            "link coloured by its congestion, one frame every --every minutes from --start "
            "to --end. Writes a GIF (or an MP4 when ffmpeg is installed); prints the file "
            "and its number of frames."
        ),
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the run directory")
    parser.add_argument("--day", type=int, default=1, help="day to animate (default 1)")
    parser.add_argument(
        "--out",
        default=None,
        help="file to write, .gif or .mp4 (default RUN_DIR/plots/day<d>_<start>-<end>.gif)",
    )
    parser.add_argument(
        "--start", default="05:00", help="clock time of the first frame (default 05:00)"
    )
    parser.add_argument(
        "--end", default="11:00", help="clock time of the last frame (default 11:00)"
    )
    parser.add_argument(
        "--every",
        type=float,
        default=5,
        help="simulated minutes between frames (default 5)",
    )
    parser.add_argument(
        "--fps", type=float, default=8, help="frames per second (default 8)"
    )
    parser.add_argument(
        "--dpi", type=int, default=100, help="resolution (default 100: 640 x 540)"
    )
    parser.set_defaults(handler=_animate)
    return parser


def _animate(args: argparse.Namespace) -> int:
    from mesa_llm_mobility.urban import replay  # noqa: PLC0415

    frames = len(replay.animation_clocks(args.start, args.end, args.every))
    path = replay.animate_run(
        args.run_dir,
        args.day,
        out=args.out,
        start=args.start,
        end=args.end,
        every_minutes=args.every,
        fps=args.fps,
        dpi=args.dpi,
    )
    print(f"animation of {frames} frames written to {path}")
    return 0


def add_urban_synthesize_command(urban_commands: Any) -> argparse.ArgumentParser:
    """Register ``mlm urban synthesize`` on the ``urban`` group's subparsers.

    Returns:
        The ``synthesize`` parser.
    """
    parser = urban_commands.add_parser(
        "synthesize",
        help="synthesise a population matching GATSim's Table 2; prints statistics vs targets",
        description=(
            "Synthesise N residents whose statistics match GATSim's Table 2 (exactly at N = 70, "
            "proportionally otherwise), through the rule sampler ('rules') or an LLM "
            "('llm:<litellm model>'; invalid answers are repaired, else the rule sampler "
            "answers). Prints the statistics against the targets."
        ),
    )
    parser.add_argument(
        "--n", type=int, default=70, help="number of people (default 70)"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--out", default=None, help="write the population to this JSON file"
    )
    parser.add_argument(
        "--scenario",
        default="nguyen_dupuis",
        help="scenario file or bundled name (default nguyen_dupuis)",
    )
    parser.add_argument(
        "--approximate",
        action="store_true",
        help="do not require the LLM to meet every target exactly",
    )
    add_brain_arguments(parser).add_argument(
        "--ledger", default=None, help="write the LLM ledger to this JSONL file"
    )
    parser.set_defaults(handler=_synthesize)
    return parser


def _synthesize(args: argparse.Namespace) -> int:
    import pandas as pd  # noqa: PLC0415  (fast --help)

    from mesa_llm_mobility.cognition.settings import (  # noqa: PLC0415
        parse_brain_setting,
    )
    from mesa_llm_mobility.urban.scenario import load_scenario  # noqa: PLC0415
    from mesa_llm_mobility.urban.synthesis import synthesize_with_brain  # noqa: PLC0415

    if args.n < 1:
        raise ValueError(f"--n must be >= 1, got {args.n}")
    options: dict[str, Any] = {}
    if parse_brain_setting(args.brain)[0] == "llm":
        options.update(brain_options(args), ledger=args.ledger)
    report = synthesize_with_brain(
        args.n,
        load_scenario(args.scenario),
        brain=args.brain,
        rng=args.seed,
        match_statistics=not args.approximate,
        **options,
    )
    print(f"brain: {report.brain}  outcome: {report.result.outcome}")
    if report.result.reason:
        print(f"fallback reason: {report.result.reason}")
    scaled = "" if args.n == 70 else f" scaled to {args.n} people (largest remainder)"
    print(f"targets: GATSim Table 2{scaled}")
    table = report.statistics()
    with pd.option_context("display.width", 160, "display.max_rows", 200):
        print(table.to_string(index=False))
    missed = int((~table["match"]).sum())
    print(
        "all statistics match their targets"
        if missed == 0
        else f"{missed} statistics differ from their targets"
    )
    if args.out:
        path = report.population.save(args.out)
        print(f"population of {len(report.population)} written to {path}")
    return 0
