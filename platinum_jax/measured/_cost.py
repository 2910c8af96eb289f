"""Per-item improvement cost C_i from intervention grids (Haupt et al.).

Along each intervention axis a (pre-training tokens, SFT samples, RL prompts, ...) a family of
models differs only in how much of a is spent. The item's correct-answer probability p̂ is
regressed on the axis value in its native units, one ordinary least-squares line per (item,
axis):

    β_ia = Σ_j (x_j − x̄)(p̂_ij − p̄_i) / Σ_j (x_j − x̄)²,

and the dollar cost of lifting p̂ by ``lift`` (0.10) along a is ``lift / β_ia · price_a`` where
β_ia > 0 (an improving axis), undefined otherwise. C_i is the cost along the cheapest improving
axis. An item is eligible when its anchor p̂ (the reference model's) lies in [0.05, 0.95] and
at least one axis improves it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

__all__ = ["RELEASE_PRICES_USD", "cost_from_slopes", "estimate_cost"]

LIFT = 0.10
ANCHOR_RANGE = (0.05, 0.95)
# Dollars per unit of each axis, in the units of the release's slopes (cost.csv's beta_*): the
# authors' code does not state them; cost_*_usd · beta_* / 0.10 in their cost.csv is constant
# per axis up to the rounding of the printed slopes (820.0, 2.0, 5.0 on average).
RELEASE_PRICES_USD = {"PT": 820.0, "SFT": 2.0, "RL": 5.0}


def _label(key):
    """A label as plain Python values, for messages."""
    if isinstance(key, tuple):
        return tuple(_label(k) for k in key)
    return key.item() if isinstance(key, np.generic) else key


def _prices(prices: Mapping[str, float], axes) -> dict[str, float]:
    if not isinstance(prices, Mapping):
        raise TypeError("prices must map each axis to its dollar price per unit, e.g. "
                        "RELEASE_PRICES_USD")
    missing = [a for a in axes if a not in prices]
    if missing:
        raise ValueError(f"prices has no dollar price for axis(es) {missing} (priced: "
                         f"{sorted(prices)}); give one per axis in the axis' native units")
    out = {a: float(prices[a]) for a in axes}
    bad = [a for a, p in out.items() if not (np.isfinite(p) and p > 0)]
    if bad:
        raise ValueError(f"prices must be positive and finite; axis(es) {bad} are not")
    return out


def cost_from_slopes(slopes: pd.DataFrame, prices: Mapping[str, float], *,
                     lift: float = LIFT) -> pd.DataFrame:
    """Dollar cost of a ``lift`` on each axis and the cheapest improving axis, per item.

    Args:
        slopes: one row per item, one column per axis: β (per native unit of the axis).
        prices: dollars per native unit of each axis (:data:`RELEASE_PRICES_USD` for the
            authors' release).
        lift: the rise in p̂ to pay for (0.10).

    Returns:
        DataFrame with the index of ``slopes``: ``cost_<axis>_usd`` (``lift / β · price``,
        NaN where β ≤ 0), ``axis_<axis>_improving``, ``cost_min_usd`` (NaN where no axis
        improves) and ``cheapest_axis`` (None there); axis names lower-cased in column names.
    """
    if not (np.isfinite(lift) and lift > 0):
        raise ValueError(f"lift must be a positive number, got {lift!r}")
    axes = list(slopes.columns)
    price = _prices(prices, axes)
    beta = slopes.to_numpy(dtype=float)
    if np.isnan(beta).any():
        raise ValueError("slopes has missing values; every item needs a slope on every axis")
    up = beta > 0
    cost = np.where(up, lift / np.where(up, beta, 1.0) * np.array([price[a] for a in axes]),
                    np.nan)
    any_up = up.any(axis=1)
    cheapest = np.argmin(np.where(up, cost, np.inf), axis=1)
    out = pd.DataFrame(index=slopes.index)
    for j, a in enumerate(axes):
        out[f"cost_{str(a).lower()}_usd"] = cost[:, j]
    for j, a in enumerate(axes):
        out[f"axis_{str(a).lower()}_improving"] = up[:, j]
    out["cost_min_usd"] = np.where(any_up, cost[np.arange(len(cost)), cheapest], np.nan)
    out["cheapest_axis"] = pd.Series(np.asarray(axes, dtype=object)[cheapest],
                                     index=slopes.index).where(any_up, None)
    return out


def estimate_cost(grid: pd.DataFrame, anchor: pd.Series, *, prices: Mapping[str, float],
                  item: str | Sequence[str] = "item", axis: str = "axis", value: str = "value",
                  response: str = "response", lift: float = LIFT,
                  anchor_range: tuple[float, float] = ANCHOR_RANGE) -> pd.DataFrame:
    """Per-item OLS slopes along each axis, dollar costs and eligibility.

    Args:
        grid: long frame, one row per (item, axis, axis value): the item (one column, or
            several such as ``["task", "doc_id"]``), the axis name, the axis value in native
            units and p̂ (``response``). Every item needs two or more
            distinct values on every axis.
        anchor: p̂ of the reference model per item (Series indexed by item): the eligibility
            filter's anchor, reported as ``anchor_phat``.
        prices: dollars per native unit of each axis (user input; :data:`RELEASE_PRICES_USD`
            reproduces the authors' release).
        lift, anchor_range: the lift to pay for (0.10) and the anchor filter ([0.05, 0.95]).

    Returns:
        DataFrame indexed by item: ``anchor_phat``, ``beta_<axis>``, the columns of
        :func:`cost_from_slopes`, ``eligible`` and ``reason`` (why not; empty when eligible).
        Every item of the grid is returned.
    """
    ids = [item] if isinstance(item, str) else list(item)
    need = [*ids, axis, value, response]
    if not isinstance(grid, pd.DataFrame) or not set(need) <= set(grid.columns):
        have = list(grid.columns) if isinstance(grid, pd.DataFrame) else type(grid).__name__
        raise ValueError(f"grid must be a frame with columns {need} (got {have}); name them "
                         "with item=, axis=, value=, response=")
    x = pd.to_numeric(grid[value], errors="coerce").to_numpy(dtype=float)
    y = pd.to_numeric(grid[response], errors="coerce").to_numpy(dtype=float)
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError(f"grid: columns {value!r} and {response!r} must be finite numbers")
    if ((y < 0) | (y > 1)).any():
        raise ValueError(f"grid: column {response!r} must hold probabilities in [0, 1]")
    absent = [c for c in [*ids, axis] if grid[c].isna().any()]
    if absent:
        raise ValueError(f"grid: column(s) {absent} have missing values")
    if len(ids) > 1:
        code, items = pd.factorize(pd.MultiIndex.from_frame(grid[ids]))
        items = items.set_names(ids)
    else:
        code, items = pd.factorize(grid[ids[0]])
        items = pd.Index(items, name=ids[0])
    ax, axes = pd.factorize(grid[axis], sort=True)
    _prices(prices, list(axes))
    cell = code.astype(np.int64) * len(axes) + ax
    n_cells = len(items) * len(axes)
    size = np.bincount(cell, minlength=n_cells)
    # Centre within (item, axis) before the cross products: axis values reach 1e11 tokens.
    dx = x - (np.bincount(cell, x, minlength=n_cells) / np.maximum(size, 1))[cell]
    dy = y - (np.bincount(cell, y, minlength=n_cells) / np.maximum(size, 1))[cell]
    sxx = np.bincount(cell, dx * dx, minlength=n_cells)
    sxy = np.bincount(cell, dx * dy, minlength=n_cells)
    flat = sxx <= 1e-12 * np.maximum(np.bincount(cell, x * x, minlength=n_cells), 1e-300)
    if flat.any():
        c = int(np.flatnonzero(flat)[0])
        raise ValueError(f"grid: item {_label(items[c // len(axes)])!r} has {int(size[c])} point(s) "
                         f"and fewer than two distinct values on axis {axes[c % len(axes)]!r}: "
                         "a slope needs two or more distinct axis values (every item on every "
                         "axis)")
    beta = pd.DataFrame((sxy / sxx).reshape(len(items), len(axes)),
                        index=items, columns=list(axes))
    if not isinstance(anchor, pd.Series):
        raise TypeError("anchor must be a Series of the reference model's p̂ indexed by item")
    missing = beta.index.difference(anchor.index)
    if len(missing):
        raise ValueError(f"anchor has no p̂ for {len(missing)} item(s) of the grid, e.g. "
                         f"{_label(missing[0])!r}")
    anchor_phat = pd.to_numeric(anchor.reindex(beta.index), errors="coerce").astype(float)
    if not anchor_phat.between(0, 1).all():
        raise ValueError("anchor must hold probabilities in [0, 1] for every item of the grid")
    lo, hi = map(float, anchor_range)
    costs = cost_from_slopes(beta, prices, lift=lift)
    out = pd.concat([anchor_phat.rename("anchor_phat"),
                     beta.rename(columns=lambda a: f"beta_{str(a).lower()}"), costs], axis=1)
    reason = np.full(len(out), "", dtype=object)
    reason[~costs["cost_min_usd"].notna().to_numpy()] = "no improving axis (every β ≤ 0)"
    outside = ~anchor_phat.between(lo, hi).to_numpy()
    reason[outside] = f"anchor p̂ outside [{lo:g}, {hi:g}]"
    out["eligible"] = reason == ""
    out["reason"] = reason.astype(str)
    return out
