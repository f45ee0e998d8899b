"""The paper's published microscopic validation: its 50 scenarios, both answer sets, the verdicts.

The GATSim repository (https://github.com/qiliuchn/gatsim, Apache-2.0) publishes the study of
section 4.3 in ``research_results/experiment_1``: the 50 scenarios as the agents and annotators
saw them (``experiment_1_questions_with_context/<n>.txt``), the generative agents' and the
annotators' reflections and plans (``experiment_1_answers.json``) and the o1 judge's verdicts
(``experiment_1_judgements.json``: ``ai``, ``human`` or ``tie`` per scenario).

- :func:`import_published_micro` reads them from a checkout (one-line
  :class:`~.published_movements.PublishedDataError` for a missing or malformed file);
  :func:`load_published_micro` reads the compressed copy shipped in the package.
- :func:`published_verdict_tests` recomputes the paper's three tests from the verdicts exactly
  (:mod:`~mesa_llm_mobility.experiment.believability_stats`) and
  :func:`~mesa_llm_mobility.experiment.believability_stats.assumption_variants` shows what an
  equally honest assumption gives.
- :func:`evaluation_inputs` turns the study into the inputs of our believability harness
  (:mod:`.believability`): the scenarios with the agents' answers, and the annotators' answers,
  so any brain can judge the same 50 pairs (:func:`rejudge`).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from mesa_llm_mobility.cognition.brain import Brain
from mesa_llm_mobility.experiment.believability_stats import (
    BelievabilityTests,
    believability_tests,
)
from mesa_llm_mobility.urban.believability import (
    AGENT,
    HUMAN,
    BlindedPair,
    EvaluationScenario,
    blinded_pairs,
    judge_pairs,
)
from mesa_llm_mobility.urban.published_movements import PublishedDataError, load_json

STUDY_FOLDER = Path("research_results") / "experiment_1"
QUESTIONS = "experiment_1_questions_with_context"
ANSWERS = "experiment_1_answers.json"
VERDICTS = "experiment_1_judgements.json"
VERDICT_VALUES = ("ai", "human", "tie")
SHIPPED = "experiment_1.json.gz"
PUBLISHED_BRAIN = "GATSim generative agent (published)"
_NAME = re.compile(r"^Name: (.+)$", re.MULTILINE)
_CLOCK = re.compile(r"Current time: (?:[A-Z][a-z]{2} )?(\d{4}-\d\d-\d\d) (\d\d):(\d\d)")
RUN_START = dt.date(2025, 3, 10)
"""Day 1 of the simulation the scenarios were taken from."""


@dataclass(frozen=True)
class PublishedCase:
    """One scenario of the study with both answers and the verdict.

    Attributes:
        number: The scenario's number (its file ``<number>.txt``).
        question: The scenario as the agent and the annotator saw it.
        ai_reflection: The generative agent's reflection.
        ai_plan: Its plan (``"none"``: keep the current plan).
        human_reflection: The annotator's reflection.
        human_plan: The annotator's plan.
        verdict: The judge's verdict: ``ai``, ``human`` or ``tie``.
    """

    number: int
    question: str
    ai_reflection: str
    ai_plan: str
    human_reflection: str
    human_plan: str
    verdict: str

    @property
    def same_plan(self) -> bool:
        """Both plans are the same text: the study's script scored a tie without the judge."""
        return self.ai_plan == self.human_plan


def _checked(entry: Any, where: str) -> dict[str, str]:
    if not isinstance(entry, dict):
        raise PublishedDataError(f"{where}: expected an object")
    fields = (
        "question_with_context",
        "ai_reflection",
        "ai_plan",
        "human_reflection",
        "human_plan",
    )
    for key in fields:
        if not isinstance(entry.get(key), str):
            raise PublishedDataError(f"{where}: field {key!r} missing or not text")
    return {key: entry[key] for key in fields}


