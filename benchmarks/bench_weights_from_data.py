"""Optimal weights from evaluation data, checked against truth and timed against dense NumPy.

Two kinds of case, each printed as one JSON line with ``name``, ``ours_s``, ``baseline_s``,
``ratio`` (baseline over ours) and ``max_abs_diff`` (largest difference between our ``v*`` and
NumPy's on the same draws), plus case-specific figures:

* ``world_{kind}_seed{s}``: a synthetic world at the size of the Epoch table used by Ho et al.,
  "A Rosetta Stone for AI Benchmarks" (179 models, 38 benchmarks, about 1,330 scores), generated
  from known primitives (``platinum_jax.design._synthetic``): ``diag`` has a diagonal noise
  covariance, ``corr`` adds a shock shared across benchmarks (orthogonal to the loadings).  The
  Rosetta model is fitted with one noise variance per benchmark (``fit_heteroscedastic``:
  iterated weighted least squares, then Laplace draws), the primitives are derived per draw and
  pushed through ``v*``.  Reported: ``welfare_loss`` = ``(W(v*_true) − W(v̂)) / W(v*_true)``
  with ``v̂`` the posterior mean and ``W`` under the true primitives (goal < 5%), ``corr``
  between ``v̂`` and ``v*_true``, ``coverage`` = share of benchmarks whose true ``v*`` lies in
  the 90% interval (goal 85-95%), and the diagnostic ``z_mean``, ``z_sd`` of the z-scores
  ``(v*_true − v̂)/sd`` over benchmarks (bias and spread in posterior sds: 0 and 1 when the
  posterior is calibrated).  The same figures with the suffix ``_single_noise`` are those of
  the plain Gaussian fit with one noise level for all benchmarks (what the intervals were
  before); in ``corr`` worlds the suffix ``_rank1`` gives them with the residual correlation's
  rank set to the world's 1 instead of chosen by BIC.  With ``--subject-bootstrap R`` the
  suffix ``_subject_bootstrap`` gives them for :func:`platinum_jax.design.bootstrap_subjects`
  (``R`` replicates resampling the models, each refitting the per-benchmark noise weights, the
  noise variances and the residual factor, plus the full-data refit and a 20-group jackknife;
  BCa intervals), the suffix ``_subject_bootstrap_percentile`` the percentile intervals of the
  same replicates, ``misses_subject_bootstrap`` which benchmarks' true ``v*`` fall outside the
  BCa interval and on which side, with its time as ``subject_bootstrap_s``.  ``--small`` runs
  worlds of 100 models × 24 benchmarks instead.  ``ours_s`` is the time
  of the decisions over all draws (v*, flags, welfare at five ``r``; the fit and the primitives
  are timed apart as ``fit_s`` and ``primitives_s``); the baseline is a dense NumPy
  ``solve(M + rΣ, Mw)`` per draw at the one ``r`` on the same primitives.
* ``decisions_4000x1000``: 4,000 draws × 1,000 items, K = 2 abilities, a rank-2 correlated
  noise part, five values of ``r``: our one compiled function (v*, platinum flags, welfare
  against uniform and current weights) against NumPy doing the same per draw with dense
  matrices (``solve`` for v*, ``scipy.linalg.eigh(M, Σ)`` for the concepts of Definition 1).
  NumPy is timed on ``--baseline-draws`` draws and scaled to 4,000 (``baseline_scaled``); its
  ``v*`` and flags are compared with ours on those draws (``flag_mismatches``).

Compilation is excluded from ``ours_s`` (one warm-up call first; ``compile_s`` reports it).
``--quick`` runs one world per kind and 1,000 draws in the timing case.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402

from platinum_jax._runtime import enable_float64

enable_float64()

import numpy as np  # noqa: E402
import scipy.linalg as sla  # noqa: E402

from platinum_jax.agency import optimal_weights, welfare  # noqa: E402
from platinum_jax.data import ResponseTable  # noqa: E402
from platinum_jax.design import (  # noqa: E402
    bootstrap_subjects,
    decisions_per_draw,
    fit_heteroscedastic,
    posterior_decisions,
    primitives_from_fit,
    welfare_from_items,
)
from platinum_jax.design._synthetic import weights_world  # noqa: E402
from platinum_jax.inference import fit  # noqa: E402
from platinum_jax.models import Gaussian, Rosetta  # noqa: E402
from platinum_jax.models.rosetta import BenchmarkAnchor  # noqa: E402


def _dense_v(A, C, d, F, w, r):
    out = np.empty_like(w)
    for t in range(A.shape[0]):
        M = A[t] @ np.linalg.solve(C, A[t].T)
        S = np.diag(d[t]) + F[t] @ F[t].T
        out[t] = np.linalg.solve(M + r * S, M @ w[t])
    return out


def _check(world, post, w, r):
    """Welfare loss, correlation, coverage and the z-scores of the true v* under ``post``."""
    M = world.A @ world.A.T
    v_true = np.asarray(optimal_weights(M, world.Sigma, w, r))
    v_hat = post.items["mean"].to_numpy()
    W_true = float(welfare(v_true, M, world.Sigma, w, r))
    z = (v_true - v_hat) / post.items["sd"].to_numpy()
    inside = (v_true >= post.items["lo"].to_numpy()) & (v_true <= post.items["hi"].to_numpy())
    return {"welfare_loss": (W_true - float(welfare(v_hat, M, world.Sigma, w, r))) / W_true,
            "corr": float(np.corrcoef(v_true, v_hat)[0, 1]), "coverage": float(inside.mean()),
            "z_mean": float(z.mean()), "z_sd": float(z.std())}


def world_case(kind: str, seed: int, draws: int, r: float = 1.0, replicates: int = 0,
               small: bool = False) -> dict:
    size = dict(n_subjects=100, n_items=24, observed=0.3, noise=(0.01, 0.1)) if small else {}
    world = weights_world(shared=0.0 if kind == "diag" else 0.03, seed=seed, **size)
    table = ResponseTable.from_frame(world.scores)
    model = Rosetta(anchor=BenchmarkAnchor("b000"), likelihood=Gaussian())
    w = welfare_from_items(world.items, world.items[:5])
    # Diagnostic: the single-noise fit the pipeline used before (one sigma for all benchmarks).
    single = fit(model, table, method="laplace", draws=draws, seed=seed)
    before = _check(world, posterior_decisions(primitives_from_fit(single, w, seed=seed), r),
                    w, r)
    t0 = time.perf_counter()
    result = fit_heteroscedastic(model, table, draws=draws, seed=seed)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    prims = primitives_from_fit(result, w, seed=seed)
    primitives_s = time.perf_counter() - t0
    posterior_decisions(prims, r)  # warm-up (compilation)
    t0 = time.perf_counter()
    post = posterior_decisions(prims, r)
    ours_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    dense = _dense_v(prims.A, prims.C, prims.d, prims.F, prims.w, r)
    baseline_s = time.perf_counter() - t0
    row = {
        "name": f"world_{kind}_seed{seed}", "ours_s": ours_s, "baseline_s": baseline_s,
        "ratio": baseline_s / ours_s, "max_abs_diff": float(np.abs(post.draws - dense).max()),
        "n_scores": len(world.scores), "draws": draws, "fit_s": fit_s,
        "primitives_s": primitives_s, "fit_converged": bool(result.converged),
        "noise_refits": result.diagnostics["noise_per_item_refits"],
        **_check(world, post, w, r), "residual_rank": prims.notes["residual_rank"],
        **{f"{k}_single_noise": v for k, v in before.items()},
    }
    if kind == "corr":  # the rank the world has, given rather than chosen by BIC
        given = posterior_decisions(primitives_from_fit(result, w, seed=seed, residual_rank=1), r)
        row.update({f"{k}_rank1": v for k, v in _check(world, given, w, r).items()})
    if replicates:
        t0 = time.perf_counter()
        boot = bootstrap_subjects(model, table, w, replicates=replicates, seed=seed)
        row["subject_bootstrap_s"] = time.perf_counter() - t0
        row["subject_bootstrap_converged"] = boot.notes["replicates_converged"]
        for method, suffix in (("bca", "subject_bootstrap"),
                               ("percentile", "subject_bootstrap_percentile")):
            post_b = posterior_decisions(boot, r, interval_method=method)
            row.update({f"{k}_{suffix}": v for k, v in _check(world, post_b, w, r).items()})
            if method == "bca":
                v_true = np.asarray(optimal_weights(world.A @ world.A.T, world.Sigma, w, r))
                row["misses_subject_bootstrap"] = {
                    str(i): "above" if v_true[j] > post_b.items["hi"].iloc[j] else "below"
                    for j, i in enumerate(post_b.items.index)
                    if not post_b.items["lo"].iloc[j] <= v_true[j] <= post_b.items["hi"].iloc[j]}
    return row


def timing_case(D: int, m: int, baseline_draws: int, K: int = 2, k: int = 2) -> dict:
    rng = np.random.default_rng(0)
    A = np.abs(rng.normal(size=(D, m, K))) * 0.2
    C = np.eye(K)
    d = rng.uniform(0.002, 0.02, (D, m))
    # A few precise, strongly loading items, so that some items are platinum and the flag
    # comparison is not between two empty sets.
    A[:, :5] *= 3.0
    d[:, :5] = 2e-5
    F = 0.03 * rng.normal(size=(D, m, k))
    w = np.broadcast_to(rng.uniform(0, 1, m), (D, m)).copy()
    cur = np.full(m, 1.0 / m)
    r_grid = np.array([0.25, 0.5, 1.0, 2.0, 4.0])
    tau = (0.3, 0.3, 1.0)
    args = tuple(jax.numpy.asarray(x) for x in (A, C, d, F, w, cur, r_grid)) + tau
    t0 = time.perf_counter()
    jax.block_until_ready(decisions_per_draw(*args))
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = jax.block_until_ready(decisions_per_draw(*args))
    ours_s = time.perf_counter() - t0
    n = min(baseline_draws, D)
    t0 = time.perf_counter()
    diff, mismatches = 0.0, 0
    for t in range(n):
        M = A[t] @ np.linalg.solve(C, A[t].T)
        S = np.diag(d[t]) + F[t] @ F[t].T
        lam, Q = sla.eigh(M, S)  # generalised concepts, QᵀΣQ = I
        for j, r in enumerate(r_grid):
            v = np.linalg.solve(M + r * S, M @ w[t])
            Wu = []
            for u in (np.full(m, 1.0 / m), cur):
                Wu.append(0.5 * (w[t] @ M @ u) ** 2 / (u @ (M + r * S) @ u))
            coord = Q.T @ S @ w[t]
            Qs = Q * np.where(coord < 0, -1.0, 1.0)
            length = np.linalg.norm(Qs, axis=0)
            omega = length * np.abs(coord) / np.linalg.norm(w[t])
            ok = (omega >= tau[0]) & (lam / r >= tau[2])
            flags = ((Qs / length >= tau[1]) & ok).any(axis=1)
            diff = max(diff, float(np.abs(v - np.asarray(out.weights[t, j])).max()))
            mismatches += int(np.sum(flags != np.asarray(out.platinum[t, j], bool)))
    base_n = time.perf_counter() - t0
    baseline_s = base_n * D / n
    return {"name": f"decisions_{D}x{m}", "ours_s": ours_s, "baseline_s": baseline_s,
            "ratio": baseline_s / ours_s, "max_abs_diff": diff, "compile_s": compile_s,
            "baseline_scaled": n < D, "baseline_draws": n, "flag_mismatches": mismatches,
            "platinum_share": float(np.asarray(out.platinum).mean()),
            "K": K, "noise_rank": k, "r_values": len(r_grid)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one world per kind, 1,000 draws")
    parser.add_argument("--seeds", type=int, default=5, help="worlds per kind (default 5)")
    parser.add_argument("--draws", type=int, default=1000, help="Laplace draws per world")
    parser.add_argument("--baseline-draws", type=int, default=20,
                        help="draws NumPy is timed on in the 4,000 x 1,000 case (default 20)")
    parser.add_argument("--subject-bootstrap", type=int, default=0, metavar="R",
                        help="also run bootstrap_subjects with R replicates per world, BCa and "
                             "percentile intervals (slow: minutes per world at R = 100; default "
                             "off)")
    parser.add_argument("--small", action="store_true",
                        help="worlds of 100 models x 24 benchmarks (30%% scored) instead of the "
                             "Epoch table's size")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seed of the first world (default 0; other seeds to develop on)")
    parser.add_argument("--kinds", default="diag,corr", help="world kinds (default diag,corr)")
    parser.add_argument("--no-timing", action="store_true",
                        help="skip the 4,000 x 1,000 timing case")
    args = parser.parse_args()
    seeds = 1 if args.quick else args.seeds
    rows = []
    if not args.no_timing:
        print(json.dumps(timing_case(1000 if args.quick else 4000, 1000, args.baseline_draws)),
              flush=True)
    for kind in args.kinds.split(","):
        if kind not in ("diag", "corr"):
            parser.error(f"--kinds takes diag and/or corr, got {kind!r}")
        for seed in range(args.first_seed, args.first_seed + seeds):
            rows.append(world_case(kind, seed, args.draws, replicates=args.subject_bootstrap,
                                   small=args.small))
            if args.small:
                rows[-1]["name"] += "_small"
            print(json.dumps(rows[-1]), flush=True)
    for kind in ("diag", "corr"):
        sub = [row for row in rows if row["name"].startswith(f"world_{kind}")]
        if not sub:
            continue
        keys = ["welfare_loss", "corr", "coverage", "z_mean", "z_sd", "coverage_single_noise",
                "z_mean_single_noise", "z_sd_single_noise"]
        keys += ["coverage_rank1", "welfare_loss_rank1"] if kind == "corr" else []
        keys += (["coverage_subject_bootstrap", "coverage_subject_bootstrap_percentile",
                  "welfare_loss_subject_bootstrap",
                  "z_mean_subject_bootstrap", "z_sd_subject_bootstrap", "subject_bootstrap_s"]
                 if args.subject_bootstrap else [])
        for key in keys:
            values = [x[key] for x in sub]
            print(f"# {kind} ({len(sub)} worlds) {key}: mean {np.mean(values):.3f}, each "
                  + ", ".join(f"{v:.3f}" for v in values), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
