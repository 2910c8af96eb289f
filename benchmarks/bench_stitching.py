"""Stitching fit: our jitted Levenberg-Marquardt against SciPy's TRF (the paper's method).

Same data (the public Epoch ``scores_long.csv``), same objective, same start (C = D = 0,
alpha = 1). SciPy runs ``least_squares(method="trf")`` with its default 2-point finite-difference
Jacobian on the paper's parametrisation (anchor difficulty free, shifted afterwards), which is
the same optimum as ours. Cases:

* ``fit_warm``: one fit, compiled beforehand (median of repeats; SciPy's time is the median of as
  many runs, and is the baseline of every case);
* ``fit_cold``: the first fit in a fresh process, compilation included;
* ``bootstrap_1000``: 1,000 (``--quick``: 100) vmapped bootstrap refits against one SciPy fit.

Ends with one JSON line per case: name, ours_s, baseline_s, ratio (baseline / ours, > 1 means we
are faster), max_abs_diff (capabilities after the anchor shift), plus costs and peak memory.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "epoch-benchmark-stitching"


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def scipy_fit(table, l2=0.1, anchor="Winogrande"):
    from scipy.optimize import least_squares

    m, b = table.n_models, table.n_benchmarks
    k = table.benchmarks.index(anchor)
    mi, bi, y = table.model_index, table.benchmark_index, table.scores
    den = m + 2 * b - 1

    def residuals(x):
        c, d = x[:m], x[m : m + b]
        alpha = np.insert(x[m + b :], k, 1.0)
        r = 1.0 / (1.0 + np.exp(-alpha[bi] * (c[mi] - d[bi]))) - y
        pen = np.sum(c**2) + np.sum(d**2) + np.sum(x[m + b :] ** 2)
        return np.concatenate([r, [np.sqrt(l2 * pen / den)]])

    x0 = np.concatenate([np.zeros(m + b), np.ones(b - 1)])
    t0 = time.perf_counter()
    res = least_squares(residuals, x0, method="trf")
    elapsed = time.perf_counter() - t0
    shift = res.x[m + k]
    return elapsed, float(res.cost), res.x[:m] - shift


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 bootstrap replicates, 2 repeats")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    replicates = 100 if args.quick else 1000
    repeats = 2 if args.quick else args.repeats


    from platinum_jax._runtime import enable_float64

    enable_float64()
    from platinum_jax.data import ScoreTable
    from platinum_jax.stitching import bootstrap, fit_stitching

    table = ScoreTable.from_csv(DATA / "scores_long.csv")
    print(f"{table!r}")

    t0 = time.perf_counter()
    fit = fit_stitching(table)
    cold = time.perf_counter() - t0
    warm_times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fit = fit_stitching(table)
        warm_times.append(time.perf_counter() - t0)
    warm = float(np.median(warm_times))
    print(f"ours : cost {fit.cost:.6f}, {fit.iterations} iterations, cold {cold:.2f}s, warm {warm:.3f}s")

    scipy_runs = [scipy_fit(table) for _ in range(repeats)]
    scipy_s = float(np.median([run[0] for run in scipy_runs]))
    _, scipy_cost, scipy_caps = scipy_runs[0]
    diff = float(np.max(np.abs(fit.capabilities["capability"].to_numpy() - scipy_caps)))
    print(f"scipy: cost {scipy_cost:.6f}, {scipy_s:.2f}s; max |C_ours - C_scipy| = {diff:.2e}")

    bootstrap(fit, replicates=min(replicates, 250), seed=99)  # compile (same block shape)
    t0 = time.perf_counter()
    boot = bootstrap(fit, replicates=replicates, seed=0)
    boot_s = time.perf_counter() - t0
    print(f"bootstrap: {replicates} refits in {boot_s:.2f}s "
          f"(converged {boot.converged.mean():.1%}); one SciPy fit {scipy_s:.2f}s")
    peak = _peak_rss_mb()
    common = {"ours_cost": fit.cost, "baseline_cost": scipy_cost, "peak_mem_mb": round(peak, 1)}
    cases = [
        {"name": "stitching_fit_warm", "ours_s": warm, "baseline_s": scipy_s, "max_abs_diff": diff},
        {"name": "stitching_fit_cold", "ours_s": cold, "baseline_s": scipy_s, "max_abs_diff": diff},
        {
            "name": f"stitching_bootstrap_{replicates}_vs_one_scipy_fit",
            "ours_s": boot_s,
            "baseline_s": scipy_s,
            "max_abs_diff": diff,
            "replicates": replicates,
        },
    ]
    for case in cases:
        case["ratio"] = case["baseline_s"] / case["ours_s"]
        print(json.dumps(case | common))


if __name__ == "__main__":
    main()
