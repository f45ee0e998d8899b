"""Map labels placed beside their points without covering each other.

:func:`place_labels` writes each label at one of eight places around its point (right above,
right below, left above, ... first), choosing, label after label, the place that overlaps no
label placed before it, stays inside the axes and covers the fewest drawn lines and points
(given as obstacle points). The apps' maps use it for facility names and exit names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.text import Annotation
from matplotlib.transforms import Bbox

GAP_POINTS = 4.0
"""Distance between a point and its label (points)."""

PLACES: tuple[tuple[float, float, str, str], ...] = (
    (1, 1, "left", "bottom"),  # right above
    (1, -1, "left", "top"),  # right below
    (-1, 1, "right", "bottom"),  # left above
    (-1, -1, "right", "top"),  # left below
    (0, 1.5, "center", "bottom"),  # above
    (0, -1.5, "center", "top"),  # below
    (1.5, 0, "left", "center"),  # right
    (-1.5, 0, "right", "center"),  # left
)
"""Where a label may go: offset direction (x, y, in units of the gap) and its alignment."""


@dataclass(frozen=True)
class Label:
    """A label to place.

    Attributes:
        text: What it says.
        x: Its point, in data coordinates.
        y: Its point, in data coordinates.
        style: Keyword arguments of ``ax.annotate`` (fontsize, color, weight, bbox...).
    """

    text: str
    x: float
    y: float
    style: dict[str, Any] = field(default_factory=dict)


def _overlap(a: Bbox, b: Bbox) -> float:
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(width, 0.0) * max(height, 0.0)


def _outside(box: Bbox, frame: Bbox) -> float:
    return box.width * box.height - _overlap(box, frame)


def place_labels(
    ax: Axes,
    labels: Sequence[Label],
    obstacles: np.ndarray | None = None,
    gap_points: float = GAP_POINTS,
) -> list[Annotation]:
    """Annotate ``ax`` with ``labels``, each where it covers least (see the module docstring).

    Args:
        ax: Axes whose limits and size are final (the figure has a canvas).
        labels: The labels, placed in this order (earlier ones get the better places).
        obstacles: Points (data coordinates, ``(n, 2)``) a label should not cover: samples
            along the drawn lines, markers.
        gap_points: Distance between a point and its label.

    Returns:
        The annotations, in the order of ``labels``.
    """
    figure = ax.figure
    renderer = figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    points = (
        ax.transData.transform(np.asarray(obstacles, dtype=float))
        if obstacles is not None and len(obstacles)
        else np.empty((0, 2))
    )
    placed: list[Bbox] = []
    annotations = []
    for label in labels:
        annotation = ax.annotate(
            label.text,
            (label.x, label.y),
            xytext=(0, 0),
            textcoords="offset points",
            annotation_clip=False,
            **label.style,
        )
        costs = []
        for place in PLACES:
            _move(annotation, place, gap_points)
            box = annotation.get_window_extent(renderer)
            covered = np.count_nonzero(
                (points[:, 0] >= box.x0)
                & (points[:, 0] <= box.x1)
                & (points[:, 1] >= box.y0)
                & (points[:, 1] <= box.y1)
            )
            costs.append(
                1e6 * sum(_overlap(box, other) for other in placed)
                + 1e3 * _outside(box, frame)
                + covered
            )
        _move(annotation, PLACES[int(np.argmin(costs))], gap_points)
        placed.append(annotation.get_window_extent(renderer))
        annotations.append(annotation)
    return annotations


def _move(
    annotation: Annotation, place: tuple[float, float, str, str], gap: float
) -> None:
    dx, dy, horizontal, vertical = place
    annotation.xyann = (dx * gap, dy * gap)
    annotation.set_horizontalalignment(horizontal)
    annotation.set_verticalalignment(vertical)


def label_boxes(annotations: Sequence[Annotation]) -> list[Bbox]:
    """The drawn boxes (display pixels) of placed labels, for checking they do not overlap."""
    if not annotations:
        return []
    renderer = annotations[0].figure.canvas.get_renderer()
    return [a.get_window_extent(renderer) for a in annotations]


def overlapping_pairs(boxes: Sequence[Bbox]) -> list[tuple[int, int]]:
    """Index pairs of boxes that overlap (by more than a pixel squared)."""
    return [
        (i, j)
        for i in range(len(boxes))
        for j in range(i + 1, len(boxes))
        if _overlap(boxes[i], boxes[j]) > 1.0
    ]
