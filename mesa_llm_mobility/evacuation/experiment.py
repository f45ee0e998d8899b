"""The paper's experiment: compositions x matched blocks on the shared sweep engine, pooled.

The design (paper Sec. 3.2) is 8 compositions (A-H) x 8 matched blocks of 11 pedestrians, 704
pedestrians. :func:`run_experiment` runs it as one
:func:`~mesa_llm_mobility.experiment.sweeps.sweep` (serial, process or Ray executor, progress
bar, finished runs skipped on resume, failures recorded in the run's folder), then pools the
runs' tables into the analysis frames of :mod:`.analysis` and writes the report
(:mod:`.report`)::

    <out>/
        runs/<block=..._brain=..._composition=..._seed=...>/   one run directory per run
        results.csv               the sweep's table (one row per run and collected step)
        pooled/pedestrians.parquet, decisions.parquet, information.parquet, shouts.parquet,
               mismatch.parquet
        experiment.json           the design, wall and CPU seconds, executed / skipped / failed
        report.md, figures/*.png  (:func:`~mesa_llm_mobility.evacuation.report.write_report`)

Within a replicate every run uses the same seed, so the compositions of a block differ only in
their profiles (common random numbers across the matched pairs). ``seeds=N`` replicates the
whole paired design over N seeds (``seed, seed + 1, ...``); each run's seed is in its folder
name, the sweep table and the pooled frames (``seed`` column), so the report can give
between-seed intervals. ``factors`` adds further model parameters to the grid (for example a
condition the model gains, such as system-provided initial exit information): every value is
crossed with the compositions, blocks and seeds, and its column is kept in the pooled frames.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mesa_llm_mobility.cognition.settings import BrainOptions
from mesa_llm_mobility.evacuation.analysis import run_tables_for_analysis
from mesa_llm_mobility.evacuation.personality import COMPOSITIONS
from mesa_llm_mobility.evacuation.plaza import load_plaza
from mesa_llm_mobility.evacuation.timing import MAX_BLOCK, MIN_BLOCK
from mesa_llm_mobility.experiment.executors import ExecutorName
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.experiment.storage import write_json
from mesa_llm_mobility.experiment.sweeps import is_complete

logger = logging.getLogger(__name__)

RUNS_DIR = "runs"
POOLED_DIR = "pooled"
RESULTS_FILE = "results.csv"
EXPERIMENT_FILE = "experiment.json"
POOLED_TABLES = ("pedestrians", "decisions", "information", "shouts", "mismatch")
RUN_KEYS = ["seed", "composition", "block"]
"""Columns naming a run in the pooled frames without factors (with ``agent_id``: a pedestrian);
:func:`run_keys` adds an experiment's factors."""

_ANALYSED_TABLES = (
    "positions",
    "decisions",
    "events",
    "pedestrians",
    "opening_observations",
    "exit_information",
)


def parse_compositions(text: str) -> list[str]:
    """``"A-H"``, ``"A,C,H"`` or ``"ABD"`` -> the composition letters, in order.

    Raises:
        ValueError: For an unknown composition or an empty list.
    """
    letters: list[str] = []
    for part in text.replace(" ", "").upper().split(","):
        if "-" in part:
            first, _, last = part.partition("-")
            if len(first) != 1 or len(last) != 1 or first > last:
                raise ValueError(f"compositions {text!r}: bad range {part!r}")
            letters += [chr(c) for c in range(ord(first), ord(last) + 1)]
        else:
            letters += list(part)
    unknown = [c for c in letters if c not in COMPOSITIONS]
    if unknown or not letters:
        raise ValueError(
            f"compositions {text!r}: unknown {', '.join(unknown) or '(none given)'}; "
            f"use letters of {''.join(sorted(COMPOSITIONS))}, e.g. A-H or A,D,H"
        )
    return list(dict.fromkeys(letters))


def block_list(blocks: int | Iterable[int]) -> list[int]:
    """``8`` -> blocks 1-8; a list is checked and kept.

    Raises:
        ValueError: For a block outside 1-8 or none.
    """
    values = (
        list(range(MIN_BLOCK, MIN_BLOCK + blocks))
        if isinstance(blocks, int)
        else list(blocks)
    )
    bad = [b for b in values if not MIN_BLOCK <= b <= MAX_BLOCK]
    if bad or not values:
        raise ValueError(
            f"blocks must be {MIN_BLOCK}-{MAX_BLOCK} (at most {MAX_BLOCK}), got {values}"
        )
    return values


