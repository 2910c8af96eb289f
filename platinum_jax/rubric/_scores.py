"""Rubric scores, the quality factor Q_j, the platinum score P_i and certification (Haupt et al. §4).

Per concept j the rubric elicits welfare alignment W_j in {1..5} (a proxy for |cos phi_j|),
marginal improvement cost K_j in {low, medium, high} (a proxy for 1/lambda_j) and measurement
noise N_j in {low, medium, high} (a proxy for sigma_j).  Per item i and concept j it elicits the
measurement strength S_ij in {0..3} (a proxy for |cos theta_ij|).  Then

    Q_j = gamma(W_j) * eta(K_j) * pi(N_j)          (incentive-controlled quality factor)
    P_i = max_j S_ij * Q_j                          (eq. 4)

Missing judgments (a judge call that failed) are never filled in: they are carried as NaN, the
score is the maximum over the observed cells and certification becomes ``<NA>`` whenever a
missing cell could change the verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jaxtyping import Array, Bool, Float, Int

from platinum_jax._names import unknown_name_message

__all__ = [
    "WELFARE_LEVELS",
    "COST_LEVELS",
    "NOISE_LEVELS",
    "STRENGTH_LEVELS",
    "ScoreMaps",
    "validate_concept_scores",
    "validate_strengths",
    "quality_factors",
    "platinum_scores",
    "certify",
]

WELFARE_LEVELS = (1, 2, 3, 4, 5)
COST_LEVELS = ("low", "medium", "high")
NOISE_LEVELS = ("low", "medium", "high")
STRENGTH_LEVELS = (0, 1, 2, 3)
_CONCEPT_COLUMNS = {"W": "welfare alignment", "K": "marginal improvement cost", "N": "measurement noise"}


def _freeze(m: Mapping) -> Mapping:
    return MappingProxyType(dict(m))


def _map_from(name: str, spec: Mapping | Callable, levels: tuple, direction: str) -> Mapping:
    """Tabulate a user map on the rubric levels and check it is positive and monotone."""
    if callable(spec) and not isinstance(spec, Mapping):
        table = {lv: spec(lv) for lv in levels}
    else:
        missing = [lv for lv in levels if lv not in spec]
        if missing:
            raise ValueError(f"ScoreMaps.{name} has no value for level(s) {missing}; give all of {list(levels)}")
        extra = [k for k in spec if k not in levels]
        if extra:
            raise ValueError(f"ScoreMaps.{name} has unknown level(s) {extra}; the levels are {list(levels)}")
        table = {lv: spec[lv] for lv in levels}
    vals = np.asarray([float(table[lv]) for lv in levels])
    if not np.all(np.isfinite(vals)) or np.any(vals <= 0):
        raise ValueError(f"ScoreMaps.{name} must be finite and positive on every level, got {table}")
    steps = np.diff(vals)
    if direction == "increasing" and np.any(steps < 0):
        raise ValueError(f"ScoreMaps.{name} must be non-decreasing in {list(levels)}, got {table}")
    if direction == "decreasing" and np.any(steps > 0):
        raise ValueError(f"ScoreMaps.{name} must be non-increasing in {list(levels)}, got {table}")
    return _freeze({lv: float(v) for lv, v in zip(levels, vals, strict=True)})


@dataclass(frozen=True)
class ScoreMaps:
    """The maps gamma (welfare), eta (cost) and pi (noise) of Q_j = gamma(W) eta(K) pi(N).

    Defaults are the paper's simple instantiation: gamma(W) = W and eta, pi = 1, 1/2, 1/4 for
    low, medium, high.  Pass a mapping over the levels or a callable; gamma must be
    non-decreasing, eta and pi non-increasing, all positive.
    """

    gamma: Mapping = field(default_factory=lambda: {w: float(w) for w in WELFARE_LEVELS})
    eta: Mapping = field(default_factory=lambda: {"low": 1.0, "medium": 0.5, "high": 0.25})
    pi: Mapping = field(default_factory=lambda: {"low": 1.0, "medium": 0.5, "high": 0.25})

    def __post_init__(self) -> None:
        object.__setattr__(self, "gamma", _map_from("gamma", self.gamma, WELFARE_LEVELS, "increasing"))
        object.__setattr__(self, "eta", _map_from("eta", self.eta, COST_LEVELS, "decreasing"))
        object.__setattr__(self, "pi", _map_from("pi", self.pi, NOISE_LEVELS, "decreasing"))

    @property
    def q_max(self) -> float:
        """The largest attainable Q_j (best level of every factor)."""
        return max(self.gamma.values()) * max(self.eta.values()) * max(self.pi.values())


def _is_missing(x) -> bool:
    return x is None or x is pd.NA or (isinstance(x, float) and np.isnan(x))


def _check_integer_level(value, levels: tuple[int, ...], what: str, where: str):
    if _is_missing(value):
        return np.nan
    if isinstance(value, bool | np.bool_):
        raise ValueError(f"{where}: {what} must be an integer in {list(levels)}, got the boolean {value!r}")
    if isinstance(value, float | np.floating) and float(value).is_integer():
        value = int(value)
    if not isinstance(value, int | np.integer) or int(value) not in levels:
        raise ValueError(
            f"{where}: {what} must be an integer in {list(levels)}, got {value!r}; "
            "the rubric has no other levels"
        )
    return int(value)


def _check_category(value, levels: tuple[str, ...], what: str, where: str):
    if _is_missing(value):
        return None
    if not isinstance(value, str) or value not in levels:
        hint = ""
        if isinstance(value, str) and value.strip().lower() in levels:
            hint = f" (write it as {value.strip().lower()!r})"
        raise ValueError(f"{where}: {what} must be one of {list(levels)}, got {value!r}{hint}")
    return value


def validate_concept_scores(scores: pd.DataFrame, *, allow_missing: bool = False) -> pd.DataFrame:
    """Check a concept table (index: concept names; columns ``W``, ``K``, ``N``).

    ``W`` must be an integer 1..5, ``K`` and ``N`` one of ``low``/``medium``/``high``.  Missing
    values are an error unless ``allow_missing`` (then they stay missing).  Returns a clean copy.
    """
    if not isinstance(scores, pd.DataFrame):
        raise ValueError(f"concept scores must be a pandas DataFrame, got {type(scores).__name__}")
    missing_cols = [c for c in _CONCEPT_COLUMNS if c not in scores.columns]
    if missing_cols:
        raise ValueError(
            f"concept scores lack column(s) {missing_cols}; expected W (welfare alignment 1-5), "
            "K (improvement cost low/medium/high) and N (measurement noise low/medium/high)"
        )
    if scores.index.has_duplicates:
        dup = scores.index[scores.index.duplicated()].tolist()
        raise ValueError(f"concept scores list concept(s) {dup} more than once")
    W, K, N = [], [], []
    for name, row in scores.iterrows():
        where = f"concept {name!r}"
        W.append(_check_integer_level(row["W"], WELFARE_LEVELS, "W (welfare alignment)", where))
        K.append(_check_category(row["K"], COST_LEVELS, "K (marginal improvement cost)", where))
        N.append(_check_category(row["N"], NOISE_LEVELS, "N (measurement noise)", where))
        if not allow_missing and (np.isnan(W[-1]) or K[-1] is None or N[-1] is None):
            raise ValueError(f"{where}: W, K and N are all required, got {dict(row[list(_CONCEPT_COLUMNS)])}")
    out = pd.DataFrame(
        {"W": pd.array([None if np.isnan(w) else w for w in W], dtype="Int64"),
         "K": pd.array(K, dtype="object"), "N": pd.array(N, dtype="object")},
        index=pd.Index(scores.index, name="concept"),
    )
    return out


def validate_strengths(strengths: pd.DataFrame, *, allow_missing: bool = False) -> pd.DataFrame:
    """Check an items x concepts table of measurement strengths S_ij in {0, 1, 2, 3}.

    Returns a float64 copy (NaN marks a missing judgment, allowed only with ``allow_missing``).
    """
    if not isinstance(strengths, pd.DataFrame):
        raise ValueError(f"strengths must be a pandas DataFrame (items x concepts), got {type(strengths).__name__}")
    if strengths.index.has_duplicates:
        dup = strengths.index[strengths.index.duplicated()].unique().tolist()[:5]
        raise ValueError(f"strengths list item id(s) {dup} more than once; item ids must be unique")
    if strengths.columns.has_duplicates:
        raise ValueError("strengths have duplicate concept columns")
    vals = strengths.to_numpy(dtype=object)
    out = np.empty(vals.shape, dtype=np.float64)
    for (a, b), v in np.ndenumerate(vals):
        where = f"S[item {strengths.index[a]!r}, concept {strengths.columns[b]!r}]"
        s = _check_integer_level(v, STRENGTH_LEVELS, "the measurement strength", where)
        if np.isnan(s) and not allow_missing:
            raise ValueError(f"{where} is missing; every item needs a strength for every concept")
        out[a, b] = s
    return pd.DataFrame(out, index=pd.Index(strengths.index, name="item_id"),
                        columns=pd.Index(strengths.columns, name="concept"))


def _align(strengths: pd.DataFrame, concepts: pd.DataFrame | pd.Series) -> None:
    known = list(concepts.index)
    for c in strengths.columns:
        if c not in known:
            raise KeyError(unknown_name_message("concept in strengths", c, known))
    for c in known:
        if c not in strengths.columns:
            raise KeyError(f"concept {c!r} has rubric scores but no column in the strengths table")


def quality_factors(concept_scores: pd.DataFrame, maps: ScoreMaps | None = None, *,
                    allow_missing: bool = False) -> pd.Series:
    """Q_j = gamma(W_j) eta(K_j) pi(N_j) per concept (NaN where a score is missing)."""
    maps = maps or ScoreMaps()
    cs = validate_concept_scores(concept_scores, allow_missing=allow_missing)
    q = []
    for _, row in cs.iterrows():
        if row["W"] is pd.NA or row["K"] is None or row["N"] is None:
            q.append(np.nan)
        else:
            q.append(maps.gamma[int(row["W"])] * maps.eta[row["K"]] * maps.pi[row["N"]])
    return pd.Series(q, index=cs.index, name="Q", dtype=np.float64)


@jax.jit
def _platinum_kernel(
    S: Float[Array, "m J"], observed: Bool[Array, "m J"], Q: Float[Array, " J"]
) -> tuple[Float[Array, " m"], Int[Array, " m"]]:
    # Missing Q_j are NaN: treat the whole column as unobserved for the max.
    obs = observed & jnp.isfinite(Q)[None, :]
    prod = jnp.where(obs, S * jnp.where(jnp.isfinite(Q), Q, 0.0)[None, :], -jnp.inf)
    best = jnp.max(prod, axis=1)
    witness = jnp.argmax(prod, axis=1)  # first maximiser, so ties go to the earlier concept
    any_obs = jnp.any(obs, axis=1)
    # With P_i = 0 every concept ties at zero and argmax would name the first one; no concept
    # witnesses anything, so the witness is -1 (missing) there too.
    return jnp.where(any_obs, best, jnp.nan), jnp.where(any_obs & (best > 0), witness, -1)


def platinum_scores(strengths: pd.DataFrame, quality: pd.Series, *, allow_missing: bool = False) -> pd.DataFrame:
    """P_i = max_j S_ij Q_j (eq. 4) and its witnessing concept argmax_j S_ij Q_j.

    ``strengths``: items x concepts (S in 0..3); ``quality``: Q per concept (from
    :func:`quality_factors`).  Returns a DataFrame indexed by item with ``platinum_score``,
    ``concept`` (the witness; ties go to the first concept in column order) and ``complete``
    (False when some S_ij or Q_j was missing, so P_i is a lower bound).  The witness is None
    when P_i = 0 (every observed S_ij Q_j is 0: the item measures no concept, so none is
    named) and when nothing was observed (P_i is NaN).
    """
    S = validate_strengths(strengths, allow_missing=allow_missing)
    _align(S, quality)
    q = quality.reindex(S.columns).to_numpy(dtype=np.float64)
    if not allow_missing and not np.all(np.isfinite(q)):
        raise ValueError(f"quality factors are missing for {list(S.columns[~np.isfinite(q)])}")
    if np.any(np.isfinite(q) & (q < 0)):
        raise ValueError("quality factors Q_j must be non-negative")
    s = S.to_numpy()
    observed = np.isfinite(s)
    P, wit = _platinum_kernel(jnp.asarray(np.nan_to_num(s)), jnp.asarray(observed), jnp.asarray(q))
    P, wit = np.asarray(P, dtype=np.float64), np.asarray(wit)
    names = np.asarray(list(S.columns) + [None], dtype=object)
    complete = observed.all(axis=1) & np.isfinite(q).all()
    return pd.DataFrame(
        {"platinum_score": P, "concept": names[np.where(wit < 0, len(S.columns), wit)], "complete": complete},
        index=S.index,
    )


def certify(
    strengths: pd.DataFrame,
    concept_scores: pd.DataFrame,
    *,
    rule: str = "appendix",
    threshold: float | None = None,
    maps: ScoreMaps | None = None,
    min_welfare: int = 4,
    allowed_costs: tuple[str, ...] = ("low", "medium"),
    min_strength: int = 2,
    allow_missing: bool = False,
) -> pd.DataFrame:
    """Certify items as platinum.

    ``rule="appendix"`` (default): item i is platinum if some concept c has W_c >= 4, cost
    K_c in {low, medium} and S_ic >= 2.  (Appendix A prints the cost condition as
    "w_c in {low, medium}"; the levels show it is the improvement cost K_c that is meant.)
    ``rule="threshold"``: item i is platinum if P_i >= ``threshold`` (tau_cert).

    Returns one row per item: ``platinum_score`` (P_i), ``concept`` (argmax_j S_ij Q_j; None
    when P_i = 0 or nothing was observed),
    ``certified`` (nullable boolean: ``<NA>`` when missing judgments could flip the verdict),
    ``certifying_concept`` (a concept that witnesses the rule, if any) and ``complete``.
    """
    maps = maps or ScoreMaps()
    cs = validate_concept_scores(concept_scores, allow_missing=allow_missing)
    S = validate_strengths(strengths, allow_missing=allow_missing)
    _align(S, cs)
    cs = cs.reindex(S.columns)
    Q = quality_factors(cs, maps, allow_missing=allow_missing)
    scores = platinum_scores(S, Q, allow_missing=allow_missing)
    s = S.to_numpy()
    observed = np.isfinite(s)
    concepts = np.asarray(S.columns, dtype=object)
    if rule == "threshold":
        if threshold is None or not np.isfinite(threshold):
            raise ValueError("rule='threshold' needs a finite threshold (tau_cert), e.g. threshold=4.0")
        q = Q.to_numpy()
        # A witness among observed cells certifies; an unobserved cell could reach at most 3 Q_j.
        value = np.where(observed & np.isfinite(q)[None, :], s * np.nan_to_num(q)[None, :], -np.inf)
        witness_ok = value >= threshold
        bound = 3.0 * np.where(np.isfinite(q), q, maps.q_max)
        could = (~(observed & np.isfinite(q)[None, :])) & (bound[None, :] >= threshold)
    elif rule == "appendix":
        if threshold is not None:
            raise ValueError("threshold is only used with rule='threshold'; drop it or switch rules")
        bad = [c for c in allowed_costs if c not in COST_LEVELS]
        if bad:
            raise ValueError(f"allowed_costs {bad} are not cost levels {list(COST_LEVELS)}")
        W = cs["W"].to_numpy(dtype=np.float64, na_value=np.nan)
        Kc = cs["K"].to_numpy(dtype=object)
        good = (W >= min_welfare) & np.asarray([k in allowed_costs for k in Kc])
        unknown = np.isnan(W) | np.asarray([k is None for k in Kc])
        witness_ok = observed & good[None, :] & (np.nan_to_num(s, nan=-1) >= min_strength)
        could = ((~observed) & (good | unknown)[None, :]) | (observed & unknown[None, :] & (s >= min_strength))
    else:
        raise ValueError(f"unknown certification rule {rule!r}; use 'appendix' or 'threshold'")
    hit = witness_ok.any(axis=1)
    undecided = ~hit & could.any(axis=1)
    certified = pd.array([True if h else (None if u else False) for h, u in zip(hit, undecided, strict=True)],
                         dtype="boolean")
    first = np.argmax(witness_ok, axis=1)
    out = scores.copy()
    out.insert(2, "certified", certified)
    out.insert(3, "certifying_concept", np.where(hit, concepts[first], None))
    out.attrs["rule"] = rule if rule == "appendix" else f"P >= {threshold}"
    return out
