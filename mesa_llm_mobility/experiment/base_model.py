"""The shape every model of the package shares, and the contract of its run lifecycle.

:class:`MobilityModel` is the small base of the urban, evacuation and trajectory models:

* its parameters are one declared object (:attr:`MobilityModel.parameters_class`, a
  :class:`~mesa_llm_mobility.experiment.parameters.Parameters`): the constructor takes it, or
  its fields as keyword arguments, and keeps it as :attr:`MobilityModel.parameters`;
* the brain comes from one setting (the ``brain`` parameter: ``"rules" | "llm:<model>"``, or a
  :class:`~mesa_llm_mobility.cognition.brain.Brain`, plus ``brain_options`` for
  :func:`~mesa_llm_mobility.cognition.make_brain`), built on the model's generator; an LLM brain
  always keeps a ledger;
* the constructor builds the world and never calls the brain: the first decisions happen in the
  first :meth:`~mesa.Model.step`;
* :meth:`decide` hands a step's requests to the brain in one batch, tagged with the model's
  time; :meth:`record_decision` adds one row to the decisions table, whose shared columns are
  :data:`DECISION_COLUMNS` after the model's time columns (:attr:`MobilityModel.time_columns`);
* ``run(...)`` returns the model; :meth:`close` releases the brain (and what a subclass adds);
  ``with Model(...) as model:`` closes it;
* the seed the user passed is kept as :attr:`MobilityModel.seed`.

The **run contract** is what the shared lifecycle
(:mod:`~mesa_llm_mobility.experiment.lifecycle`) asks of a model to run it into a run
directory, resume it and fork it; the lifecycle names no model. A model says when a
checkpoint is due and what its number counts (:meth:`checkpoint_due`,
:meth:`checkpoint_number`, :attr:`checkpoint_unit`), which tables it writes per day and at
the end (:meth:`period_tables`, :meth:`final_tables`), which other outputs (plots, summary)
it writes (:meth:`write_outputs`), how it is built for a run (:meth:`load_inputs`,
:meth:`for_run`) and given its brain and memory back after a checkpoint (:meth:`restore`),
which ledger records come after a checkpoint (:meth:`ledger_after`) and how it takes changed
parameters when forked (:meth:`apply_parameters`). The defaults fit a model that runs once to
its end: one checkpoint at the start and one at the end, no tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Self

import mesa
import numpy as np
import pandas as pd

from mesa_llm_mobility.cognition.brain import Brain, RuleBrain
from mesa_llm_mobility.cognition.kinds import DecisionRequest, DecisionResult
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.settings import BrainOptions, make_brain
from mesa_llm_mobility.experiment.parameters import Parameters, RunOptions

if TYPE_CHECKING:
    from mesa_llm_mobility.experiment.run_directory import RunDirectory
    from mesa_llm_mobility.memory.store import MemoryStore


class Progress(NamedTuple):
    """Where a run stands, for a progress bar: ``done`` of ``total`` ``unit``."""

    done: int
    total: int
    unit: str


DECISION_COLUMNS = ("agent_id", "kind", "outcome", "reason")
"""Columns every decisions table has, after the model's time columns."""


