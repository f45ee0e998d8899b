"""GATSim's microscopic validation (section 4.3): scenarios, annotator files, a judge, the tests.

The paper samples mobility scenarios from a simulation (an agent planning its day, revising its
plan, reflecting), gives each to the generative agent and to human annotators playing the same
person, shows both responses in random order to a judge model, and tests the verdicts
(:mod:`~mesa_llm_mobility.experiment.believability_stats`). Here:

1. :func:`generate_scenarios` runs the urban model with any brain and keeps, for sampled
   travellers, the situation of their plans, revisions and reflections (the prompt text every
   brain is asked with), the model brain's response and the rule baseline's response to the same
   situation.
2. :func:`write_annotator_files` exports them for annotators (``annotators.csv`` and
   ``annotators.json``: the situation and empty ``reflection`` and ``plan`` columns, no response
   and no source) and keeps the responses in ``responses.json``.
3. :func:`blinded_pairs` pairs the agent's response with the annotators' (``read_human_responses``)
   or, with none, the rule baseline's, in a seeded random order; ``pairs.csv`` shows no source,
   ``key.csv`` unblinds.
4. :func:`judge_pairs` asks any brain for a ``RealismJudgement`` per pair; :func:`tally` unblinds
   the verdicts into wins, losses and ties, and the tests follow.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mesa_llm_mobility.cognition.brain import Brain
from mesa_llm_mobility.cognition.kinds import DecisionRequest, DecisionResult
from mesa_llm_mobility.cognition.settings import BrainOptions
from mesa_llm_mobility.experiment.believability_stats import (
    BelievabilityTests,
    believability_tests,
)
from mesa_llm_mobility.urban.decisions.judge import REALISM_JUDGEMENT, JudgeContext
from mesa_llm_mobility.user_files import UserFileError

SCENARIO_KINDS = ("DailyPlan", "PlanRevision", "DailyReflection")
"""The decisions sampled as scenarios: plans, revisions, reflections."""
AGENT, BASELINE, HUMAN = "agent", "rule_baseline", "human"


@dataclass(frozen=True)
class EvaluationScenario:
    """One scenario and the two machine responses to it.

    Attributes:
        scenario_id: ``"<kind>-<agent>-d<day>-<minute>"``.
        kind: The decision kind.
        agent: The traveller.
        day: Day number.
        minute: Minute of the day.
        situation: What the responder is shown (the kind's prompt, without the answer format).
        agent_response: The model brain's answer (JSON).
        baseline_response: The rule policy's answer to the same situation (JSON).
        agent_brain: Name of the brain that gave ``agent_response``.
    """

    scenario_id: str
    kind: str
    agent: str
    day: int
    minute: int
    situation: str
    agent_response: str
    baseline_response: str
    agent_brain: str


class ScenarioRecorder(Brain):
    """A brain that answers with another and keeps the scenario kinds' requests and answers."""

    def __init__(self, inner: Brain, agents: Iterable[str] | None = None) -> None:
        super().__init__(rng=inner.rng, ledger=inner.ledger)
        self.inner = inner
        self.name = inner.name
        self.agents = None if agents is None else set(agents)
        self.kept: list[tuple[dict[str, Any], DecisionResult]] = []

    def decide_all(
        self,
        requests: Sequence[DecisionRequest],
        *,
        tags: Mapping[str, Any] | None = None,
    ) -> list[DecisionResult]:
        """Answer with the inner brain; keep the sampled travellers' scenario decisions."""
        results = self.inner.decide_all(requests, tags=tags)
        for result in results:
            if result.request.kind.name in SCENARIO_KINDS and (
                self.agents is None or str(result.agent_id) in self.agents
            ):
                self.kept.append((dict(tags or {}), result))
        return results

    def close(self) -> None:
        """Close the inner brain."""
        self.inner.close()


def _situation(request: DecisionRequest) -> str:
    """The scenario text: the prompt's user message (the same for every responder)."""
    messages = request.kind.render_prompt(request.context)
    return "\n".join(m["content"] for m in messages if m["role"] == "user")


def _answer(output: Any) -> str:
    return output.model_dump_json(exclude_none=True)


def generate_scenarios(
    n_scenarios: int = 50,
    *,
    days: int = 1,
    seed: int = 0,
    agents: int = 10,
    brain: str | Brain = "rules",
    brain_options: BrainOptions | None = None,
    n_agents: int | None = None,
) -> list[EvaluationScenario]:
    """Run the urban model and sample ``n_scenarios`` scenarios of ``agents`` travellers.

    The sample is seeded and spread evenly over the scenario kinds (plans, revisions,
    reflections) as far as each has enough; the rule baseline answers every sampled situation
    too.

    Raises:
        ValueError: For ``n_scenarios`` or ``agents`` below 1.
    """
    if n_scenarios < 1 or agents < 1:
        raise ValueError(
            f"n_scenarios and agents must be >= 1, got {n_scenarios} and {agents}"
        )
    from mesa_llm_mobility.urban.model import UrbanMobilityModel  # noqa: PLC0415

    rng = np.random.default_rng(seed)
    model = UrbanMobilityModel(
        days=days, rng=seed, brain=brain, brain_options=brain_options, n_agents=n_agents
    )
    try:
        names = sorted(model.travellers)
        sampled = [
            str(n) for n in rng.choice(names, min(agents, len(names)), replace=False)
        ]
        recorder = ScenarioRecorder(model.brain, sampled)
        model.brain = recorder
        model.run()
        by_kind: dict[str, list[tuple[dict[str, Any], DecisionResult]]] = {}
        for tags, result in recorder.kept:
            by_kind.setdefault(result.request.kind.name, []).append((tags, result))
        chosen = _spread(by_kind, n_scenarios, rng)
        return [
            EvaluationScenario(
                scenario_id=(
                    f"{result.request.kind.name}-{result.agent_id}-d{tags.get('day', 0)}-"
                    f"{tags.get('minute', 0)}"
                ).replace(" ", "_"),
                kind=result.request.kind.name,
                agent=str(result.agent_id),
                day=int(tags.get("day", 0)),
                minute=int(tags.get("minute", 0)),
                situation=_situation(result.request),
                agent_response=_answer(result.output),
                baseline_response=_answer(
                    result.request.kind.apply_rule_policy(result.request, rng)
                ),
                agent_brain=recorder.name,
            )
            for tags, result in chosen
        ]
    finally:
        model.close()


def _spread(
    by_kind: Mapping[str, list[Any]], n: int, rng: np.random.Generator
) -> list[Any]:
    """Up to ``n`` items drawn round-robin over the kinds (seeded), in kind order."""
    pools = {
        kind: [items[i] for i in rng.permutation(len(items))]
        for kind, items in sorted(by_kind.items())
    }
    chosen: list[Any] = []
    while len(chosen) < n and any(pools.values()):
        for kind in sorted(pools):
            if pools[kind] and len(chosen) < n:
                chosen.append(pools[kind].pop())
    return chosen


# ----------------------------------------------------------------------------- files
ANNOTATOR_COLUMNS = ("scenario_id", "kind", "situation", "reflection", "plan")
"""Columns of the annotators' sheet; they fill in ``reflection`` and ``plan``."""


def write_annotator_files(
    scenarios: Sequence[EvaluationScenario], out: str | Path
) -> list[Path]:
    """Write ``annotators.csv`` / ``annotators.json`` (no responses) and ``responses.json``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sheet = [
        {
            "scenario_id": s.scenario_id,
            "kind": s.kind,
            "situation": s.situation,
            "reflection": "",
            "plan": "",
        }
        for s in scenarios
    ]
    paths = [out / "annotators.csv", out / "annotators.json", out / "responses.json"]
    pd.DataFrame(sheet, columns=list(ANNOTATOR_COLUMNS)).to_csv(paths[0], index=False)
    paths[1].write_text(json.dumps(sheet, indent=2) + "\n", encoding="utf-8")
    paths[2].write_text(
        json.dumps([asdict(s) for s in scenarios], indent=2) + "\n", encoding="utf-8"
    )
    return paths


def read_scenarios(path: str | Path) -> list[EvaluationScenario]:
    """Read ``responses.json`` back.

    Raises:
        UserFileError: For a file that is not a list of scenarios.
    """
    path = Path(path)
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        return [EvaluationScenario(**row) for row in rows]
    except (OSError, ValueError, TypeError) as error:
        raise UserFileError(f"{path}: not a scenario list ({error})") from error


def read_human_responses(path: str | Path) -> dict[str, str]:
    """The annotators' responses by scenario id, from a filled-in ``annotators.csv``.

    A row counts when its ``reflection`` or ``plan`` is filled in; the response is both.

    Raises:
        UserFileError: For a missing column, naming the file and the line.
    """
    path = Path(path)
    try:
        handle = path.open(encoding="utf-8", newline="")
    except OSError as error:
        raise UserFileError(f"{path}: cannot read ({error.strerror})") from error
    responses: dict[str, str] = {}
    with handle:
        reader = csv.DictReader(handle)
        missing = {"scenario_id", "reflection", "plan"} - set(reader.fieldnames or [])
        if missing:
            raise UserFileError(
                f"{path}, line 1: missing column(s) {', '.join(sorted(missing))}"
            )
        for line, row in enumerate(reader, start=2):
            if not row["scenario_id"]:
                raise UserFileError(f"{path}, line {line}: scenario_id is empty")
            if row["reflection"].strip() or row["plan"].strip():
                responses[row["scenario_id"]] = (
                    f"Reflection: {row['reflection'].strip()}\n"
                    f"Plan: {row['plan'].strip()}"
                )
    return responses


@dataclass(frozen=True)
class BlindedPair:
    """One pair for the judge, and which source is first (the key)."""

    pair_id: str
    scenario_id: str
    situation: str
    first: str
    second: str
    first_source: str
    second_source: str


def blinded_pairs(
    scenarios: Sequence[EvaluationScenario],
    human: Mapping[str, str] | None = None,
    seed: int = 0,
) -> list[BlindedPair]:
    """The agent's response against the human one (or, without humans, the rule baseline's).

    The order of each pair is a seeded coin flip (the paper permutes to remove position bias).
    Scenarios without a human response are left out when ``human`` is given.
    """
    rng = np.random.default_rng(seed)
    pairs = []
    for k, scenario in enumerate(scenarios):
        if human is not None and scenario.scenario_id not in human:
            continue
        other, source = (
            (human[scenario.scenario_id], HUMAN)
            if human is not None
            else (scenario.baseline_response, BASELINE)
        )
        sides = [(scenario.agent_response, AGENT), (other, source)]
        if rng.random() < 0.5:
            sides.reverse()
        pairs.append(
            BlindedPair(
                f"pair-{k:03d}",
                scenario.scenario_id,
                scenario.situation,
                sides[0][0],
                sides[1][0],
                sides[0][1],
                sides[1][1],
            )
        )
    return pairs


def write_pairs(pairs: Sequence[BlindedPair], out: str | Path) -> list[Path]:
    """``pairs.csv`` (what the judge sees, no source) and ``key.csv`` (which side is whose)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame([asdict(p) for p in pairs])
    paths = [out / "pairs.csv", out / "key.csv"]
    columns = ["pair_id", "situation", "first", "second"]
    frame.reindex(columns=columns).to_csv(paths[0], index=False)
    frame.reindex(
        columns=["pair_id", "scenario_id", "first_source", "second_source"]
    ).to_csv(paths[1], index=False)
    return paths


