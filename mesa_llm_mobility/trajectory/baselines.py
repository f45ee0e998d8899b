"""The generators of the benchmark, on equal terms: same history, same dates, same schema.

:func:`run_baseline` runs one of :data:`BASELINES` on a history for the given dates and returns
its stay points (:data:`~.staypoints.STAY_COLUMNS`, like :func:`~.model.generate`'s) with what
it cost:

* ``"markov"``: a first-order Markov chain over (activity, POI, time bin) states fitted on each
  individual's history (:class:`~.markov.MarkovChainBaseline`); no workflow, no brain;
* ``"historical"``: the evidence workflow (locations, travel times, rule durations) on a fixed
  historical chain: each day's activities are one of the individual's evidence-day chains,
  drawn at random (the ``HistoricalChain`` kind), with no orchestrator reasoning;
* ``"rules"``: the full workflow with the rule brain (what :func:`~.model.generate` does by
  default: the orchestrator's rule policy is the individual's weekday activity Markov model);
* ``"llm"``: the full workflow with an LLM brain (``brain="llm:<model>"``), every decision
  through the verifier, repaired or falling back to the rule policy;
* ``"no_kinematics"``: the full workflow without its kinematics (``WorkflowSettings(kinematics=
  False)``, the paper's "w/o kin." of Tables VI and VII), with the benchmark's brain;
* ``"tool_calling"``: free-form tool calling (the paper's Table V): an LLM grounds a sampled
  historical chain by calling the location and time tools itself (:mod:`.freeform`); LLM only;
* ``"gru"``, ``"lstm"``, ``"transformer"``, ``"seqgan"``: the paper's neural baselines on 96
  fifteen-minute bins of 0.5 km cells (:mod:`.neural`, the optional ``neural`` extra).

The workflow baselines also keep a verification table: per decision, the rounds that failed at
each stage (``json``, ``schema``, ``domain``, ``transport``), from which the temperature study
counts the verifier's failures (:func:`~.benchmark.verifier_failure_rates`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.settings import BrainOptions, parse_brain_setting
from mesa_llm_mobility.trajectory.evidence import EvidenceBook, build_evidence
from mesa_llm_mobility.trajectory.freeform import FreeformModel
from mesa_llm_mobility.trajectory.historical import (
    HISTORICAL_CHAIN,
    STAGES,
    VERIFICATION_COLUMNS,
    HistoricalChainAgent,
    HistoricalChainContext,
    HistoricalChainModel,
    VerifiedTrajectoryModel,
    historical_chain_policy,
)
from mesa_llm_mobility.trajectory.markov import MarkovChainBaseline
from mesa_llm_mobility.trajectory.neural_names import NEURAL_BASELINES
from mesa_llm_mobility.trajectory.run_files import settings_parameters
from mesa_llm_mobility.trajectory.workflow import WorkflowSettings

LLM_BASELINES = ("llm", "tool_calling")
"""The baselines that need an LLM brain."""

BASELINES = (
    *NEURAL_BASELINES,
    "markov",
    "historical",
    "rules",
    "no_kinematics",
    "llm",
    "tool_calling",
)
"""The benchmark's generators, in the order of its tables."""

BASELINE_LABELS = {
    "gru": "GRU (fixed-interval, ours on CPU)",
    "lstm": "LSTM (fixed-interval, ours on CPU)",
    "transformer": "Transformer (fixed-interval, ours on CPU)",
    "seqgan": "SeqGAN (fixed-interval, ours on CPU)",
    "markov": "Markov chain (activity, POI, hour)",
    "historical": "workflow, sampled historical chain",
    "rules": "full workflow, rule brain",
    "no_kinematics": "workflow without kinematics",
    "llm": "full workflow, LLM brain",
    "tool_calling": "free-form tool calling, LLM brain",
}
"""A readable name of each baseline, for tables and figures."""


class NeuralUnavailableError(ValueError):
    """A neural baseline was asked for without JAX, Flax and Optax installed."""


