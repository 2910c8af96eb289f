"""Subset minus general, on simulated worlds with known truth: do the intervals of
``domain_index``'s difference (its wild bootstrap, ``difference_draws``) cover, and do its
adjusted p-values hold their level? The row bootstrap's paired percentiles are run beside it.

Each world: ``--models`` models and ``--benchmarks`` benchmarks (the first the anchor, scored by
every model; each other pair kept with probability ``--density``), ``C ~ N(0, 1.2^2)``,
``D ~ N(0, 1)``, ``alpha ~ U(0.7, 2.5)``, scores ``clip(sigmoid(alpha (C + delta - D)) + s eps,
0, 1)`` with ``s = --noise``. The basket is the last ``--basket`` benchmarks. In a *null* world
``delta = 0``; in a *shifted* world ``--shifted`` models have ``delta = --shift`` on the basket
(a model better on one set of benchmarks than the rest: the signal the difference looks for).

The truth of each model's difference is the same procedure (the stitching fit, then the basket
projection) applied to the *expected* scores, ``E clip(mu + s eps, 0, 1)`` in closed form: what
the estimator aims at with unlimited data. Reported per kind of world: the coverage of the
``--level`` intervals (over models with a test), the share of the null models flagged at
``--alpha`` raw and after Holm's adjustment, the share of worlds with any Holm rejection (the
family-wise error, null worlds), and the share of shifted models found (power).

Beside it, per world, the row bootstrap (``platinum_jax.stitching.bootstrap``) with each
replicate's basket reprojected on its own resample (weights from its seed): the percentile
interval of the paired differences, and its percentile p-value.

Side by side, on one world: the difference's wild bootstrap (``--peer-replicates`` refits) by the
package against the same simulated scores refitted and projected by SciPy (``least_squares`` on
the paper's objective, then a scalar minimiser per model); one JSON line per case at the end
(``name``, ``ours_s``, ``baseline_s``, ``ratio``, ``max_abs_diff`` of the standard errors, the
figures).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd
from scipy.optimize import least_squares, minimize_scalar
from scipy.special import expit
from scipy.stats import norm


def _expected_clipped(mu, s):
    """E clip(mu + s Z, 0, 1) for Z standard normal, in closed form."""
    a, b = (0.0 - mu) / s, (1.0 - mu) / s
    return mu * (norm.cdf(b) - norm.cdf(a)) + s * (norm.pdf(a) - norm.pdf(b)) + norm.sf(b)


def world(rng, args, shifted: bool):
    """A world's observed and expected score tables and its shifted models."""
    from platinum_jax.data import ScoreTable

    nm, nb = args.models, args.benchmarks
    cap, diff, slope = rng.normal(0, 1.2, nm), rng.normal(0, 1, nb), rng.uniform(0.7, 2.5, nb)
    diff[0], slope[0] = 0.0, 1.0
    basket = np.arange(nb - args.basket, nb)
    keep = rng.random((nm, nb)) < args.density
    keep[:, 0] = True
    for i in range(nm):  # every model on at least one basket and one other non-anchor benchmark
        if not keep[i, basket].any():
            keep[i, rng.choice(basket)] = True
        if not keep[i, 1:nb - args.basket].any():
            keep[i, 1 + rng.integers(nb - 1 - args.basket)] = True
    delta = np.zeros(nm)
    moved = rng.choice(nm, args.shifted, replace=False) if shifted else np.array([], int)
    delta[moved] = args.shift
    mi, bi = np.nonzero(keep)
    mu = expit(slope[bi] * (cap[mi] + delta[mi] * np.isin(bi, basket) - diff[bi]))
    y = np.clip(mu + args.noise * rng.standard_normal(mi.size), 0.0, 1.0)
    names = np.array([f"m{i:03d}" for i in range(nm)])
    benches = np.array([f"b{j:02d}" for j in range(nb)])
    frame = pd.DataFrame({"model": names[mi], "benchmark": benches[bi], "score": y})
    expected = frame.assign(score=_expected_clipped(mu, args.noise))
    return (ScoreTable.from_frame(frame, name="world"),
            ScoreTable.from_frame(expected, name="expected"), list(benches[basket]),
            set(names[moved]))


