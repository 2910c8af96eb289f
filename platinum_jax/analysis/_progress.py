"""Algorithmic progress: capability against training compute.

The model (Ho et al., "A Rosetta Stone for AI Benchmarks", section 3.2.2) is

    C_m = k ln F_m + b_m,

with F_m the training compute in FLOP and b_m the "algorithmic quality" of model m. The
compute needed for a fixed capability then falls by exp(Delta b / k) per year, where Delta b
is the yearly drift of b.

Two estimators of k, chosen by ``method``:

* ``"families"`` (default; the paper's recipe). Within a *single-release family* -- one
  training recipe released at several sizes on one date -- b is constant, so the OLS slope of
  capability on ln F inside the family estimates k with no algorithmic progress mixed in. k is
  the size-weighted mean of the per-family slopes,

      k = sum_f n_f k_f / sum_f n_f,      k_f = cov_f(ln F, C) / var_f(ln F).

  The paper's families are LLaMA, LLaMA 2 and LLaMA 3.1 (:data:`PAPER_FAMILIES`, printed in the
  result's ``family_slopes``); pass ``families=`` to use others. Then b_m = C_m - k ln F_m for
  *every* non-distilled model with a compute estimate, regressed on release date by OLS, gives
  Delta b per year.
* ``"organization"`` (a variant, not the paper's). k is the pooled within-organisation slope
  (organisation fixed effects, weighted by model),

      k = sum_m (x_m - xbar_o(m)) (y_m - ybar_o(m)) / sum_m (x_m - xbar_o(m))^2,

  and Delta b comes from the frontier models (top-``top_n`` at release) only. An organisation's
  models span up to a few years, so its within-group slope absorbs algorithmic progress: on the
  Epoch data k comes out larger (about 0.22) and the reduction factor about half the paper's.

Intervals come from a bootstrap, every replicate refitted under ``vmap`` with multinomial
resampling weights (static shapes). ``"families"``: models are resampled within each family for
k (a family whose replicate has a single distinct compute value drops out of that replicate's
mean) and, independently, over all models for Delta b, with b recomputed from the replicate's
k. ``"organization"``: models are resampled jointly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jaxtyping import Array, Float

from ._trends import as_capabilities, decimal_year, frontier_mask, weighted_least_squares

__all__ = [
    "PAPER_FAMILIES",
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


# Single-release families of the paper's k estimate: one recipe, several sizes, one date.
# Names are model version ids of the Epoch tables (scores_long.csv, model_compute.csv).
PAPER_FAMILIES: dict[str, tuple[str, ...]] = {
    "LLaMA": ("LLaMA-7B", "LLaMA-13B", "LLaMA-33B", "LLaMA-65B"),
    "LLaMA 2": ("Llama-2-7b", "Llama-2-13b", "Llama-2-34b", "Llama-2-70b-hf"),
    "LLaMA 3.1": (
        "Llama-3.1-8B-Instruct",
        "Llama-3.1-70B-Instruct",
        "Llama-3.1-405B-Instruct",
        "Llama-3.1-405B",
    ),
}

PROGRESS_METHODS = ("families", "organization")


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


def _families_core(w_fam, w_all, logf, cap, year, fam_onehot, sizes, year_ref):
    # per-family weighted OLS slope of C on ln F (rows outside every family have w_fam = 0)
    sw = fam_onehot.T @ w_fam
    safe = jnp.where(sw > 0, sw, 1.0)
    xd = logf - fam_onehot @ ((fam_onehot.T @ (w_fam * logf)) / safe)
    yd = cap - fam_onehot @ ((fam_onehot.T @ (w_fam * cap)) / safe)
    num = fam_onehot.T @ (w_fam * xd * yd)
    den = fam_onehot.T @ (w_fam * xd**2)
    ok = den > 1e-12
    slopes = jnp.where(ok, num / jnp.where(ok, den, 1.0), jnp.nan)
    size = jnp.where(ok, sizes, 0.0)
    k = jnp.sum(jnp.where(ok, slopes, 0.0) * size) / jnp.sum(size)
    b = cap - k * logf
    X = jnp.stack([jnp.ones_like(year), year - year_ref], axis=1)
    beta, _, _ = weighted_least_squares(X, b, w_all)
    return k, beta[1], slopes


_families_boot = jax.jit(jax.vmap(_families_core, in_axes=(0, 0) + (None,) * 6))

_progress_boot = jax.jit(
    jax.vmap(_progress_core, in_axes=(0, None, None, None, None, None, None)),
    static_argnums=(6,),
)


@dataclass(frozen=True, eq=False)
class AlgorithmicProgress:
    """Fitted algorithmic-progress model (immutable).

    ``k`` (capability per e-fold of compute), ``delta_b_per_year``, ``reduction_per_year``
    = exp(delta_b / k), their bootstrap standard errors ``k_se`` and ``delta_b_se``;
    ``method`` ("families" or "organization"); ``models`` (one row per model used: family,
    log_compute, capability, b, frontier, release_date, year; with ``method="families"`` the
    family column is empty for models outside the families); ``family_slopes`` (families
    method: one row per family with its models, size and OLS slope k_f; empty otherwise);
    ``bootstrap`` (k, delta_b, reduction per replicate), ``excluded`` (models dropped and
    why), ``level``.
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
    method: str = "families"
    family_slopes: pd.DataFrame | None = None

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
        rows.append(("n_models", float(len(self.models)), np.nan, np.nan, np.nan))
        if self.method == "families":
            for fam, row in self.family_slopes.iterrows():
                rows.append((f"k_family[{fam}]", row["slope"], np.nan, np.nan, np.nan))
            rows.append(("n_family_models", float((self.models["family"] != "").sum()),
                         np.nan, np.nan, np.nan))
        else:
            n_fam = self.models.groupby("family").size()
            rows.append(("n_families_with_2plus", float((n_fam >= 2).sum()), np.nan, np.nan,
                         np.nan))
            rows.append(("n_frontier", float(self.models["frontier"].sum()), np.nan, np.nan,
                         np.nan))
        out = pd.DataFrame(
            rows, columns=["quantity", "value", "low", "high", "paper_reference"]
        ).set_index("quantity")
        out.attrs["method"] = self.method
        return out


