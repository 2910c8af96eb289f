"""Ten million responses: a 2PL held and fitted on one machine, beside girth on the same data.

Binary 2PL responses of 100,000 subjects on 100 items (10 million cells, complete; abilities
~ N(0, 1), difficulties ~ N(0, 1), discriminations ~ LogNormal(0, 0.3^2)) are drawn in NumPy,
turned into a :class:`~platinum_jax.data.ResponseTable` (``from_arrays``) and fitted with
``fit(TwoPL(), table, method="marginal")`` (EM over the abilities on an even quadrature
grid, EAP abilities). Times: table construction, the fit (compilation included), both together; the
process's peak resident memory; recovery of the discriminations and difficulties.

``--first-order`` also runs the first-order MAP path (``fit_map(..., solver="first_order")``,
optax L-BFGS over 100,200 parameters) for ``--first-order-steps`` iterations and reports its
time per iteration. girth's ``twopl_mml`` runs on the same matrix in a subprocess (its own peak
memory) unless ``--no-peer``; it is stopped after ``--peer-timeout`` seconds.

Ends with one JSON line ``{"name", "ours_s", "baseline_s", "ratio", "max_abs_diff"}``
(``baseline_s`` null when girth did not finish in time).

    python benchmarks/bench_scale.py [--subjects 100000 --items 100] [--no-peer]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def simulate(n_s, n_i, seed):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_s)
    b = rng.normal(size=n_i)
    a = np.exp(rng.normal(0.0, 0.3, n_i))
    p = 1 / (1 + np.exp(-a[None] * (theta[:, None] - b[None])))
    y = (rng.random((n_s, n_i)) < p).astype(np.int8)
    return y, theta, b, a


def _peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def girth_worker(n_s, n_i, seed, out):
    import girth

    y, *_ = simulate(n_s, n_i, seed)
    t0 = time.perf_counter()
    est = girth.twopl_mml(y.T.astype(int))
    seconds = time.perf_counter() - t0
    np.savez(out, b=np.asarray(est["Difficulty"], float), a=np.asarray(est["Discrimination"]),
             seconds=seconds, peak_mib=_peak_mib())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subjects", type=int, default=100_000)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--first-order", action="store_true")
    parser.add_argument("--first-order-steps", type=int, default=50)
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--peer-timeout", type=int, default=600)
    parser.add_argument("--girth-worker", nargs=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.girth_worker:
        girth_worker(args.subjects, args.items, args.seed, args.girth_worker[0])
        return


    from platinum_jax._runtime import enable_float64

    enable_float64()
    from platinum_jax.data import ResponseTable
    from platinum_jax.inference import fit, fit_map
    from platinum_jax.models import TwoPL

    y, theta, b, a = simulate(args.subjects, args.items, args.seed)
    s, i = np.divmod(np.arange(y.size), args.items)
    response = y.ravel().astype(np.float64)
    print(f"# {y.size:,} responses ({args.subjects:,} subjects x {args.items} items); "
          f"{os.cpu_count()} CPU cores")
    t0 = time.perf_counter()
    table = ResponseTable.from_arrays(s, i, response)
    t_table = time.perf_counter() - t0
    del s, i
    t0 = time.perf_counter()
    res = fit(TwoPL(), table, method="marginal")
    t_fit = time.perf_counter() - t0
    items = res.items
    a_hat, b_hat = items["discrimination"].to_numpy(), items["difficulty"].to_numpy()
    print(f"table construction   {t_table:7.2f} s")
    print(f"marginal 2PL fit     {t_fit:7.2f} s  ({res.diagnostics['iterations']} EM "
          f"iterations, converged {res.converged}, E-step {res.diagnostics['e_step']})")
    print(f"total                {t_table + t_fit:7.2f} s")
    print(f"peak RSS             {_peak_mib():7.0f} MiB")
    print(f"recovery: corr(a) {np.corrcoef(a_hat, a)[0, 1]:.4f}, RMSE(a) "
          f"{np.sqrt(np.mean((a_hat - a) ** 2)):.4f}; corr(b) {np.corrcoef(b_hat, b)[0, 1]:.4f}"
          f", RMSE(b) {np.sqrt(np.mean((b_hat - b) ** 2)):.4f}; corr(theta) "
          f"{np.corrcoef(res.subjects['ability'], theta)[0, 1]:.4f}; all finite "
          f"{bool(np.isfinite(items[['difficulty', 'discrimination']].to_numpy()).all())}")
    if args.first_order:
        t0 = time.perf_counter()
        fo = fit_map(TwoPL(), table, solver="first_order", max_steps=args.first_order_steps)
        t_fo = time.perf_counter() - t0
        print(f"first-order MAP      {t_fo:7.2f} s for {fo.diagnostics['iterations']} L-BFGS "
              f"iterations (compilation included; converged {fo.converged}, largest gradient "
              f"{fo.diagnostics['gradient_norm']:.3g}); peak RSS now {_peak_mib():.0f} MiB")
    ours = t_table + t_fit
    base, diff = None, float("nan")
    if not args.no_peer:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "girth.npz"
            cmd = [sys.executable, __file__, "--subjects", str(args.subjects), "--items",
                   str(args.items), "--seed", str(args.seed), "--girth-worker", str(out)]
            try:
                subprocess.run(cmd, check=True, timeout=args.peer_timeout, capture_output=True)
                with np.load(out) as z:
                    base = float(z["seconds"])
                    diff = float(np.max(np.abs(z["b"] - b_hat)))
                    print(f"girth twopl_mml      {base:7.2f} s, peak RSS "
                          f"{float(z['peak_mib']):.0f} MiB; corr(a) "
                          f"{np.corrcoef(z['a'], a)[0, 1]:.4f}, corr(b) "
                          f"{np.corrcoef(z['b'], b)[0, 1]:.4f}")
            except subprocess.TimeoutExpired:
                print(f"girth twopl_mml      not finished in {args.peer_timeout} s")
            except subprocess.CalledProcessError as err:
                print(f"girth twopl_mml      failed: {err.stderr.decode()[-300:]}")
    print(json.dumps({"name": f"2pl_marginal_{y.size}", "ours_s": ours, "baseline_s": base,
                      "ratio": None if base is None else base / ours,
                      "max_abs_diff": None if base is None else diff}))


if __name__ == "__main__":
    main()