def paired_row_bootstrap(fit, basket, replicates, seed, level):
    """The row bootstrap's paired differences: percentile interval and p-value per model."""
    import jax.numpy as jnp

    from platinum_jax.analysis._baskets import _project_draws, _ridge
    from platinum_jax.analysis._eci import parameter_draws
    from platinum_jax.inference import resample_counts
    from platinum_jax.stitching import bootstrap

    boot = bootstrap(fit, replicates, seed=seed, level=level)
    t = fit.table
    keep = t.data["benchmark"].isin(basket).to_numpy()
    w = resample_counts(seed, replicates, t.n_scores)[boot.converged]
    c, d, a = parameter_draws(boot)
    mi, bi = t.model_index[keep], t.benchmark_index[keep]
    rho, _ = _ridge(fit, None)
    cb, _ = _project_draws(jnp.asarray(c), jnp.asarray(d), jnp.asarray(a), jnp.asarray(mi),
                           jnp.asarray(bi), jnp.asarray(t.scores[keep]), jnp.asarray(w[:, keep]),
                           rho, jnp.asarray(np.mean(np.concatenate([c, d], 1), 1)),
                           t.n_models, 200)
    inside = np.stack([np.bincount(mi, weights=x[keep], minlength=t.n_models) for x in w])
    outside = np.stack([np.bincount(t.model_index[~keep], weights=x[~keep], minlength=t.n_models)
                        for x in w])
    diff = np.where((inside > 0) & (outside > 0), np.asarray(cb) - c, np.nan)
    q = (1 - level) / 2
    with np.errstate(all="ignore"):
        lo, hi = np.nanquantile(diff, [q, 1 - q], axis=0)
    n = np.isfinite(diff).sum(0)
    p = np.minimum(1, 2 * (np.minimum((diff <= 0).sum(0), (diff >= 0).sum(0)) + 1) / (n + 1))
    return pd.DataFrame({"lo": lo, "hi": hi, "p": p}, index=list(t.models))


def one_world(rng, args, shifted, seed):
    from platinum_jax import analysis as an
    from platinum_jax.models.rosetta import BenchmarkAnchor
    from platinum_jax.stitching import fit_stitching

    table, expected, basket, moved = world(rng, args, shifted)
    anchor = BenchmarkAnchor("b00")
    truth = an.domain_index(fit_stitching(expected, anchor), basket, eci_anchors=None).models
    fit = fit_stitching(table, anchor)
    m = an.domain_index(fit, basket, eci_anchors=None, level=args.level,
                        difference_draws=args.replicates, seed=seed).models
    m = m[m["p_value"].notna()]
    t = truth["difference"].reindex(m.index)
    row = paired_row_bootstrap(fit, basket, args.replicates, seed, args.level).reindex(m.index)
    return pd.DataFrame({
        "covered": (m["difference_lower"] <= t) & (t <= m["difference_upper"]),
        "raw": m["p_value"] < args.alpha, "holm": m["p_adjusted"] < args.alpha,
        "row_covered": (row["lo"] <= t) & (t <= row["hi"]), "row_raw": row["p"] < args.alpha,
        "shifted": m.index.isin(sorted(moved)), "truth": t, "estimate": m["difference"]})


def scipy_difference(table, basket, l2, theta, scores):
    """One simulated table by SciPy: the full refit, then each model's basket projection."""
    mi, bi, y = table.model_index, table.benchmark_index, scores
    nm, nb = table.n_models, table.n_benchmarks
    n = nm + 2 * nb - 1

    def unpack(x):
        return x[:nm], np.insert(x[nm:nm + nb - 1], 0, 0.0), np.insert(x[nm + nb - 1:], 0, 1.0)

    def resid(x):
        c, d, a = unpack(x)
        centre = np.mean(np.concatenate([c, d]))
        pen = np.sum((c - centre) ** 2) + np.sum((d - centre) ** 2) + np.sum(a[1:] ** 2)
        return np.append(expit(a[bi] * (c[mi] - d[bi])) - y, np.sqrt(l2 * pen / n))

    c, d, a = unpack(least_squares(resid, theta, xtol=1e-12, ftol=1e-12, gtol=1e-12).x)
    rows = np.isin(np.asarray(table.benchmarks)[bi], basket)
    centre, out = np.mean(np.concatenate([c, d])), np.full(nm, np.nan)
    for k in range(nm):
        sel = rows & (mi == k)
        if not sel.any():
            continue
        dd, aa, yy = d[bi[sel]], a[bi[sel]], y[sel]

        def f(x, aa=aa, dd=dd, yy=yy):
            return 0.5 * np.sum((expit(aa * (x - dd)) - yy) ** 2) + 0.5 * l2 / n * (x - centre) ** 2

        out[k] = minimize_scalar(f, bracket=(c[k] - 1, c[k] + 1), tol=1e-12).x - c[k]
    return out


