"""Simulation-based calibration of any registered model (Talts et al. 2018, "Validating
Bayesian inference algorithms with simulation-based calibration").

Draw the parameters from the prior, simulate responses from the model, sample the posterior
with NUTS, and record where each true value falls among the posterior draws (its rank). If the
sampler computes the posterior the model defines, every rank is uniform on {0, ..., L} and
central intervals cover the truth at their nominal rate.

    >>> from platinum_jax.inference import run_sbc, rank_uniformity, sbc_design
    >>> from platinum_jax.models import TwoPL
    >>> table = sbc_design(40, 10, 200)                        # doctest: +SKIP
    >>> ranks = run_sbc(TwoPL(), table, n_worlds=20)           # doctest: +SKIP
    >>> rank_uniformity(ranks)                                 # doctest: +SKIP

The design (which subject answers which item, with which known standard error or number of
trials) is a :class:`~platinum_jax.data.ResponseTable` whose responses are placeholders;
:func:`sbc_design` makes a sparse one shaped like the Epoch benchmark table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax._distributed import spread
from platinum_jax.data import ResponseTable

from ._problem import Problem

__all__ = ["sbc_design", "simulate_world", "run_sbc", "rank_uniformity"]


def sbc_design(
    n_subjects: int = 180,
    n_items: int = 40,
    n_responses: int = 1300,
    *,
    se_share: float = 0.3,
    min_per_item: int = 3,
    seed: int = 0,
) -> ResponseTable:
    """A sparse design like the Epoch table (179 models, 38 benchmarks, 1,324 scores).

    Every subject answers at least 4 items (the Rosetta paper's filter), about
    ``n_responses / n_subjects`` on average, drawn without replacement with Zipf-like item
    popularity (item 0 is the most popular: the anchor of a Rosetta model); every item gets at
    least ``min_per_item`` responses. A share ``se_share`` of the items (never item 0) reports
    a known standard error on every response, uniform on [0.01, 0.05] (Epoch's own runs report
    0.01-0.05). Returns a :class:`ResponseTable` with responses 0 (placeholders), subjects
    ``m00000, ...`` and items ``b00000, ...`` (zero-padded, so sorted in position order).
    """
    if n_subjects < 2 or n_items < 2:
        raise ValueError("an SBC design needs at least 2 subjects and 2 items")
    if not 4 * n_subjects <= n_responses <= n_subjects * n_items:
        raise ValueError(
            f"n_responses must lie between 4 per subject ({4 * n_subjects}) and every pair "
            f"({n_subjects * n_items}), got {n_responses}"
        )
    rng = np.random.default_rng(seed)
    popularity = 1.0 / (np.arange(n_items) + 3.0)
    extra = n_responses - 4 * n_subjects
    degree = 4 + rng.multinomial(extra, np.full(n_subjects, 1.0 / n_subjects))
    degree = np.minimum(degree, n_items)
    pairs = set()
    for m in range(n_subjects):
        chosen = rng.choice(n_items, size=degree[m], replace=False,
                            p=popularity / popularity.sum())
        pairs.update((m, int(b)) for b in chosen)
    counts = np.bincount([b for _, b in pairs], minlength=n_items)
    for b in np.flatnonzero(counts < min_per_item):
        missing = [m for m in rng.permutation(n_subjects) if (m, b) not in pairs]
        pairs.update((int(m), int(b)) for m in missing[: min_per_item - counts[b]])
    ordered = np.array(sorted(pairs))
    has_se = rng.random(n_items) < se_share
    has_se[0] = False  # the anchor, like Winogrande, is an external leaderboard
    se = np.where(has_se[ordered[:, 1]], rng.uniform(0.01, 0.05, size=len(ordered)), 0.0)
    return ResponseTable(
        subjects=pd.Index([f"m{i:05d}" for i in range(n_subjects)], name="subject"),
        items=pd.Index([f"b{i:05d}" for i in range(n_items)], name="item"),
        subject_index=ordered[:, 0].astype(np.int32),
        item_index=ordered[:, 1].astype(np.int32),
        response=np.zeros(len(ordered)),
        se=se,
        source="the SBC design",
    )


def _derived(problem: Problem, values: dict) -> dict:
    """The likelihood's derived quantities of one draw (e.g. ``sigma`` from log sigma)."""
    from ._bayes_model import assemble_parameters

    theta, _ = assemble_parameters(problem, values)
    items = problem.item.natural(problem.item.unflatten(theta.items))
    return dict(problem.model.likelihood.derived(items))


def _problem(model, design: ResponseTable) -> Problem:
    return Problem(model, design, validate=False)  # the responses are placeholders


def _with_responses(problem: Problem, y):
    return dataclasses.replace(problem.data(), response=jnp.asarray(y))


def _world_simulator(model, design: ResponseTable, problem: Problem,
                     extra: Callable | None) -> Callable:
    """``key -> {site: value}``: one draw of the parameters from the prior and of ``y`` given
    them, as one compiled program (the design's rows are its argument, so every world of a
    run reuses it; run op by op, NumPyro's handlers compile each operation on its own)."""
    from numpyro.infer import Predictive

    from ._bayes_model import numpyro_model

    npm = numpyro_model(problem)
    extra = _derived if extra is None else extra
    rows = _with_responses(problem, design.response)

    @jax.jit
    def draw(key, rows):
        one = {k: v[0] for k, v in Predictive(npm, num_samples=1)(key, rows,
                                                                   observed=False).items()}
        return {**one, **extra(problem, one)}

    return lambda key: {k: np.asarray(v) for k, v in draw(key, rows).items()}


def simulate_world(key, model, design: ResponseTable, *, problem: Problem | None = None,
                   extra: Callable | None = None) -> dict[str, np.ndarray]:
    """One draw of every parameter from ``model``'s prior on ``design`` and of the responses
    ``y`` given them: ``{site: value}`` (sampled and derived sites, and what
    ``extra(problem, values)`` adds; by default the likelihood's derived quantities, such as a
    noise scale from its logarithm)."""
    problem = _problem(model, design) if problem is None else problem
    return _world_simulator(model, design, problem, extra)(key)


def run_sbc(
    model,
    design: ResponseTable,
    n_worlds: int,
    *,
    warmup: int = 400,
    samples: int = 600,
    thin: int = 6,
    target_accept: float = 0.9,
    mass: str = "diagonal",
    groups: Mapping[str, str] | None = None,
    extra: Callable | None = None,
    seed: int = 0,
    progress=None,
) -> pd.DataFrame:
    """Ranks and interval coverage of the true parameters of ``model`` over ``n_worlds``
    simulated worlds on ``design`` (a :class:`ResponseTable` whose responses are ignored).

    Each world: parameters and responses from the prior predictive (:func:`simulate_world`),
    one NUTS chain of ``warmup`` + ``samples`` steps (the sampler of
    :func:`~platinum_jax.inference.nuts`; ``mass`` ``"diagonal"`` or ``"lowrank"``),
    thinned by ``thin`` to L = samples // thin draws (thinning brings the draws close to
    independent, which the rank test assumes). Every site of the model's NumPyro model
    (:func:`~platinum_jax.inference.numpyro_model`) but ``y`` is ranked, the sampled
    coordinates and what a reparameterisation derives alike, plus the entries
    ``extra(problem, values)`` returns (default: the likelihood's derived quantities,
    :meth:`~platinum_jax.models.Likelihood.derived`); ``groups`` maps a site to a group label (default the
    site's name) and, when given, restricts the ranks to its sites. Entries that never vary
    (anchors) are left out. Returns one row per (world, site entry) with columns ``world,
    group, site, index, truth, rank`` (0..L), ``n_draws`` (L), ``in_50``, ``in_90`` (the truth
    inside the central 50% / 90% posterior interval), ``divergences`` (of the world) and
    ``derived`` (a computed, not sampled, site). Run in float64. ``progress(done, n_worlds,
    divergences)`` is called after each world. After ``jax.distributed.initialize()`` each
    process fits its share of the worlds and every process returns the whole table.
    """
    from ._bayes_model import numpyro_model

    extra = _derived if extra is None else extra
    for name, value in (("n_worlds", n_worlds), ("samples", samples), ("thin", thin)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if samples // thin < 1:
        raise ValueError(f"samples // thin must leave at least one draw (got {samples} // {thin})")
    problem = _problem(model, design)
    npm = numpyro_model(problem)
    if int(warmup) != warmup or warmup < 1:
        raise ValueError(f"warmup must be a positive integer, got {warmup!r}")
    sampler = _world_sampler(npm, problem, warmup, samples, thin, target_accept, mass, extra)
    rows = []
    keys = jax.random.split(jax.random.PRNGKey(seed), 2 * n_worlds)
    sampled = None
    simulate = _world_simulator(model, design, problem, extra)

    def world(w):
        nonlocal sampled
        truth = simulate(keys[2 * w])
        draws, diverging, sites = sampler(keys[2 * w + 1], _with_responses(problem, truth["y"]))
        sampled = sites if sampled is None else sampled
        if progress is not None:  # this process's worlds, counted as if all kept pace
            finished.append(w)
            progress(min(len(finished) * processes, n_worlds), n_worlds,
                     int(np.asarray(diverging).sum()))
        return truth, draws, np.asarray(diverging)

    # In a multi-process run (jax.distributed) each process fits its share of the worlds.
    finished: list[int] = []
    processes = jax.process_count()
    worlds = spread(world, n_worlds)
    for w, (truth, draws, diverging) in enumerate(worlds):
        n_div = int(np.asarray(diverging).sum())
        for site in sorted(draws):
            if site == "y" or site not in truth or (groups is not None and site not in groups):
                continue
            group = site if groups is None else groups[site]
            x = np.asarray(draws[site]).reshape(draws[site].shape[0], -1)
            t = np.asarray(truth[site]).reshape(-1)
            free = np.ptp(x, axis=0) > 0  # anchored entries are constants
            lo50, hi50, lo90, hi90 = np.quantile(x, [0.25, 0.75, 0.05, 0.95], axis=0)
            for i in np.flatnonzero(free):
                rows.append(
                    (w, group, site, int(i), float(t[i]), int(np.sum(x[:, i] < t[i])),
                     x.shape[0], bool(lo50[i] <= t[i] <= hi50[i]),
                     bool(lo90[i] <= t[i] <= hi90[i]), n_div, site not in sampled)
                )
    cols = ["world", "group", "site", "index", "truth", "rank", "n_draws", "in_50", "in_90",
            "divergences", "derived"]
    return pd.DataFrame(rows, columns=cols)


def _world_sampler(npm, problem, warmup, samples, thin, target_accept, mass, extra):
    """``(key, data) -> (draws, diverging, sampled sites)``: one NUTS chain of the package's
    sampler (:func:`~platinum_jax.inference.nuts`'s warm-up), compiled once for every world:
    the data are an argument of the program, so a new world reuses it."""
    from ._nuts_adapt import WarmupSettings
    from ._nuts_run import numpyro_potential, run_chains

    data0 = problem.data()
    potential, dim, unravel, constrain, _ = numpyro_potential(npm, (data0,))
    sampled = frozenset(jax.eval_shape(unravel, jnp.zeros(dim, data0.response.dtype)))
    settings = WarmupSettings(target_accept=float(target_accept), mass=mass)
    with_extra = jax.jit(jax.vmap(lambda values: {**values, **extra(problem, values)}))

    def call(key, data):
        seed = int(jax.random.randint(key, (), 0, 2**31 - 1))
        out, _ = run_chains(potential, (data,), dim, chains=1, num_warmup=int(warmup),
                            num_samples=int(samples), settings=settings, seed=seed,
                            method="sequential")
        zs = jnp.asarray(out["z"][0][::thin])
        draws = with_extra(constrain(zs, (data,)))
        return draws, out["diverging"][0], sampled

    return call


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
