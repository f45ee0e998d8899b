import mesa
import numpy as np
from mesa.discrete_space import CellAgent

from mesa_llm_mobility.urban.network_space import build_network_space, cell_of
from mesa_llm_mobility.urban.scenario import load_scenario
from mesa_llm_mobility.urban.traffic import TrafficEngine


def test_cells_positions_and_connections():
    town = load_scenario("nguyen_dupuis")
    space = build_network_space(town, random=mesa.Model(rng=1).random)
    assert len(list(space.all_cells)) == 13 + 13 + 19 + 10
    link = space["Ave_2_link_2"]
    assert link.properties["kind"] == "link"
    assert np.allclose(link.position, [(14 + 25) / 2, 18])
    assert {c.coordinate for c in link.neighborhood} == {"Node_5", "Node_6"}
    office = space["Office"]
    assert office.properties["kind"] == "facility" and np.allclose(
        office.position, [48, 29]
    )
    assert {c.coordinate for c in office.neighborhood} == {"Node_2"}
    assert {c.coordinate for c in space["Metro_2_link_3"].neighborhood} == {
        "Node_6",
        "Node_10",
    }


def test_agent_cell_follows_the_engine():
    town = load_scenario("nguyen_dupuis")
    model = mesa.Model(rng=1)
    space = build_network_space(town, random=model.random)
    engine = TrafficEngine(town)
    traveller = CellAgent(model)
    engine.add_trip(
        "commute",
        "Uptown apartment",
        "Office",
        depart=5,
        path="free_flow",
        agent=traveller.unique_id,
    )
    visited = []
    while engine.time <= 45:
        engine.step()
        traveller.cell = cell_of(space, engine.location(traveller.unique_id))
        if not visited or visited[-1] != traveller.cell.coordinate:
            visited.append(traveller.cell.coordinate)
    assert visited == [
        "Uptown apartment",
        "Ave_1_link_1",
        "St_5_link_1",
        "St_5_link_2",
        "Office",
    ]
    assert traveller in space["Office"].agents
