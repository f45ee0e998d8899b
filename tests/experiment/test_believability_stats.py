"""The believability tests on the paper's counts and on hand-computed small cases."""

from __future__ import annotations

import pytest

from mesa_llm_mobility.experiment.believability_stats import (
    assumption_variants,
    believability_tests,
    binomial_test,
    posterior_at_least_as_good,
    sign_test,
)


def test_paper_counts_give_the_papers_p_values():
    # GATSim 4.3.2: 23 agent wins, 20 human wins, 7 ties of 50
    tests = believability_tests(23, 20, 7)
    assert tests.n == 50
    assert round(tests.binomial_p, 3) == 0.002
    assert round(tests.sign_p, 3) == 0.380
    assert round(tests.posterior_at_least_as_good, 3) == 0.920


def test_small_cases_by_hand():
    # 3 of 3 against chance 1/3: (1/3)^3
    assert binomial_test(3, 0, 3) == pytest.approx(1 / 27)
    # 1 win + 2 ties = 2 successes of 3: P(X >= 2) = 3 (1/3)^2 (2/3) + (1/3)^3 = 7/27
    assert binomial_test(1, 2, 3) == pytest.approx(7 / 27)
    # sign test, 2 wins of 2: 1/4; 1 of 2: 3/4
    assert sign_test(2, 0) == pytest.approx(0.25)
    assert sign_test(1, 1) == pytest.approx(0.75)
    # no pairs lost: q ~ Beta(1 + n, 1); P(q >= 1/2) = 1 - 0.5^(n + 1)
    assert posterior_at_least_as_good(2, 0, 1) == pytest.approx(1 - 0.5**4)
    # nothing observed: a uniform q, P(q >= 1/2) = 1/2
    assert posterior_at_least_as_good(0, 0, 0) == pytest.approx(0.5)


def test_bad_counts():
    with pytest.raises(ValueError, match=">= 0"):
        sign_test(-1, 2)
    with pytest.raises(ValueError, match="exceed"):
        binomial_test(3, 2, 4)


def test_assumption_variants_on_the_papers_counts():
    variants = assumption_variants(23, 20, 7)
    paper = {v.test: v for v in variants if v.paper}
    assert set(paper) == {"binomial", "sign", "bayes"}
    assert paper["binomial"].value == pytest.approx(binomial_test(23, 7, 50))
    assert paper["sign"].value == pytest.approx(sign_test(23, 20))
    assert paper["bayes"].value == pytest.approx(posterior_at_least_as_good(23, 20, 7))
    by_text = {v.assumption.split(",")[0]: v for v in variants if v.test == "binomial"}
    # the null that matches half a win per tie: a random three-way judge scores 1/2
    fair = next(v for v in variants if v.assumption.startswith("H0 share <= 1/2"))
    assert fair.value == pytest.approx(0.3359, abs=1e-4)
    assert fair.conclusion == "not significant"
    assert by_text["H0 share <= 1/3"].conclusion == "significant at 5 %"
    # every sign test variant stays not significant
    assert {v.conclusion for v in variants if v.test == "sign"} == {"not significant"}
    # crediting ties to neither side: P(agent wins | not a tie >= 1/2) for 23 of 43
    neither = next(v for v in variants if "ties to neither side" in v.assumption)
    assert neither.value == pytest.approx(0.6742, abs=1e-4)
    assert neither.conclusion == "weak (< 0.75)"


def test_assumption_variants_by_hand():
    # 2 wins, 0 losses, 0 ties: binomial 2 of 2 against 1/3 is 1/9, against 1/2 is 1/4
    variants = {v.assumption: v.value for v in assumption_variants(2, 0, 0)}
    assert variants["H0 share <= 1/3, ties half a win, 2 rounded up"] == pytest.approx(
        1 / 9
    )
    assert any(v == pytest.approx(0.25) for k, v in variants.items() if "1/2" in k)
    # the annotators' "at least as good": q ~ Beta(1, 3), P(q >= 1/2) = 1/8
    side = next(k for k in variants if k.startswith("P(P(annotator"))
    assert variants[side] == pytest.approx(0.125)