# ---------------------------------------------------------------------------- running
@dataclass(frozen=True)
class BaselineRun:
    """One baseline's output and cost.

    Attributes:
        name: The baseline (one of :data:`BASELINES`).
        brain: Who decided (``"none"`` for the Markov chain).
        stays: The generated stay points.
        wall_s: Wall time, fitting (evidence or chains) included.
        cpu_s: CPU time of this process (user + system) over the same span.
        decisions: The model's decisions table (empty for the Markov chain).
        workflow: The model's workflow table (empty for the Markov chain).
        verification: Failed rounds per decision and stage (empty for the Markov chain).
        ledger_summary: The LLM ledger's summary per kind (``None`` without an LLM).
        workflow_success_rate: Share of kept visits grounded (``None`` for the Markov chain).
        train_s: Training wall seconds (neural baselines; ``None`` otherwise).
        generate_s: Generation wall seconds (neural baselines).
        parameters: Trained scalars (neural baselines).
        tool_use: Per trajectory, the free-form tool calls' success (``tool_calling`` only;
            see :func:`~.freeform.tool_success`).
    """

    name: str
    brain: str
    stays: pd.DataFrame
    wall_s: float
    cpu_s: float
    decisions: pd.DataFrame
    workflow: pd.DataFrame
    verification: pd.DataFrame
    ledger_summary: pd.DataFrame | None
    workflow_success_rate: float | None
    train_s: float | None = None
    generate_s: float | None = None
    parameters: int | None = None
    tool_use: pd.DataFrame | None = None


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def run_baseline(
    name: str,
    history: pd.DataFrame,
    dates: Sequence[str | pd.Timestamp],
    *,
    seed: int = 0,
    brain: str = "rules",
    brain_options: BrainOptions | None = None,
    settings: WorkflowSettings | None = None,
    evidence: EvidenceBook | None = None,
    bin_minutes: int = 60,
    cell_km: float = 0.5,
    neural_epochs: int | None = None,
    progress: bool = False,
) -> BaselineRun:
    """Generate the given dates with one baseline.

    Args:
        name: One of :data:`BASELINES`.
        history: The evidence: a valid stay-point table.
        dates: The dates to generate (e.g. the held-out dates).
        seed: Random seed (the same for every baseline).
        brain: The LLM setting ``"llm:<model>"`` of the ``"llm"`` baseline (others ignore it).
        brain_options: Options of the LLM brain (``api_base``, ``temperature``, ``ledger``, ...).
        settings: Workflow parameters (workflow baselines).
        evidence: A prebuilt evidence book of ``history`` (built, and timed, when ``None``).
        bin_minutes: Start-bin width of the Markov chain.
        cell_km: Grid cell of the neural baselines' sequences.
        neural_epochs: Override the neural baselines' maximum-likelihood epochs.
        progress: Show the model's progress bar.

    Returns:
        The run.

    Raises:
        ValueError: For an unknown baseline, or ``"llm"`` / ``"tool_calling"`` without an LLM
            setting.
        NeuralUnavailableError: For a neural baseline without the ``neural`` extra.
    """
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r} (use {', '.join(BASELINES)})")
    uses_llm = parse_brain_setting(brain)[0] == "llm"
    if name in LLM_BASELINES and not uses_llm:
        raise ValueError(
            f"the {name} baseline needs an LLM brain ('llm:<model>'), got {brain!r}"
        )
    began, cpu = time.perf_counter(), _cpu_seconds()
    if name in NEURAL_BASELINES:
        return _run_neural(
            name, history, dates, seed, cell_km, neural_epochs, began, cpu
        )
    if name == "markov":
        chains = MarkovChainBaseline.fit(
            history,
            bin_minutes=bin_minutes,
            max_length=(settings or WorkflowSettings()).max_chain_length,
        )
        return _brainless_run(name, chains.generate(dates, seed), began, cpu)
    settings = settings or WorkflowSettings()
    if name == "no_kinematics":
        settings = dataclasses.replace(settings, kinematics=False)
    book = evidence or build_evidence(
        history,
        peers=settings.peers,
        min_history_days=settings.min_history_days,
        colocation_weight=settings.colocation_weight,
    )
    model_class: type[VerifiedTrajectoryModel] = {
        "historical": HistoricalChainModel,
        "tool_calling": FreeformModel,
    }.get(name, VerifiedTrajectoryModel)
    asks_llm = name in LLM_BASELINES or (name == "no_kinematics" and uses_llm)
    options = dict(brain_options or {}) if asks_llm else {}
    if name == "tool_calling":
        options.setdefault("tool_calling", "native")
    with model_class(
        history,
        dates=dates,
        settings=settings,
        **settings_parameters(settings),
        evidence=book,
        brain=brain if asks_llm else "rules",
        brain_options=options,
        rng=seed,
    ) as model:
        model.run(progress=progress)
        ledger = model.ledger if model.uses_llm else None
        summary = ledger.summary() if isinstance(ledger, Ledger) else None
        return BaselineRun(
            name,
            model.brain.name,
            model.trajectories_frame(),
            time.perf_counter() - began,
            _cpu_seconds() - cpu,
            model.decisions_frame(),
            model.workflow_frame(),
            model.verification_frame(),
            summary,
            model.workflow_success_rate(),
            tool_use=model.tool_use_frame(),
        )


