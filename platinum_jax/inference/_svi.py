"""Stochastic variational inference of a NumPyro model with an autoguide, in three compiled
programs: the guide's set-up, NumPyro's optimisation loop, and the draws.

NumPyro sets a guide up by running the model and its gradient op by op when it is given a
concrete random key, and each operation then compiles a program of its own (several hundred for
a measurement model in a fresh process, each too quick for the persistent compilation cache to
keep). Tracing the set-up instead makes it one program. The guide object keeps what its set-up
computed, so a guide set up inside a compiled program can only be used inside that program: the
set-up and the draws each build their own guide, and the loop's guide is set up (on a key of
its own) while NumPyro traces the first step. The loop itself is NumPyro's own (``SVI.run``), started from the
compiled set-up's state, so the random streams are those of ``SVI.run``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["run_svi"]


def _concrete_transforms(constrain_fn):
    """The map from the optimiser's unconstrained parameters to the guide's, taken out of the
    compiled set-up; refused if it holds a traced array (a constraint whose bounds depend on
    the data), which cannot leave the program it was traced in."""
    for transform in constrain_fn.args[0].values():
        leaves = jax.tree.leaves(vars(transform)) if hasattr(transform, "__dict__") else []
        if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
            return None
    return constrain_fn


def run_svi(model, make_guide, optimizer, data, *, steps: int, draws: int, rng_key,
            posterior_key, init_values=None, progress_bar: bool = False,
            compiled: bool = False):
    """Fit ``make_guide(model, init_values)`` (a NumPyro autoguide) to ``model(data)`` with
    ``steps`` steps of SVI (``Trace_ELBO``) and draw ``draws`` samples of it; returns
    ``(draws by site, ELBO loss per step)``.

    Three compiled programs, whose arguments are traced (one program serves every table of its
    shape): the guide's set-up and initial state (NumPyro would run it op by op), NumPyro's
    optimisation loop (``SVI.run``; with ``progress_bar`` its printing loop, one compiled step
    at a time), and the draws from the fitted guide. ``compiled=True`` compiles all three as
    one program instead (fewer programs, but a larger one, on which XLA's CPU compiler was
    once seen to crash in a long session). Raises if the guide's start has no finite log
    density.
    """
    from numpyro import handlers
    from numpyro.infer import SVI, Trace_ELBO

    def engine(start):
        guide = make_guide(model, start)
        return guide, SVI(model, guide, optimizer, Trace_ELBO())

    def sample(post_key, params, rows, start):
        guide, _ = engine(start)
        handlers.seed(guide, rng_seed=0)(rows)  # the set-up, traced; its draw is not used
        if isinstance(getattr(guide, "_init_locs", None), dict):
            # A traced set-up returns its sites sorted by name; NumPyro's eager one keeps the
            # model's order, in which the draws split their key: keep that order (same draws).
            guide._init_locs = {k: guide._init_locs[k] for k in guide.prototype_trace
                                if k in guide._init_locs}
        return guide.sample_posterior(post_key, params, sample_shape=(int(draws),))

    if compiled and not progress_bar:
        def fit(key, post_key, rows, start):
            _, svi = engine(start)
            result = svi.run(key, int(steps), rows, progress_bar=False)
            return sample(post_key, result.params, rows, start), result.losses

        return jax.jit(fit)(rng_key, posterior_key, data, init_values)

    taken = {}

    def set_up(key, rows, start):
        guide, svi = engine(start)
        state = svi.init(key, rows)
        taken["constrain_fn"] = _concrete_transforms(svi.constrain_fn)
        start_density = guide._potential_fn(guide._init_locs)
        return state, jnp.isfinite(start_density)

    state, finite = jax.jit(set_up)(rng_key, data, init_values)
    if not bool(finite):
        raise RuntimeError(
            "SVI found no start where the model's log density is finite; check the data and "
            "the priors, or give start values (init_values)"
        )
    guide = make_guide(model, init_values)

    def loop_guide(*args, **kwargs):
        # The set-up, traced in the first step on a key of its own, so that the step's own
        # key is split as in NumPyro's loop and the random streams are unchanged.
        if guide.prototype_trace is None:
            with handlers.block():
                handlers.seed(guide, rng_seed=0)(*args, **kwargs)
        return guide(*args, **kwargs)

    svi = SVI(model, loop_guide, optimizer, Trace_ELBO())
    if taken["constrain_fn"] is None:  # data-dependent constraints: NumPyro's own set-up
        state = None
    else:
        svi.constrain_fn = taken["constrain_fn"]
    result = svi.run(rng_key, int(steps), data, progress_bar=progress_bar, init_state=state)
    post = jax.jit(sample)(posterior_key, result.params, data, init_values)
    return post, result.losses