def import_published_micro(checkout: str | Path) -> list[PublishedCase]:
    """Read the study from a checkout of the prototype's repository.

    Raises:
        PublishedDataError: For a missing folder or file, an answer naming a scenario file that
            does not exist, a verdict other than ``ai`` / ``human`` / ``tie``, or a scenario
            without a verdict.
    """
    folder = Path(checkout) / STUDY_FOLDER
    if not folder.is_dir():
        raise PublishedDataError(
            f"{checkout}: not a GATSim checkout (no {STUDY_FOLDER} folder)"
        )
    answers = load_json(folder / ANSWERS)
    verdicts = load_json(folder / VERDICTS)
    if not isinstance(answers, list):
        raise PublishedDataError(f"{folder / ANSWERS}: expected a list of answers")
    if not isinstance(verdicts, dict):
        raise PublishedDataError(f"{folder / VERDICTS}: expected an object of verdicts")
    cases = []
    for k, raw in enumerate(answers):
        entry = _checked(raw, f"{folder / ANSWERS}: entry {k}")
        name = entry["question_with_context"]
        match = re.fullmatch(r"(\d+)\.txt", name)
        if match is None:
            raise PublishedDataError(
                f"{folder / ANSWERS}: entry {k}: {name!r} is not '<number>.txt'"
            )
        path = folder / QUESTIONS / name
        try:
            question = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise PublishedDataError(
                f"{path}: cannot read the scenario ({error})"
            ) from None
        verdict = verdicts.get(name)
        if verdict not in VERDICT_VALUES:
            raise PublishedDataError(
                f"{folder / VERDICTS}: {name}: verdict {verdict!r} is not one of "
                f"{', '.join(VERDICT_VALUES)}"
            )
        cases.append(
            PublishedCase(
                int(match.group(1)),
                question,
                entry["ai_reflection"],
                entry["ai_plan"],
                entry["human_reflection"],
                entry["human_plan"],
                verdict,
            )
        )
    extra = sorted(set(verdicts) - {f"{c.number}.txt" for c in cases})
    if extra:
        raise PublishedDataError(
            f"{folder / VERDICTS}: verdicts for scenarios without answers: {', '.join(extra)}"
        )
    return sorted(cases, key=lambda case: case.number)


def write_published_micro(cases: Sequence[PublishedCase], folder: str | Path) -> Path:
    """Write the study as one compressed JSON file (the shipped form)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / SHIPPED
    payload = {
        "source": "https://github.com/qiliuchn/gatsim",
        "licence": "Apache-2.0",
        "folder": str(STUDY_FOLDER),
        "cases": [asdict(case) for case in cases],
    }
    path.write_bytes(gzip.compress(json.dumps(payload).encode("utf-8"), mtime=0))
    return path


def read_published_micro(path: str | Path) -> list[PublishedCase]:
    """Read a file written by :func:`write_published_micro`.

    Raises:
        PublishedDataError: For a file that is not one.
    """
    path = Path(path)
    try:
        payload = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
        return [PublishedCase(**case) for case in payload["cases"]]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise PublishedDataError(
            f"{path}: not a published study file ({error})"
        ) from None


def load_published_micro() -> list[PublishedCase]:
    """The study shipped in the package (offline)."""
    folder = (
        resources.files("mesa_llm_mobility.urban") / "published_data" / "experiment_1"
    )
    return read_published_micro(Path(str(folder / SHIPPED)))


# ----------------------------------------------------------------------------- the tests
def verdict_counts(cases: Sequence[PublishedCase]) -> tuple[int, int, int]:
    """``(ai wins, human wins, ties)``."""
    verdicts = [case.verdict for case in cases]
    return verdicts.count("ai"), verdicts.count("human"), verdicts.count("tie")


def published_verdict_tests(cases: Sequence[PublishedCase]) -> BelievabilityTests:
    """The paper's binomial, sign and Bayesian tests on the published verdicts."""
    return believability_tests(*verdict_counts(cases))


# ----------------------------------------------------------------------------- the harness
def _response(reflection: str, plan: str) -> str:
    return f"Reflection: {reflection.strip()}\nPlan: {plan.strip()}"


def scenario_id(case: PublishedCase) -> str:
    """``gatsim-<nn>``: the harness's id of a published scenario."""
    return f"gatsim-{case.number:02d}"