def judge_pairs(pairs: Sequence[BlindedPair], brain: Brain) -> pd.DataFrame:
    """One ``RealismJudgement`` per pair from ``brain``, in one batch.

    Returns:
        ``pair_id, verdict, reason, outcome`` per pair.
    """
    requests = [
        DecisionRequest(
            REALISM_JUDGEMENT,
            pair.pair_id,
            JudgeContext(pair.pair_id, pair.situation, pair.first, pair.second),
        )
        for pair in pairs
    ]
    results = brain.decide_all(requests, tags={"step": 0})
    return pd.DataFrame(
        [
            {
                "pair_id": r.agent_id,
                "verdict": r.output.verdict,
                "reason": r.output.reason,
                "outcome": str(getattr(r.outcome, "value", r.outcome)),
            }
            for r in results
        ],
        columns=["pair_id", "verdict", "reason", "outcome"],
    )


def tally(verdicts: pd.DataFrame, pairs: Sequence[BlindedPair]) -> tuple[int, int, int]:
    """Unblind: ``(agent wins, agent losses, ties)``."""
    first = {p.pair_id: p.first_source for p in pairs}
    wins = losses = ties = 0
    for row in verdicts.itertuples():
        if row.verdict == "tie":
            ties += 1
            continue
        winner_first = row.verdict == "first"
        agent_first = first[row.pair_id] == AGENT
        if winner_first == agent_first:
            wins += 1
        else:
            losses += 1
    return wins, losses, ties


def evaluate(
    pairs: Sequence[BlindedPair], brain: Brain
) -> tuple[pd.DataFrame, BelievabilityTests]:
    """Judge the pairs and run the paper's tests on the unblinded verdicts."""
    verdicts = judge_pairs(pairs, brain)
    return verdicts, believability_tests(*tally(verdicts, pairs))
