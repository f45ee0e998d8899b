"""``mlm evac ...`` commands: run, resume and fork an evacuation; its lanes, experiment, report.

``run``, ``resume`` and ``fork`` come from the shared lifecycle's command line
(:func:`~mesa_llm_mobility.experiment.cli.add_run_commands`, flags from
:class:`~.parameters.EvacuationParameters` and :class:`~.parameters.EvacuationRunOptions`).
``mesa_llm_mobility/cli.py`` calls :func:`add_evac_commands` on its subparsers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mesa_llm_mobility.cognition.arguments import (
    add_brain_arguments,
    brain_options,
    positive_int,
)
from mesa_llm_mobility.evacuation.parameters import EvacuationParameters
from mesa_llm_mobility.evacuation.report_cli import add_evac_report_commands
from mesa_llm_mobility.experiment.cli import add_executor_arguments, add_run_commands
from mesa_llm_mobility.experiment.exports import (
    ExportFormat,
    add_export_command,
    format_registry,
)

_PEDPY = "mesa_llm_mobility.evacuation.pedpy_export"

EVACUATION_EXPORTS = format_registry(
    ExportFormat(
        "pedpy-trajectory",
        f"{_PEDPY}:write_pedpy_trajectory",
        (".txt",),
        "PedPy's trajectory text (id frame x y z in metres at cell centres, 3 frames per s)",
    ),
    ExportFormat(
        "pedpy-geometry",
        f"{_PEDPY}:write_pedpy_geometry",
        (".wkt",),
        "the plaza's walkable area as WKT in metres (pedpy.WalkableArea)",
    ),
)
"""The evacuation run's export formats (``mlm evac export``; docs/exports.md)."""


def lanes_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm evac lanes``: one pedestrian's five-lane figure from a saved run."""
    from mesa_llm_mobility.evacuation.knowledge_graph import (  # noqa: PLC0415
        plot_agent_lanes,
    )
    from mesa_llm_mobility.experiment.run_directory import (  # noqa: PLC0415
        RunDirectory,
    )

    run = RunDirectory.open(args.run)
    tables = {
        name: run.read_table(name)
        for name in ("memory_versions", "decisions", "events", "positions")
    }
    known = sorted(int(a) for a in tables["decisions"]["agent_id"].unique())
    if args.agent not in known:
        print(
            f"error: {args.run}: no pedestrian {args.agent} in the decisions table "
            f"(pedestrians: {', '.join(map(str, known))})",
            file=sys.stderr,
        )
        return 2
    out = args.out or run.plots_dir / f"lanes_{args.agent}.png"
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    path = plot_agent_lanes(
        args.agent,
        tables["memory_versions"],
        tables["decisions"],
        tables["events"],
        tables["positions"],
        out,
    )
    print(f"lanes of pedestrian {args.agent} written to {path}")
    return 0


def experiment_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm evac experiment``: the compositions x blocks design, then the report."""
    from mesa_llm_mobility.evacuation.experiment import run_experiment  # noqa: PLC0415

    result = run_experiment(
        args.out,
        compositions=args.compositions,
        blocks=args.blocks,
        brain=args.brain,
        seed=args.seed,
        seeds=args.seeds,
        time_limit_s=args.time_limit,
        plaza=args.plaza,
        executor=args.executor,
        max_workers=args.workers,
        ray_address=args.ray_address,
        brain_options=brain_options(args),
        progress=not args.no_progress,
    )
    attrs = result.results.attrs
    print(
        f"{result.results['RunId'].nunique()} runs ({attrs['executed']} executed, "
        f"{attrs['skipped']} already complete, {attrs['failed']} failed) in "
        f"{result.wall_s:.1f} s wall, {result.cpu_s:.1f} s CPU; "
        f"{len(result.pooled['pedestrians'])} pedestrians"
    )
    return _print_report(args.out)


def report_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm evac report``: (re)write an experiment folder's report."""
    from mesa_llm_mobility.evacuation.report import write_report  # noqa: PLC0415

    write_report(args.experiment)
    return _print_report(args.experiment)


