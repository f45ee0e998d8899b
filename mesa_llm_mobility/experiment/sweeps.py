"""Parameter sweeps over any model: a grid of parameters x seeds, one run directory per run.

:func:`sweep` is the package's :func:`mesa.batch_run`: it runs every combination of the
parameter values (their Cartesian product, as ``batch_run`` builds it) for every seed and
returns the same tidy table, one row per run and collected step, with the columns ``RunId``,
``iteration`` (the seed's index), ``Step``, the parameters, ``seed``, the model reporters of the
model's :class:`~mesa.DataCollector`, then ``run_dir`` and ``error``.

A model of this package (a :class:`~mesa_llm_mobility.experiment.base_model.MobilityModel`) is
swept through the one run lifecycle (:mod:`~mesa_llm_mobility.experiment.lifecycle`): the grid's
keys are its declared parameters, every combination is checked against their types and bounds
before any run starts, and each run writes a run directory under ``out`` named after its
parameters and seed. Any other Mesa model with a ``datacollector`` is run by its constructor's
keyword arguments. Besides what the run writes, a finished run holds
``tables/sweep_reporters.parquet`` (its reporter rows) and then ``sweep.json`` (written last:
the run is complete). A failed run holds ``sweep_error.txt`` (the traceback) and its rows carry
the error; it does not stop the sweep.

Sweeps resume: a run whose directory is complete is not run again; its rows are read back. An
interrupted run of the same parameters continues from its latest checkpoint past the start
(:func:`~mesa_llm_mobility.experiment.lifecycle.resume_run`, an LLM ledger replaying what was
under way); any other failed or interrupted run is run again from the start.

Runs execute on an :mod:`~mesa_llm_mobility.experiment.executors` executor (``"serial"``,
``"process"``, ``"ray"``). Every run is seeded by its own seed alone, so the table is the same
whichever executor ran it.

LLM runs of one sweep share their endpoint: ``brain_options["max_concurrency"]`` is the
endpoint's budget (requests in flight at once), and each run gets
``max(1, budget // concurrent_runs)`` of it (:func:`share_endpoint_budget`), where
``concurrent_runs`` counts the runs that use the same endpoint (:func:`endpoint_of`: the
``api_base``, else the provider of the ``brain`` parameter) and can run at once; rule-brain runs
of the same sweep take none of it.
"""

from __future__ import annotations

import inspect
import itertools
import json
import logging
import re
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import mesa
import pandas as pd
from tqdm.auto import tqdm

from mesa_llm_mobility.cognition.settings import BrainOptions
from mesa_llm_mobility.experiment.base_model import MobilityModel
from mesa_llm_mobility.experiment.executors import (
    Executor,
    ExecutorName,
    make_executor,
)
from mesa_llm_mobility.experiment.lifecycle import resume_run, start_run
from mesa_llm_mobility.experiment.parameters import ParameterError
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.experiment.storage import write_json

logger = logging.getLogger(__name__)

DONE_FILE = "sweep.json"
"""Written last into a finished run's directory: the run is complete."""

ERROR_FILE = "sweep_error.txt"
"""The traceback of a failed run."""

REPORTERS_TABLE = "sweep_reporters"
"""A finished run's reporter rows (``tables/sweep_reporters.parquet``)."""

_SLUG = re.compile(r"[^A-Za-z0-9.+-]+")


@dataclass(frozen=True)
class RunTask:
    """One run of a sweep: plain, picklable data for an executor.

    Attributes:
        run_id: The run's ``RunId`` (its place in the sweep).
        iteration: The index of its seed.
        seed: Its seed.
        parameters: Its parameter values.
        run_dir: Its run directory.
        model_cls: The model class (pickled by reference).
        max_steps: Step limit of a generic run.
        brain_options: Brain options (the run's share of the endpoint budget included).
    """

    run_id: int
    iteration: int
    seed: int
    parameters: dict[str, Any]
    run_dir: str
    model_cls: type[mesa.Model]
    max_steps: int | None = None
    brain_options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunOutcome:
    """What one run returned.

    Attributes:
        run_id: The run's ``RunId``.
        rows: Its reporter rows (``Step`` and the model reporters); none after an error.
        error: ``"<Type>: <message>"`` of a failed run, else ``None``.
        executed: False when the run was complete already and only read back.
    """

    run_id: int
    rows: list[dict[str, Any]]
    error: str | None = None
    executed: bool = True


