"""Knowledge graphs reconstructed after a run from the memory record (paper Sec. 2.3.4, Fig. 4).

Each long-term memory revision is split at sentence boundaries into remembered facts. Facts are
matched across consecutive versions by character-bigram Jaccard overlap (Eq. 3),

    J(a, b) = |B(a) & B(b)| / |B(a) | B(b)|,   B(s) = the set of adjacent character pairs of s,

at ``J >= 0.40`` (the paper: rewordings of one fact score 0.43-0.60, distinct facts 0.00-0.11).
A matched fact continues its **lineage** (``retain`` when the text is the same, ``rewrite`` when
it was reworded); an unmatched one starts a lineage (``write``); a lineage with no match in a
version ends there (``forget``: forgetting by omission). :func:`memory_operations` lists these
operations; :func:`operation_counts` counts them per run.

:func:`knowledge_graph` builds a typed networkx graph of one run: ``memory`` nodes (one per fact
version), ``decision``, ``route``, ``affect`` and ``observation`` nodes; edges continue
lineages, link every decision to the memory items present when it was requested, to its route,
its affect and the observations since the previous decision, and associate facts of different
semantic tracks remembered together. :func:`write_graphml` exports it;
:func:`plot_knowledge_graph` draws it on a time axis, one lane per node type (memory split by
track), with a legend of node types and relations; :func:`plot_agent_lanes` draws one
pedestrian's record in five lanes like the paper's Fig. 8.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from mesa_llm_mobility.evacuation.affect import fear_level
from mesa_llm_mobility.evacuation.memory_role import split_sentences

JACCARD_THRESHOLD = 0.40
"""Facts of two versions with bigram Jaccard at least this are the same fact (paper Sec. 2.3.4)."""

OPERATIONS = ("write", "rewrite", "retain", "forget")
"""Memory operations, in the order the counts list them."""

OPERATION_COLUMNS = (
    "agent_id",
    "version",
    "time_s",
    "lineage",
    "operation",
    "track",
    "fact",
    "score",
)
"""Columns of :func:`memory_operations`."""

TRACKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "threat",
        re.compile(r"armed|rushing|attack|knife|adversary|motionless|lying|body", re.I),
    ),
    ("communication", re.compile(r"told|shout|heard|message|warn", re.I)),
    ("opening", re.compile(r"\bexit|\bgate|opening|\bE\d|\bG\d", re.I)),
    ("affect", re.compile(r"\bfeel|afraid|fear|calm|alert|panic|scared|nervous", re.I)),
    ("intention", re.compile(r"decid|plan|head|going|route|chose|try|want|keep", re.I)),
)
"""Semantic tracks of a fact, first match wins (else ``other``)."""

ASSOCIATED_TRACKS = frozenset(
    {
        frozenset({"opening", "intention"}),
        frozenset({"communication", "affect"}),
        frozenset({"threat", "intention"}),
        frozenset({"threat", "affect"}),
        frozenset({"communication", "intention"}),
    }
)
"""Track pairs whose facts, remembered in the same version, get an ``associated`` edge."""

REVISION_DEPTH = {"none": 0, "execution": 1, "plan": 2, "goal": 3}
"""Height of a decision in the lane figure, by its revision level."""


def bigrams(text: str) -> set[str]:
    """The set of adjacent character pairs of ``text`` (``B`` of Eq. 3)."""
    return {text[k : k + 2] for k in range(len(text) - 1)}


def bigram_jaccard(a: str, b: str) -> float:
    """Character-bigram Jaccard overlap of two facts (Eq. 3); 0 when neither has a bigram."""
    first, second = bigrams(a), bigrams(b)
    union = first | second
    return len(first & second) / len(union) if union else 0.0


def fact_track(fact: str) -> str:
    """The semantic track of a fact (:data:`TRACKS`), else ``other``."""
    return next((name for name, pattern in TRACKS if pattern.search(fact)), "other")


def match_facts(
    previous: list[str], current: list[str], threshold: float = JACCARD_THRESHOLD
) -> dict[int, tuple[int, float]]:
    """One-to-one matches of the current facts to the previous ones, best pairs first.

    Args:
        previous: The facts of the previous version.
        current: The facts of this version.
        threshold: Least Jaccard overlap of a match.

    Returns:
        ``{current index: (previous index, score)}``.
    """
    pairs = sorted(
        (
            (-bigram_jaccard(p, c), j, k)
            for k, c in enumerate(current)
            for j, p in enumerate(previous)
        ),
    )
    matched: dict[int, tuple[int, float]] = {}
    used: set[int] = set()
    for negative, j, k in pairs:
        if -negative < threshold:
            break
        if k in matched or j in used:
            continue
        matched[k] = (j, -negative)
        used.add(j)
    return matched


def memory_operations(
    memory_versions: pd.DataFrame, threshold: float = JACCARD_THRESHOLD
) -> pd.DataFrame:
    """Every write, rewrite, retain and forget of every pedestrian's memory, in version order.

    Args:
        memory_versions: The run's ``memory_versions`` table (``agent_id, version, time_s,
            memory``).
        threshold: Least Jaccard overlap for two facts to be one.

    Returns:
        One row per operation (:data:`OPERATION_COLUMNS`); ``lineage`` is ``"<agent>:<k>"``,
        ``score`` the match's Jaccard (NaN for writes and forgets).
    """
    rows = []
    for agent_id, versions in memory_versions.sort_values(
        ["agent_id", "version"]
    ).groupby("agent_id", sort=True):
        active: list[tuple[str, str]] = []  # (lineage, latest fact)
        count = 0
        for version in versions.itertuples():
            facts = split_sentences(str(version.memory))
            matched = match_facts([fact for _, fact in active], facts, threshold)
            next_active = []
            for k, fact in enumerate(facts):
                if k in matched:
                    j, score = matched[k]
                    lineage, old = active[j]
                    operation = "retain" if fact == old else "rewrite"
                else:
                    count += 1
                    lineage, score, operation = (
                        f"{agent_id}:{count}",
                        float("nan"),
                        "write",
                    )
                rows.append(
                    (
                        agent_id,
                        version.version,
                        version.time_s,
                        lineage,
                        operation,
                        fact,
                        score,
                    )
                )
                next_active.append((lineage, fact))
            ended = set(range(len(active))) - {j for j, _ in matched.values()}
            for j in sorted(ended):
                lineage, old = active[j]
                rows.append(
                    (
                        agent_id,
                        version.version,
                        version.time_s,
                        lineage,
                        "forget",
                        old,
                        float("nan"),
                    )
                )
            active = next_active
    frame = pd.DataFrame(
        rows,
        columns=[
            "agent_id",
            "version",
            "time_s",
            "lineage",
            "operation",
            "fact",
            "score",
        ],
    )
    frame["track"] = [fact_track(fact) for fact in frame["fact"]]
    return frame[list(OPERATION_COLUMNS)]


def operation_counts(operations: pd.DataFrame) -> dict[str, int]:
    """Counts of ``write``, ``rewrite``, ``retain`` and ``forget`` (all four, zeros included)."""
    counts = operations["operation"].value_counts()
    return {name: int(counts.get(name, 0)) for name in OPERATIONS}


def _memory_at(memory_versions: pd.DataFrame, agent_id: int, step: int) -> int | None:
    """The version of ``agent_id``'s memory in force at ``step`` (``None``: none yet)."""
    mine = memory_versions[
        (memory_versions["agent_id"] == agent_id)
        & (memory_versions["applied_step"] <= step)
    ]
    return None if mine.empty else int(mine["version"].max())


