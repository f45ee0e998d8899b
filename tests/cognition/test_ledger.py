import json

import pandas as pd
import pytest

from mesa_llm_mobility.cognition.kinds import Outcome
from mesa_llm_mobility.cognition.ledger import (
    Ledger,
    ReplayIndex,
    decision_record,
    llm_outcome_shares,
    llm_result_columns,
    llm_summary_lines,
    messages_hash,
    mostly_fallback,
    request_key,
    summarize,
)


def _record(
    kind="K",
    agent=1,
    outcome=Outcome.OK,
    attempts=1,
    latency=0.1,
    key="k",
    tokens=(10, 5),
    cost=0.001,
    rounds=1,
    replayed=False,
    carried=0,
):
    return decision_record(
        kind=kind,
        agent_id=agent,
        model="m",
        params={"temperature": 0.0},
        messages=[{"role": "user", "content": "hi"}],
        digest="d",
        key=key,
        rounds=[{"raw": "{}", "errors": []}] * rounds,
        result={"x": 1},
        outcome=outcome,
        reason=None,
        attempts=attempts,
        latency_s=latency,
        prompt_tokens=tokens[0],
        completion_tokens=tokens[1],
        cost_usd=cost,
        replayed=replayed,
        carried_attempts=carried,
    )


def test_messages_hash_depends_on_role_and_content_only():
    a = [{"role": "user", "content": "hi", "name": "x"}]
    b = [{"role": "user", "content": "hi"}]
    assert messages_hash(a) == messages_hash(b)
    assert messages_hash(b) != messages_hash([{"role": "system", "content": "hi"}])


def test_request_key_distinguishes_each_part():
    base = request_key("K", 1, "m", {"temperature": 0}, "d")
    assert base == request_key("K", 1, "m", {"temperature": 0}, "d")
    others = [
        request_key("J", 1, "m", {"temperature": 0}, "d"),
        request_key("K", 2, "m", {"temperature": 0}, "d"),
        request_key("K", 1, "n", {"temperature": 0}, "d"),
        request_key("K", 1, "m", {"temperature": 1}, "d"),
        request_key("K", 1, "m", {"temperature": 0}, "e"),
    ]
    assert base not in others
    assert len(set(others)) == len(others)


def test_file_round_trip_and_append_only(tmp_path):
    path = tmp_path / "run" / "ledger.jsonl"
    ledger = Ledger(path)
    ledger.append_many([_record(agent=1), _record(agent=2)])
    ledger.close()
    again = Ledger(path)
    again.append_many([_record(agent=3)])
    again.close()
    assert [record["agent_id"] for record in Ledger.read(path)] == [1, 2, 3]


def test_corrupt_ledger_line_is_named(tmp_path):
    path = tmp_path / "ledger.jsonl"
    path.write_text(json.dumps(_record()) + "\n{broken\n")
    with pytest.raises(
        ValueError, match=r"ledger.jsonl: line 2 is not a valid ledger record"
    ):
        Ledger.read(path)


def test_summary_counts_outcomes_tokens_cost_and_latency():
    ledger = Ledger()
    ledger.append_many(
        [
            _record(kind="A", outcome=Outcome.OK, latency=0.1),
            _record(
                kind="A", outcome=Outcome.REPAIRED, attempts=2, latency=0.3, rounds=2
            ),
            _record(
                kind="B",
                outcome=Outcome.FALLBACK,
                attempts=0,
                latency=0.0,
                tokens=(0, 0),
                cost=0.0,
            ),
        ]
    )
    summary = ledger.summary()
    assert list(summary.index) == ["A", "B", "all"]
    assert summary.loc["A", "ok"] == 1
    assert summary.loc["A", "repaired"] == 1
    assert summary.loc["B", "fallback"] == 1
    assert summary.loc["all", "decisions"] == 3
    assert summary.loc["all", "http_calls"] == 3
    assert summary.loc["A", "repairs"] == 1
    assert summary.loc["all", "prompt_tokens"] == 20
    assert summary.loc["all", "cost_usd"] == pytest.approx(0.002)
    assert summary.loc["A", "latency_p50_s"] == pytest.approx(0.2)
    assert pd.isna(summary.loc["B", "latency_p50_s"])  # no model call, no latency


