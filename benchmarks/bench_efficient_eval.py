"""Efficient evaluation on LiveCodeBench code generation, validated on models it never saw.

Two held-out splits of the 72 models that answered the 400 code-generation problems every
model answered: by date (models whose date is on or after ``--split-date`` are new; the date
is LiveCodeBench's own per model, ``release_date_ms`` of ``models.csv``, which is not always
the public release: Claude-3-Opus carries 2023-04-30) and by
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
* ``width_pts``: mean interval width;
* ``cal_coverage`` (``combined`` rows): the calibration's own estimate of its coverage, the
  share of calibration models held by the interval calibrated on the other folds (what
  ``platinum-jax score`` writes to calibration.json), beside ``coverage90``, the realised one.

Estimators: ``irt`` (observed items plus the item model's prediction for the rest; interval
widened by :func:`platinum_jax.efficient.interval_scale`, calibrated by refitting without each
fold of the training models), ``combined`` (:func:`platinum_jax.efficient.combined_scores`,
the default: the item-model estimate plus the observed residuals shrunk by an empirical-Bayes
weight whose bias spread and interval factor :func:`platinum_jax.efficient.fit_bias_sd`
chooses on the same calibration folds, for every design), ``assisted``
(:func:`platinum_jax.efficient.assisted_scores`, random and stratified subsets: the unshrunk
difference estimate with its design-based interval), ``mean`` (each method's own weighted
mean; random and stratified subsets get the simple-random-sampling t interval with the
finite-population correction, the others none) and ``gp_irt`` (tinyBenchmarks' combination
``lambda * mean + (1 - lambda) * irt`` with ``lambda = b^2 / (b^2 + sigma^2)``: ``b^2`` the
item-model estimate's squared error on the calibration folds, ``sigma^2`` the plain mean's
design variance; the baseline to beat). For random subsets two bounds that no honest method
can use: ``oracle_irt`` and ``oracle_difference`` score from the same items with item
parameters fitted to every model, the held-out ones included, so what remains is the error
that ``k`` items leave even when the item model knows the new models' items.

``cat`` rows run :class:`platinum_jax.efficient.AdaptiveTest` with budget k, randomesque 2 and
Sympson-Hetter exposure control calibrated on simulated test-takers (cap
``max(0.1, 1.6 k / 400)``: a cap below ``k / 400``, the mean exposure, is impossible), scored
by ``irt`` and ``combined`` from the items asked; they report ``items_used``,
``max_exposure`` (on the held-out models), ``max_exposure_sim`` (on fresh simulated takers
of the calibration population) and ``overlap``. Rows ``k = "80@cap"`` trace the trade-off at a
fifth of the items: Kendall's tau of the full-benchmark ranking against the exposure cap
(``--caps``; 1 is no control); rows ``k = "L@0.1"`` run shorter tests (``--cat-lengths``)
under the cap ``--cat-cap`` (a cap ``c`` allows tests of at most ``c`` times the bank).
Every interval of the ``combined`` rows is calibrated for its own method and ``k`` by
:func:`platinum_jax.efficient.fit_bias_sd` (the selection replayed on the calibration folds;
studentised or one width, by cross-conformal coverage: column ``absolute_form``).

Run from the repository root: ``python benchmarks/bench_efficient_eval.py`` (``--quick``: few
repeats and folds). Ends with one JSON line per case (split, method, estimator, k),
``{"name", "ours_s", "baseline_s", "ratio", "max_abs_diff", "mae_pts", "baseline_mae_pts",
"mae_ratio", "coverage90", "kendall_tau"}``: the time of the estimate against the plain mean,
and its MAE (points) against that of random subsets' plain means (``max_abs_diff`` the
difference, ``mae_ratio`` the ratio; the goal is at most 2/3 at k = 50).
"""

from __future__ import annotations

import argparse
import dataclasses
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


def _gp_weight(bias_fit, wide, sel, n_total):
    """tinyBenchmarks' gp-IRT weight on the subset's plain mean, ``b^2 / (b^2 + sigma^2)``:
    ``b^2`` the item-model estimate's squared error on the calibration models (from its mean
    absolute error there, taken as normal), ``sigma^2`` the plain mean's design variance."""
    b2 = (float(bias_fit.cv.iloc[0]) * np.sqrt(np.pi / 2)) ** 2
    k = len(sel)
    sigma2 = wide[sel.index].var(axis=1, ddof=1) / k * (1 - k / n_total)
    return b2 / (b2 + sigma2)


