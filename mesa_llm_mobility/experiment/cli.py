"""The command line of the shared run lifecycle: run, resume, fork and sweep any model.

Every model's command group gets the same four commands from its declared parameters, through
:func:`add_run_commands` and :func:`add_sweep_command`::

    mlm urban run --days 3 --agents 140 --out runs/urban
    mlm urban resume runs/urban
    mlm urban fork runs/urban --at 1 --out runs/urban-no-events --no-events
    mlm sweep urban --param days=1 --param agents=70,140 --seeds 3 --executor process --out runs/sweep

The flags of ``run`` are the model's parameters (:func:`~.parameters.add_parameter_arguments`:
types, bounds, units and help from the declaration) and run options; those of ``fork`` are the
parameters a fork may change. A sweep's ``--param NAME=V1,V2,...`` values are typed and checked
against the declaration before any run starts. This module names no model: it is given the
model's parameters class, which names its model class (loaded when a command runs).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd

from mesa_llm_mobility.cognition.arguments import (
    add_brain_arguments,
    brain_options,
    positive_int,
)
from mesa_llm_mobility.cognition.ledger import llm_summary_lines
from mesa_llm_mobility.experiment.executors import EXECUTORS
from mesa_llm_mobility.experiment.lifecycle import (
    LLM_SUMMARY_TABLE,
    RunResult,
    fork_run,
    resume_run,
    start_run,
)
from mesa_llm_mobility.experiment.parameters import (
    ParameterError,
    Parameters,
    add_parameter_arguments,
    load_model_class,
    parameters_from_arguments,
)
from mesa_llm_mobility.experiment.sweeps import sweep

RESULTS_FILE = "results.csv"
OPTION_PREFIX = "option_"


# ---------------------------------------------------------------------------- run, resume, fork
def add_run_commands(
    commands: argparse._SubParsersAction, parameters_class: type[Parameters]
) -> dict[str, argparse.ArgumentParser]:
    """Add ``run``, ``resume`` and ``fork`` for a model to its command group.

    Args:
        commands: The model group's subparsers.
        parameters_class: The model's declared parameters.

    Returns:
        The three parsers by name, for a model that adds flags of its own.
    """
    name = parameters_class.model_name
    options_class = _run_options_class(parameters_class)
    summary = (parameters_class.__doc__ or name).strip().splitlines()[0]
    run = commands.add_parser(
        "run",
        help=f"run the {name} model into a run directory; prints its summary",
        description=f"{summary} Runs it into --out (config, metadata, tables, checkpoints, "
        "plots; the ledger of an LLM brain) and prints its summary. Nothing is written "
        "when a parameter or an input file is refused.",
    )
    add_parameter_arguments(run.add_argument_group("parameters"), parameters_class)
    if options_class is not None:
        add_parameter_arguments(
            run.add_argument_group("run options (change no result)"),
            options_class,
            prefix=OPTION_PREFIX,
        )
    run.add_argument(
        "--out", default=f"runs/{parameters_class.command}", help="the run directory"
    )
    run.add_argument(
        "--overwrite", action="store_true", help="replace an earlier run in --out"
    )
    _add_progress(run)
    add_brain_arguments(run)
    run.set_defaults(handler=run_command, parameters_class=parameters_class)

    resume = commands.add_parser(
        "resume",
        help=f"continue an interrupted {name} run from its latest good checkpoint",
        description="Continue a run from its latest good checkpoint (a corrupt one is "
        "skipped) to its end; it ends as a run never interrupted would. An LLM brain answers "
        "the requests that were under way from the run's ledger. A finished run's outputs "
        "are written again.",
    )
    resume.add_argument("run_dir", metavar="RUN_DIR", help="the run directory")
    if options_class is not None:
        add_parameter_arguments(
            resume.add_argument_group("run options (change no result)"),
            options_class,
            prefix=OPTION_PREFIX,
            only=_resume_options(options_class),
        )
    _add_progress(resume)
    add_brain_arguments(resume, choose_brain=False)
    resume.set_defaults(handler=resume_command, parameters_class=parameters_class)

    fork = commands.add_parser(
        "fork",
        help=f"start a new {name} run from a checkpoint of another, with changes",
        description="Copy checkpoint --at of RUN_DIR (and the day tables up to it) into --out "
        "and run on with changed parameters. An LLM brain answers requests identical to the "
        f"source's from the source's ledger, without calls. Forkable: "
        f"{', '.join(parameters_class.forkable())}.",
    )
    fork.add_argument("run_dir", metavar="RUN_DIR", help="the run to fork")
    fork.add_argument(
        "--at",
        type=_non_negative_int,
        required=True,
        metavar="N",
        help="the checkpoint to start from: N of RUN_DIR/checkpoints/checkpoint_<N>.pkl "
        "(days or steps completed, as the model counts them; 0: the start)",
    )
    fork.add_argument("--out", required=True, help="the new run directory")
    add_parameter_arguments(
        fork.add_argument_group("changes"),
        parameters_class,
        only=parameters_class.forkable(),
        defaults=False,
    )
    fork.add_argument(
        "--overwrite", action="store_true", help="replace an earlier run in --out"
    )
    _add_progress(fork)
    add_brain_arguments(fork, default=None)
    fork.set_defaults(handler=fork_command, parameters_class=parameters_class)
    return {"run": run, "resume": resume, "fork": fork}


def _run_options_class(parameters_class: type[Parameters]) -> type[Any] | None:
    """The model's run options class, named beside its parameters (``<Model>RunOptions``)."""
    module = sys.modules[parameters_class.__module__]
    name = parameters_class.__name__.removesuffix("Parameters") + "RunOptions"
    return getattr(module, name, None)


