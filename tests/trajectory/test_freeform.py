"""Free-form tool calling (Table V) through the real LLM brain against the local server.

Scripted models call the location and time tools as a diligent model would, as a sloppy one
would (a visit left without its time, a wrong activity, a duration out of bounds, reworded
arguments) and not at all; the success rates must count exactly the visits whose two calls were
made without substitution, and every day must still be a valid, complete trajectory.
"""

from __future__ import annotations

import json
import re

import pytest

from mesa_llm_mobility.cognition.replies import ToolCalls, offers_tools, tool_results
from mesa_llm_mobility.cognition.testing import FakeLLMServer
from mesa_llm_mobility.trajectory.baselines import run_baseline
from mesa_llm_mobility.trajectory.benchmark import tool_table
from mesa_llm_mobility.trajectory.freeform import tool_success
from mesa_llm_mobility.trajectory.staypoints import local_dates, validate_staypoints
from tests.conftest import local_server_options

KEY = "freeform-suite-key-5b2e"
CHAIN_LINE = re.compile(r"^(\d+)\. (\w+)$", re.MULTILINE)


def _chain(body):
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return [name for _, name in CHAIN_LINE.findall(user)]


def _done(body):
    answers = [json.loads(text) for text in tool_results(body)]
    located = {a["visit"] for a in answers if "activity" in a}
    timed = {a["visit"] for a in answers if "start" in a}
    return located, timed


def _final(chain):
    return json.dumps({"visits": [{"visit": i + 1} for i in range(len(chain))]})


def diligent(body):
    """Both calls per visit, in order, one visit per turn; then the answer."""
    chain = _chain(body)
    _, timed = _done(body)
    for index, activity in enumerate(chain, 1):
        if index not in timed:
            return ToolCalls.of(
                ("location", {"visit": index, "activity": activity}),
                ("time", {"visit": index, "duration_minutes": 30}),
            )
    return _final(chain)


def reworded(body):
    """The same calls with a model's own spelling: numbers as text and floats, lower case."""
    chain = _chain(body)
    _, timed = _done(body)
    for index, activity in enumerate(chain, 1):
        if index not in timed:
            return ToolCalls.of(
                ("location", {"visit": str(index), "activity": activity.lower()}),
                (
                    "time",
                    {"visit": float(index), "duration_minutes": "30", "note": "ok"},
                ),
            )
    return "Here is the day:\n" + _final(chain)


def sloppy(body):
    """Visit 2 never timed, visit 3 asked as another activity, visit 4's duration too long."""
    chain = _chain(body)
    located, _ = _done(body)
    for index, activity in enumerate(chain, 1):
        if index in located:
            continue
        name = "Opera" if index == 3 else activity
        calls = [("location", {"visit": index, "activity": name})]
        if index != 2:
            minutes = 5000 if index == 4 else 30
            calls.append(("time", {"visit": index, "duration_minutes": minutes}))
        return ToolCalls.of(*calls)
    return _final(chain)


def silent(body):
    """No tool at all: the answer straight away."""
    return _final(_chain(body))


def _run(split, responder):
    dates = sorted(set(local_dates(split.held_out)))[:1]
    with FakeLLMServer(responder) as server:
        options = local_server_options(server, KEY, max_concurrency=8)
        run = run_baseline(
            "tool_calling",
            split.history,
            dates,
            seed=1,
            brain="llm:openai/fake-model",
            brain_options=options,
        )
        requests = server.requests
    validate_staypoints(run.stays)
    days = run.stays.groupby(["agent_id", local_dates(run.stays)]).ngroups
    assert days == split.history["agent_id"].nunique()
    assert all(offers_tools(body) for body in requests[:1])
    return run


@pytest.mark.parametrize("responder", [diligent, reworded], ids=["plain", "reworded"])
def test_a_model_that_calls_both_tools_for_every_visit_succeeds(small_split, responder):
    run = _run(small_split, responder)
    rates = tool_success(run.tool_use)
    assert rates["visit_success"] == 1.0 and rates["trajectory_success"] == 1.0
    assert (run.tool_use["tool_calls"] == 2 * run.tool_use["visits"]).all()
    assert set(run.tool_use["answer_outcome"]) == {"ok"}
    # the durations the model asked for are the stays' (but the day's last runs to midnight)
    stays = run.stays.sort_values(["agent_id", "start"])
    last = stays.groupby("agent_id").cumcount(ascending=False) == 0
    minutes = (stays["end"] - stays["start"]).dt.total_seconds() / 60
    assert ((minutes[~last] - 30).abs() < 0.05).all()


def test_a_sloppy_model_is_counted_visit_by_visit(small_split):
    run = _run(small_split, sloppy)
    tool_use = run.tool_use
    lengths = tool_use["visits"].to_numpy()
    expected_ok = sum(
        max(length - 4, 0) + (1 if length >= 1 else 0) for length in lengths
    )
    # visits 2-4 of every day fail; the others succeed unless the fallbacks pushed the day so
    # late that 30 minutes no longer fit (then their time is substituted too)
    assert expected_ok - 3 <= tool_use["visits_ok"].sum() <= expected_ok
    assert not tool_use["trajectory_ok"].any()  # every chain has a second visit
    table = tool_table([run])
    assert table["visit_success"].iloc[0] == pytest.approx(
        tool_use["visits_ok"].sum() / lengths.sum()
    )


def test_a_model_that_calls_no_tool_fails_every_visit_but_the_day_is_complete(
    small_split,
):
    run = _run(small_split, silent)
    rates = tool_success(run.tool_use)
    assert rates["visit_success"] == 0.0 and rates["trajectory_success"] == 0.0
    assert (run.tool_use["tool_calls"] == 0).all()
    assert run.workflow_success_rate == 1.0  # every visit grounded by fallback
