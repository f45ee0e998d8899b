"""A clickable map image for the apps, and where markers sit on it.

:func:`ClickableMap` shows a PNG and reports where it was clicked (as fractions of its size);
:func:`marker_fractions` says where the markers of a matplotlib map land in its image, and
:func:`marker_at` which marker a click selects. The urban and evacuation apps share them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import solara
from matplotlib.figure import Figure


@solara.component_vue("clickable_map.vue")
def ClickableMap(
    src: str, markers: str = "[]", event_click: Callable[[dict], None] | None = None
) -> None:
    """An image that reports where it was clicked (fractions of its size, from the top left).

    ``markers`` (the markers' fractions as JSON) is kept on the element as ``data-markers``, for
    tests and scripts that click a marker.
    """


def marker_fractions(figure: Figure, positions: pd.DataFrame) -> pd.DataFrame:
    """Where markers sit in the figure's image, as fractions from its top left.

    Args:
        figure: A map figure (its first axes is the map).
        positions: ``agent, x, y`` in map (data) coordinates.

    Returns:
        agent, fx, fy: fractions of the image width and height (the same at any resolution).
    """
    ax = figure.axes[0]
    if not len(positions):
        return pd.DataFrame(columns=["agent", "fx", "fy"])
    ax.apply_aspect()  # the equal aspect moves the axes box only when applied (at draw time)
    pixels = ax.transData.transform(positions[["x", "y"]].to_numpy(dtype=float))
    width, height = figure.bbox.width, figure.bbox.height
    return pd.DataFrame(
        {
            "agent": positions["agent"].to_numpy(),
            "fx": pixels[:, 0] / width,
            "fy": 1.0 - pixels[:, 1] / height,
        }
    )


def marker_at(
    markers: pd.DataFrame, fx: float, fy: float, figure: Figure, radius_px: float = 12.0
) -> str | None:
    """The agent whose marker is nearest to a click, if within ``radius_px`` (figure px).

    Args:
        markers: From :func:`marker_fractions`.
        fx: Click position as a fraction of the image width (from the left).
        fy: Click position as a fraction of the image height (from the top).
        figure: The figure the markers were placed on (for its size in pixels).
        radius_px: How far from a marker a click still selects it.
    """
    if not len(markers):
        return None
    width, height = figure.bbox.width, figure.bbox.height
    dx = (markers["fx"].to_numpy() - fx) * width
    dy = (markers["fy"].to_numpy() - fy) * height
    distance = np.hypot(dx, dy)
    nearest = int(np.argmin(distance))
    return (
        str(markers["agent"].iloc[nearest]) if distance[nearest] <= radius_px else None
    )
