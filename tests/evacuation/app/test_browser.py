"""The evacuation app in a real browser: ``solara run examples/evacuation_app.py`` by Playwright.

Same set-up as the urban app's browser test (Debian's chromium, Solara's assets installed by
``mlm viz install-assets``): every request of the page must stay on 127.0.0.1.
"""

from __future__ import annotations

import json

import pytest
from playwright import sync_api as playwright

from tests.evacuation.runs import run_evacuation
from tests.urban.app.test_browser import (  # the shared browser set-up
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    _open,
    _require_browser_and_assets,
    _screenshot,
    _wait_text_change,
    serve_app,
)

APP = ROOT / "examples" / "evacuation_app.py"


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


def test_live_app_steps_plays_inspects_and_keeps_one_model_per_session(
    browser, tmp_path
):
    with serve_app(log=tmp_path / "solara.log", app=APP) as url:
        page, failed = _open(browser, url, ".mlm-evac-clock")
        clock = page.locator(".mlm-evac-clock")
        assert clock.inner_text().startswith("t = 0.0 s: 11 in the plaza")
        for _ in range(2):  # render interval 3: one second a click
            before = clock.inner_text()
            page.get_by_role("button", name="Step", exact=True).click()
            _wait_text_change(clock, before)
        assert clock.inner_text().startswith("t = 2.0 s")
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
        assert "applied_step" in page.locator(".mlm-last-decision").inner_text()
        page.get_by_text("ASCII view and prompt, as sent").click()
        prompt = page.locator(".mlm-prompt").inner_text()
        assert "[system]" in prompt and "@" in prompt and "R1:" in prompt
        _click_marker(page, image, state)  # another pedestrian: the inspector follows
        assert _wait_text_change(page.locator(".mlm-ped-state"), state).startswith(
            "Pedestrian "
        )
        page.get_by_role("button", name="▶").click()  # play a little, then pause
        _wait_text_change(clock, clock.inner_text(), timeout_s=60)
        page.get_by_role("button", name="❚❚").click()
        shot = _screenshot(page, tmp_path, "evacuation_live.png")
        assert shot.stat().st_size > 10_000
        page.get_by_role("tab", name="Page 1").click()  # the live plots
        page.wait_for_selector("img.mlm-outcomes", timeout=30_000)
        assert page.locator("img.mlm-fear").count() == 1
        _screenshot(page, tmp_path, "evacuation_plots.png")
        assert not failed, failed


def test_saved_run_replays_with_the_step_slider(browser, tmp_path):
    run = run_evacuation(
        tmp_path / "evac", composition="H", block=2, time_limit_s=20
    ).run
    with serve_app("--run", str(run.path), log=tmp_path / "solara.log", app=APP) as url:
        page, failed = _open(browser, url, ".mlm-evac-clock")
        clock = page.locator(".mlm-evac-clock")
        assert clock.inner_text().startswith("t = 0.0 s")
        page.get_by_role("button", name="+3 s").click()
        assert _wait_text_change(clock, clock.inner_text()).startswith("t = 3.0 s")
        page.locator(".mlm-pedestrian-select .v-select__slot").click()
        page.locator(".menuable__content__active .v-list-item").nth(2).click()
        page.wait_for_selector(".mlm-ped-state", timeout=30_000)
        assert "run outcome" in page.locator(".mlm-ped-state").inner_text()
        _screenshot(page, tmp_path, "evacuation_replay.png")
        assert not failed, failed
