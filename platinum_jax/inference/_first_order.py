"""Penalised MAP by a first-order method (optax L-BFGS), for data too large for the
Levenberg-Marquardt system, with the responses optionally sharded across devices.

The objective is the same as :func:`~platinum_jax.inference.solve_map`'s: ``sum_rows w * loss
+ penalties``. One evaluation is a gather of each row's subject and item parameters, the
row losses, and (in the gradient) segment sums back onto subjects and items: ``O(rows)`` time
and memory, with no per-row Hessians and no Schur complement. L-BFGS (optax, zoom line search)
needs more iterations than Levenberg-Marquardt but each is several times cheaper, which wins
from a few million responses on.

Sharding: with a 1-D :class:`jax.sharding.Mesh` the response rows are split across its devices
(``NamedSharding(mesh, P(axis))``, padded to a multiple of the device count with rows of zero
weight) and the parameters are replicated; XLA turns the segment sums into per-device partial
sums and one all-reduce, so the answer is the one-device answer up to the order of summation.
Across hosts, call :func:`jax.distributed.initialize` on every host first and build the mesh
over :func:`jax.devices` (all hosts' devices); each host then holds its own shard of the rows.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ._map import MAPResult
from ._problem import Data, Problem, Theta

__all__ = ["solve_first_order", "first_order_solver", "row_mesh", "shard_rows", "replicate"]


def row_mesh(devices=None, axis: str = "rows") -> jax.sharding.Mesh:
    """A 1-D mesh over ``devices`` (default: every device JAX sees, all hosts' included)."""
    devices = jax.devices() if devices is None else list(devices)
    if not devices:
        raise ValueError("row_mesh needs at least one device")
    return jax.sharding.Mesh(np.asarray(devices), (axis,))


def shard_rows(data: Data, mesh: jax.sharding.Mesh) -> Data:
    """``data`` padded to a multiple of the mesh's device count (copies of the first row with
    weight 0, so every likelihood stays finite on them) and split across the mesh's one axis."""
    if len(mesh.axis_names) != 1:
        raise ValueError(
            f"the responses shard over a 1-D mesh; this one has axes {mesh.axis_names}: build "
            "one with row_mesh()"
        )
    n = int(data.response.shape[0])
    pad = (-n) % mesh.size

    def padded(a, fill_weight=False):
        a = jnp.asarray(a)
        if pad == 0:
            return a
        extra = jnp.zeros((pad,), a.dtype) if fill_weight else jnp.broadcast_to(a[:1], (pad,))
        return jnp.concatenate([a, extra])

    rows = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(mesh.axis_names[0]))
    out = Data(padded(data.subject_index), padded(data.item_index), padded(data.response),
               padded(data.trials), padded(data.weight, fill_weight=True))
    return jax.tree_util.tree_map(lambda a: jax.device_put(a, rows), out)


def solve_first_order(
    problem: Problem,
    theta0: Theta,
    data: Data,
    *,
    max_steps: int = 2000,
    gtol: float = 1e-4,
    ftol: float = 1e-13,
    memory: int = 10,
) -> MAPResult:
    """Minimise :meth:`Problem.objective` from ``theta0`` by L-BFGS (jittable).

    Stops when the largest gradient entry is at most ``gtol`` (absolute, the objective being a
    sum over rows), when an iteration lowers the objective by less than ``ftol`` relative to
    it, or after ``max_steps`` iterations (then ``converged`` is False). Fixed entries keep
    their values (their gradient is zero)."""
    free = Theta(*(jnp.asarray(f) for f in (problem.free_S, problem.free_I, problem.free_G)))
    fixed = theta0

    def objective(theta):
        full = Theta(*(jnp.where(f, t, x) for f, t, x in zip(free, theta, fixed, strict=True)))
        return problem.objective(full, data)

    opt = optax.lbfgs(memory_size=memory)
    value_and_grad = optax.value_and_grad_from_state(objective)

    def gnorm_of(grad):
        return jnp.max(jnp.stack([jnp.max(jnp.abs(g), initial=0.0) for g in grad]))

    def body(state):
        theta, opt_state, step, _, last, _ = state
        value, grad = value_and_grad(theta, state=opt_state)
        updates, opt_state = opt.update(grad, opt_state, theta, value=value, grad=grad,
                                        value_fn=objective)
        theta = optax.apply_updates(theta, updates)
        small = jnp.abs(last - value) <= ftol * jnp.maximum(jnp.abs(value), 1e-300)
        return theta, opt_state, step + 1, gnorm_of(grad), value, small

    def cond(state):
        _, _, step, gnorm, _, small = state
        return (step < max_steps) & (gnorm > gtol) & ~small

    dtype = theta0[0].dtype
    inf = jnp.asarray(jnp.inf, dtype)
    state = (theta0, opt.init(theta0), jnp.asarray(0, jnp.int32), inf, inf,
             jnp.asarray(False))
    theta, _, steps, _, _, small = jax.lax.while_loop(cond, body, state)
    theta = Theta(*(jnp.where(f, t, x) for f, t, x in zip(free, theta, fixed, strict=True)))
    value, grad = jax.value_and_grad(objective)(theta)
    gnorm = gnorm_of(grad)
    return MAPResult(theta, value, (gnorm <= gtol) | small, steps, gnorm)


def first_order_solver(problem: Problem, **options):
    """A jitted ``(theta0, data) -> MAPResult`` by :func:`solve_first_order`."""
    return jax.jit(functools.partial(solve_first_order, problem, **options))


def replicate(theta: Theta, mesh: jax.sharding.Mesh) -> Theta:
    """Parameters copied onto every device of ``mesh``."""
    rep = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    return Theta(*(jax.device_put(t, rep) for t in theta))

