"""Sweep throughput: ``platinum_jax.sweeps.sweep`` against NumPy's batched ``np.linalg.solve``.

Both sides evaluate ``v* = (M + rΣ)⁻¹ M w`` on the same grids in one process:

* ``fast_m{m}``: an r × κ grid (the spectral fast path; NumPy solves ``(M/κ + rΣ) v = (M/κ) w``);
* ``general_m{m}``: one random ``Σ`` per sample × a few r values (batched Cholesky on our side,
  ``np.linalg.solve`` on NumPy's, the same ``Σ`` stack for both);
* ``fast_1e6_m64``: a 100 × 100 × 100 r × κ × δ sweep at m = 64 keeping only per-point
  summaries of v* (max, argmax, L1, L2, alignment with w) plus welfare and effort cost.
  NumPy is timed on a 10⁴-point subsample and scaled to the full grid (``baseline_scaled``).

NumPy works through the grid in the same chunks as ours so both have bounded memory.  Both
sides get one warm-up run (ours compiles there; ``compile_s`` reports it), then ``--repeats``
timed runs interleaved ours/NumPy; ``ours_s``/``baseline_s`` are the best of each (the machine
is shared, so single runs swing by 2x) and ``ratio_of_medians`` shows the typical gap.  Ours
includes everything a user call does: reading the primitives, checking every Σ sample is
symmetric positive definite, and building the labelled ``xarray.Dataset``; NumPy gets ``M`` and
the Σ stack ready-made and checks nothing.  LAPACK runs on one OpenBLAS thread on both sides.
``peak_mem_mb`` is the growth of the process's resident set during the timed run (sampled
every 5 ms).  Prints one JSON line per case; ``--quick`` uses smaller grids (< 2 minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

# OpenBLAS's worker threads spin-wait on a contended machine (a 256 x 256 eigvalsh took ~1 s
# with 2 threads and ~8 ms with 1 here), so both sides default to one BLAS thread; override
# with --blas-threads N (read before NumPy is imported).
if "--blas-threads" in sys.argv:
    os.environ["OPENBLAS_NUM_THREADS"] = sys.argv[sys.argv.index("--blas-threads") + 1]
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from platinum_jax._runtime import enable_float64  # noqa: E402

enable_float64()

import numpy as np  # noqa: E402

from platinum_jax.agency import Primitives  # noqa: E402
from platinum_jax.sweeps import (  # noqa: E402
    ConceptShift,
    CostScale,
    EffortCost,
    PrimitiveSamples,
    RiskAversion,
    Weights,
    WeightSummary,
    Welfare,
    sweep,
)


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


class PeakRSS:
    """Peak growth of resident memory (MiB) while the block runs."""

    def __enter__(self):
        self.start = _rss_mb()
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def _poll(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_mb())
            time.sleep(0.005)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_mb())
        self.mb = self.peak - self.start


def problem(m: int, seed: int = 0) -> Primitives:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, m)) / np.sqrt(m)
    X = rng.normal(size=(m, m))
    Sigma = X @ X.T / m + 0.5 * np.eye(m)
    w = rng.uniform(0.1, 1.0, size=m)
    return Primitives(A, np.eye(m), Sigma, w / np.linalg.norm(w), 1.0)


def numpy_fast(M, Sigma, w, rs, kappas, chunk):
    """NumPy batched solves over the r × κ grid (C order, like the sweep), in chunks."""
    r_idx, k_idx = np.unravel_index(np.arange(len(rs) * len(kappas)), (len(rs), len(kappas)))
    out = np.empty((len(r_idx), M.shape[0]))
    for s in range(0, len(r_idx), chunk):
        r = rs[r_idx[s:s + chunk]][:, None, None]
        k = kappas[k_idx[s:s + chunk]][:, None, None]
        Mk = M[None] / k
        out[s:s + chunk] = np.linalg.solve(Mk + r * Sigma[None], (Mk @ w)[..., None])[..., 0]
    return out


def numpy_general(M, Sigmas, w, rs, chunk):
    d_idx, r_idx = np.unravel_index(np.arange(len(Sigmas) * len(rs)), (len(Sigmas), len(rs)))
    out = np.empty((len(d_idx), M.shape[0]))
    Mw = M @ w
    for s in range(0, len(d_idx), chunk):
        K = M[None] + rs[r_idx[s:s + chunk]][:, None, None] * Sigmas[d_idx[s:s + chunk]]
        out[s:s + chunk] = np.linalg.solve(K, np.broadcast_to(Mw, (K.shape[0], len(w)))[..., None])[..., 0]
    return out


def compare(ours, baseline, repeats):
    """Warm both sides once, then time them back to back ``repeats`` times (interleaved).

    The machine is shared, so single timings swing by 2x; the best of the interleaved repeats
    is the least disturbed run of each side.  Returns the last results, the timings of each
    side and the peak memory growth of the first timed run of each.
    """
    t0 = time.perf_counter()
    ours()  # warm-up: compiles
    compile_s = time.perf_counter() - t0
    baseline()
    t_ours, t_base = [], []
    for k in range(repeats):
        with PeakRSS() as mem:
            t0 = time.perf_counter()
            ds = ours()
            t_ours.append(time.perf_counter() - t0)
        with PeakRSS() as nmem:
            t0 = time.perf_counter()
            ref = baseline()
            t_base.append(time.perf_counter() - t0)
        if k == 0:
            mems = (mem.mb, nmem.mb)
    return ds, ref, t_ours, t_base, compile_s - min(t_ours), mems


def case_fast(m, n_r, n_k, chunk, repeats):
    base = problem(m)
    M, Sigma, w = (np.asarray(x) for x in (base.M, base.Sigma, base.w))
    rs, ks = np.geomspace(0.1, 10, n_r), np.linspace(0.5, 4, n_k)
    axes = [RiskAversion(rs), CostScale(ks)]
    ds, ref, t_ours, t_base, comp, mems = compare(
        lambda: sweep(base, axes, [Weights()], chunk_size=chunk, progress=False),
        lambda: numpy_fast(M, Sigma, w, rs, ks, chunk), repeats)
    diff = float(np.abs(ds["v"].values.reshape(-1, m) - ref).max())
    return _row(f"fast_m{m}", t_ours, t_base, diff, n_r * n_k, comp, *mems, ds.attrs["path"])


def case_general(m, n_draws, n_r, chunk, repeats):
    base = problem(m)
    M, Sigma, w = (np.asarray(x) for x in (base.M, base.Sigma, base.w))
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(n_draws, m, m + 4))
    Sigmas = Z @ np.swapaxes(Z, 1, 2) / (m + 4) + 0.1 * np.eye(m)
    rs = np.geomspace(0.3, 3, n_r)
    # A fresh axis every run, so each timed sweep pays its own checks of the Σ samples.
    ds, ref, t_ours, t_base, comp, mems = compare(
        lambda: sweep(base, [PrimitiveSamples(Sigma=Sigmas), RiskAversion(rs)], [Weights()],
                      chunk_size=chunk, progress=False),
        lambda: numpy_general(M, Sigmas, w, rs, chunk), repeats)
    diff = float(np.abs(ds["v"].values.reshape(-1, m) - ref).max())
    return _row(f"general_m{m}", t_ours, t_base, diff, n_draws * n_r, comp, *mems,
                ds.attrs["path"])


def case_million(n_side, chunk, n_sub=10_000):
    m = 64
    base = problem(m)
    M, Sigma, w = (np.asarray(x) for x in (base.M, base.Sigma, base.w))
    rs, ks, ds_ = np.geomspace(0.1, 10, n_side), np.linspace(0.5, 4, n_side), np.linspace(0, 2, n_side)
    axes = [RiskAversion(rs), CostScale(ks), ConceptShift(0, ds_)]
    outputs = [WeightSummary(), Welfare(), EffortCost()]
    t0 = time.perf_counter()
    sweep(base, [RiskAversion(rs[:2]), CostScale(ks[:2]), ConceptShift(0, ds_[:2])], outputs,
          chunk_size=chunk, progress=False)  # compile on the same chunk shape
    comp = time.perf_counter() - t0
    with PeakRSS() as mem:
        t0 = time.perf_counter()
        ds = sweep(base, axes, outputs, chunk_size=chunk, progress=False)
        ours = time.perf_counter() - t0
    # NumPy on a random subsample of grid points, scaled to the whole grid.
    from platinum_jax.agency import concept_basis

    g = np.asarray(concept_basis(M, Sigma, w).metric @ concept_basis(M, Sigma, w).vectors)[:, 0]
    n = n_side**3
    pick = np.random.default_rng(0).choice(n, size=min(n_sub, n), replace=False)
    i, j, k = np.unravel_index(pick, (n_side,) * 3)
    t0 = time.perf_counter()
    vmax = np.empty(len(pick))
    for s in range(0, len(pick), chunk):
        sl = slice(s, s + chunk)
        Mk = M[None] / ks[j[sl]][:, None, None] + ds_[k[sl]][:, None, None] * np.outer(g, g)
        K = Mk + rs[i[sl]][:, None, None] * Sigma[None]
        v = np.linalg.solve(K, (Mk @ w)[..., None])[..., 0]
        vmax[sl] = v.max(axis=1)
    base_s = (time.perf_counter() - t0) * n / len(pick)
    diff = float(np.abs(ds["v_max"].values.reshape(-1)[pick] - vmax).max())
    row = _row(f"fast_1e6_m{m}" if n == 10**6 else f"fast_{n}pts_m{m}", ours, base_s, diff, n,
               comp, mem.mb, None, ds.attrs["path"])
    import resource

    row.update(process_peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
               baseline_scaled_from=len(pick), kept="v_max, v_argmax, v_l1, v_l2, v_align, "
               "welfare, effort_cost per point", under_60s=ours < 60, under_2GiB=mem.mb < 2048)
    return row


def _row(name, t_ours, t_base, diff, points, comp, mem, nmem, path):
    t_ours, t_base = np.atleast_1d(t_ours), np.atleast_1d(t_base)
    ours, base_s = float(t_ours.min()), float(t_base.min())
    return {"name": name, "ours_s": round(ours, 4), "baseline_s": round(base_s, 4),
            "ratio": round(base_s / ours, 2), "max_abs_diff": diff, "points": points,
            "ours_points_per_s": round(points / ours), "baseline_points_per_s": round(points / base_s),
            "repeats": len(t_ours), "ratio_of_medians": round(float(np.median(t_base) / np.median(t_ours)), 2),
            "compile_s": round(comp, 2), "peak_mem_mb": round(mem, 1),
            "baseline_peak_mem_mb": None if nmem is None else round(nmem, 1), "path": path,
            "blas_threads": int(os.environ["OPENBLAS_NUM_THREADS"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small grids, under 2 minutes")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="OpenBLAS threads for NumPy (default 1; see the module docstring)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="interleaved timed runs per side; the best of each is reported")
    args = parser.parse_args()
    q = args.quick
    rows = []
    # grid sizes shrink with m so the NumPy side stays affordable
    fast_grid = {16: (100, 100), 64: (100, 50), 256: (25, 20)} if not q else \
        {16: (50, 40), 64: (40, 25), 256: (10, 10)}
    general_grid = {16: (1000, 5), 64: (400, 5), 256: (40, 5)} if not q else \
        {16: (200, 5), 64: (80, 5), 256: (10, 4)}
    for m in (16, 64, 256):
        chunk = {16: 4096, 64: 2048, 256: 256}[m]
        rows.append(case_fast(m, *fast_grid[m], chunk, args.repeats))
        print(json.dumps(rows[-1]), flush=True)
        chunk = {16: 2048, 64: 500, 256: 50}[m]
        rows.append(case_general(m, *general_grid[m], chunk, args.repeats))
        print(json.dumps(rows[-1]), flush=True)
    rows.append(case_million(40 if q else 100, 16384, n_sub=2000 if q else 10_000))
    print(json.dumps(rows[-1]), flush=True)


if __name__ == "__main__":
    main()
