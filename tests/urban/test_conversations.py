"""Conversations: two-sided turns, proposals and what an agreement changes (both brains)."""

from __future__ import annotations

import pandas as pd
import pytest

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.urban import UrbanMobilityModel, scripted_llm
from mesa_llm_mobility.urban.agents import DayState
from mesa_llm_mobility.urban.conversations import Conversation, apply_agreement
from mesa_llm_mobility.urban.decisions import (
    CHAT_TURN,
    MAX_CHAT_TURNS,
    ChatAgreement,
    ChatOutput,
    ChatTurnOutput,
    PersonaFacts,
    SpeakerFacts,
    validate_agreement,
)
from mesa_llm_mobility.urban.plans import (
    Activity,
    Appointment,
    PlanFacts,
    check_plan,
    with_appointments,
)

FACILITIES = frozenset({"Uptown apartment", "Office", "Factory", "Coffee shop", "Gym"})
ANN = SpeakerFacts("Ann Kim", "Kim", licensed=True, parent=True, works=True)
BEN = SpeakerFacts(
    "Ben Kim", "Kim", licensed=True, has_car=True, parent=True, works=True
)
CY = SpeakerFacts("Cy Lo", "Lo", licensed=False)
SPEAKERS = {s.name: s for s in (ANN, BEN, CY)}


def _errors(proposal, partner="Ben Kim", *, morning=True, now=0, vehicles=1):
    return validate_agreement(
        ChatAgreement(**proposal), "Ann Kim", partner, SPEAKERS,
        vehicles=vehicles, facilities=FACILITIES, now=now, morning=morning,
    )  # fmt: skip


def test_agreements_are_checked_with_specific_errors():
    assert _errors({"car": "Ann Kim", "pick_up": "Ben Kim"}) == []
    assert _errors({"meet_at": "Gym", "meet_time": "18:00"}, "Cy Lo") == []
    assert _errors({"car": "Cy Lo"}, "Cy Lo") == [
        "agreement: the car is agreed within a household, and Cy Lo is not in yours"
    ]
    assert _errors({"car": "Dan"}) == [
        "agreement: car must name Ann Kim or Ben Kim, not 'Dan'"
    ]
    assert _errors({"car": "Ann Kim"}, vehicles=0) == [
        "agreement: your household has no car to share"
    ]
    assert _errors({"drop_off": "Ben Kim"}, morning=False) == [
        (
            "agreement: the drop-off is settled by now; only the pick-up, a car still at home "
            "or a joint activity can be agreed during the day"
        )
    ]
    assert _errors({"meet_at": "Gym"}) == [
        "agreement: a joint activity needs both meet_at and meet_time"
    ]
    assert _errors({"meet_at": "Moon", "meet_time": "18:00"})[0].startswith(
        "agreement: unknown facility 'Moon' to meet at; choose one of Coffee shop"
    )
    assert _errors({"meet_at": "Gym", "meet_time": "10:10"}, now=10 * 60) == [
        "agreement: meet_time 10:10 must be between 10:30 and 22:00"
    ]


def test_a_conversation_alternates_speakers_and_ends_on_acceptance_or_last_turn():
    opening = ChatOutput(
        partner="Ben Kim", topic="car", message="Can I take the car?",
        proposal=ChatAgreement(car="Ann Kim"), importance=0.5,
    )  # fmt: skip
    talk = Conversation.opened(
        "Ann Kim", opening, "family", medium="in person", morning=True, minute=0
    )
    assert talk.speaker == "Ben Kim"
    counter = ChatAgreement(car="Ben Kim", pick_up="Ann Kim")
    talk.answer(ChatTurnOutput(message="Only if you fetch the kids", proposal=counter,
                               summary="s1", importance=0.4))  # fmt: skip
    assert (talk.speaker, talk.proposer, talk.over) == ("Ann Kim", "Ben Kim", False)
    talk.answer(
        ChatTurnOutput(message="Deal", accept=True, summary="s2", importance=0.6)
    )
    assert talk.over and talk.agreed == counter and talk.summary == "s2"
    assert talk.transcript()[-1] == "Ann Kim: Deal [accepts]"
    assert (
        talk.describe_outcome()
        == "agreed: Ben Kim takes the car, Ann Kim picks the children up"
    )

    endless = Conversation.opened(
        "Ann Kim", opening, "family", medium="by phone", morning=True, minute=0
    )
    for turn in range(1, MAX_CHAT_TURNS):
        assert not endless.over
        endless.answer(
            ChatTurnOutput(message=f"hm {turn}", summary="s", importance=0.1)
        )
    assert endless.over and endless.agreed is None
    assert endless.describe_outcome() == "no agreement"


