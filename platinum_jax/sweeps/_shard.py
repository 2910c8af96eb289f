"""Spreading the grid points of a sweep over every JAX device.

A chunk of grid-point indices is split along its only axis over a 1-D device mesh (axis name
``"points"``) with ``jax.shard_map``; the problem data are replicated.  Each device evaluates
its slice with ``vmap``, so results are bitwise what one device computes for the same points.
In a multi-host run (after ``jax.distributed.initialize()``) ``jax.devices()`` lists the devices
of every process, and the same mesh spans them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

__all__ = ["points_mesh", "shard_points", "place_indices", "gather"]

AXIS = "points"


def points_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A 1-D mesh named ``"points"`` over ``devices`` (default: all devices of all processes)."""
    devs = list(jax.devices() if devices is None else devices)
    if not devs:
        raise ValueError("points_mesh: no devices given; pass None to use jax.devices()")
    return Mesh(np.array(devs), (AXIS,))


def shard_points(fn: Callable, mesh: Mesh) -> Callable:
    """Wrap ``fn(data, idx)`` (``idx`` (B,), outputs with leading axis B) to run sharded over ``mesh``."""
    return jax.shard_map(fn, mesh=mesh, in_specs=(P(), P(AXIS)), out_specs=P(AXIS),
                         check_vma=False)


def place_indices(idx: np.ndarray, mesh: Mesh | None) -> jax.Array:
    """Put a chunk of flat grid indices on device(s), split over ``mesh`` when given."""
    if mesh is None:
        return jax.numpy.asarray(idx)
    # Every process builds the same index chunk, so each can hand over its own devices' slices.
    return jax.make_array_from_callback(idx.shape, NamedSharding(mesh, P(AXIS)), lambda s: idx[s])


def gather(tree):
    """Fetch (possibly cross-process) sharded results to NumPy on every process."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        return multihost_utils.process_allgather(tree, tiled=True)
    return jax.device_get(tree)
