"""Algorithmic progress: capability against training compute within model families.

The model (the paper's section 3.2.2) is

    C_m = k log F_m + b_m,

with F_m the training compute in FLOP (natural log) and b_m the "algorithmic quality" of model
m.  ``k`` is estimated with family fixed effects -- within each family f the recipe is assumed
fixed, so b_m = b_f and k is the pooled within-family slope

    k = sum_m w_m (x_m - xbar_f(m)) (y_m - ybar_f(m)) / sum_m w_m (x_m - xbar_f(m))^2,

(x = log F, y = C, bars are family means).  Families with one model carry no information on k.
Then b_m = C_m - k log F_m is regressed on release year over the frontier models (top-at-release
in capability among the models with compute), giving Delta b per year, and the compute needed
for a fixed capability falls by the factor exp(Delta b / k) per year.

Intervals come from a bootstrap over models: multinomial resampling weights (static shapes), with
k, the frontier and Delta b all refitted per replicate under ``vmap``.

Families: by default the developer organisation from the compute table (the first name when
several are listed, e.g. "DeepSeek,Peking University" -> "DeepSeek").  Pass a mapping
model -> family to use anything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jaxtyping import Array, Float

from ._trends import as_capabilities, decimal_year, frontier_mask, weighted_least_squares

__all__ = [
    "PAPER_PROGRESS_REFERENCE",
    "AlgorithmicProgress",
    "fit_algorithmic_progress",
    "within_family_slope",
]

PAPER_PROGRESS_REFERENCE: dict[str, float] = {
    "k": 0.168,
    "delta_b_per_year": 0.297,
    "compute_reduction_per_year": 6.0,
}


def within_family_slope(
    x: Float[Array, " n"],
    y: Float[Array, " n"],
    w: Float[Array, " n"],
    family_onehot: Float[Array, "n f"],
) -> Float[Array, ""]:
    """Pooled within-family (fixed effects) least-squares slope of y on x with weights w."""
    sw = family_onehot.T @ w
    safe = jnp.where(sw > 0, sw, 1.0)
    mx = (family_onehot.T @ (w * x)) / safe
    my = (family_onehot.T @ (w * y)) / safe
    xd = x - family_onehot @ mx
    yd = y - family_onehot @ my
    return jnp.sum(w * xd * yd) / jnp.sum(w * xd**2)


def _progress_core(w, logf, cap, year, family_onehot, year_ref, top_n):
    k = within_family_slope(logf, cap, w, family_onehot)
    b = cap - k * logf
    on = frontier_mask(cap, year, w > 0, top_n)
    X = jnp.stack([jnp.ones_like(year), year - year_ref], axis=1)
    beta, _, _ = weighted_least_squares(X, b, w * on)
    return k, beta[1]


_progress_boot = jax.jit(
    jax.vmap(_progress_core, in_axes=(0, None, None, None, None, None, None)),
    static_argnums=(6,),
)


@dataclass(frozen=True, eq=False)
class AlgorithmicProgress:
    """Fitted algorithmic-progress model (immutable).

    ``k`` (capability per e-fold of compute), ``delta_b_per_year``, ``reduction_per_year``
    = exp(delta_b / k); ``models`` (one row per model used: family, log_compute, capability,
    b, frontier, release_date), ``bootstrap`` (k, delta_b, reduction per replicate),
    ``excluded`` (models dropped and why), ``level``.
    """

    k: float
    k_se: float
    delta_b_per_year: float
    delta_b_se: float
    reduction_per_year: float
    models: pd.DataFrame
    bootstrap: pd.DataFrame
    excluded: pd.DataFrame
    level: float

    def summary(self) -> pd.DataFrame:
        """One row per quantity: estimate, bootstrap interval, and the paper's value."""
        a = (1 - self.level) / 2
        boot = self.bootstrap
        rows = []
        for name, value, col in (
            ("k", self.k, "k"),
            ("delta_b_per_year", self.delta_b_per_year, "delta_b_per_year"),
            ("compute_reduction_per_year", self.reduction_per_year, "reduction_per_year"),
        ):
            lo, hi = np.nanquantile(boot[col].to_numpy(), [a, 1 - a])
            rows.append((name, value, lo, hi, PAPER_PROGRESS_REFERENCE[name]))
        n_fam = self.models.groupby("family").size()
        rows.append(("n_models", float(len(self.models)), np.nan, np.nan, np.nan))
        rows.append(("n_families_with_2plus", float((n_fam >= 2).sum()), np.nan, np.nan, np.nan))
        rows.append(("n_frontier", float(self.models["frontier"].sum()), np.nan, np.nan, np.nan))
        return pd.DataFrame(
            rows, columns=["quantity", "value", "low", "high", "paper_reference"]
        ).set_index("quantity")


