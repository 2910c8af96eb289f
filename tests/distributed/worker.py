"""One process of a multi-process test run: ``worker.py TASK OUT COORDINATOR PROCESS_ID``
(COORDINATOR ``none``: a process on its own, the reference).

Tasks:
* ``library``: the sharded library paths (a general-path sweep, the streamed 2PL fit, the
  first-order MAP fit, bootstrap replicates spread over the processes) and the chunk-store
  rule; results to ``OUT/library-<process>.npz`` and the rule's messages to
  ``OUT/library-<process>.json``;
* ``die``: process 1 exits with status 3 after the first exchange; process 0 goes on to the next
  one and must not wait for ever.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

task, out, coordinator, process = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])

from platinum_jax import _distributed  # noqa: E402

if coordinator != "none":
    _distributed.join(coordinator, 2, process, heartbeat=2 if task == "die" else 10, timeout=60)

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import numpy as np  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402


def library() -> None:
    from platinum_jax.data import CodedResponses
    from platinum_jax.datasets import demo_world
    from platinum_jax.inference import bootstrap_replicates, fit_map, fit_streamed_2pl, simulate
    from platinum_jax.models import TwoPL
    from platinum_jax.sweeps import CostScale, RiskAversion, WeightSummary, Welfare, sweep

    res: dict[str, np.ndarray] = {}
    base = demo_world(seed=0).primitives
    axes = [RiskAversion(np.geomspace(0.1, 10, 12)), CostScale(np.linspace(0.5, 4, 10))]
    ds = sweep(base, axes, [WeightSummary(), Welfare()], method="general", chunk_size=40)
    res["sweep_welfare"] = ds["welfare"].values
    res["sweep_devices"] = np.array(ds.attrs["n_devices"])

    rng = np.random.default_rng(6)
    n_s, n_i = 300, 8
    theta, b = rng.normal(size=n_s), rng.normal(size=n_i)
    a = np.exp(rng.normal(0, 0.3, n_i))
    s, i = np.meshgrid(np.arange(n_s), np.arange(n_i), indexing="ij")
    s, i = s.ravel(), i.ravel()
    y = (rng.random(s.size) < 1 / (1 + np.exp(-a[i] * (theta[s] - b[i])))).astype(np.int8)
    streamed = fit_streamed_2pl(CodedResponses.from_arrays(s, i, y), tol=1e-8,
                                block_cells=64 * n_i, mesh=True)
    res["stream_items"] = streamed.items.to_numpy()
    res["stream_devices"] = np.array(streamed.diagnostics["devices"])

    table, _ = simulate(TwoPL(), 41, 9, seed=4, density=0.8)
    first = fit_map(TwoPL(), table, mesh=True, solver="first_order", max_steps=40, gtol=0.0,
                    ftol=0.0)
    res["first_order_ability"] = first.subjects["ability"].to_numpy()

    # Refits by the engine's Newton solver from the first-order estimate, two a block.
    reps = bootstrap_replicates(first, 6, seed=3, chunk=2, block=2)
    res["bootstrap_theta"] = np.concatenate(
        [np.asarray(t).reshape(6, -1) for t in reps.theta], axis=1)
    np.savez(out / f"library-{process}.npz", **res)

    messages = {}
    if jax.process_count() > 1:
        store = out / "chunks" if process == 1 else None  # the rule: process 0's alone
        try:
            sweep(base, axes, [Welfare()], store=store, chunk_size=40)
        except ValueError as exc:
            messages["store_on_process_1"] = str(exc)
    (out / f"library-{process}.json").write_text(json.dumps(messages))


def die() -> None:
    multihost_utils.process_allgather(np.arange(3.0) + process)
    if process == 1:
        os._exit(3)
    multihost_utils.process_allgather(np.arange(3.0) + process)  # process 1 is gone
    print("the second exchange returned", flush=True)


{"library": library, "die": die}[task]()
