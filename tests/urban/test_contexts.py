from __future__ import annotations

from mesa_llm_mobility.urban.decisions import DAILY_PLAN, PLAN_REVISION
from mesa_llm_mobility.urban.model import UrbanMobilityModel

from .conftest import town_personas


def test_rule_travellers_recall_no_text_but_perceive_what_llm_travellers_do():
    with UrbanMobilityModel(population=town_personas(), n_agents=8, rng=0) as model:
        view = model.view
        agent = next(iter(model.travellers.values()))
        assert not view.uses_llm
        assert view.recall_text(agent, 0, "plans") == []  # no vector store under rules
        family = [f"{n} (family): staying at " for n in agent.persona.family]
        assert [line.split("at ")[0] + "at " for line in view.social(agent)][
            : len(family)
        ] == family


def test_travellers_state_their_own_requests_from_the_view():
    with UrbanMobilityModel(population=town_personas(), n_agents=8, rng=0) as model:
        agent = next(iter(model.travellers.values()))
        request = agent.plan_request(model.view, 1)
        assert request.kind is DAILY_PLAN and request.agent_id == agent.name
        assert request.context.day == 1 and request.context.facts.now == 1
        assert request.context.facts.start_place == agent.persona.home
        assert agent.node_revision_request(model.view, 1) is None  # not driving
        model.run()
        decisions = model.decisions_frame()
        assert (decisions["kind"] == PLAN_REVISION.name).any()
