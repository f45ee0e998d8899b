"""``mlm evac report`` printing every statistic beside the paper's; ``mlm evac representation``.

:func:`add_evac_report_commands` is registered with one line in
:func:`~mesa_llm_mobility.evacuation.cli.add_evac_commands`: it gives the ``report`` command
``--doc PATH`` (regenerate the documentation page from the report, :mod:`.experiment_doc`)
and makes its handler print every statistic (ours, the between-seed interval, the paper's),
and it adds ``representation``, the spatial-representation benchmark of the paper's Sec. 2.2.4
(:mod:`.representation`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mesa_llm_mobility.cognition.arguments import (
    add_brain_arguments,
    brain_options,
    positive_int,
)
from mesa_llm_mobility.evacuation.paper_values import STATISTICS


def report_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm evac report``: (re)write the report, print every statistic, the doc."""
    # imported here: the report loads statsmodels and matplotlib, which `mlm --help` and the
    # other commands never need
    from mesa_llm_mobility.evacuation.experiment_doc import (  # noqa: PLC0415
        write_experiment_doc,
    )
    from mesa_llm_mobility.evacuation.report import (  # noqa: PLC0415
        NUMBERS_FILE,
        write_report,
    )

    path = write_report(args.experiment)
    print(
        statistics_lines(json.loads((Path(args.experiment) / NUMBERS_FILE).read_text()))
    )
    print(f"report: {path}")
    if args.doc:
        page = write_experiment_doc(
            args.experiment, args.doc, llm_benchmark=args.llm_benchmark
        )
        print(f"documentation page: {page}")
    return 0


def statistics_lines(report: dict) -> str:
    """Every statistic of a ``report.json`` as aligned lines: label, ours, seeds, paper."""
    ours, seeds = report["ours"], report.get("seeds", {})
    lines = []
    width = max(len(s.label) for s in STATISTICS.values())
    for key, stat in STATISTICS.items():
        interval = seeds.get(key)
        spread = (
            f" [{stat.format(interval['low'])}, {stat.format(interval['high'])}]"
            if interval and interval.get("low") is not None
            else ""
        )
        value = ours.get(key)
        lines.append(
            f"{stat.label:<{width}}  {stat.format(_number(value)):>10}{spread}  "
            f"(paper {stat.paper_string()})"
        )
    return "\n".join(lines)


def _number(value: object) -> float | None:
    if value == "inf":
        return float("inf")
    if value == "-inf":
        return float("-inf")
    return value  # type: ignore[return-value]


def representation_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm evac representation``: the four encodings' accuracy for a brain."""
    # imported here: the benchmark steps the evacuation model, which `mlm --help` never needs
    from mesa_llm_mobility.cognition.settings import make_brain  # noqa: PLC0415
    from mesa_llm_mobility.evacuation.model import EvacuationModel  # noqa: PLC0415
    from mesa_llm_mobility.evacuation.representation import (  # noqa: PLC0415
        accuracy_table,
        capture_snapshots,
        run_benchmark,
    )

    model = EvacuationModel(
        composition=args.composition, block=args.block, rng=args.seed, time_limit_s=240
    )
    snapshots = capture_snapshots(
        model, steps=args.steps, per_step=args.per_step, seed=args.seed
    )
    brain = make_brain(args.brain, rng=args.seed, **brain_options(args))
    answers = run_benchmark(snapshots, brain, seed=args.seed)
    table = accuracy_table(answers)
    print(f"{len(snapshots)} snapshots, {len(answers)} answers, brain {args.brain}")
    print(table.round(3).to_string())
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        answers.to_csv(args.out, index=False)
        print(f"answers written to {args.out}")
    return 0


def add_evac_report_commands(commands: argparse._SubParsersAction) -> None:
    """``evac report --doc`` with the handler printing every statistic; ``evac representation``.

    Args:
        commands: The ``evac`` subcommands (with ``report`` registered).
    """
    report = commands.choices["report"]
    report.add_argument(
        "--doc",
        metavar="PATH",
        default=None,
        help="also write the documentation page (docs/experiments/evacuation.md) from the "
        "report's numbers and tables",
    )
    report.add_argument(
        "--llm-benchmark",
        metavar="JSON",
        default=None,
        help="with --doc: show these rows of benchmarks/bench_evac_scripted_llm.py "
        "(benchmarks/results/evac_scripted_llm.json) on the page",
    )
    report.set_defaults(handler=report_command)
    representation = commands.add_parser(
        "representation",
        help="the spatial-representation benchmark: four encodings of frozen views",
        description="Freeze pedestrians' views from a rule-brain run, encode each as no map, "
        "structured cells, lean ASCII and ASCII with a decoding protocol (and rotated a "
        "quarter turn), ask questions whose answers the view determines, and print each "
        "encoding's accuracy for the chosen brain (paper Sec. 2.2.4). The rule brain reads "
        "the encodings back with a parser: a check that every question is answerable.",
    )
    representation.add_argument("--composition", default="A", help="default A")
    representation.add_argument("--block", type=int, default=1, help="default 1")
    representation.add_argument("--seed", type=int, default=0, help="default 0")
    representation.add_argument(
        "--steps",
        type=positive_int,
        nargs="+",
        default=[3, 60, 120],
        help="steps at which views are frozen (default 3 60 120)",
    )
    representation.add_argument(
        "--per-step",
        type=positive_int,
        default=4,
        help="pedestrians frozen at each step (default 4)",
    )
    representation.add_argument("--out", default=None, help="CSV of every answer")
    add_brain_arguments(representation)
    representation.set_defaults(handler=representation_command)
