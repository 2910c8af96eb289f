"""The minimum detectable ability difference (MDAD) of a reduced test under an item model.

An error bar says how far one model's estimate may be from its truth; it does not say whether
the test can tell two models apart. For two models ``a`` and ``b`` given item sets ``S_a`` and
``S_b``, the maximum-likelihood ability has standard error ``SE_m = 1 / sqrt(I_m(theta_m))``,
with the test information ``I_m(theta) = sum_{i in S_m} I_i(theta)`` (the bank's Fisher
information, over-dispersion included). A two-sided test of ``theta_a = theta_b`` at level
``alpha`` then has power ``power`` against differences of at least

    MDAD = (z_{1 - alpha/2} + z_{power}) * sqrt(SE_a^2 + SE_b^2).

On the score scale (the mean response over the target items ``T``) the difference is carried
by the test characteristic curve ``A(theta) = mean_{i in T} mu_i(theta)``: ``MDAD_score =
A'(theta) * MDAD`` (delta method, at the models' ability). Both are IRT-specific: they rest on
the item model being right and on its item parameters being exact, and they ignore the
ability prior (a model-free, design-based detectable difference for any estimator with a
standard error is a different quantity).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm

from ._bank import ItemBank

__all__ = ["irt_mdad", "irt_mdad_subjects"]


def _z(alpha: float, power: float) -> float:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1 (got {alpha})")
    if not 0 < power < 1:
        raise ValueError(f"power must lie strictly between 0 and 1 (got {power})")
    return float(norm.ppf(1 - alpha / 2) + norm.ppf(power))


def _on_grid(bank: ItemBank, ability) -> np.ndarray:
    ability = np.atleast_1d(np.asarray(ability, np.float64))
    grid = np.asarray(bank.grid, np.float64)
    if not np.all(np.isfinite(ability)) or ability.min() < grid[0] or ability.max() > grid[-1]:
        raise ValueError(f"abilities must be finite and lie on the bank's grid "
                         f"[{grid[0]:.3g}, {grid[-1]:.3g}]")
    return ability


def _interp(bank: ItemBank, table, ability) -> np.ndarray:
    """Columns of a ``(G, N)`` table interpolated at ``ability`` ``(A,)``: ``(A, N)``."""
    grid = np.asarray(bank.grid, np.float64)
    t = np.asarray(table, np.float64)
    return np.stack([np.interp(ability, grid, t[:, i]) for i in range(t.shape[1])], axis=1)


def irt_mdad(bank: ItemBank, items, ability=None, *, alpha: float = 0.05,
             power: float = 0.8, target=None) -> pd.DataFrame:
    """MDAD of a fixed item set given to two models of the same ability (module docstring).

    Args:
        bank: the fitted items.
        items: the item labels both models answer (a subset, or every item of the bank).
        ability: abilities at which to evaluate (default: the fitted abilities' mean).
        alpha, power: the test's level and power (default 0.05 and 0.8).
        target: items whose mean response is the score (default every item of the bank).

    Returns:
        One row per ability: ``information`` (test information), ``se`` (``1/sqrt(I)``),
        ``mdad_ability`` (``z sqrt(2) se``) and ``mdad_score`` (``A'(theta) mdad_ability``).
    """
    z = _z(alpha, power)
    if ability is None:
        ability = float(np.mean(np.asarray(bank.fit.theta.subjects)))
    ability = _on_grid(bank, ability)
    pos = bank.position(pd.Index(items))
    info = _interp(bank, bank.information()[:, pos], ability).sum(1)
    tmask = np.ones(bank.n_items, bool) if target is None else np.isin(
        np.arange(bank.n_items), bank.position(target))
    slope = _interp(bank, bank.slope[:, tmask], ability).mean(1)
    with np.errstate(divide="ignore"):
        se = 1.0 / np.sqrt(info)
    mdad = z * np.sqrt(2.0) * se
    return pd.DataFrame({"information": info, "se": se, "mdad_ability": mdad,
                         "mdad_score": slope * mdad}, index=pd.Index(ability, name="ability"))


def irt_mdad_subjects(bank: ItemBank, given, ability=None, *, alpha: float = 0.05,
                      power: float = 0.8, target=None) -> pd.DataFrame:
    """Per subject, the MDAD against a second model measured as precisely (the same test
    information), at the subject's estimated ability, from the items it was given.

    Args:
        bank: the fitted items.
        given: an :class:`~platinum_jax.efficient.AdaptiveRun` (its trace and final
            abilities), or a frame with columns ``subject`` and ``item`` (then ``ability``, a
            Series indexed by subject, is required).
        ability: abilities per subject (default: the run's final posterior means).
        alpha, power, target: as :func:`irt_mdad`.

    Returns:
        One row per subject: ``information``, ``se``, ``mdad_ability``, ``mdad_score``.
    """
    z = _z(alpha, power)
    if hasattr(given, "trace"):
        pairs = given.trace[["subject", "item"]]
        ability = given.subjects["ability"] if ability is None else ability
    else:
        pairs = given[["subject", "item"]]
        if ability is None:
            raise ValueError("give ability (a Series indexed by subject) with a frame of "
                             "(subject, item) pairs")
    names = pd.Index(ability.index)
    theta = _on_grid(bank, ability.to_numpy(np.float64))
    info_items = _interp(bank, bank.information(), theta)  # (S, N)
    rows = names.get_indexer(pairs["subject"])
    if (rows < 0).any():
        raise ValueError("given names subjects that ability does not list")
    cols = bank.position(pairs["item"])
    mask = np.zeros(info_items.shape, bool)
    mask[rows, cols] = True
    info = np.where(mask, info_items, 0.0).sum(1)
    tmask = np.ones(bank.n_items, bool) if target is None else np.isin(
        np.arange(bank.n_items), bank.position(target))
    slope = _interp(bank, bank.slope[:, tmask], theta).mean(1)
    with np.errstate(divide="ignore"):
        se = 1.0 / np.sqrt(info)
    mdad = z * np.sqrt(2.0) * se
    return pd.DataFrame({"information": info, "se": se, "mdad_ability": mdad,
                         "mdad_score": slope * mdad}, index=names)