class _Member:
    def __init__(self, name, vehicles=1, duty=None, car=False):
        self.name = name
        self.persona = PersonaFacts(name=name, household="Kim", vehicles=vehicles)
        self.today = DayState(vehicle_available=car, school_duty=duty)
        self.trips = []


def test_an_agreement_moves_the_car_and_the_school_runs_and_adds_appointments():
    ann, ben = _Member("Ann Kim", duty="both"), _Member("Ben Kim", car=True)
    ben.today.household_drivers, ann.today.household_drivers = (), ("Ben Kim",)
    apply_agreement(
        ChatAgreement(
            car="Ann Kim", pick_up="Ben Kim", meet_at="Gym", meet_time="18:00"
        ),
        (ann, ben),
        [ann, ben],
    )
    assert (ann.today.vehicle_available, ben.today.vehicle_available) == (True, False)
    assert ben.today.household_drivers == ("Ann Kim",)
    assert ann.today.household_drivers == ()
    assert (ann.today.school_duty, ben.today.school_duty) == ("drop_off", "pick_up")
    assert ann.today.appointments == [Appointment("Gym", 18 * 60, "Ben Kim")]
    assert ben.today.appointments == [Appointment("Gym", 18 * 60, "Ann Kim")]
    # two cars: both may drive
    two = [_Member("Ann Kim", 2), _Member("Ben Kim", 2, car=True)]
    apply_agreement(ChatAgreement(car="Ann Kim"), (two[0], two[1]), two)
    assert all(m.today.vehicle_available for m in two)


def test_plans_must_keep_agreed_joint_activities_and_the_rule_fallback_adds_them():
    facts = PlanFacts(
        home="Uptown apartment", start_place="Uptown apartment", facilities=FACILITIES,
        appointments=(Appointment("Coffee shop", 19 * 60 + 30, "Cy Lo"),),
    )  # fmt: skip
    day = [
        Activity(facility="Office", departure_time="07:20", reflect_every=150),
        Activity(facility="Uptown apartment", departure_time="17:00"),
    ]
    assert [str(i) for i in check_plan(day, facts)] == [
        (
            "joint: you agreed to meet Cy Lo at the Coffee shop at 19:30, and the plan drops "
            "it: add a Coffee shop activity leaving in time for 19:30"
        )
    ]
    kept = with_appointments(day, facts)
    assert [(a.facility, a.departure_time) for a in kept] == [
        ("Office", "07:20"),
        ("Coffee shop", "19:00"),
        ("Uptown apartment", "20:30"),
    ]
    assert check_plan(kept, facts) == []
    # a meeting at noon goes between work and the return home without breaking the times
    noon = PlanFacts(
        **{**facts.__dict__, "appointments": (Appointment("Gym", 720, "Cy Lo"),)}
    )
    kept = with_appointments(day, noon)
    assert [a.facility for a in kept] == ["Office", "Gym", "Uptown apartment"]
    assert check_plan(kept, noon) == []


def test_rule_conversations_have_both_sides_and_agree_only_household_changes():
    with UrbanMobilityModel(days=1, rng=0, collect_every=60) as model:
        model.run()
    conversations = model.conversations
    assert conversations and any(not c.morning for c in conversations)
    assert any(c.medium == "in person" for c in conversations)
    for c in conversations:
        assert [line.speaker for line in c.lines] == [c.initiator, c.partner]
        assert c.summary
        if c.agreed is not None:  # the household rule: runs or the car, never a meeting
            assert c.relation == "family" and c.agreed.meet_at is None
    decisions = model.decisions_frame()
    turns = decisions[decisions["kind"] == "ChatTurn"]
    assert list(turns["agent_id"]) == [c.partner for c in conversations]
    assert model.summary()["plan_errors"] == {}


def _kim_family_and_a_friend():
    def person(name, work, household, **kw):
        return PersonaFacts(
            name=name, home="Uptown apartment", work_facility=work, work_start=480,
            work_end=1020, household=household, **kw,
        )  # fmt: skip

    return [
        # Ben has the longer drive, so the engine gives him the one car; Ann asks for it
        person("Ann Kim", "Office", "Kim", family=("Ben Kim",), vehicles=1),
        person("Ben Kim", "Factory", "Kim", family=("Ann Kim",), vehicles=1),
        person(
            "Cy Lo", "Office", "Lo", friends=("Dee Ma",), vehicles=0, licensed=False
        ),
        person(
            "Dee Ma", "Office", "Ma", friends=("Cy Lo",), vehicles=0, licensed=False
        ),
    ]


def _slow_sometimes(body):
    return (sum(map(ord, body["messages"][-1]["content"][-40:])) % 5) * 0.05


