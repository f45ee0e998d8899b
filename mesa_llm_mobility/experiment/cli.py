"""``mlm sweep ...`` commands: a parameter sweep of the urban or evacuation model.

``mesa_llm_mobility/cli.py`` calls :func:`add_sweep_commands` on its subparsers::

    mlm sweep urban --param days=1 --param agents=70,140 --seeds 3 --executor process --out runs/sweep
    mlm sweep evac --param composition=A,H --seeds 2 --out runs/evac-sweep

Each ``--param NAME=V1,V2,...`` adds a parameter with its values (numbers, ``true``/``false`` and
``none`` are parsed; anything else is text). The table of every run's last collected step is
printed, and the whole sweep table is written to ``<out>/results.csv``.
"""

from __future__ import annotations

import argparse
from typing import Any

import pandas as pd

from mesa_llm_mobility.cognition.arguments import add_brain_arguments, brain_options
from mesa_llm_mobility.experiment.executors import EXECUTORS

ALIASES = {"agents": "n_agents"}
"""Short ``--param`` names and the parameter they stand for."""

RESULTS_FILE = "results.csv"


def parse_value(text: str) -> Any:
    """A ``--param`` value: an int, a float, a bool, ``None`` or the text itself."""
    text = text.strip()
    lowered = text.lower()
    if lowered in {"true", "false"}:
        return lowered == "true"
    if lowered == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_parameters(items: list[str]) -> dict[str, Any]:
    """``["days=1,2", "agents=70"]`` -> ``{"days": [1, 2], "n_agents": 70}``.

    Raises:
        ValueError: For an item without ``=``, without a name or values, or given twice.
    """
    parameters: dict[str, Any] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name = ALIASES.get(name.strip(), name.strip())
        if not sep or not name or not values.strip():
            raise ValueError(f"--param {item!r}: use NAME=VALUE[,VALUE...]")
        if name in parameters:
            raise ValueError(f"--param {name} is given twice")
        parsed = [parse_value(v) for v in values.split(",")]
        parameters[name] = parsed if len(parsed) > 1 else parsed[0]
    return parameters


def sweep_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm sweep urban|evac``: run the sweep, print one line per run."""
    from mesa_llm_mobility.experiment.sweeps import sweep  # noqa: PLC0415  (fast --help)

    if args.model == "urban":
        from mesa_llm_mobility.urban import UrbanMobilityModel as model_cls  # noqa: PLC0415, N813
    else:
        from mesa_llm_mobility.evacuation import EvacuationModel as model_cls  # noqa: PLC0415, N813
    if args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    parameters = parse_parameters(args.param or [])
    if args.brain != "rules":
        parameters.setdefault("brain", args.brain)
    results = sweep(
        model_cls,
        parameters,
        seeds=args.seeds,
        out=args.out,
        executor=args.executor,
        max_workers=args.workers,
        ray_address=args.ray_address,
        num_cpus=args.num_cpus,
        num_cpus_per_run=args.cpus_per_run,
        brain_options=brain_options(args),
        progress=not args.no_progress,
    )
    results.to_csv(f"{args.out}/{RESULTS_FILE}", index=False)
    last = results.groupby("RunId", sort=True).tail(1).drop(columns=["run_dir"])
    if last["error"].isna().all():
        last = last.drop(columns=["error"])
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(last.to_string(index=False))
    attrs = results.attrs
    print(
        f"\n{len(last)} runs: {attrs['executed']} executed, {attrs['skipped']} already "
        f"complete, {attrs['failed']} failed; results in {args.out}/{RESULTS_FILE}"
    )
    return 0


def add_executor_arguments(
    parser: argparse.ArgumentParser,
    *,
    default: str | None = "serial",
    local_ray_cpus: bool = True,
) -> None:
    """Add ``--executor``, ``--workers``, ``--ray-address`` and ``--num-cpus`` to a command.

    Args:
        parser: The command's parser.
        default: The default executor (``None``: the command's own way without one).
        local_ray_cpus: Whether to add ``--num-cpus`` (leave it out where the command's
            runner does not take the CPUs of a local Ray).
    """
    parser.add_argument(
        "--executor",
        choices=EXECUTORS,
        default=default,
        help=f"default {default or 'none'}",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes (process executor)",
    )
    parser.add_argument(
        "--ray-address",
        default=None,
        help="Ray cluster address ('auto', 'ray://head:10001'); default: a local Ray",
    )
    if local_ray_cpus:
        parser.add_argument(
            "--num-cpus", type=int, default=None, help="CPUs of a local Ray instance"
        )


def add_sweep_commands(commands: argparse._SubParsersAction) -> None:
    """Add ``mlm sweep urban`` and ``mlm sweep evac`` to the ``mlm`` subcommands."""
    group = commands.add_parser(
        "sweep", help="parameter sweeps (grid x seeds) on one machine or a Ray cluster"
    )
    models = group.add_subparsers(dest="sweep_model", required=True, metavar="MODEL")
    for model, label in (("urban", "urban daily travel"), ("evac", "evacuation")):
        parser = models.add_parser(
            model,
            help=f"sweep the {label} model",
            description=(
                f"Run the {label} model for every combination of the --param values and every "
                "seed, one run directory per run under --out; finished runs are skipped."
            ),
        )
        parser.add_argument(
            "--param",
            action="append",
            metavar="NAME=V1[,V2...]",
            help="a parameter and its values (repeatable), e.g. days=1,2 or agents=70,140",
        )
        parser.add_argument(
            "--seeds",
            type=int,
            default=1,
            help="seeds 0..N-1 per combination (default 1)",
        )
        parser.add_argument("--out", required=True, help="the sweep's folder")
        add_executor_arguments(parser)
        parser.add_argument(
            "--cpus-per-run",
            type=float,
            default=1,
            help="CPUs each Ray task reserves (default 1)",
        )
        parser.add_argument(
            "--no-progress", action="store_true", help="no progress bar"
        )
        add_brain_arguments(parser)
        parser.set_defaults(handler=sweep_command, model=model)
