"""Run outputs: per-pedestrian outcome measures over the tidy tables, and the trajectory plot.

Outcome measures (spec; paper Table 4), one row per pedestrian, computed from the tidy tables:

- ``evacuation_turns`` / ``evacuation_time_s``: steps (turns) from run start to reaching an opening.
- ``trajectory_length_m``: distance walked (0.4 m orthogonal, 0.4 sqrt 2 m diagonal steps).
- ``evacuation_efficiency``: shortest exit distance from the start cell / walked, capped at 1;
  0 when not evacuated.
- ``critical_safety_margin_m``: smallest distance to the adversary over the run.
- ``mean_threat_distance_m``: mean distance to the adversary over the run.
- ``outcome``: evacuated, reached or unresolved.
- ``pre_movement_delay_turns``: turns from first evidence (sighting of A or D, a heard shout) to
  the first move under a decision applied at or after it.
- ``movement_directness``: mean over applied decisions of net displacement / path length over the
  10 s (30 steps) after the decision, ending at evacuation, death or the limit.
- ``reversals_per_100m``: heading changes beyond 120 degrees between successive moves, per 100 m.
- ``herding_rate``: fraction of moves within 45 degrees of the mean move of the other pedestrians
  within 5 m that moved in the same step (moves without moving neighbours count as not aligned).
- ``pocket_cells_entered``: entries into cells with at most two passable orthogonal neighbours.
- ``exit_used``, ``familiar_exit_use``: opening taken, and whether it was the nearest usable
  opening known at the last applied decision.
- ``threat_response_situation`` / ``threat_response_action``: appraisal and action of the first
  decision requested at or after the first direct sighting of A or D.
"""

from __future__ import annotations

import itertools
import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd

from mesa_llm_mobility.evacuation.timing import (
    DIRECTNESS_WINDOW_STEPS,
    STEPS_PER_SECOND,
)

if TYPE_CHECKING:
    from mesa_llm_mobility.evacuation.plaza import Plaza
    from mesa_llm_mobility.evacuation.scene import Scene

logger = logging.getLogger(__name__)

HERDING_RADIUS_M = 5.0
EVIDENCE_EVENTS = ("sighting_adversary", "sighting_casualty", "shout_heard")
SIGHTING_EVENTS = ("sighting_adversary", "sighting_casualty")


def _angle_deg(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 180.0
    return math.degrees(math.acos(float(np.clip(a @ b / (na * nb), -1.0, 1.0))))


def _herding(moves: pd.DataFrame, radius_cells: float) -> dict[int, tuple[int, int]]:
    """Per agent: (aligned moves, moves)."""
    counts: dict[int, list[int]] = {}
    for _, group in moves.groupby("step", sort=False):
        ids = group["agent_id"].to_numpy()
        xy = group[["x0", "y0"]].to_numpy(float)
        v = group[["dx", "dy"]].to_numpy(float)
        d = np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(axis=2))
        near = (d <= radius_cells) & ~np.eye(len(ids), dtype=bool)
        for k, agent in enumerate(ids):
            c = counts.setdefault(int(agent), [0, 0])
            c[1] += 1
            if near[k].any():
                mean = v[near[k]].mean(axis=0)
                if _angle_deg(v[k], mean) <= 45.0:
                    c[0] += 1
    return {a: (c[0], c[1]) for a, c in counts.items()}


def pedestrian_track(
    positions: pd.DataFrame, agent_id: int, resolved_step: float | None
) -> pd.DataFrame:
    """One pedestrian's rows of the positions table, up to and including its resolving step."""
    track = positions[positions["agent_id"] == agent_id]
    if resolved_step is not None and not pd.isna(resolved_step):
        track = track[track["step"] <= int(resolved_step)]
    return track


def track_step_lengths(xy: np.ndarray, cell_size_m: float) -> np.ndarray:
    """Metres walked between successive cells of a track (0.4 m or 0.4 sqrt 2 m a step)."""
    delta = np.diff(xy, axis=0)
    return (
        np.hypot(delta[:, 0], delta[:, 1]) * cell_size_m if len(delta) else np.zeros(0)
    )


