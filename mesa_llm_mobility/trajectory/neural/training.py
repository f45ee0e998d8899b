"""Training and sampling of the next-cell generators, and SeqGAN's adversarial loop.

* :func:`train_next_cell`: maximum likelihood (teacher forcing): cross-entropy of each bin's
  cell given the bins before it, Adam, shuffled mini-batches, a fixed seed;
* :func:`sample_days`: autoregressive sampling of whole days from a first bin's cell, the
  recurrent models step by step with their states, the Transformer re-reading the day so far;
* :func:`train_seqgan`: SeqGAN (Yu et al. 2017): the generator pre-trained by maximum
  likelihood, the discriminator pre-trained on real against generated days, then adversarial
  epochs of one policy-gradient step of the generator (REINFORCE, each bin's reward the mean
  discriminator probability of ``rollouts`` Monte-Carlo completions of the day from that bin)
  and discriminator steps on fresh generated days.

Sampling draws a cell by inverse transform (one uniform per sequence and bin), which needs far
fewer random numbers than the Gumbel trick on a CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from mesa_llm_mobility.trajectory.metrics import BINS_PER_DAY
from mesa_llm_mobility.trajectory.neural.models import (
    NextCellRNN,
    NextCellTransformer,
    SequenceDiscriminator,
)

Generator = NextCellRNN | NextCellTransformer


def draw(key: jax.Array, logits: jax.Array) -> jax.Array:
    """One token per row of ``logits`` (B, V) by inverse transform sampling."""
    cumulative = jnp.cumsum(jax.nn.softmax(logits, axis=-1), axis=-1)
    uniform = jax.random.uniform(key, (logits.shape[0], 1)) * cumulative[:, -1:]
    return jnp.minimum(
        (cumulative < uniform).sum(axis=-1), logits.shape[-1] - 1
    ).astype(jnp.int32)


def _token_log_likelihood(logits: jax.Array, tokens: jax.Array) -> jax.Array:
    """Log P of each next token: logits (B, T, V) after bins 0..T-1, tokens (B, T) -> (B, T-1)."""
    log_probs = jax.nn.log_softmax(logits[:, :-1], axis=-1)
    return jnp.take_along_axis(log_probs, tokens[:, 1:, None], axis=-1)[..., 0]


@dataclass
class TrainingLog:
    """What a training did: the loss of each epoch and the optimiser steps."""

    losses: list[float]
    steps: int


def _batches(count: int, batch: int, rng: np.random.Generator) -> list[np.ndarray]:
    order = rng.permutation(count)
    return [order[first : first + batch] for first in range(0, count, batch)]


def train_next_cell(
    model: Generator,
    tokens: np.ndarray,
    day_types: np.ndarray,
    *,
    epochs: int,
    batch: int,
    learning_rate: float,
    seed: int,
    params: Any = None,
) -> tuple[Any, TrainingLog]:
    """Maximum-likelihood training of a next-cell model.

    Args:
        model: The network.
        tokens: Shape (days, 96).
        day_types: Shape (days,).
        epochs: Passes over the days.
        batch: Days per step.
        learning_rate: Adam's.
        seed: Seed of the initial weights and the batch order.
        params: Start from these weights instead of new ones.

    Returns:
        The weights and the log.
    """
    rng = np.random.default_rng(seed)
    if params is None:
        params = model.init(
            jax.random.key(seed), jnp.asarray(tokens[:1]), jnp.asarray(day_types[:1])
        )
    optimiser = optax.adam(learning_rate)
    state = optimiser.init(params)

    def loss_of(weights: Any, chunk: jax.Array, types: jax.Array) -> jax.Array:
        return -_token_log_likelihood(model.apply(weights, chunk, types), chunk).mean()

    @jax.jit
    def update(weights: Any, opt_state: Any, chunk: jax.Array, types: jax.Array):
        loss, grads = jax.value_and_grad(loss_of)(weights, chunk, types)
        changes, opt_state = optimiser.update(grads, opt_state, weights)
        return optax.apply_updates(weights, changes), opt_state, loss

    log = TrainingLog([], 0)
    for _ in range(epochs):
        total, seen = 0.0, 0
        for rows in _batches(len(tokens), batch, rng):
            params, state, loss = update(
                params, state, jnp.asarray(tokens[rows]), jnp.asarray(day_types[rows])
            )
            total += float(loss) * len(rows)
            seen += len(rows)
            log.steps += 1
        log.losses.append(total / max(seen, 1))
    return params, log


def _rnn_sampler(model: NextCellRNN) -> Callable[..., jax.Array]:
    def sample(
        params: Any,
        first: jax.Array,
        day_types: jax.Array,
        key: jax.Array,
        prefix: jax.Array | None = None,
        keep: jax.Array | None = None,
    ) -> jax.Array:
        """Days (B, 96) from ``first`` (B,); bins < ``keep`` (B,) copied from ``prefix``."""
        carry = model.apply(params, first.shape[0], method=NextCellRNN.initial_carry)

        def body(state: tuple, inputs: tuple) -> tuple:
            carry, token = state
            time, step_key = inputs
            carry, logits = model.apply(
                params, carry, token, time, day_types, method=NextCellRNN.step
            )
            drawn = draw(step_key, logits)
            if prefix is not None:
                drawn = jnp.where(time + 1 < keep, prefix[:, time + 1], drawn)
            return (carry, drawn), drawn

        keys = jax.random.split(key, BINS_PER_DAY - 1)
        _, drawn = jax.lax.scan(
            body, (carry, first), (jnp.arange(BINS_PER_DAY - 1), keys)
        )
        return jnp.concatenate([first[:, None], drawn.T], axis=1)

    return sample


def _transformer_sampler(model: NextCellTransformer) -> Callable[..., jax.Array]:
    decoder = model.clone(decode=True)

    def sample(
        params: Any, first: jax.Array, day_types: jax.Array, key: jax.Array
    ) -> jax.Array:
        """Days (B, 96) from ``first`` (B,), one bin at a time with cached keys and values."""
        shape = jnp.zeros((first.shape[0], BINS_PER_DAY), jnp.int32)
        cache = decoder.init(jax.random.key(0), shape, day_types)["cache"]

        def body(state: tuple, inputs: tuple) -> tuple:
            cache, token = state
            time, step_key = inputs
            logits, mutated = decoder.apply(
                {"params": params["params"], "cache": cache},
                token,
                time,
                day_types,
                method=NextCellTransformer.step,
                mutable=["cache"],
            )
            drawn = draw(step_key, logits)
            return (mutated["cache"], drawn), drawn

        keys = jax.random.split(key, BINS_PER_DAY - 1)
        _, drawn = jax.lax.scan(
            body, (cache, first), (jnp.arange(BINS_PER_DAY - 1), keys)
        )
        return jnp.concatenate([first[:, None], drawn.T], axis=1)

    return sample


def sample_days(
    model: Generator,
    params: Any,
    first: np.ndarray,
    day_types: np.ndarray,
    *,
    seed: int,
    batch: int = 512,
) -> np.ndarray:
    """Sample whole days from each first bin's cell, in batches.

    Args:
        model: A trained network.
        params: Its weights.
        first: First bin's token of each day (N,).
        day_types: Day type of each day (N,).
        seed: Seed of the draws.
        batch: Days sampled at once.

    Returns:
        Shape (N, 96), tokens.
    """
    sampler = jax.jit(
        _rnn_sampler(model)
        if isinstance(model, NextCellRNN)
        else _transformer_sampler(model)
    )
    key = jax.random.key(seed)
    out = []
    for begin in range(0, len(first), batch):
        key, chunk_key = jax.random.split(key)
        out.append(
            np.asarray(
                sampler(
                    params,
                    jnp.asarray(first[begin : begin + batch]),
                    jnp.asarray(day_types[begin : begin + batch]),
                    chunk_key,
                )
            )
        )
    return np.concatenate(out) if out else np.zeros((0, BINS_PER_DAY), dtype=np.int32)


# ---------------------------------------------------------------------------- SeqGAN
@dataclass(frozen=True)
class AdversarialSettings:
    """SeqGAN's schedule (the paper's: 40 pre-training and 20 adversarial epochs, rollout 8).

    Attributes:
        pretrain_epochs: Maximum-likelihood epochs of the generator.
        discriminator_pretrain_steps: Discriminator steps before the adversarial epochs.
        adversarial_epochs: Adversarial epochs (one generator step each).
        discriminator_steps: Discriminator steps per adversarial epoch.
        rollouts: Monte-Carlo completions per bin for the rewards.
        batch: Days per generator step (the rollouts multiply it by 95 x ``rollouts``).
        discriminator_batch: Real and generated days per discriminator step (each).
        learning_rate: Adam's, both networks.
    """

    pretrain_epochs: int = 40
    discriminator_pretrain_steps: int = 50
    adversarial_epochs: int = 20
    discriminator_steps: int = 5
    rollouts: int = 8
    batch: int = 16
    discriminator_batch: int = 64
    learning_rate: float = 3e-3


@dataclass
class SeqGanLog:
    """Losses of SeqGAN's stages."""

    pretrain: TrainingLog
    discriminator: list[float]
    rewards: list[float]


