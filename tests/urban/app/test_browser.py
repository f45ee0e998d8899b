"""The app in a real browser: ``solara run examples/gatsim_app.py`` driven by Playwright.

Needs Debian's chromium (``/usr/bin/chromium``, or ``MLM_CHROMIUM``) and Solara's front-end
assets (``mlm viz install-assets``); ``.ci/run`` and ``scripts/install-dev.sh`` provide both.
Screenshots go to the test's folder; with ``MLM_UPDATE_SCREENSHOTS=1`` also to
``docs/images/app/`` (the ones docs/app.md shows).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright import sync_api as playwright

from mesa_llm_mobility.urban.app.charts import CHART_TEXT_POINTS
from mesa_llm_mobility.urban.app.components import TAB_NAMES
from mesa_llm_mobility.urban.app.inspector import report_of_run
from mesa_llm_mobility.urban.app.saved_run import SavedRun
from mesa_llm_mobility.urban.app.town_map import SMALLEST_MAP_POINTS
from mesa_llm_mobility.viz.assets import cdn_packages, default_cache_dir
from mesa_llm_mobility.viz.panels import (
    LEGIBLE_PIXELS,
    MAP_DPI,
    SIDEBAR_PX,
    label_pixels,
)
from mesa_llm_mobility.viz.playback import PAUSE_LABEL, PLAY_LABEL

pytestmark = pytest.mark.slow  # a server and a browser: 1-4 min a test

ROOT = Path(__file__).resolve().parents[3]
APP = ROOT / "examples" / "gatsim_app.py"
DOC_IMAGES = ROOT / "docs" / "images" / "app"
CHROMIUM = os.environ.get("MLM_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
]


def _require_browser_and_assets() -> None:
    if not Path(CHROMIUM).is_file():
        pytest.fail(
            f"no chromium at {CHROMIUM}: apt-get install chromium (or set MLM_CHROMIUM)"
        )
    cache = default_cache_dir()
    missing = [p.spec for p in cdn_packages() if not (cache / p.spec).is_dir()]
    if missing:
        pytest.fail(
            f"Solara assets missing in {cache}: {missing}; run mlm viz install-assets"
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serve_app(*app_args: str, log: Path, app: Path = APP) -> Iterator[str]:
    """Run ``solara run <app>`` (default ``examples/gatsim_app.py``) on a free port as a user would; yield its URL.

    Development mode (no ``--production``), none of pytest's variables (Solara skips its
    install check under pytest), no telemetry variable (the app must switch it off itself),
    and a new Solara home, as on a machine that never ran Solara.
    """
    port = _free_port()
    command = [sys.executable, "-m", "solara", "run", str(app), "--host", "127.0.0.1",
               "--port", str(port), "--no-open"]  # fmt: skip
    if app_args:
        command += ["--", *app_args]
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTEST_", "SOLARA_TELEMETRY"))
    }
    env.update(SOLARA_HOME=str(log.parent / "solara-home"), MPLBACKEND="Agg")
    with log.open("wb") as out:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
        url = f"http://127.0.0.1:{port}/"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    urllib.request.urlopen(url, timeout=2).close()
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        pytest.fail(
                            f"solara run did not start:\n{log.read_text()[-3000:]}"
                        )
                    time.sleep(0.5)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()


@pytest.fixture(scope="module")
def browser():
    _require_browser_and_assets()
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


WINDOW = {"width": 1400, "height": 900}
"""The browser window of the tests (what the apps are laid out for)."""


def _open(browser, url: str, ready: str):
    """A new page at ``url``; the list collects failed requests and any to another host."""
    page = browser.new_page(viewport=WINDOW)
    failed: list[str] = []
    page.on(
        "request",
        lambda request: (
            None
            if urllib.parse.urlsplit(request.url).hostname == "127.0.0.1"
            or request.url.startswith(("data:", "blob:"))
            else failed.append(f"outside request {request.url}")
        ),
    )
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.on(
        "response",
        lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None,
    )
    page.goto(url)
    page.wait_for_selector(ready, timeout=90_000)
    return page, failed


def _screenshot(page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    page.screenshot(path=str(path))
    if os.environ.get("MLM_UPDATE_SCREENSHOTS") == "1":
        DOC_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, DOC_IMAGES / name)
    return path


def _control_label(page, name: str) -> str:
    """The label of the control ``name`` in the sidebar (``Travellers: 70``)."""
    return page.locator(f".mlm-control-{name} .v-label").inner_text().strip()


def _nudge_slider(page, name: str, key: str = "ArrowRight") -> None:
    """Move the slider of control ``name`` one step with the keyboard."""
    page.locator(f".mlm-control-{name} .v-slider__thumb-container").focus()
    page.keyboard.press(key)


def _slider_then_reset(page, name: str, shown: str, clock) -> str:
    """Move control ``name``'s slider one step: its label reads ``shown``; Reset: the clock."""
    label = page.locator(f".mlm-control-{name} .v-label")
    before = label.inner_text()
    _nudge_slider(page, name)
    assert _wait_text_change(label, before).strip() == shown
    ticking = clock.inner_text()
    page.get_by_role("button", name="Reset").click()
    return _wait_text_change(clock, ticking)


