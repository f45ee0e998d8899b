"""The trajectory app in a real browser: ``solara run examples/trajgen_app.py`` by Playwright.

Same set-up as the urban app's browser test (Debian's chromium, Solara's assets installed by
``mlm viz install-assets``): every request of the page must stay on 127.0.0.1, and the page
must render its three views (map, timeline, metric table) with the day scores.
"""

from __future__ import annotations

import pytest

from mesa_llm_mobility.trajectory.staypoints import write_numosim
from mesa_llm_mobility.trajectory.synth import synthesize
from tests.trajectory.runs import generation_config, run_generation
from tests.urban.app.test_browser import (  # the shared browser set-up (and conftest's browser)
    ROOT,
    _clipped,
    _control_label,
    _open,
    _overflowing,
    _screenshot,
    _wait_text_change,
    serve_app,
)

pytestmark = pytest.mark.slow  # a server and a browser: 1-4 min a test

APP = ROOT / "examples" / "trajgen_app.py"
VIEWS = "img.mlm-traj-map"


def _src(page, selector: str) -> str:
    return page.locator(selector).get_attribute("src")


def _wait_src_change(page, selector: str, old: str) -> str:
    page.wait_for_function(
        "([sel, old]) => { const i = document.querySelector(sel); return i && i.src !== old; }",
        arg=[selector, old],
        timeout=60_000,
    )
    return _src(page, selector)


def _assert_three_views(page) -> None:
    page.wait_for_selector("img.mlm-traj-timeline", timeout=60_000)
    metrics = page.locator(".mlm-traj-metrics table").inner_text()
    assert "all individuals" in metrics and "this individual" in metrics
    for name in ("Distance", "G-radius", "Duration", "DailyLoc", "Transition"):
        assert name in metrics
    scores = page.locator(".mlm-traj-scores table").inner_text()
    assert "attribution" in scores and "percentile" in scores
    # at 1,400 px the day-score table fits its column: the percentile column is whole
    assert _overflowing(page, ".mlm-traj-score-table .mlm-table") == []
    assert _clipped(page, ".mlm-table") == []
    column = page.locator(".mlm-traj-scores").bounding_box()
    header = page.locator(".mlm-traj-score-table th", has_text="percentile")
    right = header.bounding_box()["x"] + header.bounding_box()["width"]
    assert right <= column["x"] + column["width"] + 1, (right, column)
    for selector in ("img.mlm-traj-map", "img.mlm-traj-timeline"):
        width = page.locator(selector).evaluate("img => img.naturalWidth")
        assert width > 500, (selector, width)


def test_synthetic_city_picks_an_individual_and_keeps_one_session_per_visitor(
    browser, tmp_path
):
    with serve_app(log=tmp_path / "solara.log", app=APP) as url:
        page, failed = _open(browser, url, VIEWS)
        _assert_three_views(page)
        assert "30 individuals" in page.locator(".mlm-traj-summary").inner_text()
        assert _control_label(page, "individuals") == "Synthetic individuals: 30"
        assert _control_label(page, "hold_out") == "Held-out days: 7"
        assert _control_label(page, "temperature") == "LLM temperature: 0.7"
        selection = page.locator(".mlm-individual-select .v-select__selection")
        assert selection.inner_text().strip() == "0"
        map_src, timeline_src = _src(page, VIEWS), _src(page, "img.mlm-traj-timeline")
        scores = page.locator(".mlm-traj-scores table").inner_text()
        page.locator(".mlm-individual-select .v-select__slot").click()
        page.locator(".menuable__content__active .v-list-item").nth(3).click()
        assert _wait_text_change(selection, "0").strip() == "3"
        assert _wait_src_change(page, VIEWS, map_src) != map_src
        timeline = "img.mlm-traj-timeline"
        assert _wait_src_change(page, timeline, timeline_src) != timeline_src
        assert _wait_text_change(page.locator(".mlm-traj-scores table"), scores)
        other, other_failed = _open(
            browser, url, VIEWS
        )  # another visitor: its own state
        other_selection = other.locator(".mlm-individual-select .v-select__selection")
        assert other_selection.inner_text().strip() == "0"
        other.close()
        assert selection.inner_text().strip() == "3"
        page.wait_for_timeout(500)
        shot = _screenshot(page, tmp_path, "trajgen_app.png")
        assert shot.stat().st_size > 10_000
        page.locator("img.mlm-traj-timeline").scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        _screenshot(page, tmp_path, "trajgen_timeline.png")
        assert not failed, failed
        assert not other_failed, other_failed


def test_a_saved_generation_run_opens_with_its_days(browser, tmp_path):
    city = synthesize(10, 2, seed=1)
    write_numosim(city.stays, tmp_path / "data")
    run = run_generation(
        tmp_path / "gen.parquet", generation_config(tmp_path / "data", hold_out=2)
    ).run
    with serve_app("--run", str(run.path), log=tmp_path / "solara.log", app=APP) as url:
        page, failed = _open(browser, url, VIEWS)
        _assert_three_views(page)
        assert page.locator(".mlm-traj-source").inner_text() == f"run {run.path}"
        summary = page.locator(".mlm-traj-summary").inner_text()
        assert (
            summary.startswith("10 individuals;") and "20 generated by rules" in summary
        )
        assert not failed, failed