def _llm_model(server, **kw):
    return UrbanMobilityModel(
        population=_kim_family_and_a_friend(), days=1, rng=1, chat_probability=1.0,
        daytime_chat_probability=0.0, brain="llm:openai/fake-model", collect_every=60,
        brain_options={"api_base": server.api_base, "api_key": "sk-local", "timeout_s": 1.0,
                       "max_attempts": 3, "max_total_s": 8.0, **kw},
    )  # fmt: skip


def test_llm_agreements_change_both_plans(tmp_path):
    ledger = tmp_path / "ledger.jsonl"
    with (
        FakeLLMServer(scripted_llm.respond) as server,
        _llm_model(server, ledger=ledger) as model,
    ):
        model.run()
    talks = {(c.initiator, c.partner): c for c in model.conversations}
    asked = talks[("Ann Kim", "Ben Kim")]
    assert asked.agreed == ChatAgreement(car="Ann Kim")
    assert asked.lines[1].speaker == "Ben Kim" and asked.lines[1].accept
    assert talks[("Cy Lo", "Dee Ma")].agreed.meet_at == "Coffee shop"
    trips = model.trips_frame()
    modes = trips.groupby("agent")["mode"].agg(set).to_dict()
    assert modes["Ann Kim"] == {"drive"} and "drive" not in modes["Ben Kim"]
    for name in ("Cy Lo", "Dee Ma"):  # both go to the agreed coffee
        assert "Coffee shop" in set(trips[trips["agent"] == name]["destination"])
    # each side answered from its own prompt: Ben's turn is Ben's record, with his profile
    records = [r for r in Ledger.read(ledger) if r["kind"] == "ChatTurn"]
    ben = next(r for r in records if r["agent_id"] == "Ben Kim")
    assert "You are Ben Kim" in ben["messages"][0]["content"]
    assert "Ann Kim proposes: Ann Kim takes the car." in ben["messages"][1]["content"]
    assert model.summary()["plan_errors"] == {}


@pytest.mark.slow
def test_llm_conversations_survive_faults_and_slow_answers():
    faults = with_faults(scripted_llm.respond, provider_faults(hang_s=3.0), every=3)
    with (
        FakeLLMServer(faults, latency_s=_slow_sometimes) as server,
        _llm_model(server, max_repairs=1) as model,
    ):
        model.run()
        received = server.request_count
    decisions = model.decisions_frame()
    assert set(decisions["outcome"]) <= {"ok", "repaired", "fallback"}
    assert decisions.loc[decisions["outcome"] == "fallback", "reason"].notna().all()
    assert {"Chat", "ChatTurn"} <= set(decisions["kind"])
    for c in model.conversations:
        speakers = [line.speaker for line in c.lines]
        assert speakers[::2] == [c.initiator] * len(speakers[::2])
        assert speakers[1::2] == [c.partner] * len(speakers[1::2])
    llm = model.summary()["llm"].loc["all"]
    assert llm["decisions"] == len(decisions)
    assert received >= len(decisions)
    trips = model.trips_frame()
    assert trips["arrival"].notna().all()
    holders = pd.Series(
        {n: a.today.vehicle_available for n, a in model.travellers.items()}
    )
    assert (
        holders[["Ann Kim", "Ben Kim"]].sum() == 1
    )  # one car, one holder, agreed or not


@pytest.mark.parametrize("turn", [1, 2])
def test_chat_turn_prompt_is_the_speakers_own(turn):
    talk = Conversation.opened(
        "Ann Kim",
        ChatOutput(partner="Cy Lo", topic="coffee", message="Coffee at 19:00?",
                   proposal=ChatAgreement(meet_at="Coffee shop", meet_time="19:00"),
                   importance=0.3),
        "friend", medium="by phone", morning=True, minute=0,
    )  # fmt: skip
    if turn == 2:
        talk.answer(ChatTurnOutput(message="Make it 20:00", summary="s", importance=0.3,
                                   proposal=ChatAgreement(meet_at="Coffee shop", meet_time="20:00")))  # fmt: skip
    with UrbanMobilityModel(
        population=[
            *_kim_family_and_a_friend()[:1],
            PersonaFacts(name="Cy Lo", home="Uptown apartment", household="Lo"),
        ],
        rng=0,
    ) as model:
        speaker = model.travellers[talk.speaker]
        context = speaker.chat_turn_request(model.view, 0, talk).context
    user = CHAT_TURN.messages(context)[1]["content"]
    other = "Ann Kim" if turn == 1 else "Cy Lo"
    assert context.persona.name == talk.speaker and context.partner == other
    assert f"{other} proposes: meet at the Coffee shop at" in user
    assert "Conversation so far:\n- Ann Kim: Coffee at 19:00?" in user
