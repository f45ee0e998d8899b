"""The evacuation app in a real browser: ``solara run examples/evacuation_app.py`` by Playwright.

Same set-up as the urban app's browser test (Debian's chromium, Solara's assets installed by
``mlm viz install-assets``, a 1,400 x 900 window): every request of the page must stay on
127.0.0.1.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright import sync_api as playwright

from mesa_llm_mobility.evacuation.app.components import CHART_TEXT_POINTS, TAB_NAMES
from mesa_llm_mobility.evacuation.app.plaza_view import PLAZA_TEXT_POINTS
from mesa_llm_mobility.viz.panels import LEGIBLE_PIXELS
from tests.evacuation.runs import run_evacuation
from tests.urban.app.test_browser import (  # the shared browser set-up
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    _clipped,
    _control_label,
    _legible_images,
    _open,
    _overflowing,
    _play_then_pause,
    _require_browser_and_assets,
    _screenshot,
    _slider_then_reset,
    _wait_text_change,
    serve_app,
)

pytestmark = pytest.mark.slow  # a server and a browser: 1-4 min a test

APP = ROOT / "examples" / "evacuation_app.py"
CLOCK = re.compile(r"^t = \d+\.\d s")
"""The app's one clock, in seconds."""


@pytest.fixture(scope="module")
def browser():
    _require_browser_and_assets()
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _click_marker(page, image, avoid_prefix: str) -> None:
    markers = json.loads(image.get_attribute("data-markers"))
    target = next(
        m for m in markers if not avoid_prefix.startswith(f"Pedestrian {m['agent']} ")
    )
    box = image.bounding_box()
    image.click(
        position={"x": target["fx"] * box["width"], "y": target["fy"] * box["height"]}
    )


def _one_clock_in_seconds(page) -> None:
    """The clock is written once, in seconds; no step count anywhere."""
    assert page.get_by_text(CLOCK).count() == 1
    sidebar = page.locator(".v-navigation-drawer").inner_text()
    for line in sidebar.splitlines():
        if line.startswith("Time"):
            assert re.fullmatch(r"Time: \d+\.\d s", line), line


def _wrapped_not_clipped(page, selector: str) -> None:
    """``selector``'s text fits its box by wrapping, and would not fit on unwrapped lines."""
    assert _overflowing(page, selector) == [], selector
    unwrapped = page.eval_on_selector(
        selector,
        """e => { const old = e.style.whiteSpace; e.style.whiteSpace = 'pre';
                  const wide = e.scrollWidth > e.clientWidth + 1;
                  e.style.whiteSpace = old; return wide; }""",
    )
    assert unwrapped, f"{selector}: the case needs no wrapping"


