"""A model bound to data: flat parameter blocks, fixed entries, and the per-row functions.

Every inference method works on three blocks of raw parameters:

* ``S``: ``(n_subjects, p_s)``: each subject's parameters, flattened;
* ``I``: ``(n_items, p_i)``: each item's parameters, flattened;
* ``G``: ``(p_g,)``: the model's globals followed by the likelihood's.

A response row touches one row of ``S``, one row of ``I`` and ``G``: the bipartite structure
the MAP solver exploits. Fixed entries (the model's identification) keep their values; masks
say which entries are free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from platinum_jax.data import ResponseTable
from platinum_jax.models import DataInfo, MeasurementModel, Param

__all__ = ["Block", "Problem", "Data", "Theta"]


@dataclass(frozen=True)
class Block:
    """Flat layout of a dict of :class:`Param`: names in declaration order, with offsets."""

    decl: tuple[tuple[str, Param], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.decl)

    @property
    def size(self) -> int:
        return sum(p.size for _, p in self.decl)

    def slices(self):
        out, k = {}, 0
        for n, p in self.decl:
            out[n] = (k, k + p.size, p.shape)
            k += p.size
        return out

    def unflatten(self, vec) -> dict:
        """``(..., p)`` -> ``{name: (..., *shape)}`` (raw values)."""
        lead = vec.shape[:-1]
        return {n: vec[..., a:b].reshape((*lead, *shape))
                for n, (a, b, shape) in self.slices().items()}

    def natural(self, raw: dict) -> dict:
        return {n: p.natural(raw[n]) for n, p in self.decl}

    def parameter_columns(self) -> list[tuple[str, str]]:
        """:meth:`columns` without the entries the data fill (``Param(data=...)``): the
        columns a fit reports."""
        decl = dict(self.decl)
        return [(n, c) for n, c in self.columns() if not decl[n].data]

    def columns(self) -> list[tuple[str, str]]:
        """``(param name, column label)`` per flat entry (``name[k]`` for vector params)."""
        cols = []
        for n, p in self.decl:
            if p.shape == ():
                cols.append((n, n))
            else:
                cols.extend((n, f"{n}[{','.join(map(str, ix))}]") for ix in np.ndindex(*p.shape))
        return cols


class Theta(NamedTuple):
    """Raw parameter blocks ``(S, I, G)``: subjects ``(n_subjects, p_s)``, items
    ``(n_items, p_i)``, globals ``(p_g,)``."""

    subjects: jax.Array
    items: jax.Array
    globals: jax.Array


@dataclass(frozen=True, eq=False)
class Data:
    """Row arrays on the device: positions, responses, trials (1 where absent), weights, and
    known standard errors ``se`` (0 where unknown; None when the table has no ``se``)."""

    subject_index: jax.Array
    item_index: jax.Array
    response: jax.Array
    trials: jax.Array
    weight: jax.Array
    se: jax.Array | None = None


jax.tree_util.register_dataclass(
    Data,
    data_fields=["subject_index", "item_index", "response", "trials", "weight", "se"],
    meta_fields=[],
)


def _on_device(values, dtype=None) -> jax.Array:
    """Host values as a device array of ``dtype`` (JAX's default for their kind when None).

    The same array ``jnp.asarray`` gives, by a plain transfer: ``jnp.asarray`` may compile a
    small program for it, a few hundredths of a second in every command-line process."""
    host = np.asarray(values)
    dtype = jax.dtypes.canonicalize_dtype(host.dtype if dtype is None else dtype)
    return jax.device_put(np.asarray(host, dtype=dtype))


class Problem:
    """``model`` bound to ``table``: blocks, fixed entries, start values, per-row functions.

    Built once per fit; the jitted solvers close over it. ``eliminate`` says which side the MAP
    solver eliminates (the one with more parameters; the other side is solved densely).
    """

    def __init__(self, model: MeasurementModel, table: ResponseTable, *,
                 identification=None, validate: bool = True):
        if not isinstance(model, MeasurementModel):
            raise TypeError(f"model must be a MeasurementModel, got {type(model).__name__}")
        if not isinstance(table, ResponseTable):
            raise TypeError(
                f"data must be a ResponseTable, got {type(table).__name__}; build one with "
                "ResponseTable.from_frame or ResponseTable.read"
            )
        if validate:  # off only for placeholder tables (simulation) whose responses are dummies
            from platinum_jax.models import check_responses

            check_responses(model, table)
        self.model = model
        self.table = table
        self.has_se = table.se is not None
        self.info = DataInfo(table.n_subjects, table.n_items, table.n_responses)
        self.subject = Block(tuple(model.subject_params().items()))
        lik_items = model.likelihood.item_params()
        clash = set(lik_items) & set(model.item_params())
        if clash:
            raise ValueError(f"item parameter names clash with the likelihood's: {sorted(clash)}")
        # The likelihood's per-item parameters follow the model's in each item's row.
        self.item = Block(tuple(model.item_params().items()) + tuple(lik_items.items()))
        self.lik_item_names = tuple(lik_items)
        lik = model.likelihood.params()
        clash = set(lik) & set(model.global_params())
        if clash:
            raise ValueError(f"global parameter names clash with the likelihood's: {sorted(clash)}")
        self.glob = Block(tuple(model.global_params().items()) + tuple(lik.items()))
        self.n_model_globals = len(model.global_params())
        self.identification = (model.identify(table) if identification is None
                               else identification)
        self.dtype = jnp.result_type(float)
        self.free_S, self.init_S = self._layout(self.subject, table.n_subjects,
                                                self.identification.subject, "subject")
        self.free_I, self.init_I = self._layout(self.item, table.n_items,
                                                {**self.identification.item,
                                                 **self._group_data(model, table)}, "item")
        self.free_G, self.init_G = self._layout(self.glob, None, self.identification.glob,
                                                "global")
        self.eliminate = (
            "subjects" if table.n_subjects * self.subject.size >= table.n_items * self.item.size
            else "items"
        )

    # ------------------------------------------------------------------ layout
    def _group_data(self, model, table) -> dict:
        """Item entries the data fill (``Param(data="group")``): each item's group position,
        fixed, from the table's ``group`` column or the model's ``item_groups``."""
        names = [n for n, p in self.item.decl if p.data == "group"]
        if not names:
            return {}
        n_groups = getattr(model, "groups", None)
        if table.groups is not None:
            if n_groups is not None and len(table.groups) != int(n_groups):
                raise ValueError(
                    f"{table.source} has {len(table.groups)} groups (benchmarks) but the "
                    f"{model.name} model was built for {n_groups}; build it with "
                    f"{type(model).__name__}.from_table(table)")
            where = np.asarray(table.item_group)
        elif getattr(model, "item_groups", None) is not None:
            where = np.asarray(model.item_groups)
            if len(where) != table.n_items:
                raise ValueError(f"item_groups names {len(where)} items but {table.source} "
                                 f"has {table.n_items}")
        else:
            raise ValueError(
                f"{table.source} has no group column and the model no item_groups: the "
                f"{model.name} model needs the benchmark of every item (add a group column, "
                "or a benchmark column beside item)")
        from platinum_jax.models import Fixed

        fixed = Fixed(np.ones(table.n_items, bool), where.astype(np.float64))
        return dict.fromkeys(names, fixed)

    def _layout(self, block: Block, n: int | None, fixed: dict, kind: str):
        lead = () if n is None else (n,)
        free = np.ones((*lead, block.size), dtype=bool)
        init = np.zeros((*lead, block.size), dtype=np.float64)
        unknown = set(fixed) - set(block.names)
        if unknown:
            raise ValueError(f"identification fixes unknown {kind} parameter(s) {sorted(unknown)}")
        for name, (a, b, shape) in block.slices().items():
            p = dict(block.decl)[name]
            init[..., a:b] = p.init
            if name in fixed:
                f = fixed[name]
                mask = np.broadcast_to(f.mask, (*lead, *shape)).reshape(*lead, b - a)
                vals = np.broadcast_to(f.values, (*lead, *shape)).reshape(*lead, b - a)
                free[..., a:b] &= ~mask
                init[..., a:b] = np.where(mask, vals, init[..., a:b])
        return free, init

    def in_canonical_order(self):
        """``(problem, order)``: this problem with its rows sorted by subject and then item,
        and the permutation of the rows (None when they are sorted already). Samplers run on
        it, so that one table gives the same draws however its rows were listed."""
        import copy

        t = self.table
        order = np.lexsort((t.item_index, t.subject_index))
        if np.array_equal(order, np.arange(len(order))):
            return self, None
        sorted_problem = copy.copy(self)
        sorted_problem.table = t.reordered(order)
        sorted_problem.__dict__.pop("_bayes_reparam", None)  # built from the rows: rebuilt
        return sorted_problem, order

    def start(self) -> Theta:
        """The declared start values with fixed entries in place."""
        d = self.dtype
        return Theta(_on_device(self.init_S, d), _on_device(self.init_I, d),
                     _on_device(self.init_G, d))

    def data(self, weight=None) -> Data:
        t = self.table
        d = self.dtype
        w = np.ones(t.n_responses) if t.weight is None else t.weight
        if weight is not None:
            w = w * np.asarray(weight)
        return Data(
            _on_device(t.subject_index),
            _on_device(t.item_index),
            _on_device(t.response, d),
            _on_device(np.ones(t.n_responses) if t.trials is None else t.trials, d),
            _on_device(w, d),
            None if t.se is None else _on_device(np.nan_to_num(t.se, nan=0.0), d),
        )

    @property
    def n_free(self) -> int:
        return int(self.free_S.sum() + self.free_I.sum() + self.free_G.sum())

    # ------------------------------------------------------------------ per-row functions
    def split_globals(self, g):
        """Raw global vector -> (model globals natural, likelihood raw params)."""
        raw = self.glob.unflatten(g)
        names = self.glob.names
        model_g = {n: dict(self.glob.decl)[n].natural(raw[n]) for n in names[: self.n_model_globals]}
        lik_g = {n: raw[n] for n in names[self.n_model_globals:]}
        return model_g, lik_g

    def mean(self, s_row, i_row, g):
        """Mean response of one row from its raw subject row, item row and globals."""
        model_g, _ = self.split_globals(g)
        s = self.subject.natural(self.subject.unflatten(s_row))
        i = self.item.natural(self.item.unflatten(i_row))
        return self.model.mean(s, i, model_g)

    def likelihood_theta(self, i_row, g, se=None):
        """What the likelihood reads besides ``y, mu, trials``: its raw global parameters, its
        per-item ones for this row's item, and the row's known standard error ``se``."""
        _, lik_g = self.split_globals(g)
        if self.lik_item_names:
            raw = self.item.unflatten(i_row)
            lik_g = {**lik_g, **{n: raw[n] for n in self.lik_item_names}}
        if se is None:
            if self.has_se and self.model.likelihood.reads_se:
                # Refuse rather than drop known standard errors silently.
                raise ValueError(
                    "the response table has an se column but this solver does not pass it to "
                    "the likelihood; use a Bayesian method (nuts, svi) or drop the se column"
                )
            se = jnp.zeros((), self.dtype)
        return {**lik_g, "se": se}

    def likelihood_at(self, theta: Theta, item_index, se) -> dict:
        """:meth:`likelihood_theta` of rows on the items ``item_index`` (any shape) at once,
        with known standard errors ``se``: the raw globals, and the per-item parameters at
        those items."""
        _, lik_g = self.split_globals(theta[2])
        if self.lik_item_names:
            raw = self.item.unflatten(theta[1][item_index])
            lik_g = {**lik_g, **{n: raw[n] for n in self.lik_item_names}}
        return {**lik_g, "se": se}

    def likelihood_rows(self, theta: Theta, data: Data) -> dict:
        """:meth:`likelihood_theta` of every row at once (arrays over rows where they vary)."""
        se = data.se
        if se is None:
            se = jnp.zeros_like(data.response)
        return self.likelihood_at(theta, data.item_index, se)

    def row_loss(self, s_row, i_row, g, y, n, se=None):
        theta = self.likelihood_theta(i_row, g, se)
        return self.model.likelihood.loss(y, self.mean(s_row, i_row, g), n, theta)

    def row_log_prob(self, s_row, i_row, g, y, n, se=None):
        theta = self.likelihood_theta(i_row, g, se)
        return self.model.likelihood.log_prob(y, self.mean(s_row, i_row, g), n, theta)

    def predict(self, theta: Theta, subject_index, item_index):
        """The model's mean output per row (what the likelihood reads; a vector per row for
        models such as the graded one)."""
        S, I, G = theta  # noqa: E741
        return jax.vmap(lambda s, i: self.mean(s, i, G))(S[subject_index], I[item_index])

    def moments(self, theta: Theta, subject_index, item_index, trials=None):
        """Expected response and its variance per row (the likelihood's moments at ``mu``)."""
        mu = self.predict(theta, subject_index, item_index)
        # Rows given by position carry no known standard error: 0, as everywhere it is unknown.
        lik_g = self.likelihood_at(theta, item_index, jnp.zeros((), jnp.result_type(mu)))
        return self.model.likelihood.moments(mu, trials, lik_g)

    def expected(self, theta: Theta, subject_index, item_index, trials=None):
        """Expected response per row (equal to the mean output for scalar-mean models)."""
        return self.moments(theta, subject_index, item_index, trials)[0]

    # ------------------------------------------------------------------ penalties
    def _free_dict(self, block: Block, free_row):
        return block.unflatten(jnp.asarray(free_row))

    def subject_penalty(self, s_row, free_row, g):
        raw = self.subject.unflatten(s_row)
        return self.model.subject_penalty(raw, self._free_dict(self.subject, free_row),
                                          self._raw_globals(g), self.info)

    def item_penalty(self, i_row, free_row, g):
        raw = self.item.unflatten(i_row)
        return self.model.item_penalty(raw, self._free_dict(self.item, free_row),
                                       self._raw_globals(g), self.info)

    def global_penalty(self, g):
        return self.model.global_penalty(self.glob.unflatten(g),
                                         self._free_dict(self.glob, self.free_G), self.info)

    def _raw_globals(self, g):
        # Penalties see raw globals (the same scale as their priors), the likelihood's too
        # (a hierarchical prior may be centred on one of them).
        return self.glob.unflatten(g)

    def objective(self, theta: Theta, data: Data, penalty_scale=1.0):
        """``sum_rows w * loss + penalty_scale * penalties`` (what MAP minimises)."""
        S, I, G = theta  # noqa: E741
        rows = jax.vmap(self.row_loss, in_axes=(0, 0, None, 0, 0, 0))(
            S[data.subject_index], I[data.item_index], G, data.response, data.trials, data.se
        )
        pen_s = jax.vmap(self.subject_penalty, in_axes=(0, 0, None))(S, self.free_S, G)
        pen_i = jax.vmap(self.item_penalty, in_axes=(0, 0, None))(I, self.free_I, G)
        return jnp.sum(data.weight * rows) + penalty_scale * (
            jnp.sum(pen_s) + jnp.sum(pen_i) + self.global_penalty(G))

    def pointwise_log_lik(self, theta: Theta, data: Data):
        S, I, G = theta  # noqa: E741
        return jax.vmap(self.row_log_prob, in_axes=(0, 0, None, 0, 0, 0))(
            S[data.subject_index], I[data.item_index], G, data.response, data.trials, data.se
        )
