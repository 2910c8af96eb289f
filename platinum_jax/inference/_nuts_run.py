"""Runners that put chains of :func:`._nuts_chain.chain_program` (warm-up and draws in one
``fori_loop`` with a dynamic trip count) on the machine's cores, compiled once per static
setting (AOT: ``jit(...).lower(...).compile()``, cached here by potential, shapes and
settings). ``args`` (the data) and ``num_warmup`` (up to ``max_warmup``) are traced, so a
second chain, seed, data set of the same shapes or a shorter (warm-started) warm-up reuse the
compiled program.

Chain methods of :func:`run_chains`, measured on the Rosetta model (2 cores, 4 chains):
``"threads"`` (default): one call of the same executable per chain from Python threads; the
calls release the GIL and two run at once on the one CPU device (CPU use about 180%), 1.8x
the sequential speed. ``"vmap"``: one batched program; every leapfrog step waits for the
chain with the longest trajectory and NumPyro's tree conds become selects: 1.6x slower than
sequential. ``"pmap"``: a chain per host device (``jax_num_cpu_devices`` set before JAX
starts): as fast as threads in wall time with about 25% more CPU. ``"sequential"``.

While threaded chains run, BLAS is held to one thread (``threadpoolctl``): on a loaded 2-core
machine OpenBLAS's spinning threads made each eigendecomposition of the low-rank update 10-100
times slower (and took CPU from the chains even between LAPACK calls).
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import time
from collections import OrderedDict
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ._diagnostics import CHAIN_METHODS
from ._nuts_adapt import WarmupSettings
from ._nuts_chain import PROGRESS_EVERY, chain_program

__all__ = ["Adapted", "adapted", "compile_events", "numpyro_potential", "read_adaptation",
           "run_chains", "sample_model"]


class Adapted(NamedTuple):
    """A warm-up's result, the start of a warm-started fit: step size, diagonal ``sigma``,
    low-rank ``u`` (d, r) and ``lam`` (r,) (None for a diagonal mass), last position ``z``
    (leading axis: chains), and the cold warm-up's length (``warmup``: a warm start takes a
    fifth of it, and reuses its compiled program)."""

    step_size: np.ndarray
    sigma: np.ndarray
    u: np.ndarray | None
    lam: np.ndarray | None
    z: np.ndarray
    warmup: int = 0

    FILE = "adaptation.npz"

    def to_bytes(self) -> bytes:
        """The state as an ``.npz`` file's bytes (what ``--warm-start DIR`` reads)."""
        import io

        buf = io.BytesIO()
        np.savez(buf, **{k: np.asarray(v) for k, v in self._asdict().items()
                         if v is not None})
        return buf.getvalue()

    @classmethod
    def read(cls, directory) -> Adapted:
        """The state a NUTS fit wrote to ``directory`` (``adaptation.npz``), or a clear error."""
        import zipfile
        from pathlib import Path

        path = Path(directory) / cls.FILE
        if not path.exists():
            raise FileNotFoundError(
                f"{path} is missing: --warm-start reads the output directory of an earlier "
                "NUTS fit (`platinum-jax fit ... --method nuts` or `stitch-bayes`) of this "
                "version")
        try:
            with np.load(path, allow_pickle=False) as z:
                got = {k: z[k] for k in z.files}
            return cls(*(got.get(k) for k in ("step_size", "sigma", "u", "lam", "z")),
                       warmup=int(got["warmup"]))
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{path} is not an adaptation written by a NUTS fit "
                             f"({type(exc).__name__}: {exc}); refit cold") from None

    def rows(self, chains: int) -> Adapted:
        """One row per chain of a run of ``chains`` (taken in turn)."""
        take = np.arange(chains) % np.shape(self.sigma)[0]
        return self._replace(**{k: None if v is None else np.asarray(v)[take]
                                for k, v in self._asdict().items() if k != "warmup"})


_COMPILES = {"count": 0, "seconds": 0.0}


def _listener(event, duration, **_):
    if "backend_compile" in event:
        _COMPILES["count"] += 1
        _COMPILES["seconds"] += duration


jax.monitoring.register_event_duration_secs_listener(_listener)


def compile_events() -> dict:
    """XLA compilations in this process so far (count and seconds), from JAX's monitoring."""
    return dict(_COMPILES)


#: compiled programs by (potential, static settings, shapes); a potential evicted from
#: :data:`_MODELS` takes its programs with it
_PROGRAMS: dict = {}
#: the same compiled programs by the digest of their lowered text
_BY_TEXT: OrderedDict = OrderedDict()