def _text(value: object) -> str | None:
    """A table cell as text, ``None`` for missing values (None or NaN) and empty strings."""
    return value if isinstance(value, str) and value else None


def _clean(attributes: dict[str, object]) -> dict[str, object]:
    """GraphML holds strings and numbers: ``None`` and NaN become empty strings."""
    out: dict[str, object] = {}
    for name, value in attributes.items():
        if value is None or (isinstance(value, float) and np.isnan(value)):
            out[name] = ""
        elif isinstance(value, np.generic):
            out[name] = value.item()
        else:
            out[name] = value
    return out


def knowledge_graph(
    memory_versions: pd.DataFrame,
    decisions: pd.DataFrame,
    events: pd.DataFrame,
    agent_ids: Iterable[int] | None = None,
    threshold: float = JACCARD_THRESHOLD,
) -> nx.MultiDiGraph:
    """The run's knowledge graph, for some pedestrians or all (node attribute ``type``).

    Nodes: ``memory`` (``mem:<lineage>:v<version>``: fact, track, operation, time),
    ``decision`` (``dec:<agent>:<k>``: time, action, situation, intent, urgency, revision
    level, outcome), ``route`` (``route:<agent>:<target>``), ``affect``
    (``affect:<agent>:<time>``: fear and level, one per decision) and ``observation``
    (``obs:<agent>:<k>``: event, detail, time).

    Edges (attribute ``relation``): ``retained`` / ``revised`` along a lineage,
    ``informed_by`` from a decision to every memory item in force when it was requested,
    ``chose`` to its route, ``felt`` to its affect, ``preceded`` from each observation to the
    next decision, and ``associated`` between facts of :data:`ASSOCIATED_TRACKS` remembered in
    the same version.

    Args:
        memory_versions: The ``memory_versions`` table.
        decisions: The ``decisions`` table.
        events: The ``events`` table.
        agent_ids: Pedestrians to include (default: every one with a memory or a decision).
        threshold: Fact-matching threshold.

    Returns:
        A directed multigraph.
    """
    operations = memory_operations(memory_versions, threshold)
    wanted = (
        set(agent_ids)
        if agent_ids is not None
        else set(memory_versions["agent_id"]) | set(decisions["agent_id"])
    )
    graph = nx.MultiDiGraph()
    kept = operations[
        operations["agent_id"].isin(wanted) & (operations["operation"] != "forget")
    ]
    last_node: dict[str, str] = {}
    for op in kept.itertuples():
        node = f"mem:{op.lineage}:v{op.version}"
        graph.add_node(
            node,
            **_clean(
                {
                    "type": "memory",
                    "agent_id": op.agent_id,
                    "lineage": op.lineage,
                    "version": op.version,
                    "time_s": op.time_s,
                    "fact": op.fact,
                    "track": op.track,
                    "operation": op.operation,
                }
            ),
        )
        if op.lineage in last_node:
            relation = "retained" if op.operation == "retain" else "revised"
            graph.add_edge(last_node[op.lineage], node, relation=relation)
        last_node[op.lineage] = node
    for (_agent, _version), facts in kept.groupby(["agent_id", "version"]):
        nodes = [
            (f"mem:{op.lineage}:v{op.version}", op.track) for op in facts.itertuples()
        ]
        for a, (node_a, track_a) in enumerate(nodes):
            for node_b, track_b in nodes[a + 1 :]:
                if frozenset({track_a, track_b}) in ASSOCIATED_TRACKS:
                    graph.add_edge(node_a, node_b, relation="associated")
    ended = operations[operations["operation"] == "forget"]
    for op in ended[ended["agent_id"].isin(wanted)].itertuples():
        graph.nodes[last_node[op.lineage]]["forgotten_at_version"] = int(op.version)
    memory_nodes: dict[tuple[int, int], list[str]] = {}
    for node, data in graph.nodes(data=True):
        memory_nodes.setdefault((data["agent_id"], data["version"]), []).append(node)
    for agent_id in sorted(wanted):
        mine = decisions[decisions["agent_id"] == agent_id].reset_index(drop=True)
        seen = events[
            (events["agent_id"] == agent_id) & (events["event"] != "evacuated")
        ]
        seen = seen.reset_index(drop=True)
        previous_step = -1
        for k, decision in mine.iterrows():
            node = f"dec:{agent_id}:{k + 1}"
            graph.add_node(
                node,
                **_clean(
                    {
                        "type": "decision",
                        "agent_id": agent_id,
                        "time_s": decision["time_s"],
                        "action": decision.get("action"),
                        "situation": decision.get("situation"),
                        "intent": decision.get("intent"),
                        "urgency": decision.get("urgency"),
                        "revision_level": decision.get("revision_level"),
                        "outcome": decision.get("outcome"),
                    }
                ),
            )
            version = _memory_at(
                memory_versions, agent_id, int(decision["request_step"])
            )
            for item in memory_nodes.get((agent_id, version), []) if version else []:
                graph.add_edge(node, item, relation="informed_by")
            target = _text(decision.get("opening_id")) or _text(
                decision.get("anchor_kind")
            )
            if target:
                route = f"route:{agent_id}:{target}"
                graph.add_node(route, type="route", agent_id=agent_id, target=target)
                graph.add_edge(node, route, relation="chose")
            fear = float(decision["fear"])
            affect = f"affect:{agent_id}:{decision['time_s']}"
            graph.add_node(
                affect,
                type="affect",
                agent_id=agent_id,
                time_s=float(decision["time_s"]),
                fear=fear,
                level=fear_level(fear),
            )
            graph.add_edge(node, affect, relation="felt")
            step = int(decision["request_step"])
            window = seen[(seen["step"] > previous_step) & (seen["step"] <= step)]
            for j, event in window.iterrows():
                observation = f"obs:{agent_id}:{j + 1}"
                graph.add_node(
                    observation,
                    **_clean(
                        {
                            "type": "observation",
                            "agent_id": agent_id,
                            "time_s": event["time_s"],
                            "event": event["event"],
                            "detail": event["detail"],
                        }
                    ),
                )
                graph.add_edge(observation, node, relation="preceded")
            previous_step = step
    return graph


