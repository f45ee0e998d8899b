"""``mlm evac ...`` commands: run one evacuation and print its summary; draw a pedestrian's lanes.

The lead's ``mesa_llm_mobility/cli.py`` calls :func:`add_evac_commands` on its subparsers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from mesa_llm_mobility.cognition.arguments import (
    add_brain_arguments,
    brain_options,
    non_negative_float,
    positive_int,
)
from mesa_llm_mobility.evacuation.report_cli import add_evac_report_commands
from mesa_llm_mobility.experiment.cli import add_executor_arguments

if TYPE_CHECKING:
    from mesa_llm_mobility.evacuation.runner import EvacuationRun

CHECKPOINT_EVERY_S = 60.0
"""``mlm evac run``'s default checkpoint interval (simulated seconds)."""


def _composition(text: str) -> str | dict[str, int]:
    """``H`` or ``rule_following=6,anxious_conformist=5``."""
    if "=" not in text:
        return text.strip().upper()
    counts: dict[str, int] = {}
    for part in text.split(","):
        name, _, count = part.partition("=")
        try:
            counts[name.strip()] = int(count)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"bad archetype count {part!r}: use name=count"
            ) from None
    return counts


def run_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm evac run``: run, write the run directory, print the summary table."""
    from mesa_llm_mobility.evacuation.layers import GateSchedule  # noqa: PLC0415  (fast --help)
    from mesa_llm_mobility.evacuation.runner import (  # noqa: PLC0415
        evacuation_config,
        run_evacuation,
    )

    config = evacuation_config(
        plaza=args.plaza,
        composition=args.composition,
        block=args.block,
        seed=args.seed,
        brain=args.brain,
        time_limit_s=args.time_limit,
        gate_schedule=GateSchedule(args.gates_closing_at, args.gates_closed_at),
        rejection=args.rejection,
    )
    result = run_evacuation(
        args.out,
        config,
        overwrite=args.overwrite,
        brain_options=brain_options(args),
        memory_stream=args.memory_stream,
        route_workers=args.route_workers,
        checkpoint_every_s=args.checkpoint_every or None,
        progress=not args.no_progress,
    )
    return _print_result(result)


def resume_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm evac resume``: continue a run from its checkpoint, print its summary."""
    from mesa_llm_mobility.evacuation.runner import resume_evacuation  # noqa: PLC0415

    result = resume_evacuation(
        args.run_dir,
        brain_options=brain_options(args),
        route_workers=args.route_workers,
        progress=not args.no_progress,
    )
    return _print_result(result)


def _print_result(result: EvacuationRun) -> int:
    """Print a finished run's summary table (and its LLM use); returns the exit status 0."""
    from mesa_llm_mobility.cognition.ledger import llm_summary_lines  # noqa: PLC0415
    from mesa_llm_mobility.evacuation.outputs import summary_table  # noqa: PLC0415
    from mesa_llm_mobility.evacuation.runner import LLM_SUMMARY_TABLE  # noqa: PLC0415

    model = result.model
    table = summary_table(model.outcomes_frame(), model.pedestrians_frame())
    print(
        f"plaza {model.plaza.name}, composition {json.dumps(model.composition)}, block {model.block}, "
        f"brain {model.brain.name}, seed {result.run.config['seed']}: ended at {model.time_s:.1f} s ({model.tick} steps)"
    )
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(table.to_string())
    if LLM_SUMMARY_TABLE in result.run.table_names():
        summary = result.run.read_table(LLM_SUMMARY_TABLE).set_index("kind")
        for line in llm_summary_lines(summary):
            print(line)
    print(f"\nrun written to {result.run.path} (trajectory plot: {result.plot})")
    return 0


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


def _add_route_workers(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--route-workers",
        type=positive_int,
        default=1,
        help="processes that plan the routes, this one included (default 1); the run is "
        "the same for any number, large crowds finish sooner with 2 on 2 cores",
    )


def add_evac_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register ``evac run``, ``evac resume``, ``evac lanes``, ``evac experiment`` and ``evac report``."""
    evac = subparsers.add_parser(
        "evac", help="crowd evacuation under a moving threat (plaza)"
    )
    commands = evac.add_subparsers(
        dest="evac_command", required=True, metavar="COMMAND"
    )
    run = commands.add_parser(
        "run",
        help="run one evacuation offline and write its run directory",
        description="Run the plaza evacuation with the rule brain (or an LLM brain) and write its run directory: config, metadata, the ledger (LLM brains), positions, decisions, events, outcomes (Parquet tables) and a trajectory plot.",
    )
    run.add_argument(
        "--composition",
        type=_composition,
        default="A",
        help="A-H, or archetype counts like rule_following=6,anxious_conformist=5 (default A)",
    )
    run.add_argument(
        "--block",
        type=int,
        default=None,
        help="matched block 1-8: start-cell permutation (default: none)",
    )
    run.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    run.add_argument(
        "--plaza",
        default=None,
        help="plaza map file (default: the shipped reference plaza)",
    )
    run.add_argument(
        "--time-limit", type=float, default=240.0, help="seconds (default 240)"
    )
    run.add_argument(
        "--gates-closing-at",
        type=float,
        default=5.0,
        help="seconds until gates start closing (default 5)",
    )
    run.add_argument(
        "--gates-closed-at",
        type=float,
        default=35.0 / 3.0,
        help="seconds until gates are closed (default 11.67)",
    )
    run.add_argument(
        "--rejection",
        choices=("paper", "repair"),
        default="paper",
        help="an invalid LLM answer: 'paper' rejects it (the pedestrian keeps its plan and is "
        "told why next turn), 'repair' re-prompts then falls back to the rule policy "
        "(default paper)",
    )
    run.add_argument(
        "--memory-stream",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also store every memory revision in the pedestrians' Chroma streams under "
        "memory/ (default on; the memory_versions table is written either way)",
    )
    _add_route_workers(run)
    run.add_argument(
        "--checkpoint-every",
        type=non_negative_float,
        default=CHECKPOINT_EVERY_S,
        metavar="SECONDS",
        help="write a checkpoint every this many simulated seconds, at the start and at the "
        f"end, for 'mlm evac resume' (default {CHECKPOINT_EVERY_S:g}; 0: none)",
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--out", required=True, help="run directory to write")
    run.add_argument(
        "--overwrite", action="store_true", help="replace an earlier run in --out"
    )
    add_brain_arguments(run)
    run.set_defaults(handler=run_command)
    resume = commands.add_parser(
        "resume",
        help="continue an interrupted evacuation from its latest good checkpoint",
        description="Continue a run written by 'mlm evac run' from its latest good checkpoint "
        "(a corrupt one is skipped) to its end; the run is the same as one never interrupted. "
        "An LLM brain answers the requests of the steps that were under way from the run's "
        "ledger. A finished run's outputs are written again.",
    )
    resume.add_argument("run_dir", metavar="RUN_DIR", help="the run directory")
    _add_route_workers(resume)
    resume.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_brain_arguments(resume, choose_brain=False)
    resume.set_defaults(handler=resume_command)
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
