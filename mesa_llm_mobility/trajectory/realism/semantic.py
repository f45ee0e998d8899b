"""Individual-level detector closer to BeSTAD: H3 cells at three resolutions and POI categories.

BeSTAD (Sec. IV-C2 of the TrajGenAgent paper) clusters each individual's behaviour in a normal
period from temporal signals and multi-scale spatial semantics (OpenStreetMap context indexed on
H3 cells) and scores how a later period shifts away from those clusters. The fast proxy of
:mod:`.individual` uses square cells and no place semantics; this one (detector
``individual_h3``) takes two steps closer, with no map data:

* **multi-scale spatial familiarity on H3**: the share of a day's visits in H3 cells of
  resolutions 7, 8 and 9 (hexagons of about 5.2, 0.74 and 0.11 km2) that the individual visited
  in the normal period;
* **POI categories**: the share of the day's dwell time at POIs of each category, a POI's
  category being the activity most often done there in the real training visits (NumoSim's
  POIs carry their activity types; a POI never seen in training takes its visit's activity);

beside the temporal behaviour of :mod:`.features` (shares of six four-hour blocks at home, at an
anchor, elsewhere and travelling; first departure and last arrival). The clusters and the score
(``alignment + shift``) are :class:`~.individual.BehaviourClusters`'. It needs the ``h3``
package.
"""

from __future__ import annotations

import h3
import numpy as np
import pandas as pd

from mesa_llm_mobility.trajectory.activities import ACTIVITIES
from mesa_llm_mobility.trajectory.realism.features import absolute_day_features
from mesa_llm_mobility.trajectory.realism.frames import (
    DAY_KEY,
    MINUTES_PER_DAY,
    DetectionSplit,
)
from mesa_llm_mobility.trajectory.realism.individual import (
    OCCUPANCY_COLUMNS,
    cluster_scores,
)

H3_RESOLUTIONS = (7, 8, 9)
"""H3 resolutions of the familiarity features (coarse to fine)."""


def h3_cells(visits: pd.DataFrame, resolution: int) -> list[str]:
    """The H3 cell of every visit at ``resolution``."""
    return [
        h3.latlng_to_cell(lat, lon, resolution)
        for lat, lon in zip(
            visits["latitude"].to_numpy(float),
            visits["longitude"].to_numpy(float),
            strict=True,
        )
    ]


def poi_categories(train: pd.DataFrame) -> dict[object, str]:
    """Each training POI's category: the activity most often done there (ties: first)."""
    counts = (
        train.groupby(["poi_id", "activity"], sort=True).size().reset_index(name="n")
    )
    best = counts.sort_values("n", ascending=False, kind="stable").drop_duplicates(
        "poi_id"
    )
    return dict(zip(best["poi_id"], best["activity"], strict=True))


def semantic_vectors(
    visits: pd.DataFrame,
    familiar: dict[int, set[tuple[object, str]]],
    categories: dict[object, str],
) -> tuple[pd.DataFrame, np.ndarray]:
    """One behaviour vector per (agent, day) of ``visits``.

    Returns:
        The day keys (``agent_id, day``) and the vectors: block shares, first departure and
        last arrival (fractions of a day), H3 familiarity at each resolution, and the dwell
        shares per POI category.
    """
    frame = visits.reset_index(drop=True)
    days = absolute_day_features(frame)
    agents = frame["agent_id"].to_numpy()
    per_visit = pd.DataFrame({"agent_id": agents, "day": frame["day"]})
    for resolution in H3_RESOLUTIONS:
        cells = h3_cells(frame, resolution)
        known = familiar[resolution]
        per_visit[f"h3_{resolution}"] = [
            float((agent, cell) in known)
            for agent, cell in zip(agents, cells, strict=True)
        ]
    dwell = np.maximum(
        frame["end_minute"].to_numpy(float) - frame["start_minute"].to_numpy(float), 0.0
    )
    category = [
        categories.get(poi, activity)
        for poi, activity in zip(frame["poi_id"], frame["activity"], strict=True)
    ]
    shares = np.zeros((len(frame), len(ACTIVITIES)))
    shares[np.arange(len(frame)), [ACTIVITIES.index(name) for name in category]] = (
        dwell / MINUTES_PER_DAY
    )
    for index, name in enumerate(ACTIVITIES):
        per_visit[f"category_{name}"] = shares[:, index]
    grouped = per_visit.groupby(list(DAY_KEY), sort=False)
    familiarity = grouped[[f"h3_{r}" for r in H3_RESOLUTIONS]].mean()
    dwell_shares = grouped[[f"category_{name}" for name in ACTIVITIES]].sum()
    merged = days.merge(
        familiarity.join(dwell_shares).reset_index(), on=list(DAY_KEY), how="left"
    )
    vectors = np.hstack(
        [
            merged[list(OCCUPANCY_COLUMNS)].to_numpy(float),
            np.column_stack(
                [
                    merged["first_departure"] / MINUTES_PER_DAY,
                    merged["last_arrival"] / MINUTES_PER_DAY,
                ]
            ),
            merged[[f"h3_{r}" for r in H3_RESOLUTIONS]].to_numpy(float),
            np.clip(
                merged[[f"category_{name}" for name in ACTIVITIES]].to_numpy(float),
                0.0,
                1.0,
            ),
        ]
    )
    return merged[list(DAY_KEY)], np.nan_to_num(vectors)


def score_split(split: DetectionSplit) -> pd.DataFrame:
    """Score every compared individual's real evaluation days and generated days.

    Returns:
        :data:`~.individual.INDIVIDUAL_SCORE_COLUMNS`, one row per individual and source.
    """
    train = split.train
    familiar = {
        resolution: set(
            zip(train["agent_id"], h3_cells(train, resolution), strict=True)
        )
        for resolution in H3_RESOLUTIONS
    }
    categories = poi_categories(train)
    keys, vectors = {}, {}
    for name, visits in (
        ("normal", train),
        ("real", split.real),
        ("generated", split.generated),
    ):
        keys[name], vectors[name] = semantic_vectors(visits, familiar, categories)
    rows_of = {name: keys[name].groupby("agent_id", sort=True).indices for name in keys}
    return cluster_scores(vectors, rows_of, split.seed)
