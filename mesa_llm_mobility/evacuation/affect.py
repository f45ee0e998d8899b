"""Engine-computed fear (paper Sec. 2.3.5, Eqs. 4-5).

Fear ``f`` in [0, 1] rises with the strongest active stimulus and decays without one:

    f(t + dt) = max(f, min(1, kappa * z*))   if z* > 0
              = max(0, f - rho * dt)         if z* = 0,          z* = max_k z_k

    kappa = clip(1 + (T_N - 50) / 100, 0.65, 1.45),   rho = max(0.01, 0.10 - (T_N - 50) / 1000).

Levels: calm < 0.20 <= alert < 0.45 <= afraid < 0.75 <= high fear.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def sensitivity(neuroticism_t: float | np.ndarray) -> float | np.ndarray:
    """Kappa = clip(1 + (T_N - 50) / 100, 0.65, 1.45) (paper Eq. 5)."""
    return np.clip(
        1.0 + (np.asarray(neuroticism_t, dtype=float) - 50.0) / 100.0, 0.65, 1.45
    )


def recovery_rate(neuroticism_t: float | np.ndarray) -> float | np.ndarray:
    """Rho = max(0.01, 0.10 - (T_N - 50) / 1000) per second (paper Eq. 5)."""
    return np.maximum(
        0.01, 0.10 - (np.asarray(neuroticism_t, dtype=float) - 50.0) / 1000.0
    )


def update_fear(
    fear: float | np.ndarray,
    strongest_stimulus: float | np.ndarray,
    kappa: float | np.ndarray,
    rho: float | np.ndarray,
    dt: float,
) -> np.ndarray:
    """One step of paper Eq. (4), elementwise.

    Args:
        fear: Current fear values.
        strongest_stimulus: z* = max_k z_k (0 when no stimulus is active).
        kappa: Sensitivity multipliers.
        rho: Recovery rates (per second).
        dt: Step length in seconds.
    """
    fear = np.asarray(fear, dtype=float)
    z = np.asarray(strongest_stimulus, dtype=float)
    rising = np.maximum(fear, np.minimum(1.0, kappa * z))
    decaying = np.maximum(0.0, fear - rho * dt)
    return np.where(z > 0, rising, decaying)


FEAR_LEVELS = ("calm", "alert", "afraid", "high fear")


def fear_level(fear: float) -> str:
    """Calm < 0.20 <= alert < 0.45 <= afraid < 0.75 <= high fear."""
    if fear < 0.20:
        return "calm"
    if fear < 0.45:
        return "alert"
    if fear < 0.75:
        return "afraid"
    return "high fear"


@dataclass(frozen=True)
class StimulusIntensities:
    """Intensities z_k of the four stimulus types.

    The paper names the stimuli but gives no intensities; these values are this implementation's
    choice, ordered by the strength of the evidence: seeing the armed person (raised up to 1.0 as
    it comes closer than ``proximity_radius_m``), seeing a casualty, pedestrians fleeing nearby.
    """

    sighting: float = 0.8
    proximity_radius_m: float = 5.0
    casualty: float = 0.7
    fleeing_neighbour: float = 0.3
    fleeing_per_extra: float = 0.1
    fleeing_max: float = 0.6
    heard_shout: float = 0.25

    def strongest(
        self,
        sees_adversary: np.ndarray,
        adversary_distance_m: np.ndarray,
        sees_casualty: np.ndarray,
        fleeing_seen: np.ndarray,
        hears_shout: np.ndarray,
    ) -> np.ndarray:
        """z* for every pedestrian from its active stimuli."""
        closeness = np.clip(
            1.0 - adversary_distance_m / self.proximity_radius_m, 0.0, 1.0
        )
        sighting = np.where(
            sees_adversary, self.sighting + (1.0 - self.sighting) * closeness, 0.0
        )
        casualty = np.where(sees_casualty, self.casualty, 0.0)
        fleeing = np.where(
            fleeing_seen > 0,
            np.minimum(
                self.fleeing_max,
                self.fleeing_neighbour + self.fleeing_per_extra * (fleeing_seen - 1),
            ),
            0.0,
        )
        shout = np.where(hears_shout, self.heard_shout, 0.0)
        return np.maximum.reduce([sighting, casualty, fleeing, shout])