def test_live_app_steps_plays_inspects_and_keeps_one_model_per_session(
    browser, tmp_path
):
    with serve_app(log=tmp_path / "solara.log", app=APP) as url:
        page, failed = _open(browser, url, ".mlm-evac-clock")
        clock = page.locator(".mlm-evac-clock")
        assert clock.inner_text().startswith("t = 0.0 s: 11 in the plaza")
        tabs = [t.inner_text().strip().lower() for t in page.get_by_role("tab").all()]
        assert tabs == [name.lower() for name in TAB_NAMES]
        # every slider shows its value
        assert _control_label(page, "block") == "Block (0: none): 1"
        assert _control_label(page, "temperature") == "LLM temperature: 0.20"
        assert _control_label(page, "seed") == "Seed: 0"
        assert _control_label(page, "seconds") == "Seconds per step: 1 s"
        for _ in range(2):  # one second a click
            before = clock.inner_text()
            page.get_by_role("button", name="Step", exact=True).click()
            _wait_text_change(clock, before)
        assert clock.inner_text().startswith("t = 2.0 s")
        _one_clock_in_seconds(page)
        other, _ = _open(
            browser, url, ".mlm-evac-clock"
        )  # another visitor: its own model
        assert other.locator(".mlm-evac-clock").inner_text().startswith("t = 0.0 s")
        other.close()
        image = page.locator("img.mlm-map-image")
        _click_marker(page, image, "")
        page.wait_for_selector(".mlm-ped-state", timeout=30_000)
        state = page.locator(".mlm-ped-state").inner_text()
        assert state.startswith("Pedestrian ") and "fear" in state
        # the last decision, all its fields, and the memory: wrapped, nothing cut off
        decision = page.locator(".mlm-last-decision").inner_text()
        assert "applied_step" in decision and "revision_level" in decision
        assert _overflowing(page, ".mlm-last-decision .mlm-table") == []
        _wrapped_not_clipped(page, ".mlm-memory")
        assert _clipped(page, ".mlm-inspector .mlm-table, .mlm-inspector pre") == []
        page.get_by_text("ASCII view and prompt, as sent").click()
        prompt = page.locator(".mlm-prompt").inner_text()
        assert "[system]" in prompt and "@" in prompt and "R1:" in prompt
        assert _clipped(page, ".mlm-prompt") == []  # its grid scrolls, whole lines
        _click_marker(page, image, state)  # another pedestrian: the inspector follows
        assert _wait_text_change(page.locator(".mlm-ped-state"), state).startswith(
            "Pedestrian "
        )
        # legend and exit names legible at 1,400 px
        plaza = _legible_images(page, "img.mlm-map-image", PLAZA_TEXT_POINTS)
        assert min(plaza) >= LEGIBLE_PIXELS, plaza
        _play_then_pause(page, clock)
        _one_clock_in_seconds(page)
        clock.scroll_into_view_if_needed()
        shot = _screenshot(page, tmp_path, "evacuation_live.png")
        assert shot.stat().st_size > 10_000
        # a slider's new value shows at once; Reset builds the model with it
        reset = _slider_then_reset(page, "block", "Block (0: none): 2", clock)
        assert reset.startswith("t = 0.0 s")
        page.get_by_role("tab", name=TAB_NAMES[1]).click()  # the live plots
        page.wait_for_selector("img.mlm-outcomes", timeout=30_000)
        assert page.locator("img.mlm-fear").count() == 1
        page.wait_for_timeout(1000)  # the tab's slide transition
        plots = _legible_images(
            page, "img.mlm-outcomes, img.mlm-fear", CHART_TEXT_POINTS
        )
        assert min(plots) >= LEGIBLE_PIXELS, plots
        _screenshot(page, tmp_path, "evacuation_plots.png")
        assert not failed, failed


def test_saved_run_replays_with_the_time_slider_and_plays(browser, tmp_path):
    run = run_evacuation(
        tmp_path / "evac", composition="H", block=2, time_limit_s=20
    ).run
    with serve_app("--run", str(run.path), log=tmp_path / "solara.log", app=APP) as url:
        page, failed = _open(browser, url, ".mlm-evac-clock")
        clock = page.locator(".mlm-evac-clock")
        assert clock.inner_text().startswith("t = 0.0 s")
        tabs = [t.inner_text().strip().lower() for t in page.get_by_role("tab").all()]
        assert tabs == [name.lower() for name in TAB_NAMES]
        page.get_by_role("button", name="+3 s").click()
        assert _wait_text_change(clock, clock.inner_text()).startswith("t = 3.0 s")
        page.get_by_text("Time: 3.0 s").wait_for(timeout=30_000)  # the slider's value
        _one_clock_in_seconds(page)
        page.locator(".mlm-pedestrian-select .v-select__slot").click()
        page.locator(".menuable__content__active .v-list-item").nth(2).click()
        page.wait_for_selector(".mlm-ped-state", timeout=30_000)
        assert "run outcome" in page.locator(".mlm-ped-state").inner_text()
        _screenshot(page, tmp_path, "evacuation_replay.png")
        _play_then_pause(page, clock)
        assert not clock.inner_text().startswith("t = 3.0 s")
        _one_clock_in_seconds(page)
        assert not failed, failed
