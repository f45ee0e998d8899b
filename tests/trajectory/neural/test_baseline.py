"""The neural baselines: they learn a routine, generate valid days, repeat with a seed."""

from __future__ import annotations

import numpy as np
import pytest

from mesa_llm_mobility.trajectory.staypoints import local_dates, validate_staypoints

pytest.importorskip("jax")

import jax
import jax.numpy as jnp

from mesa_llm_mobility.trajectory.neural import (
    ARCHITECTURES,
    AdversarialSettings,
    Architecture,
    NeuralBaseline,
)
from mesa_llm_mobility.trajectory.neural.models import (
    NextCellRNN,
    NextCellTransformer,
)
from mesa_llm_mobility.trajectory.neural.training import (
    sample_days,
    train_next_cell,
)

TINY = {
    "gru": Architecture("gru", embedding=8, hidden=16, epochs=1),
    "lstm": Architecture("lstm", embedding=8, hidden=16, epochs=1),
    "transformer": Architecture(
        "transformer", embedding=8, hidden=16, layers=1, heads=2, epochs=1
    ),
    "seqgan": Architecture(
        "seqgan",
        embedding=8,
        hidden=8,
        epochs=1,
        filters=((2, 4), (4, 4)),
        adversarial=AdversarialSettings(
            pretrain_epochs=1,
            discriminator_pretrain_steps=2,
            adversarial_epochs=2,
            discriminator_steps=1,
            rollouts=2,
            batch=4,
            discriminator_batch=8,
        ),
    ),
}


def _routine(days: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Home (0) until a start near 8:00, work (1 weekdays, 2 weekends) until 17:00, home."""
    tokens = np.zeros((days, 96), dtype=np.int32)
    types = (np.arange(days) % 7 >= 5).astype(np.int32)
    for day in range(days):
        leave = 32 + int(rng.integers(-1, 2))
        tokens[day, leave:68] = 1 + types[day]
    return tokens, types


@pytest.mark.slow
@pytest.mark.parametrize(
    "model",
    [
        NextCellRNN(3, 16, 32, 1, "gru"),
        NextCellRNN(3, 16, 32, 1, "lstm"),
        NextCellTransformer(3, 16, 2, 1, 32),
    ],
    ids=["gru", "lstm", "transformer"],
)
@pytest.mark.slow
def test_a_generator_learns_a_routine_and_its_day_types(model):
    tokens, types = _routine(70, np.random.default_rng(0))
    params, log = train_next_cell(
        model, tokens, types, epochs=10, batch=16, learning_rate=1e-2, seed=0
    )
    assert log.losses[-1] < 0.5 * log.losses[0]
    first = np.zeros(40, dtype=np.int32)
    day_types = np.repeat([0, 1], 20).astype(np.int32)
    days = sample_days(model, params, first, day_types, seed=1)

    def follows_the_routine(days: np.ndarray) -> bool:
        # at noon weekdays at work (1), weekends at the weekend place (2), home at night
        return bool(
            (days[:20, 48] == 1).mean() >= 0.9
            and (days[20:, 48] == 2).mean() >= 0.9
            and (days[:, 90] == 0).mean() >= 0.9
        )

    assert follows_the_routine(days)
    untrained = model.init(
        jax.random.key(5), jnp.asarray(tokens[:1]), jnp.asarray(types[:1])
    )
    assert not follows_the_routine(
        sample_days(model, untrained, first, day_types, seed=1)
    )


def test_the_transformers_cached_decoding_is_its_causal_pass():
    model = NextCellTransformer(50, 16, 4, 1, 32)
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, 50, (3, 96)), jnp.int32)
    types = jnp.array([0, 1, 0], jnp.int32)
    params = model.init(jax.random.key(1), tokens, types)
    full = model.apply(params, tokens, types)
    decoder = model.clone(decode=True)
    cache = decoder.init(jax.random.key(0), tokens, types)["cache"]

    @jax.jit
    def step(cache, time):
        logits, mutated = decoder.apply(
            {"params": params["params"], "cache": cache},
            tokens[:, time],
            time,
            types,
            method=NextCellTransformer.step,
            mutable=["cache"],
        )
        return mutated["cache"], logits

    _, steps = jax.lax.scan(step, cache, jnp.arange(96))
    assert np.abs(np.moveaxis(np.asarray(steps), 0, 1) - full).max() < 1e-4


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("gru", marks=pytest.mark.slow),
        pytest.param("lstm", marks=pytest.mark.slow),
        pytest.param("transformer", marks=pytest.mark.slow),
        pytest.param("seqgan", marks=pytest.mark.slow),
    ],
)
@pytest.mark.slow
def test_a_baseline_generates_every_held_out_day_as_valid_stays(small_split, name):
    history, held_out = small_split.history, small_split.held_out
    dates = sorted(set(local_dates(held_out)))
    fitted = NeuralBaseline.fit(history, TINY[name], seed=0)
    stays = fitted.generate(dates, seed=3)
    validate_staypoints(stays)
    days = stays.groupby(["agent_id", local_dates(stays)]).ngroups
    assert days == history["agent_id"].nunique() * len(dates)
    assert set(local_dates(stays)) == set(dates)
    # each day covers midnight to midnight
    first = stays.groupby(["agent_id", local_dates(stays)])["start"].min()
    assert (first == first.index.get_level_values(1)).all()
    assert fitted.parameters > 0 and fitted.train_s > 0 and fitted.generate_s > 0
    again = NeuralBaseline.fit(history, TINY[name], seed=0).generate(dates, seed=3)
    assert stays.equals(again)


def test_unknown_baselines_and_bad_sizes_are_refused(small_split):
    with pytest.raises(ValueError, match="unknown neural baseline"):
        NeuralBaseline.fit(small_split.history, "gan")
    with pytest.raises(ValueError, match="hidden must be >= 1"):
        Architecture("gru", embedding=8, hidden=0)
    assert set(ARCHITECTURES) == set(TINY)