def _family_members(families: Any) -> dict[str, tuple[str, ...]]:
    if families is None:
        return dict(PAPER_FAMILIES)
    if not isinstance(families, Mapping):
        raise ValueError(
            "families must be a mapping family name -> list of model names (like "
            f"PAPER_FAMILIES), got {type(families).__name__}"
        )
    out = {}
    for name, members in families.items():
        if isinstance(members, str) or not isinstance(members, Iterable):
            raise ValueError(f"families[{name!r}] must be a list of model names, got {members!r}")
        out[str(name)] = tuple(str(m).strip() for m in members)
    if not out:
        raise ValueError("families is empty; give at least one family of two or more models")
    seen: dict[str, str] = {}
    for name, members in out.items():
        for m in members:
            if m in seen:
                raise ValueError(
                    f"model {m!r} is listed in two families ({seen[m]!r} and {name!r}); each "
                    "model may belong to one family"
                )
            seen[m] = name
    return out


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
    method: str = "families",
    families: Mapping[str, Iterable[str]] | None = None,
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
    compute : frame with ``model``, ``training_compute_flop`` and (for
        ``method="organization"``) ``organization`` -- e.g.
        ``read_model_compute("model_compute.csv")``. Models absent from ``capabilities`` are
        reported in ``excluded``.
    distilled : the distilled-models table (``model``, ``distilled``) or a list of names; these
        models are excluded (distillation breaks the compute -> capability link).
    method : ``"families"`` (the paper's recipe, default) or ``"organization"`` (organisation
        fixed effects and a frontier-only Delta b; a variant). See the module docstring.
    families : ``method="families"``: mapping family name -> model names, each a single-release
        family of two or more models (default :data:`PAPER_FAMILIES`: LLaMA, LLaMA 2,
        LLaMA 3.1). Every listed model must have a capability and a compute estimate and must
        not be distilled; otherwise a ``ValueError`` names it.
    family : ``method="organization"``: ``"organization"`` or a mapping model -> group used for
        the fixed effects.
    top_n : ``method="organization"``: frontier rule for the Delta b regression.
    n_boot, level, seed : bootstrap replicates, interval level and random seed.

    Fits run in float64 when ``jax_enable_x64`` is on (recommended; the CLI turns it on).
    """
    if method not in PROGRESS_METHODS:
        raise ValueError(
            f"method must be one of {PROGRESS_METHODS} (got {method!r}); 'families' is the "
            "paper's recipe"
        )
    if int(n_boot) < 2:
        raise ValueError(f"n_boot must be at least 2 (got {n_boot})")
    caps = as_capabilities(capabilities)
    comp = _clean_compute(compute)
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
    if method == "families":
        members = _family_members(families)
        fam = pd.Series("", index=comp.index, dtype=object)
        for name, models in members.items():
            unknown = [m for m in models if m not in keep]
            if unknown:
                why = [
                    "distilled" if m in dist else
                    "no compute estimate" if m not in comp.index else "no capability estimate"
                    for m in unknown
                ]
                raise ValueError(
                    f"family {name!r}: {', '.join(f'{m!r} ({w})' for m, w in zip(unknown, why, strict=True))}; "
                    "every family member needs a capability and a compute estimate and must not "
                    "be distilled -- fix the names or pass families= without them"
                )
            if len(models) < 2:
                raise ValueError(
                    f"family {name!r} has {len(models)} model(s); a within-family slope needs two "
                    "or more sizes"
                )
            fam.loc[list(models)] = name
    else:
        fam = _family_labels(comp, family)
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
    x, y, yr = (jnp.asarray(df[c].to_numpy()) for c in ("log_compute", "capability", "year"))
    year_ref = float(df["year"].mean())
    n = len(df)
    rng = np.random.default_rng(seed)
    # bootstrap over models: multinomial counts as weights keep every replicate the same shape
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=int(n_boot))
    family_slopes = None
    if method == "families":
        names = list(members)
        onehot = (df["family"].to_numpy()[:, None] == np.array(names)[None, :]).astype(np.float64)
        sizes = onehot.sum(axis=0)
        in_fam = onehot.sum(axis=1)
        k, db, slopes = (np.asarray(v[0]) for v in _families_boot(
            jnp.asarray(in_fam[None, :]), jnp.ones((1, n)), x, y, yr, jnp.asarray(onehot),
            jnp.asarray(sizes), year_ref))
        k, db = float(k), float(db)
        # resample within each family for k, over all models for Delta b
        fam_counts = np.zeros((int(n_boot), n))
        for j in range(len(names)):
            rows = np.flatnonzero(onehot[:, j])
            fam_counts[:, rows] = rng.multinomial(rows.size, np.full(rows.size, 1.0 / rows.size),
                                                  size=int(n_boot))
        kb, dbb, _ = _families_boot(jnp.asarray(fam_counts), jnp.asarray(counts, dtype=x.dtype),
                                    x, y, yr, jnp.asarray(onehot), jnp.asarray(sizes), year_ref)
        family_slopes = pd.DataFrame(
            {
                "n_models": sizes.astype(int),
                "slope": slopes,
                "models": [", ".join(df.index[onehot[:, j] > 0]) for j in range(len(names))],
            },
            index=pd.Index(names, name="family"),
        )
    else:
        groups = sorted(df["family"].unique())
        onehot = (df["family"].to_numpy()[:, None] == np.array(groups)[None, :]).astype(np.float64)
        if (onehot.sum(axis=0) >= 2).sum() == 0:
            raise ValueError(
                "no family has two or more models, so the within-family compute slope k is not "
                "identified; use coarser families"
            )
        w1 = jnp.ones((1, n))
        k, db = (float(v[0]) for v in _progress_boot(w1, x, y, yr, jnp.asarray(onehot), year_ref,
                                                     int(top_n)))
        kb, dbb = _progress_boot(jnp.asarray(counts, dtype=x.dtype), x, y, yr, jnp.asarray(onehot),
                                 year_ref, int(top_n))
    df["b"] = df["capability"].to_numpy() - k * df["log_compute"].to_numpy()
    df["frontier"] = np.asarray(frontier_mask(y, yr, jnp.ones(n, bool), int(top_n)))
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
        method=method,
        family_slopes=family_slopes if family_slopes is not None else pd.DataFrame(),
    )
