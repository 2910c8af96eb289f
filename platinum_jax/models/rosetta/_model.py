"""The Rosetta model (Ho et al. 2025, "A Rosetta Stone for AI Benchmarks").

``score(m, b) = f(alpha_b (C_m - D_b))`` with a capability ``C_m`` per AI model (subject), a
difficulty ``D_b`` and a slope ``alpha_b`` per benchmark (item), ``f`` the sigmoid or the
paper's clipped-linear alternative ``clip(1/2 + z/4, 0, 1)``.

Point fit: the paper's regularised least squares, ``0.5 sum r^2 + 0.5 lambda / n *
(sum (C - t)^2 + sum (D - t)^2 + sum alpha_free^2)`` with ``n = M + 2B - 1`` under a benchmark
anchor. The paper fits with every ``D`` free and shifts ``C`` and ``D`` afterwards so that the
anchor's ``D`` takes its value; that equals fixing the anchor and letting the penalty centre on
the best common shift ``t``, which is a point-fit-only global parameter here. Under a model
anchor (two capabilities fixed) ``t = 0``, the fixed capabilities leave the penalty and
``n = M + 2B - 2``, as in the paper's model-anchored fit.

Bayesian fit: the priors below and, by default, a Gaussian likelihood with a free noise scale
(the least-squares likelihood with ``noise=1`` is meant for point fits).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from platinum_jax._names import UnknownNameError, close_matches_message

from .._likelihoods import Gaussian
from .._protocol import (
    DataInfo,
    Fixed,
    Identification,
    Likelihood,
    MeasurementModel,
    Param,
    PriorSpec,
    fix_entries,
)
from ._anchors import Anchor, BenchmarkAnchor, ModelAnchor

__all__ = ["Rosetta", "LINKS"]


# Each link takes JAX arrays (and tracers) or NumPy arrays; NumPy in gives NumPy out, so reading
# predictions from a finished fit runs no compiled call.


def _sigmoid(z):
    if isinstance(z, np.ndarray):
        return np.exp(-np.logaddexp(0.0, -z))  # 1 / (1 + e^-z), without overflow
    return jax.nn.sigmoid(z)


def _clipped_linear(z):
    # Same value (1/2) and slope (1/4) as the sigmoid at z = 0, so both links share a start.
    xp = np if isinstance(z, np.ndarray) else jnp
    return xp.clip(0.5 + 0.25 * z, 0.0, 1.0)


LINKS = {"sigmoid": _sigmoid, "clipped_linear": _clipped_linear}


class Rosetta(MeasurementModel):
    """``score = f(alpha_b (C_m - D_b))``; subjects are AI models, items are benchmarks.

    Args:
        link: ``"sigmoid"`` (default) or ``"clipped_linear"``; the model carries its link, so
            predictions, residuals and every method use the same one.
        l2: penalty strength ``lambda`` of point fits (paper: 0.1).
        anchor: :class:`BenchmarkAnchor` (default Winogrande, D = 0, alpha = 1) or
            :class:`ModelAnchor`.
        likelihood: default ``Gaussian(noise=1.0)``: least squares, the paper's objective.
    """

    link: str = "sigmoid"
    l2: float = 0.1
    anchor: Anchor = BenchmarkAnchor()
    likelihood: Likelihood = Gaussian(noise=1.0)
    name: ClassVar[str] = "rosetta"
    dim_names: ClassVar[tuple[str, str, str]] = ("model", "benchmark", "score")
    unit_scores: ClassVar[bool] = True

    def __check_init__(self):
        if self.link not in LINKS:
            raise ValueError(f"unknown link {self.link!r}; choose one of {sorted(LINKS)}")
        if not (np.isfinite(self.l2) and self.l2 >= 0):
            raise ValueError(f"l2 must be a finite number >= 0 (got {self.l2})")

    def subject_params(self):
        return {"capability": Param(prior=PriorSpec("Normal", 0.0, 3.0), doc="capability C_m")}

    def item_params(self):
        return {
            "difficulty": Param(prior=PriorSpec("Normal", 0.0, 3.0), doc="difficulty D_b"),
            "slope": Param(init=1.0, prior=PriorSpec("Normal", 1.0, 1.0), jitter=0.3, relative=True,
                           doc="slope alpha_b"),
        }

    def global_params(self):
        return {"shift": Param(map_only=True, jitter=0.0, doc="centre t of the L2 penalty (point fits)")}

    def mean(self, subject, item, glob):
        z = item["slope"] * (subject["capability"] - item["difficulty"])
        return LINKS[self.link](z)

    def identify(self, table) -> Identification:
        s, i = table.n_subjects, table.n_items
        a = self.anchor
        if isinstance(a, BenchmarkAnchor):
            k = _find(table.items, a.benchmark, "benchmark")
            return Identification(
                item={
                    "difficulty": fix_entries(i, (), [k], [a.difficulty]),
                    "slope": fix_entries(i, (), [k], [a.slope]),
                },
                description=f"anchor {a.describe()}",
            )
        if isinstance(a, ModelAnchor):
            ks = [_find(table.subjects, m, "model") for m in a.models]
            return Identification(
                subject={"capability": fix_entries(s, (), ks, a.capabilities)},
                glob={"shift": Fixed(np.ones((), bool), np.zeros(()))},
                description=f"anchor {a.describe()}",
            )
        raise TypeError(f"anchor must be a BenchmarkAnchor or ModelAnchor, got {a!r}")

    def describe(self):
        return {**super().describe(), "link": self.link, "l2": self.l2,
                "anchor": self.anchor.describe()}

    def sampling_model(self) -> Rosetta:
        """Bayesian fits sample the Rosetta model with its noise estimated
        (``Gaussian()``) in place of the least-squares objective's unit noise; the Bayesian
        Rosetta model of the paper (a noise per benchmark, known standard errors) is
        :class:`~platinum_jax.models.RosettaBayes`."""
        if self.likelihood.least_squares:
            return dataclasses.replace(self, likelihood=Gaussian())
        return self

    # The paper's penalty, split over subjects and items (see the module docstring).
    def penalty_scale(self, info: DataInfo):
        """``0.5 lambda / n``: the weight of one squared parameter in the paper's L2 penalty,
        ``n = M + 2B - 1`` (benchmark anchor) or ``M + 2B - 2`` (model anchor); an extended
        model gives its own parameters a penalty on this scale, so that it weighs as the
        paper's does against the least-squares objective."""
        models_fixed = isinstance(self.anchor, ModelAnchor)
        n = info.n_subjects + 2 * info.n_items - (2 if models_fixed else 1)
        return 0.5 * self.l2 / n

    def subject_penalty(self, raw, free, glob, info):
        c = raw["capability"] - glob["shift"]
        return self.penalty_scale(info) * jnp.where(free["capability"], c**2, 0.0)

    def item_penalty(self, raw, free, glob, info):
        d = raw["difficulty"] - glob["shift"]
        a2 = jnp.where(free["slope"], raw["slope"] ** 2, 0.0)
        return self.penalty_scale(info) * (d**2 + a2)


def _find(index, name, kind):
    try:
        return int(index.get_loc(name))
    except KeyError:
        raise UnknownNameError("anchor: " + close_matches_message(kind, name, list(index))) \
            from None
