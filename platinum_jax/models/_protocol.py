"""The measurement-model protocol: what a model declares, and nothing about how it is fitted.

A measurement model says, for one response of subject ``s`` on item ``i``:

* which parameters belong to each **subject** (an ability, a capability vector), to each
  **item** (a difficulty, a discrimination, a guessing floor) and to the whole (**globals**);
* the **mean** response ``mu = f(subject params, item params, globals)``: any jittable function;
* a **likelihood** family for the response given ``mu`` (:mod:`~platinum_jax.models`);
* a **penalty** for point (MAP) fits and **priors** for Bayesian fits; by default the penalty is
  the negative log prior, so MAP is the posterior mode;
* how the scale is **identified** (entries fixed to values, e.g. an anchor item).

Everything else (Gauss-Newton/Levenberg-Marquardt MAP, restarts, Laplace, bootstrap,
cross-validation, SVI, NUTS, scoring new subjects) lives in :mod:`platinum_jax.inference` and
works for any model written this way. A new model is a subclass with four methods; see
``notebooks/extending_models.ipynb`` for one in about 30 lines.

Parameters are *raw* (unconstrained) numbers; a :class:`Param` may carry a ``transform`` to its
natural value (e.g. ``jax.nn.sigmoid`` for a guessing floor in (0, 1)). Priors and penalties are
stated on the raw value; :meth:`MeasurementModel.mean` receives natural values.

Three additions serve models whose posterior needs care to sample (the Bayesian Rosetta model
of :mod:`platinum_jax.models.rosetta` uses all three):

* a likelihood may declare **per-item parameters** (:meth:`Likelihood.item_params`, e.g. a
  noise scale per benchmark) and reads each row's known standard error ``se`` (the response
  table's ``se`` column, 0 where unknown) in its ``theta``;
* a prior may be :class:`Hierarchical`: ``raw ~ Normal(loc, scale)`` with ``loc`` and
  ``scale`` global parameters, sampled centred or non-centred;
* a model may hand the sampler a :class:`Reparameterisation` (:meth:`MeasurementModel.
  reparameterise`): the coordinates NUTS explores and the map from them to the model's
  parameters, the way NumPyro's reparameterisation handlers keep a model's meaning apart from
  the geometry its sampler sees. Point fits never see it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._priors import PriorSpec, _LazyPrior

__all__ = ["Param", "PriorSpec", "DataInfo", "Fixed", "Identification", "Likelihood",
           "MeasurementModel", "Hierarchical", "Reparameterisation", "LogisticCurve"]


@dataclass(frozen=True)
class Param:
    """Declaration of one parameter of each subject, item, or of the whole model.

    Args:
        shape: per-entity shape, ``()`` for a scalar, ``(K,)`` for a K-vector.
        init: starting value of the raw parameter (a number, broadcast).
        prior: a NumPyro distribution over the raw value of one element (Bayesian fits, and
            the default MAP penalty ``-log prior``), or a zero-argument callable that returns
            one (such as :class:`PriorSpec`), built on first read of ``param.prior`` so that
            code that never reads it (point fits with their own penalty) never imports
            NumPyro; None means improper flat. Reading ``param.prior`` always gives the
            distribution (or None).
        transform: raw -> natural value (e.g. ``jnp.exp`` for a positive scale); None = identity.
            A transform of your own that results are read back through (a fit's files, the
            posterior of ``weights``) also needs its inverse: a callable whose ``inv``
            attribute maps back, such as a NumPyro transform
            (``ComposeTransform([SigmoidTransform(), AffineTransform(0.0, c)])``: between 0
            and ``c``).
        doc: what the parameter means, with its symbol.
        jitter: spread of random restarts around ``init``: raw + N(0, jitter^2), or with
            ``relative=True`` raw * exp(N(0, jitter^2)) (for scales and slopes).
        map_only: a device of point fits that the likelihood never sees (e.g. the centring shift
            of the Rosetta penalty); Bayesian fits hold it at ``init``.
        data: an item entry that the data fill and no fit moves: ``"group"`` holds the
            position of the item's group (its benchmark: the table's ``group`` column, or the
            model's ``item_groups`` option for a table without one), for a model whose mean
            reads per-group parameters; it needs no prior and is reported as the items'
            ``group`` column, not as a parameter.
    """

    shape: tuple[int, ...] = ()
    init: float = 0.0
    prior: Any = _LazyPrior()
    transform: Callable | None = None
    doc: str = ""
    map_only: bool = False
    jitter: float = 0.5
    relative: bool = False
    data: str | None = None

    def __post_init__(self):
        if self.data not in (None, "group"):
            raise ValueError(f"Param.data must be None or 'group' (got {self.data!r})")

    @property
    def size(self) -> int:
        return int(math.prod(self.shape))

    def natural(self, raw):
        return raw if self.transform is None else self.transform(raw)

    def raw(self, natural, what: str = "the parameter"):
        """The raw value of a natural one (NumPy): the inverse of the package's transforms
        (none, ``jnp.exp``, ``jax.nn.sigmoid``) or the transform's own ``inv`` (a NumPyro
        transform); any other transform is a ``ValueError``, as a file of natural values
        cannot be mapped back through it."""
        import jax

        values = np.asarray(natural, np.float64)
        f = self.transform
        if f is None:
            return values
        if f is jnp.exp:
            return np.log(values)
        if f is jax.nn.sigmoid:
            return np.log(values) - np.log1p(-values)
        inv = getattr(f, "inv", None)
        if callable(inv):
            return np.asarray(inv(values), np.float64)
        raise ValueError(f"cannot map {what} back to its fitted scale (transform {f!r} has no "
                         "inverse): give the parameter a transform whose inv maps back, such "
                         "as a NumPyro transform")


@dataclass(frozen=True)
class Hierarchical:
    """A prior ``raw ~ Normal(loc, scale)`` whose location and scale are global parameters.

    Use it as the ``prior`` of a subject or item parameter (a model's or a likelihood's):
    ``loc`` and ``scale`` name global parameters (of the model or of the likelihood), read at
    their natural values (``scale`` must be positive there). Bayesian fits sample each entry
    either *centred* (the sampled value is ``raw``) or *non-centred* (the sampled value is
    ``n ~ Normal(0, 1)`` and ``raw = loc + scale * n``), which keeps NUTS out of the funnel
    between a small ``scale`` and entries the data say little about.

    Args:
        loc, scale: names of the global parameters.
        centred: True (all entries centred), False (all non-centred), or a whole number ``k``:
            centred for entities with at least ``k`` responses (their own data fix them, and
            the non-centred form would tie them to ``loc`` and ``scale``), non-centred below.

    Point fits penalise ``-log Normal(raw | loc, scale)``. Example, a noise scale per item
    drawn around a common level::

        Param(prior=Hierarchical("noise_log_mu", "noise_log_tau", centred=20))
    """

    loc: str
    scale: str
    centred: bool | int = True

    def __post_init__(self):
        c = self.centred
        if not isinstance(c, bool) and (int(c) != c or c < 0):
            raise ValueError(f"Hierarchical.centred must be True, False or a whole number >= 0 "
                             f"(got {c!r})")

    def centred_mask(self, counts: np.ndarray) -> np.ndarray:
        """Which entities are sampled centred, given each one's number of responses."""
        counts = np.asarray(counts)
        if isinstance(self.centred, bool):
            return np.full(counts.shape, self.centred)
        return counts >= int(self.centred)

    def log_prob(self, raw, glob: dict):
        """``log Normal(raw | loc, scale)`` with ``glob`` the natural global values."""
        loc, scale = glob[self.loc], glob[self.scale]
        return -0.5 * ((raw - loc) / scale) ** 2 - jnp.log(scale) - 0.5 * math.log(2 * math.pi)


