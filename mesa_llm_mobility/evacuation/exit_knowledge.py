"""Exit knowledge: which openings each pedestrian saw or was told about, when, and from where.

The paper's headline measure is whether a pedestrian "acquired knowledge of a usable exit"
(Sec. 4.1.3: 89.5 % of those who did evacuated, 1.05 % of those who did not). Two event tables,
written during the run by :class:`ExitKnowledgeRecorder`, make it computable afterwards:

- ``opening_observations``: one row the first time a pedestrian perceives an opening in a state
  (the first sight, and every later sight that shows a changed state, e.g. a gate seen open and
  later seen closed), and one more the first time it perceives that state from outside the
  opening's Moore neighbourhood when its earlier rows of that state were all adjacent:
  ``step, time_s, agent_id, opening_id, kind, state, usable, adjacent``. ``adjacent``: the
  pedestrian stood within one cell (Chebyshev) of a cell of the opening, i.e. the opening lay in
  the Moore neighbourhood that every perception map contains.
- ``exit_information``: one row per message of exit information (sender -> receiver about an
  opening, once per triple, as :func:`~mesa_llm_mobility.evacuation.communication.communicate`
  sends them) and per opening the system gives a pedestrian at initialisation (when that
  condition is on): ``step, time_s, sender_id, receiver_id, opening_id, kind, state, usable,
  hops, source``. ``state`` is the opening's true state when the message is passed;
  ``hops`` is 1 when the sender saw the opening itself, 1 + the sender's own hops when it was
  told, 0 for system-provided information and missing when the sender neither saw nor was told
  of it; ``source`` is ``"peer"`` or ``"system"`` (``sender_id`` missing).

``usable`` means the state was passable (an exit; a gate open or closing). The recorder only
adds rows; it changes nothing in the world, so runs stay identical with it.

:func:`exit_knowledge_measure` turns the two tables into the paper's per-pedestrian measure
(see its docstring for the definition): knowledge acquired before the final approach, never
the opening a pedestrian steps through from its Moore neighbourhood.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mesa_llm_mobility.evacuation.plaza import Terrain
from mesa_llm_mobility.evacuation.timing import STEPS_PER_SECOND, step_time_s

if TYPE_CHECKING:
    from mesa_llm_mobility.evacuation.knowledge import Knowledge
    from mesa_llm_mobility.evacuation.plaza import Plaza

OPENING_STATES: dict[int, str] = {
    Terrain.EXIT: "open",
    Terrain.GATE_OPEN: "open",
    Terrain.GATE_CLOSING: "closing",
    Terrain.GATE_CLOSED: "closed",
}
"""Terrain code of an opening cell -> the state a pedestrian sees."""

USABLE_STATES = frozenset({"open", "closing"})
"""Opening states a pedestrian can pass through."""

PEER = "peer"
SYSTEM = "system"
"""``exit_information.source``: told by another pedestrian, or given at initialisation."""

OBSERVATION_COLUMNS = (
    "step",
    "time_s",
    "agent_id",
    "opening_id",
    "kind",
    "state",
    "usable",
    "adjacent",
)
INFORMATION_COLUMNS = (
    "step",
    "time_s",
    "sender_id",
    "receiver_id",
    "opening_id",
    "kind",
    "state",
    "usable",
    "hops",
    "source",
)


def approach_masks(plaza: Plaza) -> np.ndarray:
    """Per opening, the flat cells within one cell (Chebyshev) of any of its cells.

    A pedestrian on such a cell has the opening in its Moore neighbourhood, which every
    perception map contains: what it sees of the opening from there it sees by construction.

    Args:
        plaza: The plaza.

    Returns:
        ``(openings, width * height)`` booleans, flat index ``x * height + y``.
    """
    width, height = plaza.width, plaza.height
    masks = np.zeros((len(plaza.openings), width * height), dtype=bool)
    for k, opening in enumerate(plaza.openings):
        grid = np.zeros((width, height), dtype=bool)
        for x, y in opening.cells:
            grid[max(0, x - 1) : x + 2, max(0, y - 1) : y + 2] = True
        masks[k] = grid.ravel()
    return masks


class ExitKnowledgeRecorder:
    """Collects the ``opening_observations`` and ``exit_information`` rows of one run.

    Args:
        plaza: The plaza (its openings and semantic opening layer).
    """

    def __init__(self, plaza: Plaza) -> None:
        self.plaza = plaza
        self._opening_of_cell = plaza.opening_index.ravel().astype(np.int64)
        self.is_opening = self._opening_of_cell >= 0
        """Per flat cell: whether it belongs to an opening (to pick the pairs worth passing)."""
        height = plaza.height
        self._height = height
        self._first_cell = [
            int(o.cells[0][0]) * height + int(o.cells[0][1]) for o in plaza.openings
        ]
        self._approach = approach_masks(plaza)
        self._recorded: set[tuple[int, int, str, bool]] = set()
        self._saw: set[tuple[int, int]] = set()
        self._hops: dict[tuple[int, int], int] = {}
        self._observations: list[tuple] = []
        self._information: list[tuple] = []

    def state_now(self, model: Knowledge, opening: int) -> str:
        """The true state of opening number ``opening`` (effective layer)."""
        code = int(model.effective.codes.ravel()[self._first_cell[opening]])
        return OPENING_STATES[code]

    def observe(
        self,
        model: Knowledge,
        viewers: np.ndarray,
        cells: np.ndarray,
        step: int,
    ) -> None:
        """Note what ``viewers[k]`` saw of openings in ``cells[k]`` (perception pairs, rows).

        A row is written for a state of an opening seen for the first time, and for the first
        sight of that state from outside the opening's Moore neighbourhood when every earlier
        row of the state was adjacent.

        Args:
            model: The model (for the true opening states, positions and agent ids).
            viewers: Pedestrian rows, one per perceived cell.
            cells: Flat cells perceived.
            step: The step of the perception.
        """
        hit = np.flatnonzero(self.is_opening[cells])
        if hit.size == 0:
            return
        opening = self._opening_of_cell[cells[hit]]
        pairs = np.unique(np.stack([viewers[hit], opening], axis=1), axis=0)
        for i, k in pairs.tolist():
            state = self.state_now(model, k)
            x, y = (int(v) for v in model.pos[i])
            adjacent = bool(self._approach[k, x * self._height + y])
            if (i, k, state, False) in self._recorded or (
                i,
                k,
                state,
                adjacent,
            ) in self._recorded:
                continue
            self._recorded.add((i, k, state, adjacent))
            self._saw.add((i, k))
            o = self.plaza.openings[k]
            self._observations.append(
                (
                    step,
                    step_time_s(step),
                    model.uid(i),
                    o.opening_id,
                    o.kind,
                    state,
                    state in USABLE_STATES,
                    adjacent,
                )
            )

    def inform(
        self, model: Knowledge, sender: int, receiver: int, opening: int
    ) -> None:
        """Note one message of exit information (rows ``sender`` -> ``receiver``).

        Args:
            model: The model (at the step of the message).
            sender: The sender's row.
            receiver: The receiver's row.
            opening: The opening number.
        """
        if (sender, opening) in self._saw:
            hops: int | None = 1
        elif (sender, opening) in self._hops:
            hops = self._hops[(sender, opening)] + 1
        else:
            hops = None
        self._information_row(model, model.uid(sender), receiver, opening, hops, PEER)

    def provide(self, model: Knowledge, receiver: int, opening: int) -> None:
        """Note exit information the system gives pedestrian row ``receiver`` (no sender).

        For the condition with system-provided initial exit information (paper Fig. 9b): the
        row has no ``sender_id``, ``hops`` 0 and ``source`` ``"system"``.

        Args:
            model: The model (at the step of the information).
            receiver: The receiver's row.
            opening: The opening number.
        """
        self._information_row(model, None, receiver, opening, 0, SYSTEM)

    def _information_row(
        self,
        model: Knowledge,
        sender_id: int | None,
        receiver: int,
        opening: int,
        hops: int | None,
        source: str,
    ) -> None:
        if hops is not None:
            known = self._hops.get((receiver, opening))
            self._hops[(receiver, opening)] = (
                hops if known is None else min(known, hops)
            )
        state = self.state_now(model, opening)
        o = self.plaza.openings[opening]
        self._information.append(
            (
                model.tick,
                step_time_s(model.tick),
                sender_id,
                model.uid(receiver),
                o.opening_id,
                o.kind,
                state,
                state in USABLE_STATES,
                hops,
                source,
            )
        )

    def observations_frame(self) -> pd.DataFrame:
        """The ``opening_observations`` table (columns in :data:`OBSERVATION_COLUMNS`)."""
        return pd.DataFrame(self._observations, columns=list(OBSERVATION_COLUMNS))

    def information_frame(self) -> pd.DataFrame:
        """The ``exit_information`` table (columns in :data:`INFORMATION_COLUMNS`)."""
        frame = pd.DataFrame(self._information, columns=list(INFORMATION_COLUMNS))
        frame["sender_id"] = frame["sender_id"].astype("Int64")
        frame["hops"] = frame["hops"].astype("Int64")
        return frame


# ----------------------------------------------------------------- the paper's measure
KNOWLEDGE_SOURCES = ("observed", "told", "system", "only closed gate", "none")
"""Information groups, in order of precedence (paper Fig. 9b): a usable exit seen from outside
its Moore neighbourhood; else one told by another pedestrian; else one given by the system at
initialisation; else no usable exit but a gate that had closed; else nothing."""


@dataclass(frozen=True)
class KnowledgeCutoff:
    """When a pedestrian's knowledge stops counting and which gates were still usable then.

    Attributes:
        gate_closed_at_step: The step at which the gates closed (``inf``: never in the run).
        end_step: The run's last step (the cut-off of the unresolved).
    """

    gate_closed_at_step: float
    end_step: int


def mark_adjacent(
    observations: pd.DataFrame, positions: pd.DataFrame, plaza: Plaza
) -> pd.DataFrame:
    """``observations`` with an ``adjacent`` column computed from the pedestrians' cells.

    For runs written before the recorder had the column: whether the pedestrian stood in the
    opening's Moore neighbourhood at the step of the row. (Those runs have no extra row for a
    later sight from outside it, so a pedestrian who first saw an opening adjacent and later
    from afar counts as not knowing it.)

    Args:
        observations: An ``opening_observations`` table without ``adjacent``.
        positions: The run's ``positions`` table.
        plaza: The run's plaza.

    Returns:
        A copy with ``adjacent``.
    """
    masks = approach_masks(plaza)
    number = {o.opening_id: k for k, o in enumerate(plaza.openings)}
    cells = positions[positions["kind"] == "pedestrian"].set_index(["step", "agent_id"])
    out = observations.copy()
    if not len(out):
        return out.assign(adjacent=pd.Series(dtype=bool))
    where = cells.loc[list(zip(out["step"], out["agent_id"], strict=True)), ["x", "y"]]
    flat = where["x"].to_numpy() * plaza.height + where["y"].to_numpy()
    rows = out["opening_id"].map(number).to_numpy()
    out["adjacent"] = masks[rows, flat]
    return out


def exit_knowledge_measure(
    pedestrians: pd.DataFrame,
    observations: pd.DataFrame,
    information: pd.DataFrame,
    cutoff: KnowledgeCutoff,
) -> pd.DataFrame:
    """Per pedestrian: the exits it knew before its final approach, how, and since when.

    The paper counts a pedestrian as knowing a usable exit when it acquired that knowledge by
    seeing it or being told (Sec. 4.1.3). Every perception map contains the Moore
    neighbourhood, and the opening a pedestrian steps through lies in it one step before, so
    counting every sight makes "nobody who never knew a usable exit evacuated" true by
    construction. Here a pedestrian *knows* an opening when, at or before its resolving step
    (the run's end for the unresolved), it

    - saw it from outside the opening's Moore neighbourhood (``adjacent`` false), or
    - was told of it by another pedestrian, or was given it by the system at initialisation.

    A known opening is *usable* when it was seen or told in a passable state and is an exit,
    or is a gate and the pedestrian resolved before the gates closed (a gate seen open that
    closed before the pedestrian could use it is the paper's "only a closed gate" case).

    Args:
        pedestrians: The run's ``pedestrians`` table (``agent_id``, ``resolved_step``).
        observations: Its ``opening_observations`` table (with ``adjacent``; see
            :func:`mark_adjacent` for older runs).
        information: Its ``exit_information`` table (``source`` optional: ``peer`` if missing).
        cutoff: The run's gate closure and end step.

    Returns:
        One row per pedestrian: ``agent_id``; ``usable_exits_known`` (distinct usable openings,
        the paper's measure); ``exits_known`` (distinct exits of the three that never close,
        the exits-only variant); ``usable_exits_known_any_sight`` (every sight counted, the
        measure that is true by construction, for contrast); ``openings_seen`` (distinct
        openings seen from outside their Moore neighbourhood, in any state);
        ``knowledge_source`` (one of
        :data:`KNOWLEDGE_SOURCES`); ``observed_usable``, ``told_usable``, ``system_usable``
        (booleans); ``first_usable_s`` and ``first_usable_source`` (the first counted usable
        knowledge; NaN / None without).

    Raises:
        ValueError: When ``observations`` has no ``adjacent`` column.
    """
    if "adjacent" not in observations.columns:
        raise ValueError(
            "opening_observations: no 'adjacent' column (mark_adjacent adds it for older runs)"
        )
    source = (
        information["source"]
        if "source" in information.columns
        else pd.Series(PEER, index=information.index)
    )
    columns = ["who", "step", "opening_id", "kind", "usable", "via", "far"]
    seen = observations.rename(columns={"agent_id": "who"}).assign(
        via="observed", far=~observations["adjacent"].astype(bool)
    )
    told = information.rename(columns={"receiver_id": "who"}).assign(
        via=np.where(source == SYSTEM, "system", "told"), far=True
    )
    learned = pd.concat([seen[columns], told[columns]], ignore_index=True)
    rows = []
    for agent_id, resolve in pedestrians.set_index("agent_id")["resolved_step"].items():
        last = cutoff.end_step if pd.isna(resolve) else int(resolve)
        mine = learned[(learned["who"] == agent_id) & (learned["step"] <= last)]
        passable = mine["usable"].astype(bool) & (
            (mine["kind"] == "exit") | (last < cutoff.gate_closed_at_step)
        )
        counted = mine[mine["far"]]
        usable = mine[passable & mine["far"]]
        usable_from = set(usable["via"])
        if usable_from:
            group = next(s for s in KNOWLEDGE_SOURCES if s in usable_from)
        elif (counted["kind"] == "gate").any():
            group = "only closed gate"
        else:
            group = "none"
        first = usable.sort_values("step", kind="stable").head(1)
        rows.append(
            {
                "agent_id": agent_id,
                "usable_exits_known": int(usable["opening_id"].nunique()),
                "exits_known": int(
                    counted.loc[counted["kind"] == "exit", "opening_id"].nunique()
                ),
                "usable_exits_known_any_sight": int(
                    mine.loc[passable, "opening_id"].nunique()
                ),
                "openings_seen": int(
                    counted.loc[counted["via"] == "observed", "opening_id"].nunique()
                ),
                "knowledge_source": group,
                "observed_usable": "observed" in usable_from,
                "told_usable": "told" in usable_from,
                "system_usable": "system" in usable_from,
                "first_usable_s": float(first["step"].iloc[0]) / STEPS_PER_SECOND
                if len(first)
                else np.nan,
                "first_usable_source": first["via"].iloc[0] if len(first) else None,
            }
        )
    frame = pd.DataFrame(rows)
    if len(frame):  # one string type whether or not anybody knew (runs pool alike)
        frame["first_usable_source"] = pd.array(
            frame["first_usable_source"].tolist(), dtype="string"
        )
    return frame
