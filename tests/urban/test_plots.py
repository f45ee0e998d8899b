from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from mesa_llm_mobility.urban import plots
from mesa_llm_mobility.urban.plots import (
    CONGESTION_COLOURS,
    MODE_COLOURS,
    congestion_colour,
    departure_histograms,
    link_congestion_at,
    mode_share_table,
    mode_shares,
    traffic_snapshot,
    traffic_snapshots_grid,
    update_traffic_snapshot,
)
from mesa_llm_mobility.urban.scenario import load_scenario
from mesa_llm_mobility.urban.traffic import TrafficEngine

DAY = 1440


@pytest.fixture(scope="module")
def town():
    return load_scenario("nguyen_dupuis")


@pytest.fixture(scope="module")
def frames(town):
    """Two mornings of a small fixed demand: 24 drivers, 4 metro riders, 3 walkers a day."""
    engine = TrafficEngine(town, start_time=360)
    for day, first in ((1, 420), (2, DAY + 400)):  # day 2 leaves 20 minutes earlier
        for i in range(24):
            home = "Uptown apartment" if i % 2 else "Midtown apartment"
            work = "Office" if i % 3 else "Factory"
            engine.add_trip(f"d{day}-car{i}", home, work, depart=first + i)
        for i in range(4):
            engine.add_trip(
                f"d{day}-metro{i}",
                "Midtown apartment",
                "Office",
                depart=first + 5 * i,
                mode="transit",
            )
        for i in range(3):
            engine.add_trip(
                f"d{day}-walk{i}", "School", "Hospital", depart=first + i, mode="walk"
            )
    engine.run_until(DAY + 600)
    return engine.trips_frame(), engine.link_states_frame()


def is_png(path):
    return path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_backend_untouched_and_figures_are_agg(frames, tmp_path):
    backend = matplotlib.get_backend()
    figure = departure_histograms(frames[0])
    assert isinstance(figure, Figure)
    assert type(figure.canvas).__name__ == "FigureCanvasAgg"
    assert matplotlib.get_backend() == backend


# ---------------------------------------------------------------------------- departures
def test_departure_histograms_one_panel_per_day(frames, tmp_path):
    trips, _ = frames
    path = tmp_path / "plots" / "departures.png"
    figure = departure_histograms(trips, path=path)
    assert is_png(path)
    axes = figure.axes
    assert len(axes) == 2
    assert [ax.get_title(loc="left") for ax in axes] == [
        "Day 1: 31 departures",
        "Day 2: 31 departures",
    ]
    # 36 bins of 10 minutes between 05:00 and 11:00; the counts add up to the day's trips
    for ax in axes:
        assert len(ax.patches) == 36
        assert sum(p.get_height() for p in ax.patches) == 31
    assert axes[0].get_xlim() == (300.0, 660.0)
    labels = [t.get_text() for t in axes[-1].get_xticklabels()]
    assert "07:00" in labels and "11:00" in labels
    # day 2 (minute 1840 = 06:40) lands at 06:40 on its own panel: the peak moved earlier
    heights = {
        day: np.array([p.get_height() for p in ax.patches])
        for day, ax in zip((1, 2), axes, strict=True)
    }
    assert heights[1].argmax() == (420 - 300) // 10
    assert heights[2].argmax() == (400 - 300) // 10


def test_departure_histograms_overlay_and_window(frames, tmp_path):
    trips, _ = frames
    figure = departure_histograms(
        trips, overlay=True, start="06:30", end="07:00", bin_minutes=5
    )
    (ax,) = figure.axes
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts[0].startswith("Day 1: 0 departures (31 outside 06:30-07:00)")
    assert texts[1].startswith("Day 2: 27 departures (4 outside")
    assert len(ax.patches) == 2  # one step outline per day
    by_mode = departure_histograms(trips, by="mode")
    assert [ax.get_title(loc="left").split(":")[0] for ax in by_mode.axes] == [
        "drive",
        "transit",
        "walk",
    ]


def test_departure_histograms_errors(frames):
    trips, _ = frames
    with pytest.raises(ValueError, match=r"missing column\(s\) 'departure'"):
        departure_histograms(trips.drop(columns="departure"))
    with pytest.raises(ValueError, match="no row has a 'departure'"):
        departure_histograms(trips.assign(departure=np.nan))
    with pytest.raises(ValueError, match="end must follow start"):
        departure_histograms(trips, start="09:00", end="08:00")
    with pytest.raises(ValueError, match="expected 'HH:MM'"):
        departure_histograms(trips, start="7h")


