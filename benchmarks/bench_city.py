"""Benchmark: a real city in, and a day of its travellers (issue #36).

For each city and population size, in a fresh process: import the city (the OSM extract through
:func:`~mesa_llm_mobility.urban.cities.import_osm`, the GTFS feed through
:func:`~mesa_llm_mobility.urban.cities.import_gtfs` when there is one), then run
``UrbanMobilityModel(scenario=city, n_agents=n, days=1, rng=0)`` with the rule brain and the
default embedding, its travellers synthesised and placed on the city's facilities. Goals at
10,000 travellers: import <= 60 s, run <= 120 s, peak RSS <= 4 GB on 2 cores, >= 95 % of trips
completed, punctuality plausible.

Cities:

- ``bundled``: the package's central Helsinki extract and its tram feed;
- ``grid``: a generated OSM grid city (``--blocks B``: B x B blocks of 200 m, residential
  streets at 30 km/h, a two-lane primary at 50 km/h every fourth street) whose blocks hold the
  bundled extract's facility mix (the kinds in the same shares, one tag each; homes as
  six-storey apartment buildings), sized so its homes hold the population with a third to
  spare when ``--blocks`` is not given.

Each row (wall and CPU seconds of import and run, peak RSS, links, nodes, facilities, stops,
trips, completed share, punctuality, mean delay, the commit, the machine, the date, the load)
is merged into ``--results`` (``benchmarks/results/city.json``); the log-log plot
``docs/images/scale_city.png`` and the table between the ``bench_city`` markers of
``docs/scale.md`` are redrawn from all rows.

    PYTHONPATH=. python benchmarks/bench_city.py --city bundled --agents 300 1000 3000 10000
    PYTHONPATH=. python benchmarks/bench_city.py --city grid --agents 1000 3000 10000
    PYTHONPATH=. python benchmarks/bench_city.py --redraw   # the plot and table only
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from benchmarks.bench_population import machine
from mesa_llm_mobility.urban.cities import import_gtfs, import_osm
from mesa_llm_mobility.urban.cities.population import people_for_travellers
from mesa_llm_mobility.urban.cities.tables import FACILITY_TAGS
from mesa_llm_mobility.urban.model import UrbanMobilityModel

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "mesa_llm_mobility" / "urban" / "cities" / "data"
DEFAULT_RESULTS = ROOT / "benchmarks" / "results" / "city.json"
PLOT = ROOT / "docs" / "images" / "scale_city.png"
SCALE_DOC = ROOT / "docs" / "scale.md"
MARKERS = ("<!-- bench_city:start -->", "<!-- bench_city:end -->")
GOALS = {"import_s": 60.0, "run_s": 120.0, "rss_mb": 4096.0, "completed": 0.95}
SERVICE_DAY = "2025-03-10"  # a Monday, the model's default start date
BLOCK_M = 200.0
HOME_LEVELS = 6
FACILITIES_PER_BLOCK = 12
LAT0, LON0 = 60.17, 24.94


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def commit() -> str:
    """The checked-out commit (short hash), with ``+`` when the tree has changes."""
    try:
        head = _git("rev-parse", "--short", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+" if dirty else "")


def bundled_mix() -> dict[str, float]:
    """Shares of the facility kinds of the bundled extract (what the grid city copies)."""
    scenario = import_osm(DATA / "helsinki.osm.pbf")
    counts = Counter(f.kind for f in scenario.facilities.values())
    total = sum(counts.values())
    return {kind: count / total for kind, count in sorted(counts.items())}


def grid_blocks(travellers: int, mix: dict[str, float]) -> int:
    """Blocks per side so that the homes hold the population with a third to spare."""
    per_home = 2 * 4 * HOME_LEVELS
    homes_per_block = FACILITIES_PER_BLOCK * mix.get("home", 0.2)
    people = people_for_travellers(travellers) * 4 / 3
    return max(3, math.ceil(math.sqrt(people / (homes_per_block * per_home))))


def grid_city_osm(blocks: int, mix: dict[str, float], seed: int = 0) -> str:
    """An OSM XML grid city of ``blocks`` x ``blocks`` blocks with the facility ``mix``."""
    rng = np.random.default_rng(seed)
    tag_of = {}
    for (key, value), kind in FACILITY_TAGS.items():
        if kind not in tag_of and value != "*":
            tag_of[kind] = (key, value)
    dlat = BLOCK_M / 111_320.0
    dlon = dlat / math.cos(math.radians(LAT0))
    side = blocks + 1
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<osm version="0.6">']
    for i in range(side):
        for j in range(side):
            lines.append(
                f'<node id="{1 + i * side + j}" version="1" lat="{LAT0 + j * dlat:.7f}" '
                f'lon="{LON0 + i * dlon:.7f}"/>'
            )
    way = 1
    for along in (0, 1):
        for k in range(side):
            refs = "".join(
                f'<nd ref="{1 + (i * side + k if along == 0 else k * side + i)}"/>'
                for i in range(side)
            )
            tags = (
                '<tag k="highway" v="primary"/><tag k="lanes" v="4"/><tag k="maxspeed" v="50"/>'
                if k % 4 == 0
                else '<tag k="highway" v="residential"/><tag k="maxspeed" v="30"/>'
            )
            lines.append(f'<way id="{way}" version="1">{refs}{tags}</way>')
            way += 1
    kinds = list(mix)
    shares = np.array([mix[k] for k in kinds])
    node_id = 10 * side * side
    for i in range(blocks):
        for j in range(blocks):
            for kind in rng.choice(kinds, size=FACILITIES_PER_BLOCK, p=shares):
                node_id += 1
                lat = LAT0 + (j + rng.uniform(0.2, 0.8)) * dlat
                lon = LON0 + (i + rng.uniform(0.2, 0.8)) * dlon
                key, value = tag_of[str(kind)]
                extra = (
                    f'<tag k="building:levels" v="{HOME_LEVELS}"/>'
                    if kind == "home"
                    else ""
                )
                lines.append(
                    f'<node id="{node_id}" version="1" lat="{lat:.7f}" lon="{lon:.7f}">'
                    f'<tag k="{key}" v="{value}"/>{extra}</node>'
                )
    lines.append("</osm>")
    return "\n".join(lines) + "\n"


def import_city(osm_file: Path, folder: Path, *, tram_feed: bool):
    """The scenario of ``osm_file`` (written to ``folder/city.json``), with the bundled tram feed
    for its service day when ``tram_feed``."""
    scenario = import_osm(osm_file, out=folder / "city.json")
    if tram_feed:
        scenario = import_gtfs(
            DATA / "helsinki_trams_gtfs.zip",
            folder / "city.json",
            date=SERVICE_DAY,
            out=folder / "city.json",
        )
    return scenario


def bundled_city(folder: Path):
    """The bundled central Helsinki extract with its tram feed, imported into ``folder``."""
    return import_city(DATA / "helsinki.osm.pbf", folder, tram_feed=True)


def run_one(city: str, travellers: int, blocks: int | None) -> dict:
    """Import the city and run a day (in this process); the row of the results."""
    folder = Path(tempfile.mkdtemp(prefix="bench_city_"))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if city == "bundled":
        osm_file = DATA / "helsinki.osm.pbf"
    else:
        mix = bundled_mix()
        blocks = blocks or grid_blocks(travellers, mix)
        osm_file = folder / f"grid_{blocks}.osm"
        osm_file.write_text(grid_city_osm(blocks, mix), "utf-8")
        cpu0, wall0 = (
            time.process_time(),
            time.perf_counter(),
        )  # the import, not the grid
    scenario = import_city(osm_file, folder, tram_feed=city == "bundled")
    import_wall, import_cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    cpu1, wall1 = time.process_time(), time.perf_counter()
    model = UrbanMobilityModel(
        scenario=scenario, n_agents=travellers, days=1, rng=0, start_date=SERVICE_DAY
    )
    setup = time.perf_counter() - wall1
    model.run()
    run_wall, run_cpu = time.perf_counter() - wall1, time.process_time() - cpu1
    summary = model.summary()
    trips = model.trips_frame()
    embedding = model.memory_store.embedding
    model.close()
    stops = {stop for line in scenario.metro_lines.values() for stop in line.stops}
    return {
        "city": city,
        "travellers": travellers,
        "blocks": blocks,
        "nodes": len(scenario.nodes),
        "links": len(scenario.road_links),
        "facilities": len(scenario.facilities),
        "transit_lines": len(scenario.metro_lines),
        "stops": len(stops),
        "import_s": round(import_wall, 2),
        "import_cpu_s": round(import_cpu, 2),
        "setup_s": round(setup, 2),
        "run_s": round(run_wall, 2),
        "run_cpu_s": round(run_cpu, 2),
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "trips": int(summary["trips"]),
        "completed": round(float(trips["arrival"].notna().mean()), 4),
        "punctuality": round(float(summary["punctuality"]), 4),
        "mean_delay_min": round(float(summary["mean_delay"]), 2),
        "mode_shares": {k: round(v, 3) for k, v in summary["mode_shares"].items()},
        "embedding": str(getattr(embedding, "name", embedding)),
        "commit": commit(),
        "machine": machine(),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "load": round(os.getloadavg()[0], 1),
    }


def plot(rows: list[dict]) -> Path:
    """Log-log: run seconds and peak RSS against travellers, one line per city."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for city in sorted({r["city"] for r in rows}):
        mine = sorted(
            (r for r in rows if r["city"] == city), key=lambda r: r["travellers"]
        )
        label = f"{city} ({mine[-1]['links']} links at {mine[-1]['travellers']:,})"
        x = [r["travellers"] for r in mine]
        (line,) = axes[0].plot(
            x, [r["run_s"] for r in mine], "o-", label=f"{label}, wall"
        )
        axes[0].plot(
            x,
            [r["run_cpu_s"] for r in mine],
            "s--",
            color=line.get_color(),
            label=f"{city}, CPU",
        )
        axes[1].plot(x, [r["rss_mb"] for r in mine], "o-", label=label)
    for ax, goal, name in (
        (axes[0], GOALS["run_s"], "run s (wall, and CPU)"),
        (axes[1], GOALS["rss_mb"], "peak RSS MB"),
    ):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(goal, color="grey", ls="--", lw=1, label="goal at 10,000")
        ax.set_xlabel("travellers (1 day, rule brain)")
        ax.set_ylabel(name)
        ax.legend(fontsize=7)
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=110)
    plt.close(fig)
    return PLOT