def _compiled(potential, dim, settings, max_warmup, num_samples, method, chains, example,
              progress=None):
    """The compiled program for these static settings (built and compiled once)."""
    key = (potential, dim, settings, max_warmup, num_samples, method, chains, progress is None,
           jax.tree.structure(example),
           tuple((np.shape(a), a.dtype if hasattr(a, "dtype") else np.result_type(a))
                 for a in jax.tree.leaves(example)))
    if progress is not None:  # a new bar each run, one compiled program: ticks go through a box
        _PROGRESS["tick"] = progress
    if key in _PROGRAMS:
        return _PROGRAMS[key]
    tick = None if progress is None else (lambda k: _PROGRESS["tick"](k))
    fn = chain_program(potential, dim, settings, max_warmup, num_samples, progress=tick)
    if method == "vmap":
        fn = jax.vmap(fn, in_axes=(0, 0, None, None, None, 0, 0, 0, 0))
    elif method == "pmap":
        fn = jax.pmap(fn, in_axes=(0, 0, None, None, None, 0, 0, 0, 0))
    lowered = (fn if method == "pmap" else jax.jit(fn)).lower(*example)
    # A model rebuilt for new data of the same shapes (a bootstrap replicate, another seed's
    # subset) is a new potential but often the same program: compiled once.
    text = hashlib.sha256(lowered.as_text().encode()).hexdigest()
    prog = _BY_TEXT.get(text)
    if prog is None:
        prog = _BY_TEXT[text] = lowered.compile()
        while len(_BY_TEXT) > 4 * MODEL_CACHE_SIZE:
            _BY_TEXT.popitem(last=False)
    _PROGRAMS[key] = prog
    return prog


_PROGRESS: dict = {"tick": None}


