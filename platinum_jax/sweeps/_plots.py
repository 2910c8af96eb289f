"""Figures of sweep results (PNG), drawn on ``matplotlib.figure.Figure`` so no backend is forced.

* :func:`plot_weight_heatmaps` -- each item's weight ``v*_i`` over two axes;
* :func:`plot_weight_curves` -- ``v*_i`` against one axis (r, κ, δ, ...) with the direction
  Haupt et al. predict written on the panel;
* :func:`plot_measurement_shift` -- a uniform cost change (κ) moving weight toward
  well-measured items (Haupt et al. §3).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["plot_weight_heatmaps", "plot_weight_curves", "plot_measurement_shift"]

# What Haupt et al. predict along each built-in axis, in words for the figure.
_PREDICTIONS = {
    "RiskAversion": "Haupt et al. eq. 2: larger r shrinks every concept by λ/(λ+rσ),\n"
                    "most for noisy or costly concepts -> weight falls, toward precise items",
    "CostScale": "Haupt et al. §3: M/κ equals risk κr; larger κ shifts\n"
                 "weight toward well-measured concepts",
    "ConceptShift": "Haupt et al. eq. 3: δ > 0 makes concept {c} cheaper ->\n"
                    "weight rises on items loading on it",
    "NoiseScale": "Haupt et al. §3: larger noise on concept {c} lowers its weight",
    "WelfareShift": "higher welfare relevance raises the weight of aligned items",
}


def _figure(w: float, h: float, layout: str | None = "constrained"):
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h), layout=layout)


def _fix_others(da, keep: tuple[str, ...], at: dict | None):
    """Select the point ``at`` (default: the middle value) on every dimension not in ``keep``."""
    unknown = sorted(set(at or {}) - set(da.dims))
    at = {k: v for k, v in (at or {}).items() if k not in keep}
    for dim in da.dims:
        if dim not in keep and dim not in at:
            at[dim] = da[dim].values[len(da[dim]) // 2]
    if unknown:
        raise KeyError(f"at= names unknown dimension(s) {unknown}; the sweep has {list(da.dims)}")
    return da.sel(at, method="nearest"), at


def _items(ds, items):
    names = list(ds["item"].values)
    if items is None:
        return names
    missing = [i for i in items if i not in names]
    if missing:
        import difflib

        hint = difflib.get_close_matches(str(missing[0]), names, n=3)
        raise KeyError(f"unknown item(s) {missing}" + (f"; did you mean {hint}?" if hint else ""))
    return list(items)


def _save(fig, path):
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
    return fig


def plot_weight_heatmaps(ds, x: str, y: str, *, items=None, at: dict | None = None,
                         path=None, ncols: int = 5):
    """One heat map per item of ``v*_i`` over axes ``x`` and ``y`` (others fixed by ``at``)."""
    if "v" not in ds:
        raise KeyError("the sweep has no 'v' variable; run it with outputs=[Weights(), ...]")
    for name in (x, y):
        if name not in ds.dims:
            raise KeyError(f"{name!r} is not an axis of this sweep; axes: {list(ds['v'].dims[:-1])}")
    names = _items(ds, items)
    da, at = _fix_others(ds["v"].sel(item=names), (x, y, "item"), at)
    ncols = min(ncols, len(names))
    nrows = -(-len(names) // ncols)
    # Fixed margins: a constrained layout over many panels is slow to draw.
    fig = _figure(2.4 * ncols + 1.2, 2.0 * nrows + 0.8, layout=None)
    axs = fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True)
    fig.subplots_adjust(left=0.07, right=0.86, bottom=0.08, top=0.9, wspace=0.12, hspace=0.3)
    vmin, vmax = float(da.min()), float(da.max())
    log_x = _is_log(ds[x].values)
    log_y = _is_log(ds[y].values)
    for k, ax in enumerate(axs.flat):
        if k >= len(names):
            ax.set_visible(False)
            continue
        z = da.sel(item=names[k]).transpose(y, x).values
        mesh = ax.pcolormesh(ds[x].values, ds[y].values, z, shading="nearest", vmin=vmin,
                             vmax=vmax, cmap="viridis")
        ax.set_title(names[k], fontsize=8)
        if log_x:
            ax.set_xscale("log")
        if log_y:
            ax.set_yscale("log")
        ax.tick_params(labelsize=7)
        if k % ncols == 0:
            ax.set_ylabel(y)
        if k + ncols >= len(names):
            ax.set_xlabel(x)
            ax.xaxis.set_tick_params(labelbottom=True)
    fig.colorbar(mesh, cax=fig.add_axes((0.89, 0.15, 0.02, 0.7)), label="optimal weight v*_i")
    fixed = ", ".join(f"{k}={float(v):.3g}" for k, v in at.items() if k not in (x, y)) or "none"
    fig.suptitle(f"v*_i over {x} and {y} (fixed: {fixed})", fontsize=10)
    return _save(fig, path)


def _is_log(values) -> bool:
    v = np.asarray(values, dtype=float)
    return bool(len(v) > 2 and (v > 0).all() and v.max() / v.min() > 20)


def plot_weight_curves(ds, axes_to_plot=None, *, items=None, at: dict | None = None, path=None):
    """``v*_i`` against each of ``axes_to_plot`` (default: every axis), one panel per axis.

    Each panel states the comparative static Haupt et al. predicts for that kind of axis.
    """
    if "v" not in ds:
        raise KeyError("the sweep has no 'v' variable; run it with outputs=[Weights(), ...]")
    kinds = json.loads(ds.attrs.get("axis_kinds", "{}"))
    dims = [d for d in ds["v"].dims if d != "item"]
    axes_to_plot = dims if axes_to_plot is None else list(axes_to_plot)
    for name in axes_to_plot:
        if name not in dims:
            raise KeyError(f"{name!r} is not an axis of this sweep; axes: {dims}")
    names = _items(ds, items)
    fig = _figure(5.2 * len(axes_to_plot), 4.4)
    axs = np.atleast_1d(fig.subplots(1, len(axes_to_plot)))
    colours = _cycle(len(names))
    for ax, name in zip(axs, axes_to_plot, strict=True):
        da, fixed = _fix_others(ds["v"].sel(item=names), (name, "item"), at)
        for c, item in zip(colours, names, strict=True):
            ax.plot(ds[name].values, da.sel(item=item).values, color=c, lw=1.2, label=item)
        if _is_log(ds[name].values):
            ax.set_xscale("log")
        ax.set_xlabel(name)
        ax.set_ylabel("optimal weight v*_i")
        kind, concept = kinds.get(name, [None, None])
        note = _PREDICTIONS.get(kind, "").format(c=concept)
        if note:
            ax.text(0.02, 0.98, note, transform=ax.transAxes, va="top", fontsize=7,
                    bbox=dict(boxstyle="round", fc="white", ec="0.7", alpha=0.9))
        others = ", ".join(f"{k}={float(v):.3g}" for k, v in fixed.items() if k != name)
        ax.set_title(f"v*_i vs {name}" + (f" ({others})" if others else ""), fontsize=9)
    if len(names) <= 24:
        axs[-1].legend(fontsize=6, ncol=2, loc="lower right")
    return _save(fig, path)


def _cycle(n: int):
    from matplotlib import colormaps

    cmap = colormaps["tab20"]
    return [cmap(i % 20) for i in range(n)]


def plot_measurement_shift(ds, noise, *, axis: str = "kappa", at: dict | None = None, path=None):
    """How a uniform cost change moves weight toward well-measured items (Haupt et al. §3).

    ``noise`` (m,) is each item's measurement noise (e.g. ``diag(Σ)`` or its concept's σ).  Left:
    each item's share ``v*_i / Σ_k |v*_k|`` against ``axis``, coloured by noise.  Right: the
    total share of each noise level (or of the better- and worse-measured halves when there are
    more than six levels); the paper predicts the well-measured share to rise with ``κ``
    (``M/κ`` is the same as risk ``κr``).
    """
    if "v" not in ds:
        raise KeyError("the sweep has no 'v' variable; run it with outputs=[Weights(), ...]")
    if axis not in ds.dims:
        raise KeyError(f"{axis!r} is not an axis of this sweep; axes: {list(ds['v'].dims[:-1])}")
    noise = np.asarray(noise, dtype=float)
    if noise.shape != (ds.sizes["item"],):
        raise ValueError(f"noise must have one value per item ({ds.sizes['item']}), got {noise.shape}")
    da, fixed = _fix_others(ds["v"], (axis, "item"), at)
    v = da.transpose(axis, "item").values
    share = v / np.abs(v).sum(axis=1, keepdims=True)
    x = ds[axis].values
    precise = noise <= np.median(noise)
    fig = _figure(11, 4.2)
    ax_items, ax_total = fig.subplots(1, 2)
    from matplotlib import colormaps
    from matplotlib.colors import Normalize

    norm = Normalize(noise.min(), noise.max() if noise.max() > noise.min() else noise.min() + 1)
    cmap = colormaps["plasma"]
    for i in range(v.shape[1]):
        ax_items.plot(x, share[:, i], color=cmap(norm(noise[i])), lw=1.1)
    from matplotlib.cm import ScalarMappable

    fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax_items, label="item noise")
    ax_items.set_xlabel(axis)
    ax_items.set_ylabel("weight share v*_i / sum |v*|")
    ax_items.set_title("per-item weight share (colour = measurement noise)", fontsize=9)
    levels = np.unique(noise)
    if len(levels) <= 6:  # few noise levels (concept groups): one line per level
        groups = [(f"noise {lv:.3g} ({int((noise == lv).sum())} items)", noise == lv)
                  for lv in levels]
    else:
        groups = [("better-measured half", precise), ("noisier half", ~precise)]
    colours = colormaps["plasma"](np.linspace(0.0, 0.85, len(groups)))
    for (label, mask), c in zip(groups, colours, strict=True):
        ax_total.plot(x, share[:, mask].sum(axis=1), color=c, lw=2, label=label)
    ax_total.set_xlabel(axis)
    ax_total.set_ylabel("total weight share")
    ax_total.legend(fontsize=8)
    ax_total.set_title("uniform cost change (M -> M/kappa) moves weight\n"
                       "toward well-measured items (Haupt et al. §3)", fontsize=9)
    for ax in (ax_items, ax_total):
        if _is_log(x):
            ax.set_xscale("log")
    return _save(fig, path)
