"""Answers a sensible traveller would give, read from the urban prompts alone.

The local OpenAI-compatible server (:class:`~mesa_llm_mobility.cognition.testing.FakeLLMServer`)
takes :func:`respond` as its responder, so the urban model can be driven through the real LLM
brain (litellm, HTTP, parsing, validation, repair and fallback) without any model: the soak and
fault tests, the LLM benchmarks and demos use it. A day plan is a commute planned from the profile
(home, work facility, work hours, whether the car is free), the stated travel time and the
required school runs, or a shopping trip; every revision is "keep"; a reflection is short; a chat picks a new topic. A prompt
it does not recognise gets a schema violation, which the brain repairs or replaces.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from mesa_llm_mobility.cognition.testing import Fault, Reply, json_content
from mesa_llm_mobility.urban.clock import format_hhmm, parse_hhmm

_HOME = re.compile(r"lives at (?P<home>[^;]+);")
_WORK = re.compile(
    r"works as .*? at (?P<work>[^;]+?) (?P<start>\d\d:\d\d)-(?P<end>\d\d:\d\d)"
)
_NOW = re.compile(r"it is (?P<now>\d\d:\d\d)")
_TO_WORK = re.compile(
    r"-> (?P<work>[^,\n]+), arrive by \d\d:\d\d: (?:drive (?P<drive>\d+) min|"
    r"transit: leave \d\d:\d\d, arrive \d\d:\d\d \((?P<transit>\d+) min)"
)
_RUNS = re.compile(r"Required school runs: (?P<runs>[^\n]+)\.$", re.MULTILINE)
_SCHOOL = re.compile(r"(?:off at|up from) (?P<school>.+?) (?:before|after) work")
_PERSON = re.compile(
    r"^- (?P<name>.+?) \((?:family|friend); topics already discussed: (?P<used>.*)\)$",
    re.MULTILINE,
)
_DAY = re.compile(r"Day (?P<day>\d+)")


def _plan(prompt: str) -> dict[str, Any]:
    """A day plan: work and back home (with the school runs), else a shopping trip."""
    home = _HOME.search(prompt)["home"]
    now = parse_hhmm(_NOW.search(prompt)["now"])
    mode = "drive" if "a household vehicle is yours today" in prompt else "transit"
    work = _WORK.search(prompt)
    if work is None or "a workday" not in prompt:
        shop = "Supermarket" if home != "Supermarket" else "Coffee shop"
        activities = [
            {"facility": shop, "departure_time": "10:00", "mode": mode},
            {"facility": home, "departure_time": "11:30", "mode": mode},
        ]
    else:
        start, end = parse_hhmm(work["start"]), parse_hhmm(work["end"])
        free = _TO_WORK.search(prompt)
        travel = int(free["drive"] or free["transit"]) if free else 30
        runs = _RUNS.search(prompt)
        runs = runs["runs"] if runs else ""
        school = _SCHOOL.search(runs)
        drop = "off at" in runs
        leave = max(now + 1, start - travel - 15 - (20 if drop else 0))
        back = end if end > leave else min(leave + 8 * 60, 23 * 60 + 30)
        activities = [
            {"facility": work["work"], "departure_time": format_hhmm(leave),
             "mode": mode, "reflect_every": 150, "description": "Work"},
            {"facility": home, "departure_time": format_hhmm(back), "mode": mode,
             "description": "Return home"},
        ]  # fmt: skip
        if drop:
            activities[0]["departure_time"] = None
            activities.insert(0, {"facility": school["school"], "mode": mode,
                                  "departure_time": format_hhmm(leave),
                                  "description": "Drop the children off"})  # fmt: skip
        if "up from" in runs:
            activities[-1]["departure_time"] = None
            activities.insert(-1, {"facility": school["school"], "mode": mode,
                                   "departure_time": format_hhmm(back),
                                   "description": "Pick the children up"})  # fmt: skip
    return {
        "activities": activities,
        "long_term_reflection": "Leave with a margin for traffic.",
        "concepts": [{"content": "Traffic builds up before 8:00.", "importance": 0.4}],
    }


def _chat(prompt: str) -> dict[str, Any]:
    """A chat with the first contact on a topic not yet discussed with them."""
    person = _PERSON.search(prompt)
    used = set(person["used"].split(", "))
    topic = next(f"news {n}" for n in range(1, 1000) if f"news {n}" not in used)
    name = person["name"]
    return {
        "partner": name, "topic": topic, "request": f"Hi {name}, any news?",
        "reply": "All fine, traffic was heavy this morning.",
        "summary": f"Talked with {name} about the morning traffic.", "importance": 0.3,
    }  # fmt: skip


def respond(body: dict[str, Any]) -> Reply:
    """Answer each urban decision kind validly, from the prompt text alone."""
    prompt = body["messages"][1]["content"]
    if "Plan today" in prompt:
        return json_content(_plan(prompt))
    if "Choose action" in prompt:
        return json_content({"action": "keep", "reason": "plan still fine"})
    if "is over" in prompt:
        day = _DAY.search(prompt)["day"]
        return json_content(
            {
                "reflections": [
                    {"content": f"Day {day} went fine.", "importance": 0.3,
                     "keywords": ["routine"]}
                ],
                "long_term_reflection": "Leave a little earlier when traffic is heavy.",
            }
        )  # fmt: skip
    if "you message one person" in prompt:
        return json_content(_chat(prompt))
    return Fault.schema_violation()


def respond_as_judge(body: dict[str, Any]) -> Reply:
    """A ``RealismJudgement``: the response that names more of the scenario, else a tie."""
    from mesa_llm_mobility.urban.decisions.judge import (  # noqa: PLC0415
        JudgeContext,
        judge_rule_policy,
    )

    prompt = body["messages"][1]["content"]
    if "Which response is more realistic" not in prompt:
        return Fault.schema_violation()
    situation, _, rest = prompt.partition("\n\nResponse 1:\n")
    first, _, rest = rest.partition("\n\nResponse 2:\n")
    second = rest.partition("\n\nWhich response")[0]
    verdict = judge_rule_policy(
        JudgeContext("scripted", situation, first, second), np.random.default_rng(0)
    )
    return json_content({"verdict": verdict.verdict, "reason": "scripted judge"})