@dataclass(frozen=True)
class LogisticCurve:
    """A model's declaration that its mean is the logistic curve ``sigmoid(a (theta_s - b_i))``
    of its one scalar ability: a strategy that solvers may use in place of the generic one
    (marginal EM then computes its E- and M-steps in closed form; see
    :func:`platinum_jax.inference.fit_marginal`). A model returns one from
    :meth:`MeasurementModel.logistic_curve`.

    Args:
        difficulty: the item parameter holding ``b_i`` (raw value = ``b_i``).
        discrimination: the parameter whose raw value is ``log a``.
        shared: True when the discrimination is one global (a 1PL), False when it is an item
            parameter (a 2PL).
    """

    difficulty: str
    discrimination: str
    shared: bool


@dataclass(frozen=True)
class DataInfo:
    """Sizes of the data a model is fitted to (static; a penalty may be normalised by them)."""

    n_subjects: int
    n_items: int
    n_responses: int


@dataclass(frozen=True)
class Fixed:
    """Entries of one parameter held at given values: ``mask`` and ``values`` have the full
    shape ``(n_entities, *param.shape)`` (for globals: ``param.shape``)."""

    mask: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class Identification:
    """What a model fixes to identify its scale, by block and parameter name.

    ``subject``, ``item``, ``glob``: ``{name: Fixed}``. ``description`` is written to
    ``fit.json``.
    """

    subject: Mapping[str, Fixed] = field(default_factory=dict)
    item: Mapping[str, Fixed] = field(default_factory=dict)
    glob: Mapping[str, Fixed] = field(default_factory=dict)
    description: str = "none (priors or penalties fix the scale)"


