"""``mlm traj ...`` commands: synthesize a history, run, evaluate, benchmark.

``run``, ``resume`` and ``fork`` come from the shared lifecycle's command line
(:func:`~mesa_llm_mobility.experiment.cli.add_run_commands`, flags from
:class:`~.parameters.TrajectoryParameters`); ``run`` also generates in shards on an executor
(``--executor``, ``--shards``: :mod:`~.shards`).

``mlm traj realism`` runs the realism detectors (:func:`~.realism.realism`).

``mesa_llm_mobility/cli.py`` calls :func:`add_traj_commands` on its subparsers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from mesa_llm_mobility.cognition.arguments import (
    _positive,
    add_brain_arguments,
    brain_options,
)
from mesa_llm_mobility.cognition.redaction import redact
from mesa_llm_mobility.experiment import cli as lifecycle_cli
from mesa_llm_mobility.experiment.cli import add_executor_arguments, add_run_commands
from mesa_llm_mobility.experiment.exports import (
    ExportFormat,
    add_export_command,
    format_registry,
)
from mesa_llm_mobility.experiment.parameters import parameters_from_arguments
from mesa_llm_mobility.trajectory.parameters import TrajectoryParameters

_positive_int = _positive(int)


def synth_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm traj synth``: write a synthetic history in NumoSim's layout."""
    from mesa_llm_mobility.trajectory.staypoints import write_numosim  # noqa: PLC0415
    from mesa_llm_mobility.trajectory.synth import synthesize  # noqa: PLC0415

    began = time.perf_counter()
    city = synthesize(args.individuals, args.weeks, seed=args.seed)
    stays_path, pois_path = write_numosim(city.stays, args.out)
    city.people.to_parquet(Path(args.out) / "people.parquet", index=False)
    stays = city.stays
    days = stays.groupby(["agent_id", stays["start"].dt.normalize()]).ngroups
    print(
        f"{args.individuals} individuals, {days} daily trajectories, {len(stays)} stays "
        f"({len(stays) / days:.2f} per day), {stays['poi_id'].nunique()} POIs visited "
        f"(written to poi.parquet; the city has {len(city.pois)}), seed {args.seed}: "
        f"{time.perf_counter() - began:.1f} s"
    )
    print(f"written {stays_path}, {pois_path} and people.parquet")
    return 0


