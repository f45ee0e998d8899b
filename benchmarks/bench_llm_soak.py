"""Soak benchmark: the reference town for several days through the LLM brain, with faults.

The long version of ``tests/test_llm_soak.py``: the reference population (60 travellers) runs
``--days`` days (default 3) through the real LLM brain against the local OpenAI-compatible
server, which answers after ``--latency`` seconds (default 1.0) like a sensible traveller
(``mesa_llm_mobility.urban.scripted_llm``), with one request in ``--every`` (default 10) replaced
by a fault in turn: truncated JSON, a schema violation, 429 with and without Retry-After, 500, a
hang past the timeout, a dropped connection and a 401 that echoes the key. Prints wall time, HTTP
calls and decisions per agent-day, outcome shares per kind, whether the summary's HTTP calls equal
the server's count, and whether the key appears in any file of the run directory.

    python benchmarks/bench_llm_soak.py [--days 3] [--latency 1.0] [--every 10] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.experiment.lifecycle import start_run
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from mesa_llm_mobility.urban.parameters import UrbanParameters
from mesa_llm_mobility.urban.run_files import run_summary
from mesa_llm_mobility.urban.scripted_llm import respond

KEY = "bench-soak-key-0c4f2a9d77"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument(
        "--out", default=None, help="run directory (default: temporary)"
    )
    args = parser.parse_args()
    faults = provider_faults(retry_after_s=0.5, hang_s=3600.0)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp()) / "soak"
    parameters = UrbanParameters(days=args.days, seed=0, brain="llm:openai/fake-model")
    responder = with_faults(respond, faults, every=args.every)
    with FakeLLMServer(responder, latency_s=args.latency) as server:
        started = time.perf_counter()
        result = start_run(
            UrbanMobilityModel,
            parameters,
            out,
            overwrite=True,
            progress=True,
            brain_options={
                "api_base": server.api_base,
                "api_key": KEY,
                "max_concurrency": args.concurrency,
                "timeout_s": args.timeout,
                "max_attempts": 3,
                "max_total_s": 4 * args.timeout,
            },
        )
        wall = time.perf_counter() - started
        received = server.request_count
    llm = run_summary(result.run, result.model)["llm"]
    decisions = result.run.read_table("decisions")
    agents = decisions["agent_id"].nunique()
    agent_days = agents * args.days
    shares = decisions.groupby("kind")["outcome"].value_counts(normalize=True)
    leaked = [
        str(path)
        for path in out.rglob("*")
        if path.is_file() and KEY.encode() in path.read_bytes()
    ]
    print(
        f"{agents} travellers x {args.days} day(s), latency {args.latency:.2f} s, one fault "
        f"in {args.every}: wall_s {wall:.1f}"
    )
    print(
        f"  HTTP calls {received} (summary {int(llm.loc['all', 'http_calls'])}: "
        f"{'equal' if received == llm.loc['all', 'http_calls'] else 'DIFFERENT'}), "
        f"per agent-day {received / agent_days:.1f}; decisions {len(decisions)}, "
        f"per agent-day {len(decisions) / agent_days:.1f}"
    )
    print("  outcome shares:")
    for (kind, outcome), share in shares.items():
        print(f"    {kind:16s} {outcome:9s} {share:6.1%}")
    print(
        f"  punctuality {result.summary['punctuality']:.3f}, files with the key: {leaked}"
    )
    if not args.out:
        shutil.rmtree(out.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
