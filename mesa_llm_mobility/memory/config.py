"""Settings of the memory model: retrieval weights, recency decay and forgetting parameters.

Defaults follow GATSim (section 3.3): lifespans per memory type, recency decay 0.90 or 0.95.
The paper leaves the mode weights ``w_r`` and the importance and recency weights ``gamma`` and
``delta`` open; our defaults (1, 0.5, 0.5) let the match dominate and are documented in
``docs/memory.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from mesa_llm_mobility.memory.formulas import (
    COSINE_DISTANCE_MAX,
    RECENCY_RECENT,
    lifespan,
)
from mesa_llm_mobility.memory.node import NodeType, parse_node_type

if TYPE_CHECKING:
    from collections.abc import Mapping

HOUR = 60.0
DAY = 1440.0


@dataclass(frozen=True, slots=True)
class LifespanParams:
    """Forgetting parameters of one memory type (GATSim eq. 7).

    Attributes:
        minimum: Lifespan at importance 0, in minutes.
        maximum: Lifespan at importance 1, in minutes.
        power: Exponent applied to importance.
    """

    minimum: float
    maximum: float
    power: float

    def __post_init__(self) -> None:
        for name in ("minimum", "maximum", "power"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ValueError(f"{name}: expected a positive number, got {value!r}")
        if self.maximum < self.minimum:
            raise ValueError(f"maximum: {self.maximum} is below minimum {self.minimum}")

    def lifespan(self, importance: float) -> float:
        """Initial lifespan in minutes for a memory of this type.

        Args:
            importance: Importance in [0, 1].

        Returns:
            ``minimum + (maximum - minimum) * importance ** power``.
        """
        return lifespan(importance, self.minimum, self.maximum, self.power)


PAPER_LIFESPANS: Mapping[NodeType, LifespanParams] = MappingProxyType(
    {
        NodeType.EVENT: LifespanParams(2 * HOUR, 4 * DAY, 2.4),
        NodeType.CHAT: LifespanParams(4 * HOUR, 2 * DAY, 3.2),
        NodeType.REFLECTION: LifespanParams(8 * HOUR, 8 * DAY, 1.6),
        # A plan records the reasoning behind a day's choices, which the agent learns from over
        # several days, like a reflection; the paper gives no separate numbers.
        NodeType.PLAN: LifespanParams(8 * HOUR, 8 * DAY, 1.6),
    }
)
"""GATSim's forgetting parameters per memory type (plan as reflection)."""


RETRIEVAL_MODES: tuple[str, ...] = ("keyword", "semantic", "spatiotemporal")
"""The retrieval modes, in the order they are reported."""


def _check_non_negative(name: str, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"{name}: expected a non-negative number, got {value!r}")


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """Settings of retrieval and forgetting.

    Attributes:
        decay: Recency ``lambda`` per simulated day, in (0, 1); 0.90 (recent) or 0.95 (habits).
        weights: Mode weights ``w_r`` for ``keyword``, ``semantic``, ``spatiotemporal``.
        gamma: Weight of importance in every mode score.
        delta: Weight of recency in every mode score.
        top_k: Candidates taken from each mode before fusion.
        d_max: Largest cosine distance, the denominator of the semantic score.
        lifespans: Forgetting parameters per node type.
        extension_cap: A memory lives at most ``extension_cap x lifespan`` after creation, however
            often it is retrieved.
    """

    decay: float = RECENCY_RECENT
    weights: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType(
            {"keyword": 1.0, "semantic": 1.0, "spatiotemporal": 1.0}
        )
    )
    gamma: float = 0.5
    delta: float = 0.5
    top_k: int = 10
    d_max: float = COSINE_DISTANCE_MAX
    lifespans: Mapping[NodeType, LifespanParams] = PAPER_LIFESPANS
    extension_cap: float = 3.0

    def __post_init__(self) -> None:
        if (
            isinstance(self.decay, bool)
            or not isinstance(self.decay, int | float)
            or not 0.0 < self.decay < 1.0
        ):
            raise ValueError(f"decay: lambda must be in (0, 1), got {self.decay!r}")
        unknown = set(self.weights) - set(RETRIEVAL_MODES)
        if unknown:
            raise ValueError(
                f"weights: unknown retrieval modes {sorted(unknown)}; expected {list(RETRIEVAL_MODES)}"
            )
        weights = {mode: float(self.weights.get(mode, 0.0)) for mode in RETRIEVAL_MODES}
        for mode, weight in weights.items():
            _check_non_negative(f"weights.{mode}", weight)
        object.__setattr__(self, "weights", MappingProxyType(weights))
        _check_non_negative("gamma", self.gamma)
        _check_non_negative("delta", self.delta)
        if (
            isinstance(self.top_k, bool)
            or not isinstance(self.top_k, int)
            or self.top_k < 1
        ):
            raise ValueError(f"top_k: expected a positive integer, got {self.top_k!r}")
        if not isinstance(self.d_max, int | float) or not self.d_max > 0:
            raise ValueError(f"d_max: expected a positive number, got {self.d_max!r}")
        lifespans = {
            parse_node_type(key, "lifespans"): value
            for key, value in self.lifespans.items()
        }
        missing = set(NodeType) - set(lifespans)
        if missing:
            raise ValueError(
                f"lifespans: missing parameters for {sorted(t.value for t in missing)}"
            )
        for key, value in lifespans.items():
            if not isinstance(value, LifespanParams):
                raise ValueError(
                    f"lifespans.{key.value}: expected LifespanParams, got {value!r}"
                )
        object.__setattr__(self, "lifespans", MappingProxyType(lifespans))
        if not isinstance(self.extension_cap, int | float) or self.extension_cap < 1.0:
            raise ValueError(
                f"extension_cap: expected a number >= 1, got {self.extension_cap!r}"
            )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryConfig:
        """Rebuild settings from :meth:`to_dict` output.

        Args:
            data: The recorded settings.

        Returns:
            The settings.

        Raises:
            KeyError: If a setting is missing.
            ValueError: If a setting is invalid.
        """
        lifespans = {
            key: LifespanParams(**value) for key, value in data["lifespans"].items()
        }
        return cls(
            decay=data["decay"],
            weights=data["weights"],
            gamma=data["gamma"],
            delta=data["delta"],
            top_k=data["top_k"],
            d_max=data["d_max"],
            lifespans=lifespans,
            extension_cap=data["extension_cap"],
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the settings as plain JSON-ready data, for run metadata.

        Returns:
            A dict of the settings.
        """
        return {
            "decay": self.decay,
            "weights": dict(self.weights),
            "gamma": self.gamma,
            "delta": self.delta,
            "top_k": self.top_k,
            "d_max": self.d_max,
            "lifespans": {
                key.value: {
                    "minimum": p.minimum,
                    "maximum": p.maximum,
                    "power": p.power,
                }
                for key, p in self.lifespans.items()
            },
            "extension_cap": self.extension_cap,
        }