def directness_after(
    steps: np.ndarray,
    xy: np.ndarray,
    step_len_m: np.ndarray,
    applied_steps: list[int],
    cell_size_m: float,
) -> list[float | None]:
    """Movement directness over the 10 s (30 steps) after each applied decision.

    Net displacement / path length from the decision's applied step to 30 steps later, or to
    the track's end (evacuation, death or the limit), whichever comes first.

    Args:
        steps: The pedestrian's track steps (ascending).
        xy: Its cells at those steps, ``(len(steps), 2)``.
        step_len_m: Metres walked between successive track rows.
        applied_steps: Applied step of each decision.
        cell_size_m: Cell size in metres.

    Returns:
        One value per decision; ``None`` where the decision's step is not on the track or the
        pedestrian did not move in the window.
    """
    step_index = {int(s): k for k, s in enumerate(steps)}
    values: list[float | None] = []
    for applied in applied_steps:
        k0 = step_index.get(int(applied))
        if k0 is None:
            values.append(None)
            continue
        k1 = min(len(steps) - 1, k0 + DIRECTNESS_WINDOW_STEPS)
        path = float(step_len_m[k0:k1].sum())
        values.append(
            float(np.hypot(*(xy[k1] - xy[k0]))) * cell_size_m / path
            if path > 0
            else None
        )
    return values


