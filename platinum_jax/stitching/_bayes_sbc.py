"""Simulation-based calibration of the Bayesian stitching model (Talts et al. 2018).

Draw the parameters from the prior, simulate scores from the model, fit the posterior, and
record where each true value falls among the posterior draws (its rank).  If the sampler
computes the posterior the model defines, every rank is uniform on {0, ..., L} and central
intervals cover the truth at their nominal rate.  Worlds are shaped like the Epoch data:
sparse (each model scored on a few benchmarks, popular benchmarks scored often), with known
standard errors on some benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ._bayes_model import Priors, deterministic_sites
from ._model import ParameterLayout

__all__ = ["SBCDesign", "sbc_design", "simulate_world", "run_sbc", "rank_uniformity"]

# Parameter groups whose ranks are recorded: site name -> group label.
SBC_GROUPS = {
    "capability": "capability",
    "difficulty": "difficulty",
    "slope": "slope",
    "sigma": "noise scale",
    "noise_log_mu": "hyper-parameter",
    "noise_log_tau": "hyper-parameter",
    "capability_mu": "hyper-parameter",
    "capability_tau": "hyper-parameter",
}


@dataclass(frozen=True)
class SBCDesign:
    """Which (model, benchmark) pairs are scored and with what known standard error.

    Arrays have one entry per score; benchmark 0 is the anchor (D = 0, alpha = 1).
    """

    model_index: np.ndarray
    benchmark_index: np.ndarray
    stderr: np.ndarray  # 0 where unknown
    n_models: int
    n_benchmarks: int

    @property
    def layout(self) -> ParameterLayout:
        return ParameterLayout(
            self.n_models,
            self.n_benchmarks,
            fixed_difficulty=(0,),
            fixed_difficulty_values=(0.0,),
            fixed_slope=(0,),
            fixed_slope_values=(1.0,),
        )

    def problem(self, priors: Priors | None = None):
        """The Bayesian Rosetta model (Gaussian likelihood, anchor benchmark 0) bound to this
        design, with placeholder scores (:meth:`data` supplies the real ones)."""
        from platinum_jax.data import ResponseTable
        from platinum_jax.inference import Problem
        from platinum_jax.models import BenchmarkAnchor
        from platinum_jax.models.rosetta_bayes import NoisyGaussian, RosettaBayes

        from . import _bayes_model

        priors = Priors() if priors is None else priors
        # Zero-padded names sort in position order, as the table's labels must.
        rows = ResponseTable(
            subjects=pd.Index([f"m{i:05d}" for i in range(self.n_models)], name="subject"),
            items=pd.Index([f"b{i:05d}" for i in range(self.n_benchmarks)], name="item"),
            subject_index=np.asarray(self.model_index, dtype=np.int32),
            item_index=np.asarray(self.benchmark_index, dtype=np.int32),
            response=np.zeros(len(self.model_index)),
            se=np.asarray(self.stderr, dtype=np.float64),
            source="the SBC design",
        )
        lik = NoisyGaussian(priors=priors, centred_min=int(_bayes_model.CENTRED_NOISE_MIN_SCORES))
        model = RosettaBayes(anchor=BenchmarkAnchor("b00000"), likelihood=lik, priors=priors)
        return Problem(model, rows, validate=False)

    @staticmethod
    def data(problem, scores):
        """The engine's row arrays of ``problem`` with ``scores`` as the responses."""
        import dataclasses

        return dataclasses.replace(problem.data(), response=jnp.asarray(scores))