# ---------------------------------------------------------------------------- mode shares
def test_mode_shares(frames, tmp_path):
    trips, _ = frames
    table = mode_share_table(trips)
    assert list(table.index) == [1, 2]
    assert list(table.columns) == ["drive", "transit", "walk"]
    assert table.loc[1].tolist() == pytest.approx([24 / 31, 4 / 31, 3 / 31])
    counts = mode_share_table(trips, normalize=False)
    assert counts.loc[2].tolist() == [24, 4, 3]
    path = tmp_path / "modes.png"
    figure = mode_shares(trips, path=path)
    assert is_png(path)
    (ax,) = figure.axes
    assert len(ax.containers) == 3  # one stack layer per mode, one bar per day
    assert all(len(bars) == 2 for bars in ax.containers)
    assert ax.containers[0].patches[0].get_facecolor() == to_rgba(MODE_COLOURS["drive"])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Day 1", "Day 2"]


def test_mode_shares_uses_a_day_column_when_present():
    trips = pd.DataFrame(
        {
            "mode": ["drive", "walk", "bike"],
            "departure": [100, 200, 300],
            "day": [3, 3, 4],
        }
    )
    table = mode_share_table(trips, normalize=False)
    assert list(table.index) == [3, 4]
    assert list(table.columns) == ["drive", "walk", "bike"]
    assert len(mode_shares(trips).axes[0].containers) == 3


# ---------------------------------------------------------------------------- snapshots
def test_congestion_colour_thresholds():
    assert congestion_colour(0.0) == CONGESTION_COLOURS["free"]
    assert congestion_colour(0.4) == CONGESTION_COLOURS["free"]
    assert congestion_colour(1.0) == CONGESTION_COLOURS["light"]
    assert congestion_colour(5.0) == CONGESTION_COLOURS["moderate"]
    assert congestion_colour(9.6) == CONGESTION_COLOURS["severe"]
    assert congestion_colour(float("nan")) == CONGESTION_COLOURS["free"]


def test_link_congestion_at(frames):
    _, states = frames
    rows = link_congestion_at(states, "07:30")
    assert set(rows["time"]) == {450.0}
    assert len(rows) == 2 * 19 + 2 * 10  # every directed road and metro link
    severe = rows[rows["label"] == "severe"]
    assert not severe.empty
    assert (severe["wait_indicator"] >= 9.5).all()
    assert set(severe["colour"]) == {CONGESTION_COLOURS["severe"]}
    assert rows.loc[rows["label"].isna(), "colour"].eq(CONGESTION_COLOURS["free"]).all()
    # a clock time on day 2 and the same absolute minute agree; between steps, the last one
    day2 = link_congestion_at(states, "07:30", day=2)
    assert day2.equals(link_congestion_at(states, DAY + 450))
    assert set(link_congestion_at(states, 450.5)["time"]) == {450.0}
    with pytest.raises(
        ValueError, match=r"minute 300 is outside the recorded steps 360-2040"
    ):
        link_congestion_at(states, "05:00")
    with pytest.raises(ValueError, match=r"minute 4740 is outside"):
        link_congestion_at(states, "07:00", day=4)
    with pytest.raises(ValueError, match="missing column"):
        link_congestion_at(states.drop(columns="wait_indicator"), 450)


def road_colours(ax):
    (roads,) = [c for c in ax.collections if c.get_gid() == "road_links"]
    return roads


def test_traffic_snapshot_colours_a_congested_link(town, frames, tmp_path):
    _, states = frames
    path = tmp_path / "snapshot.png"
    figure = traffic_snapshot(town, states, "07:30", path=path)
    assert is_png(path)
    (ax,) = figure.axes
    assert ax.get_title() == "Day 1, 07:30"
    roads = road_colours(ax)
    assert len(roads.get_segments()) == 2 * 19  # both directions of every road link
    rows = link_congestion_at(states, "07:30")
    road_rows = rows[rows["kind"] == "road"].reset_index(drop=True)
    colours = roads.get_colors()
    for k, row in road_rows.iterrows():
        assert tuple(colours[k]) == to_rgba(row["colour"]), row["link"]
    k = road_rows.index[road_rows["label"] == "severe"][0]
    assert tuple(colours[k]) == to_rgba(CONGESTION_COLOURS["severe"])
    # segments sit at the scenario's coordinates (shifted sideways by a little)
    link = town.road_links[road_rows.loc[k, "link"]]
    tail, head = (link.from_node, link.to_node)[
        :: 1 if road_rows.loc[k, "direction"] == 0 else -1
    ]
    segment = roads.get_segments()[k]
    expected = np.array([[town.nodes[n].x, town.nodes[n].y] for n in (tail, head)])
    assert np.abs(segment - expected).max() < 1.0
    # metro lines are their own dashed collections; facilities are labelled; y points down
    metro = [c for c in ax.collections if str(c.get_gid()).startswith("metro:")]
    assert [c.get_gid() for c in metro] == ["metro:Metro_1", "metro:Metro_2"]
    names = {t.get_text() for t in ax.texts}
    assert set(town.facilities) <= names
    assert ax.yaxis_inverted()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:4] == [
        "free (< 1 min)",
        "light (1-4 min)",
        "moderate (5-9 min)",
        "severe (>= 10 min)",
    ]
    assert legend[4:] == ["Metro_1", "Metro_2"]


