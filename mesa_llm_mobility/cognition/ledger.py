"""The decision ledger: an append-only record of every decision of a run, and its replay index.

Each decision is one JSON line: kind, agent, model, sampling parameters, the initial messages and
their hash, every round's raw answer and errors, the parsed result, the outcome, attempts, latency,
tokens and cost. API keys and headers are never written: the ledger only ever sees the fields
listed in :func:`decision_record`, and every string of a record is redacted before it is written
(:func:`~mesa_llm_mobility.cognition.redaction.redact`), since providers echo keys in errors.

The ledger doubles as a replay cache (:class:`ReplayIndex`): a request identical to a recorded one
(same kind, agent, model, parameters and messages) is answered from the record without a call.
That is how resumed and forked runs stay reproducible and cheap.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import defaultdict, deque
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from mesa_llm_mobility.cognition.kinds import Message, Outcome
from mesa_llm_mobility.cognition.redaction import known_secrets, redact_json
from mesa_llm_mobility.cognition.tool_calling import is_tool_step

logger = logging.getLogger(__name__)

SUMMARY_COLUMNS = (
    "decisions",
    "http_calls",
    "http_answered",
    "ok",
    "repaired",
    "fallback",
    "error",
    "rejected",
    "replayed",
    "repairs",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "latency_p50_s",
    "latency_p95_s",
    "ok_share",
    "repaired_share",
    "fallback_share",
    "rejected_share",
)
SHARE_OUTCOMES = ("ok", "repaired", "fallback", "rejected")
"""The outcomes whose share of the decisions every summary carries (``<outcome>_share``)."""

MOSTLY_FALLBACK_SHARE = 0.5
"""A run whose share of fallbacks is above this is flagged (:func:`mostly_fallback`)."""

_ROW_FIELDS = (
    "kind",
    "agent_id",
    "model",
    "outcome",
    "replayed",
    "attempts",
    "carried_attempts",
    "answered",
    "carried_answered",
    "repairs",
    "latency_s",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
)


def messages_hash(messages: Sequence[Message]) -> str:
    """SHA-256 of the messages' canonical JSON (role and content only)."""
    canonical = json.dumps(
        [[message["role"], message["content"]] for message in messages],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def request_key(
    kind: str, agent_id: Hashable, model: str, params: Mapping[str, Any], digest: str
) -> str:
    """Identity of a request for replay: kind, agent, model, sampling parameters, messages hash."""
    canonical = json.dumps(
        [kind, str(agent_id), model, dict(params), digest], sort_keys=True, default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def decision_record(
    *,
    kind: str,
    agent_id: Hashable,
    model: str,
    params: Mapping[str, Any],
    messages: Sequence[Message] | None,
    digest: str | None,
    key: str | None,
    rounds: Sequence[Mapping[str, Any]],
    result: Any,
    outcome: Outcome,
    reason: str | None,
    attempts: int,
    latency_s: float,
    prompt_tokens: int,
    completion_tokens: int,
    cost_usd: float,
    replayed: bool,
    answered: int | None = None,
    carried_attempts: int = 0,
    carried_answered: int | None = None,
    response_mode: str | None = None,
    deduplicated: bool = False,
    tags: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Build one ledger record; these keyword arguments are the only fields a record can hold.

    ``attempts`` are the HTTP calls this record's process started for the decision (transport
    retries and repair rounds included; 0 for a replayed or rule answer), ``answered`` those the
    server answered (an HTTP status came back; a call that timed out or lost its connection may
    or may not have reached the server). ``carried_attempts`` and ``carried_answered`` are the
    calls a replayed answer cost when it was first recorded in the same run (a resumed run
    replays the day it was on), so that a run's HTTP calls add up across its processes
    (``None``: every call was answered).
    ``repairs`` (derived) counts the re-prompts made here. ``response_mode`` is how the answer
    format was asked for (``json_schema``, ``json_object``, ...; ``None`` when no call was made).
    ``deduplicated`` marks an answer shared from an identical request of the run (no call; its
    rounds are the original's and count no repairs).
    """
    return {
        "kind": kind,
        "agent_id": agent_id if isinstance(agent_id, int | str) else str(agent_id),
        "model": model,
        "params": dict(params),
        "messages_hash": digest,
        "request_key": key,
        "messages": list(messages) if messages is not None else None,
        "rounds": [dict(round_) for round_ in rounds],
        "result": result,
        "outcome": str(outcome),
        "reason": reason,
        "attempts": attempts,
        "answered": attempts if answered is None else answered,
        "carried_attempts": carried_attempts,
        "carried_answered": carried_attempts
        if carried_answered is None
        else carried_answered,
        "repairs": 0 if replayed or deduplicated else _repairs(rounds),
        "latency_s": round(latency_s, 6),
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "cost_usd": cost_usd,
        "replayed": replayed,
        "response_mode": response_mode,
        "deduplicated": deduplicated,
        "tags": dict(tags) if tags else {},
    }


class Ledger:
    """Append-only record of a run's decisions, in memory and optionally as a JSONL file.

    Args:
        path: JSONL file to append to (created with its folder); ``None`` keeps rows in memory
            only (tests, notebooks).

    Every record is written as one line and flushed at the end of each batch, so a crashed run
    loses at most the batch in flight. In memory only the light columns of each record are kept
    (for :meth:`summary`); :meth:`read` loads the full records of a file.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._rows: list[tuple[Any, ...]] = []
        self._lock = threading.Lock()
        self._file = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")

    def append_many(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Append records (as built by :func:`decision_record`) and flush the file."""
        secrets = known_secrets()
        with self._lock:
            lines = []
            for record in records:
                self._rows.append(_row(record))
                if self._file is not None:
                    lines.append(redact_json(record, secrets))
            if self._file is not None and lines:
                self._file.write("\n".join(lines) + "\n")
                self._file.flush()

    def __len__(self) -> int:
        return len(self._rows)

    def close(self) -> None:
        """Close the file (records in memory stay available)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def rows(self) -> pd.DataFrame:
        """One row per decision with the light columns (kind, agent, outcome, tokens, ...)."""
        with self._lock:
            return pd.DataFrame(self._rows, columns=list(_ROW_FIELDS))

    def summary(self) -> pd.DataFrame:
        """Decisions, HTTP calls, outcomes, repairs, tokens, cost and latency p50/p95 per kind.

        One row per kind plus an ``all`` row. ``decisions`` counts requests answered;
        ``http_calls`` the chat-completion requests started for them (retries and repair rounds
        included, and for a resumed run those of the replayed day's first recording);
        ``http_answered`` those the server answered (the requests a server received lie
        between the two: a call that timed out may or may not have reached it); the
        ``<outcome>_share`` columns the outcomes' shares of the decisions;
        ``replayed`` the answers taken from a ledger without a call; ``repairs`` the re-prompts
        made. Latency percentiles are over decisions that called a model (replayed and rule
        answers have no latency of their own).
        """
        return summarize(self.rows())

    @staticmethod
    def summarize_file(path: str | Path) -> pd.DataFrame:
        """:meth:`summary` of every record of a ledger file (e.g. a run resumed in a new process).

        Args:
            path: The JSONL ledger.

        Returns:
            The summary table, as :meth:`summary` gives it.
        """
        rows = [_row(record) for record in Ledger.read(path)]
        return summarize(pd.DataFrame(rows, columns=list(_ROW_FIELDS)))

    @staticmethod
    def read(path: str | Path) -> list[dict[str, Any]]:
        """Load every record of a JSONL ledger file.

        Raises:
            FileNotFoundError: when the file does not exist.
            ValueError: naming the file and line when a line is not valid JSON.
        """
        path = Path(path)
        records = []
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(
                        f"{path}: line {number} is not a valid ledger record ({exc.msg})"
                    ) from exc
        return records


def _repairs(rounds: Sequence[Mapping[str, Any]]) -> int:
    """Re-prompts among ``rounds``: the answers after the first (tool steps are no answers)."""
    return max(sum(not is_tool_step(round_) for round_ in rounds) - 1, 0)


def _row(record: Mapping[str, Any]) -> tuple[Any, ...]:
    # records written before carried_attempts and repairs existed count as none / from rounds,
    # before answered existed as every call answered
    defaults = {
        "carried_attempts": 0,
        "answered": record.get("attempts", 0),
        "carried_answered": record.get("carried_attempts", 0),
        "repairs": 0
        if record.get("replayed")
        else _repairs(record.get("rounds") or ()),
    }
    return tuple(record.get(name, defaults.get(name)) for name in _ROW_FIELDS)


def summarize(rows: pd.DataFrame) -> pd.DataFrame:
    """Aggregate ledger rows (see :meth:`Ledger.rows`) into the summary table."""
    if rows.empty:
        return pd.DataFrame(
            columns=list(SUMMARY_COLUMNS), index=pd.Index([], name="kind")
        )
    groups = {str(kind): frame for kind, frame in rows.groupby("kind", sort=True)}
    groups["all"] = rows
    table = {}
    for kind, frame in groups.items():
        called = frame.loc[frame["attempts"] > 0, "latency_s"]
        outcome_counts = frame["outcome"].value_counts()
        table[kind] = {
            "decisions": len(frame),
            "http_calls": int(
                frame["attempts"].sum() + frame["carried_attempts"].sum()
            ),
            "http_answered": int(
                frame["answered"].sum() + frame["carried_answered"].sum()
            ),
            **{
                str(outcome): int(outcome_counts.get(str(outcome), 0))
                for outcome in Outcome
            },
            "replayed": int(frame["replayed"].sum()),
            "repairs": int(frame["repairs"].sum()),
            "prompt_tokens": int(frame["prompt_tokens"].sum()),
            "completion_tokens": int(frame["completion_tokens"].sum()),
            "cost_usd": float(frame["cost_usd"].sum()),
            "latency_p50_s": float(called.quantile(0.5))
            if len(called)
            else float("nan"),
            "latency_p95_s": float(called.quantile(0.95))
            if len(called)
            else float("nan"),
            **{
                f"{outcome}_share": int(outcome_counts.get(outcome, 0)) / len(frame)
                for outcome in SHARE_OUTCOMES
            },
        }
    summary = pd.DataFrame.from_dict(table, orient="index")[list(SUMMARY_COLUMNS)]
    summary.index.name = "kind"
    return summary


def llm_outcome_shares(summary: pd.DataFrame, kind: str = "all") -> dict[str, float]:
    """The shares of ``ok``, ``repaired``, ``fallback`` and ``rejected`` decisions of a summary.

    Args:
        summary: As :meth:`Ledger.summary` or :meth:`Ledger.summarize_file` gives it.
        kind: The row: a decision kind, or ``"all"``.

    Returns:
        Outcome -> share of the decisions (all 0 for an empty summary or a missing kind).
    """
    if summary.empty or kind not in summary.index:
        return dict.fromkeys(SHARE_OUTCOMES, 0.0)
    row = summary.loc[kind]
    decisions = int(row["decisions"])
    return {
        outcome: int(row[outcome]) / decisions if decisions else 0.0
        for outcome in SHARE_OUTCOMES
    }


def mostly_fallback(
    summary: pd.DataFrame, threshold: float = MOSTLY_FALLBACK_SHARE
) -> bool:
    """Whether the rule policies, not the model, answered most of a run's LLM decisions.

    Such a run's results are the rule brain's under an LLM label: flag it wherever its results
    are shown (a run's summary, a sweep's ``results.csv``).

    Args:
        summary: As :meth:`Ledger.summary` gives it.
        threshold: The share of fallbacks above which the run is flagged.
    """
    return llm_outcome_shares(summary)["fallback"] > threshold


def llm_result_columns(summary: pd.DataFrame | None) -> dict[str, Any]:
    """The LLM columns of a run's row in a results table (a sweep's ``results.csv``).

    Args:
        summary: The run's ledger summary, or ``None`` for a rule-brain run.

    Returns:
        ``llm_decisions``, ``llm_http_calls``, ``llm_<outcome>_share`` and
        ``llm_mostly_fallback`` (empty values for a rule-brain run).
    """
    if summary is None or summary.empty or "all" not in summary.index:
        return {
            "llm_decisions": 0,
            "llm_http_calls": 0,
            **{f"llm_{outcome}_share": float("nan") for outcome in SHARE_OUTCOMES},
            "llm_mostly_fallback": False,
        }
    row = summary.loc["all"]
    return {
        "llm_decisions": int(row["decisions"]),
        "llm_http_calls": int(row["http_calls"]),
        **{
            f"llm_{outcome}_share": share
            for outcome, share in llm_outcome_shares(summary).items()
        },
        "llm_mostly_fallback": mostly_fallback(summary),
    }


def llm_summary_lines(summary: pd.DataFrame) -> list[str]:
    """The ``all`` row of a ledger summary as command-line lines.

    Decisions with their outcomes and shares, the HTTP calls started and answered, and a
    warning line when the rule policies answered most decisions (:func:`mostly_fallback`).

    Args:
        summary: As :meth:`Ledger.summary` gives it.

    Returns:
        Two aligned lines (three for a mostly-fallback run), or none for an empty summary.
    """
    if summary.empty or "all" not in summary.index:
        return []
    row = summary.loc["all"]
    shares = llm_outcome_shares(summary)
    decisions = (
        f"LLM decisions    {int(row['decisions'])} (ok {int(row['ok'])}, "
        f"repaired {int(row['repaired'])}, fallback {int(row['fallback'])}, "
        f"error {int(row['error'])}"
        + (f", rejected {int(row['rejected'])}" if row.get("rejected", 0) else "")
        + f"; replayed {int(row['replayed'])}); shares ok {shares['ok']:.0%}, "
        f"repaired {shares['repaired']:.0%}, fallback {shares['fallback']:.0%}, "
        f"rejected {shares['rejected']:.0%}"
    )
    calls = (
        f"HTTP calls       {int(row['http_calls'])} started, "
        f"{int(row['http_answered'])} answered "
        f"(repair rounds {int(row['repairs'])}), cost ${row['cost_usd']:.4f}"
    )
    lines = [decisions, calls]
    if mostly_fallback(summary):
        lines.append(
            f"WARNING          mostly fallbacks: the rule policies answered "
            f"{shares['fallback']:.0%} of the LLM decisions (see the ledger's reasons); "
            "these results are not the model's"
        )
    return lines


class ReplayIndex:
    """Recorded answers by request key, consumed in recorded order.

    The same key may occur several times (an agent asking the same thing on two days); each
    occurrence is answered by the next unused record with that key.

    Args:
        records: Ledger records (see :func:`decision_record`); ``error`` outcomes are skipped.
        own_run: The records are this run's own (a resumed run replaying the day it was on):
            their HTTP calls stay counted in the run's summary as ``carried_attempts``. Records
            of another run (a fork's source) cost this run nothing.
    """

    def __init__(
        self, records: Iterable[Mapping[str, Any]] = (), *, own_run: bool = False
    ) -> None:
        self._by_key: dict[str, deque[tuple[Mapping[str, Any], bool]]] = defaultdict(
            deque
        )
        self.add(records, own_run=own_run)

    def add(
        self, records: Iterable[Mapping[str, Any]], *, own_run: bool = False
    ) -> None:
        """Index more records, after those already indexed (same arguments as the class)."""
        for record in records:
            if record.get("request_key") and record.get("outcome") != str(
                Outcome.ERROR
            ):
                self._by_key[record["request_key"]].append((record, own_run))

    @classmethod
    def from_ledger(cls, path: str | Path) -> ReplayIndex:
        """Index every record of a ledger file (of another run)."""
        index = cls(Ledger.read(path))
        logger.info("replay index: %d recorded requests from %s", len(index), path)
        return index

    def __len__(self) -> int:
        return sum(len(queue) for queue in self._by_key.values())

    def take(self, key: str) -> Mapping[str, Any] | None:
        """Pop the next recorded answer for ``key``, or ``None`` when there is none."""
        entry = self.take_entry(key)
        return entry[0] if entry is not None else None

    def take_entry(self, key: str) -> ReplayEntry | None:
        """Pop the next recorded answer for ``key`` with the HTTP calls it carries into this run.

        Args:
            key: The request key.

        Returns:
            The record with what it cost when first recorded (calls started and answered) if
            it is this run's own, else with 0 and 0; ``None`` when nothing is left.
        """
        queue = self._by_key.get(key)
        if not queue:
            return None
        record, own_run = queue.popleft()
        if not own_run:
            return ReplayEntry(record, 0, 0)
        attempts = int(record.get("attempts") or 0)
        carried = int(record.get("carried_attempts") or 0)
        return ReplayEntry(
            record,
            attempts + carried,
            int(record.get("answered", attempts) or 0)
            + int(record.get("carried_answered", carried) or 0),
        )


class ReplayEntry(NamedTuple):
    """A recorded answer taken from a :class:`ReplayIndex`, with the calls it carries."""

    record: Mapping[str, Any]
    carried_attempts: int
    carried_answered: int
