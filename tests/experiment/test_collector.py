"""A long run's collector freeze: only the newest objects are examined, nothing is lost."""

from __future__ import annotations

import gc
import weakref

import pytest

from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.experiment.collector import RUN_YOUNG_THRESHOLD, LongRun


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
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


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
        counts.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        step()

    gc.set_threshold(700, 10, 10)
    model.step = counted_step
    model.run()
    model.close()
    assert len(counts) == 6
    assert all(c > 0 and young == RUN_YOUNG_THRESHOLD for c, young in counts)
    assert gc.get_freeze_count() == 0 and gc.get_threshold()[0] == 700


def test_a_run_collects_the_young_generation_less_often_and_restores_the_thresholds():
    gc.set_threshold(700, 10, 10)
    with LongRun():
        assert gc.get_threshold() == (RUN_YOUNG_THRESHOLD, 10, 10)
        with LongRun():
            pass
        assert gc.get_threshold() == (RUN_YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)
    gc.set_threshold(0, 10, 10)  # collection turned off stays off
    with LongRun():
        assert gc.get_threshold() == (0, 10, 10)
    gc.set_threshold(200_000, 5, 5)  # a higher threshold is kept
    with LongRun():
        assert gc.get_threshold() == (200_000, 5, 5)
    assert gc.get_threshold() == (200_000, 5, 5)
