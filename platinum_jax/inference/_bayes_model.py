"""The NumPyro model of any measurement model, built from its declaration.

:func:`numpyro_model` turns a :class:`~platinum_jax.models.MeasurementModel` bound to data (a
:class:`Problem`) into a plain NumPyro model function: priors on the free entries of every
declared parameter (one sample site per parameter, named as the parameter), a model's
:class:`~platinum_jax.models.Reparameterisation` sampled in its own coordinates, and the
likelihood as one observed site ``y``. :func:`assemble_parameters` maps one draw of the sites
back to the model's raw parameter blocks. The drivers that sample it are in ``_bayes``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from platinum_jax.models import Hierarchical

from ._problem import Data, Problem, Theta

__all__ = ["assemble_parameters", "numpyro_model", "posterior_theta", "posterior_values",
           "prior_like_globals"]


def _reparam(problem: Problem):
    """The model's :class:`Reparameterisation` for this data, or None (cached per problem)."""
    if not hasattr(problem, "_bayes_reparam"):
        rep = problem.model.reparameterise(problem.table)
        if rep is not None:
            known = set(problem.subject.names) | set(problem.item.names) | set(problem.glob.names)
            unknown = set(rep.replaces) - known
            if unknown:
                raise ValueError(f"the reparameterisation of model {problem.model.name!r} "
                                 f"replaces unknown parameter(s) {sorted(unknown)}")
        problem._bayes_reparam = rep
    return problem._bayes_reparam


def _entity_counts(problem: Problem, bid: int):
    t = problem.table
    if bid == 0:
        return np.bincount(t.subject_index, minlength=t.n_subjects)
    return np.bincount(t.item_index, minlength=t.n_items)


