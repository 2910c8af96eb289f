"""The measurement engine's MAP fit beside SciPy on the same objectives, in one process.

Cases:
* ``rosetta``: the Rosetta model on Epoch's ``scores_long.csv`` (the paper's regularised least
  squares) against SciPy's ``least_squares`` (TRF) on the same residuals;
* ``2pl_livecodebench``: a 2PL on the LiveCodeBench code-generation problems (72 models x 1,055
  problems, pass@1 fractions as Bernoulli shares) against SciPy's L-BFGS-B with the analytic
  gradient of the same penalised objective.

Our times are for a compiled solver (``warm``) and including compilation (``cold``). Each case
prints one JSON line: ``{"name", "ours_s", "baseline_s", "ratio", "max_abs_diff"}`` with
``ratio = baseline / ours`` and ``max_abs_diff`` the largest difference of the fitted subject
parameters (after the same identification).

    python benchmarks/bench_engine.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax

from platinum_jax._runtime import enable_float64

enable_float64()

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.optimize import least_squares, minimize  # noqa: E402

from platinum_jax.data import ResponseTable  # noqa: E402
from platinum_jax.inference import fit_map  # noqa: E402
from platinum_jax.inference._map import map_solver  # noqa: E402
from platinum_jax.inference._problem import Problem  # noqa: E402
from platinum_jax.models import Rosetta, TwoPL  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _timed(fn, repeats):
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        jax.block_until_ready(out) if not isinstance(out, (float, np.ndarray)) else None
        best = min(best, time.perf_counter() - t0)
    return best, out


def rosetta_case(repeats):
    table = ResponseTable.read(DATA / "epoch-benchmark-stitching" / "scores_long.csv")
    m, b = table.n_subjects, table.n_items
    k = table.item_position("Winogrande")
    mi, bi, y = table.subject_index, table.item_index, table.response

    def resid(x):
        c, d = x[:m], x[m:m + b]
        a = np.insert(x[m + b:], k, 1.0)
        pen = np.sum(c**2) + np.sum(d**2) + np.sum(np.delete(a, k) ** 2)
        return np.concatenate([_sigmoid(a[bi] * (c[mi] - d[bi])) - y,
                               [np.sqrt(0.1 * pen / (m + 2 * b - 1))]])

    x0 = np.concatenate([np.zeros(m + b), np.ones(b - 1)])
    t_scipy, ref = _timed(lambda: least_squares(resid, x0, method="trf"), 1)
    c_ref = ref.x[:m] - ref.x[m + k]
    t0 = time.perf_counter()
    ours = fit_map(Rosetta(), table)
    cold = time.perf_counter() - t0
    problem = Problem(Rosetta(), table)
    solve = map_solver(problem)
    start, data = problem.start(), problem.data()
    jax.block_until_ready(solve(start, data))
    warm, res = _timed(lambda: solve(start, data), repeats)
    diff = float(np.max(np.abs(ours.subjects["capability"].to_numpy() - c_ref)))
    return [
        {"name": "rosetta_warm", "ours_s": warm, "baseline_s": t_scipy,
         "ratio": t_scipy / warm, "max_abs_diff": diff},
        {"name": "rosetta_cold", "ours_s": cold, "baseline_s": t_scipy,
         "ratio": t_scipy / cold, "max_abs_diff": diff},
    ]


def irt_case(repeats):
    df = pd.read_csv(DATA / "item-level" / "livecodebench" / "responses.csv")
    table = ResponseTable.from_frame(df[df["benchmark"] == "livecodebench_codegen"])
    s, i, y = table.subject_index, table.item_index, table.response
    n_s, n_i = table.n_subjects, table.n_items

    def objective(x):
        th, bb, la = x[:n_s], x[n_s:n_s + n_i], x[n_s + n_i:]
        a = np.exp(la)
        z = a[i] * (th[s] - bb[i])
        p = np.clip(_sigmoid(z), 1e-15, 1 - 1e-15)
        f = -np.sum(y * np.log(p) + (1 - y) * np.log(1 - p))
        f += 0.5 * np.sum(th**2) + 0.5 * np.sum(bb**2) / 9 + 0.5 * np.sum(la**2)
        r = p - y  # d(-loglik)/dz
        g_th = np.bincount(s, r * a[i], n_s) + th
        g_b = np.bincount(i, -r * a[i], n_i) + bb / 9
        g_la = np.bincount(i, r * z, n_i) + la
        return f, np.concatenate([g_th, g_b, g_la])

    x0 = np.zeros(n_s + 2 * n_i)
    t_scipy, ref = _timed(lambda: minimize(objective, x0, jac=True, method="L-BFGS-B",
                                           options={"maxiter": 20000, "gtol": 1e-8}), 1)
    t0 = time.perf_counter()
    ours = fit_map(TwoPL(), table)
    cold = time.perf_counter() - t0
    problem = Problem(TwoPL(), table)
    solve = map_solver(problem)
    start, data = problem.start(), problem.data()
    jax.block_until_ready(solve(start, data))
    warm, _ = _timed(lambda: solve(start, data), repeats)
    diff = float(np.max(np.abs(ours.subjects["ability"].to_numpy() - ref.x[:n_s])))
    print(f"# 2PL objective: ours {ours.objective - _const(n_s, n_i):.6f} "
          f"(converged {ours.converged}), SciPy {ref.fun:.6f} ({ref.message})")
    return [
        {"name": "2pl_livecodebench_warm", "ours_s": warm, "baseline_s": t_scipy,
         "ratio": t_scipy / warm, "max_abs_diff": diff},
        {"name": "2pl_livecodebench_cold", "ours_s": cold, "baseline_s": t_scipy,
         "ratio": t_scipy / cold, "max_abs_diff": diff},
    ]


def _const(n_s, n_i):
    # -log prior constants that our objective keeps and the SciPy objective leaves out
    half_log_2pi = 0.5 * np.log(2 * np.pi)
    return n_s * half_log_2pi + n_i * (np.log(3) + half_log_2pi) + n_i * half_log_2pi


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one repeat per timing")
    args = parser.parse_args()
    repeats = 1 if args.quick else 5
    for row in rosetta_case(repeats) + irt_case(repeats):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