def test_traffic_snapshot_on_given_axes_and_synthetic_frame(town):
    figure = Figure()
    ax = figure.subplots()
    # a synthetic frame with one congested road direction and no kind column
    states = pd.DataFrame(
        {
            "time": [480.0, 480.0],
            "link": ["Ave_2_link_2", "Ave_2_link_2"],
            "direction": [0, 1],
            "wait_indicator": [12.0, 3.0],
        }
    )
    assert traffic_snapshot(town, states, 480, ax=ax, show_metro=False) is figure
    roads = road_colours(ax)
    colours = [tuple(c) for c in roads.get_colors()]
    assert colours[:2] == [
        to_rgba(CONGESTION_COLOURS["severe"]),
        to_rgba(CONGESTION_COLOURS["light"]),
    ]
    assert set(colours[2:]) == {to_rgba(CONGESTION_COLOURS["free"])}
    assert len(colours) == 2 * 19
    assert not [c for c in ax.collections if str(c.get_gid()).startswith("metro:")]
    # axes inside a subfigure: the root figure is returned (it is what can be saved)
    root = Figure()
    sub_ax = root.subfigures(1, 2)[1].subplots()
    assert traffic_snapshot(town, states, 480, ax=sub_ax) is root


def test_update_traffic_snapshot_equals_a_fresh_snapshot(town, frames):
    _, states = frames
    figure = traffic_snapshot(town, states, "06:00", day=2)
    (ax,) = figure.axes
    assert update_traffic_snapshot(ax, town, states, "07:30") is figure
    fresh = road_colours(traffic_snapshot(town, states, "07:30").axes[0])
    updated = road_colours(ax)
    assert ax.get_title() == "Day 1, 07:30"
    assert ax.title.get_fontsize() == fresh.axes.title.get_fontsize()
    assert np.array_equal(updated.get_colors(), fresh.get_colors())
    assert all(
        np.array_equal(a, b)
        for a, b in zip(updated.get_segments(), fresh.get_segments(), strict=True)
    )
    assert len(ax.collections) == len(fresh.axes.collections)  # nothing added
    with pytest.raises(ValueError, match="no traffic snapshot"):
        update_traffic_snapshot(Figure().subplots(), town, states, "07:30")


def test_traffic_snapshots_grid(town, frames, tmp_path):
    _, states = frames
    path = tmp_path / "grid.png"
    figure = traffic_snapshots_grid(town, states, path=path)
    assert is_png(path)
    assert len(figure.axes) == 2 * 4  # rows = the two days, columns = 07:00 ... 08:30
    assert [ax.get_title() for ax in figure.axes] == [
        f"Day {day}, {clock}"
        for day in (1, 2)
        for clock in ("07:00", "07:30", "08:00", "08:30")
    ]
    assert len(figure.legends) == 1
    one = traffic_snapshots_grid(town, states, times=["07:45"], days=[2])
    assert [ax.get_title() for ax in one.axes] == ["Day 2, 07:45"]
    with pytest.raises(ValueError, match="at least one day"):
        traffic_snapshots_grid(town, states, times=[])


def test_module_has_no_pyplot_state():
    assert "pyplot" not in vars(plots)


def test_mode_share_table_needs_no_time_column_with_a_day_column():
    trips = pd.DataFrame({"mode": ["drive", "walk"], "day": [1, 2]})
    assert mode_share_table(trips, normalize=False).to_dict("index") == {
        1: {"drive": 1, "walk": 0},
        2: {"drive": 0, "walk": 1},
    }
    with pytest.raises(ValueError, match=r"missing column\(s\) 'departure'"):
        mode_share_table(trips.drop(columns="day"))