def fix_entries(n: int, shape: tuple[int, ...], positions, values) -> Fixed:
    """:class:`Fixed` for entities ``positions`` (all components) set to ``values``."""
    mask = np.zeros((n, *shape), dtype=bool)
    vals = np.zeros((n, *shape), dtype=np.float64)
    for p, v in zip(positions, values, strict=True):
        mask[p] = True
        vals[p] = v
    return Fixed(mask, vals)


class Likelihood(eqx.Module):
    """A response distribution given the mean ``mu`` (and its own parameters).

    Subclasses implement :meth:`log_prob` (per row, vectorised over rows) and :meth:`sample`,
    and may declare global parameters (a noise scale, a precision) in :meth:`params` and
    per-item ones in :meth:`item_params`. ``theta`` holds the raw values of both (the row's
    item's for per-item ones) and, under ``"se"``, the row's known standard error (0 where
    unknown or when the table has no ``se`` column), for families that add it in variance.
    :meth:`loss` (what MAP minimises) defaults to ``-log_prob``; a subclass may drop terms
    that do not depend on parameters. :meth:`check` validates responses before a fit.
    """

    name: ClassVar[str] = "likelihood"
    # True for families that read ``theta["se"]`` (solvers that cannot pass it then refuse).
    reads_se: ClassVar[bool] = False
    # True for families of k successes out of ``trials`` with the response the fraction k / n:
    # Bayesian fits then record the log density of that fraction (log pmf + log n), so that
    # their log likelihoods compare with those of continuous families (PSIS-LOO, WAIC).
    lattice: ClassVar[bool] = False

    def params(self) -> dict[str, Param]:
        return {}

    def item_params(self) -> dict[str, Param]:
        """Parameters of the likelihood that belong to each item (e.g. a per-benchmark noise
        scale). They join the item block; ``theta`` then holds the row's item values."""
        return {}

    def log_prob(self, y, mu, trials, theta: dict):  # pragma: no cover - abstract
        raise NotImplementedError

    def loss(self, y, mu, trials, theta: dict):
        return -self.log_prob(y, mu, trials, theta)

    def sample(self, key, mu, trials, theta: dict):  # pragma: no cover - abstract
        raise NotImplementedError

    def check(self, response: np.ndarray, trials: np.ndarray | None, source: str) -> None:
        """Raise a clear ``ValueError`` when responses cannot come from this family."""

    @property
    def least_squares(self) -> bool:
        """True when MAP under this family is least squares with a noise scale fixed by hand
        (not estimated): its Laplace covariance then takes the noise from the residuals
        (:func:`platinum_jax.inference.laplace`, ``noise_scale="auto"``)."""
        return False

    def derived(self, item: dict) -> dict:
        """Quantities of each item that a Bayesian fit records beside the parameters, from the
        natural values ``item`` of the item block (arrays of shape ``(n_items, ...)``); e.g. a
        noise scale from its logarithm. Default: none."""
        return {}

    def moments(self, mu, trials, theta: dict):
        """Mean and variance of one response given ``mu`` (residuals, infit/outfit).

        The default covers families whose ``mu`` is the mean of a 0/1-valued response; a
        family with its own spread overrides it."""
        return mu, mu * (1.0 - mu)


