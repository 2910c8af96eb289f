"""The welfare findings of Haupt, Hartenstein, Reuel, Kochenderfer and Koyejo, "Welfare,
Improvability, and Noise: A Principal–Agent Theory of Optimal Benchmark Item Aggregation".

* Figure 2 -- :func:`concept_quadrants`: the judge's GWA loadings on the worker-desire plane
  (p_auto, p_aug ∈ [1, 5]), split at 3.5 into Green-Light, Automate-Only, Augment-Only and
  Red-Light quadrants, per perspective.
* Figure 3 -- :func:`welfare_frontier`: math against general-knowledge items in (w_auto, w_aug),
  the Pareto frontier, how many math items a general item dominates, the family gap per axis
  with a task-cluster bootstrap interval and a task-cluster permutation p-value.
* Robustness set 1 -- :func:`welfare_robustness`: the headline welfare against top-3, top-4,
  uniform rank weights, the OpenAI judge and flat-mean GWA scores (rank correlations, frontier
  overlap, math dominance).
* Robustness set 2 -- :func:`heldout_rater_check`: two human raters and a few-shot judge on 28
  held-out items (slot mass per quadrant split at 3.0, math–general gaps).

Welfare always comes from :func:`~platinum_jax.measured.welfare_table` (one judge's or rater's
rankings through :func:`~platinum_jax.measured.welfare_from_rankings`), so the variants, the
raters and the headline share one aggregation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from platinum_jax.measured._welfare import rescale_welfare, welfare_table

__all__ = ["QUADRANTS", "ROBUSTNESS_VARIANTS", "ConceptQuadrants",
           "WelfareFrontier", "HeldoutCheck", "quadrant_of", "task_family", "dominated_by",
           "pareto_frontier", "concept_quadrants", "welfare_frontier",
           "welfare_robustness", "heldout_rater_check"]

# quadrant -> (label, colour); the order of every per-quadrant table.
QUADRANTS = {"green": ("Green-Light", "#2ca02c"), "automate": ("Automate-Only", "#ff7f0e"),
             "augment": ("Augment-Only", "#1f77b4"), "low": ("Red-Light", "#d62728")}
PERSPECTIVES = ("automation", "augmentation")
# Figure 3 counts quantitative MMLU subjects (statistics, physics, econometrics, formal logic)
# as math; robustness set 1 only the mathematics subjects.
_MATH_FIGURE3 = re.compile(
    r"^(mathqa|agieval_sat_math|agieval_aqua_rat|"
    r"mmlu_(college|high_school|elementary)_mathematics|mmlu_high_school_statistics|"
    r"mmlu_abstract_algebra|mmlu_(college|high_school)_physics|mmlu_econometrics|"
    r"mmlu_formal_logic)$")
_MATH_ROBUSTNESS = {"mathqa", "agieval_aqua_rat", "agieval_sat_math",
                    "mmlu_elementary_mathematics", "mmlu_high_school_mathematics",
                    "mmlu_college_mathematics", "mmlu_abstract_algebra"}
# Set 1's perturbations: (label, judge, top_k, weighting, GWA scores "headline" or "mean").
ROBUSTNESS_VARIANTS = (
    ("k=3, recip", "claude", 3, "reciprocal", "headline"),
    ("k=4, recip", "claude", 4, "reciprocal", "headline"),
    ("k=5, uniform", "claude", 5, "uniform", "headline"),
    ("OpenAI, k=5, recip", "openai", 5, "reciprocal", "headline"),
    ("GWA mean-agg, k=5, recip", "claude", 5, "reciprocal", "mean"),
)
# Welfare is rounded to this many decimals before ranks and dominance: two items whose top-k
# GWAs are the same multiset have the same welfare, and summation order must not break the tie.
TIE_DECIMALS = 9


def quadrant_of(p_auto, p_aug, threshold: float = 3.5) -> np.ndarray:
    """Quadrant of each GWA: ``green`` (both ≥ threshold), ``automate`` (p_auto only),
    ``augment`` (p_aug only), ``low`` (neither)."""
    hi_auto = np.asarray(p_auto, float) >= threshold
    hi_aug = np.asarray(p_aug, float) >= threshold
    return np.select([hi_auto & hi_aug, hi_auto, hi_aug], ["green", "automate", "augment"],
                     "low")


def task_family(tasks, *, definition: str = "figure3") -> np.ndarray:
    """``"math"`` or ``"general"`` per OLMES task id. ``definition="figure3"`` counts
    quantitative MMLU subjects (statistics, physics, econometrics, formal logic) as math, as
    Figure 3 does; ``"robustness"`` only the mathematics ones, as robustness set 1 does."""
    if definition == "figure3":
        is_math = [bool(_MATH_FIGURE3.match(str(t))) for t in tasks]
    elif definition == "robustness":
        is_math = [str(t) in _MATH_ROBUSTNESS for t in tasks]
    else:
        raise ValueError(f"definition must be 'figure3' or 'robustness', got {definition!r}")
    return np.where(is_math, "math", "general")


def dominated_by(points, others) -> np.ndarray:
    """Count, for each row of ``points`` (n, 2), the rows of ``others`` (m, 2) that Pareto-
    dominate it (≥ on both coordinates, > on one). Vectorised: an (n, m) comparison."""
    a, b = np.asarray(points, float), np.asarray(others, float)
    if np.isnan(a).any() or np.isnan(b).any():
        raise ValueError("dominance needs finite welfare on both axes; drop the items without "
                         "a welfare first (and say how many)")
    ge = (b[None, :, 0] >= a[:, None, 0]) & (b[None, :, 1] >= a[:, None, 1])
    gt = (b[None, :, 0] > a[:, None, 0]) | (b[None, :, 1] > a[:, None, 1])
    return (ge & gt).sum(axis=1)


def pareto_frontier(points: pd.DataFrame, x: str = "w_auto", y: str = "w_aug") -> pd.Series:
    """``on_frontier``: True for the rows of ``points`` no other row dominates in (x, y)."""
    xy = points[[x, y]].to_numpy(float)
    return pd.Series(dominated_by(xy, xy) == 0, index=points.index, name="on_frontier")


def _on_both_axes(w: pd.DataFrame) -> tuple[pd.DataFrame, pd.Index]:
    """The rows of a welfare table with a welfare on both axes, and the index of the others
    (an item ranked from one perspective only, or on dropped concepts only): comparisons need
    both axes, and the callers put the others on record."""
    gaps = w[["w_auto", "w_aug"]].isna().any(axis=1)
    return w[~gaps], w.index[gaps]


def _welfare(loadings, concept_scores, **options) -> pd.DataFrame:
    """:func:`welfare_table`, rounded to ``TIE_DECIMALS`` so that equal sums are equal."""
    return welfare_table(loadings, concept_scores, **options).round(TIE_DECIMALS)


@dataclass(frozen=True)
class ConceptQuadrants:
    """Figure 2. ``concepts``: one row per kept GWA (``gwa, p_auto_15, p_aug_15, quadrant``
    and the fraction of items whose top-k ranking includes it, ``loading_automation``,
    ``loading_augmentation``). ``quadrants``: per (perspective, quadrant), ``n_gwas``,
    ``mean_loading``, ``max_loading``, ``n_gwas_loaded_10pct``, ``gwas_loaded_10pct`` and
    ``slot_share_pct`` (share of the judge's top-k slots on kept GWAs that land there)."""

    concepts: pd.DataFrame
    quadrants: pd.DataFrame
    n_items: dict


def concept_quadrants(concept_scores: pd.DataFrame, loadings: pd.DataFrame, *,
                      judge: str = "claude", threshold: float = 3.5,
                      top_k: int = 5) -> ConceptQuadrants:
    """Figure 2: where the judge loads items on the worker-desire plane.

    Args:
        concept_scores: ``release.concept_scores`` (by ``concept_id``; ``dropped`` GWAs are
            not plotted).
        loadings: ``release.loadings`` (long rankings).
        judge, threshold, top_k: the judge, the quadrant split on the [1, 5] scores, and the
            ranks that count as loading.
    """
    scores = concept_scores.reset_index() if "concept_id" not in concept_scores else concept_scores
    kept = scores[~scores["dropped"].astype(bool)].set_index("concept_id")
    concepts = kept[["gwa", "p_auto_15", "p_aug_15"]].copy()
    concepts["quadrant"] = quadrant_of(concepts["p_auto_15"], concepts["p_aug_15"], threshold)
    mine = loadings[loadings["judge"] == judge]
    n_items, rows = {}, []
    for persp in PERSPECTIVES:
        rk = mine[mine["perspective"] == persp]
        n = len(rk[["task", "doc_id"]].drop_duplicates())
        if n == 0:
            raise ValueError(f"loadings has no {persp} rankings by judge {judge!r}")
        n_items[persp] = n
        top = rk[rk["rank"] <= top_k]
        frac = top.drop_duplicates(["task", "doc_id", "concept_id"]).groupby("concept_id").size()
        concepts[f"loading_{persp}"] = frac.reindex(concepts.index, fill_value=0) / n
        slots = top["concept_id"].map(concepts["quadrant"]).dropna()  # dropped GWAs: no slot
        for q in QUADRANTS:
            sub = concepts.loc[concepts["quadrant"] == q, f"loading_{persp}"]
            loaded = sub[sub >= 0.10].index
            rows.append(dict(perspective=persp, quadrant=q, label=QUADRANTS[q][0],
                             n_gwas=len(sub), mean_loading=sub.mean() if len(sub) else 0.0,
                             max_loading=sub.max() if len(sub) else 0.0,
                             n_gwas_loaded_10pct=len(loaded),
                             gwas_loaded_10pct=";".join(loaded),
                             slot_share_pct=100.0 * (slots == q).mean()))
    quads = pd.DataFrame(rows).set_index(["perspective", "quadrant"])
    return ConceptQuadrants(concepts, quads, n_items)


def _cluster_gap_draws(values, clusters, is_math, n_resamples, seed):
    """Family-mean gaps (general − math) under cluster permutations and cluster bootstraps.

    Clusters are tasks, in order of first appearance. The random draws follow the authors'
    stream (a NumPy Generator seeded ``seed``: ``n_resamples`` cumulative shuffles of the
    cluster labels; a second Generator seeded ``seed + 1`` resampling math then general tasks
    per replicate), so their p-values and intervals are reproduced exactly; the means of all
    replicates are then one matrix product each.
    """
    codes, uniq = pd.factorize(np.asarray(clusters))
    sums = np.bincount(codes, weights=values)
    counts = np.bincount(codes).astype(float)
    fam = pd.Series(is_math).groupby(codes).first().to_numpy()
    rng = np.random.default_rng(seed)
    order, perms = np.arange(len(uniq)), np.empty((n_resamples, len(uniq)), dtype=np.int64)
    for b in range(n_resamples):  # the draws only; cheap next to the statistics
        rng.shuffle(order)
        perms[b] = order
    math_b = fam[perms].astype(float)
    perm_gap = (((1 - math_b) @ sums) / ((1 - math_b) @ counts)
                - (math_b @ sums) / (math_b @ counts))
    m_ids, g_ids = np.flatnonzero(fam), np.flatnonzero(~fam)
    rng = np.random.default_rng(seed + 1)
    pick_m = np.empty((n_resamples, len(m_ids)), dtype=np.int64)
    pick_g = np.empty((n_resamples, len(g_ids)), dtype=np.int64)
    for b in range(n_resamples):
        pick_m[b] = rng.integers(0, len(m_ids), len(m_ids))
        pick_g[b] = rng.integers(0, len(g_ids), len(g_ids))
    m_take, g_take = m_ids[pick_m], g_ids[pick_g]
    boot_gap = (sums[g_take].sum(1) / counts[g_take].sum(1)
                - sums[m_take].sum(1) / counts[m_take].sum(1))
    return perm_gap, boot_gap


@dataclass(frozen=True)
class WelfareFrontier:
    """Figure 3. ``items``: per item, rescaled ``w_auto, w_aug``, ``family``, ``on_frontier``
    and how many general / math / any items dominate it. ``axes``: per welfare axis, family
    means and medians, the gap (general − math), its cluster-bootstrap 95 % interval, the
    cluster-permutation p-value, and the i.i.d. KS and Mann–Whitney tests. ``headline``: the
    counts the paper quotes (frontier size and make-up, % of math items dominated)."""

    items: pd.DataFrame
    axes: pd.DataFrame
    headline: dict


def min_resamples(alpha: float = 0.05) -> int:
    """Fewest bootstrap replicates for a percentile interval at level ``1 - alpha``: 2.5
    expected beyond each end (``5 / alpha``, 100 at 95 %, as ``compare`` asks)."""
    return int(np.ceil(5 / alpha - 1e-9))


def welfare_frontier(welfare: pd.DataFrame, *, rescale: bool = True, n_resamples: int = 10_000,
                     seed: int = 42, alpha: float = 0.05) -> WelfareFrontier:
    """Figure 3: math against general-knowledge items in welfare space.

    Args:
        welfare: ``release.welfare`` (``w_auto, w_aug`` by ``(task, doc_id)``, raw units).
        rescale: map welfare to [1, 5] by the fixed bounds (:func:`rescale_welfare`), as the
            figure does; dominance and ranks do not depend on it, means do.
        n_resamples, seed, alpha: cluster permutations and bootstrap replicates (clusters are
            tasks; at least :func:`min_resamples` ``(alpha)``, 100 at the default), their seed,
            and ``1 -`` the interval's level.
    """
    from scipy import stats

    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    fewest = min_resamples(alpha)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer) \
            or n_resamples < fewest:
        raise ValueError(
            f"n_resamples must be a whole number of at least {fewest}, got {n_resamples!r}: "
            f"the {1 - alpha:.0%} interval's ends are the {alpha / 2:g} and {1 - alpha / 2:g} "
            f"quantiles of the replicates, and with fewer than {fewest} under 2.5 of them lie "
            "beyond each end, so the interval need not even contain the estimate; pass "
            f"{fewest} or more (the paper: 10000)")
    flat = welfare.reset_index()
    if flat[["w_auto", "w_aug"]].isna().any().any():
        raise ValueError("welfare: some items lack w_auto or w_aug; Figure 3 needs both")
    items = flat[["task", "doc_id", "w_auto", "w_aug"]].copy()
    if rescale:
        items[["w_auto", "w_aug"]] = rescale_welfare(items[["w_auto", "w_aug"]])
    items["family"] = task_family(items["task"], definition="figure3")
    xy = items[["w_auto", "w_aug"]].to_numpy()
    is_math = (items["family"] == "math").to_numpy()
    if is_math.all() or not is_math.any():
        raise ValueError("welfare: Figure 3 compares math and general items; one family is empty")
    items["on_frontier"] = dominated_by(xy, xy) == 0
    items["n_dominated_by_general"] = dominated_by(xy, xy[~is_math])
    items["n_dominated_by_math"] = dominated_by(xy, xy[is_math])
    items["n_dominated_by_any"] = dominated_by(xy, xy)
    rows = []
    for axis in ("w_auto", "w_aug"):
        v = items[axis].to_numpy()
        m, g = v[is_math], v[~is_math]
        gap = g.mean() - m.mean()
        perm, boot = _cluster_gap_draws(v, items["task"], is_math, n_resamples, seed)
        ks = stats.ks_2samp(m, g, alternative="two-sided")
        mw = stats.mannwhitneyu(m, g, alternative="less")
        rows.append(dict(
            axis=axis, math_mean=m.mean(), math_median=np.median(m), general_mean=g.mean(),
            general_median=np.median(g), gap_general_minus_math=gap,
            gap_ci_lo=np.quantile(boot, alpha / 2), gap_ci_hi=np.quantile(boot, 1 - alpha / 2),
            # a permutation reproducing the observed split gives the same gap up to rounding
            cluster_permutation_p=(np.sum(perm >= gap - 1e-12 * max(1.0, abs(gap))) + 1)
            / (n_resamples + 1),
            ks_statistic=ks.statistic, ks_p_iid=ks.pvalue, mann_whitney_p_iid=mw.pvalue))
    front = items[items["on_frontier"]]
    m_items, g_items = items[is_math], items[~is_math]
    headline = dict(
        n_items=len(items), n_math=int(is_math.sum()), n_general=int((~is_math).sum()),
        n_math_tasks=int(m_items["task"].nunique()),
        n_general_tasks=int(g_items["task"].nunique()),
        frontier_n=len(front), frontier_n_math=int((front["family"] == "math").sum()),
        frontier_n_general=int((front["family"] == "general").sum()),
        pct_math_dominated_by_general=100 * float((m_items["n_dominated_by_general"] > 0).mean()),
        pct_general_dominated_by_math=100 * float((g_items["n_dominated_by_math"] > 0).mean()),
        median_general_dominators_per_math=float(np.median(m_items["n_dominated_by_general"])))
    return WelfareFrontier(items.set_index(["task", "doc_id"]),
                           pd.DataFrame(rows).set_index("axis"), headline)