def evaluate(frame, held, label, args, times, oracle, groups):
    """Every method on one split; rows of the table. ``groups``: the calibration folds' unit
    (per training model), so that they mimic the split."""
    from platinum_jax.data import ResponseTable
    from platinum_jax.efficient import (
        assisted_scores,
        combined_scores,
        cross_fitted_banks,
        estimate_scores,
        fit_bias_sd,
        interval_scale,
        irt_mdad,
        item_bank,
        screen_items,
        select_items,
    )
    from platinum_jax.inference import fit_map
    from platinum_jax.models import Binomial, TwoPL

    train = ResponseTable.from_frame(frame[~frame.subject.isin(held)], name="training models")
    test = frame[frame.subject.isin(held)]
    t0 = time.perf_counter()
    fit = fit_map(TwoPL(likelihood=Binomial()), train)
    bank = item_bank(fit)
    banks = cross_fitted_banks(TwoPL(likelihood=Binomial()), train, folds=args.folds,
                               groups=None if args.calibration == "random" else groups)
    flagged = int(screen_items(bank).flagged.sum())
    print(f"[{label}] fit: {train.n_subjects} training x {train.n_items} items, held out "
          f"{len(held)}; phi = {bank.dispersion:.3f}; {flagged} items flagged by screening; "
          f"{time.perf_counter() - t0:.1f} s with {args.folds} cross-fitted banks", flush=True)
    truth = test.groupby("subject").response.mean()
    n_total = bank.n_items
    held_table = ResponseTable.from_frame(test, name="held-out models")
    centre = float(estimate_scores(bank, held_table).ability.mean())
    gaps = np.abs(truth.to_numpy()[:, None] - truth.to_numpy()[None])
    pair_gaps = gaps[np.triu_indices(len(truth), 1)]
    wide_all = test.pivot(index="subject", columns="item", values="response").reindex(
        truth.index)

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
    for k in [] if args.cat_only else args.ks:
        for method in METHODS:
            reps = 1 if method == "fisher" else args.repeats
            scale, _ = interval_scale(banks, k, method=method)
            bias = fit_bias_sd(banks, k, method=method, repeats=args.cv_repeats)
            print(f"[{label}] k={k} {method}: irt interval scale {scale:.2f}; combined bias_sd "
                  f"{bias.bias_sd:.4f}, {bias.form} interval (scale {bias.scale:.2f}, fixed sd "
                  f"{100 * bias.fixed_sd:.2f} pts)", flush=True)
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
                com = combined_scores(bank, sub, sel, **bias.options).reindex(truth.index)
                times["combined"].append(time.perf_counter() - t)
                rows.append(row(method, k, "combined", rep, com.score, com.score_lo,
                                com.score_hi, mdad, bias_sd=bias.bias_sd,
                                absolute_form=float(bias.form == "absolute"),
                                cal_coverage=bias.coverage))
                if method in ("random", "stratified"):
                    ast = assisted_scores(bank, sub, sel).reindex(truth.index)
                    rows.append(row(method, k, "assisted", rep, ast.score, ast.score_lo,
                                    ast.score_hi, mdad))
                t = time.perf_counter()
                mean, lo, hi = _srs_interval(wide_all[sel.index], sel, n_total)
                times["mean"].append(time.perf_counter() - t)
                if method not in ("random", "stratified"):
                    lo = hi = None
                rows.append(row(method, k, "mean", rep, mean, lo, hi, mdad))
                lam = _gp_weight(bias, wide_all, sel, n_total)
                rows.append(row(method, k, "gp_irt", rep, lam * mean + (1 - lam) * est.score))
                if method == "random":  # the bound: item parameters fitted with these models
                    o_irt = estimate_scores(oracle, sub, seed=rep).reindex(truth.index)
                    o_dif = combined_scores(oracle, sub, sel, bias_sd=np.inf).reindex(
                        truth.index)
                    rows.append(row(method, k, "oracle_irt", rep, o_irt.score))
                    rows.append(row(method, k, "oracle_difference", rep, o_dif.score))
        rows += _adaptive(bank, banks, test, truth, k, k, max(0.1, 1.6 * k / n_total), args,
                          row, label)
    # The exposure/ranking trade-off at a fifth of the items (section "CAT" of the README).
    fifth = n_total // 5
    for cap in args.caps:
        rows += _adaptive(bank, banks, test, truth, fifth, f"{fifth}@{cap:g}", cap, args, row,
                          label)
    # Shorter tests under the 10% cap: a cap c allows tests of at most c * N items.
    for length in args.cat_lengths:
        rows += _adaptive(bank, banks, test, truth, length, f"{length}@{args.cat_cap:g}",
                          args.cat_cap, args, row, label)
    return rows


