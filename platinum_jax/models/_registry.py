"""Models by name: the built-in ones (:data:`MODELS`), those other packages register under the
entry-point group ``platinum_jax.models`` (:func:`registered_models`), and any model class by
its import path or file (:func:`model_class`): what ``platinum-jax fit --model`` takes and
``platinum-jax models`` lists.

A package registers a model in its ``pyproject.toml``::

    [project.entry-points."platinum_jax.models"]
    rosetta_floor = "mypackage.models:RosettaFloor"
"""

from __future__ import annotations

from ._graded import GradedResponse
from ._group_guessing import GroupGuessingThreePL
from ._hierarchical import HierarchicalTwoPL
from ._irt import BetaTwoPL, FourPL, OnePL, ThreePL, TwoPL
from ._likelihoods import LIKELIHOODS
from ._mirt import MultidimensionalTwoPL
from .rosetta import Rosetta, RosettaBayes

__all__ = ["ENTRY_POINT_GROUP", "MODELS", "make_model", "model_class", "registered_models"]

#: the entry-point group under which other packages register models
ENTRY_POINT_GROUP = "platinum_jax.models"

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


def registered_models() -> dict[str, tuple[object, str]]:
    """``{name: (class or entry point, source)}``: the built-in models (source ``"built-in"``),
    then the entry points of the group :data:`ENTRY_POINT_GROUP` (source: the distribution
    that registers it; an entry point is loaded only when its model is asked for). A name
    registered twice keeps its first meaning."""
    from importlib.metadata import entry_points

    out: dict[str, tuple[object, str]] = {name: (cls, "built-in") for name, cls in MODELS.items()}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        out.setdefault(ep.name, (ep, f"entry point of {dist.name if dist else '?'} ({ep.value})"))
    return out


def model_class(spec: str) -> type:
    """The model class ``spec`` names: a registered name (:func:`registered_models`), or
    ``"module:Class"`` / ``"path/to/file.py:Class"`` for a model of your own (a module in the
    current directory is found too). A clear ``ValueError`` otherwise."""
    from ._config import import_class
    from ._protocol import MeasurementModel

    known = registered_models()
    if spec in known:
        target, source = known[spec]
        if not isinstance(target, type):  # an entry point, loaded now
            try:
                target = target.load()
            except Exception as exc:
                raise ValueError(f"model {spec!r} ({source}) failed to load: "
                                 f"{type(exc).__name__}: {exc}") from None
    elif ":" in str(spec):
        target = import_class(spec, f"--model {spec}")
    else:
        raise ValueError(f"unknown model {spec!r}; choose one of {sorted(known)}, or name a "
                         "model class of your own as module:Class or path/to/file.py:Class")
    if not (isinstance(target, type) and issubclass(target, MeasurementModel)):
        raise ValueError(f"{spec!r} is not a measurement model (a subclass of "
                         "platinum_jax.models.MeasurementModel)")
    return target


def make_model(name: str, *, likelihood: str | None = None, table=None, **options):
    """A model by name (:func:`model_class`: registered, or ``module:Class``), with an
    optional likelihood by name (any of
    :data:`~platinum_jax.models.LIKELIHOODS`: ``bernoulli``, ``binomial``,
    ``gaussian``, ``beta``, ``beta_binomial``, ...) and model options. With ``table`` the
    model is built by its :meth:`~platinum_jax.models.MeasurementModel.from_table`, which
    reads the options that depend on the data (e.g. the number of benchmarks)."""
    cls = model_class(name)
    if likelihood is not None:
        try:
            options["likelihood"] = LIKELIHOODS[likelihood]()
        except KeyError:
            raise ValueError(
                f"unknown likelihood {likelihood!r}; choose one of {sorted(LIKELIHOODS)}"
            ) from None
    return cls(**options) if table is None else cls.from_table(table, **options)
