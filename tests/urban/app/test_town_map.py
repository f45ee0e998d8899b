from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from mesa_llm_mobility.urban.app.town_map import (
    draw_town,
    link_ends,
    marker_fractions,
    shown_travellers,
    traveller_at,
    traveller_positions,
)
from mesa_llm_mobility.urban.app.town_view import TownView, empty_link_states
from mesa_llm_mobility.urban.scenario import load_scenario


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
    texts = [t.get_text() for t in ax.texts]
    assert "1 +1 queue" in texts and "ann" in texts
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
