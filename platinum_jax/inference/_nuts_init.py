"""NumPyro's NUTS with its initialisation compiled as one program (used by every NUTS fit of
the package: :func:`platinum_jax.inference.nuts` and the presets that call ``run_nuts``)."""

from __future__ import annotations

import functools

import jax
import numpy as np

__all__ = ["compiled_init_nuts"]


@functools.cache
def compiled_init_nuts():
    """NumPyro's ``NUTS`` whose initialisation (a valid start, the first gradient, the
    step-size search, the adaptation state) runs as one compiled program. NumPyro runs it op by
    op, and each op compiles on its own: about 200 programs in a fresh process, too quick for
    the persistent compilation cache to keep and together slower than one compiled start.
    Under compilation NumPyro cannot look at the start it found, so this class checks it."""
    from numpyro.infer import NUTS

    class CompiledInitNUTS(NUTS):
        def init(self, rng_key, num_warmup, init_params=None, model_args=(), model_kwargs=None):
            eager = super().init
            compiled = jax.jit(lambda key, params, args, kwargs: eager(key, num_warmup, params,
                                                                       args, kwargs))
            state = compiled(rng_key, init_params, model_args, model_kwargs or {})
            values = (state.potential_energy, *jax.tree.leaves(state.z_grad))
            if not any(isinstance(v, jax.core.Tracer) for v in values) and not all(
                    np.isfinite(np.asarray(v)).all() for v in values):
                raise RuntimeError(
                    "NUTS found no start where the model's log density and its gradient are "
                    "finite; check the data and the priors, or give start values (init_values)"
                )
            return state

    return CompiledInitNUTS
