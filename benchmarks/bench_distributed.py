"""Scaling over processes: one study on 1 process and on 2 processes of JAX's distributed runtime.

Cases (each run first on one process pinned to core 0, then on two processes pinned to cores 0
and 1 with ``taskset``, joined on the loopback address with Gloo collectives):

* ``sweep_general``: a general-path sweep (a Cholesky solve a point) over r x kappa on the
  synthetic default world; the points of every chunk are split over the two processes' devices;
* ``bootstrap_2pl``: bootstrap replicates of a 2PL fit; each process refits its share of the
  blocks of replicates (:func:`platinum_jax._distributed.spread`) and both gather all of them.

Each process compiles and runs the study once (warm-up), waits for the others, then runs it
again timed; ``ours_s`` is the two-process time of that second run, ``baseline_s`` the
one-process time, ``ratio`` baseline / ours (the speed-up; ideal 2.0 on two free cores),
``efficiency`` the speed-up over 2, ``max_abs_diff`` the largest difference between the two
results (they must agree), ``whole_s`` the wall time of the whole launch (start-up, joining and
compilation included).  The machine's load is printed first: on a loaded machine the pinned
processes share their cores with others and the speed-up says little.  ``--quick``: smaller
studies (about a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _study(case: str, quick: bool):
    """The function the timed run calls, returning a NumPy array to compare."""
    import numpy as np

    if case == "sweep_general":
        from platinum_jax.datasets import demo_world
        from platinum_jax.sweeps import CostScale, RiskAversion, Welfare, sweep

        n = 400 if quick else 1000
        base = demo_world(seed=0).primitives
        axes = [RiskAversion(np.geomspace(0.1, 10, n)), CostScale(np.linspace(0.5, 4, n))]
        return lambda: sweep(base, axes, [Welfare()], method="general",
                             chunk_size=1 << 15)["welfare"].values
    if case == "bootstrap_2pl":
        from platinum_jax.inference import bootstrap_replicates, fit_map, simulate
        from platinum_jax.models import TwoPL

        table, _ = simulate(TwoPL(), 200, 30, seed=1, density=0.9)
        point = fit_map(TwoPL(), table)
        replicates = 32 if quick else 128
        return lambda: np.concatenate(
            [np.asarray(t).reshape(replicates, -1) for t in
             bootstrap_replicates(point, replicates, seed=2, chunk=4, block=8).theta], axis=1)
    raise ValueError(f"unknown case {case!r}")


def worker(case: str, out: str, coordinator: str, process: int, processes: int,
           quick: bool) -> None:
    """One process of a run: warm-up, barrier, timed run; times and result to ``out``."""
    if processes > 1:
        from platinum_jax import _distributed

        _distributed.join(coordinator, processes, process, heartbeat=30)
    from platinum_jax._runtime import enable_float64

    enable_float64()
    import numpy as np
    from jax.experimental import multihost_utils

    run = _study(case, quick)
    run()  # compile
    if processes > 1:
        multihost_utils.sync_global_devices("timed run")
    t0 = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - t0
    if process == 0:
        np.save(Path(out) / "result.npy", result)
        (Path(out) / "time.json").write_text(json.dumps({"seconds": seconds}))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(case: str, processes: int, quick: bool) -> tuple[float, float, object]:
    """Run ``case`` on ``processes`` pinned processes; (timed seconds, whole seconds, result)."""
    import numpy as np

    with tempfile.TemporaryDirectory() as out:
        coordinator = f"127.0.0.1:{_free_port()}"
        env = dict(os.environ, JAX_PLATFORMS="cpu", OPENBLAS_NUM_THREADS="1")
        start = time.perf_counter()
        procs = [subprocess.Popen(
            ["taskset", "-c", str(i % os.cpu_count()), sys.executable, __file__, "--worker",
             case, out, coordinator, str(i), str(processes)] + (["--quick"] if quick else []),
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i in range(processes)]
        for i, p in enumerate(procs):
            _, err = p.communicate(timeout=1800)
            if p.returncode != 0:
                for q in procs:
                    q.kill()
                raise SystemExit(f"{case}: process {i} of {processes} failed "
                                 f"(exit {p.returncode}):\n{err[-3000:]}")
        whole = time.perf_counter() - start
        seconds = json.loads((Path(out) / "time.json").read_text())["seconds"]
        return seconds, whole, np.load(Path(out) / "result.npy")


def main() -> None:
    if "--worker" in sys.argv:
        i = sys.argv.index("--worker")
        case, out, coordinator, process, processes = sys.argv[i + 1:i + 6]
        worker(case, out, coordinator, int(process), int(processes), "--quick" in sys.argv)
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller studies (about a minute)")
    parser.add_argument("--cases", nargs="*", default=["sweep_general", "bootstrap_2pl"])
    args = parser.parse_args()
    import numpy as np

    if os.cpu_count() < 2:
        raise SystemExit("bench_distributed needs at least two cores (one per process)")
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores; load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f} before the runs", flush=True)
    rows = []
    for case in args.cases:
        t1, w1, r1 = launch(case, 1, args.quick)
        t2, w2, r2 = launch(case, 2, args.quick)
        row = {"name": case, "ours_s": round(t2, 4), "baseline_s": round(t1, 4),
               "ratio": round(t1 / t2, 3), "efficiency": round(t1 / t2 / 2, 3),
               "max_abs_diff": float(np.max(np.abs(np.asarray(r1) - np.asarray(r2)))),
               "whole_s": {"1": round(w1, 2), "2": round(w2, 2)}, "size": r1.shape}
        print(f"{case}: 1 process {t1:.3f} s, 2 processes {t2:.3f} s, speed-up "
              f"{t1 / t2:.2f}x (efficiency {t1 / t2 / 2:.0%}), results differ by at most "
              f"{row['max_abs_diff']:.2e}", flush=True)
        rows.append(row)
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
