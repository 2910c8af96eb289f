"""The cost and noise tables of Haupt, Hartenstein, Reuel, Kochenderfer and Koyejo, "Welfare,
Improvability, and Noise: A Principal–Agent Theory of Optimal Benchmark Item Aggregation",
from the per-item tables of their release.

* Table 1 -- :func:`cost_quantile_table`: items ranked by the dollar cost of a 0.10 lift in p̂
  along their cheapest improving axis (C_i), seven items around each of the 1/10/50/90/99 %
  quantiles, with the release's bootstrap rank intervals.
* Table 2 -- :func:`noise_quantile_table`: the same bands for the measurement noise σ̂_i.
* Table 4 -- :func:`noise_decomposition`: per benchmark family, where items sit on the
  probability scale (the Bernoulli part of σ̂) and how close the gold answer is to the best
  distractor (the margin part).

The rank intervals are the release's ([2.5, 97.5] % of each item's rank over 1000 bootstrap
replicates); the raw runs they were resampled from are not shipped, so they are read, not redrawn.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["QUANTILE_LEVELS", "ITEMS_PER_BAND", "TABLE4_FAMILIES", "benchmark_label",
           "quantile_bands", "cost_quantile_table", "noise_quantile_table", "format_dollars",
           "noise_decomposition"]

QUANTILE_LEVELS = (0.01, 0.10, 0.50, 0.90, 0.99)
ITEMS_PER_BAND = 7
# Table 4's rows, in the paper's order (families the margins file lacks are left out).
TABLE4_FAMILIES = ("HellaSwag", "PIQA", "ARC-C", "MathQA", "MMLU", "CSQA")
# The lift the tables price: a 0.10 rise of p̂ costs a tenth of cost_min_usd's unit lift.
LIFT = 0.10
# Table 4's inputs: column -> (the values it may hold, beyond finite; what it holds).
_MARGIN_RULES = {
    "phat_noise": (lambda v: (v >= 0) & (v <= 1), "a probability p-hat in [0, 1]"),
    "sigma": (lambda v: v >= 0, "an across-seed noise standard deviation, finite and >= 0"),
    "sigma_z": (lambda v: v >= 0, "Z = sigma / sqrt(p-hat (1 - p-hat)), finite and >= 0 "
                "(infinite where p-hat is 0 or 1, which carries no Bernoulli scale)"),
    "log_ratio_med": (lambda v: np.ones(v.shape, bool), "a finite gold / runner-up "
                      "log-prob ratio"),
}
_NAMES = {"mathqa": "MathQA", "hellaswag": "HellaSwag", "piqa": "PIQA",
          "arc_challenge": "ARC-C", "commonsense_qa": "CSQA"}


def _require(frame, columns, what: str, index=("task", "doc_id")) -> pd.DataFrame:
    """``frame`` with ``(task, doc_id)`` as columns; a missing column is a named error."""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{what} must be a DataFrame, got {type(frame).__name__}")
    flat = frame.reset_index() if set(index) <= set(frame.index.names) else frame
    missing = [c for c in (*index, *columns) if c not in flat.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing} (has {list(flat.columns)}); read "
                         "it with platinum_jax.importers.read_principal_agent_release")
    return flat


def benchmark_label(task: str, *, table: int = 1) -> str:
    """The paper's short benchmark name for an OLMES task id: ``MathQA``, ``ARC-C``,
    ``MMLU/moral disputes`` (Tables 1-2; ``table=4`` gives the family, ``MMLU``, ``AGIEval``)."""
    task = str(task)
    if task in _NAMES:
        return _NAMES[task]
    if task.startswith("agieval_"):
        return "AGIEval" if table == 4 else "AGIEval-AQuA"
    if task.startswith("mmlu_"):
        return "MMLU" if table == 4 else "MMLU/" + task[len("mmlu_"):].replace("_", " ")
    return task


def quantile_bands(n: int, levels=QUANTILE_LEVELS, per_band: int = ITEMS_PER_BAND) -> pd.DataFrame:
    """Positions (0-based, in ascending order) of ``per_band`` consecutive items centred on each
    quantile ``q`` of ``n`` sorted values: centre ``round(q (n − 1))``, the window shifted inside
    ``[0, n)`` at the ends. Columns ``quantile, position``."""
    if n < per_band:
        raise ValueError(f"quantile bands of {per_band} items need at least {per_band} items, "
                         f"got {n}")
    rows = []
    for q in levels:
        if not 0 <= q <= 1:
            raise ValueError(f"quantile levels must lie in [0, 1], got {q}")
        hi = min(n, max(0, round(q * (n - 1)) - per_band // 2) + per_band)
        rows += [(q, p) for p in range(hi - per_band, hi)]
    return pd.DataFrame(rows, columns=["quantile", "position"])


def _banded(flat: pd.DataFrame, value: str, topics, levels, per_band) -> pd.DataFrame:
    # The authors' order among tied values is pandas' default sort (quicksort) of the file order.
    ordered = flat.sort_values(value, kind="quicksort").reset_index(drop=True)
    bands = quantile_bands(len(ordered), levels, per_band)
    out = ordered.iloc[bands["position"].to_numpy()].reset_index(drop=True)
    out.insert(0, "quantile", bands["quantile"].to_numpy())
    out.insert(1, "order", bands["position"].to_numpy() + 1)
    out.insert(4, "benchmark", out["task"].map(benchmark_label))
    if topics is not None:
        t = _require(topics, ["topic"], "topics")
        out = out.merge(t[["task", "doc_id", "topic"]], on=["task", "doc_id"], how="left")
    else:
        out["topic"] = np.nan
    for c in ("rank_headline", "rank_lo", "rank_hi"):
        out[c] = out[c].astype("Int64")
    return out.rename(columns={"rank_headline": "rank"})


def format_dollars(amount: float) -> str:
    """A dollar amount the way the paper prints it: ``$128``, ``$5.3k``, ``$12M``, no exponent
    below a quadrillion; ``—`` for a missing or non-positive amount."""
    if not np.isfinite(amount) or amount <= 0:
        return "—"
    if amount < 1e3:
        return f"${amount:.0f}"
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if amount >= scale:
            v = amount / scale
            if suffix == "T":
                return f"${v:.0f}T" if amount < 1e15 else f"${amount:.0e}"
            return f"${v:.1f}{suffix}" if v < 10 else f"${v:.0f}{suffix}"
    raise AssertionError("unreachable")  # pragma: no cover


def cost_quantile_table(cost: pd.DataFrame, topics: pd.DataFrame | None = None, *,
                        levels=QUANTILE_LEVELS, per_band: int = ITEMS_PER_BAND) -> pd.DataFrame:
    """Table 1: cost-ranking quantile bands.

    Items are sorted by ``cost_min_usd`` (C_i, dollars per unit lift of p̂ along the cheapest
    improving axis k* ∈ {PT, SFT, RL}); each band lists ``per_band`` items around a quantile.

    Args:
        cost: ``release.cost`` (by ``(task, doc_id)``, with ``cost_min_usd``, ``cheapest_axis``,
            ``rank_headline``, ``rank_lo``, ``rank_hi``). Every cost must be positive and finite
            (the reader's eligibility check); anything else is an error.
        topics: ``release.topics`` (``topic`` per item), optional.

    Returns:
        One row per listed item: ``quantile, order`` (1-based place in the sorted costs),
        ``task, doc_id, benchmark, rank, rank_lo, rank_hi`` (the release's rank and its
        bootstrap interval), ``axis``, ``cost_lift_usd`` (dollars for a 0.10 lift),
        ``cost_label`` (as printed) and ``topic``.
    """
    flat = _require(cost, ["cost_min_usd", "cheapest_axis", "rank_headline", "rank_lo",
                           "rank_hi"], "cost")
    c = pd.to_numeric(flat["cost_min_usd"], errors="coerce")
    bad = ~(np.isfinite(c) & (c > 0))
    if bad.any():
        raise ValueError(f"cost: {int(bad.sum())} item(s) have a cost_min_usd that is missing or "
                         f"not positive (e.g. {tuple(flat.loc[bad, ['task', 'doc_id']].iloc[0])});"
                         " Table 1 ranks eligible items only: read the release with "
                         "bad='exclude' to leave them out on record")
    out = _banded(flat, "cost_min_usd", topics, levels, per_band)
    out["axis"] = out["cheapest_axis"]
    out["cost_lift_usd"] = out["cost_min_usd"] * LIFT
    out["cost_label"] = out["cost_lift_usd"].map(format_dollars)
    cols = ["quantile", "order", "task", "doc_id", "benchmark", "rank", "rank_lo", "rank_hi",
            "axis", "cost_lift_usd", "cost_label", "topic"]
    return out[cols]


def noise_quantile_table(noise: pd.DataFrame, topics: pd.DataFrame | None = None, *,
                         levels=QUANTILE_LEVELS, per_band: int = ITEMS_PER_BAND) -> pd.DataFrame:
    """Table 2: noise-ranking quantile bands, items sorted by σ̂_i = √(pooled across-seed
    variance of p̂) (``noise_sigma_hat``).

    Returns one row per listed item: ``quantile, order, task, doc_id, benchmark, rank, rank_lo,
    rank_hi, sigma_hat, mean_phat`` (p̄ over the 80 seed × checkpoint runs) and ``topic``.
    """
    flat = _require(noise, ["noise_sigma_hat", "noise_mean_phat", "rank_headline", "rank_lo",
                            "rank_hi"], "noise")
    s = pd.to_numeric(flat["noise_sigma_hat"], errors="coerce")
    if s.isna().any():
        raise ValueError(f"noise: {int(s.isna().sum())} item(s) have no noise_sigma_hat; "
                         "Table 2 ranks every eligible item")
    out = _banded(flat, "noise_sigma_hat", topics, levels, per_band)
    out = out.rename(columns={"noise_sigma_hat": "sigma_hat", "noise_mean_phat": "mean_phat"})
    return out[["quantile", "order", "task", "doc_id", "benchmark", "rank", "rank_lo",
                "rank_hi", "sigma_hat", "mean_phat", "topic"]]


def noise_decomposition(margins: pd.DataFrame, *, families=TABLE4_FAMILIES,
                        min_items_for_r: int = 30) -> pd.DataFrame:
    """Table 4: per-family decomposition of seed-to-seed noise (PolyPythia 410M panel).

    Per family (``benchmark_label(task, table=4)``):

    * ``n`` items, ``median_phat`` (p̂), ``median_sigma`` (σ̂) and ``median_sigma_z`` of the
      Bernoulli-normalised noise Z = σ̂ / √(p̂ (1 − p̂)) (1/√K ≈ 0.32 for pure binomial
      sampling at K = 10 checkpoints);
    * on items the model gets right (p̂ > 0.5): ``n_won`` and ``median_log_ratio_won``, the
      median gold / runner-up char-normalised log-prob ratio (1 = a tie);
    * ``r_margin_z``: Pearson correlation of |ratio − 1| with Z over the family's items
      (NaN under ``min_items_for_r`` items).

    Args:
        margins: ``release.margins`` (``item_margins.parquet``: ``phat_noise``, ``sigma``,
            ``sigma_z``, ``log_ratio_med`` per item).

    Returns:
        One row per family present, indexed by ``family``; ``.attrs["items_not_tabled"]``
        counts the items of families outside ``families`` (e.g. AGIEval).
    """
    flat = _require(margins, list(_MARGIN_RULES), "margins").copy()
    for column, (allowed, meaning) in _MARGIN_RULES.items():
        values = pd.to_numeric(flat[column], errors="coerce").to_numpy(np.float64)
        with np.errstate(invalid="ignore"):
            bad = ~(np.isfinite(values) & allowed(values))
        if bad.any():
            first = flat.loc[bad, ["task", "doc_id", column]].iloc[0]
            shown = first[column].item() if hasattr(first[column], "item") else first[column]
            raise ValueError(
                f"margins (item_margins.parquet): column {column!r} holds {meaning}, but "
                f"{int(bad.sum())} row(s) do not (e.g. ({first['task']!r}, {first['doc_id']}) "
                f"= {shown!r}); Table 4 takes every item's value as given, so fix or "
                "remove those rows of the file")
        flat[column] = values
    fam = flat["task"].map(lambda t: benchmark_label(t, table=4))
    rows = []
    for name in families:
        sub = flat[fam == name]
        if sub.empty:
            continue
        won = sub[sub["phat_noise"] > 0.5]
        r = np.nan
        if len(sub) >= min_items_for_r:
            r = float(np.corrcoef((sub["log_ratio_med"] - 1.0).abs(), sub["sigma_z"])[0, 1])
        rows.append(dict(family=name, n=len(sub), median_phat=sub["phat_noise"].median(),
                         median_sigma=sub["sigma"].median(),
                         median_sigma_z=sub["sigma_z"].median(), n_won=len(won),
                         median_log_ratio_won=won["log_ratio_med"].median(),
                         r_margin_z=r))
    out = pd.DataFrame(rows).set_index("family")
    out.attrs["items_not_tabled"] = int((~fam.isin(list(families))).sum())
    return out