class _Bar:
    """A tqdm bar over every chain's iterations, advanced from the programs' host callbacks
    (:data:`PROGRESS_EVERY` iterations a tick, from any thread)."""

    def __init__(self, total: int, desc: str):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc=desc, unit="it", leave=False)
        self.lock = threading.Lock()

    def __call__(self, key):
        rows = max(np.size(key) // 2, 1)  # a chain's key, or a batch of them under vmap/pmap
        with self.lock:
            self.bar.update(min(PROGRESS_EVERY * rows, self.bar.total - self.bar.n))

    def close(self):
        with self.lock:
            self.bar.update(self.bar.total - self.bar.n)
            self.bar.close()


def run_chains(potential, args, dim: int, *, chains: int = 4, num_warmup: int = 600,
               num_samples: int = 2000, settings: WarmupSettings | None = None,
               seed: int = 0, method: str = "threads", warm: Adapted | None = None,
               max_warmup: int | None = None, dtype=jnp.float64, x0=None,
               progress_bar: bool = False):
    """Sample ``chains`` chains of ``potential(x, args)`` (x flat, length ``dim``).

    ``warm``: a previous fit's :class:`Adapted` (its rows taken in turn, one per chain) to
    start from (its positions, step size and mass); ``num_warmup`` is then the short warm-up.
    ``x0``: the start (length ``dim``, NaN entries drawn uniformly on (-2, 2); default all
    NaN), ignored with ``warm``. ``progress_bar``: a tqdm bar over the chains' iterations (a
    program of its own: a program with host callbacks is never written to JAX's persistent
    cache).
    ``max_warmup`` (default ``num_warmup``) fixes the compiled warm-up buffer, so a later warm
    start with fewer warm-up iterations reuses the program. Returns ``(out, timing)``: ``out``
    a dict of numpy arrays with a leading chain axis (see :func:`chain_program`), ``timing``
    the wall seconds of compiling and of running and the count of XLA compilations.
    """
    if method not in CHAIN_METHODS:
        raise ValueError(f"unknown chain method {method!r}; one of {list(CHAIN_METHODS)}")
    settings = WarmupSettings() if settings is None else settings
    max_warmup = int(num_warmup if max_warmup is None else max_warmup)
    if not 1 <= num_warmup <= max_warmup:
        raise ValueError("need 1 <= num_warmup <= max_warmup")
    if warm is not None:
        have = int(np.shape(warm.sigma)[-1])
        if have != dim:
            raise ValueError(f"warm_start comes from a posterior of {have} sampled coordinates; "
                             f"this fit samples {dim}: warm-start a refit of the same model on "
                             "data of the same shape (same subjects and items), or fit cold")
        warm = warm.rows(chains)
    lowrank = settings.mass == "lowrank"
    if lowrank and settings.rank > dim:
        settings = dataclasses.replace(settings, rank=dim)
    keys = jax.random.split(jax.random.PRNGKey(seed), chains)
    r = settings.rank

    def rows(v, shape, fill):
        v = np.full((chains, *shape), fill) if v is None else np.asarray(v)
        return np.broadcast_to(v, (chains, *shape)).astype(dtype)

    w = warm
    x0 = rows(x0 if w is None else w.z, (dim,), np.nan)
    step0 = rows(None if w is None else w.step_size, (), 1.0)
    sigma0 = rows(None if w is None else w.sigma, (dim,), 1.0)
    u0 = rows(None if w is None else w.u, (dim, r), 0.0) if lowrank else np.zeros((chains, 1))
    lam0 = rows(None if w is None else w.lam, (r,), 1.0) if lowrank else np.zeros((chains, 1))
    if not lowrank:  # the program ignores them; keep the signature fixed
        u0, lam0 = np.zeros((chains, dim, r)), np.ones((chains, r))
    is_warm = np.asarray(w is not None)
    nw = np.asarray(num_warmup, jnp.result_type(int))
    batched = method in ("vmap", "pmap")
    one = (keys[0], x0[0], args, nw, is_warm, step0[0], sigma0[0], u0[0], lam0[0])
    example = (keys, x0, args, nw, is_warm, step0, sigma0, u0, lam0) if batched else one
    before = compile_events()
    w0 = time.perf_counter()
    bar = _Bar(chains * (int(num_warmup) + num_samples), f"NUTS, {chains} chains") \
        if progress_bar else None
    from threadpoolctl import threadpool_limits

    # the chains are the parallelism: BLAS threads would spin on the same cores
    limits = threadpool_limits(1, user_api="blas") if method == "threads" and chains > 1 \
        else None
    try:
        prog = _compiled(potential, dim, settings, max_warmup, num_samples, method,
                                    chains, example, progress=bar)
        w1 = time.perf_counter()
        out = _call(prog, method, chains, batched,
                    (keys, x0, args, nw, is_warm, step0, sigma0, u0, lam0))
    finally:
        if bar is not None:
            bar.close()
        if limits is not None:
            limits.restore_original_limits()
    w2 = time.perf_counter()
    finite = np.asarray(out.pop("start_finite"))
    if not finite.all():
        raise RuntimeError(
            f"NUTS found no start where the model's log density and its gradient are finite "
            f"(chain(s) {np.flatnonzero(~finite).tolist()}, after 100 uniform draws on (-2, 2) "
            "unconstrained): check that the priors' supports contain the data's parameters, or "
            "start from given values")
    after = compile_events()
    if not lowrank:
        out.pop("u", None), out.pop("lam", None)
    timing = {"compile_wall_s": w1 - w0, "run_wall_s": w2 - w1,
              "compiles": after["count"] - before["count"]}
    return out, timing


def _call(prog, method, chains, batched, a):
    """Run the compiled program: once (batched), or once per chain from threads or in turn."""
    keys, x0, args, nw, is_warm, step0, sigma0, u0, lam0 = a
    if batched:
        return jax.device_get(prog(*a))
    call = [(keys[c], x0[c], args, nw, is_warm, step0[c], sigma0[c], u0[c], lam0[c])
            for c in range(chains)]
    if method == "threads" and chains > 1:
        results: list = [None] * chains
        errors: list = []

        def work(c):
            try:
                results[c] = jax.device_get(prog(*call[c]))
            except BaseException as exc:  # re-raised in the caller's thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(c,)) for c in range(chains)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
    else:
        results = [jax.device_get(prog(*a)) for a in call]
    return {k: np.stack([res[k] for res in results]) for k in results[0]}


def read_adaptation(directory) -> Adapted:
    """The warm-up's result an earlier NUTS fit wrote to its output ``directory``
    (``adaptation.npz``: step size, mass matrix and last draw per chain, and the cold warm-up's
    length), to pass as ``nuts(..., warm_start=...)``; a missing or damaged file is an error
    naming it."""
    return Adapted.read(directory)


def adapted(out, warmup: int) -> Adapted:
    """The :class:`Adapted` state of a run's output (for a warm start); ``warmup`` the
    length of the cold warm-up behind it."""
    return Adapted(out["step_size"], out["sigma"], out.get("u"), out.get("lam"), out["last_z"],
                   int(warmup))


def numpyro_potential(model, model_args: tuple, rng_key=None):
    """A NumPyro model as the driver reads it: ``(potential, dim, unravel, constrain, start)``
    with ``potential(x, args)`` the model's potential energy at the flat unconstrained ``x``
    (``args`` = ``model_args``, traced, so new data of the same shapes reuse the program),
    ``unravel`` the flat vector -> dict of unconstrained sites (``jax.flatten_util``),
    ``constrain(z, args)`` draws (n, d) -> dict of constrained sample and deterministic sites
    (NumPyro's ``constrain_fn``, what ``postprocess_fn`` gives), one jitted vmap, and
    ``start(values, args)`` constrained values of some sites -> the flat start (NaN for the
    sites not given, which :func:`run_chains` draws uniformly).

    Built without ``initialize_model``: that runs the model op by op, and each op compiles on
    its own (about 20 s for the Rosetta model). Here the model is traced once, abstractly
    (``jax.eval_shape``), for the shapes of its unconstrained latent sites; NumPyro's
    ``potential_energy`` and ``constrain_fn`` are pure JAX and trace inside the programs."""
    from jax.flatten_util import ravel_pytree
    from numpyro import handlers
    from numpyro.distributions.transforms import biject_to
    from numpyro.infer.util import constrain_fn, potential_energy

    key = jax.random.PRNGKey(0) if rng_key is None else rng_key

    def latent(key, args, values=None):
        values = {} if values is None else values
        tr = handlers.trace(handlers.substitute(handlers.seed(model, key), data=values)) \
            .get_trace(*args)
        out = {}
        for name, site in tr.items():
            if site["type"] == "sample" and not site["is_observed"]:
                raw = biject_to(site["fn"].support).inv(site["value"])
                out[name] = raw if name in values or not values else jnp.full_like(raw, jnp.nan)
        return out

    shapes = jax.eval_shape(latent, key, model_args)
    flat, unravel = ravel_pytree(jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), shapes))

    def potential(x, args):
        return potential_energy(model, args, {}, unravel(x))

    @jax.jit
    def constrain(z, args):
        return jax.vmap(lambda x: constrain_fn(model, args, {}, unravel(x),
                                               return_deterministic=True))(z)

    flat_start = jax.jit(lambda v, a: ravel_pytree(latent(key, a, v))[0])

    def start(values, args):
        if not values:
            return np.full(flat.shape, np.nan)
        known = set(shapes)
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"start values name sites the model does not sample: {unknown}; "
                             f"its sites are {sorted(known)}")
        return np.asarray(flat_start(dict(values), args))

    return potential, int(flat.shape[0]), unravel, constrain, start


