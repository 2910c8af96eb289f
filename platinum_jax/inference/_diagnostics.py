"""One vocabulary for sampler diagnostics, and one chain policy, for every sampler.

Every NUTS fit of the package (:func:`platinum_jax.inference.nuts`, the Bayesian stitching fit)
reports its diagnostics under the keys of :data:`DIAGNOSTIC_KEYS`, computed by
:func:`sampler_diagnostics`, and runs its chains as :func:`choose_chain_method` says. Older
names (``n_divergent``, ``max_r_hat``, ...) stay readable from a :class:`Diagnostics` with a
``DeprecationWarning`` naming the new key; :func:`canonical_diagnostics` renames them in a dict
read back from a file.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import jax
import numpy as np
import pandas as pd

__all__ = ["DIAGNOSTIC_KEYS", "RENAMED_KEYS", "ONE_CHAIN_RHAT", "Diagnostics",
           "canonical_diagnostics", "choose_chain_method", "sampler_diagnostics"]

#: what each key means (every NUTS fit writes these)
DIAGNOSTIC_KEYS = {
    "divergences": "divergent transitions over all chains",
    "rhat_max": "largest rank-normalised split R-hat over every sampled quantity",
    "ess_bulk_min": "smallest bulk effective sample size",
    "ess_tail_min": "smallest tail effective sample size",
    "worst_rhat_parameter": "the quantity with the largest R-hat",
    "worst_ess_bulk_parameter": "the quantity with the smallest bulk ESS",
    "worst_ess_tail_parameter": "the quantity with the smallest tail ESS",
    "chains": "number of chains",
    "samples": "draws per chain after warm-up",
    "chain_method": "how the chains ran: parallel (a device each) or vectorized",
    "seconds": "wall time of the sampling",
}

#: earlier names of the Bayesian stitching fit -> the names above
RENAMED_KEYS = {
    "n_divergent": "divergences",
    "max_r_hat": "rhat_max",
    "min_ess_bulk": "ess_bulk_min",
    "min_ess_tail": "ess_tail_min",
    "worst_r_hat": "worst_rhat_parameter",
    "worst_ess_bulk": "worst_ess_bulk_parameter",
    "worst_ess_tail": "worst_ess_tail_parameter",
    "n_chains": "chains",
    "n_draws": "samples",
    "wall_s": "seconds",
}

#: ``rhat_max`` of a one-chain run: R-hat compares chains, so one chain has none
ONE_CHAIN_RHAT = "unavailable with one chain"


def _renamed(key):
    new = RENAMED_KEYS[key]
    warnings.warn(f"diagnostics key {key!r} is deprecated; read {new!r}", DeprecationWarning,
                  stacklevel=3)
    return new


class Diagnostics(dict):
    """A dict of diagnostics under :data:`DIAGNOSTIC_KEYS` that still answers the old names of
    :data:`RENAMED_KEYS` (with a ``DeprecationWarning``); it is written with the new ones."""

    def __getitem__(self, key):
        if key in RENAMED_KEYS and not dict.__contains__(self, key):
            key = _renamed(key)
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        if key in RENAMED_KEYS and not dict.__contains__(self, key):
            key = _renamed(key)
        return dict.get(self, key, default)

    def __contains__(self, key):
        return dict.__contains__(self, key) or (
            key in RENAMED_KEYS and dict.__contains__(self, RENAMED_KEYS[key]))


def canonical_diagnostics(values: Mapping) -> Diagnostics:
    """``values`` (e.g. read from a ``fit.json`` written by an older version) with every old
    key renamed to the current one (a current key wins when both are present)."""
    out = Diagnostics()
    for key, value in values.items():
        new = RENAMED_KEYS.get(key, key)
        if new != key and new in values:
            continue
        out[new] = value
    return out


def choose_chain_method(chains: int) -> str:
    """How NUTS runs ``chains`` chains on this machine (every sampler of the package).

    ``"parallel"`` (one chain per device) when ``jax.local_device_count() >= chains``;
    otherwise ``"vectorized"``: the chains are batched into one program, so each leapfrog step
    evaluates all chains' gradients in one vectorised pass, but every step waits for the chain
    with the longest trajectory. Independent chains on separate devices are faster: on a 2-core
    CPU, four chains on four host devices finish in about half the time of the vectorised run
    (see ``benchmarks/bench_bayes.py``). A CPU shows one device unless asked for more before
    JAX runs anything; :func:`use_cpu_devices_for_chains` does that.
    """
    return "parallel" if jax.local_device_count() >= chains else "vectorized"


def use_cpu_devices_for_chains(chains: int) -> bool:
    """Ask JAX for ``chains`` host devices so NUTS chains run in parallel on a CPU.

    Must be called right after ``import jax``, before any JAX computation; it sets
    ``jax_num_cpu_devices`` (the CPU threads are shared, the chains no longer wait for each
    other).  GPU and TPU back-ends are unaffected.  Returns True when the setting took effect and
    False when JAX had already started (then :func:`choose_chain_method` falls back to
    ``"vectorized"``, which is correct, only slower).
    """
    if int(chains) != chains or chains < 1:
        raise ValueError(f"chains must be a positive integer, got {chains!r}")
    try:
        jax.config.update("jax_num_cpu_devices", int(chains))
    except RuntimeError:  # back-ends already initialised: the device count is fixed now
        return False
    return True


def sampler_diagnostics(summary: pd.DataFrame, divergences: int, *, chains: int, samples: int,
                        chain_method: str, seconds: float) -> Diagnostics:
    """The diagnostics of one NUTS run, under :data:`DIAGNOSTIC_KEYS`.

    ``summary``: one row per sampled scalar quantity the check covers (constants such as
    anchored entries left out), indexed by its label, with columns ``r_hat``, ``ess_bulk`` and
    ``ess_tail`` (ArviZ). With one chain, ``rhat_max`` is :data:`ONE_CHAIN_RHAT` and
    ``worst_rhat_parameter`` None.
    """
    several = chains > 1
    out = Diagnostics(divergences=int(divergences))
    rhat = summary["r_hat"].astype(float)
    out["rhat_max"] = float(rhat.max()) if several else ONE_CHAIN_RHAT
    out["ess_bulk_min"] = float(summary["ess_bulk"].min())
    out["ess_tail_min"] = float(summary["ess_tail"].min())
    out["worst_rhat_parameter"] = (str(rhat.idxmax()) if several and rhat.notna().any()
                                   else None)
    for kind in ("bulk", "tail"):
        col = summary[f"ess_{kind}"].astype(float)
        out[f"worst_ess_{kind}_parameter"] = str(col.idxmin()) if col.notna().any() else None
    out.update(chains=int(chains), samples=int(samples), chain_method=str(chain_method),
               seconds=float(seconds))
    return out


def rhat_ok(diagnostics: Mapping, threshold: float) -> bool:
    """Whether R-hat passes ``threshold`` (a one-chain run has no R-hat: it does not pass)."""
    value = diagnostics.get("rhat_max")
    return isinstance(value, (int, float, np.floating)) and bool(value <= threshold)