def test_empty_summary_has_the_columns():
    assert list(summarize(Ledger().rows()).columns)[:4] == [
        "decisions",
        "http_calls",
        "http_answered",
        "ok",
    ]


def test_http_calls_count_this_run_and_its_own_replayed_records():
    """A fork's replayed answers cost it nothing; a resumed run's carry their first calls."""
    ledger = Ledger()
    ledger.append_many(
        [
            _record(attempts=3, rounds=2),  # a repaired answer: 3 HTTP calls, 1 repair
            _record(attempts=0, replayed=True, rounds=2),  # from a fork's source
            _record(attempts=0, replayed=True, rounds=2, carried=2),  # own, resumed
        ]
    )
    row = ledger.summary().loc["all"]
    assert (row["decisions"], row["http_calls"], row["replayed"], row["repairs"]) == (
        3,
        5,
        2,
        1,
    )


def test_replay_entries_carry_the_calls_of_own_records_only():
    own = _record(key="a", attempts=2, carried=1)
    other = _record(key="b", attempts=4)
    index = ReplayIndex([own], own_run=True)
    index.add([other])
    assert index.take_entry("a") == (own, 3, 3)
    assert index.take_entry("b") == (other, 0, 0)
    assert index.take_entry("a") is None


def test_records_of_older_ledgers_are_summarised(tmp_path):
    old = _record(attempts=2, rounds=2)
    del old["carried_attempts"], old["repairs"]
    path = tmp_path / "ledger.jsonl"
    path.write_text(json.dumps(old) + "\n")
    row = Ledger.summarize_file(path).loc["all"]
    assert (row["http_calls"], row["repairs"]) == (2, 1)


def test_replay_index_serves_identical_keys_in_order():
    first, second = _record(key="same", agent="a"), _record(key="same", agent="b")
    index = ReplayIndex([first, second, _record(key="error", outcome=Outcome.ERROR)])
    assert len(index) == 2
    assert index.take("same")["agent_id"] == "a"
    assert index.take("same")["agent_id"] == "b"
    assert index.take("same") is None
    assert index.take("error") is None


def test_every_summary_carries_the_outcome_shares_and_flags_mostly_fallbacks():
    ledger = Ledger()
    ledger.append_many(
        [_record(outcome=Outcome.FALLBACK, attempts=0)] * 3
        + [_record(outcome=Outcome.OK), _record(outcome=Outcome.REJECTED)]
    )
    summary = ledger.summary()
    assert llm_outcome_shares(summary) == {
        "ok": 0.2,
        "repaired": 0.0,
        "fallback": 0.6,
        "rejected": 0.2,
    }
    assert summary.loc["all", "fallback_share"] == pytest.approx(0.6)
    assert mostly_fallback(summary)
    lines = llm_summary_lines(summary)
    assert "fallback 60%" in lines[0]
    assert lines[-1].startswith("WARNING") and "not the model's" in lines[-1]
    columns = llm_result_columns(summary)
    assert columns["llm_mostly_fallback"] is True
    assert columns["llm_fallback_share"] == pytest.approx(0.6)
    assert columns["llm_decisions"] == 5


def test_half_fallbacks_and_a_rule_run_are_not_flagged():
    ledger = Ledger()
    ledger.append_many([_record(outcome=Outcome.FALLBACK), _record()])
    assert not mostly_fallback(ledger.summary())
    assert not any(
        line.startswith("WARNING") for line in llm_summary_lines(ledger.summary())
    )
    assert llm_result_columns(None)["llm_mostly_fallback"] is False
    assert llm_outcome_shares(Ledger().summary())["ok"] == 0.0


def test_http_calls_started_and_answered_are_counted_apart():
    ledger = Ledger()
    ledger.append_many(
        [_record(attempts=3) | {"answered": 1}, _record(attempts=1) | {"answered": 1}]
    )
    summary = ledger.summary()
    assert summary.loc["all", "http_calls"] == 4
    assert summary.loc["all", "http_answered"] == 2
    assert "4 started, 2 answered" in llm_summary_lines(summary)[1]
