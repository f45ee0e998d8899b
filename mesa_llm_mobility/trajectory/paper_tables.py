"""The TrajGenAgent paper's published numbers, beside which the benchmark puts its own.

Every value is the paper's (its NumoSim tables and its text); the benchmark
(:mod:`~.benchmark`) and its report (:mod:`~.benchmark_report`) both read them from here.
"""

from __future__ import annotations

REFERENCE = "real, weeks before"
"""The reference row: real days of the history on the held-out weekdays, whole weeks earlier,
against the held-out days (what copying real data scores: the noise floor)."""

PAPER_NUMOSIM_METRICS = {
    "Distance": 0.0006,
    "G-radius": 0.0993,
    "Duration": 0.0155,
    "DailyLoc": 0.2117,
    "I-rank": 0.0002,
    "G-rank": 0.0002,
    "Transition": 0.0075,
}
"""TrajGenAgent on NumoSim, the paper's Table II (another dataset than ours)."""

PAPER_NUMOSIM_TABLE = {
    "GRU": (0.0111, 0.2557, 0.2145, 0.1561, 0.0137, 0.0159, 0.0156),
    "LSTM": (0.0146, 0.3113, 0.3013, 0.1981, 0.0893, 0.0134, 0.0150),
    "Transformer": (0.0082, 0.2945, 0.2150, 0.1620, 0.0079, 0.0112, 0.0118),
    "SeqGAN": (0.0085, 0.0998, 0.2410, 0.1585, 0.0082, 0.0107, 0.0120),
    "Geo-CETRA": (0.0093, 0.3337, 0.0060, 0.1128, 0.0002, 0.0002, 0.0088),
    "Geo-Llama": (0.0075, 0.2361, 0.0028, 0.0128, 0.0001, 0.0001, 0.0087),
    "TrajGenAgent": (0.0006, 0.0993, 0.0155, 0.2117, 0.0002, 0.0002, 0.0075),
    "TrajGenAgent w/o kin.": (0.0028, 0.1508, 0.0198, 0.2476, 0.0006, 0.0006, 0.0077),
}
"""Every NumoSim row of the paper's Tables II and VI, in :data:`~.metrics.METRICS` order
(published numbers of another dataset: Geo-CETRA and Geo-Llama are not run here)."""

PAPER_NUMOSIM_DETECTORS = {
    "Geo-CETRA": (0.5767, 0.6414, 0.7234, 0.8821, 0.7806),
    "Geo-Llama": (0.3375, 0.6057, 0.7046, 0.8962, 0.7888),
    "TrajGenAgent": (0.5008, 0.5368, 0.5255, 0.6398, 0.5690),
    "TrajGenAgent w/o kin.": (0.5104, 0.6483, 0.6692, 0.9143, 0.9034),
}
"""The paper's NumoSim rows of Tables III and VII: BeSTAD AUROC, ICAD visit-level AUROC and AP,
ICAD individual-level AUROC and AP."""

PAPER_TOOL_SUCCESS = {
    "Free-form tool calling": (0.098, 0.593),
    "Deterministic workflow": (1.0, 1.0),
}
"""The paper's Table V: (trajectory-level, visit-level) success."""

PAPER_GPU_HOURS = {
    "GRU": 1.25,
    "TrajGenAgent": 1.67,
    "LSTM": 1.83,
    "Transformer": 3.17,
    "Geo-CETRA": 3.38,
    "SeqGAN": 20.62,
    "Geo-Llama": 24.77,
}
"""The paper's Table IV: H100 GPU hours per dataset (34,000 trajectories, training included)."""

PAPER_NUMOSIM_REALISM = {
    "visit": (0.5368, 0.5255),
    "visit_individual": (0.6398, 0.5690),
    "individual": (0.5008, None),
}
"""TrajGenAgent on NumoSim, the paper's Tables III and VII, (AUROC, AP) by our detector that is
in the spirit of the paper's: ``visit`` ~ ICAD visit-level, ``visit_individual`` ~ ICAD
individual-level, ``individual`` ~ BeSTAD (AUROC only); the paper has no classifier test."""

PAPER_FAILURE_RATES = {
    0.5: {"total": 0.143, "schema": 0.018, "constraint": 0.125},
    0.9: {"total": 0.091, "schema": 0.036, "constraint": 0.055},
    1.5: {"total": 0.283, "schema": 0.152, "constraint": 0.131},
}
"""The paper's Table VIII: share of daily runs failing the verifier, by temperature."""