# ---------------------------------------------------------------------------- the grid
def parameter_grid(parameters: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every combination of the parameter values, as :func:`mesa.batch_run` builds them.

    A string, a mapping or another non-iterable is one value; a list, tuple, range or set is a
    list of values.

    Args:
        parameters: Name -> value or values.

    Returns:
        One dict per combination, the last parameter varying fastest.

    Raises:
        ValueError: If a parameter has an empty list of values.
    """
    choices: list[list[tuple[str, Any]]] = []
    for name, values in parameters.items():
        if isinstance(values, list | tuple | range | set | frozenset):
            if len(values) == 0:
                raise ValueError(f"parameter {name!r} has an empty list of values")
            choices.append([(name, value) for value in values])
        else:
            choices.append([(name, values)])
    return [dict(combination) for combination in itertools.product(*choices)]


def run_name(parameters: Mapping[str, Any], seed: int) -> str:
    """The folder name of a run: ``<name>=<value>_..._seed=<seed>`` (filesystem-safe)."""
    parts = [f"{name}={_slug(value)}" for name, value in sorted(parameters.items())] + [
        f"seed={seed}"
    ]
    return "_".join(parts)


def _slug(value: Any) -> str:
    text = (
        json.dumps(value, sort_keys=True) if isinstance(value, Mapping) else str(value)
    )
    return _SLUG.sub("-", text) or "-"


def share_endpoint_budget(
    brain_options: Mapping[str, Any] | None, concurrent_runs: int
) -> BrainOptions:
    """Each run's share of an LLM endpoint's concurrency budget.

    The runs of one sweep use one endpoint (``api_base``). ``max_concurrency`` in the sweep's
    brain options is the endpoint's budget, the requests it should have in flight at once; with
    ``concurrent_runs`` runs at the same time, each run gets::

        per_run = max(1, budget // concurrent_runs)

    so the endpoint sees at most ``budget`` requests (or ``concurrent_runs`` when the budget is
    smaller than that).

    Args:
        brain_options: The sweep's brain options (``None``: none).
        concurrent_runs: Runs executing at the same time.

    Returns:
        The options of one run (a copy; without ``max_concurrency``, unchanged).
    """
    options = dict(brain_options or {})
    budget = options.get("max_concurrency")
    if budget is None:
        return BrainOptions(**options)
    concurrent_runs = max(1, int(concurrent_runs))
    if budget < concurrent_runs:
        logger.warning(
            "endpoint budget max_concurrency=%d is below the %d concurrent runs; "
            "each run gets 1",
            budget,
            concurrent_runs,
        )
    options["max_concurrency"] = max(1, int(budget) // concurrent_runs)
    return BrainOptions(**options)


def endpoint_of(
    parameters: Mapping[str, Any], brain_options: Mapping[str, Any] | None
) -> str | None:
    """The LLM endpoint a run's requests go to, or None for a run with no LLM brain.

    The endpoint is ``brain_options["api_base"]`` when set, else the provider of the run's
    ``brain`` parameter (``"llm:openai/gpt-4o-mini"``: ``"openai"``). A run whose ``brain``
    is not an LLM (``"rules"``) uses none; a run without a ``brain`` parameter is counted as
    using the sweep's endpoint.
    """
    options = brain_options or {}
    brain = parameters.get("brain")
    if brain is not None and not str(brain).startswith("llm:"):
        return None
    if options.get("api_base"):
        return str(options["api_base"])
    if brain is None:
        return "default"
    return str(brain).removeprefix("llm:").split("/", 1)[0]


def _share_budgets(
    tasks: Sequence[RunTask], brain_options: BrainOptions | None, workers: int
) -> list[RunTask]:
    """Give every task its share of its endpoint's budget (one budget per endpoint)."""
    per_endpoint: dict[str | None, int] = {}
    for task in tasks:
        endpoint = endpoint_of(task.parameters, brain_options)
        per_endpoint[endpoint] = per_endpoint.get(endpoint, 0) + 1
    shares = {
        endpoint: dict(
            share_endpoint_budget(brain_options, min(workers, count))
            if endpoint is not None
            else dict(brain_options or {})
        )
        for endpoint, count in per_endpoint.items()
    }
    return [
        replace(task, brain_options=shares[endpoint_of(task.parameters, brain_options)])
        for task in tasks
    ]


# ---------------------------------------------------------------------------- one run
def check_parameters(
    model_cls: type, parameters: Mapping[str, Any], max_steps: int | None
) -> None:
    """Refuse, before any run, a parameter the model does not have.

    A model of this package checks names, types and bounds of every combination
    (:meth:`~mesa_llm_mobility.experiment.parameters.Parameters.from_values`); another Mesa
    model its constructor's keyword arguments.

    Raises:
        ParameterError: One line naming the parameter and the problem.
    """
    if issubclass(model_cls, MobilityModel):
        if max_steps is not None:
            raise ParameterError(
                f"max_steps applies to other Mesa models; {model_cls.__name__} runs to its "
                "own end (set its parameters)"
            )
        for combination in parameter_grid(parameters):
            model_cls.parameters_class.from_values(combination)
        return
    signature = inspect.signature(model_cls)
    takes_any = any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()
    )
    known = [n for n in signature.parameters if n != "rng"]
    unknown = [name for name in parameters if name not in known and not takes_any]
    if unknown:
        raise ParameterError(
            f"{model_cls.__name__} has no parameter {', '.join(map(repr, unknown))}; "
            f"sweepable: {', '.join(known)} (the seed comes from seeds=)"
        )


def is_complete(run_dir: str | Path) -> bool:
    """Whether a sweep run's directory is complete (its ``sweep.json`` is written)."""
    return (Path(run_dir) / DONE_FILE).is_file()


def read_run(task: RunTask) -> RunOutcome:
    """The rows of a complete run, read back from its directory."""
    rows = RunDirectory.open(task.run_dir).read_table(REPORTERS_TABLE)
    return RunOutcome(task.run_id, rows.to_dict("records"), executed=False)


def execute_run(task: RunTask) -> RunOutcome:
    """Run one task into its run directory (an executor's function; module-level).

    Any exception of the run is caught: its traceback goes to ``sweep_error.txt`` in the run
    directory and its one-line form into the outcome.

    Args:
        task: The run.

    Returns:
        Its reporter rows, or its error.
    """
    path = Path(task.run_dir)
    if is_complete(path):
        return read_run(task)
    (path / ERROR_FILE).unlink(missing_ok=True)
    try:
        reporters = _run(task)
        run = RunDirectory(path)
        run.write_table(REPORTERS_TABLE, reporters)
        write_json(
            path / DONE_FILE,
            {"run_id": task.run_id, "seed": task.seed, "rows": len(reporters)},
        )
        rows = run.read_table(REPORTERS_TABLE).to_dict("records")
    except Exception as error:
        path.mkdir(parents=True, exist_ok=True)
        (path / ERROR_FILE).write_text(traceback.format_exc(), encoding="utf-8")
        text = str(error).strip().splitlines()
        message = f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")
        logger.warning("run %s failed: %s", path, message)
        return RunOutcome(task.run_id, [], error=message)
    return RunOutcome(task.run_id, rows)


def lost_run(task: RunTask, message: str) -> RunOutcome:
    """The outcome of a run whose worker died under it: recorded as failed, like an error."""
    path = Path(task.run_dir)
    path.mkdir(parents=True, exist_ok=True)
    (path / ERROR_FILE).write_text(message + "\n", encoding="utf-8")
    return RunOutcome(task.run_id, [], error=f"WorkerLostError: {message}")


def _run(task: RunTask) -> pd.DataFrame:
    """Run the task; return its reporter frame (``Step`` + model reporters)."""
    path = Path(task.run_dir)
    # an earlier attempt that failed or stopped is replaced (never a folder of something else)
    overwrite = (path / "config.json").is_file()
    cls = task.model_cls
    if not issubclass(cls, MobilityModel):
        return _run_generic(task, overwrite=overwrite)
    parameters = cls.parameters_class.from_values(
        {**task.parameters, "seed": task.seed}
    )
    options = BrainOptions(**task.brain_options)
    if _resumable(path, parameters.to_config()):
        logger.info("run %s: resuming from its latest checkpoint", path)
        result = resume_run(path, brain_options=options, progress=False)
    else:
        result = start_run(
            cls,
            parameters,
            path,
            overwrite=overwrite,
            progress=False,
            brain_options=options,
        )
    return reporter_frame(result.model)


def _resumable(path: Path, config: Mapping[str, Any]) -> bool:
    """Whether ``path`` holds an interrupted run of this very config, past its start.

    Such a run continues from its latest checkpoint instead of starting again; a folder of
    another config, of another format, or with no checkpoint after the start starts from the
    beginning.
    """
    if not (path / "config.json").is_file():
        return False
    try:
        run = RunDirectory.open(path)
        same = run.config == json.loads(json.dumps(dict(config)))
        numbers = run.checkpoint_numbers() if same else []
    except (OSError, ValueError) as error:
        logger.info("run %s: not resumable (%s); starting again", path, error)
        return False
    return max(numbers, default=0) >= 1


def _run_generic(task: RunTask, *, overwrite: bool) -> pd.DataFrame:
    """Another Mesa model with a DataCollector: construct, step to its end or max_steps."""
    cls = task.model_cls
    RunDirectory.create(
        task.run_dir,
        {**task.parameters, "seed": task.seed, "max_steps": task.max_steps},
        model=cls.__name__,
        model_class=f"{cls.__module__}.{cls.__qualname__}",
        overwrite=overwrite,
    )
    model = cls(**task.parameters, rng=task.seed)
    try:
        limit = 1000 if task.max_steps is None else task.max_steps
        while model.running and model.steps < limit:
            model.step()
        return reporter_frame(model)
    finally:
        close = getattr(model, "close", None)
        if callable(close):
            close()


def reporter_frame(model: mesa.Model) -> pd.DataFrame:
    """A model's collected model reporters, one row per collection, with its ``Step``.

    ``Step`` is the model time of each collection (the DataCollector's own record of it), as
    :func:`mesa.batch_run` reports it.

    Args:
        model: A model with a ``datacollector``.

    Returns:
        ``Step`` and one column per model reporter.

    Raises:
        ValueError: If the model has no DataCollector.
    """
    collector = getattr(model, "datacollector", None)
    if collector is None:
        raise ValueError(f"{type(model).__name__} has no datacollector to sweep over")
    frame = collector.get_model_vars_dataframe().reset_index(drop=True)
    steps = list(getattr(collector, "_collection_steps", range(len(frame))))
    frame.insert(0, "Step", steps[: len(frame)])
    return frame


# ---------------------------------------------------------------------------- the sweep
def sweep(
    model_cls: type[mesa.Model],
    parameters: Mapping[str, Any],
    seeds: int | Iterable[int] = 1,
    *,
    out: str | Path,
    max_steps: int | None = None,
    executor: ExecutorName | Executor = "serial",
    max_workers: int | None = None,
    ray_address: str | None = None,
    num_cpus: int | None = None,
    num_cpus_per_run: float = 1,
    brain_options: BrainOptions | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Run a model over a parameter grid and seeds; return one tidy table.

    Example::

        from mesa_llm_mobility.experiment import sweep
        from mesa_llm_mobility.urban import UrbanMobilityModel

        results = sweep(
            UrbanMobilityModel,
            {"days": 1, "n_agents": [70, 140], "events": [True, False]},
            seeds=3,
            executor="process",
            out="runs/sweep",
        )

    Args:
        model_cls: The model class: one of this package's (its declared parameters are the
            grid's keys) or any Mesa model with a DataCollector (its constructor's keyword
            arguments).
        parameters: Name -> value or list of values (the grid is their product).
        seeds: A number of seeds (``0..n-1``) or the seeds themselves.
        out: The sweep's folder; one run directory per run inside it.
        max_steps: Step limit of another Mesa model (default 1000, as in ``batch_run``).
        executor: ``"serial"``, ``"process"``, ``"ray"`` or an
            :class:`~mesa_llm_mobility.experiment.executors.Executor`.
        max_workers: Worker processes (``"process"``).
        ray_address: Ray cluster address (``"auto"``, ``"ray://head:10001"``); ``None``
            starts a local Ray instance (``"ray"``).
        num_cpus: CPUs of a local Ray instance.
        num_cpus_per_run: CPUs each Ray task reserves.
        brain_options: LLM brain options for every run; ``max_concurrency`` is the
            endpoint's budget, shared by the concurrent runs (:func:`share_endpoint_budget`).
        progress: Show a progress bar (runs).

    Returns:
        One row per run and collected step (one row with ``error`` set for a failed run),
        ordered by ``RunId`` and ``Step``. ``attrs`` holds ``executed``, ``skipped`` (complete
        already) and ``failed`` run counts.

    Raises:
        ParameterError: For an unknown parameter, a value of the wrong type or out of bounds
            (before any run starts).
        ValueError: For an empty list of values, no seeds, or an unknown executor.
    """
    parameters = dict(parameters)
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    if not seed_list:
        raise ValueError("a sweep needs at least one seed")
    check_parameters(model_cls, parameters, max_steps)
    grid = parameter_grid(parameters)
    root = Path(out)
    names: set[str] = set()
    tasks: list[RunTask] = []
    for iteration, seed in enumerate(seed_list):
        for combination in grid:
            name = run_name(combination, seed)
            if name in names:
                raise ValueError(
                    f"two runs of the sweep would share the folder {name!r}; "
                    "give distinct parameter values and seeds"
                )
            names.add(name)
            tasks.append(
                RunTask(
                    run_id=len(tasks),
                    iteration=iteration,
                    seed=int(seed),
                    parameters=combination,
                    run_dir=str(root / name),
                    model_cls=model_cls,
                    max_steps=max_steps,
                )
            )
    root.mkdir(parents=True, exist_ok=True)
    outcomes: dict[int, RunOutcome] = {}
    pending = []
    for task in tasks:
        if is_complete(task.run_dir):
            outcomes[task.run_id] = read_run(task)
        else:
            pending.append(task)
    with (
        tqdm(
            total=len(tasks),
            initial=len(outcomes),
            unit="run",
            desc="sweep",
            disable=not progress,
        ) as bar,
        make_executor(
            executor,
            max_workers=max_workers,
            address=ray_address,
            num_cpus=num_cpus,
            num_cpus_per_run=num_cpus_per_run,
        ) as pool,
    ):
        if pending:
            pending = _share_budgets(pending, brain_options, pool.workers)
            for outcome in pool.imap_unordered(execute_run, pending, on_lost=lost_run):
                outcomes[outcome.run_id] = outcome
                bar.update(1)
                if outcome.error:
                    bar.set_postfix(
                        failed=sum(bool(o.error) for o in outcomes.values())
                    )
    frame = _frame(tasks, outcomes)
    frame.attrs.update(
        executed=sum(o.executed for o in outcomes.values()),
        skipped=sum(not o.executed for o in outcomes.values()),
        failed=sum(bool(o.error) for o in outcomes.values()),
    )
    return frame


def _frame(
    tasks: Sequence[RunTask], outcomes: Mapping[int, RunOutcome]
) -> pd.DataFrame:
    """The batch_run-shaped table of the outcomes, in RunId and Step order."""
    rows: list[dict[str, Any]] = []
    for task in tasks:
        outcome = outcomes[task.run_id]
        head = {"RunId": task.run_id, "iteration": task.iteration}
        tail = {"run_dir": task.run_dir, "error": outcome.error}
        if outcome.error is not None:
            rows.append(
                {**head, "Step": None, **task.parameters, "seed": task.seed, **tail}
            )
            continue
        for row in outcome.rows:
            reporters = {k: v for k, v in row.items() if k != "Step"}
            rows.append(
                {
                    **head,
                    "Step": row["Step"],
                    **task.parameters,
                    "seed": task.seed,
                    **reporters,
                    **tail,
                }
            )
    return pd.DataFrame(rows)
