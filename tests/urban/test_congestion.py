import pytest

from mesa_llm_mobility.urban.congestion import (
    congestion_label,
    facility_wait_indicator,
    link_wait_indicator,
)


def test_link_wait_indicator():
    assert link_wait_indicator(0, 2, 8) == 0
    assert link_wait_indicator(1, 2, 8) == (1 / 2 + 0.5) * 8
    assert link_wait_indicator(3, 2, 8) == 16
    assert link_wait_indicator(100, 2, 8) == 40  # capped at 5 x travel time
    assert link_wait_indicator(2, 0, 8) == 40  # closed link


def test_facility_wait_indicator():
    assert facility_wait_indicator(0, 8, 60) == 0
    assert facility_wait_indicator(4, 8, 60) == 60
    assert facility_wait_indicator(1, 0, 60) == 300


@pytest.mark.parametrize(
    ("wait", "label"),
    [
        (0, None),
        (0.4, None),
        (0.5, "light"),
        (4, "light"),
        (4.6, "moderate"),
        (9, "moderate"),
        (9.5, "severe"),
        (40, "severe"),
    ],
)
def test_labels(wait, label):
    assert congestion_label(wait) == label
