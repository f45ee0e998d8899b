"""The shape every model of the package shares (like scikit-learn's estimators).

:class:`MobilityModel` is the small base of the urban, evacuation and trajectory models:

* the brain comes from one setting (``brain="rules" | "llm:<model>" | Brain`` plus
  ``brain_options`` for :func:`~mesa_llm_mobility.cognition.make_brain`), built on the model's
  generator; an LLM brain always keeps a ledger;
* the constructor builds the world and never calls the brain: the first decisions happen in the
  first :meth:`~mesa.Model.step`;
* :meth:`decide` hands a step's requests to the brain in one batch, tagged with the model's
  time; :meth:`record_decision` adds one row to the decisions table, whose shared columns are
  :data:`DECISION_COLUMNS` after the model's time columns (:attr:`MobilityModel.time_columns`);
* ``run(...)`` returns the model; :meth:`close` releases the brain (and what a subclass adds);
  ``with Model(...) as model:`` closes it;
* the seed the user passed is kept as :attr:`MobilityModel.seed`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Self

import mesa
import numpy as np
import pandas as pd

from mesa_llm_mobility.cognition.brain import Brain, RuleBrain
from mesa_llm_mobility.cognition.kinds import DecisionRequest, DecisionResult
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.settings import BrainOptions, make_brain

DECISION_COLUMNS = ("agent_id", "kind", "outcome", "reason")
"""Columns every decisions table has, after the model's time columns."""


class MobilityModel(mesa.Model):
    """Base of every model: one brain setting, a decisions table, and the run contract.

    Args:
        brain: ``"rules"``, ``"llm:<litellm model>"``, a :class:`Brain`, or ``None`` for
            ``$MLM_BRAIN``.
        brain_options: Further :func:`~mesa_llm_mobility.cognition.make_brain` arguments
            (``api_base``, ``timeout_s``, ``ledger``, ...).
        rng: Seed or generator (Mesa's ``rng``).

    Attributes:
        seed: The seed passed as ``rng`` (``None`` when a generator or nothing was passed).
        brain: The brain answering this model's requests.
    """

    time_columns: ClassVar[tuple[str, ...]] = ()
    """The model's time columns, first in its decisions table (e.g. ``("day", "minute")``)."""

    decision_columns: ClassVar[tuple[str, ...]] = ()
    """The model's own columns, after :data:`DECISION_COLUMNS` in its decisions table."""

    def __init__(
        self,
        *,
        brain: str | Brain | None = "rules",
        brain_options: BrainOptions | None = None,
        rng: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(rng=rng)
        self.seed: int | None = (
            int(rng)
            if isinstance(rng, int | np.integer) and not isinstance(rng, bool)
            else None
        )
        self.attach_brain(brain, brain_options)
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

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled model (decision rows of older checkpoints were dicts)."""
        columns = self.decision_table_columns()
        state["_decision_rows"] = [
            tuple(row.get(name, np.nan) for name in columns)
            if isinstance(row, dict)
            else row
            for row in state.get("_decision_rows", [])
        ]
        self.__dict__.update(state)

    # ------------------------------------------------------------------ run contract
    def run(self, *args: Any, **kwargs: Any) -> Self:
        """Step until the model stops (subclasses bound it by their own time unit).

        Returns:
            The model.
        """
        while self.running:
            self.step()
        return self

    def close(self) -> None:
        """Release the brain (network clients, the ledger file); subclasses add their own."""
        self.brain.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
