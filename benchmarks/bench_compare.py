"""Coverage of accuracy intervals and power of paired tests, beside SciPy, plus LiveCodeBench.

Cells: N items in {10, 30, 100, 300, 1000} x accuracy p in {0.02, 0.5, 0.98} x design:

* ``independent``: each item one 0/1 outcome, X ~ Binomial(N, p).  Coverage is exact, not
  simulated: the intervals of all N + 1 possible outcomes are computed once (ours through
  ``platinum_jax.compare.accuracy``, the peers through ``scipy.stats.binomtest(...)
  .proportion_ci`` and, where installed, statsmodels' ``proportion_confint``) and weighted by the binomial probabilities.  Because X is discrete, the
  coverage at one p jumps as p moves; ``local`` is the mean coverage over 21 accuracies in
  [0.8 p, 1.2 p] (mirrored near 1), which is what a user with an unknown p experiences.
* ``clustered``: items in clusters of 5 sharing a cluster accuracy p_c ~ Beta with mean p and
  intra-cluster correlation 0.2; coverage of p over ``reps`` simulated data sets (Monte Carlo
  error ±√(0.09/reps)), ours (default, and CLT with the cluster-robust variance) beside a CLT
  interval that ignores the clusters.

The default interval is Brown, Cai and DasGupta's modified Jeffreys (Beta posterior) interval
on counts, or on effective counts under clustering; CLT intervals are shown beside it.  Then the paired test's false
positive rate on null pairs (two models drawing from the same per-item accuracies) and its
power beside an unpaired z-test on correlated pairs with a true difference, and the
distinguishable LiveCodeBench pairs and the minimum detectable difference (MDAD) of a random
100-item subset of its 400 common code-generation items.

Ends with one JSON line per case: ``name``, ``ours_s``, ``baseline_s`` (SciPy for the same
intervals, or the naive computation), ``ratio = baseline_s / ours_s``, ``max_abs_diff`` (our
Wilson / Clopper-Pearson ends against SciPy's, or our clustered SE against a pandas
recomputation), with the coverages and rates beside them.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from platinum_jax import compare as cmp

LCB = Path("../shared/data/item-level/livecodebench/responses.csv")


def _frame(y: np.ndarray, cluster=None) -> pd.DataFrame:
    S, N = y.shape
    df = pd.DataFrame({"subject": np.repeat(np.arange(S), N).astype(str),
                       "item": np.tile(np.arange(N), S).astype(str), "response": y.ravel()})
    if cluster is not None:
        df["cluster"] = np.tile(cluster, S).astype(str)
    return df


def _by_subject(acc: pd.DataFrame, S: int) -> pd.DataFrame:
    return acc.xs("(all)", level="group").loc[[str(s) for s in range(S)]]


def independent_cell(N: int, p: float, level: float) -> dict:
    x = np.arange(N + 1)
    y = (np.arange(N)[None, :] < x[:, None]).astype(float)  # outcome x: x successes
    df = _frame(y)
    t0 = time.perf_counter()
    ours = {m: _by_subject(cmp.accuracy(df, method=m, level=level), N + 1)
            for m in ("auto", "clt", "wilson", "clopper-pearson")}
    ours_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    peer = {m: np.array([stats.binomtest(int(k), N).proportion_ci(level, method=m)[:]
                         for k in x]) for m in ("wilson", "exact")}
    base_s = time.perf_counter() - t0
    diff = max(np.abs(ours["wilson"][["lo", "hi"]].to_numpy() - peer["wilson"]).max(),
               np.abs(ours["clopper-pearson"][["lo", "hi"]].to_numpy() - peer["exact"]).max())

    def cover(lo, hi, q):
        return float(stats.binom.pmf(x, N, q)[(lo <= q) & (q <= hi)].sum())

    grid = np.linspace(0.8 * min(p, 1 - p), 1.2 * min(p, 1 - p), 21)
    grid = grid if p <= 0.5 else 1 - grid
    out = {"name": f"coverage_independent_N{N}_p{p}", "ours_s": ours_s, "baseline_s": base_s,
           "max_abs_diff": float(diff), "default": str(ours["auto"]["method"].iat[0])}
    ends = {"default": ours["auto"][["lo", "hi"]].to_numpy().T,
            "clt": ours["clt"][["lo", "hi"]].to_numpy().T,
            "scipy_wilson": peer["wilson"].T, "scipy_exact": peer["exact"].T}
    try:  # statsmodels' Jeffreys interval (no boundary rule), where it is installed
        from statsmodels.stats.proportion import proportion_confint

        ends["statsmodels_jeffreys"] = np.array(
            proportion_confint(x, N, alpha=1 - level, method="jeffreys"))
    except ImportError:
        pass
    for label, (lo, hi) in ends.items():
        out[f"coverage_{label}"] = round(cover(lo, hi, p), 4)
        out[f"local_{label}"] = round(float(np.mean([cover(lo, hi, q) for q in grid])), 4)
    return out


def clustered_cell(N: int, p: float, level: float, reps: int, rng) -> dict:
    m, icc = 5, 0.2
    G = N // m
    cluster = np.repeat(np.arange(G), m)
    ab = 1 / icc - 1
    pc = rng.beta(p * ab, (1 - p) * ab, (reps, G))[:, cluster]
    y = (rng.random((reps, N)) < pc).astype(float)
    t0 = time.perf_counter()
    df = _frame(y, cluster)
    default = _by_subject(cmp.accuracy(df, level=level), reps)
    clus = _by_subject(cmp.accuracy(df, method="clustered", level=level), reps)
    ours_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    mean = y.mean(1)
    half = stats.norm.ppf(0.5 + level / 2) * y.std(1, ddof=1) / np.sqrt(N)
    base_s = time.perf_counter() - t0
    e = pd.DataFrame(y - mean[:, None]).T.groupby(cluster).sum()
    se = np.sqrt(G / (G - 1) * (e ** 2).sum().to_numpy() / N ** 2)
    diff = float(np.nanmax(np.abs(clus["se"].to_numpy() - se)))

    def cov(lo, hi):
        return round(float(np.mean((np.asarray(lo) <= p) & (p <= np.asarray(hi)))), 4)

    return {"name": f"coverage_clustered_N{N}_p{p}", "ours_s": ours_s, "baseline_s": base_s,
            "max_abs_diff": diff, "reps": reps, "clusters": G,
            "coverage_default": cov(default["lo"], default["hi"]),
            "coverage_clustered_clt": cov(clus["lo"], clus["hi"]),
            "coverage_clt_ignoring_clusters": cov(mean - half, mean + half)}


def paired_cases(reps: int, rng) -> list[dict]:
    out = []
    for N, delta in ((100, 0.0), (300, 0.0), (100, 0.1), (300, 0.05)):
        p_item = rng.beta(0.8, 0.8, (reps, N))  # shared item difficulty: correlated models
        a = (rng.random((reps, N)) < np.clip(p_item + delta / 2, 0, 1)).astype(float)
        b = (rng.random((reps, N)) < np.clip(p_item - delta / 2, 0, 1)).astype(float)
        y = np.empty((2 * reps, N))
        y[0::2], y[1::2] = a, b
        df = _frame(y)
        df["group"] = (df["subject"].astype(int) // 2).astype(str)
        df["subject"] = np.where(df["subject"].astype(int) % 2 == 0, "A", "B")
        df["item"] = df["group"] + "/" + df["item"]
        t0 = time.perf_counter()
        pairs = cmp.compare_pairs(df, replicates=200)
        ours_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        d = a - b
        p_unp = 2 * stats.norm.sf(np.abs(d.mean(1)) / np.sqrt(
            (a.var(1, ddof=1) + b.var(1, ddof=1)) / N))
        p_rel = stats.ttest_rel(a, b, axis=1).pvalue
        base_s = time.perf_counter() - t0
        kind = "false_positive" if delta == 0 else "power"
        # groups come back in label order ("0", "1", "10", ...): align them with the draws
        by_group = pairs["p_paired_t"].droplevel(["a", "b"])
        ours_p = by_group.set_axis(by_group.index.astype(int)).sort_index().to_numpy()
        out.append({
            "name": f"paired_{kind}_N{N}_delta{delta}", "ours_s": ours_s, "baseline_s": base_s,
            "max_abs_diff": float(np.nanmax(np.abs(ours_p - p_rel))),
            "reps": reps, "rate_paired_t": float((pairs["p_paired_t"] < 0.05).mean()),
            "rate_mcnemar": float((pairs["p_mcnemar"] < 0.05).mean()),
            "rate_unpaired_z": float((p_unp < 0.05).mean()),
            "mean_rho": float(pairs["rho"].mean())})
    return out


def livecodebench_case(rng) -> dict:
    t0 = time.perf_counter()
    pairs = cmp.compare_pairs(LCB)
    df = pd.read_csv(LCB)
    code = df[df.benchmark == "livecodebench_codegen"]
    per_item = code.groupby("item")["model"].nunique()
    common = per_item[per_item == per_item.max()].index
    subset = rng.choice(np.asarray(common), 100, replace=False)
    sub = cmp.mdad(LCB, items=subset)
    full = cmp.mdad(LCB, items=common)
    ours_s = time.perf_counter() - t0
    g = pairs.groupby(level="group")
    out = {"name": "livecodebench_pairs_and_mdad", "ours_s": ours_s, "baseline_s": float("nan"),
           "max_abs_diff": float("nan"),
           "pairs": {k: int(v) for k, v in g.size().items()},
           "distinguishable_bh": {k: int(v) for k, v in g["significant_bh"].sum().items()},
           "distinguishable_holm": {k: int(v) for k, v in g["significant_holm"].sum().items()},
           "common_codegen_items": len(common),
           "mdad_400_median": float(full["mde"].median()),
           "mdad_100_median": float(sub["mde"].median()),
           "mdad_100_unpaired_median": float(sub["mde_unpaired"].median()),
           "mdad_100_rho_median": float(sub["rho"].median()),
           "pairs_beyond_mdad_100": float(sub["detectable"].mean())}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer simulated data sets")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    reps = 200 if args.quick else 2000
    cases = []
    for N in (10, 30, 100, 300, 1000):
        for p in (0.02, 0.5, 0.98):
            cases.append(independent_cell(N, p, 0.9))
            cases.append(clustered_cell(N, p, 0.9, reps, rng))
    cases += paired_cases(500 if args.quick else 2000, rng)
    if LCB.exists():
        cases.append(livecodebench_case(rng))
    print(f"{'case':40s} {'default':>8s} {'clt':>8s} {'other':>8s}")
    for c in cases:
        if c["name"].startswith("coverage_independent"):
            print(f"{c['name']:40s} {c['coverage_default']:8.3f} {c['coverage_clt']:8.3f} "
                  f"{c['coverage_scipy_wilson']:8.3f}  local {c['local_default']:.3f} / "
                  f"{c['local_clt']:.3f} / wilson {c['local_scipy_wilson']:.3f}")
        elif c["name"].startswith("coverage_clustered"):
            print(f"{c['name']:40s} {c['coverage_default']:8.3f} "
                  f"{c['coverage_clustered_clt']:8.3f} {c['coverage_clt_ignoring_clusters']:8.3f}")
        elif c["name"].startswith("paired"):
            print(f"{c['name']:40s} paired-t {c['rate_paired_t']:.3f}  McNemar "
                  f"{c['rate_mcnemar']:.3f}  unpaired z {c['rate_unpaired_z']:.3f}")
    for c in cases:
        c["ratio"] = c["baseline_s"] / c["ours_s"] if c["ours_s"] else float("nan")
        print(json.dumps(c))


if __name__ == "__main__":
    main()
