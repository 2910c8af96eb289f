"""A self-contained HTML certification report (figures embedded as base64 PNG)."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["write_report", "certification_figure"]


def certification_figure(items: pd.DataFrame, concepts: pd.DataFrame, threshold: float | None = None):
    """Three panels: Q_j per concept, sorted P_i coloured by verdict, certified items per concept."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), constrained_layout=True)
    q = concepts["Q"]
    axes[0].barh(list(q.index)[::-1], q.to_numpy()[::-1], color="#4c72b0")
    axes[0].set_xlabel("quality factor Q_j = γ(W) η(K) π(N)")
    axes[0].set_title("Concepts")
    order = items.sort_values("platinum_score", ascending=False, na_position="last")
    colours = ["#dd8452" if c is True else ("#999999" if c is pd.NA else "#4c72b0")
               for c in order["certified"].astype(object).where(order["certified"].notna(), pd.NA)]
    axes[1].bar(np.arange(len(order)), order["platinum_score"].fillna(0).to_numpy(), color=colours, width=1.0,
                edgecolor="white", linewidth=0.5)
    if threshold is not None:
        axes[1].axhline(threshold, color="k", ls="--", lw=1, label=f"τ_cert = {threshold:g}")
        axes[1].legend(loc="upper right")
    axes[1].set_xlabel("items by P_i (orange: certified, blue: not, grey: undetermined)")
    axes[1].set_ylabel("platinum score P_i")
    axes[1].set_title("Platinum scores")
    counts = order.loc[order["certified"].fillna(False).astype(bool), "certifying_concept"].value_counts()
    counts = counts.reindex(q.index, fill_value=0)
    axes[2].barh(list(counts.index)[::-1], counts.to_numpy()[::-1], color="#dd8452")
    axes[2].set_xlabel("certified items")
    axes[2].set_title("Certifying concept")
    return fig


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def write_report(path: str | Path, items: pd.DataFrame, concepts: pd.DataFrame, *, rule: str,
                 stats: dict, failures: pd.DataFrame, threshold: float | None = None,
                 notes: list[str] | None = None) -> Path:
    """Write an HTML report a curator can read: summary, figure, concept table, certified items,
    failures (with the raw replies), and any notes."""
    path = Path(path)
    img = _png(certification_figure(items, concepts, threshold))
    cert = items["certified"]
    n_yes, n_na = int(cert.fillna(False).astype(bool).sum()), int(cert.isna().sum())
    summary = (
        f"<p><b>{len(items)}</b> items, <b>{n_yes}</b> certified platinum, <b>{n_na}</b> undetermined "
        f"(missing judgments could change the verdict), rule: {html.escape(rule)}.<br>"
        f"Judge calls: {stats.get('calls_made', 0)} made, {stats.get('cached', 0)} from cache, "
        f"{stats.get('failed', 0)} failed after retries ({stats.get('http_requests', 0)} HTTP requests).</p>"
    )
    fail_cols = [c for c in ("judge", "kind", "item_id", "concept", "sample", "error", "raw_reply") if c in failures.columns]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Platinum certification report</title>",
        "<style>body{font-family:sans-serif;max-width:1200px;margin:2em auto}table{border-collapse:collapse;"
        "font-size:90%}td,th{border:1px solid #ccc;padding:2px 6px}</style></head><body>",
        "<h1>Platinum certification report</h1>", summary,
        f"<img alt='certification figure' style='max-width:100%' src='data:image/png;base64,{img}'>",
        "<h2>Concepts</h2>",
        "<p>W: welfare alignment (1-5), K: marginal improvement cost, N: measurement noise, "
        "Q = γ(W) η(K) π(N). Agreement columns give the share of judge replies equal to the aggregate.</p>",
        concepts.to_html(float_format=lambda x: f"{x:.3g}"),
        "<h2>Certified items</h2>",
        items[items["certified"].fillna(False).astype(bool)].sort_values("platinum_score", ascending=False)
        .head(200).to_html(float_format=lambda x: f"{x:.3g}"),
        f"<h2>Failed judge calls ({len(failures)})</h2>",
        "<p>Recorded as failed after retries, never filled in. Calls that gave up on rate limits, server "
        "errors or timeouts are not cached, so a plain rerun asks them again; invalid replies and other "
        "errors are cached, and are redone with --retry-failed once the cause is fixed.</p>",
        failures[fail_cols].head(200).to_html(index=False) if len(failures) else "<p>None.</p>",
    ]
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
