"""Knowledge graph: bigram Jaccard (Eq. 3) on hand-computed values, lineages, typed graph."""

import networkx as nx
import pandas as pd
import pytest

from mesa_llm_mobility.evacuation.knowledge_graph import (
    JACCARD_THRESHOLD,
    bigram_jaccard,
    bigrams,
    fact_track,
    knowledge_graph,
    memory_links_per_decision,
    memory_operations,
    operation_counts,
    plot_agent_lanes,
    plot_knowledge_graph,
    write_graphml,
)
from mesa_llm_mobility.evacuation.model import EvacuationModel


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # B(night) = {ni, ig, gh, ht}, B(nacht) = {na, ac, ch, ht}: 1 shared of 7
        ("night", "nacht", 1 / 7),
        # B(abab) = {ab, ba}, B(ab) = {ab}: 1 of 2
        ("abab", "ab", 1 / 2),
        ("gate", "gate", 1.0),
        ("ab", "cd", 0.0),
        ("a", "b", 0.0),  # no bigrams at all
        # B(exit open) = {ex, xi, it, "t ", " o", op, pe, en} (8),
        # B(exit shut) = {ex, xi, it, "t ", " s", sh, hu, ut} (8): 4 shared of 12
        ("exit open", "exit shut", 4 / 12),
    ],
)
def test_bigram_jaccard_on_hand_computed_values(a, b, expected):
    assert bigram_jaccard(a, b) == pytest.approx(expected)
    assert bigram_jaccard(b, a) == pytest.approx(expected)


def test_bigrams_are_the_set_of_adjacent_pairs():
    assert bigrams("gate") == {"ga", "at", "te"}
    assert bigrams("aaa") == {"aa"}


def test_rewordings_pass_the_threshold_and_distinct_facts_do_not():
    # the paper: rewordings score 0.43-0.60, distinct facts 0.00-0.11
    reworded = bigram_jaccard(
        "I know of the exit exit1 to the SE, about 9 m away, open when I last saw it.",
        "I know of the exit exit1 to the E, about 4 m away, open when I last saw it.",
    )
    distinct = bigram_jaccard(
        "I know of the exit exit1 to the SE, about 9 m away, open when I last saw it.",
        "I feel afraid.",
    )
    assert reworded >= JACCARD_THRESHOLD > distinct


def _versions(*texts, agent_id=1):
    return pd.DataFrame(
        {
            "agent_id": agent_id,
            "version": range(1, len(texts) + 1),
            "request_step": [3 * k for k in range(len(texts))],
            "applied_step": [3 * k + 3 for k in range(len(texts))],
            "time_s": [float(k + 1) for k in range(len(texts))],
            "memory": list(texts),
        }
    )


def test_lineages_write_retain_rewrite_and_forget():
    versions = _versions(
        "I see the south gate open. I feel calm.",
        "I see the south gate closing. I feel calm. A man shouted to the north.",
        "I feel calm.",
    )
    ops = memory_operations(versions)
    got = list(zip(ops["version"], ops["operation"], ops["lineage"], strict=True))
    assert got == [
        (1, "write", "1:1"),
        (1, "write", "1:2"),
        (2, "rewrite", "1:1"),  # gate open -> closing: J >= 0.40, one lineage
        (2, "retain", "1:2"),
        (2, "write", "1:3"),
        (3, "retain", "1:2"),
        (3, "forget", "1:1"),  # omitted: the lineage ends
        (3, "forget", "1:3"),
    ]
    assert operation_counts(ops) == {"write": 3, "rewrite": 1, "retain": 2, "forget": 2}
    assert ops.loc[2, "score"] == pytest.approx(
        bigram_jaccard("I see the south gate open.", "I see the south gate closing.")
    )
    assert list(ops["track"][:2]) == ["opening", "affect"]
    assert fact_track("A man shouted to the north.") == "communication"


def _small_record():
    """Two memory versions, three decisions and two observations of pedestrian 1."""
    versions = _versions(
        "I see the south gate open. I feel calm.", "I decided to head to the gate."
    )
    decisions = pd.DataFrame(
        {
            "request_step": [0, 4, 7],
            "applied_step": [0, 6, 9],
            "time_s": [0.0, 2.0, 3.0],
            "agent_id": 1,
            "kind": "EvacuationMove",
            "outcome": ["ok", "ok", "rejected"],
            "fear": [0.0, 0.5, 0.5],
            "action": ["move", "move", None],
            "situation": ["normal", "unsure", "unsure"],
            "intent": ["tour", "seek_exit", "seek_exit"],
            "urgency": [0.1, 0.5, 0.5],
            "revision_level": ["none", "goal", "none"],
            "opening_id": [None, "gate2", None],
            "anchor_kind": ["frontier", "gate", None],
        }
    )
    events = pd.DataFrame(
        {
            "step": [2, 5],
            "time_s": [0.67, 1.67],
            "event": ["shout_heard", "sighting_adversary"],
            "agent_id": 1,
            "other_id": [3, 12],
            "detail": ["N ~9 m", "10.0 m"],
        }
    )
    return versions, decisions, events


