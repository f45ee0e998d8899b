"""The ``mlm`` command line: demos now, model runs as the models arrive.

Library code logs; this module is the one place that prints, because printing a summary table is
what a command line is for.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

import pandas as pd

from mesa_llm_mobility import __version__
from mesa_llm_mobility.cognition.arguments import add_brain_arguments, brain_options
from mesa_llm_mobility.cognition.endpoint_health import (
    ENDPOINT_UNAVAILABLE_EXIT_CODE,
    EndpointUnavailableError,
)
from mesa_llm_mobility.cognition.redaction import redact
from mesa_llm_mobility.evacuation.cli import add_evac_commands
from mesa_llm_mobility.evacuation.parameters import EvacuationParameters
from mesa_llm_mobility.experiment.cli import add_sweep_commands
from mesa_llm_mobility.experiment.lifecycle import RunInterrupted
from mesa_llm_mobility.trajectory.cli import add_traj_commands
from mesa_llm_mobility.trajectory.parameters import TrajectoryParameters
from mesa_llm_mobility.urban.cli import add_urban_commands
from mesa_llm_mobility.urban.parameters import UrbanParameters
from mesa_llm_mobility.viz.cli import add_viz_commands

MODELS = (UrbanParameters, EvacuationParameters, TrajectoryParameters)
"""Every model's declared parameters: the ``mlm sweep`` commands, one per model."""


def _demo_cognition(args: argparse.Namespace) -> int:
    from mesa_llm_mobility.cognition.demo import run_cognition_demo  # noqa: PLC0415  (fast --help)

    report = run_cognition_demo(
        args.agents,
        brain=args.brain,
        seed=args.seed,
        serve_fake_llm=args.serve_fake_llm,
        latency_s=args.latency,
        fault_rate=args.fault_rate,
        ledger_path=args.ledger,
        brain_options=brain_options(args),
    )
    print(f"brain: {report.brain}")
    if report.server_requests is not None:
        print(
            f"local LLM server: {report.server_requests} requests, at most {report.server_max_in_flight} in flight"
        )
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print("\nfirst decisions:")
        print(report.decisions().head(args.show).to_string(index=False))
        print("\nledger summary:")
        print(report.summary.to_string())
    if args.ledger:
        print(f"\nledger written to {args.ledger}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``mlm`` argument parser (exposed for documentation and tests)."""
    parser = argparse.ArgumentParser(
        prog="mlm",
        description="mesa-llm-mobility: LLM-driven human-mobility simulation on Mesa.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log at INFO level"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser("demo", help="small self-contained demonstrations")
    demos = demo.add_subparsers(dest="demo", required=True, metavar="DEMO")
    cognition = demos.add_parser(
        "cognition",
        help="N commuters choose a departure time through a brain; prints the ledger summary",
        description=(
            "N commuters choose a departure time in one batch. With the default rule brain it runs "
            "offline; with --serve-fake-llm it starts the project's local OpenAI-compatible server and "
            "decides through the LLM brain (litellm) against it."
        ),
    )
    cognition.add_argument(
        "--agents", type=int, default=20, help="number of commuters (default 20)"
    )
    cognition.add_argument(
        "--seed", type=int, default=0, help="random seed (default 0)"
    )
    cognition.add_argument(
        "--serve-fake-llm",
        action="store_true",
        help="decide through the LLM brain against the local test server",
    )
    cognition.add_argument(
        "--latency",
        type=float,
        default=0.05,
        help="fake server latency in seconds (default 0.05)",
    )
    cognition.add_argument(
        "--fault-rate",
        type=float,
        default=0.0,
        help="share of faulty fake answers, to see repairs (default 0)",
    )
    add_brain_arguments(cognition).add_argument(
        "--ledger", default=None, help="write the ledger to this JSONL file"
    )
    cognition.add_argument(
        "--show", type=int, default=5, help="decisions to print (default 5)"
    )
    cognition.set_defaults(handler=_demo_cognition)
    add_urban_commands(commands)
    add_evac_commands(commands)
    add_traj_commands(commands)
    add_sweep_commands(commands, list(MODELS))
    add_viz_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mlm`` command line behind its error boundary.

    A user error (a bad value, or a file that is missing, a directory, unreadable, not UTF-8
    or malformed: the loaders name the file, and the line and column or field where they know
    them) prints one redacted line ``mlm: error: ...`` and exits with status 2. An LLM
    endpoint that cannot answer (a refused key, an unknown model, no server: see
    :mod:`~mesa_llm_mobility.cognition.endpoint_health`) prints one line saying what failed
    and how to fix it, and exits with status 3 (a run resumes from its checkpoint once fixed).
    Ctrl-C prints one line (for a run: the command that resumes it) and exits with status 130.
    A closed output pipe (``mlm ... | head -1``) ends quietly.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return args.handler(args)
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except RunInterrupted as interrupted:
        print(f"mlm: {interrupted}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("mlm: interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError) as error:
        print(f"mlm: error: {redact(_one_line(error))}", file=sys.stderr)
        return 2
    except EndpointUnavailableError as error:
        print(f"mlm: error: {redact(_one_line(error))}", file=sys.stderr)
        return ENDPOINT_UNAVAILABLE_EXIT_CODE


def _one_line(error: BaseException) -> str:
    """The user-facing line of an error; OS errors get the file they are about."""
    if isinstance(error, OSError) and error.filename is not None:
        return f"{error.filename}: {error.strerror or error}"
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _silence_stdout() -> None:
    # the reader went away: further writes (Python's own flush at exit) must not raise again
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
