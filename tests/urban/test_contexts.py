from __future__ import annotations

import inspect

import pandas as pd

from mesa_llm_mobility.urban.agents import TravellerAgent
from mesa_llm_mobility.urban.contexts import WorldView
from mesa_llm_mobility.urban.decisions import (
    CHAT,
    CHAT_TURN,
    DAILY_PLAN,
    PLAN_REVISION,
    SpeakerFacts,
)
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from mesa_llm_mobility.urban.recall import recall_text

from .conftest import town_personas


def test_rule_travellers_recall_no_text_but_perceive_what_llm_travellers_do():
    with UrbanMobilityModel(population=town_personas(), n_agents=8, rng=0) as model:
        view = model.view
        agent = next(iter(model.travellers.values()))
        assert not view.uses_llm
        recalled = recall_text(agent.memory, 0, "plans", uses_llm=view.uses_llm)
        assert recalled == []  # no vector store under rules
        family = [f"{n} (family): staying at " for n in agent.persona.family]
        social = view.contact_states(agent.contacts(view))
        assert [line.split("at ")[0] + "at " for line in social][
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


class _PublicFace:
    """A traveller as the world view may see it: where it is and what it says of its day."""

    def __init__(self, traveller: TravellerAgent) -> None:
        self._traveller = traveller

    @property
    def state(self) -> str:
        return self._traveller.state

    @property
    def place(self) -> str:
        return self._traveller.place

    def speaker_facts(self, view: WorldView, t: int) -> SpeakerFacts:
        return self._traveller.speaker_facts(view, t)


def _never_given_a_traveller(view: WorldView) -> list[str]:
    """Make every public method of ``view`` refuse a traveller argument; the names wrapped."""
    wrapped = []
    for name in dir(WorldView):
        member = getattr(view, name)
        if name.startswith("_") or not inspect.ismethod(member):
            continue

        def guarded(*args, _method=member, _name=name, **kwargs):
            given = [*args, *kwargs.values()]
            assert not any(isinstance(a, TravellerAgent) for a in given), _name
            return _method(*args, **kwargs)

        setattr(view, name, guarded)
        wrapped.append(name)
    return wrapped


def _chatty_day(*, public_faces: bool) -> pd.DataFrame:
    with UrbanMobilityModel(
        population=town_personas(),
        n_agents=20,
        rng=0,
        chat_probability=1.0,
        daytime_chat_probability=1.0,
        collect_every=60,
    ) as model:
        if public_faces:
            assert {"contact_facts", "node_ahead"} <= set(
                _never_given_a_traveller(model.view)
            )
            model.view.travellers = {
                name: _PublicFace(agent) for name, agent in model.travellers.items()
            }
        model.run()
        return model.decisions_frame()


def test_the_view_answers_without_reading_a_traveller_back():
    guarded = _chatty_day(public_faces=True)
    kinds = set(guarded["kind"])
    assert {CHAT.name, CHAT_TURN.name, DAILY_PLAN.name, PLAN_REVISION.name} <= kinds
    pd.testing.assert_frame_equal(guarded, _chatty_day(public_faces=False))
