"""What a sweep records at each grid point: the outputs.

An output names its variables and their trailing shapes (:meth:`Output.variables`) and computes
them from one ``SweepPoint`` (:meth:`Output.evaluate`); the sweep
vmaps that over a chunk of points. :meth:`Output.fingerprint` identifies an output in a stored
sweep, so a resumed sweep never mixes chunks computed by a different output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from platinum_jax.sweeps._fast import SweepPoint
from platinum_jax.sweeps._fingerprint import callable_fingerprint

__all__ = [
    "Output",
    "Weights",
    "WeightSummary",
    "Welfare",
    "EffortCost",
    "Platinum",
    "UserOutput",
]


class Output(eqx.Module):
    """Base class: ``variables(m)`` gives ``{name: (trailing dims, trailing shape, dtype)}`` and
    ``evaluate(point)`` gives ``{name: array}`` for one :class:`SweepPoint`."""

    def variables(self, m: int) -> dict[str, tuple[tuple[str, ...], tuple[int, ...], str]]:
        raise NotImplementedError

    def evaluate(self, point: SweepPoint) -> dict[str, Array]:
        raise NotImplementedError

    def fingerprint(self) -> tuple:
        return (type(self).__name__,)


class Weights(Output):
    """The optimal weights ``v*`` (item,) at every grid point, as variable ``"v"``."""

    def variables(self, m):
        return {"v": (("item",), (m,), "float")}

    def evaluate(self, point):
        return {"v": point.v}


class WeightSummary(Output):
    """Per-point summaries of ``v*`` for grids too large to keep every weight.

    ``v_max`` (largest weight), ``v_argmax`` (its item index), ``v_l1`` (``Σ|v_i|``), ``v_l2``
    (``‖v‖₂``) and ``v_align`` (cosine between ``v*`` and ``w``).
    """

    def variables(self, m):
        return {"v_max": ((), (), "float"), "v_argmax": ((), (), "int32"),
                "v_l1": ((), (), "float"), "v_l2": ((), (), "float"),
                "v_align": ((), (), "float")}

    def evaluate(self, point):
        v, w = point.v, point.w
        l2 = jnp.sqrt(v @ v)
        return {"v_max": jnp.max(v), "v_argmax": jnp.argmax(v).astype(jnp.int32),
                "v_l1": jnp.sum(jnp.abs(v)), "v_l2": l2,
                "v_align": (v @ w) / (l2 * jnp.sqrt(w @ w))}


class Welfare(Output):
    """Welfare at the optimum ``W(v*) = wᵀMv* − ½v*ᵀMv* − (r/2)v*ᵀΣv*``, variable ``"welfare"``."""

    def variables(self, m):
        return {"welfare": ((), (), "float")}

    def evaluate(self, point):
        return {"welfare": point.welfare}


class EffortCost(Output):
    """The lab's effort cost at the optimum ``½v*ᵀMv*``, variable ``"effort_cost"``."""

    def variables(self, m):
        return {"effort_cost": ((), (), "float")}

    def evaluate(self, point):
        return {"effort_cost": point.effort_cost}


class Platinum(Output):
    """Platinum flags (item,) bool (Haupt et al., Definition 1), variable ``"platinum"``.

    Item ``i`` is platinum when some concept ``j`` has welfare alignment ``cos φ_j ≥ τ_w``,
    loading ``cos θ_ij ≥ τ_m`` and signal-to-noise-cost ratio ``λ_j/(rσ_j) ≥ τ_e``, exactly as
    :func:`platinum_jax.agency.platinum_items` decides.  On the fast path the basis is fixed, so only
    ``λ``, ``σ`` and ``w`` are updated per point; on the general path the basis is recomputed.
    """

    tau_w: float = eqx.field(static=True)
    tau_m: float = eqx.field(static=True)
    tau_e: float = eqx.field(static=True)

    def __init__(self, tau_w: float, tau_m: float, tau_e: float):
        for label, tau, hi in (("tau_w", tau_w, 1.0), ("tau_m", tau_m, 1.0), ("tau_e", tau_e, None)):
            if not np.isfinite(tau) or tau <= 0 or (hi is not None and tau >= hi):
                rng = "in (0, 1)" if hi is not None else "> 0"
                raise ValueError(f"Platinum: {label} must be {rng}, got {tau!r}")
        self.tau_w, self.tau_m, self.tau_e = float(tau_w), float(tau_m), float(tau_e)

    def variables(self, m):
        return {"platinum": (("item",), (m,), "bool")}

    def evaluate(self, point):
        from platinum_jax.sweeps._fast import platinum_flags

        return {"platinum": platinum_flags(point, self.tau_w, self.tau_m, self.tau_e)}

    def fingerprint(self):
        return ("Platinum", self.tau_w, self.tau_m, self.tau_e)


class UserOutput(Output):
    """Any function of a grid point: ``fn(point: SweepPoint) -> array``.

    ``dims`` names the trailing dimensions of the returned array (use ``"item"`` for an (m,)
    result to get item labels).  ``fn`` must be traceable (jax.numpy), it is vmapped and jitted.
    A stored sweep records ``fn``'s code and captured values, so a changed ``fn`` (an edited
    lambda, a new closure constant) is a different sweep and is not resumed from old chunks.
    """

    name: str = eqx.field(static=True)
    fn: Callable = eqx.field(static=True)
    dims: tuple[str, ...] = eqx.field(static=True)

    def __init__(self, name: str, fn: Callable[[SweepPoint], Any], dims: Sequence[str] = ()):
        if not isinstance(name, str) or not name:
            raise ValueError(f"UserOutput: name must be a non-empty string, got {name!r}")
        if not callable(fn):
            raise ValueError(f"UserOutput({name!r}): fn must be callable, got {fn!r}")
        self.name, self.fn, self.dims = name, fn, tuple(dims)

    def variables(self, m):
        raise RuntimeError("UserOutput shapes are found by tracing; see _user_shapes")

    def evaluate(self, point):
        return {self.name: jnp.asarray(self.fn(point))}

    def fingerprint(self):
        # The code and captured values of fn, not just its name: editing a lambda must not let
        # a resumed sweep reuse chunks computed by the old one.
        return ("UserOutput", self.name, callable_fingerprint(self.fn), self.dims)