def run_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm traj run``: the shared run, or sharded on an executor when asked."""
    if args.executor is None and args.shards is None:
        return lifecycle_cli.run_command(args)
    # the model's modules load only when generating (mlm --help stays fast)
    from mesa_llm_mobility.trajectory.shards import (  # noqa: PLC0415
        ShardsFailedError,
        run_sharded_generation,
    )

    values = parameters_from_arguments(args)
    values["brain"] = args.brain
    parameters = TrajectoryParameters.from_values(values)
    options = parameters_from_arguments(args, lifecycle_cli.OPTION_PREFIX)
    try:
        result = run_sharded_generation(
            parameters,
            args.out,
            overwrite=args.overwrite,
            brain_options=brain_options(args),
            progress=not args.no_progress,
            executor=args.executor or "serial",
            workers=args.workers,
            shards=args.shards,
            ray_address=args.ray_address,
            num_cpus=args.num_cpus,
            stays=options.get("stays"),
        )
    except ShardsFailedError as error:
        print(f"mlm: error: {redact(str(error))}", file=sys.stderr)
        return 1
    trajectories = result.tables["trajectories"]
    extra = result.run.metadata["extra"]
    people, days = extra["individuals"], len(extra["dates"])
    print(f"run directory: {result.run.path}")
    print(
        f"{people} individuals x {days} days, brain {extra['brain']}, seed "
        f"{parameters.seed}, {result.shards} shards: {len(trajectories)} visits "
        f"({len(trajectories) / max(people * days, 1):.2f} per day), workflow success "
        f"{extra['workflow_success_rate']:.1%}"
    )
    if result.outputs:
        print("written: " + ", ".join(str(path) for path in result.outputs))
    return 0


def evaluate_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm traj evaluate``: the seven metrics, printed (and written as JSON)."""
    from mesa_llm_mobility.trajectory.metrics import evaluate  # noqa: PLC0415
    from mesa_llm_mobility.trajectory.staypoints import read_history  # noqa: PLC0415

    real = read_history(args.real, timezone=args.timezone)
    generated = read_history(args.generated, timezone=args.timezone)
    began = time.perf_counter()
    result = evaluate(real, generated, cell_km=args.cell_km, compat=args.compat)
    mode = "trajgenagent compat" if args.compat else f"{args.cell_km:g} km cells"
    print(f"{len(generated)} generated vs {len(real)} real visits ({mode}):")
    for name, value in result.items():
        print(f"  {name:<10} {value:.4f}")
    if args.spatial:
        from mesa_llm_mobility.trajectory.spatial import (  # noqa: PLC0415
            spatial_metrics,
        )

        extra = spatial_metrics(real, generated, cell_km=args.cell_km)
        print("beyond the paper, location-aware:")
        for name, value in extra.items():
            print(f"  {name:<14} {value:.4f}")
        result = {**result, **extra}
    print(f"({time.perf_counter() - began:.1f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
        print(f"written {args.json}")
    return 0


def _temperature_list(text: str) -> list[float]:
    try:
        values = [float(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, got {text!r}"
        ) from None
    if not values or any(value < 0 for value in values):
        raise argparse.ArgumentTypeError(f"expected temperatures >= 0, got {text!r}")
    return values


def benchmark_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm traj benchmark``: every baseline on the same held-out days."""
    from mesa_llm_mobility.trajectory.baselines import BASELINE_LABELS  # noqa: PLC0415
    from mesa_llm_mobility.trajectory.benchmark import (  # noqa: PLC0415
        benchmark_config,
        run_benchmark,
    )

    config = benchmark_config(
        history=args.history,
        individuals=args.individuals,
        weeks=args.weeks,
        city_seed=args.city_seed,
        hold_out=args.hold_out,
        seed=args.seed,
        baselines=args.baselines.split(",") if args.baselines else None,
        brain=args.brain,
        cell_km=args.cell_km,
        detectors=args.detectors.split(",") if args.detectors else None,
        temperatures=args.temperatures,
        study_individuals=args.study_individuals,
        study_days=args.study_days,
        timezone=args.timezone,
        neural_epochs=args.neural_epochs,
    )
    options = brain_options(
        args
    )  # --max-tokens among them (left out: the paper's 1024)
    if args.top_p is not None:
        options["extra_params"] = {"top_p": args.top_p}
    began = time.perf_counter()
    result = run_benchmark(
        args.out,
        config,
        overwrite=args.overwrite,
        brain_options=options,
        progress=not args.no_progress,
    )
    tables = result.tables
    print(
        f"{result.run.metadata['extra']['individuals']} individuals x "
        f"{len(result.run.metadata['extra']['dates'])} held-out days, "
        f"{len(result.runs)} baselines: {time.perf_counter() - began:.1f} s"
    )

    def label(name: str) -> str:
        return BASELINE_LABELS.get(name, name)

    print(
        tables.metrics.rename(index=label).to_string(
            float_format=lambda value: f"{value:.4f}"
        )
    )
    print("beyond the paper, location-aware:")
    print(
        tables.spatial.rename(index=label).to_string(
            float_format=lambda value: f"{value:.4f}"
        )
    )
    if not tables.realism.empty:
        print(
            tables.realism.pivot_table(
                index="baseline", columns="detector", values="auroc", sort=False
            ).to_string(float_format=lambda value: f"{value:.3f}")
        )
    cost = tables.cost.set_index("baseline")[
        ["wall_s", "cpu_s", "train_s", "generate_s", "parameters", "http_calls"]
    ]
    print(cost.to_string(float_format=lambda value: f"{value:.1f}"))
    if not tables.tools.empty:
        print(
            tables.tools.set_index("baseline").to_string(
                float_format=lambda value: f"{value:.3f}"
            )
        )
    if not tables.temperature.empty:
        print(
            tables.temperature.set_index("temperature")[
                ["daily_runs", "total", "schema", "constraint", "fallbacks"]
            ].to_string(float_format=lambda value: f"{value:.3f}")
        )
    for note in tables.notes:
        print(f"note: {note}")
    print(f"written {result.report} and the tables in {result.run.tables_dir}")
    return 0


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of a command that writes a run from a history: zone, overwrite, progress, brain."""
    parser.add_argument(
        "--timezone", default=None, help="time zone of the history's times"
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an earlier run directory"
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="hide the progress bar"
    )
    add_brain_arguments(parser)


def realism_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm traj realism``: the detectors' AUROC / AP table, printed (and saved)."""
    from mesa_llm_mobility.trajectory.realism import realism  # noqa: PLC0415
    from mesa_llm_mobility.trajectory.staypoints import read_history  # noqa: PLC0415

    real = read_history(args.real, timezone=args.timezone)
    generated = read_history(args.generated, timezone=args.timezone)
    began = time.process_time()
    table = realism(
        real,
        generated,
        seed=args.seed,
        detectors=tuple(args.detectors),
        classifier_kind=args.classifier,
    )
    print(
        f"{len(generated)} generated vs {len(real)} real visits, "
        f"{int(table['individuals'].iloc[0])} individuals compared "
        f"({int(table['unmatched'].iloc[0])} left out), seed {args.seed}; "
        "AUROC / AP near 0.5 = indistinguishable:"
    )
    shown = table[["detector", "level", "auroc", "ap", "n_real", "n_generated"]].copy()
    shown["auroc 95% CI"] = [
        f"{low:.3f}-{high:.3f}"
        for low, high in zip(table["auroc_ci_low"], table["auroc_ci_high"], strict=True)
    ]
    print(shown.to_string(index=False, float_format=lambda value: f"{value:.4f}"))
    print(f"({time.process_time() - began:.1f} s CPU)")
    if args.csv:
        table.to_csv(args.csv, index=False)
        print(f"written {args.csv}")
    return 0


_MOVING = "mesa_llm_mobility.trajectory.moving_export"
_GEO_SUFFIXES = (".parquet", ".geojson")

TRAJECTORY_EXPORTS = format_registry(
    ExportFormat(
        "stays",
        f"{_MOVING}:write_stays",
        _GEO_SUFFIXES,
        "GeoParquet/GeoJSON: one point per generated stay (EPSG:4326), local start/end",
    ),
    ExportFormat(
        "trajectory-points",
        f"{_MOVING}:write_trajectory_points",
        _GEO_SUFFIXES,
        "GeoParquet/GeoJSON: a MovingPandas TrajectoryCollection's points (agent_id, t)",
    ),
    ExportFormat(
        "trajectory-lines",
        f"{_MOVING}:write_trajectory_lines",
        _GEO_SUFFIXES,
        "GeoParquet/GeoJSON: one line per individual (start_t, end_t, length in metres)",
    ),
)
"""The trajectory run's export formats (``mlm traj export``; docs/exports.md)."""


def add_traj_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register ``traj synth | generate | evaluate`` on the ``mlm`` subparsers."""
    traj = subparsers.add_parser(
        "traj",
        help="trajectory generation (TrajGenAgent): synthesize, generate, evaluate, benchmark",
    )
    commands = traj.add_subparsers(
        dest="traj_command", required=True, metavar="COMMAND"
    )

    synth = commands.add_parser(
        "synth",
        help="write a synthetic city's stay-point history (NumoSim layout)",
        description="Synthesize a city and population (seeded, offline) and write their "
        "stay-point history in NumoSim's layout: staypoints.parquet, poi.parquet, and "
        "people.parquet (anchors and preferences).",
    )
    synth.add_argument(
        "--individuals", type=_positive_int, default=1200, help="people (default 1200)"
    )
    synth.add_argument(
        "--weeks", type=_positive_int, default=4, help="weeks of history (default 4)"
    )
    synth.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    synth.add_argument("--out", required=True, help="folder to write")
    synth.set_defaults(handler=synth_command)

    run = add_run_commands(commands, TrajectoryParameters)["run"]
    add_executor_arguments(run, default=None)
    run.add_argument(
        "--shards",
        type=_positive_int,
        default=None,
        help="split the individuals into N shards run on --executor (default: 4 per "
        "worker); the result is the unsharded one, and a rerun resumes",
    )
    run.set_defaults(handler=run_command)

    evaluate = commands.add_parser(
        "evaluate",
        help="the seven distribution metrics of generated vs real stay points",
        description="Distance, G-radius, Duration, DailyLoc, I-rank, G-rank (JSD) and "
        "Transition (Frobenius) of generated against real stay points.",
    )
    evaluate.add_argument(
        "--real", required=True, help="real stay points (NumoSim folder or file)"
    )
    evaluate.add_argument("--generated", required=True, help="generated stay points")
    evaluate.add_argument(
        "--cell-km", type=float, default=0.5, help="grid cell size in km (default 0.5)"
    )
    evaluate.add_argument(
        "--compat",
        choices=("trajgenagent",),
        default=None,
        help="the reference implementation's binning, to compare with published tables",
    )
    evaluate.add_argument(
        "--timezone", default=None, help="time zone of the tables' times"
    )
    evaluate.add_argument(
        "--spatial",
        action="store_true",
        help="also the location-aware metrics beyond the paper (density, OD flows, EMD, "
        "daily distance), which see where the visits are",
    )
    evaluate.add_argument(
        "--json", default=None, help="also write the metrics to this JSON file"
    )
    evaluate.set_defaults(handler=evaluate_command)

    benchmark = commands.add_parser(
        "benchmark",
        help="every baseline on the same held-out days: the paper's Tables II-VIII",
        description="Hold out each individual's last days of a history (a synthetic city by "
        "default) and generate them with every baseline: the paper's GRU, LSTM, Transformer "
        "and SeqGAN (with the neural extra), a Markov chain over (activity, POI, hour), the "
        "workflow on sampled historical chains, the full workflow with the rule brain and "
        "without its kinematics, and with an LLM brain when --brain llm:<model> is given "
        "(then also free-form tool calling and the temperature study; the paper's sampling: "
        "temperature 0.9, top-p 0.95, 1024 tokens). Writes the tables (Parquet and CSV), "
        "report.md and figures into --out.",
    )
    benchmark.add_argument("--out", required=True, help="run directory to write")
    benchmark.add_argument(
        "--history",
        default=None,
        help="NumoSim folder or stay-point file (default: a synthetic city)",
    )
    benchmark.add_argument(
        "--individuals",
        type=_positive_int,
        default=300,
        help="people of the synthetic city (default 300; the paper's scale is 1200)",
    )
    benchmark.add_argument(
        "--weeks",
        type=_positive_int,
        default=4,
        help="weeks of the synthetic history (default 4)",
    )
    benchmark.add_argument(
        "--city-seed",
        type=int,
        default=0,
        help="seed of the synthetic city (default 0)",
    )
    benchmark.add_argument(
        "--hold-out",
        type=_positive_int,
        default=7,
        help="days held out per individual and generated (default 7)",
    )
    benchmark.add_argument(
        "--seed", type=int, default=0, help="seed of every baseline (default 0)"
    )
    benchmark.add_argument(
        "--baselines",
        default=None,
        help="comma-separated subset of gru,lstm,transformer,seqgan,markov,historical,"
        "rules,no_kinematics,llm,tool_calling (default: all; llm and tool_calling with an "
        "LLM brain, the neural ones with the neural extra)",
    )
    benchmark.add_argument(
        "--neural-epochs",
        type=_positive_int,
        default=None,
        help="maximum-likelihood epochs of the neural baselines (default: 6; SeqGAN's "
        "pre-training 8)",
    )
    benchmark.add_argument(
        "--top-p",
        type=float,
        default=None,
        help="LLM nucleus sampling (default 0.95, the paper's)",
    )
    benchmark.add_argument(
        "--cell-km",
        type=float,
        default=0.5,
        help="metrics grid cell in km (default 0.5)",
    )
    benchmark.add_argument(
        "--detectors",
        default=None,
        help="comma-separated realism detectors of Table III (default: "
        "every one of visit,visit_individual,visit_learned,individual,individual_h3,"
        "classifier whose packages are installed)",
    )
    benchmark.add_argument(
        "--temperatures",
        type=_temperature_list,
        default=[0.5, 0.9, 1.5],
        help="temperatures of the study (default 0.5,0.9,1.5)",
    )
    benchmark.add_argument(
        "--study-individuals",
        type=_positive_int,
        default=100,
        help="individuals of the temperature study (default 100)",
    )
    benchmark.add_argument(
        "--study-days",
        type=_positive_int,
        default=1,
        help="held-out days of the temperature study (default 1)",
    )
    _add_run_arguments(benchmark)
    benchmark.set_defaults(handler=benchmark_command)
    add_realism_command(commands)


def add_realism_command(commands: argparse._SubParsersAction) -> None:
    """Register ``traj realism`` (the detectors of :mod:`~.realism`)."""
    from mesa_llm_mobility.trajectory.realism.choices import (  # noqa: PLC0415
        CLASSIFIERS,
        DEFAULT_DETECTORS,
        DETECTORS,
    )

    realism = commands.add_parser(
        "realism",
        help="detectors that try to tell generated trajectories from real ones (AUROC / AP)",
        description="Train the visit-level (ICAD-like), individual-level (BeSTAD-like) and "
        "classifier two-sample detectors on part of the real days and report how well they "
        "separate the other real days from the generated ones: AUROC and AP on a balanced "
        "split, 0.5 = indistinguishable. Proxies of the paper's detectors, not truths.",
    )
    realism.add_argument(
        "--real", required=True, help="real stay points (NumoSim folder or file)"
    )
    realism.add_argument("--generated", required=True, help="generated stay points")
    realism.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    realism.add_argument(
        "--detectors",
        nargs="+",
        choices=DETECTORS,
        default=list(DEFAULT_DETECTORS),
        metavar="NAME",
        help=f"any of {', '.join(DETECTORS)} (default: {' '.join(DEFAULT_DETECTORS)})",
    )
    realism.add_argument(
        "--classifier",
        choices=CLASSIFIERS,
        default=CLASSIFIERS[0],
        help="the two-sample test's model (default logistic)",
    )
    realism.add_argument(
        "--timezone", default=None, help="time zone of the tables' times"
    )
    realism.add_argument("--csv", default=None, help="also write the table to this CSV")
    realism.set_defaults(handler=realism_command)
    add_export_command(
        commands, TrajectoryParameters.model_name, "traj", TRAJECTORY_EXPORTS
    )