def test_the_graph_links_decisions_to_the_memory_in_force_when_they_were_requested(
    tmp_path,
):
    versions, decisions, events = _small_record()
    graph = knowledge_graph(versions, decisions, events)
    types = nx.get_node_attributes(graph, "type")
    assert sorted(set(types.values())) == [
        "affect",
        "decision",
        "memory",
        "observation",
        "route",
    ]

    def linked(decision, relation):
        return sorted(
            v for _, v, r in graph.out_edges(decision, data="relation") if r == relation
        )

    assert linked("dec:1:1", "informed_by") == []  # no memory yet at step 0
    assert linked("dec:1:2", "informed_by") == [
        "mem:1:1:v1",
        "mem:1:2:v1",
    ]  # v1 at step 3
    assert linked("dec:1:3", "informed_by") == ["mem:1:3:v2"]  # v2 at step 6
    assert linked("dec:1:2", "chose") == ["route:1:gate2"]
    assert linked("dec:1:1", "chose") == ["route:1:frontier"]
    assert graph.nodes["affect:1:2.0"]["level"] == "afraid"

    def preceded(decision):
        return [
            u
            for u, _, r in graph.in_edges(decision, data="relation")
            if r == "preceded"
        ]

    # observations between the previous decision's request and this one's
    assert preceded("dec:1:1") == [] and preceded("dec:1:2") == ["obs:1:1"]
    assert preceded("dec:1:3") == ["obs:1:2"]
    assert graph.nodes["mem:1:1:v1"]["forgotten_at_version"] == 2
    assert memory_links_per_decision(graph) == pytest.approx(1.0)
    path = write_graphml(graph, tmp_path / "kg.graphml")
    back = nx.read_graphml(path)
    assert back.number_of_nodes() == graph.number_of_nodes()
    assert back.nodes["dec:1:3"]["outcome"] == "rejected"


def test_a_rule_run_gives_a_graph_a_count_and_a_lane_figure(tmp_path):
    model = EvacuationModel(composition="F", rng=1, time_limit_s=30)
    model.run()
    versions, decisions = model.memory_versions_frame(), model.decisions_frame()
    ops = memory_operations(versions)
    counts = operation_counts(ops)
    assert counts["write"] > 0 and counts["rewrite"] > 0 and counts["forget"] > 0
    # every lineage opens with a write, and what is forgotten was written before
    first = ops.groupby("lineage")["operation"].first()
    assert (first == "write").all()
    graph = knowledge_graph(versions, decisions, model.events_frame())
    assert memory_links_per_decision(graph) > 0
    agent_id = int(decisions["agent_id"].iloc[0])
    figure = plot_agent_lanes(
        agent_id,
        versions,
        decisions,
        model.events_frame(),
        model.positions_frame(),
        tmp_path / "lanes.png",
    )
    assert figure.stat().st_size > 10_000


def test_the_graph_figure_puts_nodes_at_their_times_with_lanes_and_a_legend(tmp_path):
    versions, decisions, events = _small_record()
    graph = knowledge_graph(versions, decisions, events)
    figure = plot_knowledge_graph(graph, title="pedestrian 1", path=tmp_path / "kg.png")
    assert (tmp_path / "kg.png").stat().st_size > 10_000
    ax = figure.axes[0]
    assert ax.get_title() == "pedestrian 1" and ax.get_xlabel() == "time (s)"
    lanes = [t.get_text() for t in ax.get_yticklabels()]
    assert lanes[:4] == ["observations", "decisions", "affect (fear)", "routes chosen"]
    tracks = {d["track"] for _, d in graph.nodes(data=True) if d["type"] == "memory"}
    assert lanes[4:] == [f"memory: {t}" for t in sorted(tracks)]
    legend = {t.get_text() for t in ax.get_legend().get_texts()}
    relations = {r.replace("_", " ") for _, _, r in graph.edges(data="relation")}
    assert {"decisions", "remembered facts", "observations"} <= legend
    assert relations <= legend and len(relations) >= 4
    by_gid = {c.get_gid(): c for c in ax.collections if c.get_gid()}
    times = sorted(by_gid["decision"].get_offsets()[:, 0])
    assert times == sorted(decisions["time_s"])
    # a route sits at the first decision that chose it, named by its target
    routes = {t.get_text(): t.xy for t in ax.texts}
    assert routes["gate2"][0] == 2.0 and routes["frontier"][0] == 0.0
    with pytest.raises(ValueError, match="no nodes"):
        plot_knowledge_graph(nx.MultiDiGraph())