def sbc_design(
    n_models: int = 180,
    n_benchmarks: int = 40,
    n_scores: int = 1300,
    *,
    stderr_share: float = 0.3,
    min_per_benchmark: int = 3,
    seed: int = 0,
) -> SBCDesign:
    """A sparse design like the Epoch table (179 models, 38 benchmarks, 1,324 scores).

    Every model is scored on at least 4 benchmarks (the paper's filter), about
    ``n_scores / n_models`` on average, drawn without replacement with Zipf-like benchmark
    popularity (the anchor, benchmark 0, is the most popular); every benchmark gets at least
    ``min_per_benchmark`` scores.  A share ``stderr_share`` of the benchmarks reports a standard
    error on every score, uniform on [0.01, 0.05] (Epoch's own runs report 0.01-0.05).
    """
    if n_models < 2 or n_benchmarks < 2:
        raise ValueError("an SBC design needs at least 2 models and 2 benchmarks")
    if not 4 * n_models <= n_scores <= n_models * n_benchmarks:
        raise ValueError(
            f"n_scores must lie between 4 per model ({4 * n_models}) and every pair "
            f"({n_models * n_benchmarks}), got {n_scores}"
        )
    rng = np.random.default_rng(seed)
    popularity = 1.0 / (np.arange(n_benchmarks) + 3.0)
    extra = n_scores - 4 * n_models
    degree = 4 + rng.multinomial(extra, np.full(n_models, 1.0 / n_models))
    degree = np.minimum(degree, n_benchmarks)
    pairs = set()
    for m in range(n_models):
        chosen = rng.choice(n_benchmarks, size=degree[m], replace=False, p=popularity / popularity.sum())
        pairs.update((m, int(b)) for b in chosen)
    counts = np.bincount([b for _, b in pairs], minlength=n_benchmarks)
    for b in np.flatnonzero(counts < min_per_benchmark):
        missing = [m for m in rng.permutation(n_models) if (m, b) not in pairs]
        pairs.update((int(m), int(b)) for m in missing[: min_per_benchmark - counts[b]])
    ordered = np.array(sorted(pairs))
    has_stderr = rng.random(n_benchmarks) < stderr_share
    has_stderr[0] = False  # the anchor, like Winogrande, is an external leaderboard
    stderr = np.where(
        has_stderr[ordered[:, 1]], rng.uniform(0.01, 0.05, size=len(ordered)), 0.0
    )
    return SBCDesign(ordered[:, 0], ordered[:, 1], stderr, n_models, n_benchmarks)


def _with_sigma(problem, values: dict) -> dict:
    """``values`` (sampled sites, one draw) plus ``sigma``, the per-benchmark noise scale."""
    from platinum_jax.inference._bayes import _assemble

    theta, _ = _assemble(problem, values, True)
    items = problem.item.unflatten(theta.items)
    return {**values, "sigma": jnp.exp(items["noise_log_sigma"])}


def simulate_world(key, design: SBCDesign, priors: Priors | None = None, *,
                   problem=None) -> dict[str, np.ndarray]:
    """One draw of every parameter from the prior and of the scores ``y`` given them."""
    from numpyro.infer import Predictive

    from platinum_jax.inference import numpyro_model

    problem = design.problem(priors) if problem is None else problem
    data = design.data(problem, np.zeros(design.model_index.shape[0]))
    model = numpyro_model(problem, plain_names=True)
    draw = Predictive(model, num_samples=1)(key, data, observed=False)
    one = {k: v[0] for k, v in draw.items()}
    return {k: np.asarray(v) for k, v in _with_sigma(problem, one).items()}


