"""The orchestrator's ActivityChain kind and the two duration kinds: prompts, validators, rules."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mesa_llm_mobility.trajectory.activities import ACTIVITIES
from mesa_llm_mobility.trajectory.activities import ACTIVITY_INDEX as A
from mesa_llm_mobility.trajectory.durations import (
    DAY_DURATIONS,
    VISIT_DURATION,
    DayDurations,
    DayDurationsContext,
    DurationPrior,
    VisitDuration,
    VisitDurationContext,
    fit_durations,
)
from mesa_llm_mobility.trajectory.evidence import END
from mesa_llm_mobility.trajectory.orchestrator import (
    ACTIVITY_CHAIN,
    ChainContext,
    chain_rule_policy,
    sample_conditioned_chain,
    sample_markov_chain,
)


def _chain_context(**changes):
    start = np.zeros(16)
    start[A["Home"]] = 1.0
    transitions = np.zeros((16, 17))
    transitions[A["Home"], A["Work"]] = 0.6
    transitions[A["Home"], END] = 0.4
    transitions[A["Work"], A["Home"]] = 1.0
    values = {
        "agent_id": 7,
        "date": "2024-01-29",
        "weekday": 0,
        "exemplars": (("Home", "Work", "Home"),),
        "activity_shares": (("Home", 0.6), ("Work", 0.4)),
        "transitions": (("Home", "Work", 0.5), ("Work", "Home", 0.5)),
        "feasible": ("Home", "Work", "EatOut"),
        "max_length": 5,
        "start_probs": start,
        "transition_probs": transitions,
    }
    return ChainContext(**(values | changes))


def test_chain_prompt_has_day_signals_exemplars_summaries_and_constraints():
    messages = ACTIVITY_CHAIN.messages(_chain_context())
    user = messages[-1]["content"]
    assert "Date 2024-01-29: Monday, a weekday" in user
    assert "1. ['Home', 'Work', 'Home']" in user
    assert "Home 0.60, Work 0.40" in user and "Home->Work 0.50" in user
    assert "use only these activities: Home, Work, EatOut" in user
    assert (
        "never the same activity twice in a row" in user
        and "at most 5 activities" in user
    )
    assert '"activities"' in messages[0]["content"]  # the schema instruction


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (
            '{"activities": ["Home", "Home"]}',
            "twice in a row: Home at positions 1 and 2",
        ),
        ('{"activities": ["Home", "Gym"]}', "unknown activities ['Gym']"),
        ('{"activities": ["Home", "School"]}', "['School'] have no known place"),
        (
            '{"activities": ["Home", "Work", "Home", "Work", "Home", "Work"]}',
            "between 1 and 5 are allowed",
        ),
        ('{"activities": []}', "field activities"),
        ("['Home', 'Work']", "no valid JSON object"),
    ],
)
def test_chain_verifier_names_the_broken_constraint(answer, error):
    output, errors = ACTIVITY_CHAIN.parse(_chain_context(), answer)
    assert output is None
    assert any(error in message for message in errors), errors


def test_chain_rule_policy_samples_the_markov_model():
    rng = np.random.default_rng(0)
    context = _chain_context(max_length=9)
    chains = [ACTIVITY_CHAIN.rule_policy(context, rng).activities for _ in range(400)]
    assert all(chain[0] == "Home" for chain in chains)
    assert all(a != b for chain in chains for a, b in itertools.pairwise(chain))
    assert all(len(chain) <= 9 and set(chain) <= {"Home", "Work"} for chain in chains)
    # P(end after the first Home) = 0.4
    assert np.mean([len(chain) == 1 for chain in chains]) == pytest.approx(
        0.4, abs=0.06
    )
    assert (
        ACTIVITY_CHAIN.parse(context, '{"activities": ["Home", "Work", "Home"]}')[1]
        == []
    )


def test_markov_sampler_respects_the_allowed_mask_and_the_length():
    start = np.full(16, 1 / 16)
    transitions = np.full((16, 17), 1 / 17)
    allowed = np.zeros(16, dtype=bool)
    allowed[[A["Home"], A["EatOut"]]] = True
    chain = sample_markov_chain(
        start, transitions, np.random.default_rng(1), 4, allowed
    )
    assert set(chain) <= {A["Home"], A["EatOut"]} and len(chain) <= 4


def test_chain_prompt_and_verifier_carry_the_evidence_length_range_and_anchors():
    context = _chain_context(
        lengths=(3, 5, 4), first_activity="Home", last_activity="Home"
    )
    user = ACTIVITY_CHAIN.messages(context)[-1]["content"]
    assert "between 3 and 5 activities (the history's days have 4.0 on average)" in user
    assert "must start with Home" in user and "must end with Home" in user
    assert (
        "usually starts and ends" not in user
    )  # the hard anchors replace the soft prior
    _, errors = ACTIVITY_CHAIN.parse(context, '{"activities": ["Home", "Work"]}')
    assert any("between 3 and 5 are allowed" in message for message in errors), errors
    _, errors = ACTIVITY_CHAIN.parse(
        context, '{"activities": ["Work", "Home", "Work"]}'
    )
    assert "the chain must start with Home, not Work" in errors
    assert "the chain must end with Home, not Work" in errors
    assert (
        ACTIVITY_CHAIN.parse(context, '{"activities": ["Home", "Work", "Home"]}')[1]
        == []
    )


def test_conditioned_sampler_draws_exact_lengths_with_the_markov_probabilities():
    # Home -> Work 0.6 / end 0.4, Work -> Home: chains of length 3 are exactly
    # Home, Work, Home; an unconditioned draw stops at the first Home 40 % of the time
    context = _chain_context()
    rng = np.random.default_rng(0)
    chain = sample_conditioned_chain(
        context.start_probs, context.transition_probs, rng, 3
    )
    assert chain == [A["Home"], A["Work"], A["Home"]]
    assert (
        sample_conditioned_chain(context.start_probs, context.transition_probs, rng, 2)
        is None  # Work never ends a day
    )
    # from Home: Work (0.6) or EatOut (0.2), both back to Home; the ratio survives conditioning
    transitions = context.transition_probs.copy()
    transitions[A["Home"]] = 0.0
    transitions[A["Home"], [A["Work"], A["EatOut"], END]] = (0.6, 0.2, 0.2)
    transitions[A["EatOut"], A["Home"]] = 1.0
    middles = [
        sample_conditioned_chain(context.start_probs, transitions, rng, 3)[1]
        for _ in range(4000)
    ]
    assert abs(np.mean(np.equal(middles, A["Work"])) - 0.75) < 0.03


def test_rule_chain_takes_an_evidence_length_and_ends_at_the_anchor():
    context = _chain_context(
        lengths=(5,), first_activity="Home", last_activity="Home", max_length=24
    )
    rng = np.random.default_rng(3)
    chains = [chain_rule_policy(context, rng).activities for _ in range(50)]
    assert all(chain == ["Home", "Work", "Home", "Work", "Home"] for chain in chains)
    # without lengths: the unconditioned chain (lengths 1, 3, 5, ...)
    free = _chain_context(max_length=24)
    lengths = {len(chain_rule_policy(free, rng).activities) for _ in range(200)}
    assert 1 in lengths and len(lengths) > 2


def _prior(activity="Work", samples=(480.0, 500.0), low=5, high=720):
    return DurationPrior(
        activity,
        float(np.mean(samples)) if samples else 60.0,
        np.array(samples),
        low,
        high,
    )


def test_visit_duration_bounds_are_the_budget_and_d_max():
    context = VisitDurationContext(
        7,
        _prior(),
        start_minute=1200,
        remaining=("Home",),
        remaining_expected_minutes=300,
    )
    assert context.budget_minutes == 240 and context.bounds == (5, 235)  # Home keeps 5
    assert VISIT_DURATION.parse(context, '{"duration_minutes": 236}')[1] == [
        (
            "duration_minutes 236 is outside [5, 235] (240 minutes are left before "
            "midnight, 5 of them for the remaining activities)"
        )
    ]
    assert VISIT_DURATION.parse(context, '{"duration_minutes": 235}')[
        0
    ] == VisitDuration(duration_minutes=235)
    prompt = VISIT_DURATION.messages(context)[-1]["content"]
    assert (
        "Current time: 20:00" in prompt and "historical average: 490 minutes" in prompt
    )
    assert (
        "Remaining activities today: ['Home']" in prompt
        and "Time until midnight: 240 minutes, at least 5 of them" in prompt
    )
    last = VisitDurationContext(7, _prior(), 1200, (), 0.0)
    assert last.bounds == (5, 240)
    # the rule draws from the prior and clips to the budget
    assert (
        VISIT_DURATION.rule_policy(last, np.random.default_rng(0)).duration_minutes
        == 240
    )


def test_visit_duration_rule_keeps_its_share_under_schedule_pressure():
    context = VisitDurationContext(
        7,
        _prior(),
        start_minute=1200,
        remaining=("Home",),
        remaining_expected_minutes=300,
        remaining_travel_minutes=20.0,
    )
    assert context.bounds == (5, 215)  # 240 - 20 travel - 5 for Home
    drawn = context.prior.draw(np.random.default_rng(0))
    # 220 minutes after the travel, shared 490 : 300 between this visit and the rest
    expected = round(220 * drawn / (drawn + 300))
    assert 120 < expected < 150
    assert (
        VISIT_DURATION.rule_policy(context, np.random.default_rng(0)).duration_minutes
        == expected
    )


def test_visit_duration_rule_policy_without_samples_is_the_mean_prior():
    context = VisitDurationContext(7, _prior(samples=()), 480, (), 0)
    assert (
        VISIT_DURATION.rule_policy(context, np.random.default_rng(0)).duration_minutes
        == 60
    )


def test_day_durations_verifier_and_rule():
    context = DayDurationsContext(
        7,
        "2024-01-29",
        first_start_minute=0.0,
        travel_minutes=(0.0, 30.0, 30.0),
        priors=(
            _prior("Home", (450.0,)),
            _prior("Work", (500.0,)),
            _prior("Home", (400.0,)),
        ),
    )
    assert DAY_DURATIONS.parse(context, '{"durations_minutes": [450, 500]}')[1] == [
        "durations_minutes has 2 values; the day has 3 visits"
    ]
    errors = DAY_DURATIONS.parse(context, '{"durations_minutes": [450, 900, 400]}')[1]
    assert errors == [
        "visit 2 (Work): 900 minutes is outside [5, 720]",
        "the day would end at minute 1810, after midnight: shorten the durations by 370 minutes in total",
    ]
    ok = DAY_DURATIONS.parse(context, '{"durations_minutes": [450, 500, 430]}')
    assert ok == (DayDurations(durations_minutes=[450, 500, 430]), [])
    rule = DAY_DURATIONS.rule_policy(
        context, np.random.default_rng(0)
    ).durations_minutes
    assert context.end_minute(rule) <= 1440 and all(value >= 5 for value in rule)
    assert (
        "add up to at most 1380 minutes"
        in DAY_DURATIONS.messages(context)[-1]["content"]
    )


def test_fit_durations_shrinks_the_slack_proportionally():
    fitted = fit_durations(np.array([100.0, 300.0]), np.array([5.0, 5.0]), 205.0)
    # excess 195 of slack 95 + 295: each keeps its minimum plus half its slack
    assert fitted.tolist() == [52, 152]
    assert fit_durations(
        np.array([10.0, 20.0]), np.array([5.0, 5.0]), 100.0
    ).tolist() == [10, 20]


def test_vocabulary_is_numosims_sixteen_codes():
    assert (
        len(ACTIVITIES) == 16
        and ACTIVITIES[0] == "Transportation"
        and ACTIVITIES[15] == "DropOff"
    )
