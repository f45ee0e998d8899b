"""Behavioural realism of generated trajectories: detectors that try to tell them from real ones.

Aggregate statistics can match while individual trajectories are implausible (the TrajGenAgent
paper's second contribution). Three detectors, proxies of the paper's, learn "normal" from part
of the real days and score the rest against generated days:

* :func:`visit_scores` / :func:`day_scores`: the ICAD-like visit-level next-visit model
  (:mod:`.visit`), with a spatial / temporal attribution per visit;
* :func:`individual_scores`: the BeSTAD-like individual behaviour-cluster shift
  (:mod:`.individual`);
* :func:`classifier_scores`: the classifier two-sample test (:mod:`.classifier`);

and :func:`realism` reports each one's AUROC and AP on a balanced real-vs-generated split
(0.5 = indistinguishable, the goal).
"""

from __future__ import annotations

from mesa_llm_mobility.trajectory.realism.choices import (
    CLASSIFIERS,
    DEFAULT_DETECTORS,
    DETECTORS,
)
from mesa_llm_mobility.trajectory.realism.classifier import classifier_scores
from mesa_llm_mobility.trajectory.realism.compare import realism
from mesa_llm_mobility.trajectory.realism.frames import (
    DetectionSplit,
    RealismError,
    split_for_detection,
)
from mesa_llm_mobility.trajectory.realism.individual import individual_scores
from mesa_llm_mobility.trajectory.realism.scoring import hanley_mcneil_se
from mesa_llm_mobility.trajectory.realism.visit import day_scores, visit_scores

__all__ = [
    "CLASSIFIERS",
    "DEFAULT_DETECTORS",
    "DETECTORS",
    "DetectionSplit",
    "RealismError",
    "classifier_scores",
    "day_scores",
    "hanley_mcneil_se",
    "individual_scores",
    "realism",
    "split_for_detection",
    "visit_scores",
]
