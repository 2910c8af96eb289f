"""Running one job as several processes with JAX's multi-controller runtime.

Every process runs the same program; after :func:`join` (``jax.distributed.initialize``),
``jax.devices()`` lists the devices of all of them.  What this package does with that:

* sweeps and the sharded fits split their work over every device of every process and gather
  the result on each (:mod:`platinum_jax.sweeps`, the streamed and first-order fits);
* studies made of independent fits (bootstrap replicates, simulated worlds) give each process
  its share of the fits and gather the results (:func:`spread`);
* only process 0 writes an output directory (:func:`is_writer`); the others compute, agree
  with process 0 on whether it could claim the directory (:func:`agree`), and write nothing.

How a process learns its place, in the order tried by :func:`join`: explicit arguments
(the command line's ``--coordinator HOST:PORT --num-processes N --process-id I``), the
environment variables ``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID``,
or what JAX finds itself under a launcher (SLURM's ``srun``, Open MPI's ``mpirun``, a
Kubernetes job).  CPU processes exchange data through Gloo (TCP).  A process that dies is
noticed by the others at their next exchange, or by the runtime within ``heartbeat`` seconds,
and they stop with a non-zero status instead of waiting for it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping

__all__ = ["launcher_wants", "join", "joined", "is_writer", "agree", "spread"]

_STATE: dict[str, int] = {}
_MESSAGE_BYTES = 2048


def _env_int(env: Mapping[str, str], name: str) -> int | None:
    value = env.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} is not an integer") from None


def launcher_wants(env: Mapping[str, str] | None = None) -> str | None:
    """The launcher that started this process as one of several (``"srun"``, ``"mpirun"``,
    ``"JAX_COORDINATOR_ADDRESS"``), or None for a process on its own."""
    env = os.environ if env is None else env
    if env.get("JAX_COORDINATOR_ADDRESS"):
        return "JAX_COORDINATOR_ADDRESS"
    # Set by srun for the tasks of one job step (not by sbatch for the batch script itself).
    if (_env_int(env, "SLURM_STEP_NUM_TASKS") or 1) > 1 and "SLURM_PROCID" in env:
        return "srun"
    if (_env_int(env, "OMPI_COMM_WORLD_SIZE") or 1) > 1 and "OMPI_MCA_orte_hnp_uri" in env:
        return "mpirun"
    return None


def join(coordinator: str | None = None, num_processes: int | None = None,
         process_id: int | None = None, *, heartbeat: int = 10,
         timeout: int = 120) -> tuple[int, int]:
    """Join a multi-process run before any JAX array exists; ``(process_id, num_processes)``.

    Arguments left as None come from ``JAX_COORDINATOR_ADDRESS`` / ``JAX_NUM_PROCESSES`` /
    ``JAX_PROCESS_ID``, then from the launcher JAX detects.  ``heartbeat``: seconds after
    which the runtime declares a silent process dead and stops the others; ``timeout``:
    seconds to wait for every process to arrive.
    """
    import jax

    env = os.environ
    coordinator = coordinator or env.get("JAX_COORDINATOR_ADDRESS") or None
    num_processes = num_processes if num_processes is not None else _env_int(
        env, "JAX_NUM_PROCESSES")
    process_id = process_id if process_id is not None else _env_int(env, "JAX_PROCESS_ID")
    if num_processes is not None and num_processes < 1:
        raise ValueError(f"--num-processes must be at least 1, got {num_processes}")
    if process_id is not None and num_processes is not None and not 0 <= process_id < num_processes:
        raise ValueError(f"--process-id must be in 0..{num_processes - 1}, got {process_id}")
    if coordinator is not None and ":" not in coordinator:
        raise ValueError(f"--coordinator must be HOST:PORT (e.g. 10.0.0.1:1234), got "
                         f"{coordinator!r}")
    # CPU processes talk over Gloo; GPU and TPU back-ends bring their own collectives.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes,
                                   process_id=process_id, heartbeat_timeout_seconds=heartbeat,
                                   initialization_timeout=timeout)
    except ValueError as exc:
        raise ValueError(
            f"cannot join a multi-process run ({exc}): give --coordinator HOST:PORT "
            "--num-processes N --process-id I (or JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, "
            "JAX_PROCESS_ID), or start the command under srun or mpirun"
        ) from None
    _STATE.update(process=jax.process_index(), processes=jax.process_count())
    return _STATE["process"], _STATE["processes"]


def joined() -> bool:
    """Whether this process is one of several (after :func:`join` or a user's own
    ``jax.distributed.initialize``)."""
    if _STATE:
        return _STATE["processes"] > 1
    if "jax" not in sys.modules:
        return False
    try:  # a user's own initialize() is recorded here only
        from jax._src import distributed

        state = distributed.global_state
        return state.client is not None and (state.num_processes or 1) > 1
    except (ImportError, AttributeError):
        import jax

        return jax.process_count() > 1


def is_writer() -> bool:
    """Whether this process writes outputs: process 0 of a multi-process run, or a process
    on its own."""
    if not joined():
        return True
    import jax

    return jax.process_index() == 0


def agree(error: str | None) -> None:
    """Process 0's word on a step every process takes (claiming ``--out``): every process
    calls this; ``error`` is process 0's message when the step failed there (ignored on the
    others).  On processes other than 0 a failure becomes a ``ValueError`` naming it, so all
    stop together.  Does nothing in a process on its own."""
    if not joined():
        return
    import numpy as np
    from jax.experimental import multihost_utils

    buf = np.zeros(_MESSAGE_BYTES, np.uint8)
    if error is not None:
        raw = error.encode()[: _MESSAGE_BYTES - 1] or b"?"
        buf[: len(raw)] = np.frombuffer(raw, np.uint8)
    got = np.asarray(multihost_utils.broadcast_one_to_all(buf))
    if not is_writer() and got.any():
        text = bytes(got[got > 0].tobytes()).decode(errors="replace")
        raise ValueError(f"process 0 stopped: {text}")


def spread(run: Callable[[int], object], n: int,
           progress: Callable[[int, int], None] | None = None) -> list:
    """``[run(0), ..., run(n - 1)]`` on every process, each process running its share.

    ``run(k)`` must return a pytree of arrays of the same structure and shapes for every
    ``k`` (the blocks of a bootstrap, the worlds of a calibration study).  With P processes,
    process p runs ``k = p, p + P, ...`` (the last round padded with repeats of block n - 1,
    so that every process takes part in every exchange), and the results are gathered.
    ``progress(done, n)`` is called as this process finishes its blocks (``done`` counts
    every process's, assuming they keep pace).  On one process this is a plain loop.
    """
    if n < 1:
        raise ValueError(f"spread needs at least one block, got n={n}")
    if not joined():
        out = []
        for k in range(n):
            out.append(run(k))
            if progress is not None:
                progress(k + 1, n)
        return out
    import jax
    import numpy as np
    from jax.experimental import multihost_utils

    size, me = jax.process_count(), jax.process_index()
    rounds = -(-n // size)
    mine = []
    for j in range(rounds):
        mine.append(jax.tree_util.tree_map(np.asarray, run(min(j * size + me, n - 1))))
        if progress is not None:
            progress(min((j + 1) * size, n), n)
    stacked = jax.tree_util.tree_map(lambda *a: np.stack(a), *mine)
    gathered = multihost_utils.process_allgather(stacked)  # leaves (size, rounds, ...)
    flat = jax.tree_util.tree_map(
        lambda a: np.asarray(a).swapaxes(0, 1).reshape(size * rounds, *a.shape[2:]), gathered)
    return [jax.tree_util.tree_map(lambda a, k=k: a[k], flat) for k in range(n)]
