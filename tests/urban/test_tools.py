"""Tools: travel times, the metro timetable, congestion and occupancy, and the TravelQuery decision."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from pydantic import ValidationError

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
)
from mesa_llm_mobility.experiment.lifecycle import resume_run
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.urban import UrbanMobilityModel
from mesa_llm_mobility.urban.app.inspector import _tool_rows, report_of_model
from mesa_llm_mobility.urban.decisions import (
    TRAVEL_QUERY,
    ToolCall,
    TravelQueryOutput,
)
from mesa_llm_mobility.urban.metro import next_train, transit_journey
from mesa_llm_mobility.urban.parameters import UrbanParameters
from mesa_llm_mobility.urban.tools import (
    MAX_TOOL_CALLS,
    TOOL_NAMES,
    ToolError,
    TravelTools,
)
from tests.urban.runs import kpis, run_urban

from .conftest import (
    local_llm_options,
    scripted_traveller,
    slow_sometimes,
    town_personas,
)


@pytest.fixture(scope="module")
def model():
    with UrbanMobilityModel(population=town_personas(), n_agents=8, rng=0) as m:
        yield m


def test_travel_times_agree_with_the_free_flow_table_and_the_timetable(model):
    tools = TravelTools(model.view, 7 * 60)
    drive = tools.travel_time("Uptown apartment", "Office", "drive")
    free = model.travel_times[("Uptown apartment", "Office", "drive")]
    assert drive.startswith(
        f"Uptown apartment -> Office by drive leaving 07:00: ~{free:.0f} min"
    )
    links = model.routes[("Uptown apartment", "Office", "transit")]
    arrival, _ = transit_journey(model.engine.index, links, 7 * 60 + 3)
    transit = tools.travel_time("Uptown apartment", "Office", "transit", "07:03")
    assert f"leaving 07:03: ~{arrival - (7 * 60 + 3):.0f} min" in transit
    # a time before now is now
    assert "leaving 07:00" in tools.travel_time("Office", "Factory", "walk", "06:00")


def test_the_timetable_lists_the_next_trains_of_each_direction(model):
    tools = TravelTools(model.view, 7 * 60 + 3)
    answer = tools.metro_timetable("Supermarket")  # Node_6: both lines cross there
    line = model.town.metro_lines["Metro_1"]
    stop = line.stops.index("Node_6")
    first = next_train(line, stop, 7 * 60 + 3)
    expected = ", ".join(
        f"{int(first + k * line.headway) // 60:02d}:{int(first + k * line.headway) % 60:02d}"
        for k in range(3)
    )
    assert "Metro_1 towards Node_7 (" in answer and expected in answer
    assert answer.count("towards") == 4  # two lines, two directions


def test_congestion_and_occupancy_and_bad_arguments(model):
    tools = TravelTools(model.view, 0)
    assert tools.link_congestion("Ave_2_link_2") == (
        "Ave_2_link_2: Node_5 -> Node_6 ~0 min wait; Node_6 -> Node_5 ~0 min wait"
    )
    capacity = model.town.facilities["Gym"].capacity
    assert tools.facility_occupancy("Gym").startswith(f"Gym: 0 inside of {capacity}")
    for call, message in [
        (("link_congestion", {"link": "Moon_link"}), "link: unknown link 'Moon_link'"),
        (("facility_occupancy", {"facility": "Moon"}), "unknown facility 'Moon'"),
        (("metro_timetable", {"stop": "Gym"}), "stop: 'Gym' is not a metro stop"),
        (
            ("travel_time", {"origin": "Gym", "destination": "Moon", "mode": "walk"}),
            "destination: unknown node or facility 'Moon'",
        ),
        (("fly", {}), "unknown tool 'fly'"),
        (("link_congestion", {"link": 5}), "link_congestion: link must be a string"),
        (("facility_occupancy", {"place": "Gym"}), "unexpected keyword argument"),
    ]:
        with pytest.raises(ToolError, match=message):
            tools.call(*call)


def test_queries_are_validated_and_bounded(model):
    agent = next(iter(model.travellers.values()))
    plan = agent.plan_request(model.view, 1)
    context = agent.travel_query_request(model.view, 1, plan).context
    bad = TravelQueryOutput(
        queries=[
            ToolCall(tool="travel_time", origin="Gym"),
            ToolCall(tool="metro_timetable", stop="Moon"),
            ToolCall(tool="link_congestion", link="Moon_link"),
        ]
    )
    assert TRAVEL_QUERY.validate(context, bad) == [
        "queries[0] (travel_time): missing destination, mode",
        "queries[1] (metro_timetable): unknown stop 'Moon'; use a facility or node id",
        "queries[2] (link_congestion): unknown link 'Moon_link'",
    ]
    with pytest.raises(ValidationError):
        TravelQueryOutput(
            queries=[ToolCall(tool="link_congestion", link="x")] * (MAX_TOOL_CALLS + 1)
        )
    assert TRAVEL_QUERY.rule_policy(context, None) == TravelQueryOutput()
    user = TRAVEL_QUERY.messages(context)[1]["content"]
    assert "Next you will plan your day" in user and "Metro_1: Node_4" in user


def test_rule_travellers_never_query(model):
    with UrbanMobilityModel(
        population=town_personas(), n_agents=6, rng=0, tools=True, collect_every=60
    ) as rules:
        rules.run()
    assert "TravelQuery" not in set(rules.decisions_frame()["kind"])
    assert rules.tool_calls == []


def _tool_run(server, ledger, **options):
    """Six LLM travellers with tools for a day; native tool calling unless told otherwise."""
    return UrbanMobilityModel(
        population=town_personas(), n_agents=6, rng=2, tools=True,
        chat_probability=0.0, daytime_chat_probability=0.0, collect_every=60,
        brain="llm:openai/fake-model",
        brain_options=local_llm_options(
            server, ledger=ledger, **({"tool_calling": "native"} | options)
        ),
    )  # fmt: skip


def _run_faulty_or_not(ledger, faulty, tool_calling):
    """A day of :func:`_tool_run` with slow answers, with provider faults or not."""
    responder = scripted_traveller(faulty=faulty, every=4)
    with (
        FakeLLMServer(responder, latency_s=slow_sometimes) as server,
        _tool_run(server, ledger, tool_calling=tool_calling) as model,
    ):
        model.run()
        return model, server.request_count


def _resolved_and_bounded(model, via):
    """The decisions and tool calls of a run: all resolved, all answered, bounded, ``via``."""
    decisions = model.decisions_frame()
    assert set(decisions["outcome"]) <= {"ok", "repaired", "fallback"}
    calls = model.tool_calls_frame()
    assert set(calls["via"]) == {via} and calls["ok"].all()
    assert (calls.groupby(["agent", "minute"]).size() <= MAX_TOOL_CALLS).all()
    return decisions, calls


@pytest.mark.slow
@pytest.mark.parametrize("faulty", [False, True])
def test_llm_travellers_call_tools_and_read_the_answers(tmp_path, faulty):
    ledger = tmp_path / "ledger.jsonl"
    model, _ = _run_faulty_or_not(ledger, faulty, tool_calling="auto")
    decisions, calls = _resolved_and_bounded(model, via="structured")
    queries = decisions[decisions["kind"] == "TravelQuery"]
    plans = decisions[decisions["kind"] == "DailyPlan"]
    assert len(queries) >= len(plans) == len(model.travellers)
    assert set(calls["tool"]) >= {"travel_time", "metro_timetable"}
    records = Ledger.read(ledger)
    asked = [
        r for r in records if r["kind"] == "TravelQuery" and r["outcome"] != "fallback"
    ]
    assert asked and all(len(r["result"]["queries"]) <= MAX_TOOL_CALLS for r in asked)
    # the answers reach the plan's prompt, so they are in the ledger with the plan
    answered = calls[calls["minute"] == 1]
    for agent, answers in answered.groupby("agent"):
        plan = next(
            r for r in records if r["kind"] == "DailyPlan" and r["agent_id"] == agent
        )
        user = plan["messages"][1]["content"]
        assert "Looked up:" in user
        assert all(answer in user for answer in answers["answer"])
    row = calls.iloc[0]
    assert json.loads(row["arguments"]) and row["day"] == 1
    # the app's inspector lists them
    report = report_of_model(model, row["agent"])
    assert list(report.tool_calls["answer"]) == list(
        calls.loc[calls["agent"] == row["agent"], "answer"]
    )
    assert set(report.tool_calls["via"]) == {"structured"}


@pytest.mark.slow
@pytest.mark.parametrize("faulty", [False, True])
def test_llm_travellers_call_tools_natively(tmp_path, faulty):
    ledger = tmp_path / "ledger.jsonl"
    model, served = _run_faulty_or_not(ledger, faulty, tool_calling="native")
    decisions, calls = _resolved_and_bounded(model, via="native")
    assert "TravelQuery" not in set(decisions["kind"])  # the decisions call them
    assert set(calls["tool"]) == {"travel_time", "metro_timetable", "link_congestion"}
    records = Ledger.read(ledger)
    plans = [r for r in records if r["kind"] == "DailyPlan"]
    assert len(plans) == len(model.travellers)
    assert all(r["params"]["tools"] == list(TOOL_NAMES) for r in plans)
    # each call is in its decision's ledger record, with the answer the table has
    recorded = [
        (r["agent_id"], result["answer"])
        for r in records
        for round_ in r["rounds"]
        for result in round_.get("tool_results") or ()
        if result["executed"]
    ]
    assert sorted(recorded) == sorted(zip(calls["agent"], calls["answer"], strict=True))
    first_plan = next(r for r in plans if r["outcome"] == "ok")
    assert "Looked up:" not in first_plan["messages"][1]["content"]
    assert Ledger.summarize_file(ledger).loc["all", "http_calls"] == served
    assert b"sk-local" not in ledger.read_bytes()
    row = calls.iloc[0]
    report = report_of_model(model, row["agent"])
    assert list(report.tool_calls["answer"]) == list(
        calls.loc[calls["agent"] == row["agent"], "answer"]
    )
    assert set(report.tool_calls["via"]) == {"native"}


@pytest.mark.slow
def test_native_tool_calls_replay_from_the_ledger_with_no_call(tmp_path):
    ledger = tmp_path / "ledger.jsonl"
    with (
        FakeLLMServer(
            scripted_traveller(faulty=True), latency_s=slow_sometimes
        ) as server,
        _tool_run(server, ledger) as live,
    ):
        live.run()
    with (
        FakeLLMServer(scripted_traveller(faulty=False)) as server,
        _tool_run(server, tmp_path / "again.jsonl", replay=ledger) as again,
    ):
        again.run()
        assert server.request_count == 0
    pd.testing.assert_frame_equal(live.tool_calls_frame(), again.tool_calls_frame())
    pd.testing.assert_frame_equal(live.decisions_frame(), again.decisions_frame())
    assert Ledger.summarize_file(tmp_path / "again.jsonl").loc["all", "http_calls"] == 0


def test_a_server_without_tool_calling_gets_the_structured_query(tmp_path):
    with (
        FakeLLMServer(scripted_traveller(faulty=False), rejects_tools=True) as server,
        _tool_run(server, tmp_path / "ledger.jsonl") as model,
    ):
        model.run()
        refused = sum("tools" in body for body in server.requests)
    # the first batch (the plans, in flight together) is refused once each, then never again
    assert refused == len(model.travellers) and not model.brain.native_tools
    calls = model.tool_calls_frame()
    assert set(calls["via"]) == {"structured"} and calls["ok"].all()
    assert "TravelQuery" in set(model.decisions_frame()["kind"])
    # the model litellm does not know asks the structured way from the start (auto)
    with (
        FakeLLMServer(scripted_traveller(faulty=False)) as server,
        _tool_run(server, None, tool_calling="auto") as auto,
    ):
        auto.run(days=1)
        assert not any("tools" in body for body in server.requests)
    assert set(auto.tool_calls_frame()["via"]) == {"structured"}


@pytest.mark.slow
def test_a_resumed_run_replays_its_native_tool_calls_with_no_call(tmp_path):
    config = {
        "days": 2,
        "n_agents": 6,
        "seed": 1,
        "tools": True,
        "brain": "llm:openai/fake-model",
    }
    with FakeLLMServer(scripted_traveller(faulty=True)) as server:
        options = local_llm_options(server, tool_calling="native")
        source = run_urban(tmp_path / "run", config, progress=False, brain_options=options)  # fmt: skip
        served = server.request_count
    calls = source.run.read_table("tool_calls")
    assert set(calls["via"]) == {"native"} and set(calls["day"]) == {1, 2}
    copy = tmp_path / "copy"
    shutil.copytree(source.run.path, copy)
    # as if the process died during day 2's checkpoint: day 2 is answered from the ledger
    RunDirectory(copy).checkpoint_path(2).write_bytes(b"truncated")
    (copy / "summary.json").unlink()
    with FakeLLMServer(scripted_traveller(faulty=False)) as server:
        options = local_llm_options(server, tool_calling="native")
        resumed = resume_run(copy, progress=False, brain_options=options)
        assert server.request_count == 0
    pd.testing.assert_frame_equal(calls, resumed.run.read_table("tool_calls"))
    assert kpis(resumed)["llm"].loc["all", "http_calls"] == served


def test_the_inspector_reads_tool_calls_saved_before_native_calling():
    saved = pd.DataFrame(
        {"day": [1, 1], "minute": [5, 900], "agent": ["a", "a"], "tool": ["t", "t"],
         "arguments": ["{}", "{}"], "answer": ["x", "y"], "ok": [True, True]}
    )  # fmt: skip
    rows = _tool_rows(saved, "a", 1, 600)
    assert list(rows["answer"]) == ["x"] and list(rows["via"]) == ["structured"]


@pytest.mark.slow
def test_a_run_saves_its_tool_calling_and_a_resumed_run_keeps_it(tmp_path, monkeypatch):
    config = {
        "days": 2,
        "n_agents": 4,
        "seed": 1,
        "tools": True,
        "brain": "llm:openai/fake-model",
    }
    assert config.get("tool_calling") is None  # resolved when the run starts
    monkeypatch.setenv("MLM_TOOL_CALLING", "native")
    with FakeLLMServer(
        scripted_traveller(faulty=True), latency_s=slow_sometimes
    ) as server:
        first = run_urban(
            tmp_path / "run", config, progress=False, stop_after=1,
            brain_options=local_llm_options(server),
        )  # fmt: skip
    assert first.run.config["tool_calling"] == "native"
    # resumed without the variable: the default (auto) would ask this model the structured way
    monkeypatch.delenv("MLM_TOOL_CALLING")
    with FakeLLMServer(
        scripted_traveller(faulty=True), latency_s=slow_sometimes
    ) as server:
        with pytest.raises(
            ValueError,
            match=r"config\.json: tool_calling is 'native', the brain options ask for "
            r"'structured'",
        ):
            resume_run(
                first.run.path, progress=False,
                brain_options=local_llm_options(server, tool_calling="structured"),
            )  # fmt: skip
        assert server.request_count == 0
        resumed = resume_run(
            first.run.path, progress=False, brain_options=local_llm_options(server)
        )
        assert any("tools" in body for body in server.requests)
    calls = resumed.run.read_table("tool_calls")
    assert set(calls.loc[calls["day"] == 2, "via"]) == {"native"}


def test_tool_calling_in_a_config_is_one_of_the_choices(finished_run):
    assert finished_run.run.config["tool_calling"] is None  # a rule run calls no tools
    assert UrbanParameters(tool_calling="structured").tool_calling == "structured"
    with pytest.raises(ValueError, match="tool_calling: expected one of auto, native"):
        UrbanParameters(tool_calling="sometimes")
