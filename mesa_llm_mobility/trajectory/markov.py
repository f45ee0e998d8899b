"""The first-order Markov chain baseline over (activity, POI, time bin) states.

The classical generator the paper's agent is measured against, with no LLM and no workflow: each
visit of the history is a state ``s = (activity, POI, start bin)`` (the start's bin of
``bin_minutes`` within its local day). Per individual and day type (weekday / weekend; all days
when the individual has none of that type) :meth:`MarkovChainBaseline.fit` counts

* the start states of the days, ``P(s_1 = s) = n_first(s) / days``;
* the transitions within days, ``P(s' | s) = n(s -> s') / n(s)``, where ``n(s)`` counts every
  occurrence of ``s``, the day's end included as the state ``END``, so each row sums to one.

:meth:`MarkovChainBaseline.generate` walks the chain from a drawn start state until ``END`` (or
``max_length`` visits) and times each visit with one observed (start minute, dwell) pair of its
state, drawn at random: a visit starts at that minute or at the previous visit's end when later,
and ends by midnight, so the output is a valid stay-point table of the target dates
(:data:`~.staypoints.STAY_COLUMNS`), like :func:`~.model.generate`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mesa_llm_mobility.clock import MINUTES_PER_DAY
from mesa_llm_mobility.trajectory.evidence import day_type
from mesa_llm_mobility.trajectory.staypoints import STAY_COLUMNS, local_dates

State = tuple[str, object, int]
"""A Markov state: (activity name, POI id, start bin)."""


@dataclass(frozen=True)
class StayChain:
    """One individual's chain for one day type.

    Attributes:
        states: The states, indexed like the probabilities.
        start_probs: ``P(s_1 = s)``, shape (n,).
        transition_probs: ``P(s' | s)``, shape (n, n + 1); column n is the end of the day.
        starts: Per state, the observed start minutes of its visits.
        durations: Per state, the observed dwell minutes of its visits (paired with starts).
        days: History days the chain was fitted on.
    """

    states: tuple[State, ...]
    start_probs: np.ndarray
    transition_probs: np.ndarray
    starts: tuple[np.ndarray, ...]
    durations: tuple[np.ndarray, ...]
    days: int

    def index(self, state: State) -> int:
        """Position of a state (``ValueError`` when the chain never saw it)."""
        return self.states.index(state)

    def probability(self, source: State, target: State | None) -> float:
        """``P(target | source)``; ``target=None`` is the end of the day."""
        column = len(self.states) if target is None else self.index(target)
        return float(self.transition_probs[self.index(source), column])


@dataclass(frozen=True)
class MarkovChainBaseline:
    """Per-individual first-order Markov chains over (activity, POI, time bin), fitted on a history.

    Attributes:
        chains: ``(agent_id, day type)`` -> chain; day type ``"all"`` when the individual had
            no day of a type (the chain of every day serves it).
        poi_coordinates: POI id -> (latitude, longitude).
        timezone: The history's time zone (the dates' local midnights).
        bin_minutes: Width of the start bins.
        max_length: Most visits per generated day.
    """

    chains: dict[tuple[object, str], StayChain]
    poi_coordinates: dict[object, tuple[float, float]]
    timezone: str
    bin_minutes: int
    max_length: int

    @classmethod
    def fit(
        cls, history: pd.DataFrame, *, bin_minutes: int = 60, max_length: int = 24
    ) -> MarkovChainBaseline:
        """Count start states, transitions and day ends of every individual's history.

        Args:
            history: A valid stay-point table.
            bin_minutes: Width of the start bins (60: hours of the day).
            max_length: Most visits per generated day.

        Returns:
            The fitted baseline.

        Raises:
            ValueError: For an empty history or a bin width that does not divide a day.
        """
        if history.empty:
            raise ValueError("the Markov chain baseline needs a non-empty history")
        if bin_minutes < 1 or MINUTES_PER_DAY % bin_minutes:
            raise ValueError(
                f"bin_minutes must divide a day of {MINUTES_PER_DAY} minutes, got {bin_minutes}"
            )
        stays = history.sort_values(["agent_id", "start"], kind="stable")
        dates = local_dates(stays)
        start_minute = (stays["start"] - dates).dt.total_seconds().to_numpy() / 60.0
        dwell = (stays["end"] - stays["start"]).dt.total_seconds().to_numpy() / 60.0
        frame = pd.DataFrame(
            {
                "agent_id": stays["agent_id"].to_numpy(),
                "date": dates.to_numpy(),
                "day_type": [day_type(int(day)) for day in dates.dt.day_of_week],
                "state": list(
                    zip(
                        stays["activity"].to_numpy(),
                        stays["poi_id"].to_numpy(),
                        (start_minute // bin_minutes).astype(int).tolist(),
                        strict=True,
                    )
                ),
                "start": start_minute,
                "dwell": dwell,
            }
        )
        chains: dict[tuple[object, str], StayChain] = {}
        for agent_id, visits in frame.groupby("agent_id", sort=False):
            for kind, subset in visits.groupby("day_type", sort=False):
                chains[(agent_id, str(kind))] = _fit_chain(subset)
            chains[(agent_id, "all")] = _fit_chain(visits)
        first = ~stays["poi_id"].duplicated().to_numpy()
        coordinates = dict(
            zip(
                stays["poi_id"].to_numpy()[first].tolist(),
                zip(
                    stays["latitude"].to_numpy(float)[first].tolist(),
                    stays["longitude"].to_numpy(float)[first].tolist(),
                    strict=True,
                ),
                strict=True,
            )
        )
        return cls(
            chains, coordinates, str(stays["start"].dt.tz), bin_minutes, max_length
        )

    @property
    def individuals(self) -> list[object]:
        """The individuals, in history order."""
        return list(dict.fromkeys(agent for agent, _ in self.chains))

    def chain(self, agent_id: object, weekday: int) -> StayChain:
        """The chain serving a weekday: its day type's, else the one of every day."""
        return self.chains.get(
            (agent_id, day_type(weekday)), self.chains[(agent_id, "all")]
        )

    def generate(
        self, dates: Sequence[str | pd.Timestamp], rng: np.random.Generator | int | None
    ) -> pd.DataFrame:
        """Walk every individual's chain once per date.

        Args:
            dates: The dates to generate (local dates of the history's time zone).
            rng: Seed or generator.

        Returns:
            The generated stay points (:data:`~.staypoints.STAY_COLUMNS`), by agent and start.
        """
        rng = np.random.default_rng(rng)
        midnights = pd.DatetimeIndex(
            [_local_midnight(date, self.timezone) for date in dates]
        )
        if not len(midnights):
            midnights = pd.DatetimeIndex([], tz=self.timezone)
        columns: dict[str, list] = {
            name: []
            for name in ("agent_id", "poi_id", "activity", "day", "start", "end")
        }
        for agent_id in self.individuals:
            for day, midnight in enumerate(midnights):
                chain = self.chain(agent_id, int(midnight.weekday()))
                for activity, poi, start, end in self._walk(chain, rng):
                    for name, value in zip(
                        columns,
                        (agent_id, poi, activity, day, start, end),
                        strict=True,
                    ):
                        columns[name].append(value)
        base = midnights[np.asarray(columns["day"], dtype=np.int64)]
        coordinates = np.array(
            [self.poi_coordinates[poi] for poi in columns["poi_id"]], dtype=float
        ).reshape(-1, 2)
        frame = pd.DataFrame(
            {
                "agent_id": columns["agent_id"],
                "poi_id": columns["poi_id"],
                "latitude": coordinates[:, 0],
                "longitude": coordinates[:, 1],
                "activity": columns["activity"],
                "start": (
                    base
                    + pd.to_timedelta(np.asarray(columns["start"], float), unit="min")
                ).round("s"),
                "end": (
                    base
                    + pd.to_timedelta(np.asarray(columns["end"], float), unit="min")
                ).round("s"),
            },
            columns=list(STAY_COLUMNS),
        )
        return frame.sort_values(["agent_id", "start"], kind="stable").reset_index(
            drop=True
        )

    def _walk(
        self, chain: StayChain, rng: np.random.Generator
    ) -> list[tuple[str, object, float, float]]:
        """One day: (activity, POI, start minute, end minute) per visit."""
        end_state = len(chain.states)
        state = int(rng.choice(end_state, p=chain.start_probs))
        clock = 0.0
        visits = []
        while len(visits) < self.max_length:
            pick = int(rng.integers(chain.starts[state].size))
            start = max(float(chain.starts[state][pick]), clock)
            end = min(start + float(chain.durations[state][pick]), MINUTES_PER_DAY)
            if end - start < 1.0:
                break  # the day is over
            activity, poi, _ = chain.states[state]
            visits.append((activity, poi, start, end))
            clock = end
            state = int(rng.choice(end_state + 1, p=chain.transition_probs[state]))
            if state == end_state:
                break
        return visits


