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

    def parameters(self, values):
        p = self.priors
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
        means = jnp.asarray(benchmark_means(self.benchmark_index, self.model_index,
                                            self.n_benchmarks, self.n_models), dtype)
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
            z_bar_a = means[k] @ z_c
            mu_c = d_a - tau_c * z_bar_a + values["anchor_intercept"] / alpha_a
        capability = _place(self.fixed_capability, free_c, mu_c + tau_c * z_c, dtype)
        # Standardised form: alpha_b (C_m - D_b) = exp(eta_b) (z_m - zbar_b) + beta_b.
        slope = _place(self.fixed_slope, free_s,
                       jnp.exp(p.log_slope_loc + p.log_slope_scale * values["slope_z"]) / tau_c,
                       dtype)
        z_bar = means @ ((capability - mu_c) / tau_c)
        std_slope = _take(slope * tau_c, free_d)  # exp(eta_b), or the anchor's alpha tau_C
        difficulty = _place(self.fixed_difficulty, free_d,
                            mu_c + tau_c * (_take(z_bar, free_d) - values["intercept"] / std_slope),
                            dtype)
        extra = {"capability_z": z_c} if self.polar else {}
        return {"capability": capability, "difficulty": difficulty, "slope": slope,
                "capability_mu": mu_c, "capability_tau": tau_c, **extra}


def benchmark_means(benchmark_index, model_index, n_benchmarks: int, n_models: int) -> np.ndarray:
    """``(n_benchmarks, n_models)``: row ``b`` averages a per-model vector over benchmark
    ``b``'s rows (a model counted once per row; 0 for a benchmark without rows). A constant of
    the table: the mean over rows is then one small product instead of a gather over the rows
    and a scatter back, and so is its gradient."""
    count = np.zeros((n_benchmarks, n_models))
    np.add.at(count, (np.asarray(benchmark_index), np.asarray(model_index)), 1.0)
    return count / np.maximum(count.sum(1, keepdims=True), 1.0)


def _runs(idx: np.ndarray) -> list[tuple[int, int]] | None:
    """``idx`` (static, strictly increasing) as ``[(start, stop), ...]`` runs of consecutive
    entries, or None when it is not increasing or has many runs (a gather is then simpler)."""
    idx = np.asarray(idx, dtype=int)
    if len(idx) == 0 or np.any(np.diff(idx) <= 0):
        return None
    cut = np.flatnonzero(np.diff(idx) != 1) + 1
    starts, stops = np.r_[0, cut], np.r_[cut, len(idx)]
    if len(starts) > 8:
        return None
    return [(int(idx[a]), int(idx[b - 1]) + 1) for a, b in zip(starts, stops, strict=True)]


def _take(x, idx, axis: int = 0):
    """``x[idx]`` along ``axis`` for static ``idx``: slices when it is a few runs (no gather
    in the gradient program)."""
    runs = _runs(idx)
    if runs is None:
        return jnp.take(x, np.asarray(idx, dtype=int), axis=axis)
    if runs == [(0, x.shape[axis])]:
        return x
    return jnp.concatenate([jax.lax.slice_in_dim(x, a, b, axis=axis) for a, b in runs],
                           axis=axis)


def _place(fixed, idx, values, dtype):
    """``fixed`` with ``values`` at the static positions ``idx``: the values themselves when
    ``idx`` covers every entry, slices and constants when it is a few runs, else a scatter."""
    fixed = np.asarray(fixed)
    runs = _runs(idx)
    if runs is None:
        return jnp.asarray(fixed, dtype).at[np.asarray(idx, dtype=int)].set(values)
    values = jnp.asarray(values, dtype)
    if runs == [(0, len(fixed))]:
        return values
    pieces, at, used = [], 0, 0
    for a, b in runs:
        if a > at:
            pieces.append(jnp.asarray(fixed[at:a], dtype))
        pieces.append(values[used:used + b - a])
        used += b - a
        at = b
    if at < len(fixed):
        pieces.append(jnp.asarray(fixed[at:], dtype))
    return jnp.concatenate(pieces)
