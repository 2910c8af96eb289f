"""The standardised coordinates in which NUTS samples the Bayesian Rosetta model
(:class:`~platinum_jax.models.rosetta.RosettaBayes`; the maths is in
:class:`~platinum_jax.models.rosetta.Priors`)."""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .._protocol import Reparameterisation
from ._zero_sum_shell import zero_sum_shell

__all__ = ["RosettaReparameterisation"]


def _dist():
    import numpyro.distributions as dist

    return dist


class RosettaReparameterisation(Reparameterisation):
    """Standardised coordinates of the Rosetta model (see :class:`Priors` for the maths).

    Sites: ``capability_u`` and ``capability_r2`` (the polar form of z; ``capability_z``,
    ZeroSumNormal over the free capabilities, with ``polar=False``), ``intercept`` (one per
    free difficulty), ``slope_z`` (one per free slope), and the scale: ``capability_mu``,
    ``capability_tau`` under a model anchor, or ``anchor_intercept`` and ``anchor_slope_z``
    (the anchored benchmark's intercept and standardised log slope) under a benchmark anchor,
    from which ``capability_mu`` and ``capability_tau`` follow. :meth:`parameters` returns
    ``capability``, ``difficulty``, ``slope`` (fixed entries at their anchor values) and the
    scale ``capability_mu``, ``capability_tau``.
    """

    priors: Any  # rosetta_bayes.Priors
    n_models: int
    n_benchmarks: int
    free_capability: tuple[int, ...]
    free_difficulty: tuple[int, ...]
    free_slope: tuple[int, ...]
    fixed_capability: Any  # (n_models,) anchor values where fixed, 0 elsewhere
    fixed_difficulty: Any  # (n_benchmarks,)
    fixed_slope: Any  # (n_benchmarks,)
    anchor_benchmark: int | None
    model_index: Any  # (n_rows,) int
    benchmark_index: Any  # (n_rows,) int
    polar: bool = True
    replaces: ClassVar[tuple[str, ...]] = ("capability", "difficulty", "slope")

    def sites(self):
        d, p = _dist(), self.priors
        out = {}
        if self.anchor_benchmark is None:  # two anchored models: shift and stretch sampled
            out["capability_mu"] = d.Normal(p.capability_loc, p.capability_loc_scale)
            out["capability_tau"] = d.HalfNormal(p.capability_scale)
        # Zero-sum z: mu_C is then the mean free capability, not a shift all z_m can mimic.
        n_c = len(self.free_capability)
        if self.polar:  # z = |z| u / |u| with |z|^2 ~ chi^2(n_c - 1) a coordinate of its own
            out["capability_u"] = (zero_sum_shell(n_c) if n_c >= 2
                                   else d.ZeroSumNormal(1.0, event_shape=(n_c,)))
            # (with under two free capabilities z = 0 and the radius is an unused placeholder)
            out["capability_r2"] = d.Gamma(0.5 * max(n_c - 1, 1), 0.5)
        else:
            out["capability_z"] = d.ZeroSumNormal(1.0, event_shape=(n_c,))
        if self.anchor_benchmark is not None:
            out["anchor_intercept"] = d.Normal(p.intercept_loc, p.intercept_scale)
            out["anchor_slope_z"] = d.Normal(0.0, 1.0)
        out["intercept"] = d.Normal(p.intercept_loc, p.intercept_scale).expand(
            [len(self.free_difficulty)]).to_event(1)
        out["slope_z"] = d.Normal(0.0, 1.0).expand([len(self.free_slope)]).to_event(1)
        return out

    def coords(self, subjects, items):
        subjects, items = np.asarray(subjects, dtype=object), np.asarray(items, dtype=object)
        free_c = list(subjects[list(self.free_capability)])
        out = {"intercept": [("free_difficulty", list(items[list(self.free_difficulty)]))],
               "slope_z": [("free_slope", list(items[list(self.free_slope)]))]}
        for site in (("capability_u", "capability_z") if self.polar else ("capability_z",)):
            out[site] = [("free_capability", free_c)]
        return out

    def _per_benchmark_mean(self, values):
        bi = jnp.asarray(self.benchmark_index)
        total = jax.ops.segment_sum(values, bi, num_segments=self.n_benchmarks)
        count = np.bincount(np.asarray(self.benchmark_index), minlength=self.n_benchmarks)
        return total / np.maximum(count, 1)

    def parameters(self, values):
        p = self.priors
        mi, bi = jnp.asarray(self.model_index), jnp.asarray(self.benchmark_index)
        free_c = np.asarray(self.free_capability, dtype=int)
        free_d = np.asarray(self.free_difficulty, dtype=int)
        free_s = np.asarray(self.free_slope, dtype=int)
        if self.polar:
            u = values["capability_u"]
            z_c = (jnp.sqrt(values["capability_r2"]) * u / jnp.linalg.norm(u)
                   if len(self.free_capability) >= 2 else u)
        else:
            z_c = values["capability_z"]
        dtype = jnp.result_type(z_c)
        if self.anchor_benchmark is None:
            mu_c, tau_c = values["capability_mu"], values["capability_tau"]
        else:
            # The anchored benchmark is sampled like any other (intercept beta_A, log slope
            # eta_A); its fixed D_A, alpha_A then give the scale: alpha_A = exp(eta_A) / tau_C
            # and D_A = mu_C + tau_C (zbar_A - beta_A / exp(eta_A)).
            k = self.anchor_benchmark
            alpha_a = self.fixed_slope[k]
            d_a = self.fixed_difficulty[k]
            tau_c = jnp.exp(p.log_slope_loc + p.log_slope_scale * values["anchor_slope_z"]) \
                / alpha_a
            # Every capability is free under a benchmark anchor, so z_c covers all models.
            on_anchor = bi == k
            z_bar_a = jnp.sum(jnp.where(on_anchor, z_c[mi], 0.0)) / jnp.sum(on_anchor)
            mu_c = d_a - tau_c * z_bar_a + values["anchor_intercept"] / alpha_a
        capability = jnp.asarray(self.fixed_capability, dtype).at[free_c].set(mu_c + tau_c * z_c)
        # Standardised form: alpha_b (C_m - D_b) = exp(eta_b) (z_m - zbar_b) + beta_b.
        slope = jnp.asarray(self.fixed_slope, dtype).at[free_s].set(
            jnp.exp(p.log_slope_loc + p.log_slope_scale * values["slope_z"]) / tau_c)
        z_bar = self._per_benchmark_mean(((capability - mu_c) / tau_c)[mi])
        std_slope = (slope * tau_c)[free_d]  # exp(eta_b), or the anchor's alpha tau_C
        difficulty = jnp.asarray(self.fixed_difficulty, dtype).at[free_d].set(
            mu_c + tau_c * (z_bar[free_d] - values["intercept"] / std_slope))
        extra = {"capability_z": z_c} if self.polar else {}
        return {"capability": capability, "difficulty": difficulty, "slope": slope,
                "capability_mu": mu_c, "capability_tau": tau_c, **extra}