def _pct_math_dominated(w: pd.DataFrame) -> float:
    """% of math items a general item dominates; NaN (not 0 %) when either family is empty."""
    m = w["family"] == "math"
    if m.all() or not m.any():
        return float("nan")
    xy = w[["w_auto", "w_aug"]].to_numpy(float)
    return 100.0 * float((dominated_by(xy[m.to_numpy()], xy[~m.to_numpy()]) > 0).mean())


def _compare(default: pd.DataFrame, variant: pd.DataFrame) -> dict:
    from scipy import stats

    both = default.merge(variant, left_index=True, right_index=True,
                         suffixes=("_def", "_var")).dropna()
    f_def = set(default.index[pareto_frontier(default)])
    f_var = set(variant.index[pareto_frontier(variant)])
    out = dict(n_compared=len(both))
    for axis in ("w_auto", "w_aug"):
        a, b = both[f"{axis}_def"], both[f"{axis}_var"]
        out[f"spearman_{axis[2:]}"] = stats.spearmanr(a, b)[0]
        out[f"kendall_{axis[2:]}"] = stats.kendalltau(a, b)[0]
    union = f_def | f_var
    out.update(frontier_size_default=len(f_def), frontier_size_variant=len(f_var),
               frontier_overlap=len(f_def & f_var),
               frontier_jaccard=len(f_def & f_var) / len(union) if union else float("nan"),
               pct_math_dominated_default=_pct_math_dominated(default),
               pct_math_dominated_variant=_pct_math_dominated(variant))
    return out


