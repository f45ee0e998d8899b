from __future__ import annotations

import pytest
from pydantic import ValidationError

from mesa_llm_mobility.urban.clock import format_hhmm, parse_hhmm
from mesa_llm_mobility.urban.plans import (
    Activity,
    DailyPlan,
    FamilyDuty,
    PlanFacts,
    PlanRule,
    check_plan,
    issue_rule,
    validate_plan,
)
from mesa_llm_mobility.urban.routing import NetworkIndex
from mesa_llm_mobility.urban.scenario import load_scenario

TOWN = load_scenario("nguyen_dupuis")
INDEX = NetworkIndex(TOWN)
TO_OFFICE = ["Ave_1_link_1", "St_5_link_1", "St_5_link_2"]


def facts(**changes) -> PlanFacts:
    base = {
        "home": "Uptown apartment",
        "start_place": "Uptown apartment",
        "now": 1,
        "licensed": True,
        "vehicle_available": True,
        "vehicles": 1,
        "facilities": frozenset(TOWN.facilities),
        "index": INDEX,
    }
    base.update(changes)
    return PlanFacts(**base)


def act(facility: str, time: str | None, mode: str = "drive", **kw) -> Activity:
    return Activity(facility=facility, departure_time=time, mode=mode, **kw)


def commute(mode: str = "drive") -> list[Activity]:
    return [
        act("Office", "07:20", mode, reflect_every=150, description="Work"),
        act("Uptown apartment", "17:00", mode, description="Return home"),
    ]


def rules(activities, **changes) -> list[str]:
    return [str(i.rule) for i in check_plan(activities, facts(**changes))]


def test_valid_plan_has_no_errors():
    assert validate_plan(DailyPlan(activities=commute()), facts()) == []


def test_clock_parsing_and_formatting():
    assert parse_hhmm("7:05") == 425
    assert format_hhmm(425) == "07:05"
    assert format_hhmm(1440 + 61) == "01:01"
    with pytest.raises(ValueError, match="25:00"):
        parse_hhmm("25:00")


def test_schema_rejects_bad_time_and_short_reflection():
    with pytest.raises(ValidationError, match="clock time"):
        Activity(facility="Office", departure_time="7h20")
    with pytest.raises(ValidationError, match="reflect_every"):
        Activity(facility="Office", reflect_every=10)
    with pytest.raises(ValidationError):
        DailyPlan(activities=[])


def test_unknown_facility():
    issues = check_plan([act("Moon base", "08:00"), *commute()[1:]], facts())
    assert [i.rule for i in issues] == [PlanRule.FACILITY]
    assert "unknown facility 'Moon base'" in issues[0].message
    assert "Office" in issues[0].message


def test_unlicensed_person_does_not_drive():
    (issue,) = check_plan(commute(), facts(licensed=False))
    assert issue.rule is PlanRule.VEHICLE and "no driving licence" in issue.message
    assert rules(commute("transit"), licensed=False) == []


def test_no_more_household_drivers_than_vehicles():
    (issue,) = check_plan(
        commute(), facts(vehicle_available=False, household_drivers=("Ann",))
    )
    assert issue.rule is PlanRule.VEHICLE
    assert "used by Ann" in issue.message
    assert rules(commute(), vehicles=0) == ["vehicle"]


def test_one_mode_per_day():
    mixed = [commute()[0], act("Uptown apartment", "17:00", "transit")]
    assert rules(mixed) == ["mode"]
    assert rules(commute("transit"), day_mode="drive") == ["mode"]


def test_times_increase_and_are_not_in_the_past():
    backwards = [act("Office", "09:00"), act("Uptown apartment", "08:00")]
    (issue,) = check_plan(backwards, facts())
    assert (
        issue.rule is PlanRule.TIME
        and "earlier than the previous departure 09:00" in issue.message
    )
    (issue,) = check_plan(commute(), facts(now=parse_hhmm("08:00")))
    assert "earlier than the current time 08:00" in issue.message


def test_lunch_at_lunch_time():
    late_lunch = [
        act("Food court", "19:00", description="Have lunch with Sophia"),
        act("Uptown apartment", "20:00"),
    ]
    (issue,) = check_plan(late_lunch, facts())
    assert (
        issue.rule is PlanRule.MEAL
        and "lunch must start between 11:00 and 14:00" in issue.message
    )
    fine = [
        act("Food court", "12:00", description="lunch"),
        act("Uptown apartment", "13:00"),
    ]
    assert rules(fine) == []


