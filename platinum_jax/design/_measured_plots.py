"""The four figures of ``platinum-jax platinum`` (matplotlib, Agg backend)."""

from __future__ import annotations

import numpy as np

__all__ = ["write_plots"]

_TOP = 30  # items shown in the per-item figures


def _weights(path, res):
    import matplotlib.pyplot as plt

    t = res.items.sort_values("mean").iloc[-_TOP:]
    fig, ax = plt.subplots(figsize=(9, 0.25 * len(t) + 1.8))
    y = np.arange(len(t))
    ax.errorbar(t["mean"], y, xerr=[t["mean"] - t["lo"], t["hi"] - t["mean"]], fmt="none",
                ecolor="0.6")
    sc = ax.scatter(t["mean"], y, c=t["p_platinum"], cmap="viridis", vmin=0, vmax=1, zorder=3)
    ax.set_yticks(y, t["item"])
    ax.set_xlabel(f"optimal weight v* (mean and {100 * res.summary['interval']:.0f}% interval)")
    ax.set_title(f"largest optimal weights ({res.summary['view']} view, r = {res.r:.3g}/$)")
    fig.colorbar(sc, ax=ax, label="P(platinum)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _platinum(path, res):
    import matplotlib.pyplot as plt

    t = res.items.sort_values("p_platinum", ascending=False)
    fig, ax = plt.subplots(figsize=(9, 4))
    families = sorted(set(t["family"]))
    colors = {f: plt.get_cmap("tab10")(i % 10) for i, f in enumerate(families)}
    ax.bar(np.arange(len(t)), t["p_platinum"], color=[colors[f] for f in t["family"]], width=1.0)
    from matplotlib.patches import Patch

    handles = [Patch(color=colors[f], label=f) for f in families]
    ax.axhline(0.9, color="0.3", ls="--", lw=0.8)
    ax.set_xlabel("items, by P(platinum)")
    ax.set_ylabel("P(platinum)")
    ax.set_title(f"{res.summary['n_platinum_p_above_0.9']} of {len(t)} items platinum with "
                 "P > 0.9 (dashed)")
    ax.legend(handles=handles, fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _gain(path, res):
    import matplotlib.pyplot as plt

    g = res.posterior.gain_draws
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.hist(g["over_uniform"], bins=30, alpha=0.6, label="over uniform weights")
    ax.hist(g["over_current"], bins=30, alpha=0.6, label="over task-average weights")
    ax.set_xlabel("welfare gain of v*, (W(v*) - W(u)) / W(v*)")
    ax.set_ylabel("draws")
    ax.set_title(f"welfare gain across {len(g)} draws of the primitives")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _sweep(path, res):
    import matplotlib.pyplot as plt

    s = res.posterior.sensitivity
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
    for key, label in (("uniform", "over uniform"), ("current", "over task-average")):
        ax.plot(s.index, s[f"gain_over_{key}_mean"], "o-", label=label)
        ax.fill_between(s.index, s[f"gain_over_{key}_lo"], s[f"gain_over_{key}_hi"], alpha=0.2)
    ax.set_xscale("log")
    ax.set_xlabel("risk aversion r (1/$)")
    ax.set_ylabel("welfare gain of v*")
    ax.axvline(res.r, color="0.5", lw=0.8)
    ax.legend()
    bx.plot(s.index, s["expected_platinum_items"], "o-")
    bx.set_xscale("log")
    bx.set_xlabel("risk aversion r (1/$)")
    bx.set_ylabel("expected number of platinum items")
    bx.axvline(res.r, color="0.5", lw=0.8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_plots(out, res) -> list:
    """Write ``weights.png``, ``platinum.png``, ``gain.png``, ``sweep.png`` through ``out`` (an
    :class:`platinum_jax._outputs.OutputDir`); returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    return [out.write(name, fn, res) for name, fn in
            (("weights.png", _weights), ("platinum.png", _platinum), ("gain.png", _gain),
             ("sweep.png", _sweep))]