def memory_links_per_decision(graph: nx.MultiDiGraph) -> float:
    """Mean number of memory items linked to a decision (the paper reports 5.51)."""
    decisions = [n for n, d in graph.nodes(data=True) if d["type"] == "decision"]
    if not decisions:
        return float("nan")
    links = [
        sum(1 for _, _, r in graph.out_edges(n, data="relation") if r == "informed_by")
        for n in decisions
    ]
    return float(np.mean(links))


def write_graphml(graph: nx.MultiDiGraph, path: str | Path) -> Path:
    """Write ``graph`` as GraphML (readable by networkx, Gephi, yEd, Cytoscape).

    Returns:
        The path written.
    """
    path = Path(path)
    nx.write_graphml(graph, path)
    return path


def plot_agent_lanes(
    agent_id: int,
    memory_versions: pd.DataFrame,
    decisions: pd.DataFrame,
    events: pd.DataFrame,
    positions: pd.DataFrame,
    path: str | Path,
) -> Path:
    """One pedestrian's recorded chain in five lanes, like the paper's Fig. 8.

    Lanes, top to bottom: perception events; fear (engine) and urgency (self-reported); the
    appraisal (normal / unsure / danger); decisions at a height set by their revision depth;
    memory operations (write, rewrite, forget) per revision.

    Args:
        agent_id: The pedestrian.
        memory_versions: The ``memory_versions`` table.
        decisions: The ``decisions`` table.
        events: The ``events`` table.
        positions: The ``positions`` table (for the fear trace).
        path: Image file to write.

    Returns:
        The path written.
    """
    mine = decisions[decisions["agent_id"] == agent_id]
    seen = events[events["agent_id"] == agent_id]
    trace = positions[positions["agent_id"] == agent_id]
    operations = memory_operations(
        memory_versions[memory_versions["agent_id"] == agent_id]
    )
    figure = Figure(figsize=(10, 8))
    axes = figure.subplots(5, 1, sharex=True, height_ratios=(1, 1.4, 0.8, 1.2, 1.2))
    lane = axes[0]
    kinds = sorted(seen["event"].unique())
    for row, kind in enumerate(kinds):
        times = seen.loc[seen["event"] == kind, "time_s"]
        lane.scatter(times, np.full(len(times), row), marker="|", s=120)
    lane.set_yticks(range(len(kinds)), kinds, fontsize=7)
    lane.set_title(f"pedestrian {agent_id}: perception events", fontsize=9, loc="left")
    lane = axes[1]
    lane.plot(trace["time_s"], trace["fear"], label="fear (engine)", color="#c62828")
    lane.step(
        mine["time_s"], mine["urgency"], where="post", label="urgency", color="#1565c0"
    )
    for level in (0.20, 0.45, 0.75):
        lane.axhline(level, color="#bbbbbb", linewidth=0.6, linestyle=":")
    lane.set_ylim(-0.05, 1.05)
    lane.legend(fontsize=7, loc="upper left")
    lane = axes[2]
    bands = {"normal": 0, "unsure": 1, "danger": 2}
    lane.step(
        mine["time_s"], mine["situation"].map(bands), where="post", color="#6a1b9a"
    )
    lane.set_yticks(range(3), list(bands), fontsize=7)
    lane.set_ylim(-0.5, 2.5)
    lane = axes[3]
    depth = mine["revision_level"].map(REVISION_DEPTH).fillna(0)
    lane.vlines(mine["time_s"], 0, depth, color="#455a64")
    lane.scatter(mine["time_s"], depth, s=14, color="#455a64")
    lane.set_yticks(range(4), list(REVISION_DEPTH), fontsize=7)
    lane.set_ylim(-0.3, 3.5)
    lane = axes[4]
    colours = {"write": "#2e7d32", "rewrite": "#1565c0", "forget": "#bdbdbd"}
    for row, name in enumerate(("write", "rewrite", "forget")):
        times = operations.loc[operations["operation"] == name, "time_s"]
        lane.scatter(times, np.full(len(times), row), s=10, color=colours[name])
    lane.set_yticks(range(3), ["write", "rewrite", "forget"], fontsize=7)
    lane.set_xlabel("time (s)")
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, dpi=120)
    return path


