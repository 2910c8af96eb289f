"""The measured-primitives analysis from the authors' release, timed end to end.

One JSON line per case:

* ``cli_{view}``: ``platinum-jax platinum RELEASE --view {view}`` in a fresh process (reading
  the release, the draws, the compiled decisions, CSVs, JSON and four figures), with its wall
  time ``wall_s`` and the CPU time of the process ``cpu_s`` (user + system): the analysis is
  meant to finish within a minute on two CPU cores.  ``--draws`` as given (default 200).
* ``items_vs_numpy``: the item view's decisions over the same draws, ours
  (:func:`platinum_jax.design.posterior_decisions`, compilation excluded) against NumPy's closed
  form ``v*_i = w_i/(1 + r c_i σ²_i)`` and Definition 1 for diagonal primitives, with
  ``max_abs_diff`` of the mean ``v*`` and ``p_mismatch`` of P(platinum).

Run from the repository root: ``python benchmarks/bench_platinum_release.py [--draws D]``.
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

RELEASE = Path("..") / "shared" / "data" / "principal-agent-benchmarks"


def _cli(view: str, draws: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "platinum_jax.cli", "platinum", str(RELEASE),
                              "--view", view, "--draws", str(draws), "--out",
                              str(Path(tmp) / "out")],
                             capture_output=True, text=True, env={**os.environ,
                                                                  "PLATINUM_JAX_CACHE": "off"})
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"name": f"cli_{view}", "draws": draws, "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2)}


def _items_vs_numpy(draws: int) -> dict:

    from platinum_jax._runtime import enable_float64

    enable_float64()
    from platinum_jax.design import measured_draws, posterior_decisions
    from platinum_jax.importers import read_principal_agent_release

    rel = read_principal_agent_release(RELEASE)
    prims, items, _ = measured_draws(rel, view="items", n_draws=draws, seed=0)
    r = float(1 / np.median(items["cost"] * items["sigma2"]))
    tau = 1 / np.sqrt(len(items))
    kw = dict(r_factors=(1.0,), tau_w=tau, tau_m=tau, tau_e=1.0)
    posterior_decisions(prims, r, **kw)  # compile
    t = time.perf_counter()
    post = posterior_decisions(prims, r, **kw)
    ours = time.perf_counter() - t
    t = time.perf_counter()
    c = 1 / np.diagonal(prims.A, axis1=1, axis2=2) ** 2
    v = prims.w / (1 + r * c * prims.d)
    cos_phi = prims.w / np.linalg.norm(prims.w, axis=1, keepdims=True)
    p = ((cos_phi >= tau) & (1 / (r * c * prims.d) >= 1.0)).mean(axis=0)
    base = time.perf_counter() - t
    return {"name": "items_vs_numpy", "draws": draws, "ours_s": round(ours, 3),
            "baseline_s": round(base, 4),
            "max_abs_diff": float(np.abs(post.items["mean"].to_numpy() - v.mean(axis=0)).max()),
            "p_mismatch": float(np.abs(post.items["p_platinum"].to_numpy() - p).max())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=200)
    args = ap.parse_args()
    for view in ("items", "concepts"):
        print(json.dumps(_cli(view, args.draws)), flush=True)
    print(json.dumps(_items_vs_numpy(args.draws)), flush=True)


if __name__ == "__main__":
    main()
