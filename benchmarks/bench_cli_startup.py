"""Whole-process time of the command line against the NumPy/SciPy pipeline it replaces.

What a user feels is the whole process: start Python, import, read the CSV, fit, write tables.
Both sides run as subprocesses, alternately, several times, in one run, on the public Epoch
``scores_long.csv``:

* ``help``: ``platinum-jax --help`` (no baseline: the target is an absolute 0.5 s);
* ``stitch_cold``: ``platinum-jax stitch scores_long.csv --out D`` with an empty compilation
  cache (a first run);
* ``stitch_warm``: the same with the cache filled by an earlier run (every later run);
* the baseline of both stitch cases is ``python ../shared/bench/scipy_stitch_pipeline.py
  scores_long.csv D``: the paper's fit by SciPy's ``least_squares`` (TRF, finite differences).

Both sides get ``OPENBLAS_NUM_THREADS=1`` (and one thread for XLA's CPU client): on a busy
2-core machine a multi-threaded BLAS makes the SciPy side look slower than it is.  Both keep
Python's compiled bytecode between runs (Python's default; in a scratch directory here, so
that a machine with ``PYTHONDONTWRITEBYTECODE`` set times what users run, not recompilation of
every module at every start), and each side runs once untimed before the timed runs.  Times are
medians over ``--repeats`` runs.  Ends with one JSON line per case: name, ours_s, baseline_s,
ratio (baseline / ours; > 1 means we are faster), max_abs_diff (largest difference between the
two sides' capabilities, ours from the run, SciPy's from its output table).  The processor
seconds (user + system) of each child are printed beside the wall times: on a machine shared
with other jobs they stretch far less than wall time does.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "epoch-benchmark-stitching" / "scores_long.csv"
SCIPY_SCRIPT = ROOT.parent / "shared" / "bench" / "scipy_stitch_pipeline.py"


BYTECODE: Path | None = None  # where both sides keep compiled Python modules (set in main)


def _env(cache: Path | str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        PLATINUM_JAX_CACHE=str(cache),
    )
    # Python's default: modules compiled to bytecode once and read back later. A machine that
    # turns it off (PYTHONDONTWRITEBYTECODE) recompiles every module of an editable install on
    # every start; the compiled files go to the run's scratch directory, not the checkout.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if BYTECODE is not None:
        env["PYTHONPYCACHEPREFIX"] = str(BYTECODE)
    return env


CPU: dict[str, list[float]] = {}  # processor seconds (user + system) of each child, by case


def _timed(cmd: list[str], env: dict[str, str], case: str | None = None) -> float:
    """Wall seconds of ``cmd`` as a subprocess; its processor seconds go to ``CPU[case]``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    if case is not None:
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        CPU.setdefault(case, []).append(cpu)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per case (default 5)")
    args = parser.parse_args()
    if args.repeats < 1:
        sys.exit("--repeats must be >= 1")
    for needed in (DATA, SCIPY_SCRIPT):
        if not needed.exists():
            sys.exit(f"missing {needed.relative_to(ROOT.parent)}; it sits beside the repository")
    ours = [sys.executable, "-m", "platinum_jax.cli"]
    scipy_cmd = [sys.executable, str(SCIPY_SCRIPT), str(DATA)]
    work = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    global BYTECODE
    BYTECODE = work / "bytecode"
    try:
        warm_cache = work / "warm-cache"
        out_ours, out_scipy = work / "ours", work / "scipy"
        # Fill the warm cache and both sides' bytecode once (not timed).
        run = [*ours, "stitch", str(DATA), "--out", str(out_ours), "--overwrite"]
        _timed(run, _env(warm_cache))
        _timed([*scipy_cmd, str(out_scipy)], _env("off"))
        times: dict[str, list[float]] = {"help": [], "cold": [], "warm": [], "scipy": []}
        loads = [os.getloadavg()[0]]
        for k in range(args.repeats):
            times["help"].append(_timed([*ours, "--help"], _env("off"), "help"))
            cold_cache = work / f"cold-cache-{k}"
            times["cold"].append(_timed(run, _env(cold_cache), "cold"))
            times["warm"].append(_timed(run, _env(warm_cache), "warm"))
            times["scipy"].append(_timed([*scipy_cmd, str(out_scipy)], _env("off"), "scipy"))
            loads.append(os.getloadavg()[0])
        caps_ours = pd.read_csv(out_ours / "capabilities.csv", index_col="model")["capability"]
        caps_scipy = pd.read_csv(out_scipy / "capabilities.csv", index_col="model")["capability"]
        diff = float(np.max(np.abs(caps_ours - caps_scipy.reindex(caps_ours.index))))
        spearman = float(caps_ours.rank().corr(caps_scipy.reindex(caps_ours.index).rank()))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {k: float(np.median(v)) for k, v in times.items()}
    print(f"{os.cpu_count()} CPU(s), {args.repeats} runs per case, 1-minute load average "
          f"{min(loads):.1f}-{max(loads):.1f} (median {np.median(loads):.1f}); medians:")
    for k, v in times.items():
        print(f"  {k:6s} {med[k]:.2f} s  (runs: {', '.join(f'{x:.2f}' for x in v)}); processor "
              f"time {np.median(CPU[k]):.2f} s")
    # On a loaded machine wall times stretch with everyone's jobs; processor seconds much less.
    print(f"processor-time ratio, scipy / ours: cold {np.median(CPU['scipy']) / np.median(CPU['cold']):.2f}, "
          f"warm {np.median(CPU['scipy']) / np.median(CPU['warm']):.2f}")
    print(f"capabilities: max |ours - scipy| = {diff:.3g}, Spearman {spearman:.4f}")
    cases = [
        {"name": "help", "ours_s": med["help"], "baseline_s": None, "ratio": None,
         "max_abs_diff": None},
        {"name": "stitch_cold", "ours_s": med["cold"], "baseline_s": med["scipy"],
         "ratio": med["scipy"] / med["cold"], "max_abs_diff": diff},
        {"name": "stitch_warm", "ours_s": med["warm"], "baseline_s": med["scipy"],
         "ratio": med["scipy"] / med["warm"], "max_abs_diff": diff},
    ]
    for case in cases:
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in case.items()}))


if __name__ == "__main__":
    main()
