"""Items within benchmarks: a 2PL whose item parameters are drawn around their benchmark's.

For item ``i`` of benchmark ``g = g(i)``::

    b_i     = beta_g  + sigma_b z_i        z_i ~ Normal(0, 1)   (difficulty)
    log a_i = gamma_g + sigma_a u_i        u_i ~ Normal(0, 1)   (log discrimination)
    P(Y_si = 1) = sigmoid(a_i (theta_s - b_i)),  theta_s ~ Normal(0, 1)

with benchmark means ``beta_g``, ``gamma_g`` and spreads ``sigma_b``, ``sigma_a`` shared by
all benchmarks, all learned. The scale is identified by the ability prior, as in the 2PL.
Joint MAP balances that prior against the priors of the discriminations and, with many
subjects, settles on a narrower ability scale with larger discriminations than the truth (the
2PL does the same): MAP estimates are right up to one linear change of the ability scale,
which rankings, benchmark comparisons and item orderings do not see; NUTS gives the calibrated
scale. So that the balance is the 2PL's, the MAP penalty keeps the 2PL's prior on every
item's discrimination, ``log a_i ~ Normal(0, 1)``, as a ridge (without it only a few
benchmark-level priors resist, and the ability scale shrinks about tenfold).

The parameters are the *non-centred* coordinates ``(z_i, u_i)``, so NUTS sees no funnel
between the spreads and the item effects; its priors are exactly the ones above, with
``log sigma ~ Normal(log 0.5, 1)``. MAP minimises the negative log density of the item
parameters themselves (the centred one: ``z^2/2 + log sigma`` per item) plus the hyper-priors,
so its spreads are the usual shrunk standard deviations of the items around their benchmark,
not pulled up to the prior. Joint MAP of a hierarchical model has a degenerate mode at zero
spread (every item at its benchmark's mean, ``log sigma -> -inf``: the funnel); a
boundary-avoiding penalty ``n floor^2 / (2 sigma^2)`` (``spread_floor``, default 0.1; in the
spirit of Chung et al. 2013, "A nondegenerate penalized likelihood estimator for variance
parameters in multilevel models") removes it, at the price of adding about ``floor^2`` to
each spread squared. Read spreads with intervals from NUTS.

Which benchmark an item belongs to is the table's ``group`` column. It reaches the mean as the
item entry ``benchmark`` (the benchmark's position), which the identification fixes for every
item, so no fitter ever changes it and no prior is needed for it.

Item-level and benchmark-level data in one fit: put both in one table with a ``trials``
column and the binomial likelihood; a benchmark-level row is an item of its own benchmark
(for example item ``"<benchmark>/overall"`` in group ``<benchmark>`` with ``trials`` = the
benchmark's number of questions), so its score informs the benchmark's mean difficulty and
discrimination through the same prior as the benchmark's single questions.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ._groups import check_item_groups, count_groups
from ._likelihoods import Bernoulli
from ._protocol import Identification, Likelihood, MeasurementModel, Param, PriorSpec

__all__ = ["HierarchicalTwoPL"]

_SPREAD_PRIOR = PriorSpec("Normal", float(np.log(0.5)), 1.0)


class HierarchicalTwoPL(MeasurementModel):
    """2PL with item parameters drawn around their benchmark's (``groups`` benchmarks).

    Args:
        groups: number of benchmarks (the table's groups); :meth:`from_table` reads it.
        item_groups: optional benchmark position of every item, for tables without a
            ``group`` column (simulations); with a ``group`` column the table decides.
        likelihood: Bernoulli (default) or Binomial for k-of-n scores.
        spread_floor: MAP only: the boundary-avoiding penalty's scale (see the module text).
    """

    groups: int = 1
    item_groups: tuple[int, ...] | None = None
    likelihood: Likelihood = Bernoulli()
    spread_floor: float = 0.1
    name: ClassVar[str] = "hierarchical"

    def __check_init__(self):
        check_item_groups(self.groups, self.item_groups)
        if not self.spread_floor > 0:
            raise ValueError(f"spread_floor must be > 0 (got {self.spread_floor})")

    @classmethod
    def from_table(cls, table, **options) -> HierarchicalTwoPL:
        """The model sized for ``table``'s groups (its ``group`` column, i.e. the benchmark)."""
        return cls(groups=count_groups(table, cls.name), **options)

    # ------------------------------------------------------------------ declarations
    def subject_params(self):
        return {"ability": Param(prior=PriorSpec("Normal", 0.0, 1.0), doc="ability theta_s")}

    def item_params(self):
        return {
            "benchmark": Param(data="group", doc="position g(i) of the item's benchmark (data)"),
            "difficulty_z": Param(prior=PriorSpec("Normal", 0.0, 1.0), jitter=0.3,
                                  doc="standardised difficulty z_i = (b_i - beta_g) / sigma_b"),
            "discrimination_z": Param(prior=PriorSpec("Normal", 0.0, 1.0), jitter=0.3,
                                      doc="standardised log discrimination u_i"),
        }

    def global_params(self):
        g = (int(self.groups),)
        return {
            "benchmark_difficulty": Param(shape=g, prior=PriorSpec("Normal", 0.0, 2.0),
                                          doc="benchmark mean difficulty beta_g"),
            "benchmark_log_discrimination": Param(shape=g, prior=PriorSpec("Normal", 0.0, 1.0),
                                                  doc="benchmark mean log discrimination "
                                                  "gamma_g"),
            "difficulty_spread": Param(init=float(np.log(0.5)), prior=_SPREAD_PRIOR,
                                       transform=jnp.exp, jitter=0.2,
                                       doc="spread sigma_b of difficulties within a benchmark"),
            "discrimination_spread": Param(init=float(np.log(0.5)), prior=_SPREAD_PRIOR,
                                           transform=jnp.exp, jitter=0.2,
                                           doc="spread sigma_a of log discriminations"),
        }

    @staticmethod
    def item_difficulty(item, glob):
        """``b_i`` from natural item and global values (broadcasts over items)."""
        g = jnp.asarray(item["benchmark"]).astype(jnp.int32)
        return glob["benchmark_difficulty"][g] + glob["difficulty_spread"] * item["difficulty_z"]

    @staticmethod
    def item_discrimination(item, glob):
        """``a_i`` from natural item and global values (broadcasts over items)."""
        g = jnp.asarray(item["benchmark"]).astype(jnp.int32)
        return jnp.exp(glob["benchmark_log_discrimination"][g]
                       + glob["discrimination_spread"] * item["discrimination_z"])

    def mean(self, subject, item, glob):
        a = self.item_discrimination(item, glob)
        return jax.nn.sigmoid(a * (subject["ability"] - self.item_difficulty(item, glob)))

    def item_penalty(self, raw, free, glob, info):
        """``-log prior`` of the item's free entries plus the 2PL's ridge ``(log a_i)^2 / 2``
        on its discrimination (MAP only; see the module text)."""
        g = jnp.asarray(raw["benchmark"]).astype(jnp.int32)
        log_a = (glob["benchmark_log_discrimination"][g]
                 + jnp.exp(glob["discrimination_spread"]) * raw["discrimination_z"])
        return super().item_penalty(raw, free, glob, info) + 0.5 * log_a**2

    def global_penalty(self, glob, free, info):
        """``-log prior`` of the globals plus, per spread, the centring term ``n log sigma``
        and the boundary-avoiding ``n floor^2 / (2 sigma^2)`` (``n`` items; see the module)."""
        total = super().global_penalty(glob, free, info)
        n = info.n_items
        for name in ("difficulty_spread", "discrimination_spread"):
            r = glob[name]
            total = total + n * r + 0.5 * n * self.spread_floor**2 * jnp.exp(-2.0 * r)
        return total

    def identify(self, table) -> Identification:
        return Identification(description="ability prior theta ~ N(0, 1); each item's "
                              "benchmark from the group column")

    def describe(self):
        return {**super().describe(), "groups": int(self.groups)}

    # ------------------------------------------------------------------ readouts
    def item_table(self, fit) -> pd.DataFrame:
        """Per item: benchmark, difficulty ``b_i`` and discrimination ``a_i`` (point estimate;
        with draws also the posterior or resampling mean and 90% interval)."""
        prob = fit.problem
        items = prob.item.natural(prob.item.unflatten(jnp.asarray(fit.theta.items)))
        glob, _ = prob.split_globals(jnp.asarray(fit.theta.globals))
        out = pd.DataFrame(index=fit.table.items)
        g = np.asarray(items["benchmark"]).astype(int)
        out["benchmark"] = (np.asarray(fit.table.groups)[g] if fit.table.groups is not None
                            else g)
        out["difficulty"] = np.asarray(self.item_difficulty(items, glob))
        out["discrimination"] = np.asarray(self.item_discrimination(items, glob))
        if fit.draws is not None:
            def one(i_raw, g_raw):
                it = prob.item.natural(prob.item.unflatten(i_raw))
                gl, _ = prob.split_globals(g_raw)
                return self.item_difficulty(it, gl), self.item_discrimination(it, gl)

            b, a = jax.vmap(one)(jnp.asarray(fit.draws.items), jnp.asarray(fit.draws.globals))
            for name, v in (("difficulty", np.asarray(b)), ("discrimination", np.asarray(a))):
                out[f"{name}_lo"] = np.quantile(v, 0.05, axis=0)
                out[f"{name}_hi"] = np.quantile(v, 0.95, axis=0)
        return out

    def benchmark_table(self, fit, groups=None) -> pd.DataFrame:
        """Per benchmark: mean difficulty ``beta_g`` and mean log discrimination ``gamma_g``."""
        glob = fit.globals["value"]
        names = (list(fit.table.groups) if fit.table.groups is not None
                 else list(range(self.groups)))
        return pd.DataFrame({
            "difficulty": [glob[f"benchmark_difficulty[{k}]"] for k in range(self.groups)],
            "log_discrimination": [glob[f"benchmark_log_discrimination[{k}]"]
                                   for k in range(self.groups)],
        }, index=pd.Index(names, name="benchmark"))