def outcome_measures(
    positions: pd.DataFrame,
    decisions: pd.DataFrame,
    events: pd.DataFrame,
    pedestrians: pd.DataFrame,
    pocket: np.ndarray,
    cell_size_m: float,
) -> pd.DataFrame:
    """Every outcome measure of the spec, one row per pedestrian (definitions in the module docstring).

    Args:
        positions: The positions table (pedestrian rows up to and including the resolving step;
            later ``reached`` rows are ignored; adversary rows give threat distances).
        decisions: The decisions table.
        events: The events table.
        pedestrians: ``agent_id, shortest_exit_m, outcome, resolved_step, exit_used``.
        pocket: ``[x, y]`` pocket-cell mask.
        cell_size_m: Cell size in metres.
    """
    adversary = positions[positions["kind"] == "adversary"].set_index("step")[
        ["x", "y"]
    ]
    peds = positions[positions["kind"] == "pedestrian"].sort_values(
        ["agent_id", "step"]
    )
    rows = []
    all_moves = []
    per_agent: dict[int, pd.DataFrame] = {}
    for info in pedestrians.itertuples(index=False):
        track = pedestrian_track(peds, info.agent_id, info.resolved_step)
        per_agent[int(info.agent_id)] = track
        xy = track[["x", "y"]].to_numpy(float)
        steps = track["step"].to_numpy()
        delta = np.diff(xy, axis=0)
        moving = np.any(delta != 0, axis=1)
        if len(delta):
            all_moves.append(
                pd.DataFrame(
                    {
                        "step": steps[1:][moving],
                        "agent_id": info.agent_id,
                        "x0": xy[:-1][moving, 0],
                        "y0": xy[:-1][moving, 1],
                        "dx": delta[moving, 0],
                        "dy": delta[moving, 1],
                    }
                )
            )
    moves_all = (
        pd.concat(all_moves, ignore_index=True)
        if all_moves
        else pd.DataFrame(columns=["step", "agent_id", "x0", "y0", "dx", "dy"])
    )
    herding = (
        _herding(moves_all, HERDING_RADIUS_M / cell_size_m) if len(moves_all) else {}
    )
    for info in pedestrians.itertuples(index=False):
        agent_id = int(info.agent_id)
        track = per_agent[agent_id]
        xy = track[["x", "y"]].to_numpy(float)
        steps = track["step"].to_numpy()
        delta = np.diff(xy, axis=0)
        step_len = track_step_lengths(xy, cell_size_m)
        walked = float(step_len.sum())
        evacuated = info.outcome == "evacuated"
        turns = int(info.resolved_step) if evacuated else None
        efficiency = (
            min(1.0, float(info.shortest_exit_m) / walked)
            if evacuated and walked > 0
            else 0.0
        )
        adv = adversary.reindex(steps)
        dist = (
            np.hypot(
                xy[:, 0] - adv["x"].to_numpy(float), xy[:, 1] - adv["y"].to_numpy(float)
            )
            * cell_size_m
        )
        mine = events[events["agent_id"] == agent_id] if len(events) else events
        evidence = mine[mine["event"].isin(EVIDENCE_EVENTS)]["step"]
        first_evidence = int(evidence.min()) if len(evidence) else None
        my_decisions = (
            decisions[decisions["agent_id"] == agent_id]
            if len(decisions)
            else decisions
        )
        delay = None
        if first_evidence is not None and len(my_decisions):
            after = my_decisions[
                (my_decisions["applied_step"] >= first_evidence)
                & (my_decisions["action"] == "move")
                & my_decisions["accepted"]
            ]
            if len(after):
                applied = int(after["applied_step"].min())
                moved_steps = (
                    steps[1:][np.any(delta != 0, axis=1)]
                    if len(delta)
                    else np.zeros(0, dtype=int)
                )
                later = moved_steps[moved_steps > applied]
                if len(later):
                    delay = int(later.min()) - first_evidence
        directness = [
            d
            for d in directness_after(
                steps,
                xy,
                step_len,
                my_decisions["applied_step"].tolist() if len(my_decisions) else [],
                cell_size_m,
            )
            if d is not None
        ]
        move_vectors = (
            delta[np.any(delta != 0, axis=1)] if len(delta) else np.zeros((0, 2))
        )
        reversals = sum(
            1 for a, b in itertools.pairwise(move_vectors) if _angle_deg(a, b) > 120.0
        )
        moved_to = (
            xy[1:][np.any(delta != 0, axis=1)].astype(int)
            if len(delta)
            else np.zeros((0, 2), dtype=int)
        )
        pockets = (
            int(pocket[moved_to[:, 0], moved_to[:, 1]].sum()) if len(moved_to) else 0
        )
        aligned, n_moves = herding.get(agent_id, (0, 0))
        familiar = None
        if evacuated and len(my_decisions):
            last = my_decisions.sort_values("applied_step").iloc[-1]
            familiar = bool(last["nearest_known_opening"] == info.exit_used)
        sightings = mine[mine["event"].isin(SIGHTING_EVENTS)]["step"]
        response_situation = response_action = None
        if len(sightings) and len(my_decisions):
            first_sight = int(sightings.min())
            later = my_decisions[
                my_decisions["request_step"] >= first_sight
            ].sort_values("request_step")
            if len(later):
                response_situation, response_action = (
                    later.iloc[0]["situation"],
                    later.iloc[0]["action"],
                )
        rows.append(
            {
                "agent_id": agent_id,
                "outcome": info.outcome,
                "evacuation_turns": turns,
                "evacuation_time_s": None
                if turns is None
                else round(turns / STEPS_PER_SECOND, 4),
                "trajectory_length_m": round(walked, 4),
                "evacuation_efficiency": round(efficiency, 4),
                "critical_safety_margin_m": round(float(np.nanmin(dist)), 4)
                if len(dist)
                else None,
                "mean_threat_distance_m": round(float(np.nanmean(dist)), 4)
                if len(dist)
                else None,
                "pre_movement_delay_turns": delay,
                "movement_directness": round(float(np.mean(directness)), 4)
                if directness
                else None,
                "reversals_per_100m": round(reversals / (walked / 100.0), 4)
                if walked > 0
                else None,
                "herding_rate": round(aligned / n_moves, 4) if n_moves else None,
                "pocket_cells_entered": pockets,
                "exit_used": info.exit_used,
                "familiar_exit_use": familiar,
                "threat_response_situation": response_situation,
                "threat_response_action": response_action,
            }
        )
    return pd.DataFrame(rows)


