import pytest

from mesa_llm_mobility.evacuation.personality import (
    ARCHETYPES,
    COMPOSITIONS,
    band,
    composition_profiles,
    mixed_composition,
)


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        (30, "very low"),
        (34, "very low"),
        (35, "low"),
        (44, "low"),
        (45, "average"),
        (55, "average"),
        (56, "high"),
        (65, "high"),
        (66, "very high"),
    ],
)
def test_bands(score, expected):
    assert band(score) == expected


def test_archetype_scores_match_table_1():
    table = {
        "average": (50, 50, 50, 50, 50),
        "calm_independent": (50, 55, 40, 45, 30),
        "rule_following": (40, 70, 45, 60, 50),
        "anxious_conformist": (40, 45, 62, 60, 72),
        "bold_solitary": (68, 35, 35, 40, 32),
    }
    for name, scores in table.items():
        p = ARCHETYPES[name]
        assert scores == (p.O, p.C, p.E, p.A, p.N)


def test_compositions():
    assert all(sum(c.values()) == 11 for c in COMPOSITIONS.values())
    g = composition_profiles("G")
    assert [p.archetype for p in g].count("anxious_conformist") == 8
    assert len(composition_profiles({"bold_solitary": 2, "average": 1})) == 3
    with pytest.raises(ValueError, match="unknown composition 'Z'"):
        composition_profiles("Z")
    with pytest.raises(ValueError, match="unknown archetype 'brave'"):
        composition_profiles({"brave": 1})


def test_identity_text_has_scores_bands_facets_and_anchors():
    text = ARCHETYPES["anxious_conformist"].identity_text()
    assert "neuroticism 72 (very high; salient: anxious" in text
    assert "hesitate and revisit choices" in text
    assert "openness 40 (low; salient: prefers the familiar" in text
    assert ARCHETYPES["average"].facets() == {}


def test_mixed_composition_spreads_a_crowd_over_the_five_archetypes():
    counts = mixed_composition(1003)
    assert list(counts) == list(ARCHETYPES)
    assert sum(counts.values()) == 1003
    assert counts["average"] == 200 and counts["bold_solitary"] == 203
    assert len(composition_profiles(counts)) == 1003
    with pytest.raises(ValueError, match="at least one pedestrian"):
        mixed_composition(0)
