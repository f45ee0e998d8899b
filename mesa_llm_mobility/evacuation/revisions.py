"""Decision revisions and their stimuli (paper Sec. 4.1.1, Fig. 6; Sec. 4.1.3's shout response).

Every decision after a pedestrian's initial one is an *epoch*. :func:`decision_epochs` gives
each epoch what the paper relates its revisions to, from one run's tables:

- ``urgency_change``: the absolute change of reported urgency from the previous decision;
- ``new_direct_evidence``: the pedestrian sees A or D now and did not at its previous decision;
- ``peer_information``: its input holds information from other pedestrians (a shout heard in
  the decision's listening window, or exit information received at or before the request);
  ``first_receipt`` marks the first such epoch of a pedestrian, ``later_receipt`` the rest;
- ``physical_constraint``: since its previous decision the pedestrian saw a gate closing or
  closed, its previous answer was rejected, or the decision was triggered by a blocked route;
- ``goal`` / ``previous_goal``: the paper's goal category of the answer's ``goal`` field
  (:data:`CATEGORY_OF_GOAL`); for a table without that column, of the free-text intent
  (:func:`goal_category`), so that any wording of the same goal is the same goal.

The pooled functions compute the paper's numbers: goal revisions against urgency change with
risk ratios (58.6 % vs 4.3 %, RR 12.27-14.37 over thresholds 0.10-0.20), cumulative revision
probabilities by stimulus class (Fig. 6 right), first vs later receipt (37.6 % vs 6.3 %),
goal retention (0.982 threat avoidance, 0.931 known exit; none returned to ordinary activity)
and the response to a first shout without threat evidence (311 pedestrians: 92.0 % higher
urgency, 81.7 % unsure, 1 danger).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

ORDINARY = "ordinary activity"
THREAT_AVOIDANCE = "threat avoidance"
EXIT_SEEKING = "exit seeking"
FOLLOWING = "following others"
OTHER = "other"
GOAL_CATEGORIES = (ORDINARY, THREAT_AVOIDANCE, EXIT_SEEKING, FOLLOWING, OTHER)

CATEGORY_OF_GOAL: dict[str, str] = {
    "tour": ORDINARY,
    "observe": ORDINARY,
    "explore": ORDINARY,
    "seek_exit": EXIT_SEEKING,
    "follow_others": FOLLOWING,
    "escape": THREAT_AVOIDANCE,
}
"""The paper's goal category of each value of the answer's ``goal`` field."""

_GOAL_WORDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        FOLLOWING,
        re.compile(r"\bfollow|\bherd|\bjoin\b|\bwith (the )?(crowd|others|group)\b"),
    ),
    (
        THREAT_AVOIDANCE,
        re.compile(
            r"escap|\bflee|\bfled\b|\bavoid|\baway\b|\bevad|\bhide|\bhiding|\bthreat|"
            r"\bdanger|\bsafe|\bsafety|\brun\b|\brunning\b|\battacker|\barmed|\bshooter"
        ),
    ),
    (
        EXIT_SEEKING,
        re.compile(
            r"\bexit|\bgate|\bleave|\bleaving|\bway out\b|\bget out|\bevacuat|\bopening"
        ),
    ),
    (
        ORDINARY,
        re.compile(
            r"\btour|\bexplor|\bstroll|\bwander|\bwalk|\bsightsee|\bobserv|\blook|"
            r"\bcontinu|\bwait|\brelax|\benjoy|\bvisit|\bbrows|\broam|\bnormal"
        ),
    ),
)


def goal_category(intent: str | None) -> str:
    """The goal category of a free-text intent, whatever its wording, case or punctuation.

    Categories (first match wins): following others; threat avoidance (escape, flee, away
    from the threat...); exit seeking (an exit, a gate, leaving...); ordinary activity (tour,
    explore, stroll, observe...); ``other``. ``seek_exit``, ``Seek exit!`` and "head for the
    nearest exit" are all exit seeking.

    Args:
        intent: The intent text (``None`` or empty: ``other``).

    Returns:
        One of :data:`GOAL_CATEGORIES`.
    """
    text = re.sub(r"[_\-]+", " ", str(intent or "")).lower()
    for category, words in _GOAL_WORDS:
        if words.search(text):
            return category
    return OTHER


def _flag(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series(False, index=frame.index)
    return frame[column].fillna(False).astype(bool)


def decision_epochs(
    decisions: pd.DataFrame, events: pd.DataFrame, observations: pd.DataFrame
) -> pd.DataFrame:
    """One run's decisions after the initial ones, with their stimuli and previous goal.

    Args:
        decisions: The run's ``decisions`` table (all of them, the initial ones included).
        events: Its ``events`` table (``exit_info_received``).
        observations: Its ``opening_observations`` table (gates seen closing or closed).

    Returns:
        The decisions after each pedestrian's first, in request order per pedestrian, with
        ``previous_urgency, urgency_change, previous_situation, goal, previous_goal,
        new_direct_evidence, peer_information, first_receipt, later_receipt,
        physical_constraint`` (see the module docstring).
    """
    ordered = decisions.sort_values(
        ["agent_id", "request_step", "applied_step"], kind="stable"
    ).copy()
    if "goal" in ordered.columns:
        ordered["goal"] = ordered["goal"].map(CATEGORY_OF_GOAL).fillna(OTHER)
    else:  # a run recorded before answers named their goal's category
        ordered["goal"] = ordered["intent"].map(goal_category)
    by_agent = ordered.groupby("agent_id", sort=False)
    ordered["previous_urgency"] = by_agent["urgency"].shift()
    ordered["previous_situation"] = by_agent["situation"].shift()
    ordered["previous_goal"] = by_agent["goal"].shift()
    ordered["previous_request_step"] = by_agent["request_step"].shift()
    sees = _flag(ordered, "sees_threat")
    ordered["previous_sees_threat"] = (
        sees.groupby(ordered["agent_id"]).shift().fillna(False).astype(bool)
    )
    accepted = (
        ordered["accepted"].fillna(True).astype(bool)
        if "accepted" in ordered.columns
        else pd.Series(True, index=ordered.index)
    )
    ordered["previous_rejected"] = ~accepted.groupby(
        ordered["agent_id"]
    ).shift().fillna(True).astype(bool)
    epochs = ordered[ordered["previous_request_step"].notna()].copy()
    epochs["urgency_change"] = (epochs["urgency"] - epochs["previous_urgency"]).abs()
    epochs["new_direct_evidence"] = sees[epochs.index] & ~epochs["previous_sees_threat"]
    received = events[events["event"] == "exit_info_received"]
    first_told = received.groupby("agent_id")["step"].min()
    told_by_now = epochs["agent_id"].map(first_told) <= epochs["request_step"]
    heard = epochs["heard_shouts"].fillna(0) > 0
    epochs["peer_information"] = heard | told_by_now.fillna(False)
    first_peer = (
        epochs[epochs["peer_information"]]
        .groupby("agent_id")["request_step"]
        .transform("min")
    )
    epochs["first_receipt"] = False
    epochs.loc[first_peer.index, "first_receipt"] = (
        epochs.loc[first_peer.index, "request_step"] == first_peer
    )
    epochs["later_receipt"] = epochs["peer_information"] & ~epochs["first_receipt"]
    closing = observations[
        (observations["kind"] == "gate") & (observations["state"] != "open")
    ]
    saw_closure = np.zeros(len(epochs), dtype=bool)
    for k, (agent, low, high) in enumerate(
        zip(
            epochs["agent_id"],
            epochs["previous_request_step"],
            epochs["request_step"],
            strict=True,
        )
    ):
        steps = closing.loc[closing["agent_id"] == agent, "step"]
        saw_closure[k] = bool(((steps > low) & (steps <= high)).any())
    epochs["physical_constraint"] = (
        saw_closure
        | epochs["previous_rejected"].to_numpy()
        | (epochs["trigger"] == "blocked").to_numpy()
    )
    return epochs.drop(
        columns=["previous_request_step", "previous_sees_threat", "previous_rejected"]
    )


# ----------------------------------------------------------------- pooled results
def _is_goal(epochs: pd.DataFrame) -> pd.Series:
    return epochs["revision_level"] == "goal"


def urgency_goal_revisions(
    epochs: pd.DataFrame, thresholds: Sequence[float] = (0.10, 0.15, 0.20)
) -> pd.DataFrame:
    """Goal-revision rate with a large vs a small urgency change, and their risk ratio.

    Args:
        epochs: Pooled :func:`decision_epochs` rows.
        thresholds: Absolute urgency changes splitting large (``>=``) from small.

    Returns:
        One row per threshold: ``threshold, n_large, goal_large, rate_large, n_small,
        goal_small, rate_small, risk_ratio``.
    """
    rows = []
    goal = _is_goal(epochs)
    change = epochs["urgency_change"]
    for threshold in thresholds:
        large = change >= threshold - 1e-12
        small = change < threshold - 1e-12
        n_large, n_small = int(large.sum()), int(small.sum())
        g_large, g_small = int((goal & large).sum()), int((goal & small).sum())
        rate_large = g_large / n_large if n_large else np.nan
        rate_small = g_small / n_small if n_small else np.nan
        rows.append(
            {
                "threshold": threshold,
                "n_large": n_large,
                "goal_large": g_large,
                "rate_large": rate_large,
                "n_small": n_small,
                "goal_small": g_small,
                "rate_small": rate_small,
                "risk_ratio": rate_large / rate_small if rate_small else np.nan,
            }
        )
    return pd.DataFrame(rows)


STIMULUS_CLASSES = (
    "urgency change >= 0.15",
    "urgency change < 0.15",
    "new direct threat evidence",
    "first peer information",
    "later peer information",
    "physical constraint",
)
"""The six stimulus classes of Fig. 6 (right), as this package defines them."""


def stimulus_masks(epochs: pd.DataFrame) -> dict[str, pd.Series]:
    """Each of :data:`STIMULUS_CLASSES` as a mask over ``epochs`` (an epoch may be in several)."""
    change = epochs["urgency_change"]
    return {
        STIMULUS_CLASSES[0]: change >= 0.15 - 1e-12,
        STIMULUS_CLASSES[1]: change < 0.15 - 1e-12,
        STIMULUS_CLASSES[2]: epochs["new_direct_evidence"].astype(bool),
        STIMULUS_CLASSES[3]: epochs["first_receipt"].astype(bool),
        STIMULUS_CLASSES[4]: epochs["later_receipt"].astype(bool),
        STIMULUS_CLASSES[5]: epochs["physical_constraint"].astype(bool),
    }


def stimulus_revisions(epochs: pd.DataFrame) -> pd.DataFrame:
    """Cumulative revision probabilities per stimulus class (paper Fig. 6, right).

    Returns:
        One row per class: ``stimulus, epochs, goal`` (share with a goal revision),
        ``plan_or_above``, ``any_revision`` (goal, plan or execution).
    """
    level = epochs["revision_level"]
    hits = {
        "goal": level == "goal",
        "plan_or_above": level.isin(["goal", "plan"]),
        "any_revision": level.isin(["goal", "plan", "execution"]),
    }
    rows = []
    for name, mask in stimulus_masks(epochs).items():
        n = int(mask.sum())
        row: dict[str, object] = {"stimulus": name, "epochs": n}
        for column, hit in hits.items():
            row[column] = float((hit & mask).sum()) / n if n else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def goal_retention(epochs: pd.DataFrame) -> pd.DataFrame:
    """Goal-category transitions between consecutive decisions.

    Returns:
        One row per previous category: ``previous_goal, epochs, retained`` (share keeping the
        category) and ``to_<category>`` shares.
    """
    table = pd.crosstab(epochs["previous_goal"], epochs["goal"])
    table = table.reindex(
        index=[c for c in GOAL_CATEGORIES if c in table.index],
        columns=list(GOAL_CATEGORIES),
        fill_value=0,
    )
    totals = table.sum(axis=1)
    out = pd.DataFrame(
        {
            "epochs": totals,
            "retained": [
                table.loc[c, c] / totals[c] if totals[c] else np.nan
                for c in table.index
            ],
        },
        index=table.index,
    )
    for category in GOAL_CATEGORIES:
        out[f"to {category}"] = table[category] / totals.replace(0, np.nan)
    return out.rename_axis("previous_goal").reset_index()


def returns_to_ordinary(epochs: pd.DataFrame) -> int:
    """Pedestrians who went back to ordinary activity after an evacuation-related goal."""
    left = epochs["previous_goal"].isin([THREAT_AVOIDANCE, EXIT_SEEKING, FOLLOWING])
    back = left & (epochs["goal"] == ORDINARY)
    keys = [c for c in ("seed", "composition", "block", "agent_id") if c in epochs]
    return int(epochs.loc[back, keys].drop_duplicates().shape[0])


def shout_response(epochs: pd.DataFrame, keys: Sequence[str]) -> dict[str, float]:
    """Response to the first decision containing a shout, without any threat evidence.

    Per pedestrian, its first evaluated decision whose input holds a heard shout; kept when
    the previous appraisal was ``normal`` and the decision had neither direct nor remembered
    threat evidence (paper: 311 pedestrians, 286 = 92.0 % reported higher urgency than in the
    preceding decision, 254 = 81.7 % unsure, 1 danger).

    Args:
        epochs: Pooled :func:`decision_epochs` rows (with ``remembered_threat``).
        keys: Columns naming a pedestrian across runs.

    Returns:
        ``pedestrians, higher_urgency, higher_urgency_share, unsure, unsure_share, danger``.
    """
    with_shout = epochs[epochs["heard_shouts"].fillna(0) > 0]
    first = with_shout.sort_values("request_step", kind="stable").drop_duplicates(
        list(keys)
    )
    kept = first[
        (first["previous_situation"] == "normal")
        & ~first["sees_threat"].astype(bool)
        & ~first["remembered_threat"].astype(bool)
    ]
    n = len(kept)
    higher = int((kept["urgency"] > kept["previous_urgency"] + 1e-12).sum())
    unsure = int((kept["situation"] == "unsure").sum())
    return {
        "pedestrians": n,
        "higher_urgency": higher,
        "higher_urgency_share": higher / n if n else np.nan,
        "unsure": unsure,
        "unsure_share": unsure / n if n else np.nan,
        "danger": int((kept["situation"] == "danger").sum()),
    }
