"""The networks of the neural baselines (Flax linen), small and CPU-sized.

Every generator reads a day as 96 tokens (the cell of each 15-minute bin, :mod:`.sequences`) and
predicts the next bin's cell from the bins so far; its input at bin ``t`` is the sum of three
embeddings: the cell, the bin ``t`` (time of day) and the day type (weekday / weekend).

* :class:`NextCellRNN` with ``cell="gru"`` (Cho et al. 2014, the paper's [20]) or ``"lstm"``
  (Hochreiter and Schmidhuber 1997, [12]): stacked recurrent layers and a softmax head;
* :class:`NextCellTransformer` (Vaswani et al. 2017, [36]): a decoder-only Transformer with a
  causal mask (pre-layer-norm blocks of multi-head self-attention and a ReLU feed-forward);
* :class:`SequenceDiscriminator` (SeqGAN, Yu et al. 2017, [46]): the convolutional text
  classifier SeqGAN uses as discriminator: convolutions of several widths over the token
  embeddings, max-pooled over time, a highway layer, dropout and one logit (real vs generated).
  SeqGAN's generator is a :class:`NextCellRNN` with an LSTM cell.

The sizes are the caller's (:mod:`.baseline` documents the defaults against the paper's).
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from mesa_llm_mobility.trajectory.metrics import BINS_PER_DAY

DAY_TYPE_COUNT = 2


class StepInputs(nn.Module):
    """The input of a bin: cell, time-of-day and day-type embeddings, summed."""

    vocabulary: int
    width: int

    def setup(self) -> None:
        """The three embedding tables."""
        self.cell = nn.Embed(self.vocabulary, self.width)
        self.time = nn.Embed(BINS_PER_DAY, self.width)
        self.day = nn.Embed(DAY_TYPE_COUNT, self.width)

    def __call__(
        self, tokens: jax.Array, times: jax.Array, day_types: jax.Array
    ) -> jax.Array:
        """Embeddings of ``tokens`` (B, T) at bins ``times`` (T,) of days ``day_types`` (B,)."""
        return (
            self.cell(tokens)
            + self.time(times)[None, :, :]
            + self.day(day_types)[:, None]
        )


class NextCellRNN(nn.Module):
    """A stacked GRU or LSTM next-cell model.

    Attributes:
        vocabulary: Number of cells.
        embedding: Width of the input embeddings.
        hidden: Units of each recurrent layer.
        layers: Recurrent layers.
        cell: ``"gru"`` or ``"lstm"``.
    """

    vocabulary: int
    embedding: int
    hidden: int
    layers: int
    cell: str

    def setup(self) -> None:
        """Inputs, recurrent layers and the softmax head."""
        if self.cell not in ("gru", "lstm"):
            raise ValueError(f"cell must be 'gru' or 'lstm', got {self.cell!r}")
        self.inputs = StepInputs(self.vocabulary, self.embedding)
        kind = nn.GRUCell if self.cell == "gru" else nn.OptimizedLSTMCell
        self.recurrent = [nn.RNN(kind(self.hidden)) for _ in range(self.layers)]
        self.head = nn.Dense(self.vocabulary)

    def __call__(self, tokens: jax.Array, day_types: jax.Array) -> jax.Array:
        """Logits (B, T, V) of the next cell after each bin of ``tokens`` (B, T)."""
        x = self.inputs(tokens, jnp.arange(tokens.shape[1]), day_types)
        for layer in self.recurrent:
            x = layer(x)
        return self.head(x)

    def initial_carry(self, batch: int) -> tuple:
        """Zero states of every layer for ``batch`` sequences."""
        return tuple(
            layer.cell.initialize_carry(jax.random.key(0), (batch, self.embedding))
            if index == 0
            else layer.cell.initialize_carry(jax.random.key(0), (batch, self.hidden))
            for index, layer in enumerate(self.recurrent)
        )

    def step(
        self, carry: tuple, tokens: jax.Array, time: jax.Array, day_types: jax.Array
    ) -> tuple[tuple, jax.Array]:
        """One bin: new states and the next cell's logits (B, V) after ``tokens`` (B,)."""
        x = self.inputs(tokens[:, None], time[None], day_types)[:, 0]
        states = []
        for layer, state in zip(self.recurrent, carry, strict=True):
            state, x = layer.cell(state, x)
            states.append(state)
        return tuple(states), self.head(x)