def summary_table(outcomes: pd.DataFrame, pedestrians: pd.DataFrame) -> pd.DataFrame:
    """Outcome counts and means per archetype, plus a total row."""
    merged = outcomes.merge(pedestrians[["agent_id", "archetype"]], on="agent_id")
    table = merged.groupby("archetype").agg(
        pedestrians=("agent_id", "size"),
        evacuated=("outcome", lambda s: int((s == "evacuated").sum())),
        reached=("outcome", lambda s: int((s == "reached").sum())),
        unresolved=("outcome", lambda s: int((s == "unresolved").sum())),
        mean_evac_time_s=("evacuation_time_s", "mean"),
        mean_walked_m=("trajectory_length_m", "mean"),
        mean_safety_margin_m=("critical_safety_margin_m", "mean"),
    )
    total = pd.DataFrame(
        {
            "pedestrians": [len(merged)],
            "evacuated": [int((merged["outcome"] == "evacuated").sum())],
            "reached": [int((merged["outcome"] == "reached").sum())],
            "unresolved": [int((merged["outcome"] == "unresolved").sum())],
            "mean_evac_time_s": [merged["evacuation_time_s"].mean()],
            "mean_walked_m": [merged["trajectory_length_m"].mean()],
            "mean_safety_margin_m": [merged["critical_safety_margin_m"].mean()],
        },
        index=["all"],
    )
    return pd.concat([table, total]).round(2)


class FinishedRun(Protocol):
    """What :func:`plot_trajectories` reads of a run (an :class:`~.model.EvacuationModel`)."""

    composition: str | dict[str, int]
    block: int | None

    @property
    def plaza(self) -> Plaza:
        """The plaza."""
        ...

    @property
    def scene(self) -> Scene:
        """The scene (the gates' last state)."""
        ...

    @property
    def time_s(self) -> float:
        """When the run ended."""
        ...

    def positions_frame(self) -> pd.DataFrame:
        """The positions table."""
        ...

    def pedestrians_frame(self) -> pd.DataFrame:
        """The pedestrians table."""
        ...


def plot_trajectories(model: FinishedRun, path: str | Path) -> Path:
    """Draw the plaza, openings, start cells and every trajectory to a PNG."""
    # a bare Figure renders off-screen without touching pyplot's global backend
    from matplotlib.colors import ListedColormap  # noqa: PLC0415
    from matplotlib.figure import Figure  # noqa: PLC0415

    plaza = model.plaza
    colors = ListedColormap(
        ["#3a3a3a", "#f4f1e8", "#3f8f3f", "#d62728", "#1f77b4", "#ff7f0e", "#7f7f7f"]
    )
    fig = Figure(figsize=(8, 8.5))
    ax = fig.subplots()
    ax.imshow(
        model.scene.effective.codes.T,
        origin="lower",
        cmap=colors,
        vmin=0,
        vmax=6,
        interpolation="nearest",
    )
    positions = model.positions_frame()
    outcome = dict(
        zip(
            model.pedestrians_frame()["agent_id"],
            model.pedestrians_frame()["outcome"],
            strict=True,
        )
    )
    style = {"evacuated": "tab:blue", "reached": "tab:red", "unresolved": "tab:orange"}
    for agent_id, track in positions[positions["kind"] == "pedestrian"].groupby(
        "agent_id"
    ):
        track = (
            track[track["situation"] != "reached"]
            if outcome.get(agent_id) != "reached"
            else track
        )
        ax.plot(
            track["x"],
            track["y"],
            lw=0.8,
            color=style.get(outcome.get(agent_id, ""), "k"),
            alpha=0.8,
        )
    adversary = positions[positions["kind"] == "adversary"]
    ax.plot(
        adversary["x"],
        adversary["y"],
        lw=1.2,
        color="black",
        ls="--",
        label="adversary",
    )
    starts = model.pedestrians_frame()
    ax.scatter(
        starts["start_x"],
        starts["start_y"],
        s=14,
        color="tab:purple",
        zorder=3,
        label="start cells",
    )
    ax.scatter(
        *plaza.threat_cell,
        s=40,
        marker="x",
        color="black",
        zorder=3,
        label="threat entry",
    )
    for opening in plaza.openings:
        cx, cy = opening.center
        ax.annotate(
            opening.opening_id,
            (cx, cy),
            fontsize=7,
            ha="right" if opening.kind == "exit" else "center",
        )
    for name, color in style.items():
        ax.plot([], [], color=color, label=name)
    ax.legend(loc="lower left", fontsize=7)
    ax.set_title(
        f"{plaza.name} plaza, composition {model.composition}, block {model.block}, {model.time_s:.0f} s"
    )
    ax.set_xlabel("x (cells of 0.4 m, east)")
    ax.set_ylabel("y (cells, north)")
    out = Path(path)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    return out
