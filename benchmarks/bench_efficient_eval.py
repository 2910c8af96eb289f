"""Efficient evaluation on LiveCodeBench code generation, models held out by release date.

The item model (2PL, binomial pass@1 over the samples behind each score, over-dispersion from
Pearson's statistic) is fitted to the models released before ``--split-date``; the newer
models are the "new AI models" whose full-benchmark accuracy is estimated from ``k`` items.
The benchmark is the 400 code-generation problems every model on the leaderboard answered,
so each held-out model's truth is its mean pass@1 over all 400.

For k = 10, 25, 50, 100, 200 and each subset method (Fisher information, anchor points,
stratified random, random; ``--repeats`` draws of the random ones) it reports:

* ``mae_pts``: mean absolute error of the estimated accuracy, in percentage points;
* ``spearman``: rank correlation of the estimated abilities with the abilities estimated from
  all 400 items (for the plain means: of the estimated accuracies with the true ones);
* ``coverage90``: share of held-out models whose 90% interval holds the true accuracy, the
  interval widened by ``scale`` from :func:`platinum_jax.efficient.interval_scale` (calibrated
  on the older models only, by refitting without each fold of them);
* ``width_pts``: mean width of those intervals;
* ``coverage90_model``: the coverage of the model's own interval (``scale = 1``; for the
  equal-tailed interval, its calibrated half-width divided by the scale about its midpoint).

Estimators: ``irt`` (observed items plus the item model's prediction for the rest, with the
interval of :func:`platinum_jax.efficient.estimate_scores`, widened by the calibrated scale),
``assisted`` (the model-assisted difference estimate of
:func:`platinum_jax.efficient.assisted_scores`: the item model's prediction over all 400
problems corrected by the design-weighted mean residual of the drawn ones, with its
design-based, finite-population-corrected interval, not calibrated; the interval is justified
for the random and stratified subsets only) and ``mean`` (each method's own weighted mean of
the subset, no model; random subsets: the plain mean, what one does without an item model).
``cat`` rows run an adaptive test with budget k instead of a fixed subset.

Run from the repository root: ``python benchmarks/bench_efficient_eval.py``. Ends with one
JSON line per case, ``{"name", "ours_s", "baseline_s", "ratio", "max_abs_diff"}``: the time of
the IRT (or assisted) estimate against the plain mean (the peer that needs no model) and, as
``max_abs_diff``, its MAE (points) minus that of random subsets' plain means, negative when the
item model helps.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path("..") / "shared" / "data" / "item-level" / "livecodebench"
KS = (10, 25, 50, 100, 200)


def load(data: Path):
    r = pd.read_csv(data / "responses.csv")
    r = r[r.benchmark == "livecodebench_codegen"]
    models = pd.read_csv(data / "models.csv").set_index("model")
    counts = r.groupby("item").model.nunique()
    core = counts.index[counts == r.model.nunique()]  # the problems every model answered
    r = r[r.item.isin(core)]
    one_sample = r.model.str.contains(r"\((?:n|N)=1\)")
    frame = pd.DataFrame({"subject": r.model, "item": r.item, "response": r.score,
                          "trials": np.where(one_sample, 1.0, 10.0)})
    dates = pd.to_datetime(models.loc[r.model.unique(), "release_date_ms"], unit="ms")
    return frame, dates


def spearman(a, b) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--split-date", default="2023-08-30",
                    help="models released on or after this date are held out")
    ap.add_argument("--repeats", type=int, default=10, help="draws of the random methods")
    ap.add_argument("--folds", type=int, default=5, help="folds of the interval calibration")
    ap.add_argument("--plot", type=Path, default=Path("docs/img/efficient_eval.png"))
    ap.add_argument("--table", type=Path, default=None, help="also write the table as CSV")
    args = ap.parse_args()

    import jax

    jax.config.update("jax_enable_x64", True)
    from platinum_jax.data import ResponseTable
    from platinum_jax.efficient import (
        adaptive_test,
        assisted_scores,
        cross_fitted_banks,
        estimate_scores,
        interval_scale,
        item_bank,
        select_items,
    )
    from platinum_jax.inference import fit_map
    from platinum_jax.models import Binomial, TwoPL

    frame, dates = load(args.data)
    held = dates.index[dates >= pd.Timestamp(args.split_date)]
    train = ResponseTable.from_frame(frame[~frame.subject.isin(held)], name="older models")
    test = frame[frame.subject.isin(held)]
    t0 = time.perf_counter()
    fit = fit_map(TwoPL(likelihood=Binomial()), train)
    bank = item_bank(fit)
    print(f"fit: {train.n_subjects} older models x {train.n_items} items, converged "
          f"{fit.converged}, {time.perf_counter() - t0:.1f} s; dispersion phi = "
          f"{bank.dispersion:.3f}; held out {len(held)} models released from {args.split_date}")

    t0 = time.perf_counter()
    banks = cross_fitted_banks(TwoPL(likelihood=Binomial()), train, folds=args.folds)
    print(f"{args.folds} cross-fitted banks of the older models for calibrating the intervals, "
          f"{time.perf_counter() - t0:.1f} s")
    truth = test.groupby("subject").response.mean()
    # Why the plain item-model estimate stalls: even from all 400 items, the ability-based
    # prediction of the mean misses the newer models by more than the models it was fitted to.
    every = select_items(bank, bank.n_items, "random")
    for label, part in (("held-out", test), ("fitted", frame[~frame.subject.isin(held)])):
        gap = assisted_scores(bank, ResponseTable.from_frame(part, name=label), every).residual
        print(f"{label} models: mean |accuracy - item-model prediction from all "
              f"{bank.n_items} items| = {100 * np.mean(np.abs(gap)):.2f} points")
    full = estimate_scores(bank, ResponseTable.from_frame(test, name="held-out models"))
    truth_ability = full.ability.reindex(truth.index)

    rows, times = [], {"irt": [], "mean": [], "assisted": []}
    for k in KS:
        for method in ("fisher", "anchor", "stratified", "random"):
            reps = 1 if method == "fisher" else args.repeats
            scale, _ = interval_scale(banks, k, method=method)
            for rep in range(reps):
                sel = select_items(bank, k, method, seed=rep)
                sub = test[test.item.isin(sel.index)]
                t = time.perf_counter()
                est = estimate_scores(bank, ResponseTable.from_frame(sub, name="subset"),
                                      seed=rep, scale=scale).reindex(truth.index)
                times["irt"].append(time.perf_counter() - t)
                t = time.perf_counter()
                wide = sub.pivot(index="subject", columns="item", values="response")
                plain = (wide[sel.index] * sel.weight).sum(axis=1).reindex(truth.index)
                times["mean"].append(time.perf_counter() - t)
                cover = (est.score_lo <= truth) & (truth <= est.score_hi)
                # The model's own interval: the calibrated one shrunk back by the scale.
                half = (est.score_hi - est.score_lo) / 2 / scale
                mid = (est.score_hi + est.score_lo) / 2
                cover_model = (mid - half <= truth) & (truth <= mid + half)
                rows.append(dict(method=method, k=k, estimator="irt", rep=rep, scale=scale,
                                 coverage90_model=float(cover_model.mean()),
                                 mae_pts=100 * np.mean(np.abs(est.score - truth)),
                                 spearman=spearman(est.ability, truth_ability),
                                 coverage90=float(cover.mean()),
                                 width_pts=100 * float(np.mean(est.score_hi - est.score_lo))))
                t = time.perf_counter()
                ast = assisted_scores(bank, ResponseTable.from_frame(sub, name="subset"), sel,
                                      ).reindex(truth.index)
                times["assisted"].append(time.perf_counter() - t)
                rows.append(dict(method=method, k=k, estimator="assisted", rep=rep,
                                 mae_pts=100 * np.mean(np.abs(ast.score - truth)),
                                 spearman=spearman(ast.ability, truth_ability),
                                 coverage90=float(((ast.score_lo <= truth)
                                                   & (truth <= ast.score_hi)).mean()),
                                 width_pts=100 * float(np.mean(ast.score_hi - ast.score_lo))))
                rows.append(dict(method=method, k=k, estimator="mean", rep=rep,
                                 mae_pts=100 * np.mean(np.abs(plain - truth)),
                                 spearman=spearman(plain, truth),
                                 coverage90=np.nan, width_pts=np.nan))
        scale, _ = interval_scale(banks, k, method="cat")
        cat = adaptive_test(bank, ResponseTable.from_frame(test, name="held-out models"),
                            budget=k, scale=scale).subjects.reindex(truth.index)
        half = (cat.score_hi - cat.score_lo) / 2 / scale
        mid = (cat.score_hi + cat.score_lo) / 2
        rows.append(dict(method="cat", k=k, estimator="irt", rep=0, scale=scale,
                         coverage90_model=float(((mid - half <= truth)
                                                 & (truth <= mid + half)).mean()),
                         mae_pts=100 * np.mean(np.abs(cat.score - truth)),
                         spearman=spearman(cat.ability, truth_ability),
                         coverage90=float(((cat.score_lo <= truth) & (truth <= cat.score_hi)
                                           ).mean()),
                         width_pts=100 * float(np.mean(cat.score_hi - cat.score_lo))))

    res = pd.DataFrame(rows)
    table = (res.groupby(["k", "method", "estimator"], sort=False)
             [["mae_pts", "spearman", "coverage90", "width_pts", "coverage90_model", "scale"]].mean().round(3))
    with pd.option_context("display.max_rows", 200, "display.width", 120):
        print(table.to_string())
    if args.table is not None:
        table.to_csv(args.table)
    _plot(table, args.plot, len(held))

    irt_ms, mean_ms = np.median(times["irt"]), np.median(times["mean"])
    ast_ms = np.median(times["assisted"])
    for k in KS:
        for method in ("stratified", "random"):
            ours = table.loc[(k, method, "assisted"), "mae_pts"]
            base = table.loc[(k, "random", "mean"), "mae_pts"]
            print(json.dumps({"name": f"{method}_assisted_k{k}", "ours_s": float(ast_ms),
                              "baseline_s": float(mean_ms), "ratio": float(mean_ms / ast_ms),
                              "max_abs_diff": round(float(ours - base), 3)}))
    for k in KS:
        for method in ("fisher", "anchor", "stratified", "random", "cat"):
            ours = table.loc[(k, method, "irt"), "mae_pts"]
            base = table.loc[(k, "random", "mean"), "mae_pts"]
            print(json.dumps({"name": f"{method}_irt_k{k}", "ours_s": float(irt_ms),
                              "baseline_s": float(mean_ms), "ratio": float(mean_ms / irt_ms),
                              "max_abs_diff": round(float(ours - base), 3)}))
    return 0


def _plot(table: pd.DataFrame, path: Path, n_held: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from platinum_jax._outputs import atomic_write

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    t = table.reset_index()
    for (method, est), part in t.groupby(["method", "estimator"], sort=False):
        if est == "mean" and method not in ("random", "anchor"):
            continue
        if est == "assisted" and method not in ("random", "stratified"):
            continue
        style = {"mean": "--", "assisted": "-."}.get(est, "-")
        label = {"irt": f"{method} + item model",
                 "assisted": f"{method} + item model, residual-corrected"}.get(
                     est, f"{method}, plain weighted mean")
        ax.plot(part.k, part.mae_pts, style, marker="o", label=label)
    ax.axhline(2.0, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_xticks(KS, [str(k) for k in KS])
    ax.set_xlabel("items evaluated (k of 400)")
    ax.set_ylabel("mean absolute error of accuracy (points)")
    ax.set_title(f"LiveCodeBench codegen: {n_held} newest models held out")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, fig.savefig, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