KG_NODE_STYLE = {
    "observation": ("tab:purple", "v", "observations"),
    "decision": ("tab:red", "s", "decisions"),
    "affect": ("tab:orange", "o", "affect (fear)"),
    "route": ("tab:green", "D", "routes chosen"),
    "memory": ("tab:blue", "o", "remembered facts"),
}
"""Colour, marker and lane name of each node type of :func:`plot_knowledge_graph`."""

KG_RELATION_COLOURS = {
    "preceded": "#9467bd",
    "felt": "#ff7f0e",
    "chose": "#2ca02c",
    "informed_by": "#1f77b4",
    "retained": "#7f7f7f",
    "revised": "#17becf",
    "associated": "#bcbd22",
}
"""Colour of each relation's edges in :func:`plot_knowledge_graph`."""


def _node_times(graph: nx.MultiDiGraph) -> dict[str, float]:
    """Each node's time (s); a route takes the time of the first decision that chose it."""
    times = {n: float(d["time_s"]) for n, d in graph.nodes(data=True) if "time_s" in d}
    for decision, route, relation in graph.edges(data="relation"):
        if relation == "chose" and decision in times:
            times[route] = min(times.get(route, np.inf), times[decision])
    return times


def _node_lanes(graph: nx.MultiDiGraph) -> tuple[dict[str, int], list[str]]:
    """Each node's lane (row from the top) and the lanes' names."""
    names: list[str] = []
    keys: list[tuple[str, str]] = []
    present = {d["type"] for _, d in graph.nodes(data=True)}
    tracks = sorted(
        {
            str(d.get("track"))
            for _, d in graph.nodes(data=True)
            if d["type"] == "memory"
        }
    )
    for kind in KG_NODE_STYLE:
        if kind not in present:
            continue
        for track in tracks if kind == "memory" else [""]:
            keys.append((kind, track))
            label = KG_NODE_STYLE[kind][2]
            names.append(f"memory: {track}" if kind == "memory" else label)
    lane_of = {key: k for k, key in enumerate(keys)}
    lanes = {
        n: lane_of[(d["type"], str(d.get("track")) if d["type"] == "memory" else "")]
        for n, d in graph.nodes(data=True)
    }
    return lanes, names