#: NumPyro models (their potentials and maps) by cache key, least recently used first
_MODELS: OrderedDict = OrderedDict()
MODEL_CACHE_SIZE = 8


def _model(model, model_args, key):
    if key in _MODELS:
        _MODELS.move_to_end(key)
        return _MODELS[key]
    _MODELS[key] = numpyro_potential(model, model_args)
    while len(_MODELS) > MODEL_CACHE_SIZE:
        _, (old, *_) = _MODELS.popitem(last=False)
        for k in [k for k in _PROGRAMS if k[0] is old]:
            del _PROGRAMS[k]
    return _MODELS[key]


def sample_model(model, model_args: tuple, *, chains: int = 4, num_warmup: int = 600,
                 num_samples: int = 2000, settings: WarmupSettings | None = None,
                 seed: int = 0, method: str = "threads", warm: Adapted | None = None,
                 max_warmup: int | None = None, cache_key=None, init_values=None,
                 progress_bar: bool = False):
    """:func:`run_chains` on a NumPyro model: returns ``(samples, out, timing)`` with
    ``samples`` the constrained sample and deterministic sites by chain
    (``{site: (chains, draws, ...)}``, NumPyro's ``postprocess_fn``), ``out`` the driver's
    output (draws in unconstrained space, sampler statistics, adapted state) and ``timing``
    (:func:`run_chains`'s, with ``total_cpu_s``, this process's CPU seconds in the call, and
    ``dim``).
    ``cache_key``: a hashable naming the model and everything it closes over, so a second
    call reuses its potential (and so the compiled program) instead of building a new one
    (the last :data:`MODEL_CACHE_SIZE` are kept). ``init_values``: constrained start values
    of some sites (the rest start uniformly)."""
    c0 = time.process_time()
    potential, dim, _, constrain, start = _model(model, model_args,
                                                 model if cache_key is None else cache_key)
    x0 = None if warm is not None or not init_values else start(init_values, model_args)
    out, timing = run_chains(potential, model_args, dim, chains=chains, num_warmup=num_warmup,
                             num_samples=num_samples, settings=settings, seed=seed,
                             method=method, warm=warm, max_warmup=max_warmup, x0=x0,
                             progress_bar=progress_bar)
    z = out["z"]
    flat = jax.device_get(constrain(jnp.asarray(z.reshape(-1, dim)), model_args))
    samples = {k: np.asarray(v).reshape(chains, num_samples, *np.shape(v)[1:])
               for k, v in flat.items()}
    timing.update(total_cpu_s=time.process_time() - c0, dim=dim)
    return samples, out, timing