def evaluation_inputs(
    cases: Sequence[PublishedCase],
) -> tuple[list[EvaluationScenario], dict[str, str]]:
    """The study as inputs of the believability harness: scenarios and the annotators' answers.

    Each scenario carries the generative agent's answer as ``agent_response`` (no rule
    baseline answered these: ``baseline_response`` is empty); the annotators' answers come back
    keyed by scenario id, formatted as :func:`~.believability.read_human_responses` formats a
    filled-in sheet. The traveller, day and minute are read from the scenario text.
    """
    scenarios, human = [], {}
    for case in cases:
        name = _NAME.search(case.question)
        clock = _CLOCK.search(case.question)
        day, minute = 0, 0
        if clock is not None:
            date = dt.date.fromisoformat(clock.group(1))
            day = (date - RUN_START).days + 1
            minute = int(clock.group(2)) * 60 + int(clock.group(3))
        key = scenario_id(case)
        scenarios.append(
            EvaluationScenario(
                scenario_id=key,
                kind="PlanRevision",
                agent=name.group(1).strip() if name else "",
                day=day,
                minute=minute,
                situation=case.question,
                agent_response=_response(case.ai_reflection, case.ai_plan),
                baseline_response="",
                agent_brain=PUBLISHED_BRAIN,
            )
        )
        human[key] = _response(case.human_reflection, case.human_plan)
    return scenarios, human


@dataclass(frozen=True)
class Rejudged:
    """A new judging of the published pairs and how it agrees with the published verdicts.

    Attributes:
        verdicts: ``scenario_id, published, new, asked`` per pair (``asked`` False: both
            plans the same, tied without the judge, as the study did).
        tests: The three tests on the new verdicts.
        agreement: Share of pairs with the published verdict.
        kappa: Cohen's kappa between the two sets of verdicts.
    """

    verdicts: pd.DataFrame
    tests: BelievabilityTests
    agreement: float
    kappa: float


def cohens_kappa(first: Sequence[str], second: Sequence[str]) -> float:
    """Cohen's kappa of two raters' labels (1 when they agree fully, 0 at chance)."""
    if len(first) != len(second) or not first:
        raise ValueError("kappa needs two equally long, non-empty label lists")
    labels = sorted(set(first) | set(second))
    n = len(first)
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    expected = sum(
        (list(first).count(label) / n) * (list(second).count(label) / n)
        for label in labels
    )
    return 1.0 if expected == 1 else (observed - expected) / (1 - expected)


def rejudge(
    cases: Sequence[PublishedCase],
    brain: Brain,
    *,
    seed: int = 0,
    judge_same_plans: bool = False,
) -> Rejudged:
    """Judge the published pairs again with ``brain``, in a seeded random order per pair.

    As the study did, a pair whose two plans are the same text is a tie without asking the
    judge, unless ``judge_same_plans``.
    """
    scenarios, human = evaluation_inputs(cases)
    pairs = blinded_pairs(scenarios, human, seed=seed)
    asked = [
        pair
        for pair, case in zip(pairs, cases, strict=True)
        if judge_same_plans or not case.same_plan
    ]
    judged = (
        judge_pairs(asked, brain)
        if asked
        else pd.DataFrame(columns=["pair_id", "verdict"])
    )
    by_pair = dict(zip(judged["pair_id"], judged["verdict"], strict=True))
    rows = []
    for pair, case in zip(pairs, cases, strict=True):
        verdict = by_pair.get(pair.pair_id)
        rows.append(
            {
                "scenario_id": pair.scenario_id,
                "published": case.verdict,
                "new": "tie" if verdict is None else _unblind(verdict, pair),
                "asked": verdict is not None,
            }
        )
    frame = pd.DataFrame(rows)
    new = frame["new"].tolist()
    tests = believability_tests(new.count("ai"), new.count("human"), new.count("tie"))
    published = frame["published"].tolist()
    agreement = sum(a == b for a, b in zip(published, new, strict=True)) / len(new)
    return Rejudged(frame, tests, agreement, cohens_kappa(published, new))


def _unblind(verdict: str, pair: BlindedPair) -> str:
    if verdict == "tie":
        return "tie"
    source = pair.first_source if verdict == "first" else pair.second_source
    return {AGENT: "ai", HUMAN: "human"}[source]


def counts_by_plan(cases: Sequence[PublishedCase]) -> Mapping[str, int]:
    """Verdicts split by whether both plans were the same text (``same:tie`` and the like)."""
    counts: dict[str, int] = {}
    for case in cases:
        key = f"{'same' if case.same_plan else 'different'}:{case.verdict}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))
