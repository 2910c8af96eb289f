"""Built-in models by name (what ``platinum-jax fit --model NAME`` offers)."""

from __future__ import annotations

from ._graded import GradedResponse
from ._group_guessing import GroupGuessingThreePL
from ._hierarchical import HierarchicalTwoPL
from ._irt import BetaTwoPL, FourPL, OnePL, ThreePL, TwoPL
from ._likelihoods import LIKELIHOODS
from ._mirt import MultidimensionalTwoPL
from .rosetta import Rosetta, RosettaBayes

__all__ = ["MODELS", "make_model"]

MODELS = {
    "rosetta": Rosetta,
    "rosetta_bayes": RosettaBayes,
    "1pl": OnePL,
    "2pl": TwoPL,
    "3pl": ThreePL,
    "3pl_group": GroupGuessingThreePL,
    "4pl": FourPL,
    "mirt": MultidimensionalTwoPL,
    "graded": GradedResponse,
    "beta": BetaTwoPL,
    "hierarchical": HierarchicalTwoPL,
}


def make_model(name: str, *, likelihood: str | None = None, table=None, **options):
    """A built-in model by name, with an optional likelihood by name (any of
    :data:`~platinum_jax.models.LIKELIHOODS`: ``bernoulli``, ``binomial``,
    ``gaussian``, ``beta``, ``beta_binomial``, ...) and model options. With ``table`` the
    model is built by its :meth:`~platinum_jax.models.MeasurementModel.from_table`, which
    reads the options that depend on the data (e.g. the number of benchmarks)."""
    try:
        cls = MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(MODELS)}") from None
    if likelihood is not None:
        try:
            options["likelihood"] = LIKELIHOODS[likelihood]()
        except KeyError:
            raise ValueError(
                f"unknown likelihood {likelihood!r}; choose one of {sorted(LIKELIHOODS)}"
            ) from None
    return cls(**options) if table is None else cls.from_table(table, **options)