def peer_case(args):
    import jax

    from platinum_jax import analysis as an
    from platinum_jax.models.rosetta import BenchmarkAnchor
    from platinum_jax.stitching import fit_stitching

    table, _, basket, _ = world(np.random.default_rng(12345), args, shifted=True)
    fit = fit_stitching(table, BenchmarkAnchor("b00"))
    r = args.peer_replicates
    an.domain_index(fit, basket, eci_anchors=None, difference_draws=r, seed=1)  # compile
    t0 = time.perf_counter()
    ours = an.domain_index(fit, basket, eci_anchors=None, difference_draws=r, seed=0).models
    ours_s = time.perf_counter() - t0
    # the same simulated tables (the package's wild signs), refitted by SciPy
    n, k = table.n_scores, fit.theta.size
    yhat = fit.predicted
    from platinum_jax.analysis._baskets import PAD_ROWS

    padded = -(-n // PAD_ROWS) * PAD_ROWS
    signs = np.asarray(jax.random.rademacher(jax.random.PRNGKey(0), (r, padded),
                                             dtype=np.float64))[:, :n]
    sims = np.clip(yhat + np.sqrt(n / (n - k)) * (table.scores - yhat) * signs, 0, 1)
    t0 = time.perf_counter()
    draws = np.stack([scipy_difference(table, basket, fit.l2, np.asarray(fit.theta), y)
                      for y in sims])
    baseline_s = time.perf_counter() - t0
    pos = [table.model_position(x) for x in ours.index]
    sd = draws[:, pos].std(axis=0, ddof=1)
    tested = ours["difference_sd"].notna().to_numpy()
    gap = float(np.max(np.abs(ours["difference_sd"].to_numpy()[tested] - sd[tested])))
    return {"name": f"difference_wild_bootstrap_{r}", "ours_s": round(ours_s, 3),
            "baseline_s": round(baseline_s, 3), "ratio": round(baseline_s / ours_s, 2),
            "max_abs_diff": gap}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worlds", type=int, default=100, help="worlds of each kind (default 100)")
    p.add_argument("--models", type=int, default=100)
    p.add_argument("--benchmarks", type=int, default=16)
    p.add_argument("--basket", type=int, default=5, help="benchmarks in the basket (the last)")
    p.add_argument("--density", type=float, default=0.35)
    p.add_argument("--noise", type=float, default=0.04)
    p.add_argument("--shifted", type=int, default=10, help="shifted models per shifted world")
    p.add_argument("--shift", type=float, default=2.0, help="their capability shift on the basket")
    p.add_argument("--replicates", type=int, default=200,
                   help="simulated refits (and row-bootstrap refits) per world")
    p.add_argument("--level", type=float, default=0.90)
    p.add_argument("--alpha", type=float, default=0.10, help="test level (default 0.10)")
    p.add_argument("--peer-replicates", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    from tqdm.auto import tqdm

    from platinum_jax import enable_float64

    enable_float64()

    rng = np.random.default_rng(args.seed)
    lines, t_all = [], time.perf_counter()
    for kind in ("null", "shifted"):
        frames, t0 = [], time.perf_counter()
        for w in tqdm(range(args.worlds), desc=f"{kind} worlds"):
            frames.append(one_world(rng, args, kind == "shifted", seed=w).assign(world=w))
        res = pd.concat(frames)
        null = res[~res["shifted"]]
        per_world = null.groupby("world")["holm"].any()
        line = {"name": f"subset_difference_{kind}_worlds", "worlds": args.worlds,
                "intervals": int(len(res)), "coverage": round(float(res["covered"].mean()), 4),
                "coverage_world_min": round(float(res.groupby("world")["covered"].mean().min()), 3),
                "null_flagged_raw": round(float(null["raw"].mean()), 4),
                "null_flagged_holm": round(float(null["holm"].mean()), 4),
                "worlds_with_a_false_holm_rejection": round(float(per_world.mean()), 4),
                "level": args.level, "alpha": args.alpha, "seconds": round(time.perf_counter() - t0, 1)}
        line["row_bootstrap_coverage"] = round(float(res["row_covered"].mean()), 4)
        line["row_bootstrap_null_flagged_raw"] = round(float(null["row_raw"].mean()), 4)
        if kind == "shifted":
            line["power_holm"] = round(float(res.loc[res["shifted"], "holm"].mean()), 4)
            line["power_raw"] = round(float(res.loc[res["shifted"], "raw"].mean()), 4)
        print(json.dumps(line), flush=True)
        lines.append(line)
    peer = peer_case(args)
    print(f"total {time.perf_counter() - t_all:.0f} s")
    for line in lines:
        print(json.dumps({"ours_s": line["seconds"], "baseline_s": None, "ratio": None,
                          "max_abs_diff": None, **line}))
    print(json.dumps(peer))


if __name__ == "__main__":
    main()