def plot_knowledge_graph(
    graph: nx.MultiDiGraph,
    title: str | None = None,
    path: str | Path | None = None,
) -> Figure:
    """A knowledge graph on a time axis: one lane per node type, edges coloured by relation.

    Lanes from the top: observations, decisions, affect, routes chosen (labelled with their
    target), then the remembered facts, one lane per semantic track. A node sits at its time
    (a route at the first decision that chose it); several nodes of one lane at one time are
    spread a little within the lane. The legend names every node type and relation drawn.

    Args:
        graph: From :func:`knowledge_graph` (one pedestrian reads best).
        title: The title (default: the number of nodes and edges).
        path: Also write the figure here as PNG.

    Returns:
        The figure.
    """
    if graph.number_of_nodes() == 0:
        raise ValueError("knowledge graph: no nodes to draw")
    times = _node_times(graph)
    lanes, lane_names = _node_lanes(graph)
    position: dict[str, tuple[float, float]] = {}
    crowd: dict[tuple[int, float], int] = {}
    for node in graph.nodes:
        x = times.get(node, 0.0)
        k = crowd.get((lanes[node], x), 0)
        crowd[(lanes[node], x)] = k + 1
        offset = (0.0, 0.12, -0.12, 0.24, -0.24)[k % 5]  # five at one time stay apart
        position[node] = (x, lanes[node] + offset)
    figure = Figure(figsize=(10, 1.2 + 0.55 * len(lane_names)), layout="constrained")
    ax = figure.subplots()
    handles = []
    for relation, colour in KG_RELATION_COLOURS.items():
        edges = [(u, v) for u, v, r in graph.edges(data="relation") if r == relation]
        if not edges:
            continue
        for u, v in edges:
            (x0, y0), (x1, y1) = position[u], position[v]
            ax.plot([x0, x1], [y0, y1], color=colour, lw=0.6, alpha=0.45, zorder=1)
        handles.append(
            Line2D([], [], color=colour, lw=1.5, label=relation.replace("_", " "))
        )
    node_handles = []
    for kind, (colour, marker, label) in KG_NODE_STYLE.items():
        nodes = [n for n, d in graph.nodes(data=True) if d["type"] == kind]
        if not nodes:
            continue
        xy = np.array([position[n] for n in nodes])
        ax.scatter(
            xy[:, 0],
            xy[:, 1],
            s=36,
            c=colour,
            marker=marker,
            zorder=3,
            edgecolors="white",
            linewidths=0.5,
            gid=kind,
        )
        node_handles.append(
            Line2D([], [], ls="", marker=marker, color=colour, label=label)
        )
    for node, data in graph.nodes(data=True):
        if data["type"] == "route":
            x, y = position[node]
            ax.annotate(
                str(data["target"]),
                (x, y),
                xytext=(5, 0),
                textcoords="offset points",
                va="center",
                fontsize=9,
                color="#1b5e20",
            )
    ax.set_yticks(range(len(lane_names)), lane_names, fontsize=9)
    ax.set_ylim(len(lane_names) - 0.5, -0.5)
    ax.set_xlabel("time (s)")
    ax.grid(axis="x", color="#eeeeee")
    ax.set_title(
        title
        or f"knowledge graph: {graph.number_of_nodes()} nodes, "
        f"{graph.number_of_edges()} edges",
        fontsize=11,
    )
    ax.legend(
        handles=node_handles + handles,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=9,
        title="nodes, then edges",
        title_fontsize=9,
        frameon=False,
    )
    if path is not None:
        figure.savefig(Path(path), dpi=120)
    return figure