def train_seqgan(
    generator: NextCellRNN,
    discriminator: SequenceDiscriminator,
    tokens: np.ndarray,
    day_types: np.ndarray,
    settings: AdversarialSettings,
    *,
    seed: int,
    pretrain_batch: int = 64,
) -> tuple[Any, Any, SeqGanLog]:
    """SeqGAN: pre-train the generator, then the discriminator, then alternate.

    Returns:
        Generator weights, discriminator weights and the log.
    """
    generator_params, pretrain = train_next_cell(
        generator,
        tokens,
        day_types,
        epochs=settings.pretrain_epochs,
        batch=pretrain_batch,
        learning_rate=settings.learning_rate,
        seed=seed,
    )
    rng = np.random.default_rng(seed + 1)
    key = jax.random.key(seed + 1)
    key, init_key = jax.random.split(key)
    discriminator_params = discriminator.init(init_key, jnp.asarray(tokens[:1]))
    d_optimiser = optax.adam(settings.learning_rate)
    d_state = d_optimiser.init(discriminator_params)
    g_optimiser = optax.adam(settings.learning_rate)
    g_state = g_optimiser.init(generator_params)
    sampler = jax.jit(_rnn_sampler(generator))

    def d_loss(weights: Any, real: jax.Array, fake: jax.Array, dkey: jax.Array):
        logits = discriminator.apply(
            weights,
            jnp.concatenate([real, fake]),
            training=True,
            rngs={"dropout": dkey},
        )
        labels = jnp.concatenate([jnp.ones(len(real)), jnp.zeros(len(fake))])
        return optax.sigmoid_binary_cross_entropy(logits, labels).mean()

    @jax.jit
    def d_update(weights: Any, state: Any, real: jax.Array, fake: jax.Array, dkey):
        loss, grads = jax.value_and_grad(d_loss)(weights, real, fake, dkey)
        changes, state = d_optimiser.update(grads, state, weights)
        return optax.apply_updates(weights, changes), state, loss

    @jax.jit
    def rewards_of(g_weights: Any, d_weights: Any, days: jax.Array, types, rkey):
        """Each bin's reward: mean P(real) of the rollouts that keep the bins up to it."""
        count = days.shape[0]
        keep = jnp.repeat(jnp.arange(2, BINS_PER_DAY + 1), settings.rollouts)
        prefix = jnp.repeat(days, keep.size, axis=0)
        completed = sampler(
            g_weights,
            prefix[:, 0],
            jnp.repeat(types, keep.size),
            rkey,
            prefix,
            jnp.tile(keep, count),
        )
        real = jax.nn.sigmoid(discriminator.apply(d_weights, completed))
        return real.reshape(count, BINS_PER_DAY - 1, settings.rollouts).mean(axis=-1)

    def g_loss(weights: Any, days: jax.Array, types: jax.Array, rewards: jax.Array):
        log_likelihood = _token_log_likelihood(
            generator.apply(weights, days, types), days
        )
        baseline = rewards.mean()
        return -(log_likelihood * (rewards - baseline)).sum(axis=1).mean()

    @jax.jit
    def g_update(weights: Any, state: Any, days, types, rewards):
        grads = jax.grad(g_loss)(weights, days, types, rewards)
        changes, state = g_optimiser.update(grads, state, weights)
        return optax.apply_updates(weights, changes), state

    def generated(count: int, gkey: jax.Array) -> tuple[jax.Array, jax.Array]:
        rows = rng.choice(len(tokens), count)
        types = jnp.asarray(day_types[rows])
        return sampler(
            generator_params, jnp.asarray(tokens[rows, 0]), types, gkey
        ), types

    def d_round(steps: int) -> float:
        nonlocal discriminator_params, d_state, key
        loss = 0.0
        for _ in range(steps):
            key, gkey, dkey = jax.random.split(key, 3)
            fake, _ = generated(settings.discriminator_batch, gkey)
            real = jnp.asarray(
                tokens[rng.choice(len(tokens), settings.discriminator_batch)]
            )
            discriminator_params, d_state, value = d_update(
                discriminator_params, d_state, real, fake, dkey
            )
            loss = float(value)
        return loss

    log = SeqGanLog(pretrain, [d_round(settings.discriminator_pretrain_steps)], [])
    for _ in range(settings.adversarial_epochs):
        key, gkey, rkey = jax.random.split(key, 3)
        days, types = generated(settings.batch, gkey)
        rewards = rewards_of(generator_params, discriminator_params, days, types, rkey)
        generator_params, g_state = g_update(
            generator_params, g_state, days, types, rewards
        )
        log.rewards.append(float(rewards.mean()))
        log.discriminator.append(d_round(settings.discriminator_steps))
    return generator_params, discriminator_params, log