def seed_list(seed: int, seeds: int | Sequence[int] | None) -> list[int]:
    """The replicates' seeds: ``[seed]``, ``seed .. seed + seeds - 1``, or the list given.

    Raises:
        ValueError: For fewer than one seed, or repeated seeds.
    """
    if seeds is None:
        return [int(seed)]
    values = (
        list(range(int(seed), int(seed) + seeds))
        if isinstance(seeds, int)
        else [int(s) for s in seeds]
    )
    if not values or len(set(values)) != len(values):
        raise ValueError(f"seeds: need one or more distinct seeds, got {seeds!r}")
    return values


def run_keys(factors: Iterable[str] = ()) -> list[str]:
    """Columns naming a run: the seed, the experiment's factors, composition and block."""
    return ["seed", *factors, "composition", "block"]


@dataclass(frozen=True)
class ExperimentResult:
    """What :func:`run_experiment` returns.

    Attributes:
        out: The experiment folder.
        results: The sweep's table.
        pooled: The pooled analysis frames by name.
        wall_s: Wall seconds of the sweep.
        cpu_s: CPU seconds of the sweep (this process and its finished worker processes).
        report: The report file, or ``None`` when not written.
    """

    out: Path
    results: pd.DataFrame
    pooled: dict[str, pd.DataFrame]
    wall_s: float
    cpu_s: float
    report: Path | None


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def run_experiment(
    out: str | Path,
    *,
    compositions: Sequence[str] | str = "A-H",
    blocks: int | Iterable[int] = 8,
    brain: str = "rules",
    seed: int = 0,
    seeds: int | Sequence[int] | None = None,
    factors: Mapping[str, Sequence[object]] | None = None,
    time_limit_s: float = 240.0,
    plaza: str | None = None,
    executor: ExecutorName = "serial",
    max_workers: int | None = None,
    ray_address: str | None = None,
    brain_options: BrainOptions | None = None,
    progress: bool = True,
    report: bool = True,
) -> ExperimentResult:
    """Run the compositions x blocks design, pool the runs and write the report.

    Args:
        out: The experiment folder (created; an earlier experiment there is resumed).
        compositions: Letters (``"A-H"``, ``"A,D,H"``) or a list of them.
        blocks: Number of blocks (1..n) or the blocks themselves.
        brain: ``"rules"`` or ``"llm:<litellm model>"``.
        seed: The seed of every run (the first seed with ``seeds``).
        seeds: Replicates: a number of seeds (``seed, seed + 1, ...``) or the seeds; the
            paired design runs once per seed.
        factors: Further model parameters to cross with the design (name -> values).
        time_limit_s: Run length limit in seconds.
        plaza: Plaza map file (default: the reference plaza).
        executor: ``"serial"``, ``"process"`` or ``"ray"``.
        max_workers: Worker processes (``"process"``).
        ray_address: Ray cluster address (``"ray"``).
        brain_options: LLM brain options (``max_concurrency`` is the endpoint's budget).
        progress: Show the sweep's progress bar.
        report: Write ``report.md`` and the figures.

    Returns:
        The sweep table, the pooled frames, timings and the report path.
    """
    # imported here: the sweep engine imports every model
    from mesa_llm_mobility.evacuation.model import EvacuationModel  # noqa: PLC0415
    from mesa_llm_mobility.experiment.sweeps import sweep  # noqa: PLC0415

    letters = (
        parse_compositions(compositions)
        if isinstance(compositions, str)
        else parse_compositions(",".join(compositions))
    )
    block_values = block_list(blocks)
    seed_values = seed_list(seed, seeds)
    extra = {str(k): list(v) for k, v in (factors or {}).items()}
    clash = sorted(set(extra) & {"composition", "block", "brain", "seed"})
    if clash or any(not v for v in extra.values()):
        raise ValueError(
            f"factors: {', '.join(clash) or 'a factor without values'} cannot be a factor "
            "(the design's own parameters, or an empty list)"
        )
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    parameters: dict[str, object] = {
        "composition": letters,
        "block": block_values,
        "brain": brain,
        "time_limit_s": float(time_limit_s),
        **extra,  # a factor named time_limit_s or plaza replaces the single value
    }
    if plaza is not None:
        parameters["plaza"] = str(plaza)
    wall0, cpu0 = time.perf_counter(), _cpu_seconds()
    results = sweep(
        EvacuationModel,
        parameters,
        seeds=seed_values,
        out=root / RUNS_DIR,
        executor=executor,
        max_workers=max_workers,
        ray_address=ray_address,
        brain_options=brain_options,
        progress=progress,
    )
    wall_s, cpu_s = time.perf_counter() - wall0, _cpu_seconds() - cpu0
    results.to_csv(root / RESULTS_FILE, index=False)
    pooled = pool_runs(results, factors=list(extra))
    pooled_dir = root / POOLED_DIR
    pooled_dir.mkdir(exist_ok=True)
    for name, frame in pooled.items():
        frame.to_parquet(pooled_dir / f"{name}.parquet", index=False)
    failed = results[results["error"].notna()].drop_duplicates("RunId")
    write_json(
        root / EXPERIMENT_FILE,
        {
            "compositions": letters,
            "blocks": block_values,
            "brain": brain,
            "seed": seed_values[0],
            "seeds": seed_values,
            "factors": extra,
            "time_limit_s": float(time_limit_s),
            "plaza": plaza,
            "executor": executor,
            "runs": int(results["RunId"].nunique()),
            "pedestrians": len(pooled["pedestrians"]),
            "executed": results.attrs.get("executed"),
            "skipped": results.attrs.get("skipped"),
            "failed": results.attrs.get("failed"),
            "failures": {
                str(row.run_dir): str(row.error) for row in failed.itertuples()
            },
            "wall_s": round(wall_s, 2),
            "cpu_s": round(cpu_s, 2),
        },
    )
    report_path = None
    if report:
        from mesa_llm_mobility.evacuation.report import write_report  # noqa: PLC0415

        report_path = write_report(root)
    return ExperimentResult(root, results, pooled, wall_s, cpu_s, report_path)


