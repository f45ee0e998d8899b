"""The seven metrics: JSD properties, hand-computed tiny cases, order invariance, compat mode."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse

from mesa_llm_mobility.trajectory.metrics import (
    METRICS,
    _reference_histogram,
    build_timelines,
    evaluate,
    jensen_shannon,
    km_grid,
    reference_grid,
    transition_matrix,
)

from .conftest import stays_table

HOME = (34.0, -118.0)
WORK = (34.1, -118.0)  # 11.1 km north


def _day(agent, date, stays):
    """A day from (place, start 'HH:MM', end 'HH:MM' or '24:00')."""
    rows = []
    for place, start, end in stays:
        lat, lon = place
        end_stamp = f"{date} {end}" if end != "24:00" else f"{date} 23:59:59"
        rows.append(
            (agent, f"{lat},{lon}", lat, lon, "Home", f"{date} {start}", end_stamp)
        )
    return rows


def test_jsd_properties_and_a_hand_value():
    rng = np.random.default_rng(0)
    for _ in range(50):
        p, q = rng.random(10), rng.random(10)
        value = jensen_shannon(p, q)
        assert value == pytest.approx(jensen_shannon(q, p))
        assert 0.0 <= value <= math.log(2)
        assert jensen_shannon(p, 3 * p) == pytest.approx(0.0, abs=1e-12)
    assert jensen_shannon([1, 0], [0, 1]) == pytest.approx(math.log(2))
    # H([.75, .25]) - (0 + ln 2) / 2
    expected = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25)) - math.log(2) / 2
    assert jensen_shannon([1, 0], [0.5, 0.5]) == pytest.approx(expected)
    assert expected == pytest.approx(0.2158, abs=1e-4)
    with pytest.raises(ValueError, match="empty"):
        jensen_shannon([0, 0], [1, 1])


def test_evaluate_of_a_table_with_itself_is_zero(small_city):
    for compat in (None, "trajgenagent"):
        result = evaluate(small_city.stays, small_city.stays, compat=compat)
        assert list(result) == list(METRICS)
        assert all(
            value == pytest.approx(0.0, abs=1e-12) for value in result.values()
        ), result


def test_evaluate_does_not_depend_on_row_order(small_split):
    real, generated = small_split.held_out, small_split.history
    shuffled = generated.sample(frac=1.0, random_state=1)
    for compat in (None, "trajgenagent"):
        assert evaluate(real, generated, compat=compat) == evaluate(
            real, shuffled, compat=compat
        )


def test_timeline_fills_gaps_with_the_previous_stay_and_leads_with_the_first():
    frame = stays_table(
        _day("a", "2024-01-01", [(WORK, "02:00", "08:00"), (HOME, "10:00", "12:00")])
    )
    grid = km_grid(frame["latitude"], frame["longitude"], 0.5)
    timelines = build_timelines(frame, grid, "UTC")
    work, home = grid.cell_of(
        np.array([WORK[0], HOME[0]]), np.array([WORK[1], HOME[1]])
    )
    day = timelines.days[0]
    assert (
        day[:40] == work
    ).all()  # 00:00-02:00 leads with the first stay, 08:00-10:00 fills
    assert (day[40:] == home).all()
    assert timelines.transitions.tolist() == [work * grid.cells + home]


def test_hand_computed_duration_dailyloc_and_transition():
    real = stays_table(
        _day("a", "2024-01-01", [(HOME, "00:00", "08:00"), (WORK, "08:00", "24:00")])
    )
    generated = stays_table(
        _day("a", "2024-01-01", [(HOME, "00:00", "12:00"), (WORK, "12:00", "24:00")])
    )
    result = evaluate(real, generated)
    assert result["Duration"] == pytest.approx(math.log(2))  # runs {32, 64} vs {48, 48}
    assert result["DailyLoc"] == 0.0  # two cells each
    assert result["Transition"] == 0.0  # home -> work once in both
    assert result["G-rank"] > 0  # 32:64 vs 48:48 bins
    backwards = stays_table(
        _day("a", "2024-01-01", [(WORK, "00:00", "12:00"), (HOME, "12:00", "24:00")])
    )
    assert evaluate(real, backwards)["Transition"] == pytest.approx(math.sqrt(2))


def test_grank_is_global_and_irank_per_individual():
    real = stays_table(
        _day("a", "2024-01-01", [(HOME, "00:00", "24:00")])
        + _day("b", "2024-01-01", [(WORK, "00:00", "24:00")])
    )
    generated = stays_table(
        _day("a", "2024-01-01", [(HOME, "00:00", "12:00"), (WORK, "12:00", "24:00")])
        + _day("b", "2024-01-01", [(WORK, "00:00", "12:00"), (HOME, "12:00", "24:00")])
    )
    result = evaluate(real, generated)
    assert result["G-rank"] == pytest.approx(
        0.0
    )  # both cells visited 96 bins each, globally
    assert result["I-rank"] == pytest.approx(
        0.2158, abs=1e-4
    )  # [1] vs [0.5, 0.5] per person
    reference = evaluate(real, generated, compat="trajgenagent")
    assert reference["I-rank"] == pytest.approx(0.0) and reference[
        "G-rank"
    ] == pytest.approx(0.0)


def test_transition_matrix_is_sparse(small_city):
    stays = small_city.stays
    grid = km_grid(stays["latitude"], stays["longitude"], 0.5)
    timelines = build_timelines(stays, grid, str(stays["start"].dt.tz))
    matrix = transition_matrix(timelines.transitions, grid.cells)
    assert scipy.sparse.issparse(matrix)
    assert grid.cells > 10_000  # a dense matrix would hold > 10^8 floats
    assert matrix.nnz <= len(timelines.transitions)
    assert matrix.sum() == pytest.approx(1.0)


def test_reference_binning_drops_the_top_bin_ours_keeps_it():
    values = np.array([0.0, 0.5, 47.5 / 48, 1.0])
    reference = _reference_histogram(values, 1.0, 48)
    assert (
        len(reference) == 47 and reference.sum() == 2
    )  # values from 47/48 up are lost


def test_cell_size_and_compat_are_checked(small_city):
    with pytest.raises(ValueError, match="cell_km"):
        evaluate(small_city.stays, small_city.stays, cell_km=0)
    with pytest.raises(ValueError, match="compat"):
        evaluate(small_city.stays, small_city.stays, compat="geo-llama")
    with pytest.raises(ValueError, match="non-empty"):
        evaluate(small_city.stays.iloc[:0], small_city.stays)


def test_reference_grid_cells_follow_the_reference_formula():
    lat = np.array([34.0, 34.3, 34.15, 34.3, 34.0])
    lon = np.array([-118.5, -118.0, -118.25, -118.5, -118.0])
    grid = reference_grid(lat, lon)
    rows = int(
        (34.3 - 34.0) / (-118.0 - -118.5) * 100
    )  # 59: the float ratio truncates as there
    assert grid.columns == 100 and grid.rows == rows == 59
    v_res = (34.3 - 34.0) / rows
    # the reference: y = min(int((lon - lon_min) / h_res), 99), x = min(int((lat - lat_min) / v_res),
    # rows - 1), id = x * 100 + y + 1 (1-based); ours are 0-based
    expected = [
        min(int((b - -118.5) / 0.005), 99)
        + 100 * min(int((a - 34.0) / v_res), rows - 1)
        for a, b in zip(lat, lon, strict=True)
    ]
    assert grid.cell_of(lat, lon).tolist() == expected
    north, east = grid.centres(np.array([0, rows * 100 - 1]))
    assert north.tolist() == pytest.approx([0.5 * v_res, (rows - 0.5) * v_res])
    assert east.tolist() == pytest.approx([0.0025, 0.4975])
