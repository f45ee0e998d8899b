"""Golden outputs: the reference runs give exactly what was pinned (refactors change no number).

The cases and how they are produced are in ``tests/goldens/outputs.py``; the pinned files in
``tests/goldens/data`` are written by ``scripts/pin_goldens.py``. Column renames made since the
pinning are listed in ``RENAMED`` and columns added in ``ADDED`` (both in ``CHANGELOG.md``);
nothing else may differ.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.goldens import outputs

RENAMED: dict[str, dict[str, str]] = {
    # #12: the decisions table's shared columns (MobilityModel.decisions_frame)
    "urban_rules_decisions": {"agent": "agent_id"},
    "urban_llm_decisions": {"agent": "agent_id"},
}
"""``{"<case>_<table>": {old column: new column}}`` for renames since the pinning."""

ADDED: dict[str, set[str]] = {}
"""``{"<case>_<table>": {column}}``: columns added since the pinning (no pinned value to check)."""


def _pinned(case: str, name: str) -> pd.DataFrame:
    frame = pd.read_parquet(outputs.DATA / f"{case}_{name}.parquet")
    return frame.rename(columns=RENAMED.get(f"{case}_{name}", {}))


def _assert_same(case: str, frames: dict[str, pd.DataFrame]) -> None:
    for name, frame in frames.items():
        pinned = _pinned(case, name)
        pd.testing.assert_frame_equal(
            frame.reset_index(drop=True)[list(pinned.columns)],
            pinned,
            check_exact=True,
            check_dtype=False,
            obj=f"{case} {name}",
        )
        added = ADDED.get(f"{case}_{name}", set())
        assert not added & set(pinned.columns), f"{case} {name}: added columns pinned"
        assert set(frame.columns) == set(pinned.columns) | added, (
            f"{case} {name} columns"
        )


@pytest.fixture(scope="module")
def urban_rules():
    return outputs.urban_rule_run()


def test_urban_rule_summary_is_the_pinned_one(urban_rules):
    summary, _ = urban_rules
    pinned = json.loads((outputs.DATA / "urban_rules_summary.json").read_text())
    assert summary == pinned


def test_urban_rule_tables_are_the_pinned_ones(urban_rules):
    _, tables = urban_rules
    _assert_same("urban_rules", tables)


@pytest.mark.slow
def test_evacuation_rule_runs_are_the_pinned_ones():
    _assert_same("evacuation_rules", outputs.evacuation_rule_runs())


def test_urban_llm_run_is_the_pinned_one():
    _assert_same("urban_llm", outputs.urban_llm_run())


def test_evacuation_llm_run_is_the_pinned_one():
    _assert_same("evacuation_llm", outputs.evacuation_llm_run())


def test_trajectory_rule_runs_are_the_pinned_ones():
    _assert_same("trajectory_rules", outputs.trajectory_rule_runs())


def test_trajectory_llm_run_is_the_pinned_one():
    _assert_same("trajectory_llm", outputs.trajectory_llm_run())
