"""A long run's collector freeze: only the newest objects are examined, nothing is lost."""

from __future__ import annotations

import gc
import weakref

import pytest

from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.experiment.collector import LongRun


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


@pytest.fixture(autouse=True)
def _unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_a_run_freezes_what_was_there_before_it_and_undoes_it_at_the_end():
    before = _cycle()
    with LongRun():
        assert gc.get_freeze_count() > 0
        gc.collect()
        assert before() is not None, "a frozen cycle is left alone during the run"
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert before() is None, "and collected after it"


def test_cycles_the_run_makes_are_collected_during_it():
    with LongRun():
        made = _cycle()
        gc.collect()  # a step, then a full collection
        assert made() is None
        kept = _cycle()
        gc.collect()
        gc.collect()
        assert kept() is None, "never frozen, however long it lived"


def test_runs_at_once_share_one_freeze_and_the_last_undoes_it():
    outer = LongRun().__enter__()
    with LongRun():
        pass
    assert gc.get_freeze_count() > 0
    outer.__exit__(None, None, None)
    assert gc.get_freeze_count() == 0


def test_a_model_run_freezes_during_the_run_and_unfreezes_after():
    model = EvacuationModel(composition="A", rng=1, time_limit_s=2)
    counts = []
    step = model.step

    def counted_step():
        counts.append(gc.get_freeze_count())
        step()

    model.step = counted_step
    model.run()
    model.close()
    assert len(counts) == 6 and all(c > 0 for c in counts)
    assert gc.get_freeze_count() == 0
