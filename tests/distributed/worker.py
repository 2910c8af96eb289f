"""One process of a multi-process test run: ``worker.py TASK OUT COORDINATOR PROCESS_ID``
(the sweep and the streamed fit are checked through the command line).

Tasks:
* ``library``: the first-order MAP fit sharded over the processes' devices, bootstrap
  replicates spread over the processes, anchor and leave-one-out refits split over them, and
  the chunk-store rule; results to
  ``OUT/library-<process>.npz``, the rule's message to ``OUT/library-<process>.json``;
* ``die``: process 1 exits with status 3 after the first exchange; process 0 goes on to the next
  one and must not wait for ever.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np


def library(out: Path, process: int) -> None:
    from platinum_jax.datasets import demo_world
    from platinum_jax.inference import bootstrap_replicates, fit_map, simulate
    from platinum_jax.models import TwoPL
    from platinum_jax.sweeps import CostScale, RiskAversion, Welfare, sweep

    res: dict[str, np.ndarray] = {}
    table, _ = simulate(TwoPL(), 41, 9, seed=4, density=0.8)
    first = fit_map(TwoPL(), table, mesh=True, solver="first_order", max_steps=40, gtol=0.0,
                    ftol=0.0)
    res["first_order_ability"] = first.subjects["ability"].to_numpy()
    res["first_order_devices"] = np.array(first.diagnostics.get("devices", 1))
    # Refits by the engine's Newton solver from the first-order estimate, two a block.
    reps = bootstrap_replicates(first, 6, seed=3, chunk=2, block=2)
    res["bootstrap_theta"] = np.concatenate(
        [np.asarray(t).reshape(6, -1) for t in reps.theta], axis=1)
    res.update(robustness())
    np.savez(out / f"library-{process}.npz", **res)

    store = out / "chunks" if process == 1 else None  # the rule: the store is process 0's
    axes = [RiskAversion([0.5, 1.0]), CostScale([1.0, 2.0])]
    try:
        sweep(demo_world(seed=0).primitives, axes, [Welfare()], store=store)
        messages = {}
    except ValueError as exc:
        messages = {"store_on_process_1": str(exc)}
    (out / f"library-{process}.json").write_text(json.dumps(messages))


def robustness() -> dict[str, np.ndarray]:
    """Anchor and leave-one-out refits (each process refits its share), as arrays."""
    from platinum_jax import analysis as an
    from platinum_jax.datasets import synthetic_score_table
    from platinum_jax.models.rosetta import BenchmarkAnchor
    from platinum_jax.stitching import fit_stitching

    table, _ = synthetic_score_table(seed=1)
    base = fit_stitching(table, BenchmarkAnchor("bench_00"), 0.1)
    res = {}
    for name, rob in [
        ("anchor", an.anchor_robustness(table, table.benchmarks[1:3], baseline=base)),
        ("refit", an.leave_benchmarks_out(table, table.benchmarks[2:4], baseline=base,
                                          method="refit")),
        ("mask", an.leave_benchmarks_out(table, table.benchmarks[2:4], baseline=base))]:
        res[f"{name}_cost"] = rob.summary["cost"].to_numpy()
        res[f"{name}_capability"] = rob.capabilities.to_numpy()
    return res


def die(out: Path, process: int) -> None:
    from jax.experimental import multihost_utils

    multihost_utils.process_allgather(np.arange(3.0) + process)
    if process == 1:
        os._exit(3)
    multihost_utils.process_allgather(np.arange(3.0) + process)  # process 1 is gone
    print("the second exchange returned", flush=True)


if __name__ == "__main__":
    task, out, coordinator, process = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    from platinum_jax import _distributed

    _distributed.join(coordinator, 2, process, heartbeat=2 if task == "die" else 10, timeout=60)
    import jax

    jax.config.update("jax_enable_x64", True)
    {"library": library, "die": die}[task](out, process)