class DecoderBlock(nn.Module):
    """Pre-layer-norm causal self-attention and feed-forward, each with a residual."""

    width: int
    heads: int
    feedforward: int
    decode: bool = False

    @nn.compact
    def __call__(self, x: jax.Array, mask: jax.Array | None) -> jax.Array:
        """One block over (B, T, width) (one bin at a time from the cache when decoding)."""
        attended = nn.MultiHeadDotProductAttention(
            num_heads=self.heads, decode=self.decode
        )(nn.LayerNorm()(x), mask=mask)
        x = x + attended
        hidden = nn.relu(nn.Dense(self.feedforward)(nn.LayerNorm()(x)))
        return x + nn.Dense(self.width)(hidden)


class NextCellTransformer(nn.Module):
    """A decoder-only Transformer next-cell model.

    Attributes:
        vocabulary: Number of cells.
        width: Model width (embeddings and attention).
        heads: Attention heads.
        layers: Decoder blocks.
        feedforward: Units of each block's feed-forward layer.
        decode: Keep the keys and values of the bins so far in a ``cache`` collection and
            read one bin per call (:meth:`step`), for sampling.
    """

    vocabulary: int
    width: int
    heads: int
    layers: int
    feedforward: int
    decode: bool = False

    def setup(self) -> None:
        """Inputs, blocks, final norm and head."""
        self.inputs = StepInputs(self.vocabulary, self.width)
        self.blocks = [
            DecoderBlock(self.width, self.heads, self.feedforward, self.decode)
            for _ in range(self.layers)
        ]
        self.norm = nn.LayerNorm()
        self.head = nn.Dense(self.vocabulary)

    def features(self, tokens: jax.Array, day_types: jax.Array) -> jax.Array:
        """The last block's output (B, T, width), each bin seeing only the bins before it."""
        x = self.inputs(tokens, jnp.arange(tokens.shape[1]), day_types)
        mask = nn.make_causal_mask(tokens)
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x)

    def step(
        self, tokens: jax.Array, time: jax.Array, day_types: jax.Array
    ) -> jax.Array:
        """Decoding: the next cell's logits (B, V) after bin ``time``'s ``tokens`` (B,)."""
        x = self.inputs(tokens[:, None], time[None], day_types)
        for block in self.blocks:
            x = block(x, None)
        return self.head(self.norm(x))[:, 0]

    def __call__(self, tokens: jax.Array, day_types: jax.Array) -> jax.Array:
        """Logits (B, T, V) of the next cell after each bin of ``tokens`` (B, T)."""
        return self.head(self.features(tokens, day_types))


class SequenceDiscriminator(nn.Module):
    """SeqGAN's convolutional discriminator: one logit per sequence (real > 0).

    Attributes:
        vocabulary: Number of cells.
        embedding: Width of the token embeddings.
        filters: ``(width, count)`` of each convolution.
        dropout: Dropout rate before the logit.
    """

    vocabulary: int
    embedding: int
    filters: Sequence[tuple[int, int]]
    dropout: float = 0.25

    @nn.compact
    def __call__(self, tokens: jax.Array, *, training: bool = False) -> jax.Array:
        """Logits (B,) that the sequences (B, T) are real."""
        x = nn.Embed(self.vocabulary, self.embedding)(tokens)
        pooled = [
            nn.relu(nn.Conv(count, kernel_size=(width,), padding="VALID")(x)).max(
                axis=1
            )
            for width, count in self.filters
        ]
        features = jnp.concatenate(pooled, axis=-1)
        size = features.shape[-1]
        gate = nn.sigmoid(nn.Dense(size)(features))
        features = gate * nn.relu(nn.Dense(size)(features)) + (1.0 - gate) * features
        features = nn.Dropout(self.dropout, deterministic=not training)(features)
        return nn.Dense(1)(features)[:, 0]


def parameter_count(params: object) -> int:
    """Number of scalars in a parameter tree."""
    return int(sum(leaf.size for leaf in jax.tree_util.tree_leaves(params)))