def _resume_options(options_class: type[Any]) -> list[str]:
    """The run options a resumed run takes (not what its checkpoint keeps: the interval)."""
    return [name for name in options_class.names() if name not in _KEPT_BY_A_RUN]


_KEPT_BY_A_RUN = frozenset({"checkpoint_every_s", "memory_stream", "stays"})
"""Run options fixed when a run starts (its checkpoints and files follow them)."""


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number, got {text!r}"
        ) from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _add_progress(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-progress", action="store_true", help="hide the progress bar"
    )


def run_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm <model> run``: run into a run directory, print its summary."""
    parameters_class: type[Parameters] = args.parameters_class
    values = parameters_from_arguments(args)
    values["brain"] = args.brain
    parameters = parameters_class.from_values(values)
    result = start_run(
        load_model_class(parameters_class),
        parameters,
        args.out,
        overwrite=args.overwrite,
        brain_options=brain_options(args),
        progress=not args.no_progress,
        **parameters_from_arguments(args, OPTION_PREFIX),
    )
    return print_result(result)


def resume_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm <model> resume``: continue a run, print its summary."""
    parameters_class: type[Parameters] = args.parameters_class
    result = resume_run(
        args.run_dir,
        model=parameters_class.model_name,
        brain_options=brain_options(args),
        progress=not args.no_progress,
        **parameters_from_arguments(args, OPTION_PREFIX),
    )
    return print_result(result)


def fork_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm <model> fork``: fork a run, print the fork's summary."""
    parameters_class: type[Parameters] = args.parameters_class
    changes = parameters_from_arguments(args)
    if args.brain is not None:
        changes["brain"] = args.brain
    result = fork_run(
        args.run_dir,
        args.out,
        at=args.at,
        changes=changes,
        model=parameters_class.model_name,
        overwrite=args.overwrite,
        brain_options=brain_options(args),
        progress=not args.no_progress,
    )
    return print_result(result)


def print_result(result: RunResult) -> int:
    """Print a run's directory, summary, LLM use and outputs; the exit status 0."""
    print(f"run directory: {result.run.path}")
    for line in result.model.summary_lines(result.run):
        print(line)
    if LLM_SUMMARY_TABLE in result.run.table_names():
        summary = result.run.read_table(LLM_SUMMARY_TABLE).set_index("kind")
        for line in llm_summary_lines(summary):
            print(line)
    if result.outputs:
        print("written: " + ", ".join(str(path) for path in result.outputs))
    return 0


