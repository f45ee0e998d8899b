import pytest

from mesa_llm_mobility.urban.routing import (
    NetworkIndex,
    PathError,
    Router,
    choose_hop,
    next_hop_table,
    table_age,
    validate_path,
)
from mesa_llm_mobility.urban.scenario import load_scenario, scenario_from_dict


@pytest.fixture(scope="module")
def index():
    return NetworkIndex(load_scenario("nguyen_dupuis"))


def test_directed_links(index):
    assert len([link for link in index.links if link.kind == "road"]) == 38
    assert len([link for link in index.links if link.kind == "metro"]) == 20
    back = index.link("Metro_1_link_5", "Node_2")
    assert (back.direction, back.head, back.stop) == (1, "Node_8", 0)


def test_validate_path_ok_and_directions(index):
    links = validate_path(
        index,
        "Office",
        "Uptown apartment",
        ["St_5_link_2", "St_5_link_1", "Ave_1_link_1"],
        "drive",
    )
    assert [link.direction for link in links] == [1, 1, 1]
    assert links[-1].head == "Node_1"


@pytest.mark.parametrize(
    ("path", "mode", "message"),
    [
        (
            ["Ave_1_link_1", "Ave_2_link_3"],
            "drive",
            "path link 1 ('Ave_2_link_3'): does not continue from 'Node_12' (the link joins Node_6 and Node_7)",
        ),
        (["Ave_1_link_1", "Nope"], "drive", "path link 1 ('Nope'): unknown link"),
        (
            ["Metro_2_link_1"],
            "drive",
            "path link 0 ('Metro_2_link_1'): a metro link in a drive path",
        ),
        (
            ["Ave_1_link_1"],
            "drive",
            "path link 0 ('Ave_1_link_1'): path ends at 'Node_12', not at the destination 'Node_2'",
        ),
        (
            ["Ave_1_link_1", "St_5_link_1", "St_5_link_2"],
            "transit",
            "a transit path needs at least one metro link",
        ),
        (
            [],
            "walk",
            "empty path: path ends at 'Node_1', not at the destination 'Node_2'",
        ),
        (
            ["Ave_1_link_1"],
            "fly",
            "unknown mode 'fly'; expected one of ('drive', 'walk', 'transit')",
        ),
    ],
)
def test_validate_path_errors(index, path, mode, message):
    with pytest.raises(PathError) as info:
        validate_path(index, "Node_1", "Node_2", path, mode)
    assert str(info.value) == message


def test_shortest_paths_by_mode(index):
    router = Router(index)
    drive = router.path("Uptown apartment", "Office", "drive")
    assert [link.name for link in drive] == [
        "Ave_1_link_1",
        "St_5_link_1",
        "St_5_link_2",
    ]
    assert router.free_flow_time(drive, "drive") == 34
    assert router.free_flow_time(drive, "walk") == 68
    transit = router.path("Midtown apartment", "Office", "transit")
    assert [link.name for link in transit] == [f"Metro_1_link_{k}" for k in range(1, 6)]
    assert router.free_flow_time(transit, "transit") == 5 * 8 + 4 * 1
    mixed = router.path(
        "Hospital", "Factory", "transit"
    )  # walk to a stop, ride, maybe walk
    assert any(link.kind == "metro" for link in mixed)
    validate_path(
        index, "Hospital", "Factory", [link.name for link in mixed], "transit"
    )
    assert router.path("Node_3", "Node_3", "drive") == []


def test_cache_and_cost_changes(index):
    router = Router(index)
    router.path("Node_1", "Node_2", "drive")
    router.path("Node_1", "Node_2", "drive")
    assert (router.computations, router.cache_hits) == (1, 1)
    assert not router.set_extra_costs({})
    st5 = index.link("St_5_link_1", "Node_12")
    assert router.set_extra_costs({st5.index: 30.0})
    detour = router.path("Node_1", "Node_2", "drive")
    assert router.computations == 2
    assert "St_5_link_1" not in [link.name for link in detour]
    assert not router.set_extra_costs({st5.index: 30.0})


def test_next_hop_table_matches_router(index):
    router = Router(index)
    hops = next_hop_table(index, "Node_2")
    for node in index.scenario.nodes:
        if node == "Node_2":
            continue
        cost = sum(link.free_time for link in router.path(node, "Node_2", "drive"))
        for traveller in range(3):  # any choice among the tied hops is a shortest path
            at, total = node, 0.0
            while at != "Node_2":
                link = choose_hop(hops[at], traveller, index.node_position[at])
                total += link.free_time
                at = link.head
            assert total == cost


def test_ties_are_spread():
    square = scenario_from_dict(
        {
            "nodes": [{"id": n, "x": 0, "y": 0} for n in "ABCD"],
            "road_links": [
                {"name": "ab", "from": "A", "to": "B", "free_time": 1, "capacity": 1},
                {"name": "ac", "from": "A", "to": "C", "free_time": 1, "capacity": 1},
                {"name": "bd", "from": "B", "to": "D", "free_time": 2, "capacity": 1},
                {"name": "cd", "from": "C", "to": "D", "free_time": 2, "capacity": 1},
            ],
        }
    )
    square_index = NetworkIndex(square)
    hops = next_hop_table(square_index, "D")
    assert [link.name for link in hops["A"]] == ["ab", "ac"]
    assert {choose_hop(hops["A"], t, 0).name for t in range(2)} == {"ab", "ac"}
    detour = next_hop_table(
        square_index, "D", {square_index.link("cd", "C").index: 0.5}
    )
    assert [link.name for link in detour["A"]] == ["ab"]


def test_no_path(index):
    lonely = scenario_from_dict(
        {"nodes": [{"id": "A", "x": 0, "y": 0}, {"id": "B", "x": 1, "y": 0}]}
    )
    with pytest.raises(PathError, match="no drive path from 'A' to 'B'"):
        Router(NetworkIndex(lonely)).path("A", "B", "drive")


def test_table_age_shares():
    ages = [table_age(r, 0.5, 8) for r in range(10_000)]
    shares = [ages.count(j) / len(ages) for j in range(4)]
    assert shares == pytest.approx([0.5, 0.25, 0.125, 0.0625], abs=0.01)
    assert max(ages) == 7  # truncated to the oldest table kept
    assert {table_age(r, 1.0, 8) for r in range(100)} == {0}
    assert {table_age(r, 0.3, 1) for r in range(100)} == {0}
