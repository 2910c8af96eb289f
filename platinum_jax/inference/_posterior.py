"""From sampled sites to a labelled, diagnosed posterior: the one builder of every Bayesian fit.

Both :func:`~platinum_jax.inference.nuts` and :func:`~platinum_jax.inference.svi` end here.
Every draw of the sampled sites is mapped forward in one compiled program (vmapped over
the draws): the model's raw parameter blocks, its reparameterisation's derived quantities, the
likelihood's derived ones, the mean response variance per item (``noise_variance``, the
``Sigma_bb`` of the optimal-weights problem), a posterior predictive draw and the pointwise log
likelihood, in blocks of a few hundred draws. They become one ArviZ ``InferenceData`` labelled with the model's dimension names
(``MeasurementModel.dim_names``):

* ``posterior``: each declared parameter at its natural value (role ``parameter``), the sampled
  coordinates a reparameterisation adds (role ``coordinate``), derived quantities (role
  ``derived``); the role is each variable's ``attrs["role"]``;
* ``sample_stats`` (NUTS), ``log_likelihood`` and ``posterior_predictive`` (``y``, unless
  draws x rows exceed ``log_lik_limit``), ``observed_data`` and ``constant_data`` (each row's
  subject and item position, trials and known standard error), rows labelled by subject and
  item name.

The tidy summary (:func:`posterior_summary`) covers every variable but the coordinates; the
diagnostics (:func:`summary_diagnostics`) cover every variable.
"""

from __future__ import annotations

import hashlib
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ._bayes_model import _assemble, _reparam, _sites
from ._problem import Data, Problem, Theta
from ._results import Fit, _natural_matrix
from ._summary import posterior_summary, summary_diagnostics, warn_on_diagnostics

__all__ = ["posterior_fit"]

_BATCH = 256  # draws mapped forward at once: bounds the memory of draws x rows arrays


# The push-forward programs by problem structure: a second posterior of the same model and
# shapes (another seed, a refit in a sweep) reuses the compiled program.
_PUSH: dict = {}


def _push_program(problem: Problem, rows: bool):
    """``((values, keys), data) -> what every draw implies`` (vmapped over draws), compiled."""
    from ._map import per_structure

    n_i = problem.table.n_items

    def build(bare: Problem):
        lik = bare.model.likelihood

        def one(args, data):
            values, k = args
            bi = data.item_index
            count = jax.ops.segment_sum(jnp.ones_like(data.response), bi, num_segments=n_i)
            theta, extras = _assemble(bare, values)
            items = bare.item.natural(bare.item.unflatten(theta.items))
            out = {"theta": tuple(theta), "extras": extras, "derived": dict(lik.derived(items))}
            mu = bare.predict(theta, data.subject_index, bi)
            lik_rows = bare.likelihood_rows(theta, data)
            _, var = lik.moments(mu, data.trials, lik_rows)
            out["noise_variance"] = jax.ops.segment_sum(var, bi, num_segments=n_i) / count
            if rows:
                log_n = jnp.log(data.trials) if lik.lattice else 0.0
                out["y"] = lik.sample(k, mu, data.trials, lik_rows)
                out["log_lik"] = bare.pointwise_log_lik(theta, data) + log_n
            return out

        return jax.jit(jax.vmap(one, in_axes=(0, None)))

    # A reparameterisation is built from the rows (which benchmark each score is on) and the
    # program closes over it: build it on the problem that has the table, and key the program
    # by those rows too, so a table of the same sizes but other rows gets its own program.
    rows_key = None
    if _reparam(problem) is not None:
        t = problem.table
        rows_key = hashlib.sha256(np.ascontiguousarray(t.subject_index).tobytes()
                                  + np.ascontiguousarray(t.item_index).tobytes()).hexdigest()
    return per_structure(_PUSH, problem, ("push_forward", rows, n_i, rows_key), build)