class MobilityModel(mesa.Model):
    """Base of every model: declared parameters, one brain setting, a decisions table, the run.

    Args:
        parameters: The model's declared parameters (default: every default).
        brain_options: Further :func:`~mesa_llm_mobility.cognition.make_brain` arguments
            (``api_base``, ``timeout_s``, ``ledger``, ...); never part of the parameters.
        rng: Seed or generator (Mesa's ``rng``). A seed overrides the ``seed`` parameter; a
            generator leaves ``seed`` None.
        **overrides: Parameter values by name, on top of ``parameters``. ``brain`` may also be
            a :class:`Brain`.

    Attributes:
        parameters: The model's parameters.
        seed: The seed (``None`` when a generator or nothing was passed).
        brain: The brain answering this model's requests.
    """

    parameters_class: ClassVar[type[Parameters]] = Parameters
    """The model's declared parameters."""

    time_columns: ClassVar[tuple[str, ...]] = ()
    """The model's time columns, first in its decisions table (e.g. ``("day", "minute")``)."""

    decision_columns: ClassVar[tuple[str, ...]] = ()
    """The model's own columns, after :data:`DECISION_COLUMNS` in its decisions table."""

    checkpoint_unit: ClassVar[str] = "step"
    """What a checkpoint's number counts, in words (``"day"``, ``"step"``)."""

    keep_checkpoints: ClassVar[int | None] = None
    """How many checkpoints a run keeps (the latest ones); ``None``: all (any can be forked)."""

    run_options_class: ClassVar[type[RunOptions]] = RunOptions
    """How the model's runs may be carried out (declared options that change no result)."""

    memory_store: MemoryStore | None = None
    """The agents' memory store, if the model has one (checkpointed with the model)."""

    def __init__(
        self,
        parameters: Parameters | None = None,
        /,
        *,
        brain_options: BrainOptions | None = None,
        rng: int | np.random.Generator | None = None,
        **overrides: Any,
    ) -> None:
        if parameters is not None and not isinstance(parameters, self.parameters_class):
            raise TypeError(
                f"{type(self).__name__} takes {self.parameters_class.__name__}, "
                f"got {type(parameters).__name__}"
            )
        if isinstance(rng, int | np.integer) and not isinstance(rng, bool):
            overrides["seed"] = int(rng)
        elif rng is not None:
            overrides["seed"] = None
        if parameters is None:
            self.parameters = self.parameters_class.from_values(overrides)
        else:
            self.parameters = parameters.replace(**overrides)
        if rng is None:
            rng = self.parameters.seed
        super().__init__(rng=rng)
        self.seed: int | None = self.parameters.seed
        self.attach_brain(self.parameters.brain, brain_options)
        self._decision_rows: list[tuple[Any, ...]] = []
        """Rows in :meth:`decision_table_columns` order (tuples: a long run has millions)."""

    # ------------------------------------------------------------------ brain
    def attach_brain(
        self, brain: str | Brain | None, brain_options: BrainOptions | None = None
    ) -> None:
        """Build the model's brain on its generator (at creation, or after a checkpoint).

        Args:
            brain: As the class's ``brain``.
            brain_options: As the class's ``brain_options``.
        """
        self.brain_options = BrainOptions(**(brain_options or {}))
        self.brain = make_brain(brain, rng=self.rng, **self.brain_options)

    @property
    def uses_llm(self) -> bool:
        """Whether an LLM (not the rule brain) answers this model's requests."""
        return not isinstance(self.brain, RuleBrain)

    @property
    def ledger(self) -> Ledger | None:
        """The brain's ledger (always there for an LLM brain), or ``None``.

        ``None`` too for a model unpickled from a checkpoint and not given a brain yet.
        """
        return None if self.brain is None else self.brain.ledger

    def decide(
        self, requests: Sequence[DecisionRequest[Any, Any]], **time: Any
    ) -> list[DecisionResult[Any, Any]]:
        """Answer a step's requests in one batch, tagged with the model's time.

        Args:
            requests: Every request of the step (none: no call).
            **time: The model's time columns, recorded with each ledger record.

        Returns:
            One validated result per request, in request order.
        """
        if not requests:
            return []
        return self.brain.decide_all(requests, tags=time)

    # ------------------------------------------------------------------ decisions table
    def record_decision(
        self, result: DecisionResult[Any, Any], time: Mapping[str, Any], **columns: Any
    ) -> None:
        """Add one row to the decisions table.

        Args:
            result: The brain's answer.
            time: Values of :attr:`time_columns`.
            **columns: Values of :attr:`decision_columns` (missing ones are empty).
        """
        row = {name: time[name] for name in self.time_columns}
        row.update(
            agent_id=result.agent_id,
            kind=result.kind,
            outcome=str(result.outcome),
            reason=result.reason,
        )
        row.update(columns)
        # a missing column is NaN, as a table built from the row dicts has it
        self._decision_rows.append(
            tuple(row.get(name, np.nan) for name in self.decision_table_columns())
        )

    @classmethod
    def decision_table_columns(cls) -> list[str]:
        """The decisions table's columns: time columns, shared columns, the model's own."""
        return [*cls.time_columns, *DECISION_COLUMNS, *cls.decision_columns]

    def decisions_frame(self) -> pd.DataFrame:
        """One row per decision, in the order the decisions were applied.

        Columns: the model's time columns, then ``agent_id, kind, outcome, reason``, then the
        model's own columns.

        Returns:
            The table (empty, with its columns, before any decision).
        """
        return pd.DataFrame(self._decision_rows, columns=self.decision_table_columns())

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        """The model without its brain and brain options, for checkpoints.

        The brain holds network clients and the ledger file; its options may hold an API key,
        which is never written anywhere. A model restored from a pickle gets a brain back from
        its subclass (e.g. the urban model's ``attach``).
        """
        state = self.__dict__.copy()
        state["brain"] = None
        state["brain_options"] = {}
        return state

    # ------------------------------------------------------------------ running
    def run(self, *args: Any, **kwargs: Any) -> Self:
        """Step until the model stops (subclasses bound it by their own time unit).

        Returns:
            The model.
        """
        while self.running:
            self.step()
        return self

    # ------------------------------------------------------------------ run contract
    @classmethod
    def load_inputs(cls, parameters: Parameters) -> Any:
        """Read and check the run's input files before anything is written (default: none).

        Raises:
            ValueError, OSError: For a bad input, naming the file.
        """
        return None

    @classmethod
    def prepare(
        cls, parameters: Parameters, brain_options: BrainOptions, where: str
    ) -> tuple[Parameters, BrainOptions]:
        """Settle what a run decides at its start and keeps (default: nothing).

        Called when a run starts (before its config is written) and when it resumes.

        Args:
            parameters: The run's parameters.
            brain_options: The brain options given.
            where: What the parameters came from (for messages).

        Returns:
            The parameters and brain options to run with.
        """
        return parameters, brain_options

    @classmethod
    def for_run(
        cls,
        parameters: Parameters,
        run: RunDirectory,
        inputs: Any,
        brain_options: BrainOptions,
        **options: Any,
    ) -> Self:
        """The model of a new run into ``run`` (default: the constructor with ``options``).

        Args:
            parameters: The run's parameters.
            run: Its run directory (for a persistent memory store).
            inputs: What :meth:`load_inputs` read.
            brain_options: The brain options, the run's ledger included.
            **options: The model's run options (:attr:`run_options_class`), checked.
        """
        return cls(parameters, brain_options=brain_options, **options)

    def progress(self) -> Progress:
        """Where the run stands, for a progress bar (default: steps, no total)."""
        return Progress(self.steps, 0, "step")

    def progress_status(self) -> dict[str, Any]:
        """A few numbers shown beside the progress bar (default: none)."""
        return {}

    def checkpoint_due(self) -> bool:
        """Whether a checkpoint is due after the step just taken (default: at the end)."""
        return not self.running

    def checkpoint_number(self) -> int:
        """The number of a checkpoint taken now (what it counts: :attr:`checkpoint_unit`)."""
        return int(self.steps)

    def checkpoint_state(self) -> dict[str, Any]:
        """What a checkpoint holds (default: the pickled model, without brain and store)."""
        return {"model": self}

    def period_tables(self) -> Mapping[str, pd.DataFrame]:
        """Tables of the day that just ended, each written as that day's part (default: none).

        Called at a checkpoint; only a model whose checkpoints count days writes them.
        """
        return {}

    def final_tables(self) -> Mapping[str, pd.DataFrame]:
        """Whole-run tables written when the run ends (default: none)."""
        return {}

    def write_outputs(self, run: RunDirectory) -> list[Path]:
        """Write the run's other outputs at its end (plots, summary); return the files."""
        return []

    def summary_lines(self, run: RunDirectory) -> list[str]:
        """The run's summary as text lines for the command line (default: none)."""
        return []

    def memory_embedding(self) -> str:
        """The embedding setting the memory store is reopened with after a checkpoint."""
        return "hash"

    def long_run(self) -> AbstractContextManager[Any]:
        """A context held while the run steps (e.g. the collector's freeze; default: none)."""
        return nullcontext()

    @classmethod
    def ledger_after(cls, number: int) -> Callable[[Mapping[str, Any]], bool]:
        """Whether a ledger record comes after checkpoint ``number`` (to be replayed).

        Default: its ``step`` tag is at least ``number`` (a checkpoint after ``n`` steps).
        """
        return lambda record: int((record.get("tags") or {}).get("step", 0)) >= number

    def restore(
        self,
        run: RunDirectory,
        number: int,
        memory_store: MemoryStore | None,
        brain_options: BrainOptions,
        **options: Any,
    ) -> None:
        """Give a model unpickled from checkpoint ``number`` its brain (and store) back.

        Args:
            run: The run directory.
            number: The checkpoint's number.
            memory_store: The memory store as it was at the checkpoint, if the model has one.
            brain_options: The brain options (ledger and replay included).
            **options: The model's run options.
        """
        self.memory_store = memory_store
        self.attach_brain(self.parameters.brain, brain_options)

    def apply_parameters(self, parameters: Parameters) -> None:
        """Take the run's parameters on resuming it (a fork's changed ones included).

        Only :meth:`~mesa_llm_mobility.experiment.parameters.Parameters.forkable` values can
        differ; the default takes them as they are.
        """
        self.parameters = parameters

    @classmethod
    def check_fork(cls, parameters: Parameters, number: int) -> None:
        """Refuse a fork from checkpoint ``number`` with ``parameters`` that cannot hold.

        Raises:
            ValueError: One line saying why (default: never).
        """

    def close(self) -> None:
        """Release the brain (network clients, the ledger file); subclasses add their own."""
        self.brain.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
