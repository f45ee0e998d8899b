"""Benchmark of the urban model, on the offline rule brain and on an LLM brain.

Rule brain: (a) the reference population (70 residents, of whom 60 adults travel) x 3 days
(goal <= 30 s); (b) 1,000 travellers x 1 day on a scaled population (goal <= 5 min;
``--agents N`` for another size, e.g. 10,000). Prints wall time, CPU time, simulated minutes per
second, trips and decisions.

LLM brain: (c) the reference population x 1 day against the local ``FakeLLMServer`` answering
after a fixed latency (default 500 ms) with up to ``--concurrency`` calls in flight (default 64).
The responder reads each prompt and answers like a sensible traveller: a commute planned from the
profile (home, work facility, work hours, whether the car is free) and the free-flow time, "keep"
for every revision, a short reflection and a chat on a new topic. Prints LLM calls per agent-day,
prompt characters per call, and the wall time against two bounds: the ideal
calls x latency / concurrency, and the per-minute bound (every simulated minute with requests
waits for its whole batch: sum over batches of ceil(batch / concurrency) x latency), which
binds the synchronous minute (``--reaction-minutes 0``, Algorithm 1) but not the asynchronous
decisions of ``--reaction-minutes d > 0`` (goal at d = 5: wall <= 10 s). CPU time of this process
and the load average are printed beside the wall time (the machine may be shared).
``--tools native|structured`` lets the travellers call tools (natively in their decisions, or by
a ``TravelQuery`` decision first) and prints the tool calls made.

LLM days of other populations: ``--llm-only --llm-agents 100 1000`` (a scaled population each, the
scripted server in a process of its own so that the client's CPU is this process's alone) print
calls per agent-day, prompt tokens per decision (the server's count: four characters a token),
client CPU per decision, trips completed, and how wall time grows with the population.

    python benchmarks/bench_urban.py [--skip-large] [--agents 1000] [--rules-only] [--llm-only]
        [--llm-agents N [N ...]] [--latency 0.5] [--concurrency 64]
        [--reaction-minutes 0] [--client auto|direct|litellm] [--tools off|native|structured]
        [--trip-importance creation|reflection]
"""

from __future__ import annotations

import argparse
import cProfile
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from benchmarks.bench_city import SERVICE_DAY, bundled_city
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.urban.model import UrbanMobilityModel