def _print_report(out: str) -> int:
    from mesa_llm_mobility.evacuation.report import NUMBERS_FILE, REPORT_FILE  # noqa: PLC0415

    numbers = json.loads((Path(out) / NUMBERS_FILE).read_text())["ours"]
    print(
        f"evacuated {100 * numbers['evacuated_share']:.1f} %, killed "
        f"{100 * numbers['killed_share']:.1f} %, unresolved {100 * numbers['unresolved_share']:.1f} % "
        "(paper: 65.6 / 28.7 / 5.7 %); evacuated with / without a usable exit known: "
        f"{100 * numbers['evacuated_if_usable_exit_known']:.1f} % / "
        f"{100 * numbers['evacuated_if_no_usable_exit_known']:.1f} % (paper: 89.5 / 1.05 %)"
    )
    print(f"report: {Path(out) / REPORT_FILE}")
    return 0


def add_evac_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register ``evac run | resume | fork | lanes | experiment | report | export``."""
    evac = subparsers.add_parser(
        "evac", help="crowd evacuation under a moving threat (plaza)"
    )
    commands = evac.add_subparsers(
        dest="evac_command", required=True, metavar="COMMAND"
    )
    add_run_commands(commands, EvacuationParameters)
    lanes = commands.add_parser(
        "lanes",
        help="draw one pedestrian's perception, affect, appraisal, decision and memory lanes",
        description="Draw one pedestrian's recorded chain of a saved run in five lanes (the "
        "paper's Fig. 8): perception events, fear and urgency, appraisal, decisions by "
        "revision depth, memory write / rewrite / forget.",
    )
    lanes.add_argument("run", help="run directory written by mlm evac run")
    lanes.add_argument("--agent", type=int, required=True, help="pedestrian id")
    lanes.add_argument(
        "--out", default=None, help="image file (default <run>/plots/lanes_<agent>.png)"
    )
    lanes.set_defaults(handler=lanes_command)
    _add_experiment_commands(commands)
    add_export_command(
        commands, EvacuationParameters.model_name, "evac", EVACUATION_EXPORTS
    )


def _add_experiment_commands(commands: argparse._SubParsersAction) -> None:
    experiment = commands.add_parser(
        "experiment",
        help="the paper's compositions x matched blocks design on the sweep engine, with its report",
        description="Run every composition in every matched block (the paper's 8 x 8 design, 704 pedestrians, by default) as one sweep (serial, process or Ray; finished runs are skipped on a rerun, failures are recorded), pool the runs and write report.md with figures into --out.",
    )
    experiment.add_argument(
        "--compositions", default="A-H", help="letters: A-H, A,D,H (default A-H)"
    )
    experiment.add_argument(
        "--blocks", type=int, default=8, help="matched blocks 1..N (default 8)"
    )
    experiment.add_argument(
        "--seed", type=int, default=0, help="seed of every run (default 0)"
    )
    experiment.add_argument(
        "--seeds",
        type=positive_int,
        default=None,
        help="replicate the paired design over this many seeds (--seed, --seed + 1, ...); "
        "the report gives between-seed intervals (default: one seed)",
    )
    experiment.add_argument("--plaza", default=None, help="plaza map file")
    experiment.add_argument(
        "--time-limit", type=float, default=240.0, help="seconds (default 240)"
    )
    experiment.add_argument("--out", required=True, help="the experiment folder")
    add_executor_arguments(experiment, local_ray_cpus=False)
    experiment.add_argument(
        "--no-progress", action="store_true", help="no progress bar"
    )
    add_brain_arguments(experiment)
    experiment.set_defaults(handler=experiment_command)
    report = commands.add_parser(
        "report",
        help="(re)write an experiment folder's report.md, report.json and figures",
    )
    report.add_argument(
        "experiment", help="the experiment folder (--out of evac experiment)"
    )
    report.set_defaults(handler=report_command)
    add_evac_report_commands(commands)