def welfare_robustness(loadings: pd.DataFrame, concept_scores: pd.DataFrame,
                       concept_scores_mean: pd.DataFrame | None = None, *,
                       variants=ROBUSTNESS_VARIANTS) -> pd.DataFrame:
    """Robustness set 1: each pipeline perturbation against the headline welfare (Claude judge,
    top-5, reciprocal rank weights, "share ≥ 3.5" GWA scores) on the same items.

    Per variant: ``spearman_auto/aug``, ``kendall_auto/aug`` (τ-b), frontier sizes, overlap
    and Jaccard, and the % of math items (set 1's narrower math) dominated by a general item
    under the default and the variant. Variants whose input is absent from the release (the
    OpenAI rankings, the flat-mean scores) are skipped and listed in ``.attrs["skipped"]``;
    items without a welfare under a variant would be listed in ``.attrs["items_without_welfare"]``.
    """

    def welfare(judge, top_k, weighting, scores):
        w = _welfare(loadings, scores, judge=judge, top_k=top_k, weighting=weighting)
        w["family"] = task_family(w.index.get_level_values("task"), definition="robustness")
        return w

    default = welfare("claude", 5, "reciprocal", concept_scores)
    rows, skipped, lacking = [], [], {}
    for label, judge, top_k, weighting, which in variants:
        scores = concept_scores if which == "headline" else concept_scores_mean
        if scores is None or not (loadings["judge"] == judge).any():
            skipped.append(label)
            continue
        var, missing = _on_both_axes(welfare(judge, top_k, weighting, scores))
        if len(missing):  # kept on record; dominance needs both axes
            lacking[label] = len(missing)
        rows.append(dict(variant=label, **_compare(default, var)))
    out = pd.DataFrame(rows).set_index("variant")
    out.attrs.update(skipped=skipped, items_without_welfare=lacking)
    return out


