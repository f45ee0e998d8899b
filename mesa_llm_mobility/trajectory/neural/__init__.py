"""The paper's neural baselines (GRU, LSTM, Transformer, SeqGAN) on JAX, Flax and Optax.

Optional: ``pip install 'mesa-llm-mobility[neural]'``. Importing this package imports JAX;
:mod:`~mesa_llm_mobility.trajectory.baselines` imports it only when a neural baseline is run.
"""

from __future__ import annotations

from mesa_llm_mobility.trajectory.neural.baseline import (
    ARCHITECTURES,
    NEURAL_BASELINES,
    Architecture,
    NeuralBaseline,
    NeuralCost,
)
from mesa_llm_mobility.trajectory.neural.sequences import DaySequences, GridInversion
from mesa_llm_mobility.trajectory.neural.training import AdversarialSettings

__all__ = [
    "ARCHITECTURES",
    "NEURAL_BASELINES",
    "AdversarialSettings",
    "Architecture",
    "DaySequences",
    "GridInversion",
    "NeuralBaseline",
    "NeuralCost",
]
