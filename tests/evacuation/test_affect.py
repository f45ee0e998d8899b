import numpy as np
import pytest

from mesa_llm_mobility.evacuation.affect import (
    StimulusIntensities,
    fear_level,
    recovery_rate,
    sensitivity,
    update_fear,
)


@pytest.mark.parametrize(
    ("t_n", "kappa", "rho"),
    [
        (50, 1.0, 0.10),
        (72, 1.22, 0.078),
        (30, 0.8, 0.12),
        (10, 0.65, 0.14),
        (100, 1.45, 0.05),
        (150, 1.45, 0.01),
    ],
)
def test_kappa_and_rho_by_hand(t_n, kappa, rho):
    assert sensitivity(t_n) == pytest.approx(kappa)
    assert recovery_rate(t_n) == pytest.approx(rho)


def test_fear_rises_to_kappa_z_and_never_falls_on_stimulus():
    # anxious-conformist (N = 72): kappa = 1.22; z = 0.5 -> 0.61
    assert update_fear(0.0, 0.5, 1.22, 0.078, 1 / 3) == pytest.approx(0.61)
    assert update_fear(0.9, 0.5, 1.22, 0.078, 1 / 3) == pytest.approx(
        0.9
    )  # max(f, ...)
    assert update_fear(0.2, 0.9, 1.22, 0.078, 1 / 3) == pytest.approx(
        1.0
    )  # capped at 1


def test_fear_decays_by_rho_dt_and_floors_at_zero():
    assert update_fear(0.5, 0.0, 1.0, 0.10, 1 / 3) == pytest.approx(0.5 - 0.1 / 3)
    assert update_fear(0.01, 0.0, 1.0, 0.10, 1 / 3) == pytest.approx(0.0)
    values = update_fear(
        np.array([0.5, 0.0]),
        np.array([0.0, 0.4]),
        np.array([1.0, 0.8]),
        np.array([0.12, 0.12]),
        1.0,
    )
    np.testing.assert_allclose(values, [0.38, 0.32])


@pytest.mark.parametrize(
    ("fear", "level"),
    [
        (0.0, "calm"),
        (0.199, "calm"),
        (0.2, "alert"),
        (0.449, "alert"),
        (0.45, "afraid"),
        (0.749, "afraid"),
        (0.75, "high fear"),
        (1.0, "high fear"),
    ],
)
def test_levels(fear, level):
    assert fear_level(fear) == level


def test_strongest_stimulus():
    s = StimulusIntensities()
    z = s.strongest(
        np.array([True, True, False, False, False]),
        np.array([10.0, 0.0, np.inf, np.inf, np.inf]),
        np.array([False, False, True, False, False]),
        np.array([0, 0, 0, 3, 0]),
        np.array([False, False, False, False, True]),
    )
    np.testing.assert_allclose(z, [0.8, 1.0, 0.7, 0.5, 0.25])