def _run_neural(
    name: str,
    history: pd.DataFrame,
    dates: Sequence[str | pd.Timestamp],
    seed: int,
    cell_km: float,
    epochs: int | None,
    began: float,
    cpu: float,
) -> BaselineRun:
    """Train one neural baseline on the history and generate the dates."""
    try:
        from mesa_llm_mobility.trajectory.neural import (  # noqa: PLC0415  (optional extra)
            NeuralBaseline,
        )
    except ImportError as error:
        raise NeuralUnavailableError(
            f"the {name} baseline needs JAX, Flax and Optax: pip install "
            f"'mesa-llm-mobility[neural]' ({error})"
        ) from None
    fitted = NeuralBaseline.fit(
        history, name, seed=seed, cell_km=cell_km, epochs=epochs
    )
    stays = fitted.generate(dates, seed)
    return _brainless_run(
        name,
        stays,
        began,
        cpu,
        train_s=fitted.train_s,
        generate_s=fitted.generate_s,
        parameters=fitted.parameters,
    )


def _brainless_run(
    name: str, stays: pd.DataFrame, began: float, cpu: float, **cost: Any
) -> BaselineRun:
    """The run of a generator without a brain, decisions or workflow (timed from ``began``)."""
    empty = pd.DataFrame()
    return BaselineRun(
        name,
        "none",
        stays,
        time.perf_counter() - began,
        _cpu_seconds() - cpu,
        empty,
        empty,
        pd.DataFrame(columns=list(VERIFICATION_COLUMNS)),
        None,
        None,
        **cost,
    )


def neural_available() -> bool:
    """Whether JAX, Flax and Optax are installed (the ``neural`` extra)."""
    return all(
        importlib.util.find_spec(package) is not None
        for package in ("jax", "flax", "optax")
    )


def with_temperature(options: BrainOptions | None, temperature: float) -> BrainOptions:
    """Brain options with the sampling temperature replaced (the temperature study)."""
    return BrainOptions(**{**dict(options or {}), "temperature": float(temperature)})


__all__ = [
    "BASELINES",
    "BASELINE_LABELS",
    "HISTORICAL_CHAIN",
    "LLM_BASELINES",
    "NEURAL_BASELINES",
    "STAGES",
    "VERIFICATION_COLUMNS",
    "BaselineRun",
    "HistoricalChainAgent",
    "HistoricalChainContext",
    "HistoricalChainModel",
    "NeuralUnavailableError",
    "VerifiedTrajectoryModel",
    "historical_chain_policy",
    "neural_available",
    "run_baseline",
    "with_temperature",
]
