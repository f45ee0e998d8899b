"""The names of the realism detectors and classifiers (importable without scikit-learn).

The command line builds its choices from these before any detector is loaded.
"""

from __future__ import annotations

DETECTORS = (
    "visit",
    "visit_individual",
    "visit_learned",
    "individual",
    "individual_h3",
    "classifier",
)
"""Every detector :func:`~.compare.realism` knows:

* ``visit``: the ICAD-like next-visit model, one score per visit (level ``visit``);
* ``visit_individual``: the same model's mean visit score per individual (ICAD's individual
  level, level ``individual``);
* ``visit_learned``: ICAD's visit level with a learned autoregressive next-visit network (a
  GRU on JAX; needs the ``neural`` extra), level ``visit``; the counted ``visit`` is its fast
  proxy;
* ``individual``: the BeSTAD-like behaviour-cluster shift, one score per individual (a fast
  proxy: square cells, no place semantics);
* ``individual_h3``: the same clusters on H3 cells at three resolutions and POI categories,
  closer to BeSTAD (needs ``h3``, the ``realism`` extra);
* ``classifier``: the classifier two-sample test, one score per individual-day (level ``day``).
"""

DEFAULT_DETECTORS = ("visit", "individual", "classifier")
"""The detectors :func:`~.compare.realism` runs unless told otherwise."""

CLASSIFIERS = ("logistic", "boosting")
"""Models of the two-sample test: standardised logistic regression (the default) or histogram
gradient boosting."""
