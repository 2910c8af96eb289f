"""Posterior summaries and sampler diagnostics of an ArviZ posterior, any model's.

Labelled summaries (mean, sd, 94% HDI, R-hat, bulk and tail ESS) per parameter entry, the
package's one set of sampler diagnostics over them, and the checks that warn, with advice that
reflects the run's own settings, when divergences, R-hat or ESS say the posterior is not
trustworthy. The thresholds are named as everywhere in the package: ``rhat_max`` and
``ess_min``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

__all__ = ["HDI_PROB", "SamplingWarning", "check_diagnostics", "posterior_summary",
           "summary_diagnostics", "warn_on_diagnostics"]

HDI_PROB = 0.94  # ArviZ's default; the columns are named hdi_3% and hdi_97%
_HDI_LO, _HDI_HI = "hdi_3%", "hdi_97%"


class SamplingWarning(UserWarning):
    """The sampler's diagnostics (divergences, R-hat, ESS) say the posterior is not trustworthy."""


def posterior_summary(
    idata, *, var_names: Sequence[str] | None = None, with_diagnostics: bool = True
) -> pd.DataFrame:
    """Tidy summary of ``idata.posterior``: one row per scalar entry of each variable.

    Columns ``variable, name, mean, sd, hdi_3%, hdi_97%, r_hat, ess_bulk, ess_tail``; ``name``
    is the model or benchmark label ('' for scalars).  Constant entries (anchors) get NaN
    diagnostics; so does everything when ``with_diagnostics`` is false (e.g. SVI draws).
    """
    from ._convergence import convergence, hdi

    post = idata.posterior
    # Sampling coordinates (attrs role "coordinate") repeat what the parameters show.
    names = (list(var_names) if var_names is not None else
             [v for v in post.data_vars if post[v].attrs.get("role") != "coordinate"])
    sample_dims = ("chain", "draw")
    # every entry of every variable as one (chain, draw, k) array: the diagnostics of all of
    # them are a few array operations (ArviZ 0.x loops over entries in Python)
    blocks = [post[v].transpose(*sample_dims, ...).values for v in names]
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    flat = np.concatenate([b.reshape(n_chain, n_draw, -1) for b in blocks], axis=2) \
        if blocks else np.zeros((n_chain, n_draw, 0))
    lo_all, hi_all = hdi(flat, HDI_PROB)
    if with_diagnostics:
        rh_all, eb_all, et_all = convergence(flat)
    rows = []
    at = 0
    for var, block in zip(names, blocks, strict=True):
        x = post[var]
        width = int(np.prod(block.shape[2:], dtype=int))
        cut = slice(at, at + width)
        at += width
        mean = block.mean(axis=(0, 1)).reshape(-1)
        sd = (block.std(axis=(0, 1), ddof=1).reshape(-1) if n_chain * n_draw > 1
              else np.zeros_like(mean))
        lo, hi = lo_all[cut], hi_all[cut]
        other = [d for d in x.dims if d not in sample_dims]
        labels = ([",".join(str(x[d].values[k]) for d, k in zip(other, ix, strict=True))
                   for ix in np.ndindex(*(x.sizes[d] for d in other))] if other else [""])
        if with_diagnostics:
            rh, eb, et = rh_all[cut], eb_all[cut], et_all[cut]
        else:
            rh = eb = et = np.full(mean.shape, np.nan)
        fixed = sd == 0
        rh, eb, et = (np.where(fixed, np.nan, a) for a in (rh, eb, et))
        rows.append(
            pd.DataFrame(
                {
                    "variable": var,
                    "name": labels,
                    "mean": mean,
                    "sd": sd,
                    _HDI_LO: lo,
                    _HDI_HI: hi,
                    "r_hat": rh,
                    "ess_bulk": eb,
                    "ess_tail": et,
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def _checked_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """Rows the diagnostics cover: every quantity that varies over the draws (anchored
    entries are constants and left out)."""
    return summary.loc[summary["sd"] > 0]


def summary_diagnostics(idata, summary, method: str = "nuts",
                        wall: float = float("nan")) -> dict[str, object]:
    """The package's one set of sampler diagnostics
    (``sampler_diagnostics``) over the rows of ``summary`` (from
    :func:`posterior_summary`) that vary, and over every other variable of the posterior that
    the summary leaves out (the sampled standardised coordinates ``*_z``, ``noise_log_sigma``):
    a slowly mixing sampled coordinate fails the check even when the named quantities pass.
    ``method`` other than ``"nuts"`` (independent draws, e.g. SVI) has nothing to diagnose
    but the time ``wall``."""
    from ._diagnostics import sampler_diagnostics

    if method != "nuts":  # independent guide draws: nothing to diagnose but the time
        return {"divergences": 0, "rhat_max": float("nan"), "ess_bulk_min": float("nan"),
                "ess_tail_min": float("nan"), "seconds": float(wall)}
    checked = _checked_rows(summary)
    hidden = [v for v in idata.posterior.data_vars if v not in set(summary["variable"])]
    if hidden:
        checked = pd.concat([checked, _checked_rows(posterior_summary(idata, var_names=hidden))])
    labelled = checked[["r_hat", "ess_bulk", "ess_tail"]].set_axis(
        [_label(row) for _, row in checked.iterrows()])
    return sampler_diagnostics(
        labelled, int(idata.sample_stats["diverging"].values.sum()),
        chains=int(idata.posterior.sizes["chain"]), samples=int(idata.posterior.sizes["draw"]),
        chain_method=str(idata.attrs.get("chain_method", "unknown")), seconds=float(wall))


def _label(row: pd.Series) -> str:
    return f"{row['variable']}[{row['name']}]" if row["name"] != "" else str(row["variable"])


def check_diagnostics(idata, *, ess_min: float = 400.0, rhat_max: float = 1.01) -> dict:
    """Sampler diagnostics of a NUTS posterior, with a :class:`SamplingWarning` for each problem.

    Over every quantity of the posterior that varies over the draws (for the Bayesian Rosetta
    model: the free capabilities, difficulties and slopes and all hyper-parameters; anchored
    entries are constants).  Reports the number of divergent transitions, the largest
    rank-normalised split R-hat and the smallest bulk and tail ESS (ArviZ), and which parameter
    is worst.  R-hat compares chains, so with a single chain it is NaN and a warning says so.
    Each failing check warns with what to try, given the run's settings where ``idata.attrs``
    records them.  Returns the package's diagnostics
    (:data:`platinum_jax.inference.DIAGNOSTIC_KEYS`: ``divergences``, ``rhat_max``,
    ``ess_bulk_min``, ``ess_tail_min``, ``worst_rhat_parameter``, ..., ``chains``,
    ``samples``), without ``seconds``.
    """
    summary = posterior_summary(idata)
    diag = summary_diagnostics(idata, summary, "nuts", float("nan"))
    diag.pop("seconds")
    warn_on_diagnostics(diag, ess_min=ess_min, rhat_max=rhat_max, run=dict(idata.attrs))
    return diag


def _divergence_advice(run: Mapping) -> str:
    """What to try after divergences, given the settings the run used (where known)."""
    target_accept, warmup = run.get("target_accept"), run.get("warmup")
    steps = []
    if target_accept is None:
        steps.append("raise target_accept (e.g. 0.99)")
    elif target_accept < 0.99:
        steps.append(f"raise target_accept to 0.99 (this run used {target_accept:g})")
    else:
        steps.append(f"target_accept is already {target_accept:g}, so do not raise it further")
    if warmup is None:
        steps.append("lengthen the warmup")
    else:
        steps.append(f"lengthen the warmup beyond this run's {int(warmup)} (e.g. {2 * int(warmup)})")
    steps.append("or tighten the priors of poorly identified parameters (for the Bayesian Rosetta "
                 "model, e.g. Priors(log_slope_scale=0.5))")
    return "; ".join(steps)


def warn_on_diagnostics(diag: Mapping, *, ess_min: float = 400.0, rhat_max: float = 1.01,
                        run: Mapping | None = None) -> None:
    """A :class:`SamplingWarning` for each failing check of ``diag`` (divergences, R-hat above
    ``rhat_max`` or unavailable with one chain, bulk or tail ESS below ``ess_min``), with
    advice built on the run's settings ``run`` (``target_accept``, ``warmup``, where known)."""
    run = {} if run is None else run
    n_chains, n_draws = diag.get("chains"), diag.get("samples")
    if diag["divergences"] > 0:
        warnings.warn(
            f"NUTS reported {diag['divergences']} divergent transition(s): the posterior has "
            f"regions the step size cannot follow; {_divergence_advice(run)}",
            SamplingWarning,
            stacklevel=3,
        )
    if n_chains == 1:
        warnings.warn(
            "one chain: R-hat compares chains with each other, so convergence cannot be checked "
            "(rhat_max is unavailable); the ESS below is of this one chain only.  Run "
            "chains >= 2 (4 is usual) before trusting the intervals",
            SamplingWarning,
            stacklevel=3,
        )
    elif not diag["rhat_max"] <= rhat_max:
        warnings.warn(
            f"max R-hat = {diag['rhat_max']:.3f} > {rhat_max} (worst: "
            f"{diag.get('worst_rhat_parameter', '?')}): the chains disagree; run a longer warmup "
            f"(this run: {run.get('warmup', '?')} steps) and more samples before trusting the "
            "intervals",
            SamplingWarning,
            stacklevel=3,
        )
    for kind in ("bulk", "tail"):
        ess = diag[f"ess_{kind}_min"]
        if ess >= ess_min:
            continue
        where = diag.get(f"worst_ess_{kind}_parameter", "?")
        if n_chains and n_draws and ess > 0:
            # ESS grows about linearly with the number of draws at a fixed step size.
            need = int(np.ceil(n_draws * ess_min / ess / 100.0) * 100)
            advice = (
                f"this run drew {n_chains} x {n_draws}; about samples={need} per chain would "
                f"reach {ess_min:g}, or more chains"
            )
        else:
            advice = "draw more samples (samples=..., chains=...)"
        warnings.warn(
            f"min {kind} ESS = {ess:.0f} < {ess_min:g} (worst: {where}): the intervals are noisy; "
            f"{advice}",
            SamplingWarning,
            stacklevel=3,
        )