def _sites(problem: Problem):
    """Sample sites of the declared parameters: ``(site name, block id, param, flat positions
    of its free entries, centred mask per position or None)``; a reparameterisation's
    parameters are left out (it samples its own sites)."""
    rep = _reparam(problem)
    replaced = set() if rep is None else set(rep.replaces)
    seen: dict[str, str] = {}
    for label, block in (("subject", problem.subject), ("item", problem.item),
                         ("global", problem.glob)):
        for name in block.names:  # sites are named as their parameters: one name, one site
            if name in seen:
                raise ValueError(f"model {problem.model.name!r} declares a {seen[name]} and a "
                                 f"{label} parameter both named {name!r}; give them distinct "
                                 "names")
            seen[name] = label
    out = []
    # Globals first: a hierarchical prior of a subject or item parameter reads them.
    blocks = (("subject", problem.subject, problem.free_S), ("item", problem.item, problem.free_I),
              ("global", problem.glob, problem.free_G))
    for bid in (2, 0, 1):
        label, block, free = blocks[bid]
        free2 = np.atleast_2d(free)
        for name, (a, b, _) in block.slices().items():
            p = dict(block.decl)[name]
            if p.map_only or name in replaced:
                continue
            cols = np.zeros(free2.shape, dtype=bool)
            cols[:, a:b] = free2[:, a:b]
            pos = np.flatnonzero(cols.ravel())
            if len(pos) == 0:
                continue
            if p.prior is None:
                raise ValueError(
                    f"{label} parameter {name!r} of model {problem.model.name!r} has no prior; "
                    "a Bayesian fit needs a prior on every fitted parameter (set Param.prior)"
                )
            centred = None
            if isinstance(p.prior, Hierarchical):
                if bid == 2:
                    raise ValueError(f"global parameter {name!r}: a Hierarchical prior belongs "
                                     "to subject or item parameters (its loc and scale are "
                                     "globals)")
                counts = _entity_counts(problem, bid)
                centred = p.prior.centred_mask(counts)[pos // block.size]
            out.append((name, bid, p, pos, centred))
    return out


def _natural_globals(problem: Problem, g) -> dict:
    return problem.glob.natural(problem.glob.unflatten(g))


def _fill(flat, shape, entries):
    """The flat block ``flat`` (of ``shape``) with each ``(positions, values)`` of ``entries``
    put in place. When the sites cover the whole block, each a range of whole columns (every
    entity's entries of a parameter free: the usual case), the block is their columns side by
    side: no scatter in the potential, and no gather in its gradient."""
    n = int(np.prod(shape))
    rows = shape[0] if len(shape) else 1
    width = n // max(rows, 1)
    spans = []
    for pos, v in entries:
        cols = np.unique(np.asarray(pos) % max(width, 1))
        a, b = (int(cols[0]), int(cols[-1]) + 1) if len(cols) else (0, 0)
        whole = (np.arange(rows)[:, None] * width + np.arange(a, b)[None]).ravel()
        if len(cols) != b - a or not np.array_equal(np.asarray(pos), whole):
            spans = None
            break
        spans.append((a, b, v))
    if spans is not None and entries:
        spans.sort(key=lambda t: t[0])
        if spans[0][0] == 0 and spans[-1][1] == width and all(
                spans[j][1] == spans[j + 1][0] for j in range(len(spans) - 1)):
            return jnp.concatenate([jnp.asarray(v, flat.dtype).reshape(rows, b - a)
                                    for a, b, v in spans], axis=1).ravel()
    for pos, v in entries:
        flat = flat.at[pos].set(v)
    return flat


def _assemble(problem: Problem, values: dict):
    """Sampled values -> full raw blocks and the reparameterisation's extras.

    Fixed and point-fit-only entries keep their start values; a reparameterisation fills the
    parameters it replaces; non-centred hierarchical entries become ``loc + scale * n``."""
    start = problem.start()
    blocks = [b.ravel() for b in start]
    shapes = [b.shape for b in start]
    frees = [np.asarray(f).ravel() for f in (problem.free_S, problem.free_I, problem.free_G)]
    extras: dict = {}
    rep = _reparam(problem)
    if rep is not None:
        out = rep.parameters({k: values[k] for k in rep.sites()})
        for bid, block in enumerate((problem.subject, problem.item, problem.glob)):
            for name, (a, b, _) in block.slices().items():
                if name not in rep.replaces:
                    continue
                full = blocks[bid].reshape(shapes[bid])
                new = jnp.asarray(out[name], full.dtype).reshape(*full.shape[:-1], b - a)
                cols = full.at[..., a:b].set(new).ravel()
                blocks[bid] = jnp.where(frees[bid], cols, blocks[bid])
        extras = {k: v for k, v in out.items() if k not in rep.replaces}
        extras.update({k: out[k] for k in rep.replaces})
    sites = _sites(problem)
    for site, bid, _, pos, _ in sites:
        if bid == 2:
            blocks[2] = blocks[2].at[pos].set(values[site])
    glob = _natural_globals(problem, blocks[2])
    placed: dict[int, list] = {0: [], 1: []}
    for site, bid, p, pos, centred in sites:
        if bid == 2:
            continue
        v = values[site]
        if centred is not None:
            loc, scale = glob[p.prior.loc], glob[p.prior.scale]
            v = jnp.where(centred, v, loc + scale * v)
        placed[bid].append((pos, v))
    for bid, entries in placed.items():
        blocks[bid] = _fill(blocks[bid], shapes[bid], entries)
    theta = Theta(*(b.reshape(s) for b, s in zip(blocks, shapes, strict=True)))
    return theta, extras


def numpyro_model(problem: Problem):
    """A NumPyro model function ``model(data, observed=True)`` for ``problem`` (a model bound
    to data).

    Each declared parameter with free entries becomes one sample site over those entries,
    named as the parameter, with the parameter's prior;
    a :class:`~platinum_jax.models.Hierarchical` prior is sampled centred or non-centred as it
    says, after the globals it reads. A model's
    :class:`~platinum_jax.models.Reparameterisation` replaces its parameters' sites by its own
    and records what it computes (the replaced parameters included) as deterministic sites.
    The responses are one observed site ``"y"`` whose log density is
    ``weight * log p(y | mu, theta)`` per row; ``observed=False`` samples it (prior and
    posterior predictive). Copy and extend it like any NumPyro model.
    """
    import numpyro
    import numpyro.distributions as dist

    from ._rows import Responses

    sites = _sites(problem)
    rep = _reparam(problem)
    rep_sites = {} if rep is None else rep.sites()
    clash = set(rep_sites) & {s[0] for s in sites}
    if clash:
        raise ValueError(f"reparameterisation site names clash with parameters: {sorted(clash)}")

    def model(data: Data, observed: bool = True):
        values = {}
        # Order: the reparameterisation's coordinates, the globals, then subjects and items
        # (hierarchical priors read the globals).
        for site, d in rep_sites.items():
            values[site] = numpyro.sample(site, d)
        for site, bid, p, pos, _ in sites:
            if bid == 2:
                values[site] = numpyro.sample(site, p.prior.expand([len(pos)]).to_event(1))
        glob = None
        for site, bid, p, pos, centred in sites:
            if bid == 2:
                continue
            if centred is None:
                prior = p.prior.expand([len(pos)])
            else:
                if glob is None:  # the globals as sampled so far (hierarchical priors read them)
                    g = _assemble_globals(problem, values)
                    glob = _natural_globals(problem, g)
                loc, scale = glob[p.prior.loc], glob[p.prior.scale]
                prior = dist.Normal(jnp.where(centred, loc, 0.0), jnp.where(centred, scale, 1.0))
            values[site] = numpyro.sample(site, prior.to_event(1))
        theta, extras = _assemble(problem, values)
        for k, v in extras.items():
            if k not in rep_sites:  # a sampled coordinate passed through is recorded already
                numpyro.deterministic(k, v)
        numpyro.sample("y", Responses(problem, theta, data),
                       obs=data.response if observed else None)

    return model


def assemble_parameters(problem: Problem, values: dict):
    """Sampled site values (one draw) -> ``(theta, extras)``: the model's full raw parameter
    blocks, with fixed entries at their start values and reparameterised or non-centred entries
    mapped back, and the reparameterisation's extra quantities. Jittable and vmappable."""
    return _assemble(problem, values)


def _assemble_globals(problem: Problem, values: dict):
    g = problem.start().globals
    frees = np.asarray(problem.free_G).ravel()
    rep = _reparam(problem)
    if rep is not None and any(n in rep.replaces for n in problem.glob.names):
        out = rep.parameters({k: values[k] for k in rep.sites()})
        for name, (a, b, _) in problem.glob.slices().items():
            if name in rep.replaces:
                new = g.at[a:b].set(jnp.asarray(out[name], g.dtype).reshape(b - a))
                g = jnp.where(frees, new, g)
    for site, bid, _, pos, _ in _sites(problem):
        if bid == 2:
            g = g.at[pos].set(values[site])
    return g


def _map_start(problem: Problem) -> dict:
    """The MAP fit's free entries per sample site: where NUTS and SVI start."""
    from ._point import fit_map

    if problem.has_se and problem.model.likelihood.reads_se:
        # The MAP solvers do not pass known standard errors to the likelihood; a start that
        # ignored them would be a different model's mode, so start where NumPyro does.
        return {}
    start = fit_map(problem, problem.table, checks=False)  # a start: nothing to report
    # Hierarchical non-centred entries and reparameterised sites start where NumPyro puts them.
    return {site: jnp.asarray(np.asarray(start.theta[bid]).ravel()[pos], problem.dtype)
            for site, bid, _, pos, centred in _sites(problem) if centred is None}


def posterior_theta(problem: Problem, samples: dict) -> Theta:
    """Flat posterior samples ``{site: (D, k)}`` -> raw blocks with a leading draw axis."""
    return posterior_values(problem, samples)[0]


def posterior_values(problem: Problem, samples: dict):
    """Flat samples ``{site: (D, ...)}`` -> ``(Theta, extras)`` with a leading draw axis:
    the raw blocks and what the model's reparameterisation derives (one compiled map)."""
    fn = jax.jit(jax.vmap(lambda values: _assemble(problem, values)))
    return fn({k: jnp.asarray(v) for k, v in samples.items()})


#: a sampled global whose posterior sd is at least this share of its prior's is not identified
PRIOR_LIKE = 0.9


def prior_like_globals(problem: Problem, grouped: dict) -> list[str]:
    """The global entries (labels) a Bayesian fit samples from their declared prior whose
    posterior spread is still the prior's (sd ratio >= :data:`PRIOR_LIKE`): the data do not
    identify them, so their intervals are the prior's."""
    cols = problem.glob.columns()
    out = []
    for site, bid, param, pos, _ in _sites(problem):
        if bid != 2 or site not in grouped:
            continue
        try:
            prior_sd = float(np.sqrt(np.asarray(param.prior.variance)))
        except (AttributeError, NotImplementedError, TypeError, ValueError):
            continue  # no closed-form variance: no comparison
        if not np.isfinite(prior_sd) or prior_sd <= 0:
            continue
        draws = np.asarray(grouped[site]).reshape(-1, len(pos))
        ratio = draws.std(axis=0, ddof=1) / prior_sd
        out += [cols[k][1] for k, r in zip(pos, ratio, strict=True) if r >= PRIOR_LIKE]
    return out