class MeasurementModel(eqx.Module):
    """Abstract measurement model; subclass it and implement the four declarations.

    Required: :meth:`subject_params`, :meth:`item_params`, :meth:`mean` and the ``likelihood``
    field. Optional: :meth:`global_params`, :meth:`identify`, the three penalty hooks (default:
    ``-log prior`` of the free entries), :meth:`describe` and :meth:`from_table`.

    Example (a one-parameter logistic model)::

        class Rasch(MeasurementModel):
            likelihood: Likelihood = Bernoulli()
            name: ClassVar[str] = "rasch"

            def subject_params(self):
                return {"ability": Param(prior=dist.Normal(0, 1))}

            def item_params(self):
                return {"difficulty": Param(prior=dist.Normal(0, 3))}

            def mean(self, subject, item, glob):
                return jax.nn.sigmoid(subject["ability"] - item["difficulty"])
    """

    likelihood: eqx.AbstractVar[Likelihood]
    name: ClassVar[str] = "model"
    #: names of the subject, item and response dimensions in labelled results (ArviZ
    #: coordinates): a benchmark-level model says ("model", "benchmark", "score")
    dim_names: ClassVar[tuple[str, str, str]] = ("subject", "item", "response")
    #: True when the mean is a score in [0, 1] whatever the likelihood (least squares
    #: included): its responses are fractions, which noise may push a little past 0 or 1
    unit_scores: ClassVar[bool] = False
    #: sampler settings of :func:`platinum_jax.inference.nuts` for this model where a call
    #: gives none (keys ``warmup``, ``samples``, ``target_accept``, ``mass``, ``init``,
    #: ``max_tree_depth``); the package's defaults fill the rest
    nuts_settings: ClassVar[dict] = {}

    # ------------------------------------------------------------------ declarations
    def subject_params(self) -> dict[str, Param]:  # pragma: no cover - abstract
        raise NotImplementedError

    def item_params(self) -> dict[str, Param]:  # pragma: no cover - abstract
        raise NotImplementedError

    def global_params(self) -> dict[str, Param]:
        return {}

    def mean(self, subject: dict, item: dict, glob: dict):  # pragma: no cover - abstract
        """Mean response of one subject on one item (natural parameter values; a scalar)."""
        raise NotImplementedError

    @classmethod
    def from_table(cls, table, **options):
        """The model with the options that depend on the data read from ``table`` (e.g. the
        number of benchmarks in its ``group`` column); ``options`` are the others. Default:
        ``cls(**options)``. The command line builds every model this way."""
        return cls(**options)

    def identify(self, table) -> Identification:
        """Entries fixed to identify the scale, given the data (default: none)."""
        return Identification()

    def describe(self) -> dict:
        """Plain-Python description written to ``fit.json``."""
        return {"name": self.name, "likelihood": self.likelihood.name}

    def logistic_curve(self) -> LogisticCurve | None:
        """The :class:`LogisticCurve` this model's mean is, if it is one (default: None, which
        keeps every solver on its generic path). Declare it only when :meth:`mean` is exactly
        ``sigmoid(a (theta - b))`` with the raw values the declaration names."""
        return None

    def sampling_model(self) -> MeasurementModel:
        """The model a Bayesian fit (NUTS, SVI) samples. A likelihood whose noise is fixed by
        hand (``likelihood.least_squares``: the objective of point fits, not a model of the
        noise) would sample a posterior with a placeholder noise, so the default refuses it;
        a model whose point fits use one says what replaces it (:class:`~platinum_jax.models.
        Rosetta`: ``Gaussian()``, the noise estimated). Default: the model itself.

        Example (a point model fitted by least squares, sampled with its noise estimated)::

            def sampling_model(self):
                return dataclasses.replace(self, likelihood=Gaussian())
        """
        if self.likelihood.least_squares:
            raise ValueError(
                f"model {self.name!r} has a likelihood whose noise is fixed by hand "
                f"({self.likelihood!r}: the least-squares objective of point fits), so a "
                "posterior would sample a placeholder noise; give the model a likelihood that "
                "estimates its noise (e.g. likelihood=Gaussian(); on the command line "
                "--likelihood gaussian), or declare sampling_model() to say which one replaces "
                "it")
        return self

    def extends(self) -> MeasurementModel | None:
        """The model this one nests, if it declares one (default None): the same model with
        the added parameters at the values that remove them (a guessing floor of 0). A MAP
        fit then fits it too and warns when the extended model's objective is worse, which a
        nesting model's never is at its optimum (a local minimum, or a penalty on the new
        parameters that dominates the data)."""
        return None

    def reparameterise(self, table) -> Reparameterisation | None:
        """Coordinates for samplers to explore in place of some parameters (default: none,
        every free entry is sampled as it is declared); see :class:`Reparameterisation`."""
        return None

    # ------------------------------------------------------------------ penalties (MAP)
    def subject_penalty(self, raw: dict, free: dict, glob: dict, info: DataInfo):
        """Penalty of one subject's raw parameters (default ``-log prior`` of free entries).

        ``free`` has the shapes of ``raw`` (True where the entry is fitted); ``glob`` holds the
        model's raw global parameters; ``info`` the data sizes."""
        return _neg_log_prior(self.subject_params(), raw, free, self._natural_globals(glob))

    def item_penalty(self, raw: dict, free: dict, glob: dict, info: DataInfo):
        """Penalty of one item's raw parameters, the likelihood's per-item ones included
        (default ``-log prior`` of free entries)."""
        decl = {**self.item_params(), **self.likelihood.item_params()}
        return _neg_log_prior(decl, raw, free, self._natural_globals(glob))

    def global_penalty(self, glob: dict, free: dict, info: DataInfo):
        """Penalty of the raw global parameters, the likelihood's included."""
        decl = {**self.global_params(), **self.likelihood.params()}
        return _neg_log_prior(decl, glob, free)

    def _natural_globals(self, glob: dict) -> dict:
        decl = {**self.global_params(), **self.likelihood.params()}
        return {n: decl[n].natural(v) for n, v in glob.items() if n in decl}