@dataclass(frozen=True)
class HeldoutCheck:
    """Robustness set 2. ``loading_mass``: per (rater, perspective), ``n_items`` and the % of
    top-k slots on kept GWAs in each quadrant (split at ``threshold``). ``gaps``: per rater,
    math and general mean welfare per axis (raw units), the gaps, the frontier's make-up, the
    % of math items a general item dominates, and the items left out for want of a welfare on
    both axes (``n_without_welfare``, ``items_without_welfare``: ranked from one perspective
    only, or on dropped concepts only)."""

    loading_mass: pd.DataFrame
    gaps: pd.DataFrame


def heldout_rater_check(heldout: pd.DataFrame, concept_scores: pd.DataFrame, *,
                        threshold: float = 3.0, top_k: int = 5) -> HeldoutCheck:
    """Robustness set 2 on ``release.heldout`` (long rankings: ``item, rater, perspective,
    rank, concept_id, family``), scored with the headline aggregation (top-k reciprocal)."""
    need = {"item", "rater", "perspective", "rank", "concept_id", "family"}
    if need - set(heldout.columns):
        raise ValueError(f"heldout lacks column(s) {sorted(need - set(heldout.columns))}")
    scores = concept_scores.reset_index() if "concept_id" not in concept_scores else concept_scores
    kept = scores[~scores["dropped"].astype(bool)]
    quad = pd.Series(quadrant_of(kept["p_auto_15"], kept["p_aug_15"], threshold),
                     index=kept["concept_id"].to_numpy())
    raters = list(dict.fromkeys(heldout["rater"]))
    for rater in raters:
        have = set(heldout.loc[heldout["rater"] == rater, "perspective"])
        lacking = [p for p in PERSPECTIVES if p not in have]
        if lacking:
            raise ValueError(
                f"heldout: rater {rater!r} has no {lacking[0]} rankings (heldout_raters/"
                f"{rater}_{lacking[0]}.jsonl); each rater's welfare needs both perspectives: "
                "add that file, or remove the rater's other file(s) to leave the rater out")
    mass, gaps = [], []
    for rater in raters:
        mine = heldout[heldout["rater"] == rater]
        for persp in PERSPECTIVES:
            rk = mine[mine["perspective"] == persp]
            slots = rk.loc[rk["rank"] <= top_k, "concept_id"].map(quad).dropna()
            mass.append(dict(rater=rater, perspective=persp, n_items=rk["item"].nunique(),
                             **{q: 100.0 * float((slots == q).mean()) for q in QUADRANTS}))
        w, missing = _on_both_axes(_welfare(mine[["item", "perspective", "rank", "concept_id"]],
                                            concept_scores, judge=None, top_k=top_k))
        without = sorted(map(str, missing))  # counted in n_without_welfare
        w["family"] = mine.groupby("item")["family"].first().reindex(w.index)
        w = w[w["family"].isin(["math", "general"])]
        m, g = w[w["family"] == "math"], w[w["family"] == "general"]
        front = w[pareto_frontier(w)]
        gaps.append(dict(
            rater=rater, n_math=len(m), n_general=len(g), n_without_welfare=len(without),
            items_without_welfare=", ".join(without),
            math_mean_w_auto=m["w_auto"].mean(), general_mean_w_auto=g["w_auto"].mean(),
            gap_w_auto=g["w_auto"].mean() - m["w_auto"].mean(),
            math_mean_w_aug=m["w_aug"].mean(), general_mean_w_aug=g["w_aug"].mean(),
            gap_w_aug=g["w_aug"].mean() - m["w_aug"].mean(),
            frontier_n=len(front), frontier_n_math=int((front["family"] == "math").sum()),
            frontier_n_general=int((front["family"] == "general").sum()),
            pct_math_dominated=_pct_math_dominated(w)))
    return HeldoutCheck(pd.DataFrame(mass).set_index(["rater", "perspective"]),
                        pd.DataFrame(gaps).set_index("rater"))