def _family_labels(compute: pd.DataFrame, family: Any) -> pd.Series:
    if isinstance(family, str):
        if family != "organization":
            raise ValueError(
                f"family must be 'organization' or a mapping model -> family, got {family!r}"
            )
        if "organization" not in compute.columns:
            raise ValueError(
                "the compute table has no 'organization' column; pass family= a mapping "
                "model -> family name"
            )
        org = compute["organization"].astype("string").str.split(",").str[0].str.strip()
        if org.isna().any():
            bad = compute.index[org.isna()].tolist()[:5]
            raise ValueError(f"compute table: organization missing for {bad}; fill it or pass family=")
        return org.astype(str)
    if isinstance(family, Mapping | pd.Series):
        fam = pd.Series(dict(family) if isinstance(family, Mapping) else family)
        missing = [m for m in compute.index if m not in fam.index]
        if missing:
            raise ValueError(
                f"family mapping lacks {len(missing)} model(s) of the compute table, e.g. "
                f"{missing[:5]}; map every model"
            )
        return fam.reindex(compute.index).astype(str)
    raise ValueError(f"family must be 'organization' or a mapping, got {type(family).__name__}")


def _clean_compute(compute: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(compute, pd.DataFrame):
        raise ValueError(f"compute must be a DataFrame (see read_model_compute), got {type(compute).__name__}")
    frame = compute.copy()
    if "model" in frame.columns:
        frame = frame.set_index("model")
    frame.index = frame.index.astype(str).str.strip()
    col = next((c for c in ("training_compute_flop", "compute", "flop") if c in frame.columns), None)
    if col is None:
        raise ValueError(
            f"compute table needs a 'training_compute_flop' column (FLOP); it has {list(frame.columns)}"
        )
    flop = pd.to_numeric(frame[col], errors="coerce")
    bad = ~(np.isfinite(flop.to_numpy(dtype=np.float64)) & (flop.to_numpy(dtype=np.float64) > 0))
    if bad.any():
        raise ValueError(
            f"compute table: {int(bad.sum())} model(s) with missing or non-positive training "
            f"compute, e.g. {frame.index[bad].tolist()[:5]}; drop them first"
        )
    if flop.max() < 1e10:
        raise ValueError(
            f"compute table: the largest training compute is {flop.max():.3g}; values must be in "
            "FLOP (e.g. 2.1e25), not log10 FLOP"
        )
    if frame.index.duplicated().any():
        raise ValueError(
            f"compute table lists models twice, e.g. {frame.index[frame.index.duplicated()][:5].tolist()}"
        )
    frame["training_compute_flop"] = flop.astype(np.float64)
    return frame


def _distilled_set(distilled: Any) -> set[str]:
    if distilled is None:
        return set()
    if isinstance(distilled, pd.DataFrame):
        frame = distilled
        if "model" in frame.columns:
            frame = frame.set_index("model")
        if "distilled" not in frame.columns:
            raise ValueError(
                f"distilled table needs a boolean 'distilled' column; it has {list(frame.columns)}"
            )
        flag = frame["distilled"]
        if flag.dtype != bool:
            text = flag.astype(str).str.strip().str.lower()
            unknown = ~text.isin(["true", "false", "1", "0"])
            if unknown.any():
                raise ValueError(
                    f"distilled table: unreadable 'distilled' values {text[unknown].unique()[:5].tolist()}; "
                    "use TRUE/FALSE"
                )
            flag = text.isin(["true", "1"])
        return {str(m).strip() for m in frame.index[flag.to_numpy()]}
    return {str(m).strip() for m in distilled}


def fit_algorithmic_progress(
    capabilities: Any,
    compute: pd.DataFrame,
    *,
    distilled: Any = None,
    family: Any = "organization",
    top_n: int = 1,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> AlgorithmicProgress:
    """Estimate k, Delta b per year and the yearly compute-reduction factor exp(Delta b / k).

    Parameters
    ----------
    capabilities : StitchingFit or frame (``capability``, ``release_date``; index model).
    compute : frame with ``model``, ``training_compute_flop`` and (for the default families)
        ``organization`` -- e.g. ``read_model_compute("model_compute.csv")``.  Models absent from
        ``capabilities`` are reported in ``excluded``.
    distilled : the distilled-models table (``model``, ``distilled``) or a list of names; these
        models are excluded (distillation breaks the compute -> capability link).
    family : ``"organization"`` or a mapping model -> family used for the fixed effects.
    top_n : frontier rule for the Delta b regression (top ``top_n`` at release).
    """
    caps = as_capabilities(capabilities)
    comp = _clean_compute(compute)
    fam = _family_labels(comp, family)
    dist = _distilled_set(distilled)
    excluded = []
    for m in comp.index:
        if m in dist:
            excluded.append((m, "distilled"))
        elif m not in caps.index:
            excluded.append((m, "no capability estimate"))
    keep = [m for m in comp.index if m not in dist and m in caps.index]
    if len(keep) < 5:
        raise ValueError(
            f"only {len(keep)} model(s) have both a capability and a compute estimate (after "
            "dropping distilled ones); check that the model names match between the tables"
        )
    df = pd.DataFrame(
        {
            "family": fam.reindex(keep).to_numpy(),
            "training_compute_flop": comp.loc[keep, "training_compute_flop"].to_numpy(),
            "capability": caps.loc[keep, "capability"].to_numpy(),
            "release_date": caps.loc[keep, "release_date"].to_numpy(),
        },
        index=pd.Index(keep, name="model"),
    ).sort_values("release_date")
    df["log_compute"] = np.log(df["training_compute_flop"].to_numpy())
    df["year"] = decimal_year(df["release_date"])
    families = sorted(df["family"].unique())
    onehot = (df["family"].to_numpy()[:, None] == np.array(families)[None, :]).astype(np.float64)
    if (onehot.sum(axis=0) >= 2).sum() == 0:
        raise ValueError(
            "no family has two or more models, so the within-family compute slope k is not "
            "identified; use coarser families"
        )
    x, y, yr = (jnp.asarray(df[c].to_numpy()) for c in ("log_compute", "capability", "year"))
    year_ref = float(df["year"].mean())
    n = len(df)
    w1 = jnp.ones((1, n))
    k, db = (float(v[0]) for v in _progress_boot(w1, x, y, yr, jnp.asarray(onehot), year_ref, int(top_n)))
    b = df["capability"].to_numpy() - k * df["log_compute"].to_numpy()
    df["b"] = b
    df["frontier"] = np.asarray(frontier_mask(y, yr, jnp.ones(n, bool), int(top_n)))
    # bootstrap over models: multinomial counts as weights keep every replicate the same shape
    counts = np.random.default_rng(seed).multinomial(n, np.full(n, 1.0 / n), size=int(n_boot))
    kb, dbb = _progress_boot(jnp.asarray(counts, dtype=x.dtype), x, y, yr, jnp.asarray(onehot),
                             year_ref, int(top_n))
    kb, dbb = np.asarray(kb), np.asarray(dbb)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        red = np.exp(dbb / kb)
    boot = pd.DataFrame({"k": kb, "delta_b_per_year": dbb, "reduction_per_year": red})
    boot.index.name = "replicate"
    return AlgorithmicProgress(
        k=k,
        k_se=float(np.nanstd(kb, ddof=1)),
        delta_b_per_year=db,
        delta_b_se=float(np.nanstd(dbb, ddof=1)),
        reduction_per_year=float(np.exp(db / k)),
        models=df,
        bootstrap=boot,
        excluded=pd.DataFrame(excluded, columns=["model", "reason"]),
        level=float(level),
    )