class Reparameterisation(eqx.Module):
    """Sampling coordinates of a model, and the map from them to the model's parameters.

    A model returns one from :meth:`MeasurementModel.reparameterise` (given the data) when its
    posterior is easier to sample in other coordinates: standardised abilities, an intercept in
    place of a difficulty, a scale set by an anchor. Bayesian fits then sample :meth:`sites`
    (each a NumPyro distribution over its whole value: the prior in the new coordinates) in
    place of the parameters named in ``replaces``, and :meth:`parameters` turns the sampled
    values into those parameters' raw values. Every other parameter is sampled as declared.
    Fixed entries (the identification) keep their values whatever :meth:`parameters` returns.

    Example (abilities sampled standardised, ``ability = mu + tau z``)::

        class Standardised(Reparameterisation):
            n: int
            replaces: ClassVar[tuple[str, ...]] = ("ability",)

            def sites(self):
                return {"mu": dist.Normal(0, 1), "tau": dist.HalfNormal(1),
                        "z": dist.Normal(0, 1).expand([self.n]).to_event(1)}

            def parameters(self, values):
                return {"ability": values["mu"] + values["tau"] * values["z"]}

    :meth:`parameters` may return further entries (quantities derived on the way, such as
    ``tau``); samplers record them beside the parameters.
    """

    #: names of the parameters this reparameterisation supplies
    replaces: ClassVar[tuple[str, ...]] = ()

    def sites(self) -> dict:  # pragma: no cover - abstract
        """``{site name: NumPyro distribution}``, in the order they are sampled."""
        raise NotImplementedError

    def coords(self, subjects, items) -> dict[str, list[tuple[str, list]]]:
        """Labels of the sites' entries for labelled posteriors, given the data's subject and
        item labels: ``{site: [(dimension name, labels), ...]}`` (default: none, and the
        dimensions are numbered)."""
        return {}

    def parameters(self, values: dict) -> dict:  # pragma: no cover - abstract
        """Sampled ``values`` -> ``{name: raw value}`` for every name in ``replaces``
        (shape ``(n_entities, *shape)`` for subject and item parameters), plus derived extras."""
        raise NotImplementedError


def _neg_log_prior(decl: dict[str, Param], raw: dict, free: dict, glob: dict | None = None):
    total = jnp.zeros(())
    for name, p in decl.items():
        if p.prior is None:
            continue
        if isinstance(p.prior, Hierarchical):
            lp = p.prior.log_prob(raw[name], glob or {})
        else:
            lp = p.prior.log_prob(raw[name])
        total = total - jnp.sum(jnp.where(free[name], lp, 0.0))
    return total