def _play_then_pause(page, clock) -> None:
    """Play moves ``clock`` on (twice); pause stops it."""
    page.get_by_role("button", name=PLAY_LABEL).click()
    moved = _wait_text_change(clock, clock.inner_text())
    _wait_text_change(clock, moved)
    page.get_by_role("button", name=PAUSE_LABEL).click()
    page.get_by_role("button", name=PLAY_LABEL).wait_for(timeout=30_000)
    # the frame under way when paused may still land (late on a busy machine); then nothing
    seen = [clock.inner_text()]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        page.wait_for_timeout(2000)
        seen.append(clock.inner_text())
        if len(seen) >= 3 and seen[-1] == seen[-2] == seen[-3]:
            break
    changes = sum(a != b for a, b in itertools.pairwise(seen))
    assert seen[-1] == seen[-3] and changes <= 1, f"the clock moved after pause: {seen}"


def _legible_images(page, selector: str, points: float) -> list[float]:
    """On-screen size of ``points``-sized text in each image of ``selector``."""
    sizes = []
    for image in page.locator(selector).all():
        natural = image.evaluate("img => img.naturalWidth")
        shown = image.bounding_box()["width"]
        sizes.append(label_pixels(points, MAP_DPI, natural, shown))
    assert sizes, selector
    return sizes


def _overflowing(page, selector: str) -> list[str]:
    """Elements of ``selector`` whose content is wider than their box (hidden or scrolled)."""
    return page.eval_on_selector_all(
        selector,
        "els => els.filter(e => e.scrollWidth > e.clientWidth + 1)"
        ".map(e => e.className + ': ' + e.innerText.slice(0, 60))",
    )


def _clipped(page, selector: str) -> list[str]:
    """Elements of ``selector`` that hide part of their content.

    Content wider than the element's box that cannot be scrolled to, or an element running
    past the right edge of the window.
    """
    return page.eval_on_selector_all(
        selector,
        """els => els.filter(e => {
            const scrolls = ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
            const hidden = e.scrollWidth > e.clientWidth + 1 && !scrolls;
            return hidden || e.getBoundingClientRect().right > window.innerWidth + 1;
        }).map(e => e.className + ': ' + e.innerText.slice(0, 60))""",
    )


