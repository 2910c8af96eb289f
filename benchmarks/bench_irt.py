"""Item response theory fits beside py-irt and girth, on simulated 2PL data with known truth.

For each size (subjects x items) and missing share, binary responses are drawn from a 2PL
(abilities ~ N(0, 1), difficulties ~ N(0, 1), discriminations ~ LogNormal(0, 0.3^2)), and
1PL and 2PL models are fitted by:

* ``ours``: ``platinum_jax.inference.fit(..., method="marginal")`` (EM over the abilities on
  61 nodes evenly spaced over +-6 prior SDs, abilities by EAP; the 1PL/2PL take its
  closed-form dense path), float64;
* ``girth``: girth 0.8.0's marginal maximum likelihood (``onepl_mml``/``twopl_mml``), abilities
  by its ``ability_eap``;
* ``theta-irt``: theta-irt 0.1.1's ``theta.fit`` (Bock-Aitkin EM on 61 Gauss-Hermite nodes
  over a dense subject x item matrix with NaN for missing cells, float64), abilities by its
  EAP ``score``; 1PL to 4PL, warm (median of three more fits in one process) and cold;
* ``py-irt``: py-irt 0.7.1's defaults (Pyro SVI, 2,000 epochs), run only up to
  ``--pyirt-max-cells`` cells (its time grows with the responses: minutes at 200 x 100 here);
* ``ours-map`` (with ``--map-models 1pl``): this package's joint MAP (Levenberg-Marquardt over
  abilities and items together), to see whether joint estimation is adequate where every
  subject answers many items;
* ``ours-hier`` (with ``--hier-2pl``): the 2PL whose item parameters are drawn around learned
  means and spreads (``HierarchicalTwoPL``, all items in one group), marginal: the spreads
  shrink the poorly measured discriminations of small data sets.

Every fit but ours runs under ``--peer-timeout`` seconds (ours under ``--timeout``); a fit that
runs out is reported as stopped after that many seconds, not waited for.

Each fit runs in its own process (so that peak memory is its own): wall time of the fit
(``ours`` cold, i.e. a fresh process with an empty persistent compilation cache, so with
compilation; warm, the median of three more fits of the same shape in that process, table
included; and cached, a second fresh process that finds the first one's compiled program in
JAX's persistent cache, as repeated runs of a script would with ``jax_compilation_cache_dir``
set), peak resident memory of the process, and recovery against the truth: correlation and RMSE of the
abilities, difficulties and discriminations after the linear alignment each tool needs
(``theta_true ~ A theta_hat + B`` by least squares on the abilities, applied to every
parameter: ``b -> A b + B``, ``a -> a / A``). A 3PL on 3PL data (guessing 0.2) is reported for
ours and girth at the first size. Missing cells are passed to girth as its invalid-response
code and to py-irt as NaN.

The table goes to stdout (with the load average of the machine at the start and the end, and
each tool's count of non-finite estimates), then one JSON line per (size, model):
``{"name", "ours_s", "baseline_s", "ratio", "max_abs_diff"}`` with ``baseline_s`` the faster
peer, ``ratio = baseline_s / ours_s`` (cold; the lines whose name ends in ``_warm`` and
``_cached`` take our warm and cached times; a warm line compares with the peer's warm time
where it has one, theta-irt's; a ``_warm_cpu`` line compares the warm fits' CPU time, user
plus system over all threads, which a loaded machine stretches far less than wall time) and
``max_abs_diff`` the largest difference
between our aligned difficulties and that peer's (over the items both estimated finitely).
When theta-irt ran but was not the fastest peer, its lines follow the fastest's.
``--stability-models 3pl 4pl`` fits ours and theta-irt on ``--stability-sets`` data sets
(seeds 0, 1, ...) of the first size and counts the fits that did not converge or left an item
at a boundary (guessing < 0.001, upper asymptote > 0.999, discrimination > 10, ...).
When every peer was stopped at its limit, the line's name ends in ``_stopped`` and
``baseline_s`` is the limit, so ``ratio`` is a lower bound and ``max_abs_diff`` is null.

    python benchmarks/bench_irt.py                       # 200 x 100, a few minutes
    python benchmarks/bench_irt.py --sizes 200x100 1000x500 5000x1000
    python benchmarks/bench_irt.py --sizes 1000x50 50000x100 --missing 0 --models 1pl 2pl \
        3pl 4pl --no-3pl --peers theta-irt --stability-models 3pl 4pl --peer-python PEER_PY
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


def simulate(n_s, n_i, missing, seed, guessing=0.0, upper=1.0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_s)
    b = rng.normal(size=n_i)
    a = np.exp(rng.normal(0.0, 0.3, n_i))
    p = guessing + (upper - guessing) / (1 + np.exp(-a[None] * (theta[:, None] - b[None])))
    y = (rng.random((n_s, n_i)) < p).astype(float)
    mask = rng.random((n_s, n_i)) >= missing
    # every subject and item keeps a response
    mask[np.arange(n_s), rng.integers(0, n_i, n_s)] = True
    mask[rng.integers(0, n_s, n_i), np.arange(n_i)] = True
    return y, mask, theta, b, a


def _load():
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f} (1, 5, 15 min)"


# fits after the first, in one process; their median is the warm time
WARM_REPEATS = int(os.environ.get("BENCH_IRT_WARM_REPEATS", "3"))


def _peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---------------------------------------------------------------------- workers
def run_ours(model, y, mask, method="marginal"):
    import jax

    from platinum_jax._runtime import enable_float64

    enable_float64()
    if os.environ.get("BENCH_IRT_JAX_CACHE"):
        # JAX's persistent compilation cache, every program stored (the bench's own folder).
        jax.config.update("jax_compilation_cache_dir", os.environ["BENCH_IRT_JAX_CACHE"])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    from platinum_jax.data import ResponseTable
    from platinum_jax.inference import fit
    from platinum_jax.models import FourPL, OnePL, ThreePL, TwoPL

    s, i = np.nonzero(mask)
    cls = {"1pl": OnePL, "2pl": TwoPL, "3pl": ThreePL, "4pl": FourPL}[model]
    t0 = time.perf_counter()
    table = ResponseTable.from_arrays(s, i, y[s, i])
    res = fit(cls(), table, method=method)
    cold = time.perf_counter() - t0
    # Warm: the median of three more fits of the same shape (table included); a single one
    # swings with page faults on the freshly allocated matrices.
    warm_runs, warm_cpu = [], []
    for _ in range(WARM_REPEATS):
        t0, c0 = time.perf_counter(), time.process_time()
        res = fit(cls(), ResponseTable.from_arrays(s, i, y[s, i]), method=method)
        warm_runs.append(time.perf_counter() - t0)
        warm_cpu.append(time.process_time() - c0)
    warm = float(np.median(warm_runs))
    items = res.items
    a = (items["discrimination"].to_numpy() if "discrimination" in items
         else np.full(len(items), float(res.globals.loc["discrimination", "value"])))
    out = {"theta": res.subjects["ability"].to_numpy(), "b": items["difficulty"].to_numpy(),
           "a": a, "seconds": cold, "warm_seconds": warm,
           "warm_cpu_seconds": float(np.median(warm_cpu)), "converged": res.converged,
           "iterations": res.diagnostics["iterations"]}
    if model in ("3pl", "4pl"):
        out["c"] = items["guessing"].to_numpy()
    if model == "4pl":
        out["d"] = items["upper"].to_numpy()
    return out


def run_ours_map(model, y, mask):
    return run_ours(model, y, mask, method="map")


def run_ours_hier(model, y, mask):
    """The 2PL with item parameters drawn around learned means and spreads
    (``HierarchicalTwoPL``, every item in one group), fitted by the marginal method: the
    spreads shrink poorly measured discriminations, as a prior on them does in py-irt."""
    import dataclasses

    import pandas as pd

    from platinum_jax._runtime import enable_float64

    enable_float64()
    from platinum_jax.data import ResponseTable
    from platinum_jax.inference import fit
    from platinum_jax.models import HierarchicalTwoPL

    if model != "2pl":
        raise ValueError("ours-hier is a 2PL")
    s, i = np.nonzero(mask)

    def table():
        t = ResponseTable.from_arrays(s, i, y[s, i])
        return dataclasses.replace(t, groups=pd.Index(["all"], name="group"),
                                   item_group=np.zeros(t.n_items, np.int64))

    t0 = time.perf_counter()
    t = table()
    hier = HierarchicalTwoPL.for_table(t)
    res = fit(hier, t, method="marginal")
    cold = time.perf_counter() - t0
    warm_runs = []
    for _ in range(WARM_REPEATS):
        t0 = time.perf_counter()
        res = fit(hier, table(), method="marginal")
        warm_runs.append(time.perf_counter() - t0)
    items = hier.item_table(res)
    return {"theta": res.subjects["ability"].to_numpy(), "b": items["difficulty"].to_numpy(),
            "a": items["discrimination"].to_numpy(), "seconds": cold,
            "warm_seconds": float(np.median(warm_runs)), "converged": res.converged,
            "iterations": res.diagnostics["iterations"]}


def run_girth(model, y, mask):
    import girth

    data = np.where(mask, y, girth.INVALID_RESPONSE).T.astype(int)  # items x subjects
    t0 = time.perf_counter()
    if model == "1pl":
        est = girth.onepl_mml(data)
        a = np.full(data.shape[0], float(est["Discrimination"]))
    elif model == "2pl":
        est = girth.twopl_mml(data)
        a = np.asarray(est["Discrimination"], float)
    else:
        est = girth.threepl_mml(data)
        a = np.asarray(est["Discrimination"], float)
    b = np.asarray(est["Difficulty"], float)
    if model == "3pl":
        theta = girth.ability_3pl_eap(data, b, a, np.asarray(est["Guessing"], float))
    else:
        theta = girth.ability_eap(data, b, a)
    out = {"theta": np.asarray(theta, float), "b": b, "a": a,
           "seconds": time.perf_counter() - t0}
    if model == "3pl":
        out["c"] = np.asarray(est["Guessing"], float)
    return out


def run_pyirt(model, y, mask):
    import pandas as pd
    from py_irt.config import IrtConfig
    from py_irt.dataset import Dataset
    from py_irt.training import IrtModelTrainer

    n_s, n_i = y.shape
    wide = pd.DataFrame(np.where(mask, y, np.nan), columns=[f"i{k}" for k in range(n_i)])
    wide.insert(0, "subject", [f"s{k}" for k in range(n_s)])
    t0 = time.perf_counter()
    dataset = Dataset.from_pandas(wide, subject_column="subject",
                                  item_columns=[f"i{k}" for k in range(n_i)])
    trainer = IrtModelTrainer(data_path=None, config=IrtConfig(model_type=model, seed=0),
                              dataset=dataset, verbose=False)
    trainer.train()
    params = trainer.best_params
    seconds = time.perf_counter() - t0
    s_pos = [int(dataset.ix_to_subject_id[k][1:]) for k in range(n_s)]
    i_pos = [int(dataset.ix_to_item_id[k][1:]) for k in range(n_i)]
    theta, b = np.empty(n_s), np.empty(n_i)
    theta[s_pos] = np.asarray(params["ability"], float)
    b[i_pos] = np.asarray(params["diff"], float)
    if "disc" in params:
        a = np.empty(n_i)
        a[i_pos] = np.asarray(params["disc"], float)
    else:
        a = np.ones(n_i)
    return {"theta": theta, "b": b, "a": a, "seconds": seconds}


def run_theta(model, y, mask):
    """theta-irt 0.1.1: ``theta.fit`` (Bock-Aitkin EM on 61 Gauss-Hermite nodes, its
    defaults: ``max_iter=500``, ``tol=1e-4``, Beta priors on the 3PL/4PL asymptotes) on the
    dense subject x item matrix with NaN for missing cells, abilities by ``IRTModel.score``
    (EAP). Cold and warm as for ours: the matrix is built inside the timed region."""
    import theta  # sets jax_enable_x64 on import

    def once():
        dense = np.where(mask, y, np.nan)
        res = theta.fit(dense, model=model.upper())
        th, _ = res.score(dense)
        return res, th

    t0 = time.perf_counter()
    res, th = once()
    cold = time.perf_counter() - t0
    warm_runs, warm_cpu = [], []
    for _ in range(WARM_REPEATS):
        t0, c0 = time.perf_counter(), time.process_time()
        res, th = once()
        warm_runs.append(time.perf_counter() - t0)
        warm_cpu.append(time.process_time() - c0)
    out = {"theta": np.asarray(th, float), "b": np.asarray(res.b, float),
           "a": np.asarray(res.a, float), "seconds": cold,
           "warm_seconds": float(np.median(warm_runs)),
           "warm_cpu_seconds": float(np.median(warm_cpu)), "converged": bool(res.converged),
           "iterations": int(res.n_iter)}
    if model in ("3pl", "4pl"):
        out["c"] = np.asarray(res.c, float)
    if model == "4pl":
        out["d"] = np.asarray(res.d, float)
    return out


def _truth_asymptotes(model):
    """(guessing, upper) of the simulated data for ``model``."""
    return {"3pl": (0.2, 1.0), "4pl": (0.2, 0.9)}.get(model, (0.0, 1.0))


def worker(args):
    guessing, upper = _truth_asymptotes(args.model)
    y, mask, *_ = simulate(args.n_s, args.n_i, args.missing, args.seed, guessing, upper)
    fn = {"ours": run_ours, "ours-map": run_ours_map, "ours-hier": run_ours_hier,
          "girth": run_girth, "py-irt": run_pyirt, "theta-irt": run_theta}[args.tool]
    out = fn(args.model, y, mask)
    out["peak_mib"] = _peak_mib()
    np.savez(args.out, **{k: np.asarray(v) for k, v in out.items()})


# ---------------------------------------------------------------------- driver
# A 3PL/4PL fit is "at a boundary" when an asymptote or slope sits where the data cannot have
# put it: guessing below 0.001 or above 0.5, upper asymptote above 0.999 or below 0.5, a
# discrimination above 10 or below 0.05, or any non-finite estimate.
def at_boundary(res, model):
    a, b = np.asarray(res["a"]), np.asarray(res["b"])
    bad = ~np.isfinite(a) | ~np.isfinite(b) | (a > 10.0) | (a < 0.05)
    if "c" in res:
        c = np.asarray(res["c"])
        bad |= ~np.isfinite(c) | (c < 1e-3) | (c > 0.5)
    if model == "4pl" and "d" in res:
        d = np.asarray(res["d"])
        bad |= ~np.isfinite(d) | (d > 0.999) | (d < 0.5)
    return int(bad.sum())


def stability(model, size, args):
    """Ours and theta-irt on ``--stability-sets`` data sets (seeds 0, 1, ...) of ``size``:
    per tool, the fits that did not converge, the fits with any item at a boundary
    (:func:`at_boundary`) and the median fit time (warm repeats skipped)."""
    n_s, n_i = size
    guessing, upper = _truth_asymptotes(model)
    rows = []
    summary = {}
    for tool in ("ours", "theta-irt"):
        stats = {"failed": 0, "not_converged": 0, "boundary_fits": 0, "boundary_items": 0,
                 "seconds": [], "b_corr": []}
        for seed in range(args.stability_sets):
            _, _, theta, b, a = simulate(n_s, n_i, 0.0, seed, guessing, upper)
            res = launch(tool, model, n_s, n_i, 0.0, seed,
                         args.timeout if tool == "ours" else args.peer_timeout, warm=False)
            if "error" in res:
                stats["failed"] += 1
                continue
            stats["not_converged"] += int(not bool(res["converged"]))
            k = at_boundary(res, model)
            stats["boundary_fits"] += int(k > 0)
            stats["boundary_items"] += k
            stats["seconds"].append(float(res["seconds"]))
            m = metrics(align(res, theta, b, a), theta, b, a, model)
            stats["b_corr"].append(m["b"]["corr"])
        summary[tool] = stats
        print(f"stability {model}_{n_s}x{n_i} {tool:<9}: {args.stability_sets} data sets, "
              f"{stats['failed']} failed, {stats['not_converged']} not converged, "
              f"{stats['boundary_fits']} with items at a boundary "
              f"({stats['boundary_items']} items), median time "
              f"{np.median(stats['seconds']) if stats['seconds'] else float('nan'):.2f} s, "
              f"median r(b) {np.median(stats['b_corr']) if stats['b_corr'] else float('nan'):.4f}"
              f"; load average {_load()}", flush=True)
    if all(summary[t]["seconds"] for t in summary):
        ours_s = float(np.median(summary["ours"]["seconds"]))
        base_s = float(np.median(summary["theta-irt"]["seconds"]))
        rows.append({"name": f"{model}_{n_s}x{n_i}_stability_vs_theta-irt", "ours_s": ours_s,
                     "baseline_s": base_s, "ratio": base_s / ours_s, "max_abs_diff": None,
                     "ours_not_converged": summary["ours"]["not_converged"],
                     "ours_boundary_fits": summary["ours"]["boundary_fits"],
                     "theta_not_converged": summary["theta-irt"]["not_converged"],
                     "theta_boundary_fits": summary["theta-irt"]["boundary_fits"]})
    return rows


def align(est, theta, b, a):
    """Linear map of the estimated scale onto the truth's, by least squares on abilities."""
    th = est["theta"]
    ok = np.isfinite(th)
    A, B = np.polyfit(th[ok], theta[ok], 1) if ok.sum() > 2 else (np.nan, np.nan)
    return A * th + B, A * est["b"] + B, est["a"] / A


