"""A synthetic population shared by the realism tests, split in two halves (built once)."""

from __future__ import annotations

import pytest

from mesa_llm_mobility.trajectory.realism.controls import split_halves
from mesa_llm_mobility.trajectory.synth import synthesize


@pytest.fixture(scope="session")
def realism_stays():
    """40 individuals, four weeks (1,120 days, about 8 visits each)."""
    return synthesize(40, 4, seed=11).stays


@pytest.fixture(scope="session")
def halves(realism_stays):
    """Each individual's days dealt into two halves."""
    return split_halves(realism_stays, seed=1)