def run_sbc(
    design: SBCDesign,
    n_worlds: int,
    *,
    warmup: int = 400,
    samples: int = 600,
    thin: int = 6,
    target_accept: float = 0.9,
    priors: Priors | None = None,
    seed: int = 0,
    progress=None,
) -> pd.DataFrame:
    """Ranks and interval coverage of the true parameters over ``n_worlds`` simulated worlds.

    Each world: parameters and scores from the prior predictive (:func:`simulate_world`), one
    NUTS chain of ``warmup`` + ``samples`` steps with the model's default mass matrix, thinned
    by ``thin`` to L = samples // thin draws (thinning brings the draws close to independent,
    which the rank test assumes).  Returns one row per (world, parameter entry) with columns
    ``world, group, site, index, truth, rank`` (0..L), ``n_draws`` (L), ``in_50``, ``in_90``
    (the truth inside the central 50% / 90% posterior interval), ``divergences`` (of the world).
    The model is the engine's NumPyro model of
    :class:`~platinum_jax.models.rosetta_bayes.RosettaBayes`.  Run in float64.
    """
    from platinum_jax.inference import numpyro_model

    priors = Priors() if priors is None else priors
    layout = design.layout
    problem = design.problem(priors)
    model = numpyro_model(problem, plain_names=True)
    sampler = _world_sampler(model, problem, design, warmup, samples, thin, target_accept)
    computed = set(deterministic_sites(layout, "gaussian"))
    rows = []
    keys = jax.random.split(jax.random.PRNGKey(seed), 2 * n_worlds)
    for w in range(n_worlds):
        truth = simulate_world(keys[2 * w], design, priors, problem=problem)
        draws, diverging = sampler(keys[2 * w + 1], design.data(problem, truth["y"]))
        n_div = int(np.asarray(diverging).sum())
        # Deterministic sites are in the samples; sampled hyper-parameters too.
        for site, group in SBC_GROUPS.items():
            if site not in draws:
                continue
            x = np.asarray(draws[site]).reshape(draws[site].shape[0], -1)
            t = np.asarray(truth[site]).reshape(-1)
            free = np.ptp(x, axis=0) > 0  # anchored entries are constants
            lo50, hi50, lo90, hi90 = np.quantile(x, [0.25, 0.75, 0.05, 0.95], axis=0)
            for i in np.flatnonzero(free):
                rows.append(
                    (w, group, site, int(i), float(t[i]), int(np.sum(x[:, i] < t[i])),
                     x.shape[0], bool(lo50[i] <= t[i] <= hi50[i]),
                     bool(lo90[i] <= t[i] <= hi90[i]), n_div, site in computed)
                )
        if progress is not None:
            progress(w + 1, n_worlds, n_div)
    cols = ["world", "group", "site", "index", "truth", "rank", "n_draws", "in_50", "in_90",
            "divergences", "derived"]
    return pd.DataFrame(rows, columns=cols)


def _world_sampler(model, problem, design: SBCDesign, warmup, samples, thin, target_accept):
    """``(key, data) -> (draws, diverging)``: one NUTS chain, compiled once for every world.

    NumPyro's functional NUTS (``hmc(potential_fn_gen=...)``) takes the data as an argument,
    so a new world reuses the compiled program; warmup adapts the step size and the mass
    matrix (dense over the noise hyper-parameters, as :func:`fit_stitching_bayes`).
    """
    from numpyro.infer.hmc import hmc
    from numpyro.infer.util import initialize_model

    from ._bayes_fit import hyper_mass_blocks

    example = design.data(problem, np.zeros(design.model_index.shape[0]))
    info, potential_gen, postprocess_gen, _ = initialize_model(
        jax.random.PRNGKey(0), model, model_args=(example,), dynamic_args=True
    )
    init_kernel, sample_kernel = hmc(potential_fn_gen=potential_gen, algo="NUTS")
    dense = hyper_mass_blocks("gaussian") or False

    @jax.jit
    def run(key, data):
        k_init, k_run = jax.random.split(key)
        leaves, tree = jax.tree_util.tree_flatten(info.z)
        starts = jax.random.split(k_init, len(leaves))
        # NumPyro's init_to_uniform: uniform on (-2, 2) in the unconstrained space.
        z0 = tree.unflatten(
            [jax.random.uniform(k, x.shape, minval=-2.0, maxval=2.0) for k, x in zip(starts, leaves, strict=True)]
        )
        state = init_kernel(
            z0, warmup, dense_mass=dense, target_accept_prob=target_accept,
            model_args=(data,), rng_key=k_run,
        )

        def step(state, _):
            state = sample_kernel(state, model_args=(data,))
            return state, (state.z, state.diverging)

        state, _ = jax.lax.scan(step, state, None, length=warmup)
        _, (zs, diverging) = jax.lax.scan(step, state, None, length=samples)
        zs = jax.tree_util.tree_map(lambda x: x[::thin], zs)
        draws = jax.vmap(lambda z: _with_sigma(problem, postprocess_gen(data)(z)))(zs)
        return draws, diverging

    return run