def pool_runs(
    results: pd.DataFrame, factors: Sequence[str] = ()
) -> dict[str, pd.DataFrame]:
    """The analysis frames of every complete run of a sweep table, with the run's keys.

    Args:
        results: The sweep's table (``run_dir``, ``seed``, ``composition``, ``block``,
            ``error`` and the factors' columns).
        factors: The experiment's factors (kept as columns).

    Returns:
        :data:`POOLED_TABLES` over all complete runs, each with :func:`run_keys`.
    """
    frames: dict[str, list[pd.DataFrame]] = {name: [] for name in POOLED_TABLES}
    runs = results.drop_duplicates("RunId")
    for row in runs.itertuples(index=False):
        if not is_complete(row.run_dir):
            continue
        run = RunDirectory.open(row.run_dir)
        tables = {name: run.read_table(name) for name in _ANALYSED_TABLES}
        plaza = load_plaza(run.config.get("plaza"))
        analysis = run_tables_for_analysis(
            tables, cell_size_m=plaza.cell_size_m, plaza=plaza
        )
        keys = {
            "seed": int(row.seed),
            **{f: getattr(row, f) for f in factors},
            "composition": row.composition,
            "block": int(row.block),
        }
        for name in POOLED_TABLES:
            frames[name].append(getattr(analysis, name).assign(**keys))
    return {
        name: pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
        for name, parts in frames.items()
    }


def read_pooled(out: str | Path) -> dict[str, pd.DataFrame]:
    """The pooled frames an experiment wrote (``<out>/pooled/*.parquet``).

    Raises:
        FileNotFoundError: When ``out`` holds no pooled experiment tables.
    """
    folder = Path(out) / POOLED_DIR
    missing = [n for n in POOLED_TABLES if not (folder / f"{n}.parquet").is_file()]
    if missing:
        raise FileNotFoundError(
            f"{folder}: no pooled table {', '.join(missing)}; run `mlm evac experiment --out "
            f"{out}` (again: finished runs are reused and pooled anew)"
        )
    return {n: pd.read_parquet(folder / f"{n}.parquet") for n in POOLED_TABLES}
