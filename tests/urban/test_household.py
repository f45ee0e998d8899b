"""Household agreements: the rule, daytime re-validation, and both plans changing (both brains)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from mesa_llm_mobility.cognition.testing import FakeLLMServer
from mesa_llm_mobility.urban import UrbanMobilityModel
from mesa_llm_mobility.urban import conversations as conversations_module
from mesa_llm_mobility.urban.decisions import (
    ChatAgreement,
    PersonaFacts,
    SpeakerFacts,
    validate_agreement,
)
from mesa_llm_mobility.urban.decisions import household as household_module
from mesa_llm_mobility.urban.decisions.chat import ChatContext, chat_rule_policy
from mesa_llm_mobility.urban.decisions.chat_turn import (
    ChatTurnContext,
    chat_turn_rule_policy,
)
from mesa_llm_mobility.urban.decisions.household import (
    CAR_SAVING_MARGIN,
    LATE_HANDOVER_MINUTES,
    household_agreement,
    rule_accepts,
)
from tests.urban.conftest import local_llm_options, scripted_traveller, slow_sometimes


def _parent(name, **kw):
    base = {
        "household": "Kim", "licensed": True, "parent": True, "works": True, "work_start": 480,
        "work_end": 1020, "car_saving": 10.0,
    }  # fmt: skip
    return SpeakerFacts(name, **{**base, **kw})


def _agree(first, second, *, morning=True, vehicles=1):
    speakers = {first.name: first, second.name: second}
    return household_agreement(
        first.name, second.name, speakers, vehicles=vehicles, morning=morning
    )


def test_the_car_goes_to_whom_it_saves_most_beyond_the_margin():
    holder = _parent("Ann Kim", has_car=True, car_saving=10.0)
    assert _agree(holder, _parent("Ben Kim", car_saving=10.0 + CAR_SAVING_MARGIN)) == {
        "car": "Ben Kim"
    }
    assert _agree(holder, _parent("Ben Kim", car_saving=14.0)) == {}  # within the band
    # two cars, or a partner without a licence or work: nothing to agree
    assert _agree(holder, _parent("Ben Kim", car_saving=30.0), vehicles=2) == {}
    assert _agree(holder, _parent("Ben Kim", car_saving=30.0, licensed=False)) == {}
    other = SpeakerFacts("Cy Lo", "Lo", licensed=True, works=True, car_saving=30.0)
    assert _agree(holder, other) == {}


def test_the_later_starter_drops_off_and_the_earlier_finisher_picks_up():
    early = _parent("Ann Kim", school_duty="drop_off", work_start=420, work_end=960)
    late = _parent("Ben Kim", school_duty="pick_up", work_start=540, work_end=1080)
    assert _agree(early, late) == {"drop_off": "Ben Kim", "pick_up": "Ann Kim"}
    assert _agree(late, early) == {"drop_off": "Ben Kim", "pick_up": "Ann Kim"}
    # the same hours keep the engine's assignment
    same = _parent("Ben Kim", school_duty="pick_up")
    assert _agree(_parent("Ann Kim", school_duty="drop_off"), same) == {}


def test_a_late_parent_hands_its_pick_up_over_during_the_day():
    holder = _parent(
        "Ann Kim",
        school_duty="pick_up",
        open_runs=("pick_up",),
        late=LATE_HANDOVER_MINUTES,
    )
    partner = _parent("Ben Kim", school_duty="drop_off", departed=True)
    assert _agree(holder, partner, morning=False) == {"pick_up": "Ben Kim"}
    on_time = _parent("Ann Kim", school_duty="pick_up", open_runs=("pick_up",), late=2)
    assert _agree(on_time, partner, morning=False) == {}
    done = _parent("Ben Kim", day_over=True)
    assert _agree(holder, done, morning=False) == {}


def test_rule_accepts_only_what_the_rule_gives():
    rule = {"drop_off": "Ben Kim", "pick_up": "Ann Kim"}
    assert rule_accepts(ChatAgreement(pick_up="Ann Kim"), rule)
    assert not rule_accepts(ChatAgreement(pick_up="Ben Kim"), rule)
    assert not rule_accepts(ChatAgreement(car="Ann Kim"), rule)
    assert not rule_accepts(
        ChatAgreement(meet_at="Gym", meet_time="19:00", pick_up="Ann Kim"), rule
    )


def test_rule_opening_proposes_and_partner_accepts_or_counters():
    persona = PersonaFacts(name="Ann Kim", home="Uptown apartment", vehicles=1)
    ann = _parent("Ann Kim", school_duty="drop_off", work_start=420, work_end=960)
    ben = _parent("Ben Kim", school_duty="pick_up", work_start=540, work_end=1080)
    speakers = {"Ann Kim": ann, "Ben Kim": ben}
    ctx = ChatContext(
        persona=persona, day=2, now=0, contacts={"Ben Kim": "family"},
        speakers=speakers, vehicles=1,
    )  # fmt: skip
    opening = chat_rule_policy(ctx, np.random.default_rng(0))
    assert opening.partner == "Ben Kim"
    assert opening.proposal == ChatAgreement(drop_off="Ben Kim", pick_up="Ann Kim")
    assert opening.topic == "school drop-off and pick-up, day 2"

    def turn(proposal, turn_number=1):
        return chat_turn_rule_policy(
            ChatTurnContext(
                persona=PersonaFacts(name="Ben Kim", home="Uptown apartment"),
                partner="Ann Kim", relation="family", topic=opening.topic, day=2, now=0,
                turn=turn_number, max_turns=4, transcript=[], proposal=proposal,
                speakers=speakers, vehicles=1,
            ),
            np.random.default_rng(0),
        )  # fmt: skip

    assert turn(opening.proposal).accept
    counter = turn(ChatAgreement(drop_off="Ann Kim"))
    assert not counter.accept and counter.proposal == opening.proposal
    assert turn(ChatAgreement(drop_off="Ann Kim"), 3).end  # last turn: declines


DAYTIME = {
    "ann": _parent(
        "Ann Kim", school_duty="pick_up", open_runs=("pick_up",), departed=True
    ),
    "ben": _parent("Ben Kim", school_duty="drop_off", departed=True, drove=True),
}


def _daytime_errors(proposal, ann=DAYTIME["ann"], ben=DAYTIME["ben"]):
    return validate_agreement(
        ChatAgreement(**proposal), "Ann Kim", "Ben Kim", {"Ann Kim": ann, "Ben Kim": ben},
        vehicles=1, facilities=frozenset(), now=600, morning=False,
    )  # fmt: skip


def test_daytime_agreements_are_checked_against_the_day_so_far():
    assert _daytime_errors({"pick_up": "Ben Kim"}) == []
    assert _daytime_errors(
        {"pick_up": "Ben Kim"}, ben=_parent("Ben Kim", day_over=True)
    ) == ["agreement: Ben Kim has no trip left today to pick the children up"]
    done = _parent("Ann Kim", school_duty="pick_up", departed=True)  # pick-up under way
    assert _daytime_errors({"pick_up": "Ben Kim"}, ann=done) == [
        (
            "agreement: the children's pick-up is not ahead for either of you today "
            "(done, under way or not assigned)"
        )
    ]
    assert _daytime_errors({"car": "Ann Kim"}) == [
        (
            "agreement: Ben Kim has driven the car away today; it can change hands only while "
            "it is at home"
        )
    ]
    home = _parent("Ben Kim", has_car=True)
    assert _daytime_errors({"car": "Ann Kim"}, ben=home) == [
        "agreement: Ann Kim has already left home today and cannot take the car now"
    ]
    still_home = _parent("Ann Kim")
    assert _daytime_errors({"car": "Ann Kim"}, ann=still_home, ben=home) == []


def _kim_parents(ann_hours=(420, 960), ben_hours=(540, 1080)):
    def parent(name, hours):
        return PersonaFacts(
            name=name, home="Uptown apartment", work_facility="Office",
            work_start=hours[0], work_end=hours[1], licensed=True, household="Kim",
            vehicles=2, family=tuple({"Ann Kim", "Ben Kim"} - {name}),
            children=("Cleo Kim",),
        )  # fmt: skip

    return [parent("Ann Kim", ann_hours), parent("Ben Kim", ben_hours)]


def _school_visits(model, agent):
    plans = model.plans_frame()
    mine = plans[(plans["agent"] == agent) & (plans["source"] == "plan")]
    return list(mine["facility"])


def test_rule_morning_agreement_changes_both_plans():
    # the engine: Ann drops off, Ben picks up (names); the rule: Ben starts later, Ann ends earlier
    with UrbanMobilityModel(
        population=_kim_parents(), days=1, rng=0, chat_probability=1.0,
        daytime_chat_probability=0.0, embedding="hash", collect_every=60,
    ) as model:  # fmt: skip
        model.run()
    agreed = [c for c in model.conversations if c.agreed is not None]
    assert agreed  # both may open the same talk in the same minute: the same agreement
    for talk in agreed:
        assert talk.agreed == ChatAgreement(drop_off="Ben Kim", pick_up="Ann Kim")
        assert talk.lines[1].accept and talk.morning
    assert _school_visits(model, "Ben Kim")[:2] == [
        "School",
        "Office",
    ]  # drop-off first
    assert _school_visits(model, "Ann Kim")[:2] == ["Office", "School"]  # pick-up after
    assert model.summary()["plan_errors"] == {}


@pytest.fixture
def hand_over_whenever(monkeypatch):
    """Any pick-up holder counts as late: the daytime rule fires in every run."""
    monkeypatch.setattr(conversations_module, "LATE_HANDOVER_MINUTES", 0)
    monkeypatch.setattr(household_module, "LATE_HANDOVER_MINUTES", 0)


def _same_hours_model(**kw):
    # the same hours: no morning change; the engine gives Ben the pick-up
    return UrbanMobilityModel(
        population=_kim_parents((480, 1020), (480, 1020)), days=1, rng=0,
        chat_probability=0.0, daytime_chat_probability=0.01, embedding="hash",
        collect_every=60, **kw,
    )  # fmt: skip


def _assert_pick_up_moved_to_ann(model):
    (talk,) = [c for c in model.conversations if c.agreed is not None]
    assert not talk.morning
    assert (talk.initiator, talk.partner) == ("Ben Kim", "Ann Kim")
    assert talk.agreed == ChatAgreement(pick_up="Ann Kim")
    assert model.travellers["Ann Kim"].today.school_duty == "both"
    assert model.travellers["Ben Kim"].today.school_duty is None
    trips = model.trips_frame()
    assert trips["arrival"].notna().all()
    after_work = trips[
        (trips["origin"] == "Office") & (trips["destination"] == "School")
    ]
    return set(after_work["agent"])  # who goes to the school after work


def test_rule_daytime_hand_over_changes_both_plans(hand_over_whenever):
    with _same_hours_model() as model:
        model.run()
    assert _assert_pick_up_moved_to_ann(model) == {
        "Ann Kim"
    }  # Ben drops his school run
    revisions = model.revisions_frame()
    changed = revisions[revisions["reason"].str.contains("agreed in a chat")]
    assert set(changed["agent"]) == {"Ann Kim", "Ben Kim"}
    assert set(changed["action"]) == {"replace_activities"}
    assert model.summary()["plan_errors"] == {}


@pytest.mark.parametrize("faulty", [False, True])
def test_llm_daytime_hand_over_survives_faults_slow_answers_and_idle_gaps(
    hand_over_whenever, faulty
):
    with (
        FakeLLMServer(scripted_traveller(faulty=faulty), latency_s=slow_sometimes) as server,
        _same_hours_model(
            brain="llm:openai/fake-model", brain_options=local_llm_options(server)
        ) as model,
    ):  # fmt: skip
        for _ in range(
            9 * 60
        ):  # to 09:00, then an idle gap of wall time (idle connections)
            model.step()
        time.sleep(1.5)
        model.run()
    decisions = model.decisions_frame()
    assert set(decisions["outcome"]) <= {"ok", "repaired", "fallback"}
    if not faulty:
        assert set(decisions["outcome"]) == {"ok"}
        assert "Ann Kim" in _assert_pick_up_moved_to_ann(model)
    else:  # faults may cost the chat or a turn (rule fallbacks): the day still holds
        duty = {n: a.today.school_duty for n, a in model.travellers.items()}
        assert sorted(duty.values(), key=str) in (
            [None, "both"],
            ["drop_off", "pick_up"],
        )
        assert model.trips_frame()["arrival"].notna().all()


def test_a_car_handed_over_frees_the_mode_of_whoever_is_still_at_home():
    from mesa_llm_mobility.urban.agents import DayState  # noqa: PLC0415
    from mesa_llm_mobility.urban.conversations import apply_agreement  # noqa: PLC0415

    class Member:
        def __init__(self, name, car, left):
            self.name = name
            self.persona = PersonaFacts(name=name, home="Uptown apartment", vehicles=1)
            self.today = DayState(
                day=1, vehicle_available=car, mode="drive" if car else "transit"
            )
            self.trips = [_Trip(600.0 if left else float("nan"))]

    class _Trip:
        def __init__(self, departure):
            self.day, self.cancelled, self.departure = 1, False, departure

    ann, ben = (
        Member("Ann Kim", car=False, left=True),
        Member("Ben Kim", car=True, left=False),
    )
    apply_agreement(ChatAgreement(car="Ann Kim"), (ann, ben), [ann, ben])
    assert (ann.today.vehicle_available, ben.today.vehicle_available) == (True, False)
    assert ann.today.mode == "transit"  # already out by transit: the day's mode stays
    assert ben.today.mode is None  # still at home: may switch to transit


def _revise(**changes):
    from mesa_llm_mobility.urban.decisions import PLAN_REVISION  # noqa: PLC0415

    from .test_decisions import staying_revision  # noqa: PLC0415

    ctx = staying_revision(**changes)
    out = PLAN_REVISION.rule_policy(ctx, np.random.default_rng(0))
    keep = PLAN_REVISION.validate(
        ctx, PLAN_REVISION.output_schema(action="keep", reason="as planned")
    )
    return out, keep


def test_rule_revisions_follow_what_an_agreement_changed():
    from mesa_llm_mobility.urban.plans import Activity  # noqa: PLC0415

    from .test_decisions import staying_revision  # noqa: PLC0415

    facts = staying_revision().facts
    home = Activity(facility="Uptown apartment", departure_time="17:00", mode="drive")
    work = Activity(facility="Office", departure_time="07:00", mode="drive")
    # a pick-up taken over: the school right after work, then home on arrival
    out, keep = _revise(future=[work, home])
    assert out.action == "replace_activities"
    assert [(a.facility, a.departure_time) for a in out.activities] == [
        ("Office", "07:00"), ("School", "17:00"), ("Uptown apartment", None),
    ]  # fmt: skip
    assert keep and keep[0].startswith("duty: you must pick Cleo Wu up from School")
    assert keep[0].endswith("; use replace_activities")
    # a pick-up handed over: the school visit dropped, home when it would have left
    no_runs = type(facts)(**{**facts.__dict__, "duties": ()})
    out, keep = _revise(facts=no_runs)
    assert [(a.facility, a.departure_time) for a in out.activities] == [
        ("Office", "07:00"), ("Uptown apartment", "17:00"),
    ]  # fmt: skip
    assert keep == []  # a school visit without a duty is allowed
    # the car handed over by a member still at home: the day by transit
    no_car = type(facts)(
        **{**facts.__dict__, "duties": (), "vehicle_available": False, "day_mode": None,
           "household_drivers": ("Bob Wu",)}
    )  # fmt: skip
    out, keep = _revise(facts=no_car, future=[work, home])
    assert {a.mode for a in out.activities} == {"transit"}
    assert keep == [
        (
            "vehicle: your household's 1 vehicle(s) are used by Bob Wu today: use transit "
            "or walk instead of drive; use replace_activities"
        )
    ]
