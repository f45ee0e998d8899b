"""What the trajectory app costs (no browser): opening a session, then each selection.

Opening a session synthesizes the city, holds out the last week and generates it with the rule
brain; the page then computes the seven metrics and the day scores (the visit detector) once.
Each selection of an individual draws the map and the timeline as PNG and the metric table
(which evaluates the individual's days). Reports CPU time of this process (user + sys: wall time
means little on a shared machine), the median over ``--repeat`` selections, and the peak RSS.

    python benchmarks/bench_trajapp.py [--individuals 30 200] [--weeks 3] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time
from collections.abc import Callable

from mesa_llm_mobility.trajectory.app.session import SessionSettings, synthetic_session
from mesa_llm_mobility.trajectory.app.views import (
    individual_days,
    individual_scores,
    map_figure,
    metrics_table,
    timeline_figure,
)
from mesa_llm_mobility.viz.panels import png_bytes


def cpu_ms(call: Callable[[], object]) -> tuple[float, object]:
    began = time.process_time()
    result = call()
    return (time.process_time() - began) * 1000, result


def select(session, agent) -> None:
    days = individual_days(session, agent)
    png_bytes(map_figure(days, session.pois))
    png_bytes(timeline_figure(days, individual_scores(session, agent)))
    metrics_table(session, agent)


def bench(individuals: int, weeks: int, repeat: int) -> dict[str, float]:
    settings = SessionSettings(individuals=individuals, weeks=weeks, hold_out=7)
    open_ms, session = cpu_ms(lambda: synthetic_session(settings))
    metrics_ms, _ = cpu_ms(lambda: session.metrics)
    scores_ms, _ = cpu_ms(lambda: session.day_scores)
    agents = session.individuals()
    select(session, agents[0])  # warm matplotlib
    selections = []
    for k in range(1, repeat + 1):
        agent = agents[k % len(agents)]
        selections.append(cpu_ms(lambda agent=agent: select(session, agent))[0])
    return {
        "individuals": individuals,
        "weeks": weeks,
        "open_session_cpu_ms": round(open_ms),
        "metrics_cpu_ms": round(metrics_ms),
        "day_scores_cpu_ms": round(scores_ms),
        "selection_cpu_ms_median": round(statistics.median(selections)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--individuals", type=int, nargs="+", default=[30, 200])
    parser.add_argument("--weeks", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = [bench(n, args.weeks, args.repeat) for n in args.individuals]
    for row in rows:
        print(
            f"{row['individuals']} individuals x {row['weeks']} weeks: open "
            f"{row['open_session_cpu_ms']} ms CPU, metrics {row['metrics_cpu_ms']} ms, "
            f"day scores {row['day_scores_cpu_ms']} ms, one selection "
            f"{row['selection_cpu_ms_median']} ms (median)"
        )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    load = os.getloadavg()[0]
    print(f"peak RSS {peak_mb:.0f} MB; load average {load:.1f}")
    print(json.dumps({"rows": rows, "peak_rss_mb": round(peak_mb), "load": load}))


if __name__ == "__main__":
    main()
