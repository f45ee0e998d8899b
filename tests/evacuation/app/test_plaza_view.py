"""The plaza map of the evacuation app: legible, exits named inside the plaza, no title."""

from __future__ import annotations

from mesa_llm_mobility.evacuation.app.plaza_view import PLAZA_TEXT_POINTS, draw_plaza
from mesa_llm_mobility.evacuation.app.sources import AppModel, LiveSource
from mesa_llm_mobility.viz.labels import label_boxes, overlapping_pairs
from mesa_llm_mobility.viz.panels import smallest_text_points


def test_the_map_names_every_opening_inside_the_plaza_legibly():
    model = AppModel(composition="H", block=2)
    for _ in range(30):
        model.step()
    figure = draw_plaza(LiveSource(model).frame(), model.plaza, selected=1)
    ax = figure.axes[0]
    assert ax.get_title() == ""  # the app writes the clock once, above the map
    names = [t for t in ax.texts if t.get_gid() == "opening"]
    assert sorted(t.get_text() for t in names) == sorted(
        o.opening_id for o in model.plaza.openings
    )
    boxes = label_boxes(names)
    assert overlapping_pairs(boxes) == []
    frame = ax.get_window_extent()
    for text, box in zip(names, boxes, strict=True):
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1, text.get_text()
        assert frame.y0 <= box.y0 and box.y1 <= frame.y1, text.get_text()
    assert smallest_text_points(figure) >= PLAZA_TEXT_POINTS
    legend = ax.get_legend()
    assert {t.get_text() for t in legend.get_texts()} >= {"calm", "high fear", "killed"}
    # the legend sits under the plaza, not over it
    legend_box = legend.get_window_extent(figure.canvas.get_renderer())
    assert legend_box.y1 <= frame.y0 + 1
    model.close()
