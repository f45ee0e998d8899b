"""The ``mlm urban`` command group: runs, population synthesis, figures, the experiments.

:func:`add_urban_commands` creates the ``urban`` command and its subcommands on the ``mlm``
parser: ``run``, ``resume`` and ``fork`` come from the shared lifecycle's command line
(:func:`~mesa_llm_mobility.experiment.cli.add_run_commands`, flags from
:class:`~.parameters.UrbanParameters`); each other subcommand has its own
``add_urban_<name>_command`` so that more can join the group.
Like ``mesa_llm_mobility.cli``, this module prints: summary tables are what a command line is for.
Heavy imports happen inside the handlers, so ``mlm --help`` stays fast.
"""

from __future__ import annotations

import argparse
from typing import Any

from mesa_llm_mobility.cognition.arguments import (
    add_brain_arguments,
    brain_options,
    positive_int,
)
from mesa_llm_mobility.experiment.cli import add_executor_arguments, add_run_commands
from mesa_llm_mobility.experiment.exports import (
    ExportFormat,
    add_export_command,
    format_registry,
)
from mesa_llm_mobility.experiment.parameters import (
    add_parameter_arguments,
    parameters_from_arguments,
)
from mesa_llm_mobility.urban.cities.cli import (
    add_urban_import_gtfs_command,
    add_urban_import_osm_command,
)
from mesa_llm_mobility.urban.parameters import UrbanParameters
from mesa_llm_mobility.urban.published_cli import (
    add_published_judge_arguments,
    add_urban_published_command,
    judge_published,
)

_MATSIM = "mesa_llm_mobility.urban.matsim_export"
_GEO = "mesa_llm_mobility.urban.geo_export"
_GEO_SUFFIXES = (".parquet", ".geojson")

URBAN_EXPORTS = format_registry(
    ExportFormat(
        "matsim-plans",
        f"{_MATSIM}:write_matsim_plans",
        (".xml", ".xml.gz"),
        "MATSim population_v6 executed plans (activities, legs; HH:MM:SS, scenario x/y)",
        ("day",),
    ),
    ExportFormat(
        "matsim-trips",
        f"{_MATSIM}:write_matsim_trips",
        (".csv", ".csv.gz"),
        "one row per trip in MATSim's output_trips.csv columns (';'-separated)",
        ("day",),
    ),
    ExportFormat(
        "matsim-legs",
        f"{_MATSIM}:write_matsim_legs",
        (".csv", ".csv.gz"),
        "one row per leg in MATSim's output_legs.csv columns (';'-separated)",
        ("day",),
    ),
    ExportFormat(
        "links",
        f"{_GEO}:write_links",
        _GEO_SUFFIXES,
        "GeoParquet/GeoJSON: directed links with flows and travel times per period",
        ("day", "period"),
    ),
    ExportFormat(
        "facilities",
        f"{_GEO}:write_facilities",
        _GEO_SUFFIXES,
        "GeoParquet/GeoJSON: facilities as points with arrivals and departures",
        ("day",),
    ),
    ExportFormat(
        "trips",
        f"{_GEO}:write_trips",
        _GEO_SUFFIXES,
        "GeoParquet/GeoJSON: departed trips as lines through their paths' nodes",
        ("day",),
    ),
)
"""The urban run's export formats (``mlm urban export``; docs/exports.md)."""


def add_urban_export_command(commands: Any) -> None:
    """Add ``mlm urban export RUN_DIR --format NAME --out FILE [--day N] [--period MIN]``."""
    export = add_export_command(commands, "urban", "urban", URBAN_EXPORTS)
    export.add_argument(
        "--day",
        type=_positive_whole,
        default=None,
        help="export only this day (1-based; times after its midnight); default every day",
    )
    export.add_argument(
        "--period",
        type=_positive_whole,
        default=None,
        help="links: minutes per period, a divisor of a day (default 60)",
    )