def rank_uniformity(result: pd.DataFrame, *, bins: int = 10, world_bins: int = 5) -> pd.DataFrame:
    """Per group: tests of uniform ranks, and coverage.

    Ranks r in {0..L} are binned into ``bins`` equal bins (chi-square against equal counts) and,
    jittered as (r + U) / (L + 1) with U ~ Uniform(0, 1), compared with Uniform(0, 1) (KS).
    These two pool every entry as if independent, but the entries of one world share its data
    and its scale (a world whose shift of the capability scale is mis-estimated moves all 180
    capability ranks together), so with many entries per world they reject a calibrated sampler.

    Two tests take the world as the unit instead, so dependence within a world is allowed
    for (both need a ``world`` column, NaN otherwise):

    * ``world_t2_p``: each world's shares of its ranks in ``world_bins`` equal bins form one
      vector, and Hotelling's T² asks whether their mean over worlds is the uniform one
      (``1 / world_bins`` each), with the covariance estimated across worlds (needs more
      worlds than bins);
    * ``ks_p_one_per_world``: the KS test on one entry per world, drawn at random (independent
      ranks, but only as many as worlds: it misses all but gross departures).

    Returns a frame indexed by group with ``n_ranks, chi2, chi2_p, ks_p, world_t2_p,
    ks_p_one_per_world, coverage_50, coverage_90``.
    """
    from scipy import stats

    out = {}
    rng = np.random.default_rng(0)
    for group, part in result.groupby("group", sort=False):
        L = int(part["n_draws"].iloc[0])
        ranks = part["rank"].to_numpy()
        edges = np.linspace(0, L + 1, bins + 1)
        counts, _ = np.histogram(ranks, bins=edges)
        chi2, chi2_p = stats.chisquare(counts)
        u = (ranks + rng.random(len(ranks))) / (L + 1)
        out[group] = {
            "n_ranks": len(ranks),
            "chi2": float(chi2),
            "chi2_p": float(chi2_p),
            "ks_p": float(stats.kstest(u, "uniform").pvalue),
            "world_t2_p": _world_t2_p(part, L, world_bins),
            "ks_p_one_per_world": _one_per_world_ks_p(part, L, rng),
            "coverage_50": float(part["in_50"].mean()),
            "coverage_90": float(part["in_90"].mean()),
        }
    frame = pd.DataFrame.from_dict(out, orient="index")
    frame.index.name = "group"
    return frame


def _world_t2_p(part: pd.DataFrame, L: int, bins: int) -> float:
    """Hotelling T² p-value that the mean over worlds of each world's rank-bin shares is
    uniform (see :func:`rank_uniformity`); NaN without a ``world`` column or with too few
    worlds."""
    from scipy import stats

    if "world" not in part:
        return float("nan")
    edges = np.linspace(0, L + 1, bins + 1)
    shares = np.array([np.histogram(g["rank"].to_numpy(), bins=edges)[0] / len(g)
                       for _, g in part.groupby("world")])
    n, k = shares.shape[0], bins - 1  # the last share is 1 minus the others
    if n <= k:
        return float("nan")
    x = shares[:, :k]
    diff = x.mean(axis=0) - 1.0 / bins
    cov = np.cov(x, rowvar=False).reshape(k, k)
    if not np.all(np.isfinite(cov)) or np.linalg.matrix_rank(cov) < k:
        return float("nan")  # e.g. one entry per world that always lands in one bin
    t2 = n * diff @ np.linalg.solve(cov, diff)
    f = t2 * (n - k) / (k * (n - 1))
    return float(stats.f.sf(f, k, n - k))


def _one_per_world_ks_p(part: pd.DataFrame, L: int, rng) -> float:
    """KS p-value of uniform ranks over one entry per world, drawn at random."""
    from scipy import stats

    if "world" not in part or part["world"].nunique() < 2:
        return float("nan")
    picked = part.groupby("world")["rank"].apply(lambda r: r.iloc[rng.integers(len(r))])
    u = (picked.to_numpy() + rng.random(len(picked))) / (L + 1)
    return float(stats.kstest(u, "uniform").pvalue)