def run(n_agents: int | None, days: int) -> None:
    started = time.perf_counter()
    cpu_started = time.process_time()
    model = UrbanMobilityModel(days=days, rng=0, n_agents=n_agents)
    setup = time.perf_counter() - started
    model.run()
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    summary = model.summary()
    decisions = sum(summary["decisions"].values())
    model.close()
    label = f"{n_agents or len(model.travellers)} travellers x {days} day(s)"
    print(
        f"{label}: wall_s {wall:.1f} (setup {setup:.1f})  cpu_s {cpu:.1f}  "
        f"load {os.getloadavg()[0]:.1f}  minutes_per_s {days * 1440 / wall:.0f}  "
        f"trips {summary['trips']}  decisions {decisions}  mean_delay_min {summary['mean_delay']:.2f}  "
        f"punctuality {summary['punctuality']:.3f}"
    )


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    """The scripted traveller's local server in a process of its own (its CPU is not ours)."""
    process = subprocess.Popen(
        [
            sys.executable, "-m", "mesa_llm_mobility.cognition.testing", "--port", "0",
            "--latency", str(latency),
            "--responder", "mesa_llm_mobility.urban.scripted_llm:respond",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    line = process.stdout.readline().strip() if process.stdout else ""
    if not line.startswith("listening "):
        process.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    return process, line.removeprefix("listening ")


def run_llm(
    latency: float,
    concurrency: int,
    reaction_minutes: int,
    client: str,
    tools: str = "off",
    trip_importance: str = "creation",
    n_agents: int | None = None,
    city: str = "town",
    profile: Path | None = None,
    memory: str = "ephemeral",
) -> dict[str, float]:
    """One LLM day against the scripted server in its own process; prints and returns figures.

    ``city="bundled"``: on the bundled Helsinki extract and tram feed (imported before the clock
    starts) instead of the reference town. ``profile``: cProfile statistics of the run written
    there. ``memory="persistent"``: the travellers' memories in a store on disk (as in a run
    directory) instead of the in-memory one.
    """
    process, api_base = start_server(latency)
    try:
        with tempfile.TemporaryDirectory() as folder:
            place = {}
            if city == "bundled":
                place = {
                    "scenario": bundled_city(Path(folder)),
                    "start_date": SERVICE_DAY,
                }
            profiler = cProfile.Profile() if profile else None
            started = time.perf_counter()
            cpu_started = time.process_time()
            if profiler:
                profiler.enable()
            run_dir = Path(folder) / "run" if memory == "persistent" else None
            model = UrbanMobilityModel(
                **place, run_dir=run_dir, days=1, rng=0, n_agents=n_agents, brain="llm:openai/fake-model",
                brain_options={"api_base": api_base, "api_key": "sk-fake",
                               "max_concurrency": concurrency, "timeout_s": 30,
                               "client": client,
                               "ledger": Ledger(Path(folder) / "ledger.jsonl"),
                               "tool_calling": "native" if tools == "off" else tools},
                reaction_minutes=reaction_minutes, tools=tools != "off",
                trip_importance=trip_importance,
            )  # fmt: skip
            setup = time.perf_counter() - started
            model.run()
            wall = time.perf_counter() - started
            cpu = time.process_time() - cpu_started
            peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            if profiler:
                profiler.disable()
                profiler.dump_stats(profile)
            summary, decisions = model.summary(), model.decisions_frame()
            tool_calls = model.tool_calls_frame()
            llm = model.ledger.summary().loc["all"]
            records = Ledger.read(Path(folder) / "ledger.jsonl")
            model.close()
    finally:
        process.terminate()
        process.wait(timeout=10)
    calls = int(llm["http_calls"])
    agents = len(model.travellers)
    chars = [
        sum(len(m["content"]) for m in r["messages"]) for r in records if r["messages"]
    ]
    ideal = calls * latency / concurrency
    batches = decisions.groupby(["day", "minute"]).size()
    per_minute = sum(math.ceil(n / concurrency) for n in batches) * latency
    outcomes = decisions.groupby(["kind", "outcome"]).size().to_dict()
    groups = request_groups(sorted(set(batches.index)), reaction_minutes)
    actions = decisions["action"].value_counts()
    trips = summary["trips"]
    completed = summary["completed"]
    figures = {
        "agents": agents,
        "wall_s": wall,
        "calls_per_agent_day": calls / agents,
        "prompt_tokens_per_decision": float(llm["prompt_tokens"])
        / max(len(decisions), 1),
        "client_cpu_ms_per_decision": 1000 * cpu / max(len(decisions), 1),
        "peak_rss_mb": peak_rss_mb,
        "completed_share": completed / max(trips, 1),
    }
    print(
        f"LLM brain ({client} client), {agents} travellers x 1 day on the {city}, latency "
        f"{latency * 1000:.0f} ms, concurrency {concurrency}, reaction {reaction_minutes} min, "
        f"trip importance at {trip_importance}: "
        f"wall_s {wall:.1f} (setup {setup:.1f})  client cpu_s {cpu:.1f}  "
        f"load {os.getloadavg()[0]:.1f}  calls {calls} (answered {int(llm['http_answered'])})  "
        f"calls_per_agent_day {calls / agents:.1f}  prompt_chars_per_call "
        f"{sum(chars) / max(len(chars), 1):.0f} (max {max(chars, default=0)})"
    )
    print(
        f"  decisions {len(decisions)}  prompt_tokens_per_decision "
        f"{figures['prompt_tokens_per_decision']:.0f}  client_cpu_ms_per_decision "
        f"{figures['client_cpu_ms_per_decision']:.2f}  trips {trips}  completed {completed} "
        f"({completed / max(trips, 1):.1%})  peak RSS {peak_rss_mb:.0f} MB"
    )
    if tools != "off":
        print(
            f"  tools {tools}: tool calls {len(tool_calls)} "
            f"({len(tool_calls) / agents:.2f} per agent-day), by "
            + ", ".join(f"{k} {n}" for k, n in tool_calls["via"].value_counts().items())
        )
    print(
        f"  ideal calls x latency / concurrency {ideal:.1f} s; per-minute bound "
        f"({len(batches)} minutes with requests) {per_minute:.1f} s; wall / per-minute bound "
        f"{wall / per_minute:.2f}; groups of request minutes within d {groups} "
        f"(x latency: {groups * latency:.1f} s)"
    )
    print(
        f"  punctuality {summary['punctuality']:.3f}  "
        f"mean_delay_min {summary['mean_delay']:.2f}  stale answers "
        f"{int(actions.get('stale', 0))}  decisions "
        + ", ".join(f"{k} {o}: {n}" for (k, o), n in sorted(outcomes.items()))
    )
    return figures


def request_groups(minutes: list[tuple[int, int]], reaction_minutes: int) -> int:
    """Groups of request minutes, each starting at a minute more than d after the last start.

    With a reaction time d the world waits about once per group (for its oldest answer).
    """
    groups, start = 0, None
    for day, minute in minutes:
        absolute = (day - 1) * 1440 + minute
        if start is None or absolute - start > reaction_minutes:
            groups, start = groups + 1, absolute
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--skip-large", action="store_true", help="skip the 1,000-traveller day"
    )
    parser.add_argument(
        "--agents",
        type=int,
        default=1000,
        help="travellers of the large one-day run (1000)",
    )
    parser.add_argument(
        "--llm-only", action="store_true", help="run only the LLM-brain part"
    )
    parser.add_argument(
        "--rules-only", action="store_true", help="run only the rule-brain part"
    )
    parser.add_argument(
        "--latency", type=float, default=0.5, help="seconds per LLM answer (0.5)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=64, help="LLM calls in flight (64)"
    )
    parser.add_argument(
        "--reaction-minutes",
        type=int,
        default=0,
        help="the urban model's reaction time d (0: synchronous minute)",
    )
    parser.add_argument(
        "--client", choices=["auto", "direct", "litellm"], default="auto"
    )
    parser.add_argument(
        "--tools", choices=["off", "native", "structured"], default="off"
    )
    parser.add_argument(
        "--trip-importance", choices=["creation", "reflection"], default="creation"
    )
    parser.add_argument(
        "--llm-agents",
        type=int,
        nargs="+",
        default=None,
        help="LLM days of these populations (default: the reference town's 60 travellers); "
        "several print how wall time grows",
    )
    parser.add_argument(
        "--city",
        choices=["town", "bundled"],
        default="town",
        help="LLM days on the reference town or the bundled Helsinki extract (town)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="write cProfile statistics of the (last) LLM day to this file",
    )
    parser.add_argument(
        "--memory",
        choices=["ephemeral", "persistent"],
        default="ephemeral",
        help="the travellers' memory store in the LLM days (ephemeral)",
    )
    args = parser.parse_args()
    if not args.llm_only:
        run(None, 3)
        if not args.skip_large:
            run(args.agents, 1)
    if args.rules_only:
        return
    runs = [
        run_llm(
            args.latency,
            args.concurrency,
            args.reaction_minutes,
            args.client,
            args.tools,
            args.trip_importance,
            n_agents,
            args.city,
            args.profile,
            args.memory,
        )
        for n_agents in args.llm_agents or [None]
    ]
    if len(runs) > 1:
        print(
            "growth: agents, wall_s, calls/agent-day, prompt tokens/decision, cpu ms/decision, "
            "peak RSS MB, trips completed"
        )
        for figures in runs:
            print(
                f"  {figures['agents']:6d} {figures['wall_s']:8.1f} "
                f"{figures['calls_per_agent_day']:6.1f} "
                f"{figures['prompt_tokens_per_decision']:7.0f} "
                f"{figures['client_cpu_ms_per_decision']:6.2f} "
                f"{figures['peak_rss_mb']:7.0f} {figures['completed_share']:7.1%}"
            )


if __name__ == "__main__":
    main()