def metrics(aligned, theta, b, a, model):
    out = {}
    names = ("theta", "b", "a") if model != "1pl" else ("theta", "b")
    for name, est, true in zip(names, aligned, (theta, b, a), strict=False):
        finite = bool(np.all(np.isfinite(est)))
        ok = np.isfinite(est)
        out[name] = {"finite": finite, "n_nan": int((~ok).sum()),
                     "corr": float(np.corrcoef(est[ok], true[ok])[0, 1]) if ok.sum() > 2
                     else float("nan"),
                     "rmse": float(np.sqrt(np.mean((est[ok] - true[ok]) ** 2)))
                     if ok.any() else float("nan")}
    return out


PEER_PYTHON = sys.executable  # the interpreter of the peers' fits (--peer-python)


def launch(tool, model, n_s, n_i, missing, seed, timeout, cache=None, warm=True):
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if not warm:
        env["BENCH_IRT_WARM_REPEATS"] = "0"
    if cache is not None:
        env["BENCH_IRT_JAX_CACHE"] = cache
    python = PEER_PYTHON if tool in ("girth", "py-irt", "theta-irt") else sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.npz"
        cmd = [python, __file__, "--worker", tool, model, str(n_s), str(n_i),
               str(missing), str(seed), str(out)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  env=env)
        except subprocess.TimeoutExpired:
            return {"error": f"stopped after {timeout} s (the limit)", "stopped": timeout}
        if proc.returncode != 0 or not out.exists():
            return {"error": "failed: " + (proc.stderr.strip().splitlines()[-1]
                                           if proc.stderr.strip() else f"exit {proc.returncode}")}
        with np.load(out) as z:
            return {k: z[k] for k in z.files}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["200x100"],
                        help="subjects x items, e.g. 200x100 1000x500 5000x1000")
    parser.add_argument("--missing", nargs="+", type=float, default=[0.0, 0.3])
    parser.add_argument("--models", nargs="+", default=["1pl", "2pl"])
    parser.add_argument("--peers", nargs="+", default=["girth", "py-irt", "theta-irt"])
    parser.add_argument("--pyirt-max-cells", type=int, default=20_000,
                        help="run py-irt only up to this many subject x item cells")
    parser.add_argument("--pyirt-complete-only", action="store_true",
                        help="py-irt on the complete-data cases only")
    parser.add_argument("--no-3pl", action="store_true", help="skip the 3PL recovery rows")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per fit of ours")
    parser.add_argument("--peer-timeout", type=int, default=300,
                        help="seconds per fit of a peer (and of ours-map) before it is stopped")
    parser.add_argument("--map-models", nargs="*", default=[],
                        help="also fit these models by our joint MAP (ours-map), e.g. 1pl")
    parser.add_argument("--map-complete-only", action="store_true",
                        help="ours-map on the complete-data cases only")
    parser.add_argument("--hier-2pl", action="store_true",
                        help="also fit the 2PL with learned spreads of the item parameters "
                             "(ours-hier: HierarchicalTwoPL, all items in one group, marginal)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stability-models", nargs="*", default=[],
                        help="also fit these models (3pl, 4pl) by ours and theta-irt on "
                             "--stability-sets data sets of the first size and count the "
                             "non-converged and boundary fits")
    parser.add_argument("--stability-sets", type=int, default=10)
    parser.add_argument("--peer-python", default=sys.executable,
                        help="Python interpreter with girth and py-irt installed (default: this "
                             "one); py-irt 0.7.1 pins pandas < 3, so it may need its own "
                             "virtual environment")
    parser.add_argument("--worker", nargs=7, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global PEER_PYTHON
    PEER_PYTHON = args.peer_python
    if args.worker:
        w = argparse.Namespace(tool=args.worker[0], model=args.worker[1],
                               n_s=int(args.worker[2]), n_i=int(args.worker[3]),
                               missing=float(args.worker[4]), seed=int(args.worker[5]),
                               out=args.worker[6])
        worker(w)
        return
    for peer in args.peers:
        if peer not in ("girth", "py-irt", "theta-irt"):
            parser.error(f"unknown peer {peer!r}; choose from girth, py-irt and theta-irt")
    sizes = []
    for s in args.sizes:
        try:
            n_s, n_i = (int(x) for x in s.lower().split("x"))
        except ValueError:
            parser.error(f"--sizes takes SUBJECTSxITEMS such as 200x100 (got {s!r})")
        sizes.append((n_s, n_i))
    for m in args.map_models:
        if m not in ("1pl", "2pl"):
            parser.error(f"--map-models takes 1pl and/or 2pl (got {m!r})")
    print(f"# machine: {os.cpu_count()} CPU cores; python {sys.version.split()[0]}; "
          f"load average at start {_load()}")
    print(f"# limits: ours {args.timeout} s per fit, peers and ours-map {args.peer_timeout} s; "
          f"py-irt up to {args.pyirt_max_cells:,} cells")
    header = (f"{'case':<28} {'tool':<8} {'time_s':>8} {'peak_MiB':>9}  "
              f"{'theta r/rmse':>14} {'b r/rmse':>14} {'a r/rmse':>14} {'non-finite':>11}")
    print(header)
    json_lines, failed = [], []
    runs = [(n_s, n_i, miss, model) for n_s, n_i in sizes for miss in args.missing
            for model in args.models]
    if not args.no_3pl:
        runs.append((sizes[0][0], sizes[0][1], 0.0, "3pl"))
    for n_s, n_i, miss, model in runs:
        guessing, upper = _truth_asymptotes(model)
        _, _, theta, b, a = simulate(n_s, n_i, miss, args.seed, guessing, upper)
        case = f"{model}_{n_s}x{n_i}_{'complete' if miss == 0 else f'{miss:.0%}missing'}"
        results, stopped = {}, {}
        tools = ["ours", *args.peers]
        if model in args.map_models and not (args.map_complete_only and miss > 0):
            tools.insert(1, "ours-map")
        if model == "2pl" and args.hier_2pl:
            tools.insert(1, "ours-hier")
        for tool in tools:
            if tool == "py-irt" and model in ("3pl", "4pl"):
                print(f"{case:<28} {tool:<8} not run: py-irt is fitted as a 1PL/2PL here")
                continue
            if tool == "girth" and model == "4pl":
                print(f"{case:<28} {tool:<8} not run: girth 0.8.0 has no 4PL")
                continue
            if tool == "py-irt" and n_s * n_i > args.pyirt_max_cells:
                print(f"{case:<28} {tool:<8} not run: {n_s * n_i:,} cells is over "
                      f"--pyirt-max-cells {args.pyirt_max_cells:,} (its SVI time grows with "
                      "the responses; it would not finish within the limit)")
                continue
            if tool == "py-irt" and args.pyirt_complete_only and miss > 0:
                print(f"{case:<28} {tool:<8} not run: --pyirt-complete-only (to keep the run "
                      "within the machine time available)")
                continue
            limit = args.timeout if tool == "ours" else args.peer_timeout
            if tool != "ours":
                res = launch(tool, model, n_s, n_i, miss, args.seed, limit)
            else:
                # Cold: a fresh process with an empty persistent compilation cache; then a
                # second fresh process that finds the first one's compiled program there.
                with tempfile.TemporaryDirectory() as cache:
                    res = launch(tool, model, n_s, n_i, miss, args.seed, limit, cache)
                    if "error" not in res:
                        again = launch(tool, model, n_s, n_i, miss, args.seed, limit, cache)
                        if "error" not in again:
                            res["cached_seconds"] = again["seconds"]
            if "error" in res:
                print(f"{case:<28} {tool:<8} {res['error']}")
                if tool == "ours":
                    failed.append(case)
                if "stopped" in res:
                    stopped[tool] = float(res["stopped"])
                continue
            aligned = align(res, theta, b, a)
            m = metrics(aligned, theta, b, a, model)
            results[tool] = (res, aligned, m)
            cells = [f"{m[k]['corr']:.3f}/{m[k]['rmse']:.3f}" if k in m else "-"
                     for k in ("theta", "b", "a")]
            nan = "/".join(str(m[k]["n_nan"]) for k in ("theta", "b", "a") if k in m)
            warm = f"  warm {float(res['warm_seconds']):.3f}" if "warm_seconds" in res else ""
            if "warm_cpu_seconds" in res:
                warm += f" ({float(res['warm_cpu_seconds']):.3f} CPU)"
            if "cached_seconds" in res:
                warm += f"  cached {float(res['cached_seconds']):.2f}"
            print(f"{case:<28} {tool:<8} {float(res['seconds']):8.2f} "
                  f"{float(res['peak_mib']):9.0f}  {cells[0]:>14} {cells[1]:>14} "
                  f"{cells[2]:>14} {nan:>11}{warm}  (load {os.getloadavg()[0]:.2f})",
                  flush=True)
            if model in ("3pl", "4pl") and "c" in res:
                c = res["c"]
                print(f"{'':<28} {tool:<8} guessing: mean {np.mean(c):.3f} (truth "
                      f"{guessing}), RMSE {np.sqrt(np.mean((c - guessing) ** 2)):.3f}")
            if model == "4pl" and "d" in res:
                d = res["d"]
                print(f"{'':<28} {tool:<8} upper: mean {np.mean(d):.3f} (truth {upper}), "
                      f"RMSE {np.sqrt(np.mean((d - upper) ** 2)):.3f}")
        peers = [t for t in results if t not in ("ours", "ours-map", "ours-hier")]
        if "ours" in results and peers:
            fastest_peer = min(peers, key=lambda t: float(results[t][0]["seconds"]))
            # the fastest peer, and theta-irt as well when it was not the fastest
            also = ["theta-irt"] if "theta-irt" in peers else []
            for fastest in dict.fromkeys([fastest_peer, *also]):
                ours_s = float(results["ours"][0]["seconds"])
                base_s = float(results[fastest][0]["seconds"])
                gap = np.abs(results["ours"][1][1] - results[fastest][1][1])
                diff = float(np.max(gap[np.isfinite(gap)])) if np.isfinite(gap).any() else None
                json_lines.append({"name": f"{case}_vs_{fastest}", "ours_s": ours_s,
                                   "baseline_s": base_s, "ratio": base_s / ours_s,
                                   "max_abs_diff": diff})
                for mode in ("warm", "cached"):
                    if f"{mode}_seconds" in results["ours"][0]:
                        t = float(results["ours"][0][f"{mode}_seconds"])
                        # warm against warm where the peer has one (theta-irt), else its cold time
                        peer = results[fastest][0]
                        base = float(peer["warm_seconds"]) if mode == "warm" and \
                            "warm_seconds" in peer else base_s
                        json_lines.append({"name": f"{case}_vs_{fastest}_{mode}", "ours_s": t,
                                           "baseline_s": base, "ratio": base / t,
                                           "max_abs_diff": diff})
                if "warm_cpu_seconds" in results["ours"][0] and \
                        "warm_cpu_seconds" in results[fastest][0]:
                    t = float(results["ours"][0]["warm_cpu_seconds"])
                    base = float(results[fastest][0]["warm_cpu_seconds"])
                    json_lines.append({"name": f"{case}_vs_{fastest}_warm_cpu", "ours_s": t,
                                       "baseline_s": base, "ratio": base / t,
                                       "max_abs_diff": diff})
        elif "ours" in results and any(t in stopped for t in args.peers):
            ours_s = float(results["ours"][0]["seconds"])
            first = min((t for t in args.peers if t in stopped), key=stopped.get)
            json_lines.append({"name": f"{case}_vs_{first}_stopped", "ours_s": ours_s,
                               "baseline_s": stopped[first],
                               "ratio": stopped[first] / ours_s, "max_abs_diff": None})
            for mode in ("warm", "cached"):
                if f"{mode}_seconds" in results["ours"][0]:
                    t = float(results["ours"][0][f"{mode}_seconds"])
                    json_lines.append({"name": f"{case}_vs_{first}_stopped_{mode}",
                                       "ours_s": t, "baseline_s": stopped[first],
                                       "ratio": stopped[first] / t, "max_abs_diff": None})
    for model in args.stability_models:
        json_lines += stability(model, sizes[0], args)
    print(f"# load average at end {_load()}")
    for row in json_lines:
        print(json.dumps(row))
    if failed:
        sys.exit(f"our fit failed or ran out of time in {', '.join(failed)}")


if __name__ == "__main__":
    main()
