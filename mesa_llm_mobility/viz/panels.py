"""Small pieces the apps' panels share: brain choices, figures as PNG, tables, page style.

Also how big a figure's text is on screen (:func:`label_pixels`, :func:`smallest_text_points`):
each app sizes its figures so that their smallest text is at least :data:`LEGIBLE_PIXELS`
high in a 1,400 px wide browser window, and its tests check it.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence

import pandas as pd
import solara
from matplotlib.figure import Figure
from matplotlib.text import Text

MAP_DPI = 90
"""Resolution of the apps' figures."""

LEGIBLE_PIXELS = 10.0
"""Smallest on-screen text height (CSS pixels) the apps' figures should have."""

SIDEBAR_PX = 400
"""Width of the apps' sidebar (Solara's minimum), kept whatever its content."""

APP_CSS = f"""
/* The sidebar stays as wide as the page reserved for it: wide content (a long run path, a row
   of buttons) wraps instead of widening it over the left edge of the main panel. */
.v-navigation-drawer {{ width: {SIDEBAR_PX}px !important; max-width: {SIDEBAR_PX}px !important; }}
.v-navigation-drawer .v-card {{ overflow-wrap: anywhere; }}
.mlm-button-row {{ flex-wrap: wrap; }}
.mlm-table table {{ border-collapse: collapse; }}
.mlm-table th, .mlm-table td {{ padding: 1px 6px; vertical-align: top; }}
.mlm-table th {{ text-align: left; }}
"""
"""Style every app page adds (``solara.Style(APP_CSS)``)."""


def brain_choices() -> list[str]:
    """``"rules"``, plus the LLM brain of ``MLM_BRAIN`` when it names one."""
    choices = ["rules"]
    configured = os.environ.get("MLM_BRAIN", "")
    if configured.startswith("llm:"):
        choices.append(configured)
    return choices


def png_bytes(figure: Figure, dpi: int = MAP_DPI) -> bytes:
    """A matplotlib figure as PNG bytes at the app's resolution."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def figure_image(figure: Figure, classes: Sequence[str] = ()) -> solara.Element:
    """A matplotlib figure as a PNG that fills its panel's width (panels are resizable)."""
    return solara.Image(png_bytes(figure), width="100%", classes=list(classes))


def html_table(frame: pd.DataFrame, empty: str = "none") -> solara.Element:
    """A small escaped HTML table (no widget needed), or a note when empty.

    Headers show column names with spaces for underscores (``departure time``), so that
    headers wrap like cells do in a narrow panel; a table still wider than its panel scrolls
    sideways.
    """
    if not len(frame):
        return solara.Text(empty, style={"color": "#757575"})
    shown = frame.rename(columns=lambda name: str(name).replace("_", " "))
    return solara.HTML(
        tag="div",
        unsafe_innerHTML=shown.to_html(index=False, escape=True, border=0),
        classes=["mlm-table"],
        style="font-size: 12px; overflow-x: auto;",
    )


def field_table(row: pd.DataFrame, empty: str = "none") -> solara.Element:
    """The first row of ``row`` as a two-column ``field, value`` table (fits a narrow panel)."""
    if not len(row):
        return html_table(row, empty)
    first = row.iloc[0]
    return html_table(
        pd.DataFrame({"field": list(row.columns), "value": [str(v) for v in first]})
    )


def label_pixels(
    points: float, dpi: float, image_width: float, shown_width: float
) -> float:
    """On-screen height of ``points``-sized text in an image drawn ``shown_width`` wide.

    ``points * dpi / 72`` pixels in the image, scaled by ``shown_width / image_width``.
    """
    return points * dpi / 72.0 * shown_width / image_width


def smallest_text_points(figure: Figure) -> float:
    """The font size (points) of the smallest visible, non-empty text of ``figure``.

    Titles, axis labels, tick labels, legends and annotations all count (the figure is laid
    out first, so that tick labels have their text).
    """
    figure.draw_without_rendering()
    sizes = [
        float(text.get_fontsize())
        for text in figure.findobj(Text)
        if text.get_visible() and text.get_text().strip()
    ]
    if not sizes:
        raise ValueError("the figure has no text")
    return min(sizes)


def enlarge_small_text(figure: Figure, points: float) -> Figure:
    """Raise every text of ``figure`` smaller than ``points`` to ``points`` (tick labels too).

    For figures drawn by functions made for print (smaller type), shown in an app.
    """
    figure.draw_without_rendering()
    for ax in figure.axes:
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = axis.get_ticklabels()
            if labels and min(t.get_fontsize() for t in labels) < points:
                ax.tick_params(axis=name, labelsize=points)
    for text in figure.findobj(Text):
        if text.get_fontsize() < points:
            text.set_fontsize(points)
    return figure
