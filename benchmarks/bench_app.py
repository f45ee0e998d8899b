"""What one redraw of the urban app costs, live and in replay (no browser).

Times the work behind each panel at 07:30 of a given day: the town view, the map drawn and
encoded as PNG (as the app sends it), the inspector's report, the timeline and the other charts;
then, for a saved run, opening it and moving the slider. Median of ``--repeat`` calls each.

    python benchmarks/bench_app.py [--agents 70] [--day 2] [--repeat 5] [--run runs/urban]
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mesa_llm_mobility.experiment.lifecycle import start_run
from mesa_llm_mobility.urban.app import charts
from mesa_llm_mobility.urban.app.saved_run import SavedRun
from mesa_llm_mobility.urban.app.sources import LiveSource, ReplaySource
from mesa_llm_mobility.urban.app.town_map import draw_town
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from mesa_llm_mobility.urban.parameters import UrbanParameters


def median_ms(call: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()


def panel_costs(source, agent: str, repeat: int) -> dict[str, float]:
    view = source.view()
    return {
        "town view": median_ms(source.view, repeat),
        "map (draw + PNG)": median_ms(
            lambda: png(draw_town(view, selected=agent)), repeat
        ),
        "inspector report": median_ms(lambda: source.report(agent), repeat),
        "timeline (data + PNG)": median_ms(
            lambda: png(
                charts.timeline_figure(
                    charts.timeline(view.trips, source.link_states(), view.minute)
                )
            ),
            repeat,
        ),
        "departures + modes + decisions (PNG)": median_ms(
            lambda: (
                png(charts.departures_figure(view.trips)),
                png(charts.mode_shares_figure(view.trips)),
                png(charts.decisions_figure(source.decisions())),
            ),
            repeat,
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=70)
    parser.add_argument("--day", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--run", default=None, help="saved run to replay (default: make one)"
    )
    args = parser.parse_args()
    minute = (args.day - 1) * 1440 + 7 * 60 + 30

    model = UrbanMobilityModel(n_agents=args.agents, days=args.day, rng=0)
    start = time.perf_counter()
    while model.minute < minute:
        model.step()
    print(f"live model: {args.agents} travellers stepped to day {args.day} 07:30 in "
          f"{time.perf_counter() - start:.1f} s")  # fmt: skip
    agent = sorted(model.travellers)[0]
    for name, ms in panel_costs(LiveSource(model), agent, args.repeat).items():
        print(f"  live   {name:<40} {ms:8.1f} ms")

    with tempfile.TemporaryDirectory() as scratch:
        run_dir = args.run
        if run_dir is None:
            run_dir = str(Path(scratch) / "run")
            start_run(
                UrbanMobilityModel,
                UrbanParameters(days=args.day, n_agents=args.agents),
                run_dir,
                progress=False,
            )
        start = time.perf_counter()
        run = SavedRun.open(run_dir)
        run.view_at(minute)
        print(
            f"replay: open + first view {1000 * (time.perf_counter() - start):.0f} ms"
        )
        slider = median_ms(lambda: run.view_at(minute + 1), args.repeat)
        print(f"  replay {'slider move (view_at)':<40} {slider:8.1f} ms")
        for name, ms in panel_costs(
            ReplaySource(run, minute), agent, args.repeat
        ).items():
            print(f"  replay {name:<40} {ms:8.1f} ms")


if __name__ == "__main__":
    main()
