"""The believability tests on the paper's counts and on hand-computed small cases."""

from __future__ import annotations

import pytest

from mesa_llm_mobility.experiment.believability_stats import (
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
