"""The trajectory app's page rendered in two browser sessions (Solara kernel contexts), no browser.

Importing ``solara.server.starlette`` makes Solara keep reactive variables per kernel context,
as ``solara run`` does; each test session is a context of its own.
"""

from __future__ import annotations

import ipyvuetify as v
import ipywidgets
import pytest
import solara
import solara.server.starlette  # per-session reactive state, as under solara run
from solara.server import kernel, kernel_context

from mesa_llm_mobility.trajectory.app import components
from mesa_llm_mobility.trajectory.app.session import (
    SessionSettings,
    TrajectorySession,
    synthetic_session,
)
from mesa_llm_mobility.trajectory.app.views import individual_scores
from mesa_llm_mobility.trajectory.metrics import METRICS, evaluate
from mesa_llm_mobility.trajectory.realism import RealismError, day_scores

SMALL = SessionSettings(individuals=12, weeks=2, hold_out=3, seed=4)


@pytest.fixture
def small_page(monkeypatch):
    """The page opens the small city; each opened session is counted."""
    opened = []

    def open_small(path, settings):
        assert path == "" and settings == SessionSettings()
        session = synthetic_session(SMALL)
        opened.append(session)
        return session

    monkeypatch.setattr(components, "open_session", open_small)
    monkeypatch.delenv("MLM_APP_RUN", raising=False)
    monkeypatch.delenv("MLM_APP_HISTORY", raising=False)
    return opened


def _context(name: str) -> kernel_context.VirtualKernelContext:
    return kernel_context.VirtualKernelContext(
        id=name, kernel=kernel.Kernel(), session_id=f"session-{name}"
    )


def _images(rc) -> dict[str, bytes]:
    found = rc.find(ipywidgets.Image).widgets
    return {
        next(c for c in w._dom_classes if c.startswith("mlm-")): bytes(w.value)
        for w in found
    }


def _tables(rc) -> list[str]:
    return [w.unsafe_innerHTML for w in rc.find(solara.widgets.HTML).widgets]


def test_each_session_has_its_own_data_and_selection(small_page):
    first, second = _context("a"), _context("b")
    with first:
        _, page_a = solara.render(components.Page(), handle_error=False)
        select = page_a.find(v.Select, label="Individual").widget
        session = small_page[0]
        assert select.items == session.individuals() and select.v_model == 0
        shown = _images(page_a)
        assert set(shown) == {"mlm-traj-map", "mlm-traj-timeline"}
        select.v_model = session.individuals()[2]  # the user picks another individual
        assert components.selected_individual.value == session.individuals()[2]
        changed = _images(page_a)
        assert all(changed[name] != shown[name] for name in shown)
    with second:
        _, page_b = solara.render(components.Page(), handle_error=False)
        assert len(small_page) == 2 and small_page[1] is not small_page[0]
        assert components.selected_individual.value is None
        assert page_b.find(v.Select, label="Individual").widget.v_model == 0
        assert _images(page_b) == shown  # the first individual, as drawn first in "a"
    with first:
        assert components.selected_individual.value == session.individuals()[2]


def test_the_metric_table_shows_evaluates_values(small_page):
    with _context("metrics"):
        _, page = solara.render(components.Page(), handle_error=False)
        session = small_page[0]
        table = next(t for t in _tables(page) if "all individuals" in t)
        expected = evaluate(session.held_out, session.generated)
        for name in METRICS:
            assert name in table
            assert f"{round(expected[name], 4):g}"[:6] in table, (name, expected[name])


def test_day_scores_are_the_detectors_for_the_selected_individual(small_page):
    with _context("scores"):
        _, page = solara.render(components.Page(), handle_error=False)
        session = small_page[0]
        agent = session.individuals()[1]
        page.find(v.Select, label="Individual").widget.v_model = agent
        detector = day_scores(session.real, session.generated, seed=0)
        mine = detector[detector["agent_id"] == agent]
        shown = individual_scores(session, agent)
        assert list(shown["date"]) == sorted(str(d) for d in mine["day"])
        assert list(shown["percentile"]) == list(mine.sort_values("day")["percentile"])
        table = next(t for t in _tables(page) if "attribution" in t)
        assert all(date in table for date in shown["date"])


def test_a_bad_path_shows_one_error_line(monkeypatch, tmp_path):
    monkeypatch.setenv("MLM_APP_RUN", str(tmp_path / "nowhere"))
    assert components.launch_path() == str(tmp_path / "nowhere")
    with _context("bad"):
        _, page = solara.render(components.Page(), handle_error=False)
        error = page.find(v.Alert).widget
        assert "nowhere: no such run directory or history" in error.children[0]


def test_launch_path_takes_a_run_or_a_history(monkeypatch):
    monkeypatch.delenv("MLM_APP_RUN", raising=False)
    monkeypatch.setenv("MLM_APP_HISTORY", "data/")
    assert components.launch_path() == "data/"
    monkeypatch.delenv("MLM_APP_HISTORY")
    assert components.launch_path() == ""


def test_a_session_the_detector_refuses_still_shows_its_days(small_page, monkeypatch):
    def refuse(self):
        raise RealismError("generated stay points: no visits to score")

    monkeypatch.setattr(TrajectorySession, "day_scores", property(refuse))
    with _context("refused"):
        _, page = solara.render(components.Page(), handle_error=False)
        warning = page.find(v.Alert).widget
        assert warning.children[0] == (
            "no day scores: generated stay points: no visits to score"
        )
        assert set(_images(page)) == {"mlm-traj-map", "mlm-traj-timeline"}