def _push_forward(problem: Problem, key, flat: dict, data: Data, rows: bool):
    run = _push_program(problem, rows)
    # host arrays: a block is then a NumPy slice, not one gather dispatched per site
    flat = {k: np.asarray(v) for k, v in flat.items()}
    n = next(iter(flat.values())).shape[0]
    keys = jax.random.split(key, n)
    size = min(_BATCH, n)
    parts = []
    for start in range(0, n, size):  # equal blocks (the last padded): one compiled program
        take = np.minimum(np.arange(start, start + size), n - 1)
        block = run(({k: v[take] for k, v in flat.items()}, keys[take]), data)
        keep = min(size, n - start)
        parts.append(jax.tree.map(lambda x, m=keep: np.asarray(x)[:m], block))
    return jax.tree.map(lambda *xs: np.concatenate(xs), *parts)


def _by_chain(x, chains: int):
    x = np.asarray(x)
    return x.reshape((chains, -1) + x.shape[1:])


def _build(problem: Problem, grouped: dict, stats: dict | None, data: Data, pushed: dict,
           chains: int, attrs: dict):
    import arviz as az

    t, model = problem.table, problem.model
    s_dim, i_dim, r_dim = model.dim_names
    coords = {s_dim: list(t.subjects), i_dim: list(t.items), r_dim: np.arange(t.n_responses)}
    posterior, dims, roles = {}, {}, {}
    theta = Theta(*pushed["theta"])
    for block, raw, dim in ((problem.subject, theta.subjects, s_dim),
                            (problem.item, theta.items, i_dim)):
        nat = _natural_matrix(block, np.asarray(raw))  # (D, n, p)
        for name, (a, b, shape) in block.slices().items():
            if dict(block.decl)[name].data:  # filled from the data (a group position)
                continue
            posterior[name] = _by_chain(nat[..., a:b].reshape(*nat.shape[:2], *shape), chains)
            dims[name] = [dim, *(f"{name}_dim_{k}" for k in range(len(shape)))]
            roles[name] = "parameter"
    g = _natural_matrix(problem.glob, np.asarray(theta.globals))
    for name, (a, b, shape) in problem.glob.slices().items():
        if not dict(problem.glob.decl)[name].map_only:
            posterior[name] = _by_chain(g[:, a:b].reshape(-1, *shape), chains)
            roles[name] = "parameter"
    rep = _reparam(problem)
    labels = {} if rep is None else rep.coords(t.subjects, t.items)

    def add(name, value, role, lead=None):
        if name in posterior:
            return
        posterior[name] = value
        roles[name] = role
        described = labels.get(name, [])
        for dim, names in described:
            coords.setdefault(dim, list(names))
        named = [d for d, _ in described] if described else ([] if lead is None else [lead])
        dims[name] = [*named, *(f"{name}_dim_{k}" for k in range(len(named),
                                                                  np.ndim(value) - 2))]

    centred = {site: c for site, _, _, _, c in _sites(problem)}
    for site, value in grouped.items():
        if site in posterior:
            # a declared parameter's own site: its natural value stands for it, except where
            # some entries are sampled non-centred (standard normal offsets)
            if centred.get(site) is not None and not np.all(centred[site]):
                add(f"{site}_sampled", np.asarray(value), "coordinate")
            continue
        add(site, np.asarray(value), "coordinate")
    for name, value in pushed["extras"].items():
        add(name, _by_chain(value, chains), "derived")
    for name, value in pushed["derived"].items():
        add(name, _by_chain(value, chains), "derived", lead=i_dim)
    add("noise_variance", _by_chain(pushed["noise_variance"], chains), "derived", lead=i_dim)

    groups = {"posterior": posterior}
    if stats:
        groups["sample_stats"] = stats
    response = np.asarray(data.response)
    groups["observed_data"] = {"y": response}
    constant = {"subject_index": np.asarray(t.subject_index),
                "item_index": np.asarray(t.item_index)}
    if t.trials is not None:
        constant["trials"] = np.asarray(t.trials)
    if t.se is not None:
        constant["se"] = np.asarray(data.se)
    if t.groups is not None:  # each row's group (benchmark) label: the table reads back whole
        constant["group"] = np.asarray(t.groups)[t.item_group][t.item_index].astype(str)
    if t.weight is not None:
        constant["weight"] = np.asarray(t.weight)
    groups["constant_data"] = constant
    if "y" in pushed:
        groups["posterior_predictive"] = {"y": _by_chain(pushed["y"], chains)}
        groups["log_likelihood"] = {"y": _by_chain(pushed["log_lik"], chains)}
    dims.update({"y": [r_dim], **{k: [r_dim] for k in constant}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        idata = az.from_dict(**groups, coords=coords, dims=dims)
    row_labels = {f"{r_dim}_{s_dim}": (r_dim, np.asarray(t.subjects)[t.subject_index]),
                  f"{r_dim}_{i_dim}": (r_dim, np.asarray(t.items)[t.item_index])}
    for group in ("observed_data", "constant_data"):
        setattr(idata, group, getattr(idata, group).assign_coords(row_labels))
    for name, role in roles.items():
        idata.posterior[name].attrs["role"] = role
    idata.attrs.update(attrs)
    return idata


def posterior_fit(problem: Problem, method: str, grouped: dict, key, *, stats: dict | None,
                  diagnostics: dict, attrs: dict, log_lik_limit: float, ess_min: float,
                  rhat_max: float, wall: float) -> Fit:
    """The :class:`Fit` of a Bayesian run: ``grouped`` holds each sampled site's draws with
    leading dimensions (chain, draw), sampled on ``problem.in_canonical_order()`` (the draws are
    mapped forward there too; row-wise results come back in the table's order); ``stats``
    NUTS's per-draw statistics (None for SVI);
    ``key`` draws the posterior predictive; ``diagnostics`` and ``attrs`` are the run's own
    (settings, times), joined by the summary's diagnostics. With NUTS a
    :class:`~platinum_jax.inference.SamplingWarning` names each failed check, and
    ``diagnostics["ok"]`` says whether all passed (no divergence, R-hat <= ``rhat_max``, bulk
    and tail ESS >= ``ess_min``; one chain has no R-hat)."""
    from ._diagnostics import rhat_ok

    first = next(iter(grouped.values()))
    chains, per_chain = int(first.shape[0]), int(first.shape[1])
    flat = {k: jnp.asarray(np.asarray(v).reshape(-1, *np.shape(v)[2:]))
            for k, v in grouped.items()}
    rows = chains * per_chain * problem.table.n_responses <= log_lik_limit
    sampled, order = problem.in_canonical_order()
    pushed = _push_forward(sampled, key, flat, sampled.data(), rows)
    if rows and order is not None:  # row k of the sampled problem is row order[k] of the table
        back = np.argsort(order)
        pushed["y"], pushed["log_lik"] = pushed["y"][:, back], pushed["log_lik"][:, back]
    idata = _build(problem, grouped, stats, problem.data(), pushed, chains,
                   {**attrs, "method": method})
    summary = posterior_summary(idata, with_diagnostics=(method == "nuts"))
    diag = dict(summary_diagnostics(idata, summary, method, wall))
    diag.update(diagnostics)
    if not rows:
        diag["log_likelihood"] = ("not stored (draws x responses above log_lik_limit): no "
                                  "log_likelihood or posterior_predictive group")
    from ._bayes_model import prior_like_globals

    unidentified = prior_like_globals(problem, grouped)
    if unidentified:
        diag["not_identified"] = unidentified
        warnings.warn(f"model {problem.model.name!r}: the posterior of {unidentified} is its "
                      "prior (its spread is at least 90% of the prior's): the data do not "
                      "identify them, so their intervals are the prior's", UserWarning,
                      stacklevel=3)
    if method == "nuts":
        diag["ok"] = bool(diag["divergences"] == 0
                          and (chains == 1 or rhat_ok(diag, rhat_max))
                          and diag["ess_bulk_min"] >= ess_min
                          and diag["ess_tail_min"] >= ess_min)
        warn_on_diagnostics(diag, ess_min=ess_min, rhat_max=rhat_max, run=dict(idata.attrs))
    draws = Theta(*(np.asarray(x) for x in pushed["theta"]))
    mean = Theta(*(x.mean(axis=0) for x in draws))
    return Fit(problem=problem, method=method, theta=mean, draws=draws, diagnostics=diag,
               inference_data=idata, posterior_summary=summary,
               converged=bool(diag.get("ok", True)))