def test_explicit_paths_are_checked():
    good = [act("Office", "07:00", path=TO_OFFICE), act("Uptown apartment", "17:00")]
    assert rules(good) == []
    broken = [act("Office", "07:00", path=["Ave_1_link_1", "St_4_link_2"])]
    issues = check_plan([*broken, act("Uptown apartment", "17:00")], facts())
    assert [i.rule for i in issues] == [PlanRule.PATH]
    assert "path link 1 ('St_4_link_2')" in issues[0].message
    metro_by_car = [
        act("Office", "07:00", path=["Metro_2_link_1"]),
        act("Uptown apartment", "17:00"),
    ]
    assert "metro link in a drive path" in str(check_plan(metro_by_car, facts())[0])


def test_last_activity_returns_home():
    issues = check_plan(commute()[:1], facts())
    assert [i.rule for i in issues] == [PlanRule.HOME]
    assert "Uptown apartment" in issues[0].message


def test_messages_start_with_their_rule():
    message = validate_plan(DailyPlan(activities=commute()[:1]), facts())[0]
    assert message.startswith("home: ")
    assert issue_rule(message) == "home"
    assert issue_rule("field x: missing") is None


DROP_OFF = FamilyDuty("drop_off", "School", ("Cleo Wu",), "Office", 480)
PICK_UP = FamilyDuty("pick_up", "School", ("Cleo Wu",), "Office", 1020)


def school_day(drop: bool = True, pick: bool = True) -> list[Activity]:
    """Home -> (School) -> Office -> (School) -> home, as the rule policy plans it."""
    day = [act("Office", None if drop else "07:20", description="Work")]
    if drop:
        day.insert(0, act("School", "07:10", description="Drop Cleo off"))
    if pick:
        day += [act("School", "17:00"), act("Uptown apartment", None)]
    else:
        day.append(act("Uptown apartment", "17:00"))
    return day


def test_school_runs_kept_are_valid():
    both = facts(duties=(DROP_OFF, PICK_UP))
    assert check_plan(school_day(), both) == []
    assert check_plan(school_day(pick=False), facts(duties=(DROP_OFF,))) == []
    assert check_plan(school_day(drop=False), facts(duties=(PICK_UP,))) == []


def test_a_dropped_drop_off_is_a_specific_duty_error():
    issues = check_plan(school_day(drop=False), facts(duties=(DROP_OFF, PICK_UP)))
    assert [i.rule for i in issues] == [PlanRule.DUTY]
    assert str(issues[0]) == (
        "duty: you must drop Cleo Wu off at School before work (08:00) today, and the plan "
        "drops it: add a School activity before the Office one"
    )
    # a school visit after work is the pick-up, not the drop-off
    assert rules(school_day(drop=False), duties=(DROP_OFF,)) == ["duty"]


def test_a_dropped_pick_up_is_a_specific_duty_error():
    issues = check_plan(school_day(pick=False), facts(duties=(DROP_OFF, PICK_UP)))
    assert [str(i) for i in issues] == [
        (
            "duty: you must pick Cleo Wu up from School after work (17:00) today, and the plan "
            "drops it: add a School activity after the Office one, before returning home"
        )
    ]
    # one school visit cannot be both runs of a parent who has both
    no_work = [act("School", "07:30"), act("Uptown apartment", "08:00")]
    assert rules(no_work, duties=(DROP_OFF, PICK_UP)) == ["duty"]
    gym_day = [act("Gym", "10:00"), act("Uptown apartment", "12:00")]
    assert "School activity in the afternoon" in str(
        check_plan(gym_day, facts(duties=(PICK_UP,)))[0]
    )


def test_duties_count_the_visits_already_made():
    """A revision at work need not repeat the morning's drop-off, but must keep the pick-up."""
    at_work = facts(
        start_place="Office", now=600, duties=(DROP_OFF, PICK_UP),
        visited=("School", "Office"),
    )  # fmt: skip
    home = [act("Uptown apartment", "17:00")]
    assert [str(i.rule) for i in check_plan(home, at_work)] == ["duty"]
    assert (
        check_plan([act("School", "17:00"), act("Uptown apartment", None)], at_work)
        == []
    )
    assert (
        check_plan(home, facts(duties=(PICK_UP,), visited=("Office", "School"))) == []
    )


def test_duty_messages_name_the_children_or_say_the_children():
    assert DROP_OFF.describe() == "drop Cleo Wu off at School before work (08:00)"
    anonymous = FamilyDuty("pick_up", "School", (), "Office", None)
    assert anonymous.describe() == "pick the children up from School after work"
    twins = FamilyDuty("pick_up", "School", ("Ana", "Ben"), "Office", 1020)
    assert "pick Ana and Ben up" in twins.describe()