# ---------------------------------------------------------------------------- sweep
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
        type=positive_int,
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
            "--num-cpus",
            type=positive_int,
            default=None,
            help="CPUs of a local Ray instance",
        )


def parse_sweep_parameters(
    parameters_class: type[Parameters], items: list[str]
) -> dict[str, Any]:
    """``["days=1,2", "agents=70"]`` -> ``{"days": [1, 2], "n_agents": 70}``, typed and checked.

    Raises:
        ParameterError: For an item without ``=``, an unknown name, a name given twice, or a
            value of the wrong type or out of bounds.
    """
    parameters: dict[str, Any] = {}
    for item in items:
        name, sep, values = item.partition("=")
        if not sep or not name.strip() or not values.strip():
            raise ParameterError(f"--param {item!r}: use NAME=VALUE[,VALUE...]")
        field, parsed = parameters_class.parse_values(name, values)
        if field in parameters:
            raise ParameterError(f"--param {field} is given twice")
        parameters[field] = parsed if len(parsed) > 1 else parsed[0]
    return parameters


def add_sweep_command(
    models: argparse._SubParsersAction, parameters_class: type[Parameters]
) -> argparse.ArgumentParser:
    """Add ``mlm sweep <model>`` for one model.

    Args:
        models: The ``sweep`` group's subparsers.
        parameters_class: The model's declared parameters.

    Returns:
        The parser.
    """
    name = parameters_class.model_name
    sweepable = [
        parameters_class.spec(field).flag or field
        for field in parameters_class.names()
        if field not in ("seed",)
    ]
    parser = models.add_parser(
        parameters_class.command,
        help=f"sweep the {name} model",
        description=f"Run the {name} model for every combination of the --param values and "
        "every seed, one run directory per run under --out; finished runs are skipped, "
        "interrupted ones continue. Every value is checked before any run starts. "
        f"Parameters: {', '.join(sweepable)}.",
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=V1[,V2...]",
        help="a parameter and its values (repeatable), e.g. days=1,2",
    )
    parser.add_argument(
        "--seeds",
        type=positive_int,
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
    _add_progress(parser)
    add_brain_arguments(parser)
    parser.set_defaults(handler=sweep_command, parameters_class=parameters_class)
    return parser


def sweep_command(args: argparse.Namespace) -> int:
    """Handler of ``mlm sweep <model>``: run the sweep, print one line per run.

    Exits 1 when a run failed, with the count and the first error on stderr.
    """
    parameters_class: type[Parameters] = args.parameters_class
    parameters = parse_sweep_parameters(parameters_class, args.param)
    if args.brain != "rules":
        parameters.setdefault("brain", args.brain)
    results = sweep(
        load_model_class(parameters_class),
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
    failed = last[last["error"].notna()]
    if failed.empty:
        last = last.drop(columns=["error"])
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(last.to_string(index=False))
    attrs = results.attrs
    print(
        f"\n{len(last)} runs: {attrs['executed']} executed, {attrs['skipped']} already "
        f"complete, {attrs['failed']} failed; results in {args.out}/{RESULTS_FILE}"
    )
    if failed.empty:
        return 0
    first = results[results["error"].notna()].iloc[0]
    print(
        f"mlm: error: {len(failed)} of {len(last)} runs failed; the first, "
        f"{first['run_dir']}: {first['error']} (traceback in its sweep_error.txt)",
        file=sys.stderr,
    )
    return 1


def add_sweep_commands(
    commands: argparse._SubParsersAction, models: list[type[Parameters]]
) -> None:
    """Add the ``sweep`` group with one command per model.

    Args:
        commands: The ``mlm`` subcommands.
        models: The models' declared parameters.
    """
    group = commands.add_parser(
        "sweep", help="parameter sweeps (grid x seeds) on one machine or a Ray cluster"
    )
    subparsers = group.add_subparsers(
        dest="sweep_model", required=True, metavar="MODEL"
    )
    for parameters_class in models:
        add_sweep_command(subparsers, parameters_class)