def _adaptive(bank, banks, test, truth, budget, k_label, cap, args, row, label):
    """Adaptive tests of ``budget`` items, randomesque 2, Sympson-Hetter control at ``cap``
    (1: none) calibrated on simulated takers; scored by the item model and by
    :func:`combined_scores` on the items asked."""
    from platinum_jax.data import ResponseTable
    from platinum_jax.efficient import (
        AdaptiveTest,
        combined_scores,
        estimate_scores,
        fit_bias_sd,
        interval_scale,
        irt_mdad_subjects,
        simulate_adaptive,
        sympson_hetter,
    )

    groups = None
    if args.content != "none":  # content balancing: each group at its share of the bank
        items = pd.read_csv(args.data / "items.csv").set_index("item")[args.content]
        groups = items.reindex(bank.items).astype(str)
    cat = AdaptiveTest(bank, budget=budget, randomesque=2, groups=groups)
    if cap < 1:
        cat = sympson_hetter(cat, simulated_takers(bank, args.takers, seed=budget), cap=cap,
                             iterations=args.sh_iterations)
    # The held-out models are tested as new test-takers are, with the Sympson-Hetter lottery
    # alone: the hard cap counts the tests of a population simulated together, and 19 or 24
    # models cannot hold a 10% cap on tests of 25 items.
    run = simulate_adaptive(dataclasses.replace(cat, max_exposure=None),
                            ResponseTable.from_frame(test, name="held-out models"), seed=budget)
    fresh = simulate_adaptive(cat, simulated_takers(bank, args.takers, seed=budget + 1),
                              seed=budget + 1)
    scale, _ = interval_scale(banks, budget, method=cat)
    bias = fit_bias_sd(banks, budget, method=cat)
    asked = ResponseTable.from_frame(
        test.merge(run.trace[["subject", "item"]], on=["subject", "item"]), name="asked")
    est = estimate_scores(bank, asked, seed=budget, scale=scale).reindex(truth.index)
    com = combined_scores(bank, asked, None, **bias.options).reindex(truth.index)
    mdad = float(irt_mdad_subjects(bank, run).mdad_score.median())
    extra = dict(items_used=float(run.subjects.n_items.mean()),
                 max_exposure=float(run.items.exposure.max()),
                 max_exposure_sim=float(fresh.items.exposure.max()), overlap=run.overlap,
                 cap=cap)
    print(f"[{label}] cat {k_label}: tau {_tau(est.score, truth):.3f} (irt) "
          f"{_tau(com.score, truth):.3f} (combined); max exposure {extra['max_exposure']:.2f} "
          f"held out, {extra['max_exposure_sim']:.2f} simulated", flush=True)
    return [row("cat", k_label, "irt", 0, est.score, est.score_lo, est.score_hi, mdad,
                scale=scale, **extra),
            row("cat", k_label, "combined", 0, com.score, com.score_lo, com.score_hi, mdad,
                bias_sd=bias.bias_sd, absolute_form=float(bias.form == "absolute"),
                cal_coverage=bias.coverage, **extra)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--split-date", default="2023-08-30",
                    help="models whose date (LiveCodeBench's, models.csv) is on or after this "
                         "date are held out (date split)")
    ap.add_argument("--family-share", type=float, default=0.3,
                    help="share of the models the family split holds out (whole families)")
    ap.add_argument("--repeats", type=int, default=40, help="draws of the random methods")
    ap.add_argument("--cv-repeats", type=int, default=3,
                    help="draws per calibration fold when choosing the bias spread")
    ap.add_argument("--caps", type=float, nargs="+", default=[1.0, 0.5, 0.3, 0.2],
                    help="exposure caps of the adaptive tests with a fifth of the items")
    ap.add_argument("--cat-lengths", type=int, nargs="*", default=[20, 30, 36],
                    help="adaptive test lengths run under --cat-cap (rows k = LENGTH@CAP)")
    ap.add_argument("--cat-cap", type=float, default=0.1,
                    help="exposure cap of the --cat-lengths tests (default 0.1)")
    ap.add_argument("--content", choices=("none", "difficulty", "platform"), default="none",
                    help="content groups of the adaptive tests (items.csv column)")
    ap.add_argument("--cat-only", action="store_true",
                    help="only the adaptive tests at a fifth of the items and --cat-lengths")
    ap.add_argument("--folds", type=int, default=5, help="folds of the interval calibration")
    ap.add_argument("--calibration", choices=("grouped", "random"), default="grouped",
                    help="calibration folds: blocks of release dates / whole families "
                         "(mimicking the split), or models at random")
    ap.add_argument("--takers", type=int, default=400,
                    help="simulated test-takers for the Sympson-Hetter calibration")
    ap.add_argument("--sh-iterations", type=int, default=8)
    ap.add_argument("--quick", action="store_true",
                    help="5 repeats, 3 folds, 200 takers, 1 calibration draw, caps 1 and 0.2")
    ap.add_argument("--plot", type=Path, default=Path("docs/img/efficient_eval.png"))
    ap.add_argument("--table", type=Path, default=None, help="also write the table as CSV")
    ap.add_argument("--rows", type=Path, default=None,
                    help="also write every row (each draw) as CSV, after each split")
    ap.add_argument("--ks", type=int, nargs="+", default=list(KS), help="subset sizes")
    args = ap.parse_args()
    if args.quick:
        args.repeats, args.folds, args.takers, args.cv_repeats = 5, 3, 200, 1
        args.caps = [1.0, 0.2]


    from platinum_jax._runtime import enable_float64

    enable_float64()
    frame, dates = load(args.data)
    by_date = dates.index[dates >= pd.Timestamp(args.split_date)]
    by_family, fams = family_split(pd.Index(sorted(frame.subject.unique())), args.family_share,
                                   seed=0)
    print(f"date split: {len(by_date)} models released from {args.split_date} held out; "
          f"family split: {len(by_family)} models of families {fams} held out")
    from platinum_jax.data import ResponseTable
    from platinum_jax.efficient import item_bank
    from platinum_jax.inference import fit_map
    from platinum_jax.models import Binomial, TwoPL

    # The oracle bank: item parameters fitted with every model, the held-out ones included.
    oracle = item_bank(fit_map(TwoPL(likelihood=Binomial()),
                               ResponseTable.from_frame(frame, name="every model")))
    times = {"irt": [], "mean": [], "combined": []}
    # Calibration folds that mimic each split inside the training models: blocks of release
    # dates (date split), whole families (family split).
    old = dates.drop(by_date).sort_values().index
    date_groups = pd.Series(np.arange(len(old)) * args.folds // len(old), index=old)
    fam_groups = pd.Series({n: family(n) for n in frame.subject.unique()})
    rows = []
    for label, held, groups in (("date", by_date, date_groups),
                                ("family", by_family, fam_groups)):
        rows += evaluate(frame, held, label, args, times, oracle, groups)
        if args.rows is not None:
            pd.DataFrame(rows).to_csv(args.rows, index=False)
    res = pd.DataFrame(rows)
    cols = ["mae_pts", "coverage90", "cal_coverage", "absolute_form", "kendall_tau", "mdad_pts", "below_mdad", "width_pts",
            "items_used", "max_exposure", "max_exposure_sim", "overlap"]
    table = (res.groupby(["split", "k", "method", "estimator"], sort=False)
             [[c for c in cols if c in res]].mean().round(3))
    with pd.option_context("display.max_rows", 300, "display.width", 160):
        print(table.to_string())
    if args.table is not None:
        table.to_csv(args.table)
    if args.cat_only:  # no fixed subsets: neither the figure nor the comparison lines
        return 0
    _plot(table, args.plot)

    mean_s = float(np.median(times["mean"]))
    for split in ("date", "family"):
        for k in args.ks:
            base = table.loc[(split, k, "random", "mean"), "mae_pts"]
            for (sp, kk, method, est), r in table.iterrows():
                if sp != split or kk != k or (method, est) == ("random", "mean"):
                    continue
                ours_s = float(np.median(times.get(est, times["irt"])))
                print(json.dumps({"name": f"{split}_{method}_{est}_k{k}", "ours_s": ours_s,
                                  "baseline_s": mean_s, "ratio": mean_s / ours_s,
                                  "max_abs_diff": round(float(r.mae_pts - base), 3),
                                  "mae_pts": float(r.mae_pts), "baseline_mae_pts": float(base),
                                  "mae_ratio": round(float(r.mae_pts / base), 3),
                                  "coverage90": None if np.isnan(r.coverage90)
                                  else float(r.coverage90),
                                  "kendall_tau": float(r.kendall_tau)}))
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
        part_s = part_s[part_s.k.isin(list(KS))]
        shown = {("random", "mean"): ("--", "random, plain mean"),
                 ("random", "gp_irt"): (":", "random, gp-IRT (tinyBenchmarks)"),
                 ("random", "oracle_difference"): (":", "random, oracle item parameters"),
                 ("cat", "combined"): ("-", "adaptive, combined")}
        shown.update({(m, "combined"): ("-", f"{m}, combined") for m in METHODS})
        for (method, est), part in part_s.groupby(["method", "estimator"], sort=False):
            if (method, est) not in shown:
                continue
            style, name = shown[(method, est)]
            ax.plot(part.k.astype(float), part.mae_pts, style, marker="o", label=name)
        ax.set_xscale("log")
        ax.minorticks_off()
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
