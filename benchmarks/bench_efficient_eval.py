"""Efficient evaluation on LiveCodeBench code generation, validated on models it never saw.

Two held-out splits of the 72 models that answered the 400 code-generation problems every
model answered: by release date (models released on or after ``--split-date`` are new) and by
model family (whole families, e.g. every OpenAI or every Qwen-derived model, are held out, so
no model's variants sit on both sides; the family of each model is read from its name by
``FAMILIES``). For each split the item model (2PL, binomial pass@1 over the samples behind each
score, over-dispersion from Pearson's statistic) is fitted to the training models only, and
the held-out models' full-benchmark accuracy is estimated from ``k`` items.

For k = 25, 50, 100 and each subset method (Fisher information, anchor points, stratified
random, random; ``--repeats`` draws of the random ones) and estimator it reports

* ``mae_pts``: mean absolute error of the estimated accuracy (percentage points);
* ``coverage90``: share of held-out models whose 90% interval holds the true accuracy;
* ``kendall_tau``: Kendall's tau between the estimated and the true accuracies;
* ``mdad_pts``: the subset's minimum detectable accuracy difference
  (:func:`platinum_jax.efficient.irt_mdad` at the held-out models' mean ability, 5% level,
  80% power, in points) and ``below_mdad``: the share of pairs of held-out models whose true
  accuracies differ by less than it (pairs the subset cannot be expected to separate);
* ``width_pts``: mean interval width.

Estimators: ``irt`` (observed items plus the item model's prediction for the rest; interval
widened by :func:`platinum_jax.efficient.interval_scale`, calibrated by refitting without each
fold of the training models), ``assisted`` (:func:`platinum_jax.efficient.assisted_scores`:
the item model's prediction corrected by the design-weighted mean residual; design-based,
finite-population-corrected interval, not calibrated) and ``mean`` (each method's own weighted
mean; random and stratified subsets get the simple-random-sampling t interval with the
finite-population correction, the others none). ``cat`` rows run
:class:`platinum_jax.efficient.AdaptiveTest` with budget k, randomesque 2 and Sympson-Hetter
exposure control calibrated on simulated test-takers (cap ``max(0.1, 1.6 k / 400)``: a cap
below ``k / 400``, the mean exposure, is impossible); their score is the ``irt`` estimate from
the items asked, and they also report ``items_used``, ``max_exposure`` and ``overlap``.

Run from the repository root: ``python benchmarks/bench_efficient_eval.py`` (``--quick``: 3
repeats and 3 calibration folds). Ends with one JSON line per case, ``{"name", "ours_s",
"baseline_s", "ratio", "max_abs_diff"}``: the time of the estimate against the plain mean and,
as ``max_abs_diff``, its MAE (points) minus that of random subsets' plain means.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path("..") / "shared" / "data" / "item-level" / "livecodebench"
KS = (25, 50, 100)
METHODS = ("fisher", "anchor", "stratified", "random")
# Model family from the name: base-model lineage, fine-tunes with their base.
FAMILIES = (
    ("anthropic", r"^Claude"), ("openai", r"^(GPT|O\d)"), ("google", r"^(Gemini|Google)"),
    ("deepseek", r"^(DSCoder|DeepSeek|OC-DS|MagiCoderS-DS|WCoder-33B)"),
    ("qwen", r"^(Qwen|CodeQwen|QwQ|Dracarys-72B|Dracarys2-72B|Smaug)"),
    ("llama", r"^(LLama|CodeLlama|Cllama|Phind|WCoder-34B|MagiCoderS-CL|Dracarys.*Llama)"),
    ("mistral", r"^(Codestral|Mistral|Eurux)"), ("cohere", r"^Command"), ("dbrx", r"^DBRX"),
    ("xai", r"^Grok"), ("bigcode", r"^(StarCoder|StableCode)"),
)


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


def family(name: str) -> str:
    for fam, pattern in FAMILIES:
        if re.search(pattern, name):
            return fam
    raise ValueError(f"model {name!r} matches no family of FAMILIES; add it")


def family_split(names, share: float, seed: int):
    """Whole families, in a seeded random order, until ``share`` of the models are held out."""
    fam = pd.Series([family(n) for n in names], index=names)
    order = np.random.default_rng(seed).permutation(sorted(fam.unique()))
    held = []
    for f in order:
        if len(held) >= share * len(names):
            break
        held.extend(fam.index[fam == f])
    return pd.Index(held), sorted(fam[held].unique())


def simulated_takers(bank, n: int, seed: int, trials: float = 10.0):
    """Test-takers drawn from the fitted model: abilities of the fitted models plus noise,
    binomial pass rates over ``trials`` samples (the calibration set of Sympson-Hetter)."""
    from platinum_jax.data import ResponseTable

    rng = np.random.default_rng(seed)
    fitted = np.asarray(bank.fit.theta.subjects, np.float64).ravel()
    theta = rng.choice(fitted, n) + 0.3 * rng.standard_normal(n)
    grid = np.asarray(bank.grid)
    g = np.clip(np.searchsorted(grid, theta), 0, len(grid) - 1)
    mu = np.asarray(bank.mean)[g]  # (n, N)
    y = rng.binomial(int(trials), mu) / trials
    s, i = np.meshgrid(np.arange(n), np.arange(bank.n_items), indexing="ij")
    return ResponseTable.from_frame(pd.DataFrame({
        "subject": [f"sim{k:04d}" for k in s.ravel()], "item": bank.items[i.ravel()],
        "response": y.ravel(), "trials": trials}), name="simulated test-takers")


def _tau(a, b) -> float:
    from scipy.stats import kendalltau

    return float(kendalltau(a, b).statistic)


def _srs_interval(wide, sel, n_total, interval=0.9):
    """Plain weighted mean with the simple-random-sampling t interval (finite-population
    corrected), per subject."""
    from scipy.stats import t as student

    y = wide[sel.index]
    k = len(sel)
    mean = (y * sel.weight).sum(axis=1)
    se = y.std(axis=1, ddof=1) / np.sqrt(k) * np.sqrt(1 - k / n_total)
    q = student.ppf(0.5 + interval / 2, k - 1)
    return mean, mean - q * se, mean + q * se


def evaluate(frame, held, label, args, times):
    """Every method on one split; rows of the table."""
    from platinum_jax.data import ResponseTable
    from platinum_jax.efficient import (
        AdaptiveTest,
        assisted_scores,
        cross_fitted_banks,
        estimate_scores,
        interval_scale,
        irt_mdad,
        irt_mdad_subjects,
        item_bank,
        screen_items,
        select_items,
        simulate_adaptive,
        sympson_hetter,
    )
    from platinum_jax.inference import fit_map
    from platinum_jax.models import Binomial, TwoPL

    train = ResponseTable.from_frame(frame[~frame.subject.isin(held)], name="training models")
    test = frame[frame.subject.isin(held)]
    t0 = time.perf_counter()
    fit = fit_map(TwoPL(likelihood=Binomial()), train)
    bank = item_bank(fit)
    banks = cross_fitted_banks(TwoPL(likelihood=Binomial()), train, folds=args.folds)
    flagged = int(screen_items(bank).flagged.sum())
    print(f"[{label}] fit: {train.n_subjects} training x {train.n_items} items, held out "
          f"{len(held)}; phi = {bank.dispersion:.3f}; {flagged} items flagged by screening; "
          f"{time.perf_counter() - t0:.1f} s with {args.folds} cross-fitted banks")
    truth = test.groupby("subject").response.mean()
    n_total = bank.n_items
    held_table = ResponseTable.from_frame(test, name="held-out models")
    full = estimate_scores(bank, held_table)
    centre = float(full.ability.mean())
    gaps = np.abs(truth.to_numpy()[:, None] - truth.to_numpy()[None])
    pair_gaps = gaps[np.triu_indices(len(truth), 1)]

    def row(method, k, est, rep, score, lo=None, hi=None, mdad=np.nan, **extra):
        cover = width = np.nan
        if lo is not None:
            cover = float(((lo <= truth) & (truth <= hi)).mean())
            width = 100 * float(np.mean(hi - lo))
        return dict(split=label, k=k, method=method, estimator=est, rep=rep,
                    mae_pts=100 * float(np.mean(np.abs(score - truth))), coverage90=cover,
                    kendall_tau=_tau(score, truth), mdad_pts=100 * mdad,
                    below_mdad=float(np.mean(pair_gaps < mdad)), width_pts=width, **extra)

    rows = []
    for k in KS:
        for method in METHODS:
            reps = 1 if method == "fisher" else args.repeats
            scale, _ = interval_scale(banks, k, method=method)
            for rep in range(reps):
                sel = select_items(bank, k, method, seed=rep)
                mdad = float(irt_mdad(bank, sel.index, centre).mdad_score.iloc[0])
                sub = ResponseTable.from_frame(test[test.item.isin(sel.index)], name="subset")
                t = time.perf_counter()
                est = estimate_scores(bank, sub, seed=rep, scale=scale).reindex(truth.index)
                times["irt"].append(time.perf_counter() - t)
                rows.append(row(method, k, "irt", rep, est.score, est.score_lo, est.score_hi,
                                mdad, scale=scale))
                t = time.perf_counter()
                ast = assisted_scores(bank, sub, sel).reindex(truth.index)
                times["assisted"].append(time.perf_counter() - t)
                rows.append(row(method, k, "assisted", rep, ast.score, ast.score_lo,
                                ast.score_hi, mdad))
                wide = test[test.item.isin(sel.index)].pivot(index="subject", columns="item",
                                                              values="response")
                t = time.perf_counter()
                mean, lo, hi = _srs_interval(wide.reindex(truth.index), sel, n_total)
                times["mean"].append(time.perf_counter() - t)
                if method not in ("random", "stratified"):
                    lo = hi = None
                rows.append(row(method, k, "mean", rep, mean, lo, hi, mdad))
        # Adaptive testing with exposure control, calibrated on simulated test-takers.
        cap = max(0.1, 1.6 * k / n_total)
        cat = AdaptiveTest(bank, budget=k, randomesque=2)
        cat = sympson_hetter(cat, simulated_takers(bank, args.takers, seed=k), cap=cap,
                             iterations=args.sh_iterations)
        run = simulate_adaptive(cat, held_table, seed=k)
        scale, _ = interval_scale(banks, k, method="cat")
        asked = test.merge(run.trace[["subject", "item"]], on=["subject", "item"])
        est = estimate_scores(bank, ResponseTable.from_frame(asked, name="asked"), seed=k,
                              scale=scale).reindex(truth.index)
        mdad = float(irt_mdad_subjects(bank, run).mdad_score.median())
        rows.append(row("cat", k, "irt", 0, est.score, est.score_lo, est.score_hi, mdad,
                        scale=scale, items_used=float(run.subjects.n_items.mean()),
                        max_exposure=float(run.items.exposure.max()), overlap=run.overlap,
                        cap=cap))
        # Kendall's tau of the running score against the truth, item by item.
        curve = run.trace.pivot(index="subject", columns="step", values="score").reindex(
            truth.index)
        for step in (4, 9, 19, 39, 79):
            if step < curve.shape[1]:
                print(f"[{label}] cat budget {k} (cap {cap:.3f}): tau after {step + 1} items = "
                      f"{_tau(curve[step], truth):.3f}")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--split-date", default="2023-08-30",
                    help="models released on or after this date are held out (date split)")
    ap.add_argument("--family-share", type=float, default=0.3,
                    help="share of the models the family split holds out (whole families)")
    ap.add_argument("--repeats", type=int, default=10, help="draws of the random methods")
    ap.add_argument("--folds", type=int, default=5, help="folds of the interval calibration")
    ap.add_argument("--takers", type=int, default=400,
                    help="simulated test-takers for the Sympson-Hetter calibration")
    ap.add_argument("--sh-iterations", type=int, default=8)
    ap.add_argument("--quick", action="store_true", help="3 repeats, 3 folds, 200 takers")
    ap.add_argument("--plot", type=Path, default=Path("docs/img/efficient_eval.png"))
    ap.add_argument("--table", type=Path, default=None, help="also write the table as CSV")
    args = ap.parse_args()
    if args.quick:
        args.repeats, args.folds, args.takers = 3, 3, 200


    from platinum_jax._runtime import enable_float64

    enable_float64()
    frame, dates = load(args.data)
    by_date = dates.index[dates >= pd.Timestamp(args.split_date)]
    by_family, fams = family_split(pd.Index(sorted(frame.subject.unique())), args.family_share,
                                   seed=0)
    print(f"date split: {len(by_date)} models released from {args.split_date} held out; "
          f"family split: {len(by_family)} models of families {fams} held out")
    times = {"irt": [], "mean": [], "assisted": []}
    rows = evaluate(frame, by_date, "date", args, times)
    rows += evaluate(frame, by_family, "family", args, times)
    res = pd.DataFrame(rows)
    cols = ["mae_pts", "coverage90", "kendall_tau", "mdad_pts", "below_mdad", "width_pts",
            "items_used", "max_exposure", "overlap"]
    table = (res.groupby(["split", "k", "method", "estimator"], sort=False)
             [[c for c in cols if c in res]].mean().round(3))
    with pd.option_context("display.max_rows", 300, "display.width", 160):
        print(table.to_string())
    if args.table is not None:
        table.to_csv(args.table)
    _plot(table, args.plot)

    irt_ms, mean_ms = np.median(times["irt"]), np.median(times["mean"])
    ast_ms = np.median(times["assisted"])
    for split in ("date", "family"):
        for k in KS:
            base = table.loc[(split, k, "random", "mean"), "mae_pts"]
            for method in METHODS:
                for est, ours_s in (("assisted", ast_ms), ("irt", irt_ms)):
                    ours = table.loc[(split, k, method, est), "mae_pts"]
                    print(json.dumps({"name": f"{split}_{method}_{est}_k{k}",
                                      "ours_s": float(ours_s), "baseline_s": float(mean_ms),
                                      "ratio": float(mean_ms / ours_s),
                                      "max_abs_diff": round(float(ours - base), 3)}))
    return 0


def _plot(table: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from platinum_jax._outputs import atomic_write

    t = table.reset_index()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    for ax, split in zip(axes, ("date", "family"), strict=True):
        part_s = t[t.split == split]
        for (method, est), part in part_s.groupby(["method", "estimator"], sort=False):
            if est == "mean" and method != "random":
                continue
            if est == "assisted" and method not in ("random", "stratified"):
                continue
            style = {"mean": "--", "assisted": "-."}.get(est, "-")
            label = {"irt": f"{method} + item model",
                     "assisted": f"{method}, residual-corrected"}.get(
                         est, f"{method}, plain mean")
            ax.plot(part.k, part.mae_pts, style, marker="o", label=label)
        ax.set_xscale("log")
        ax.set_xticks(KS, [str(k) for k in KS])
        ax.set_xlabel("items evaluated (k of 400)")
        ax.set_title(f"LiveCodeBench codegen, held out by {split}")
    axes[0].set_ylabel("mean absolute error of accuracy (points)")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, fig.savefig, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
