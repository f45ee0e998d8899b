"""Map labels placed without overlapping each other, inside the axes, off the lines."""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from mesa_llm_mobility.viz.labels import (
    Label,
    label_boxes,
    overlapping_pairs,
    place_labels,
)


def _axes():
    figure = Figure(figsize=(4, 3))
    FigureCanvasAgg(figure)
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    return figure, ax


def test_crowded_labels_do_not_overlap_and_stay_inside():
    _, ax = _axes()
    # a tight cluster and points at every edge and corner
    points = [
        (5, 5),
        (5.3, 5),
        (5, 5.3),
        (5.3, 5.3),
        (0, 0),
        (10, 10),
        (0, 10),
        (10, 0),
    ]
    labels = [
        Label(f"label {k}", x, y, {"fontsize": 10}) for k, (x, y) in enumerate(points)
    ]
    placed = place_labels(ax, labels)
    boxes = label_boxes(placed)
    assert overlapping_pairs(boxes) == []
    frame = ax.get_window_extent()
    for box in boxes:
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1
        assert frame.y0 <= box.y0 and box.y1 <= frame.y1
    # the same labels all right above their point do overlap (the case is a real one)
    for annotation in placed:
        annotation.xyann = (4, 4)
        annotation.set_horizontalalignment("left")
        annotation.set_verticalalignment("bottom")
    assert overlapping_pairs(label_boxes(placed))


def test_a_label_avoids_a_line_when_it_can():
    figure, ax = _axes()
    line = np.column_stack([np.linspace(5, 10, 200), np.full(200, 5.2)])  # right, above
    (annotation,) = place_labels(ax, [Label("name", 5, 5, {"fontsize": 10})], line)
    box = annotation.get_window_extent(figure.canvas.get_renderer())
    pixels = ax.transData.transform(line)
    inside = (pixels[:, 0] >= box.x0) & (pixels[:, 0] <= box.x1)
    inside &= (pixels[:, 1] >= box.y0) & (pixels[:, 1] <= box.y1)
    assert not inside.any()
    assert annotation.get_text() == "name" and annotation.xy == (5, 5)