def markdown(rows: list[dict]) -> str:
    """The results table of ``docs/scale.md``."""
    head = (
        "| city | travellers | nodes | links | facilities | stops | import s (CPU s) | run s (CPU s) "
        "| peak RSS | trips | completed | punctuality | mean delay | commit | date | load |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|"
    )
    body = [
        f"| {r['city']} | {r['travellers']:,} | {r['nodes']} | {r['links']} | "
        f"{r['facilities']} | {r['stops']} | {r['import_s']:.1f} ({r['import_cpu_s']:.1f}) | {r['run_s']:.1f} "
        f"({r['run_cpu_s']:.1f}) | {r['rss_mb'] / 1024:.2f} GB | {r['trips']:,} | "
        f"{r['completed']:.1%} | {r['punctuality']:.1%} | {r['mean_delay_min']:.1f} min | "
        f"{r['commit']} | {r['date'][:10]} | {r['load']} |"
        for r in sorted(rows, key=lambda r: (r["city"], r["travellers"]))
    ]
    machines = sorted({r["machine"] for r in rows})
    return "\n".join([head, *body, "", "Machine: " + "; ".join(machines) + "."])


def write_doc(rows: list[dict]) -> None:
    """Put the table between the markers of ``docs/scale.md``."""
    text = SCALE_DOC.read_text("utf-8")
    start, end = (text.index(marker) for marker in MARKERS)
    text = text[: start + len(MARKERS[0])] + "\n" + markdown(rows) + "\n" + text[end:]
    SCALE_DOC.write_text(text, "utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--city", choices=("bundled", "grid"), default="bundled")
    parser.add_argument("--agents", type=int, nargs="+", default=[10000])
    parser.add_argument("--blocks", type=int, default=None, help="grid blocks per side")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument(
        "--redraw", action="store_true", help="only redraw the plot and the table"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.city, args.agents[0], args.blocks)))
        return
    results = json.loads(args.results.read_text()) if args.results.exists() else {}
    for travellers in [] if args.redraw else args.agents:
        command = [
            sys.executable,
            __file__,
            "--child",
            "--city",
            args.city,
            "--agents",
            str(travellers),
        ]
        if args.blocks:
            command += ["--blocks", str(args.blocks)]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"{args.city} x {travellers}: the run failed")
        row = json.loads(done.stdout.strip().splitlines()[-1])
        results[f"{args.city}:{travellers}"] = row
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps(results, indent=1, sort_keys=True))
        met = (
            row["import_s"] <= GOALS["import_s"]
            and row["run_s"] <= GOALS["run_s"]
            and row["rss_mb"] <= GOALS["rss_mb"]
            and row["completed"] >= GOALS["completed"]
        )
        print(
            f"{args.city} x {travellers:,}: {row['nodes']} nodes, {row['links']} links, "
            f"{row['facilities']} facilities, {row['stops']} stops; import {row['import_s']:.1f} s, "
            f"run {row['run_s']:.1f} s (CPU {row['run_cpu_s']:.1f}), peak RSS "
            f"{row['rss_mb']:.0f} MB; {row['trips']:,} trips, {row['completed']:.1%} completed, "
            f"punctuality {row['punctuality']:.1%}, mean delay {row['mean_delay_min']:.1f} min; "
            f"load {row['load']}"
            + ("; goals met" if travellers == 10000 and met else "")
        )
    rows = list(results.values())
    print(f"plot: {plot(rows)}")
    write_doc(rows)
    print(f"table: {SCALE_DOC}")


if __name__ == "__main__":
    main()
