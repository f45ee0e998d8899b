"""The panels' shared pieces: text sizes of figures, tables that fit a narrow panel."""

from __future__ import annotations

import pandas as pd
import pytest
from matplotlib.figure import Figure

from mesa_llm_mobility.viz.panels import (
    enlarge_small_text,
    field_table,
    html_table,
    label_pixels,
    smallest_text_points,
)


def _figure(tick_size: float = 6) -> Figure:
    figure = Figure(figsize=(4, 3))
    ax = figure.subplots()
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend(fontsize=7)
    ax.set_xlabel("x", fontsize=12)
    ax.tick_params(labelsize=tick_size)
    return figure


def test_the_smallest_text_counts_tick_labels_and_legends():
    assert smallest_text_points(_figure(tick_size=6)) == 6
    assert smallest_text_points(_figure(tick_size=9)) == 7  # the legend
    with pytest.raises(ValueError, match="no text"):
        smallest_text_points(Figure())


def test_small_text_is_raised_and_larger_text_kept():
    figure = enlarge_small_text(_figure(tick_size=6), 10)
    assert smallest_text_points(figure) == 10
    assert figure.axes[0].xaxis.label.get_fontsize() == 12


def test_label_pixels_scale_with_the_shown_width():
    assert label_pixels(10, 72, 500, 500) == 10
    assert label_pixels(10, 90, 600, 300) == pytest.approx(6.25)


def test_tables_wrap_their_headers_and_one_row_becomes_fields():
    frame = pd.DataFrame({"applied_step": [3], "revision_level": ["plan"]})
    html = html_table(frame).kwargs["unsafe_innerHTML"]
    assert "applied step" in html and "applied_step" not in html
    fields = field_table(frame).kwargs["unsafe_innerHTML"]
    assert "<td>applied_step</td>" in fields and "<td>plan</td>" in fields
    assert field_table(frame.iloc[:0], "no decision").args == ("no decision",)
