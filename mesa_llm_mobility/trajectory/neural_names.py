"""The names of the paper's neural baselines, importable without their optional extra.

:mod:`.baselines` offers them and :mod:`.neural` (JAX, Flax, Optax: the ``neural`` extra)
implements them; both read the names from here.
"""

from __future__ import annotations

NEURAL_BASELINES = ("gru", "lstm", "transformer", "seqgan")
"""The paper's neural baselines, in its order (they need the ``neural`` extra)."""
