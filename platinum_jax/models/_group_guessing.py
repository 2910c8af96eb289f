"""A 3PL whose guessing floor is shared by the items of one benchmark.

``P(Y_si = 1) = c_g(i) + (1 - c_g(i)) sigmoid(a_i (theta_s - b_i))`` with ability ``theta_s``
per subject, difficulty ``b_i`` and discrimination ``a_i`` per item, and one lower asymptote
``c_g`` per benchmark ``g`` (the chance score of its answer format: 1/4 for four-option
multiple choice, near 0 for free-form answers). Sharing the floor across a benchmark's items
pools their information about it: an item's own floor (:class:`~platinum_jax.models.ThreePL`)
is poorly measured unless many weak subjects answered it.

Which benchmark an item belongs to is the table's ``group`` column. It reaches :meth:`mean` as
the item entry ``benchmark`` (the benchmark's position), which :meth:`identify` fixes for every
item, so no fitter moves it; ``mean`` indexes the floors with it. :meth:`from_table` sizes the
model for the table's benchmarks. The scale is identified by the ability prior
``theta ~ Normal(0, 1)``, as in the other IRT models; the floors are fitted as ``logit c_g``
with the prior ``Normal(-2, 1)``, wider than the 3PL's ``Normal(-2, 0.75^2)`` on one item's floor:
a floor shared by a benchmark's items is measured by all of them.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from ._groups import check_item_groups, count_groups
from ._likelihoods import Bernoulli
from ._protocol import Identification, Likelihood, MeasurementModel, Param, PriorSpec

__all__ = ["GroupGuessingThreePL"]


class GroupGuessingThreePL(MeasurementModel):
    """3PL with one guessing floor ``c_g`` per benchmark (group) of items.

    Args:
        groups: number of benchmarks; :meth:`from_table` reads it from the ``group`` column.
        item_groups: benchmark position of every item, for tables without a ``group`` column
            (simulations); with a ``group`` column the table decides.
        likelihood: Bernoulli (default) or Binomial for k-of-n scores.
    """

    groups: int = 1
    item_groups: tuple[int, ...] | None = None
    likelihood: Likelihood = Bernoulli()
    name: ClassVar[str] = "3pl_group"

    def __check_init__(self):
        check_item_groups(self.groups, self.item_groups)

    @classmethod
    def from_table(cls, table, **options) -> GroupGuessingThreePL:
        """The model sized for ``table``'s benchmarks (its ``group`` column)."""
        return cls(groups=count_groups(table, cls.name), **options)

    def subject_params(self):
        return {"ability": Param(prior=PriorSpec("Normal", 0.0, 1.0), doc="ability theta_s")}

    def item_params(self):
        return {
            "benchmark": Param(data="group", doc="position g(i) of the item's benchmark (data)"),
            "difficulty": Param(prior=PriorSpec("Normal", 0.0, 3.0), doc="difficulty b_i"),
            "discrimination": Param(prior=PriorSpec("Normal", 0.0, 1.0), transform=jnp.exp,
                                    doc="discrimination a_i (fitted as log a_i)"),
        }

    def global_params(self):
        return {"guessing": Param(shape=(int(self.groups),), init=-2.0,
                                  prior=PriorSpec("Normal", -2.0, 1.0),
                                  transform=jax.nn.sigmoid,
                                  doc="guessing floor c_g of each benchmark (fitted as "
                                  "logit c_g)")}

    def mean(self, subject, item, glob):
        c = glob["guessing"][jnp.asarray(item["benchmark"]).astype(jnp.int32)]
        a = item["discrimination"]
        return c + (1.0 - c) * jax.nn.sigmoid(a * (subject["ability"] - item["difficulty"]))

    def identify(self, table) -> Identification:
        return Identification(description="ability prior theta ~ N(0, 1); each item's "
                              "benchmark from the group column")

    def describe(self):
        return {**super().describe(), "groups": int(self.groups)}
