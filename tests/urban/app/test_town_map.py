from __future__ import annotations

import io
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from mesa_llm_mobility.urban.app.town_map import (
    MAP_LABEL_POINTS,
    SMALLEST_MAP_POINTS,
    draw_town,
    facility_label,
    link_ends,
    link_polylines,
    marker_fractions,
    shown_travellers,
    traveller_at,
    traveller_positions,
)
from mesa_llm_mobility.urban.app.town_view import TownView, empty_link_states
from mesa_llm_mobility.urban.scenario import load_scenario
from mesa_llm_mobility.viz.labels import GAP_POINTS, label_boxes, overlapping_pairs
from mesa_llm_mobility.viz.panels import smallest_text_points


@pytest.fixture(scope="module")
def town():
    return load_scenario("nguyen_dupuis")


def _view(town, travellers) -> TownView:
    frame = pd.DataFrame(travellers, columns=["agent", "state", "place"])
    return TownView(town, 7 * 60, empty_link_states(town, 419), frame, pd.DataFrame())


def test_travellers_on_a_link_are_spread_along_it(town):
    link = next(iter(town.road_links.values()))
    view = _view(town, [(f"p{k}", "driving", link.name) for k in range(4)])
    points = traveller_positions(view)[["x", "y"]].to_numpy()
    a, b = link_ends(town)[link.name]
    shares = (points - a) @ (b - a) / ((b - a) @ (b - a))
    assert np.allclose(np.sort(shares), 0.1 + 0.8 * (np.arange(4) + 0.5) / 4)
    d = points - a
    across = (b - a)[0] * d[:, 1] - (b - a)[1] * d[:, 0]
    assert np.allclose(across, 0)


def _curved_town(town):
    """The reference town with Ave_1_link_1 (Node_1 (14, 6) to Node_12 (25, 6)) bent north."""
    bent = replace(
        town.road_links["Ave_1_link_1"],
        geometry=((14.0, 6.0), (14.0, 2.0), (25.0, 2.0), (25.0, 6.0)),
    )
    return replace(town, road_links={**town.road_links, bent.name: bent})


def test_a_link_with_geometry_is_drawn_along_it_and_one_without_straight(town):
    curved = _curved_town(town)
    lines = link_polylines(curved)
    assert lines["Ave_1_link_1"].tolist() == [[14, 6], [14, 2], [25, 2], [25, 6]]
    other = curved.road_links["Ave_2_link_1"]
    ends = [
        [curved.nodes[n].x, curved.nodes[n].y] for n in (other.from_node, other.to_node)
    ]
    assert lines["Ave_2_link_1"].tolist() == ends
    assert [a.tolist() for a in link_ends(curved)["Ave_1_link_1"]] == [[14, 6], [25, 6]]
    # the snapshot under the map draws both directions along the bend, shifted apart
    link_states = empty_link_states(curved, 419)
    figure = draw_town(
        TownView(
            curved,
            420,
            link_states,
            pd.DataFrame(
                [("ann", "driving", "Ave_1_link_1")],
                columns=["agent", "state", "place"],
            ),
            pd.DataFrame(),
        )
    )
    roads = next(c for c in figure.axes[0].collections if c.get_gid() == "road_links")
    bent = [path.vertices for path in roads.get_paths() if len(path.vertices) == 4]
    assert len(bent) == 2
    for vertices in bent:
        assert np.abs(vertices[:, 1] - 2.0).min() < 1.0  # through the bend at y = 2
    # a traveller on the bent link sits on its polyline, halfway along it: (19.5, 2)
    x, y = traveller_positions(_view(curved, [("ann", "driving", "Ave_1_link_1")]))[
        ["x", "y"]
    ].iloc[0]
    assert (x, y) == pytest.approx((19.5, 2.0))


def test_travellers_at_a_facility_sit_around_its_node(town):
    facility = next(iter(town.facilities.values()))
    node = town.nodes[facility.node]
    view = _view(
        town,
        [("ann", "staying", facility.name), ("bob", "waiting_at_door", facility.name)],
    )
    positions = traveller_positions(view)
    distance = np.hypot(positions["x"] - node.x, positions["y"] - node.y)
    assert len(positions) == 2 and (distance > 0).all() and (distance < 2).all()
    again = traveller_positions(view)
    pd.testing.assert_frame_equal(
        positions, again
    )  # fixed per name: markers do not jump


