"""Benchmark of the urban model, on the offline rule brain and on an LLM brain.

Rule brain: (a) the reference population (70 residents, of whom 60 adults travel) x 3 days
(goal <= 30 s); (b) 1,000 travellers x 1 day on a scaled population (goal <= 5 min). Prints wall
time, simulated minutes per second, trips and decisions.

LLM brain: (c) the reference population x 1 day against the local ``FakeLLMServer`` answering
after a fixed latency (default 500 ms) with up to ``--concurrency`` calls in flight (default 64).
The responder reads each prompt and answers like a sensible traveller: a commute planned from the
profile (home, work facility, work hours, whether the car is free, school runs) and the travel
time to work, "keep" for every revision, a short reflection and a chat on a new topic. Prints LLM calls per agent-day,
prompt characters per call, and the wall time against two bounds: the ideal
calls x latency / concurrency, and the per-minute bound (every simulated minute with requests
waits for its whole batch: sum over batches of ceil(batch / concurrency) x latency).

    python benchmarks/bench_urban.py [--skip-large] [--llm-only] [--latency 0.5] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import time
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    Fault,
    json_content,
)
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from mesa_llm_mobility.urban.plans import format_hhmm, parse_hhmm

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
    """A day plan from the planning prompt: work and back home (with the school runs), else a
    shopping trip."""
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


def respond(body: dict[str, Any]) -> Any:
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


def run(n_agents: int | None, days: int) -> None:
    started = time.perf_counter()
    model = UrbanMobilityModel(days=days, rng=0, n_agents=n_agents)
    setup = time.perf_counter() - started
    model.run()
    wall = time.perf_counter() - started
    summary = model.summary()
    decisions = sum(summary["decisions"].values())
    model.close()
    label = f"{n_agents or len(model.travellers)} travellers x {days} day(s)"
    print(
        f"{label}: wall_s {wall:.1f} (setup {setup:.1f})  minutes_per_s {days * 1440 / wall:.0f}  "
        f"trips {summary['trips']}  decisions {decisions}  mean_delay_min {summary['mean_delay']:.2f}  "
        f"punctuality {summary['punctuality']:.3f}"
    )


def run_llm(latency: float, concurrency: int) -> None:
    with FakeLLMServer(respond, latency_s=latency) as server:
        started = time.perf_counter()
        model = UrbanMobilityModel(
            days=1, rng=0, brain="llm:openai/fake-model",
            brain_options={"api_base": server.api_base, "api_key": "sk-fake",
                           "max_concurrency": concurrency, "timeout_s": 30},
        )  # fmt: skip
        model.run()
        wall = time.perf_counter() - started
        summary, decisions = model.summary(), model.decisions_frame()
        model.close()
        requests = server.requests
    calls = len(requests)
    chars = [
        sum(len(m.get("content") or "") for m in body["messages"]) for body in requests
    ]
    agents = len(model.travellers)
    ideal = calls * latency / concurrency
    batches = decisions.groupby(["day", "minute"]).size()
    per_minute = sum(math.ceil(n / concurrency) for n in batches) * latency
    outcomes = decisions.groupby(["kind", "outcome"]).size().to_dict()
    print(
        f"LLM brain, {agents} travellers x 1 day, latency {latency * 1000:.0f} ms, "
        f"concurrency {concurrency}: wall_s {wall:.1f}  calls {calls}  "
        f"calls_per_agent_day {calls / agents:.1f}  prompt_chars_per_call {sum(chars) / calls:.0f} "
        f"(max {max(chars)})  max_in_flight {server.max_in_flight}"
    )
    print(
        f"  ideal calls x latency / concurrency {ideal:.1f} s; per-minute bound "
        f"({len(batches)} minutes with requests) {per_minute:.1f} s; wall / per-minute bound "
        f"{wall / per_minute:.2f}"
    )
    print(
        f"  trips {summary['trips']}  punctuality {summary['punctuality']:.3f}  decisions "
        + ", ".join(f"{k} {o}: {n}" for (k, o), n in sorted(outcomes.items()))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--skip-large", action="store_true", help="skip the 1,000-traveller day"
    )
    parser.add_argument(
        "--llm-only", action="store_true", help="run only the LLM-brain part"
    )
    parser.add_argument(
        "--latency", type=float, default=0.5, help="seconds per LLM answer (0.5)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=64, help="LLM calls in flight (64)"
    )
    args = parser.parse_args()
    if not args.llm_only:
        run(None, 3)
        if not args.skip_large:
            run(1000, 1)
    run_llm(args.latency, args.concurrency)


if __name__ == "__main__":
    main()
