"""Anchors that fix the Rosetta scale (shift and stretch of capabilities and difficulties).

* :class:`BenchmarkAnchor` fixes ``D_b`` and ``alpha_b`` of one benchmark (Ho et al. 2025:
  Winogrande, ``D = 0``, ``alpha = 1``);
* :class:`ModelAnchor` fixes the capabilities ``C_m`` of two models.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Anchor", "BenchmarkAnchor", "ModelAnchor", "anchor_for_table"]


@dataclass(frozen=True)
class BenchmarkAnchor:
    """Fix one benchmark's difficulty ``D_b`` and slope ``alpha_b`` (the paper's choice)."""

    benchmark: str = "Winogrande"
    difficulty: float = 0.0
    slope: float = 1.0

    def __post_init__(self):
        if not np.isfinite(self.difficulty) or not np.isfinite(self.slope):
            raise ValueError("the anchor difficulty and slope must be finite numbers")
        if self.slope <= 0:
            raise ValueError(
                f"anchor slope must be positive (got {self.slope}); a non-positive slope would "
                "make higher capability mean lower scores on the anchor"
            )

    def describe(self) -> str:
        return f"benchmark {self.benchmark!r}: D={self.difficulty:g}, alpha={self.slope:g}"

    def to_dict(self) -> dict:
        """Plain Python for JSON: ``kind`` "benchmark", ``benchmark``, ``difficulty``, ``slope``."""
        return {"kind": "benchmark", "benchmark": self.benchmark, "difficulty": self.difficulty,
                "slope": self.slope}


@dataclass(frozen=True)
class ModelAnchor:
    """Fix the capabilities ``C_m`` of two models (sets both shift and stretch of the scale).

    The L2 term pulls every capability towards 0, so choose values on the natural scale (e.g.
    from a benchmark-anchored fit); to *report* on another scale (say 130 and 150) use
    :meth:`StitchingFit.rescaled`, which leaves every prediction unchanged.
    """

    models: tuple[str, str]
    capabilities: tuple[float, float]

    def __post_init__(self):
        object.__setattr__(self, "models", tuple(str(m) for m in self.models))
        object.__setattr__(self, "capabilities", tuple(float(c) for c in self.capabilities))
        if len(self.models) != 2 or len(self.capabilities) != 2:
            raise ValueError("a ModelAnchor needs exactly two models and two capabilities")
        if self.models[0] == self.models[1]:
            raise ValueError(f"the two anchor models must differ (both are {self.models[0]!r})")
        if not all(np.isfinite(self.capabilities)):
            raise ValueError("anchor capabilities must be finite numbers")
        if self.capabilities[0] == self.capabilities[1]:
            raise ValueError(
                "the two anchor capabilities must differ; equal values would collapse the scale"
            )

    def to_dict(self) -> dict:
        """Plain Python, for JSON: ``kind`` "models", ``models``, ``capabilities``."""
        return {"kind": "models", "models": list(self.models),
                "capabilities": list(self.capabilities)}

    def describe(self) -> str:
        return (
            f"models {self.models[0]!r}={self.capabilities[0]:g}, "
            f"{self.models[1]!r}={self.capabilities[1]:g}"
        )


Anchor = BenchmarkAnchor | ModelAnchor


def anchor_for_table(anchor: Anchor, table) -> Anchor:
    """The given anchor where it lies in ``table`` (a score table with ``models``,
    ``benchmarks`` and ``benchmark_index``, e.g. a sub-table); otherwise the table's most-scored
    benchmark, with the anchor's D and alpha when it was a benchmark anchor."""
    if isinstance(anchor, BenchmarkAnchor) and anchor.benchmark in table.benchmarks:
        return anchor
    if isinstance(anchor, ModelAnchor) and all(m in table.models for m in anchor.models):
        return anchor
    name = table.benchmarks[int(np.argmax(np.bincount(table.benchmark_index)))]
    if isinstance(anchor, BenchmarkAnchor):
        return BenchmarkAnchor(name, anchor.difficulty, anchor.slope)
    return BenchmarkAnchor(name)