def _wait_text_change(locator, old: str, timeout_s: float = 60.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = locator.inner_text()
        if text != old:
            return text
        time.sleep(0.2)
    raise AssertionError(f"{locator} still shows {old!r}")


def test_live_app_steps_draws_travellers_and_inspects_a_plan(
    browser, finished_run, tmp_path
):
    with serve_app(log=tmp_path / "solara.log") as url:
        page, failed = _open(browser, url, ".mlm-clock")
        clock = page.locator(".mlm-clock")
        assert clock.inner_text() == "Day 1, 00:00"
        # every slider shows its value
        assert _control_label(page, "n_agents") == "Travellers: 70"
        assert _control_label(page, "days") == "Days: 1 day"
        assert _control_label(page, "seed") == "Seed: 0"
        assert _control_label(page, "minutes") == "Minutes per step: 5 min"
        sidebar = page.locator(".v-navigation-drawer").inner_text()
        assert "Time:" not in sidebar  # no second clock (Mesa's step count)
        for _ in range(3):  # Step: 5 minutes a click
            before = clock.inner_text()
            page.get_by_role("button", name="Step", exact=True).click()
            _wait_text_change(clock, before)
        assert clock.inner_text() == "Day 1, 00:15"
        for _ in range(7):
            before = clock.inner_text()
            page.get_by_role("button", name="+1 h").click()
            _wait_text_change(clock, before)
        assert clock.inner_text() == "Day 1, 07:15"
        other, _ = _open(
            browser, url, ".mlm-clock"
        )  # another visitor: a model of its own
        assert other.locator(".mlm-clock").inner_text() == "Day 1, 00:00"
        other.close()
        assert clock.inner_text() == "Day 1, 07:15"
        count = page.locator(".mlm-map-count").inner_text()
        on_map = int(count.split()[0])
        assert on_map > 0, count
        assert page.locator(".mlm-map-image img, img.mlm-map-image").count() >= 1

        page.locator(".mlm-traveller-select .v-select__slot").click()
        page.locator(".menuable__content__active .v-list-item").first.click()
        page.wait_for_selector(".mlm-plan table", timeout=30_000)
        plan = page.locator(".mlm-plan table").inner_text()
        assert "facility" in plan and "departure time" in plan
        assert len(page.locator(".mlm-plan table tbody tr").all()) >= 1
        assert _overflowing(page, ".mlm-plan .mlm-table") == []  # the plan fits
        assert _clipped(page, ".mlm-inspector .mlm-table") == []  # the rest scrolls
        assert page.locator(".mlm-state").inner_text()
        # click a traveller's marker on the map: the inspector follows
        image = page.locator("img.mlm-map-image")
        markers = json.loads(image.get_attribute("data-markers"))
        state = page.locator(".mlm-state").inner_text()
        target = next(m for m in markers if not state.startswith(m["agent"] + ":"))
        box = image.bounding_box()
        image.click(
            position={
                "x": target["fx"] * box["width"],
                "y": target["fy"] * box["height"],
            }
        )
        assert _wait_text_change(page.locator(".mlm-state"), state).startswith(
            target["agent"]
        )
        shot = _screenshot(page, tmp_path, "live.png")
        assert shot.stat().st_size > 10_000

        # the map at 1,400 px: as wide as its column (two thirds of the panel), legible
        natural = image.evaluate("img => img.naturalWidth")
        shown = image.bounding_box()
        column = page.locator(".mlm-map").bounding_box()
        assert shown["width"] >= 0.97 * column["width"], (shown, column)
        assert shown["width"] >= 600 and shown["height"] >= 480, shown
        smallest = label_pixels(SMALLEST_MAP_POINTS, MAP_DPI, natural, shown["width"])
        assert smallest >= LEGIBLE_PIXELS, (natural, shown, smallest)
        tabs = [t.inner_text().strip() for t in page.get_by_role("tab").all()]
        assert [t.lower() for t in tabs] == [n.lower() for n in TAB_NAMES]

        _play_then_pause(page, clock)

        page.get_by_role("tab", name=TAB_NAMES[1]).click()  # the charts
        page.wait_for_function(
            "document.querySelectorAll('.v-window-item--active img').length >= 4"
        )
        page.wait_for_timeout(1000)  # the tab's slide transition
        charts = _legible_images(page, ".v-window-item--active img", CHART_TEXT_POINTS)
        assert min(charts) >= LEGIBLE_PIXELS, charts
        _screenshot(page, tmp_path, "charts.png")

        page.get_by_role("tab", name=TAB_NAMES[0]).click()
        clock.wait_for(timeout=60_000)
        # a slider's new value shows at once; Reset builds the model with it
        reset = _slider_then_reset(page, "n_agents", "Travellers: 80", clock)
        assert reset == "Day 1, 00:00"
        count = page.locator(".mlm-map-count").inner_text()
        moving, inside = map(
            int, re.search(r"(\d+) travellers.*?(\d+) inside", count).groups()
        )
        assert moving + inside == 80, count

        # open a saved run from the live app: the sidebar keeps its width, so the main
        # panel is not covered on its left (it was, by the replay's wider sidebar)
        page.locator(".mlm-run-path input").fill(str(finished_run.run.path))
        page.keyboard.press("Enter")
        page.locator(".mlm-open-run").click()
        page.wait_for_selector(".mlm-replay-clock", timeout=60_000)
        page.wait_for_timeout(1000)
        drawer = page.locator(".v-navigation-drawer").bounding_box()
        assert drawer["width"] == pytest.approx(SIDEBAR_PX, abs=1)
        for selector in (".mlm-clock", "img.mlm-map-image", ".v-tabs"):
            left = page.locator(selector).first.bounding_box()["x"]
            assert left >= drawer["x"] + drawer["width"], (selector, left, drawer)
        assert not failed, failed


def test_saved_run_replays_with_the_time_slider(browser, finished_run, tmp_path):
    run_dir = str(finished_run.run.path)
    with serve_app("--run", run_dir, log=tmp_path / "solara.log") as url:
        page, failed = _open(browser, url, ".mlm-replay-clock")
        clock = page.locator(".mlm-replay-clock")
        assert clock.inner_text() == "Day 1, 08:00"
        thumb = page.locator(".mlm-time-slider .v-slider__thumb-container")
        thumb.focus()
        page.keyboard.press("ArrowRight")  # one minute on
        assert _wait_text_change(clock, "Day 1, 08:00") == "Day 1, 08:01"
        map_clock = page.locator(".mlm-clock")
        assert _wait_text_change(map_clock, "Day 1, 08:00") == "Day 1, 08:01"
        page.locator(".mlm-traveller-select .v-select__slot").click()
        page.locator(".menuable__content__active .v-list-item").nth(2).click()
        page.wait_for_selector(".mlm-revisions", timeout=30_000)
        assert "at" in page.locator(".mlm-state").inner_text()
        _screenshot(page, tmp_path, "replay.png")
        assert _control_label(page, "minutes") == "Minutes per frame: 5 min"
        _play_then_pause(page, clock)  # the replay plays: both clocks move on
        assert map_clock.inner_text() == clock.inner_text()
        assert clock.inner_text() > "Day 1, 08:01"
        played = clock.inner_text()
        thumb.focus()
        page.keyboard.press("End")  # to the end of the run
        assert _wait_text_change(clock, played) == "Day 3, 00:00"
        assert _wait_text_change(map_clock, played) == "Day 3, 00:00"
        page.get_by_role("button", name="-1 h").click()
        assert _wait_text_change(clock, "Day 3, 00:00") == "Day 2, 23:00"

        page.get_by_role(
            "button", name="Fork", exact=True
        ).click()  # from day 0, as it was
        page.wait_for_selector("text=GATSim replay: u1-fork-d0-1", timeout=120_000)
        forked = Path(run_dir).with_name("u1-fork-d0-1")
        assert (forked / "summary.json").is_file()
        assert page.locator(".mlm-replay-clock").inner_text() == "Day 1, 08:00"
        assert not failed, failed


def test_the_published_run_replays_with_each_personas_memory(
    browser, tmp_path, monkeypatch
):
    cache = tmp_path / "cache"
    monkeypatch.setenv("MLM_CACHE_DIR", str(cache))  # the server writes the run there
    with serve_app("--published", log=tmp_path / "solara.log") as url:
        page, failed = _open(browser, url, ".mlm-replay-clock")
        assert "published run" in page.locator(".v-toolbar__title").inner_text()
        clock, map_clock = page.locator(".mlm-replay-clock"), page.locator(".mlm-clock")
        assert clock.inner_text() == "Day 1, 08:00"
        assert "cannot be forked" in page.locator(".v-navigation-drawer").inner_text()
        page.get_by_role("button", name="+1 h").click()
        assert _wait_text_change(clock, "Day 1, 08:00") == "Day 1, 09:00"
        assert _wait_text_change(map_clock, "Day 1, 08:00") == "Day 1, 09:00"
        page.locator(".mlm-traveller-select .v-select__slot").click()
        page.locator(".menuable__content__active .v-list-item").first.click()
        state = page.locator(".mlm-state")
        state.wait_for(timeout=60_000)
        name = state.inner_text().split(":")[0]
        page.get_by_text("Memories", exact=True).click()
        count = page.locator(".mlm-memory-count")
        count.wait_for(timeout=60_000)

        # what the inspector shows is the persona's memory at the clock, as the tables hold it
        run = SavedRun.open(next(cache.iterdir()))
        at_nine = report_of_run(run, name, 9 * 60)
        assert len(at_nine.memories) > 5
        assert count.inner_text().startswith(f"All {len(at_nine.memories)} memories")
        newest = page.locator(".mlm-memories tbody tr").first.locator("td").last
        assert newest.inner_text() == at_nine.memories["content"].iloc[0]
        count.scroll_into_view_if_needed()
        _screenshot(page, tmp_path, "published.png")
        shown = count.inner_text()
        page.get_by_role("button", name="+1 h").click()  # the memory follows the clock
        at_ten = report_of_run(run, name, 10 * 60)
        assert len(at_ten.memories) != len(at_nine.memories)
        assert _wait_text_change(count, shown).startswith(
            f"All {len(at_ten.memories)} memories"
        )
        # the inspector and the clock redraw separately: wait for the clock too
        assert _wait_text_change(clock, "Day 1, 09:00") == "Day 1, 10:00"

        # the live model, then the published run again from the Saved runs card's button
        page.get_by_role("button", name="Live model").click()
        clock.wait_for(state="detached", timeout=60_000)
        assert map_clock.inner_text() == "Day 1, 00:00"  # the live model's
        page.locator(".mlm-open-published").click()
        page.wait_for_selector(".mlm-replay-clock", timeout=60_000)
        assert page.locator(".mlm-replay-clock").inner_text() == "Day 1, 08:00"
        assert not failed, failed
