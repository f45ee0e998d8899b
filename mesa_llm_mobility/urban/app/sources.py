"""Where the app's panels get their data: a live model or a minute of a saved run.

Both sources answer the same questions (the town view, a traveller's report, the decisions, the
link table), so one set of panels serves the live app and the replay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from mesa_llm_mobility.cognition import RuleBrain
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.urban.app.inspector import (
    TravellerReport,
    report_of_model,
    report_of_run,
)
from mesa_llm_mobility.urban.app.saved_run import SavedRun
from mesa_llm_mobility.urban.app.town_view import TownView, view_of_model
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.model import UrbanMobilityModel


@dataclass(frozen=True)
class LiveSource:
    """A running model, at its last simulated minute."""

    model: UrbanMobilityModel

    def view(self) -> TownView:
        """The town now."""
        return view_of_model(self.model)

    def report(self, agent: str) -> TravellerReport:
        """The inspector's report of ``agent``."""
        return report_of_model(self.model, agent)

    def travellers(self) -> list[str]:
        """Traveller names, sorted."""
        return sorted(self.model.travellers)

    def decisions(self) -> pd.DataFrame:
        """Decisions so far (``decisions_frame``)."""
        return self.model.decisions_frame()

    def llm_summary(self) -> pd.DataFrame:
        """The LLM brain's ledger summary (calls, outcomes, tokens, latency); empty for rules."""
        brain = self.model.brain
        if isinstance(brain, RuleBrain) or brain.ledger is None:
            return pd.DataFrame()
        return brain.ledger.summary()

    def link_states(self) -> pd.DataFrame:
        """Today's link table so far (what the charts need; cheap on long runs)."""
        today = (self.model.day - 1) * MINUTES_PER_DAY
        return self.model.engine.link_states_frame(since=today)


@dataclass(frozen=True)
class ReplaySource:
    """A saved run at one minute."""

    run: SavedRun
    minute: int

    def view(self) -> TownView:
        """The town at the minute."""
        return self.run.view_at(self.minute)

    def report(self, agent: str) -> TravellerReport:
        """The inspector's report of ``agent`` at the minute."""
        return report_of_run(self.run, agent, self.minute)

    def travellers(self) -> list[str]:
        """Traveller names, sorted."""
        return sorted(self.run.personas)

    def decisions(self) -> pd.DataFrame:
        """Decisions up to the minute."""
        table = self.run.table("decisions")
        if not len(table):
            return table
        absolute = (table["day"] - 1) * MINUTES_PER_DAY + table["minute"]
        return table[absolute <= self.minute]

    def llm_summary(self) -> pd.DataFrame:
        """The run's ledger summary (the whole run's; empty without an LLM brain)."""
        path = self.run.run.ledger_path
        return Ledger.summarize_file(path) if path.is_file() else pd.DataFrame()

    def link_states(self) -> pd.DataFrame:
        """The link table up to the minute."""
        table = self.run.table("link_states")
        return table[table["time"] <= self.minute]
