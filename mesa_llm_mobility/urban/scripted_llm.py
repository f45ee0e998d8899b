"""Answers a sensible traveller would give, read from the urban prompts alone.

The local OpenAI-compatible server (:class:`~mesa_llm_mobility.cognition.testing.FakeLLMServer`)
takes :func:`respond` as its responder, so the urban model can be driven through the real LLM
brain (litellm, HTTP, parsing, validation, repair and fallback) without any model: the soak and
fault tests, the LLM benchmarks and demos use it. A day plan is a commute planned from the profile
(home, work facility, work hours, whether the car is free), the stated travel time and the
required school runs and the joint activities agreed in chats, or a shopping trip; every revision
is "keep", except that one adds a joint activity agreed in a chat or a pick-up taken over and
missing from the plan; before planning it looks up the drive to the Office and the trains from
home (en route: a link's congestion), as a ``TravelQuery`` answer or, when the request offers
``tools``, as native tool calls answered before it decides; a trip just made matters more when it
was late; a reflection is short; a chat picks a new topic, asks a family member for the car they
have in the morning, or to pick the children up during the day, or a friend for a coffee, and
the partner accepts. A prompt
it does not recognise gets a schema violation, which the brain repairs or replaces.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from mesa_llm_mobility.cognition.testing import (
    Fault,
    Reply,
    ToolCalls,
    json_content,
    offers_tools,
    tool_results,
)
from mesa_llm_mobility.urban.clock import format_hhmm, parse_hhmm

_HOME = re.compile(r"lives at (?P<home>[^;]+);")
_WORK = re.compile(
    r"works as .*? at (?P<work>[^;]+?) (?P<start>\d\d:\d\d)-(?P<end>\d\d:\d\d)"
)
_FACILITIES = re.compile(r"^Facilities: (?P<names>.+)\.$", re.MULTILINE)
_NOW = re.compile(r"it is (?P<now>\d\d:\d\d)")
_TO_WORK = re.compile(
    r"-> (?P<work>[^,\n]+), arrive by \d\d:\d\d: (?:drive (?P<drive>\d+) min|"
    r"transit: leave \d\d:\d\d, arrive \d\d:\d\d \((?P<transit>\d+) min)"
)
_RUNS = re.compile(r"Required school runs: (?P<runs>[^\n]+)\.$", re.MULTILINE)
_SCHOOL = re.compile(r"(?:off at|up from) (?P<school>.+?) (?:before|after) work")
_PERSON = re.compile(
    r"^- (?P<name>.+?) \((?P<relation>family|friend); topics already discussed: (?P<used>.*)\)$",
    re.MULTILINE,
)
_TALKING = re.compile(
    r"You are talking (?:in person|by phone) with (?P<partner>.+?) \("
)
_DAY = re.compile(r"Day (?P<day>\d+)")
_AGREED = re.compile(
    r"meet (?P<partner>.+?) at the (?P<facility>.+?) at (?P<time>\d\d:\d\d)"
)
_SPEAKER = re.compile(r"^- (?P<name>[^:(\n]+): (?P<day>.*)$", re.MULTILINE)


def _shop(prompt: str, home: str) -> str:
    """A shopping trip's facility: the reference town's Supermarket, else a city's first listed.

    (The Coffee shop for whoever lives at the Supermarket; a city's first facility listed that
    is not a home.)
    """
    listed = _FACILITIES.search(prompt)
    names = listed["names"].split(", ") if listed else []
    if "Supermarket" in names or not names:
        return "Supermarket" if home != "Supermarket" else "Coffee shop"
    return next((n for n in names if n != home and not n.startswith("home (")), home)


def _plan(prompt: str) -> dict[str, Any]:
    """A day plan: work and back home (with the school runs), else a shopping trip."""
    home = _HOME.search(prompt)["home"]
    now = parse_hhmm(_NOW.search(prompt)["now"])
    mode = "drive" if "a household vehicle is yours today" in prompt else "transit"
    work = _WORK.search(prompt)
    if work is None or "a workday" not in prompt:
        shop = _shop(prompt, home)
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
            {
                "facility": work["work"],
                "departure_time": format_hhmm(leave),
                "mode": mode,
                "reflect_every": 150,
                "description": "Work",
            },
            {
                "facility": home,
                "departure_time": format_hhmm(back),
                "mode": mode,
                "description": "Return home",
            },
        ]
        if drop:
            activities[0]["departure_time"] = None
            activities.insert(
                0,
                {
                    "facility": school["school"],
                    "mode": mode,
                    "departure_time": format_hhmm(leave),
                    "description": "Drop the children off",
                },
            )
        if "up from" in runs:
            activities[-1]["departure_time"] = None
            activities.insert(
                -1,
                {
                    "facility": school["school"],
                    "mode": mode,
                    "departure_time": format_hhmm(back),
                    "description": "Pick the children up",
                },
            )
    agreed = re.search(r"Agreed in chats: (?P<meetings>[^\n]+)\.", prompt)
    for meeting in _AGREED.finditer(agreed["meetings"] if agreed else ""):
        # the joint activity before the return home, which then leaves an hour after it
        at = parse_hhmm(meeting["time"])
        activities.insert(
            -1,
            {
                "facility": meeting["facility"],
                "mode": mode,
                "departure_time": format_hhmm(at - 30),
                "description": f"Meet {meeting['partner']}",
            },
        )
        activities[-1]["departure_time"] = format_hhmm(at + 60)
    return {
        "activities": activities,
        "long_term_reflection": "Leave with a margin for traffic.",
        "concepts": [{"content": "Traffic builds up before 8:00.", "importance": 0.4}],
    }


def _proposal(prompt: str, name: str, relation: str) -> dict[str, Any] | None:
    """Ask for the car when the partner has it and I do not; else, friends meet for coffee."""
    days = {m["name"]: m["day"] for m in _SPEAKER.finditer(prompt)}
    me = next((n for n in days if n != name), None)
    morning = "Before planning today" in prompt
    if (
        morning
        and relation == "family"
        and me is not None
        and "no car today" in days[me]
        and "licensed" in days[me].split(";")[0]
        and "has the car today" in days.get(name, "")
    ):
        return {"car": me}
    if (
        not morning
        and relation == "family"
        and me is not None
        and "picks the children up" in days[me]
        and "works" in days.get(name, "")
    ):
        return {"pick_up": name}  # my day runs late: the partner fetches the children
    if relation == "friend":
        return {"meet_at": "Coffee shop", "meet_time": "19:30" if morning else "21:00"}
    return None


def _chat(prompt: str) -> dict[str, Any]:
    """Open a chat with the first contact on a topic not yet discussed with them."""
    person = _PERSON.search(prompt)
    used = set(person["used"].split(", "))
    topic = next(f"news {n}" for n in range(1, 1000) if f"news {n}" not in used)
    name, relation = person["name"], person["relation"]
    return {
        "partner": name,
        "topic": topic,
        "message": f"Hi {name}, any news?",
        "proposal": _proposal(prompt, name, relation),
        "importance": 0.3,
    }


def _chat_turn(prompt: str) -> dict[str, Any]:
    """Accept what is proposed, else say the news and end."""
    partner = _TALKING.search(prompt)["partner"]
    accept = " proposes: " in prompt
    return {
        "message": "Yes, let's do that."
        if accept
        else "All fine, traffic was heavy this morning.",
        "accept": accept,
        "end": True,
        "importance": 0.3,
        "summary": f"Talked with {partner}" + (", and agreed." if accept else "."),
    }


_FUTURE = re.compile(
    r"^- (?P<facility>.+?) leave (?P<leave>\d\d:\d\d|on arrival) by (?P<mode>\w+) \(",
    re.MULTILINE,
)
_STILL = re.compile(r"^Still to do: (?P<runs>.+)\.$", re.MULTILINE)


_PICK_UP = re.compile(r"pick .+? up from (?P<school>.+?) after work")


def _revision(prompt: str) -> dict[str, Any]:
    """Keep the plan, unless an agreed joint activity or a pick-up taken over is missing: add it."""
    still = _STILL.search(prompt)
    rest = prompt.split("Rest of today's plan:", 1)[-1].split("\n\n", 1)[0]
    future = list(_FUTURE.finditer(rest))
    missing = [
        m
        for m in _AGREED.finditer(still["runs"] if still else "")
        if not any(f["facility"] == m["facility"] for f in future)
    ]
    pick_up = _PICK_UP.search(still["runs"] if still else "")
    if pick_up and any(f["facility"] == pick_up["school"] for f in future):
        pick_up = None
    if (not missing and not pick_up) or not future:
        return {"action": "keep", "reason": "plan still fine"}
    activities = [
        {
            "facility": f["facility"],
            "mode": f["mode"],
            "departure_time": None if f["leave"] == "on arrival" else f["leave"],
        }
        for f in future
    ]
    if pick_up:  # on the way home: the school, then home on arrival
        home = activities[-1]
        activities.insert(
            -1,
            {
                **home,
                "facility": pick_up["school"],
                "description": "Pick the children up",
            },
        )
        home["departure_time"] = None
    for meeting in missing:
        at = parse_hhmm(meeting["time"])
        activities.insert(
            -1,
            {
                "facility": meeting["facility"],
                "mode": future[0]["mode"],
                "departure_time": format_hhmm(at - 30),
                "description": f"Meet {meeting['partner']}",
            },
        )
        activities[-1]["departure_time"] = format_hhmm(min(at + 60, 23 * 60 + 59))
    return {
        "action": "replace_activities",
        "activities": activities,
        "reason": "add the agreed meeting",
    }


_AT = re.compile(
    r"you are at (?P<place>.+?)\. Next you will (?P<decision>plan|reconsider)"
)


def _queries(prompt: str) -> dict[str, Any]:
    """Before planning: the drive to the Office at 07:30 and the trains from here; en route: a link."""
    found = _AT.search(prompt)
    if found["decision"] == "plan":
        place = found["place"]
        return {
            "queries": [
                {
                    "tool": "travel_time",
                    "origin": place,
                    "destination": "Office",
                    "mode": "drive",
                    "time": "07:30",
                },
                {"tool": "metro_timetable", "stop": place},
            ]
        }
    return {"queries": [{"tool": "link_congestion", "link": "Ave_2_link_2"}]}


def _native_calls(prompt: str) -> ToolCalls | None:
    """The tool calls of :func:`_queries`, made natively: before a plan or an en-route revision."""
    if "Plan today" in prompt:
        home = _HOME.search(prompt)["home"]
        return ToolCalls.of(
            (
                "travel_time",
                {
                    "origin": home,
                    "destination": "Office",
                    "mode": "drive",
                    "time": "07:30",
                },
            ),
            ("metro_timetable", {"stop": home}),
        )
    if "Choose action" in prompt:
        return ToolCalls.of(("link_congestion", {"link": "Ave_2_link_2"}))
    return None


def respond(body: dict[str, Any]) -> Reply:
    """Answer each urban decision kind validly, from the prompt text alone.

    Offered ``tools`` and no tool answer yet, it calls them first (:func:`_native_calls`).
    """
    prompt = body["messages"][1]["content"]
    if offers_tools(body) and not tool_results(body):
        calls = _native_calls(prompt)
        if calls is not None:
            return calls
    if "Plan today" in prompt:
        return json_content(_plan(prompt))
    if "Choose action" in prompt:
        return json_content(_revision(prompt))
    if "is over" in prompt:
        day = _DAY.search(prompt)["day"]
        trips = re.findall(r"^- \d+\. (.*)$", prompt, re.MULTILINE)
        return json_content(
            {
                "reflections": [
                    {
                        "content": f"Day {day} went fine.",
                        "importance": 0.3,
                        "keywords": ["routine"],
                    }
                ],
                "long_term_reflection": "Leave a little earlier when traffic is heavy.",
                # a late trip matters more than an easy one (both outlive the night: eq. 7)
                "trip_importance": [0.9 if "late for" in t else 0.6 for t in trips],
            }
        )
    if "Rate how much each trip matters" in prompt:
        trips = re.findall(r"^- \d+\. (.*)$", prompt, re.MULTILINE)
        return json_content(
            {"importance": [0.9 if "late for" in t else 0.6 for t in trips]}
        )
    if "Before that you may look up" in prompt:
        return json_content(_queries(prompt))
    if "Open the conversation" in prompt:
        return json_content(_chat(prompt))
    if "You are talking " in prompt:
        return json_content(_chat_turn(prompt))
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
