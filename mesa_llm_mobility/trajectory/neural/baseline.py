"""The paper's neural baselines on CPU: GRU, LSTM, Transformer and SeqGAN next-cell generators.

:meth:`NeuralBaseline.fit` lays the history on 96 bins of 15 minutes per day and 0.5 km cells
(:class:`~.sequences.DaySequences`), trains the network (:mod:`.training`) and
:meth:`NeuralBaseline.generate` samples each (individual, date) from a first bin's cell drawn
from one of the individual's history days of that weekday, then turns the cells back into stay
points (:class:`~.sequences.GridInversion`). Like the paper's baselines (MoveSim's, [10, 50])
the networks know no individual: only the first cell, the time of day and the day type.

Architectures (:data:`ARCHITECTURES`), scaled down from the paper's (Sec. IV-D) so that all four
train in minutes on two CPU cores; the paper's figures in brackets:

=============  ==============================================================================
GRU, LSTM      embeddings 64 [256], 1 recurrent layer of 128 units [6 x 512], Adam 3e-3
               [1e-3], 6 epochs [200], batches of 32 days
Transformer    width 64 [256], 2 decoder blocks [4], 4 heads [4], feed-forward 128, Adam
               3e-3 [1e-3], 6 epochs [200], batches of 32 days
SeqGAN         LSTM generator with embeddings 16 and 16 units [same], convolutional
               discriminator (widths 2, 4, 8 and 16, 16 filters each; SeqGAN's had 12 widths
               of 100-200), rollout 8 [same], 8 pre-training epochs [40] and 20 adversarial
               epochs [20] of one generator step on 8 days and 5 discriminator steps
=============  ==============================================================================

Each run records its training and generation wall time and the networks' parameter counts
(the benchmark's cost table shows them). Seeds fix the weights, the batch order and the draws.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from mesa_llm_mobility.trajectory.metrics import BINS_PER_DAY
from mesa_llm_mobility.trajectory.neural.models import (
    NextCellRNN,
    NextCellTransformer,
    SequenceDiscriminator,
    parameter_count,
)
from mesa_llm_mobility.trajectory.neural.sequences import DAY_TYPES, DaySequences
from mesa_llm_mobility.trajectory.neural.training import (
    AdversarialSettings,
    sample_days,
    train_next_cell,
    train_seqgan,
)
from mesa_llm_mobility.trajectory.neural_names import NEURAL_BASELINES


@dataclass(frozen=True)
class Architecture:
    """One neural baseline's network and training schedule.

    Attributes:
        kind: One of :data:`NEURAL_BASELINES`.
        embedding: Input embedding width (the Transformer's model width).
        hidden: Recurrent units (the Transformer's feed-forward units).
        layers: Recurrent layers (decoder blocks).
        heads: Attention heads (Transformer).
        epochs: Maximum-likelihood epochs (SeqGAN: its pre-training).
        batch: Days per maximum-likelihood step.
        learning_rate: Adam's.
        filters: The discriminator's ``(width, count)`` convolutions (SeqGAN).
        adversarial: SeqGAN's schedule (its ``pretrain_epochs`` is :attr:`epochs`).
    """

    kind: str
    embedding: int
    hidden: int
    layers: int = 1
    heads: int = 4
    epochs: int = 6
    batch: int = 32
    learning_rate: float = 3e-3
    filters: tuple[tuple[int, int], ...] = ()
    adversarial: AdversarialSettings = field(default_factory=AdversarialSettings)

    def __post_init__(self) -> None:
        if self.kind not in NEURAL_BASELINES:
            raise ValueError(
                f"unknown neural baseline {self.kind!r} (use {', '.join(NEURAL_BASELINES)})"
            )
        for name in ("embedding", "hidden", "layers", "heads", "epochs", "batch"):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"{self.kind}: {name} must be >= 1, got {getattr(self, name)}"
                )

    def generator(self, vocabulary: int) -> NextCellRNN | NextCellTransformer:
        """The generating network for ``vocabulary`` cells."""
        if self.kind == "transformer":
            return NextCellTransformer(
                vocabulary, self.embedding, self.heads, self.layers, self.hidden
            )
        cell = "gru" if self.kind == "gru" else "lstm"
        return NextCellRNN(vocabulary, self.embedding, self.hidden, self.layers, cell)


ARCHITECTURES: dict[str, Architecture] = {
    "gru": Architecture("gru", embedding=64, hidden=128),
    "lstm": Architecture("lstm", embedding=64, hidden=128),
    "transformer": Architecture("transformer", embedding=64, hidden=128, layers=2),
    "seqgan": Architecture(
        "seqgan",
        embedding=16,
        hidden=16,
        epochs=8,
        filters=tuple((width, 16) for width in (2, 4, 8, 16)),
        adversarial=AdversarialSettings(pretrain_epochs=8, batch=8),
    ),
}
"""The default architecture of each neural baseline (see the module docstring)."""


@dataclass(frozen=True)
class NeuralCost:
    """What a neural baseline cost.

    Attributes:
        train_s: Wall seconds of training (the sequences' preparation included).
        generate_s: Wall seconds of the last generation.
        parameters: Scalars of the generator (and SeqGAN's discriminator).
        epochs: Maximum-likelihood epochs run.
        final_loss: The last epoch's mean cross-entropy (nats per bin).
    """

    train_s: float
    generate_s: float
    parameters: int
    epochs: int
    final_loss: float


@dataclass
class NeuralBaseline:
    """A trained neural baseline: the sequences' layout, the network and its weights."""

    architecture: Architecture
    sequences: DaySequences
    network: NextCellRNN | NextCellTransformer
    params: Any
    parameters: int
    train_s: float
    final_loss: float
    generate_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def fit(
        cls,
        history: pd.DataFrame,
        architecture: Architecture | str,
        *,
        seed: int = 0,
        cell_km: float = 0.5,
        epochs: int | None = None,
    ) -> NeuralBaseline:
        """Train a baseline on a history.

        Args:
            history: A valid stay-point table.
            architecture: An :class:`Architecture` or the name of a default one.
            seed: Seed of the weights and the batches.
            cell_km: The grid's cell (the paper's 0.5 km for NumoSim).
            epochs: Override the architecture's maximum-likelihood epochs.

        Returns:
            The trained baseline.

        Raises:
            ValueError: For an unknown baseline or an empty history.
        """
        if isinstance(architecture, str):
            if architecture not in ARCHITECTURES:
                raise ValueError(
                    f"unknown neural baseline {architecture!r} "
                    f"(use {', '.join(NEURAL_BASELINES)})"
                )
            architecture = ARCHITECTURES[architecture]
        if epochs is not None:
            architecture = replace(
                architecture,
                epochs=epochs,
                adversarial=replace(architecture.adversarial, pretrain_epochs=epochs),
            )
        began = time.perf_counter()
        sequences = DaySequences.fit(history, cell_km=cell_km)
        network = architecture.generator(sequences.vocabulary)
        extra: dict[str, Any] = {}
        if architecture.kind == "seqgan":
            assert isinstance(network, NextCellRNN)
            discriminator = SequenceDiscriminator(
                sequences.vocabulary, architecture.embedding, architecture.filters
            )
            params, discriminator_params, log = train_seqgan(
                network,
                discriminator,
                sequences.tokens,
                sequences.day_types,
                architecture.adversarial,
                seed=seed,
                pretrain_batch=architecture.batch,
            )
            count = parameter_count(params) + parameter_count(discriminator_params)
            loss = log.pretrain.losses[-1]
            extra = {"rewards": log.rewards, "discriminator_loss": log.discriminator}
        else:
            params, training = train_next_cell(
                network,
                sequences.tokens,
                sequences.day_types,
                epochs=architecture.epochs,
                batch=architecture.batch,
                learning_rate=architecture.learning_rate,
                seed=seed,
            )
            count = parameter_count(params)
            loss = training.losses[-1]
            extra = {"losses": training.losses}
        return cls(
            architecture,
            sequences,
            network,
            params,
            count,
            time.perf_counter() - began,
            float(loss),
            extra=extra,
        )

    def generate(
        self, dates: Sequence[str | pd.Timestamp], seed: int = 0
    ) -> pd.DataFrame:
        """Every individual of the history on every date, as stay points.

        Args:
            dates: The dates (local to the history's time zone).
            seed: Seed of the first cells and the draws.

        Returns:
            The generated stay points (:data:`~.staypoints.STAY_COLUMNS`).
        """
        began = time.perf_counter()
        timezone = self.sequences.timezone
        midnights = [
            (
                stamp.tz_localize(timezone)
                if stamp.tzinfo is None
                else stamp.tz_convert(timezone)
            ).normalize()
            for stamp in (pd.Timestamp(value) for value in dates)
        ]
        agents = list(dict.fromkeys(self.sequences.agents.tolist()))
        pairs = [(agent, midnight) for agent in agents for midnight in midnights]
        weekdays = [int(midnight.weekday()) for _, midnight in pairs]
        rng = np.random.default_rng(seed)
        first = self.sequences.first_tokens(
            [agent for agent, _ in pairs], weekdays, rng
        )
        day_types = np.array(
            [DAY_TYPES.index("weekend" if day >= 5 else "weekday") for day in weekdays],
            dtype=np.int32,
        )
        tokens = sample_days(self.network, self.params, first, day_types, seed=seed)
        assert tokens.shape == (len(pairs), BINS_PER_DAY)
        stays = self.sequences.to_stays(
            tokens, [agent for agent, _ in pairs], [midnight for _, midnight in pairs]
        )
        self.generate_s = time.perf_counter() - began
        return stays

    @property
    def cost(self) -> NeuralCost:
        """Training and generation time, parameters, epochs and the final loss."""
        return NeuralCost(
            self.train_s,
            self.generate_s,
            self.parameters,
            self.architecture.epochs,
            self.final_loss,
        )