def test_map_draws_movers_selected_traveller_and_trains(town):
    link = next(iter(town.road_links.values()))
    facility = next(iter(town.facilities))
    view = _view(
        town,
        [("ann", "driving", link.name), ("bob", "staying", facility),
         ("cy", "waiting_at_door", facility)],
    )  # fmt: skip
    figure = draw_town(view, selected="ann")
    ax = figure.axes[0]
    by_gid = {c.get_gid(): c for c in ax.collections if c.get_gid()}
    assert (
        len(by_gid["travellers"].get_offsets()) == 2
    )  # people inside are counted, not drawn
    assert len(by_gid["trains"].get_offsets()) > 0  # 07:00: metro in service
    assert "selected" in by_gid
    assert ax.get_title() == "Day 1, 07:00"
    assert draw_town(view, title=False).axes[0].get_title() == ""
    texts = [t.get_text() for t in ax.texts]
    assert f"{facility}: 1 +1 queue" in texts and "ann" in texts
    everyone = draw_town(view, show_staying=True).axes[0]
    movers = next(c for c in everyone.collections if c.get_gid() == "travellers")
    assert len(movers.get_offsets()) == 3


def test_a_click_on_a_marker_finds_its_traveller(town):
    link = next(iter(town.road_links.values()))
    view = _view(town, [("ann", "driving", link.name), ("bob", "driving", link.name)])
    figure = draw_town(view)
    shown = shown_travellers(traveller_positions(view))
    markers = marker_fractions(figure, shown).set_index("agent")
    assert ((markers[["fx", "fy"]] > 0) & (markers[["fx", "fy"]] < 1)).all().all()
    # the fractions point at the drawn markers, whatever the image resolution
    image = np.asarray(Image.open(io.BytesIO(_png(figure, 50))))
    for agent in ("ann", "bob"):
        fx, fy = markers.loc[agent]
        assert traveller_at(markers.reset_index(), fx, fy, figure) == agent
        row, col = int(fy * image.shape[0]), int(fx * image.shape[1])
        red, green, blue = image[row, col, :3]
        assert blue > red and blue > green  # a driving marker is blue
    nowhere = traveller_at(markers.reset_index(), 0.01, 0.99, figure)
    assert nowhere is None
    assert (
        traveller_at(marker_fractions(figure, shown.iloc[:0]), 0.5, 0.5, figure) is None
    )


def _png(figure, dpi: int) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def test_facility_labels_carry_the_counts():
    assert facility_label("Gym", 0, 0) == "Gym"
    assert facility_label("Gym", 4, 0) == "Gym: 4"
    assert facility_label("Gym", 4, 2) == "Gym: 4 +2 queue"


def _crowded_view(town):
    """Everyone somewhere: long labels at every facility, a queue, movers on every link."""
    rows = [
        (f"in{k}-{f}", "staying", f)
        for k, f in enumerate(town.facilities)
        for _ in (0,)
    ]
    rows += [(f"q{k}", "waiting_at_door", "Food court") for k in range(12)]
    rows += [(f"d{k}", "driving", link) for k, link in enumerate(town.road_links)]
    return _view(town, rows)


def test_map_labels_do_not_overlap_and_stay_in_the_figure(town):
    view = _crowded_view(town)
    selected = view.travellers["agent"].iloc[-1]
    figure = draw_town(view, selected=selected, title=False)
    ax = figure.axes[0]
    labels = [t for t in ax.texts if t.get_gid() in ("facility", "selected_name")]
    assert len(labels) == len(town.facilities) + 1
    boxes = label_boxes(labels)
    assert overlapping_pairs(boxes) == []
    inside = figure.bbox
    for text, box in zip(labels, boxes, strict=True):
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1, text.get_text()
        assert inside.y0 <= box.y0 and box.y1 <= inside.y1, text.get_text()
    # the case is a real one: every label right above its point would overlap
    for text in labels:
        text.xyann = (GAP_POINTS, GAP_POINTS)
        text.set_horizontalalignment("left")
        text.set_verticalalignment("bottom")
    assert overlapping_pairs(label_boxes(labels))


def test_the_town_fills_the_maps_width_and_its_text_is_legible(town):
    figure = draw_town(_crowded_view(town), title=False)
    ax = figure.axes[0]
    box = ax.get_position()
    assert (box.x0, box.x1) == (pytest.approx(0.0, abs=1e-9), pytest.approx(1.0))
    # the axes hold the town at equal aspect: the nodes span its width, not a middle part
    figure.draw_without_rendering()
    drawn = ax.get_window_extent()
    xs = [n.x for n in town.nodes.values()]
    left, right = ax.transData.transform([(min(xs), 0), (max(xs), 0)])[:, 0]
    assert (right - left) / drawn.width > 0.8
    assert drawn.width / figure.bbox.width > 0.99
    assert smallest_text_points(figure) >= SMALLEST_MAP_POINTS
    labels = [t for t in ax.texts if t.get_gid() == "facility"]
    assert {t.get_fontsize() for t in labels} == {MAP_LABEL_POINTS}
