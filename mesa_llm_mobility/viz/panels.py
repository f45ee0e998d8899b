"""Small pieces the apps' panels share: the brain choices, figures as PNG, escaped tables."""

from __future__ import annotations

import io
import os
from collections.abc import Sequence

import pandas as pd
import solara
from matplotlib.figure import Figure

MAP_DPI = 90
"""Resolution of the apps' figures."""


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
    """A small escaped HTML table (no widget needed), or a note when empty."""
    if not len(frame):
        return solara.Text(empty, style={"color": "#757575"})
    return solara.HTML(
        tag="div",
        unsafe_innerHTML=frame.to_html(index=False, escape=True, border=0),
        classes=["mlm-table"],
        style="font-size: 12px; overflow-x: auto;",
    )
