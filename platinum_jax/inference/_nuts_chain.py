"""One chain of NUTS, warm-up (:mod:`._nuts_adapt`) and sampling, as one traceable function.

The trajectories are NumPyro's: ``numpyro.infer.hmc.hmc(potential_fn_gen=..., algo="NUTS")``
gives ``(init_kernel, sample_kernel)``; initialised with ``num_warmup=0`` NumPyro's own
adaptation never runs, and this module writes ``state.adapt_state`` (step size, inverse mass,
mass square root) itself between draws. The potential is generated per call from
``model_args = (args, lowrank_map)``, so the data and the low-rank map are traced values: a
change of either does not recompile.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from ._nuts_adapt import (
    AdaptState,
    DualAverage,
    LowRankMap,
    WarmupSettings,
    Welford,
    dual_average,
    lowrank_estimate,
    mass_forms,
    step_size_search,
)

# Every call site of the potential's gradient is traced and compiled on its own, so this
# program has three (the start, the step-size search, NumPyro's tree) and one loop for the
# warm-up and the draws.

__all__ = ["PROGRESS_EVERY", "chain_program", "uniform_start"]


def _where(c, a, b):
    return jax.tree.map(lambda p, q: jnp.where(c, p, q), a, b)


def uniform_start(potential, key, x0, args, radius=2.0):
    """``x0``, with each NaN entry a uniform draw on (-radius, radius) (NumPyro's
    ``init_to_uniform``; an ``x0`` of NaNs alone is its whole start), redrawn until the
    potential is finite (the value alone: a forward pass compiles quicker than a gradient)."""
    given = ~jnp.isnan(x0)

    def bad(x):
        return ~jnp.isfinite(potential(x, args))

    def body(c):
        k, _, n = c
        k, sub = jax.random.split(k)
        draw = jax.random.uniform(sub, x0.shape, x0.dtype, -radius, radius)
        return k, jnp.where(given, x0, draw), n + 1

    k, first, _ = body((key, x0, 0))
    x = first
    _, x, _ = jax.lax.while_loop(lambda c: bad(c[1]) & (c[2] < 100), body, (k, x, 1))
    return x


def _z_info(state):
    from numpyro.infer.hmc_util import IntegratorState

    return IntegratorState(state.z, None, state.potential_energy, state.z_grad)


def _set_adapt(state, eps, forms):
    inv, sq, sqi = forms
    a = state.adapt_state._replace(step_size=eps, inverse_mass_matrix=inv, mass_matrix_sqrt=sq,
                                   mass_matrix_sqrt_inv=sqi)
    return state._replace(adapt_state=a)


#: iterations between two progress reports of a chain (``progress=True``)
PROGRESS_EVERY = 50


def chain_program(potential, dim: int, settings: WarmupSettings, max_warmup: int,
                  num_samples: int, dtype=jnp.float64, progress=None):
    """``chain(key, x0, args, num_warmup, warm, step0, sigma0, u0, lam0) -> dict``.

    ``potential(x, args)``: the potential energy at the flat unconstrained ``x`` (length
    ``dim``). ``x0`` with NaNs: a uniform start. ``warm`` True: start from ``step0``,
    ``sigma0`` (and ``u0`` (d, rank), ``lam0`` (rank,)), no gradient start and no step-size
    search, and the mass kept until a first full estimator window is in. ``num_warmup`` <=
    ``max_warmup`` (traced: a shorter warm-up reuses the program). Returns the draws ``z``
    (num_samples, d) in x space; per draw ``diverging``, ``num_steps``, ``accept_prob``,
    ``energy``, ``potential_energy``; ``start_finite`` (the potential and its gradient at the
    start); the warm-up's ``warmup_num_steps``, ``_accept_prob``,
    ``_diverging``, ``_step_size`` (length ``max_warmup``); and the adapted ``step_size``,
    ``sigma``, ``u``, ``lam`` and ``last_z``.

    ``progress``: None, or a host function called with the chain's key every
    :data:`PROGRESS_EVERY` iterations (a progress bar). A program with a host callback is never
    written to JAX's persistent compilation cache, so it is a separate program, built only when
    asked for.
    """
    from numpyro.infer.hmc import hmc
    from numpyro.infer.hmc_util import euclidean_kinetic_energy, velocity_verlet
    from numpyro.infer.util import ParamInfo

    s = settings
    lowrank = s.mass == "lowrank"
    dense = lowrank and s.lowrank_form == "dense"
    moved = lowrank and not dense  # the kernel samples w, x = A w
    kin = euclidean_kinetic_energy

    def gen(args, lmap):
        if moved:
            return lambda w: potential(lmap.fwd(w), args)
        return functools.partial(potential, args=args)

    def forms(sigma, u, lam):
        return mass_forms(sigma, u, lam) if dense else mass_forms(sigma)

    def chain(key, x0, args, num_warmup, warm, step0, sigma0, u0, lam0):
        k_init, k_ss, k_run = jax.random.split(key, 3)
        init_kernel, sample_kernel = hmc(potential_fn_gen=gen, algo="NUTS")
        x0 = uniform_start(potential, k_init, x0, args)
        pe, g = jax.value_and_grad(potential)(x0, args)
        sigma = jnp.where(warm, sigma0, jnp.clip(1.0 / jnp.abs(g), *s.init_clip))
        u = jnp.where(warm, u0, 0.0) if lowrank else None
        lam = jnp.where(warm, lam0, 1.0) if lowrank else None
        lmap = LowRankMap.of(sigma, u, lam) if moved else None
        # w = A^-1 x and dU/dw = A^T dU/dx: no second trace of the gradient
        w0, gw = (lmap.inv(x0), lmap.grad_w(g)) if moved else (x0, g)
        mf = forms(sigma, u, lam)
        state = init_kernel(ParamInfo(w0, pe, gw), 0, step_size=1.0,
                            inverse_mass_matrix=mf[0], adapt_step_size=False,
                            adapt_mass_matrix=False, dense_mass=dense,
                            target_accept_prob=s.target_accept,
                            max_tree_depth=s.max_tree_depth, model_args=(args, lmap),
                            rng_key=k_run)
        state = _set_adapt(state, jnp.where(warm, step0, s.init_step_size).astype(dtype), mf)
        nw = jnp.asarray(num_warmup)
        final_start = nw - jnp.floor(s.step_size_window * nw).astype(nw.dtype)
        # a warm start has no early phase: its mass is already good, and a 10-draw estimate
        # would replace it with a worse one
        early_end = jnp.where(warm, 0, jnp.floor(s.early_window * nw)).astype(nw.dtype)
        empty = Welford.empty(dim, dtype)
        nb = s.buffer if lowrank else 0
        izero = jnp.zeros((), nw.dtype)
        buf = ((jnp.zeros((nb, dim), dtype), jnp.zeros((nb, dim), dtype),
                jnp.zeros(nb, dtype), jnp.full(nb, -1, nw.dtype)) if lowrank
               else (None, None, None, None))
        ad = AdaptState(empty, empty, izero,
                        DualAverage.start(state.adapt_state.step_size, jnp.where(warm, 1.0, 10.0)),
                        sigma, u, lam, *buf, izero)
        trace = {"num_steps": jnp.zeros(max_warmup, nw.dtype),
                 "accept_prob": jnp.zeros(max_warmup, dtype),
                 "diverging": jnp.zeros(max_warmup, bool),
                 "step_size": jnp.zeros(max_warmup, dtype)}
        draws = {"z": jnp.zeros((num_samples, dim), dtype),
                 "diverging": jnp.zeros(num_samples, bool),
                 "num_steps": jnp.zeros(num_samples, nw.dtype),
                 "accept_prob": jnp.zeros(num_samples, dtype),
                 "energy": jnp.zeros(num_samples, dtype),
                 "potential_energy": jnp.zeros(num_samples, dtype)}

        def search(state, lmap, key):
            # Stan's doubling/halving search from the current point and step size
            _, vv = velocity_verlet(gen(args, lmap), kin)
            a = state.adapt_state
            eps = step_size_search(vv, kin, _z_info(state), a.inverse_mass_matrix,
                                   a.mass_matrix_sqrt, key, a.step_size, s.target_accept)
            return _set_adapt(state, eps, (a.inverse_mass_matrix, a.mass_matrix_sqrt,
                                           a.mass_matrix_sqrt_inv))

        def adapt(i, state, lmap, ad, bg_start, switches):
            """One warm-up update after the transition of iteration i."""
            if moved:  # the estimators read x and dU/dx
                x, g = lmap.fwd(state.z), lmap.grad_x(state.z_grad)
            else:
                x, g = state.z, state.z_grad
            ok = (~state.diverging) & jnp.isfinite(state.potential_energy) \
                & jnp.all(jnp.isfinite(g)) & jnp.all(jnp.isfinite(x))
            mass_phase = i < final_start
            early = i < early_end
            w = (ok & mass_phase).astype(dtype)
            xs, gs = jnp.where(ok, x, 0.0), jnp.where(ok, g, 0.0)
            fg, bg = ad.fg.add(xs, gs, w), ad.bg.add(xs, gs, w)
            since = ad.since_switch + 1
            freq = jnp.where(early, s.early_switch_freq, s.switch_freq)
            # swap when the background holds a full window, unless a next one could not
            # finish before the mass is frozen (nutpie's rule)
            switch = mass_phase & (since >= freq) & (i + freq <= final_start)
            fg, bg = _where(switch, bg, fg), _where(switch, empty, bg)
            fg_start = jnp.where(switch, bg_start, ad.fg_start)
            bg_start = jnp.where(switch, i + 1, bg_start)
            since = jnp.where(switch, 0, since)
            switches = switches + switch
            # a cold start trusts the foreground from its third draw, a warm start only
            # after a first full window
            have = jnp.where(warm, switches >= 1, i >= 2) & mass_phase
            diag_now = have & (fg.n >= 2)
            sigma, u, lam = ad.sigma, ad.u, ad.lam
            bx, bgr, bw, bit = ad.buf_x, ad.buf_g, ad.buf_w, ad.buf_it
            a = state.adapt_state
            mf = (a.inverse_mass_matrix, a.mass_matrix_sqrt, a.mass_matrix_sqrt_inv)
            if not lowrank:  # the diagonal every draw: O(d)
                sigma = jnp.where(diag_now, fg.sigma(s.clip), sigma)
                mf = forms(sigma, u, lam)
            else:
                slot = i % nb
                bx, bgr = bx.at[slot].set(xs), bgr.at[slot].set(gs)
                bw, bit = bw.at[slot].set(w), bit.at[slot].set(i)
                # the diagonal alone in the early phase (U = 0, so A = I, w = x); then
                # diagonal and low rank together every `lowrank_every` iterations and at
                # each swap, from the foreground's draws in the buffer
                sigma = jnp.where(diag_now & early, fg.sigma(s.clip), sigma)
                # every predicate of a cond here depends on the iteration alone: under vmap
                # over chains a batched predicate turns the cond into a select that runs the
                # eigendecompositions on every iteration
                due = have & (~early) & (switch | ((i - early_end) % s.lowrank_every == 0))
                finite = jnp.all(jnp.isfinite(x)) & jnp.all(jnp.isfinite(g))

                def refresh(_):
                    new = lowrank_estimate(bx, bgr, bw * (bit >= fg_start), s, s.clip)
                    good = finite & jnp.all(jnp.isfinite(new[0])) & jnp.all(
                        jnp.isfinite(new[1])) & jnp.all(jnp.isfinite(new[2]))
                    return _where(good, new, (sigma, u, lam))

                sigma, u, lam = jax.lax.cond(due, refresh, lambda _: (sigma, u, lam), None)
                changed = (have & early) | due
                mf = jax.lax.cond(changed, lambda _: forms(sigma, u, lam), lambda _: mf, None)
                if moved:
                    def remap(_):  # the same x in new coordinates: w = A^-1 x, A^T dU/dx
                        new = LowRankMap.of(sigma, u, lam)
                        moved_state = state._replace(z=new.inv(x), z_grad=new.grad_w(g))
                        return _where(finite, (new, moved_state), (lmap, state))

                    lmap, state = jax.lax.cond(due, remap, lambda _: (lmap, state), None)
            da = dual_average(ad.da, state.accept_prob, s)
            eps = jnp.exp(jnp.where(i == nw - 1, da.log_eps_bar, da.log_eps))
            state = _set_adapt(state, jnp.clip(eps, 1e-10, 1e5), mf)
            ad = AdaptState(fg, bg, since, da, sigma, u, lam, bx, bgr, bw, bit, fg_start)
            return state, lmap, ad, bg_start, switches

        def body(i, carry):
            state, lmap, ad, trace, draws, bg_start, switches = carry
            # a search at the start (cold) and when the first estimate replaces the gradient
            # start (iteration 2), after which dual averaging restarts from the found step
            first = (~warm) & ((i == 0) | (i == 2))
            state = jax.lax.cond(first, lambda _: search(state, lmap, jax.random.fold_in(k_ss, i)),
                                 lambda _: state, None)
            ad = ad._replace(da=_where(first, DualAverage.start(state.adapt_state.step_size),
                                       ad.da))
            state = sample_kernel(state, model_args=(args, lmap))
            tuning = i < nw
            if progress is not None:
                jax.lax.cond((i + 1) % PROGRESS_EVERY == 0,
                             lambda: jax.debug.callback(progress, key), lambda: None)

            def put(buf, at, v, write):  # one row written (a where over the buffer copies it)
                return buf.at[at].set(jnp.where(write, v, buf[at]))

            j = jnp.clip(i, 0, max_warmup - 1)
            trace = jax.tree.map(lambda b, v: put(b, j, v, tuning), trace, {
                "num_steps": state.num_steps, "accept_prob": state.accept_prob,
                "diverging": state.diverging, "step_size": state.adapt_state.step_size})
            k = jnp.clip(i - nw, 0, num_samples - 1)
            draws = jax.tree.map(lambda b, v: put(b, k, v, ~tuning), draws, {
                "z": lmap.fwd(state.z) if moved else state.z, "diverging": state.diverging,
                "num_steps": state.num_steps, "accept_prob": state.accept_prob,
                "energy": state.energy, "potential_energy": state.potential_energy})
            state, lmap, ad, bg_start, switches = jax.lax.cond(
                tuning, lambda _: adapt(i, state, lmap, ad, bg_start, switches),
                lambda _: (state, lmap, ad, bg_start, switches), None)
            return state, lmap, ad, trace, draws, bg_start, switches

        # one loop over warm-up and sampling: NumPyro's tree is traced (and compiled) once
        state, lmap, ad, trace, out, _, _ = jax.lax.fori_loop(
            0, nw + num_samples, body, (state, lmap, ad, trace, draws, izero, izero))
        out = dict(out)
        out.update({f"warmup_{k}": v for k, v in trace.items()})
        out.update(start_finite=jnp.isfinite(pe) & jnp.all(jnp.isfinite(g)),
                   step_size=state.adapt_state.step_size, sigma=ad.sigma,
                   last_z=lmap.fwd(state.z) if moved else state.z)
        if lowrank:
            out.update(u=ad.u, lam=ad.lam)
        return out

    return chain