def _fit_chain(visits: pd.DataFrame) -> StayChain:
    """Start, transition and end counts of one individual's days (one day type)."""
    states = tuple(dict.fromkeys(visits["state"]))
    position = {state: index for index, state in enumerate(states)}
    codes = visits["state"].map(position).to_numpy()
    same_day = visits["date"].to_numpy()
    n = len(states)
    start_counts = np.zeros(n)
    counts = np.zeros((n, n + 1))
    first = np.ones(len(codes), dtype=bool)
    first[1:] = same_day[1:] != same_day[:-1]
    last = np.ones(len(codes), dtype=bool)
    last[:-1] = first[1:]
    np.add.at(start_counts, codes[first], 1)
    np.add.at(counts, (codes[:-1][~last[:-1]], codes[1:][~last[:-1]]), 1)
    np.add.at(counts, (codes[last], n), 1)
    starts = visits["start"].to_numpy(float)
    dwell = visits["dwell"].to_numpy(float)
    return StayChain(
        states=states,
        start_probs=start_counts / start_counts.sum(),
        transition_probs=counts / counts.sum(axis=1, keepdims=True),
        starts=tuple(starts[codes == index] for index in range(n)),
        durations=tuple(dwell[codes == index] for index in range(n)),
        days=int(first.sum()),
    )


def _local_midnight(date: str | pd.Timestamp, timezone: str) -> pd.Timestamp:
    """A date's local midnight in ``timezone``."""
    stamp = pd.Timestamp(date)
    stamp = (
        stamp.tz_localize(timezone)
        if stamp.tzinfo is None
        else stamp.tz_convert(timezone)
    )
    return stamp.normalize()


__all__ = ["MarkovChainBaseline", "State", "StayChain"]