def _positive_whole(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number, got {text!r}"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


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
    add_run_commands(urban_commands, UrbanParameters)
    add_urban_snapshot_command(urban_commands)
    add_urban_animate_command(urban_commands)
    add_urban_experiment_command(urban_commands)
    add_urban_believability_commands(urban_commands)
    add_urban_published_command(urban_commands)
    add_urban_import_osm_command(urban_commands)
    add_urban_import_gtfs_command(urban_commands)
    add_urban_export_command(urban_commands)
    return urban_commands


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


def add_urban_experiment_command(urban_commands: Any) -> argparse.ArgumentParser:
    """Register ``mlm urban experiment`` (the macroscopic experiment over seeds).

    Returns:
        The ``experiment`` parser.
    """
    parser = urban_commands.add_parser(
        "experiment",
        help="the paper's macroscopic experiment over seeds, beside the published LLM run",
        description=(
            "Run the urban model for --days days for each of --seeds seeds on the sweep engine "
            "(one run directory per seed under --out; finished runs are skipped) and print, per "
            "day, the mean and 95 % interval of the 8:00 starters' departure, spread and "
            "on-time count, punctuality, delay, mode shares, travel times, distinct peak paths "
            "and the relative gap, beside the published GATSim LLM run (and --compare-brain "
            "runs when given). Writes macro_runs.csv, macro_summary.csv, macro_peaks.csv, "
            "comparison.csv, peaks.png and figure10.png into --out."
        ),
    )
    parser.add_argument(
        "--seeds", type=positive_int, default=10, help="seeds 0..N-1 (default 10)"
    )
    parser.add_argument(
        "--out", default="runs/urban_experiment", help="experiment folder"
    )
    add_parameter_arguments(
        parser.add_argument_group(
            "parameters of every run (default: the model's, 3 days; the published run had "
            "population_gatsim and no events)"
        ),
        UrbanParameters,
        defaults=False,
    )
    parser.add_argument(
        "--compare-brain",
        default=None,
        metavar="BRAIN",
        help="also run this brain (e.g. llm:<model>) into <out>/compare, same flags",
    )
    parser.add_argument(
        "--compare-seeds",
        type=int,
        default=None,
        help="seeds of the --compare-brain runs (default --seeds)",
    )
    add_executor_arguments(parser)
    add_brain_arguments(parser)
    parser.add_argument(
        "--no-progress", action="store_true", help="hide the progress bar"
    )
    parser.set_defaults(handler=_experiment)
    return parser


def _experiment(args: argparse.Namespace) -> int:
    from pathlib import Path  # noqa: PLC0415

    import pandas as pd  # noqa: PLC0415

    from mesa_llm_mobility.urban import macro  # noqa: PLC0415
    from mesa_llm_mobility.urban.published import load_published_run  # noqa: PLC0415

    parameters = parameters_from_arguments(args)
    days = parameters.setdefault("days", macro.EXPERIMENT_DAYS)
    runs = {}
    for brain, seeds, out in (
        (args.brain, args.seeds, Path(args.out)),
        (
            args.compare_brain,
            args.compare_seeds or args.seeds,
            Path(args.out) / "compare",
        ),
    ):
        if brain is None:
            continue
        per_run, _ = macro.run_macro_experiment(
            out,
            {**parameters, "brain": brain},
            seeds=seeds,
            executor=args.executor,
            max_workers=args.workers,
            ray_address=args.ray_address,
            num_cpus=args.num_cpus,
            brain_options=brain_options(args),
            progress=not args.no_progress,
        )
        peaks = pd.read_csv(out / "macro_peaks.csv")
        runs[f"{brain} ({seeds} seeds)"] = (per_run, peaks)
    table, figure = macro.compare_with_published(args.out, runs, load_published_run())
    with pd.option_context("display.width", 250, "display.max_colwidth", 60):
        print(table.to_string())
    print(
        f"\n{days} days; mean [95 % interval] over seeds (Student t, clipped to [0, 1] "
        "for shares and gaps); the published run's proportions with a Wilson interval; "
        f"tables, {figure.name} and figure10.png in {args.out}"
    )
    return 0


def add_urban_believability_commands(urban_commands: Any) -> None:
    """Register ``mlm urban scenarios`` and ``mlm urban judge`` (the microscopic validation)."""
    scenarios = urban_commands.add_parser(
        "scenarios",
        help="sample evaluation scenarios (plans, revisions, reflections) for annotators",
        description=(
            "Run the urban model with --brain and sample scenarios of a few travellers: writes "
            "annotators.csv/json (the situation, empty reflection and plan columns, no source) "
            "and responses.json (the brain's and the rule baseline's responses) into --out."
        ),
    )
    scenarios.add_argument("--out", default="runs/believability", help="output folder")
    scenarios.add_argument(
        "--scenarios", type=int, default=50, help="how many (default 50)"
    )
    scenarios.add_argument("--agents", type=int, default=10, help="travellers sampled")
    scenarios.add_argument(
        "--days", type=int, default=1, help="days to run (default 1)"
    )
    scenarios.add_argument(
        "--seed", type=int, default=0, help="random seed (default 0)"
    )
    add_brain_arguments(scenarios)
    scenarios.set_defaults(handler=_scenarios)
    judge = urban_commands.add_parser(
        "judge",
        help="judge agent vs human (or rule baseline) responses; binomial, sign, Bayes tests",
        description=(
            "Pair each scenario's agent response with the annotators' response (--human, a "
            "filled-in annotators.csv) or else the rule baseline's, in random order; write "
            "pairs.csv (blinded) and key.csv; judge each pair with --brain (the rule judge "
            "offline); write verdicts.csv and print the paper's three tests."
        ),
    )
    judge.add_argument(
        "--scenarios", default="runs/believability", help="scenarios folder"
    )
    judge.add_argument("--human", default=None, help="annotators' filled-in CSV")
    judge.add_argument("--seed", type=int, default=0, help="seed of the pair order")
    add_published_judge_arguments(judge)
    add_brain_arguments(judge)
    judge.set_defaults(handler=_judge)


def _scenarios(args: argparse.Namespace) -> int:
    from mesa_llm_mobility.urban import believability  # noqa: PLC0415

    found = believability.generate_scenarios(
        args.scenarios,
        days=args.days,
        seed=args.seed,
        agents=args.agents,
        brain=args.brain,
        brain_options=brain_options(args),
    )
    paths = believability.write_annotator_files(found, args.out)
    kinds = ", ".join(
        f"{kind} {sum(s.kind == kind for s in found)}"
        for kind in believability.SCENARIO_KINDS
    )
    print(f"{len(found)} scenarios ({kinds}): " + ", ".join(p.name for p in paths))
    return 0


def _judge(args: argparse.Namespace) -> int:
    from pathlib import Path  # noqa: PLC0415

    from mesa_llm_mobility.cognition.settings import make_brain  # noqa: PLC0415
    from mesa_llm_mobility.urban import believability  # noqa: PLC0415

    if args.published:
        return judge_published(args)
    folder = Path(args.scenarios)
    found = believability.read_scenarios(folder / "responses.json")
    human = (
        None if args.human is None else believability.read_human_responses(args.human)
    )
    pairs = believability.blinded_pairs(found, human, seed=args.seed)
    if not pairs:
        raise ValueError(f"{args.human}: no scenario has a human response")
    believability.write_pairs(pairs, folder)
    brain = make_brain(args.brain, rng=args.seed, **brain_options(args))
    try:
        verdicts, tests = believability.evaluate(pairs, brain)
    finally:
        brain.close()
    verdicts.to_csv(folder / "verdicts.csv", index=False)
    other = "human" if human is not None else "rule baseline"
    print(
        f"{tests.n} pairs judged by {brain.name}: agent {tests.wins}, {other} {tests.losses}, "
        f"ties {tests.ties}\n"
        f"binomial test (H0: agent wins <= 1/3, ties half): p = {tests.binomial_p:.3f}\n"
        f"sign test (H0: p_agent <= 0.5, ties dropped): p = {tests.sign_p:.3f}\n"
        f"posterior P(agent at least as good) = {tests.posterior_at_least_as_good:.3f}\n"
        f"pairs.csv, key.csv, verdicts.csv in {folder}"
    )
    return 0
