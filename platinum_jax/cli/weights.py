"""``platinum-jax weights``: optimal weights and platinum items from a fitted measurement model."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from platinum_jax.cli._common import comma_numbers

DESCRIPTION = """\
Which items (or benchmarks) deserve weight, which are platinum, and how sure the data are.

Reads the output of `platinum-jax fit ... --save-draws` (FIT_DIR with draws.npz) or of
`platinum-jax stitch-bayes` (FIT_DIR with posterior.nc) and, for every draw of the fitted
parameters (Laplace draws, bootstrap replicates or posterior draws), builds
the primitives of Haupt, Reuel, Kochenderfer and Koyejo, "Optimal Aggregation Mechanisms for AI
Benchmarking and Platinum Benchmarks", and the designer's decisions:

  A  loadings, items x abilities: d(expected score of item i)/d(ability k) at the operating
     point (--operating-point: the average over the fitted subjects, or one subject's ability);
     for the Rosetta model the slope alpha_b times the link's derivative
  C  effort cost per ability (--cost; default identity in the fitted ability scale)
  M  = A C^-1 A^T
  Sigma  noise of item scores: model-implied p(1-p)/trials (binomial and Bernoulli fits) plus
     the residual variance the model leaves, with its correlation across items from a factor
     analysis of the residuals (--residual-rank; auto picks it by BIC), or with --runs the
     run-to-run covariance of repeated runs; from a stitch-bayes posterior, each draw's
     noise variance per benchmark (diagonal, as that model assumes); summary.json says which
  w  what you value (one of --target, --target-weights, --ability-weights, --regress)

then v* = (M + r Sigma)^-1 M w per draw, Definition 1's platinum flags (thresholds --tau-w,
--tau-m, --tau-e, scale-invariant), and the welfare of v* against uniform and current weights
(each at its best scale), at r and at the multiples --r-factors of r.

These platinum items are items the optimal aggregation leans on; MIT's "Platinum Benchmarks"
(relabelled, error-free subsets of benchmarks) are a different idea.

Outputs in --out: weights.csv (item, w, mean, sd, lo, hi, share_mean, p_platinum and, per r of
the grid, p_platinum_r=...), sensitivity.csv (welfare gains and expected platinum count per r),
summary.json (primitives used, welfare gains with intervals, settings) and weights.png.
"""

EPILOG = """\
examples:
  platinum-jax fit scores_long.csv --model rosetta --method laplace --save-draws --out fit
  platinum-jax weights fit --target GPQA-diamond,FrontierMath-2025-02-28-Private --out w
      what deserves weight when performance on two hard benchmarks is what matters
  platinum-jax fit scores_long.csv --model rosetta --likelihood gaussian --noise-per-item \
      --method laplace --save-draws --out fit
  platinum-jax weights fit --target "GPQA diamond" --out w
      a noise level per benchmark; weights then resamples the models (200 refits, about a
      minute) for intervals that cover the true weights at their nominal rate
      (--subject-bootstrap 0: the fit's Laplace draws, seconds)
  platinum-jax stitch-bayes scores_long.csv --out bayes
  platinum-jax weights bayes --target "GPQA diamond" --out w
      the posterior draws of the Bayesian stitching model (noise per benchmark)
  platinum-jax weights fit --ability-weights 1 --r 4 --out w
      value the capability itself; a more risk-averse lab (r = 4)
  platinum-jax weights irt --regress usage.csv --current current.csv --out w
      w from a regression of a usage measure (columns subject,target) on item scores, and the
      gain over the benchmark's current weights (columns item,weight)
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "weights",
        help="optimal weights and platinum items with posterior intervals, from a fit",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("fit_dir", metavar="FIT_DIR",
                   help="output directory of `platinum-jax fit --save-draws` or of "
                   "`platinum-jax stitch-bayes`")
    p.add_argument("--out", required=True, help="output directory (created if missing)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the files an earlier `weights` wrote in --out")
    t = p.add_argument_group("what you value (exactly one)")
    t.add_argument("--target", metavar="NAMES",
                   help="comma-separated items, or groups (benchmarks) of items: w is their "
                   "equal-weight average")
    t.add_argument("--target-weights", metavar="CSV", help="columns item,weight: w as given")
    t.add_argument("--ability-weights", metavar="NUMBERS",
                   help="comma-separated value of one unit of each ability (w is the "
                   "minimum-norm w with A^T w equal to it)")
    t.add_argument("--regress", metavar="CSV",
                   help="columns subject,target: w from a ridge regression of the target on the "
                   "subjects' item scores")
    t.add_argument("--ridge", type=float, default=0.1,
                   help="relative ridge of --regress (default 0.1)")
    m = p.add_argument_group("primitives")
    m.add_argument("--cost", metavar="NUMBERS",
                   help="effort cost per ability, comma-separated (default 1 each)")
    m.add_argument("--operating-point", default="average", metavar="SUBJECT",
                   help="where scores are linearised: 'average' (default) or a subject's name")
    m.add_argument("--residual-rank", default="auto",
                   help="rank of the residual correlation across items: auto (BIC, default), "
                   "or an integer (0: diagonal Sigma)")
    m.add_argument("--runs", metavar="CSV",
                   help="repeated runs (columns subject,item,run,response): Sigma becomes their "
                   "run-to-run covariance (rank by --residual-rank; auto: Marchenko-Pastur)")
    m.add_argument("--current", metavar="CSV",
                   help="columns item,weight: the benchmark's current weights (default uniform)")
    u = p.add_argument_group("uncertainty (Gaussian fits of benchmarks as items)")
    u.add_argument("--subject-bootstrap", type=_replicates, default="auto", metavar="R",
                   help="instead of the fit's draws, resample the subjects (AI models) R times "
                        "and re-estimate the fit, each benchmark's noise and the residual "
                        "correlation per replicate (needs a Gaussian fit with free noise). "
                        f"Default auto: {AUTO_REPLICATES} replicates for a fit with a noise "
                        "level per benchmark (fit --noise-per-item) when every item has at "
                        f"least {AUTO_MIN_SCORES} scores; its Laplace draws hold the noise "
                        "estimates fixed and under-cover (on 20 synthetic worlds of the Epoch "
                        "table's size, 0.75 of true weights in 90%% intervals, against 0.86 for "
                        "the bootstrap). The fit's own draws otherwise, and when an item has "
                        "fewer scores (the real Epoch table: most replicates fail there). 0: the "
                        "fit's draws")
    u.add_argument("--jackknife-groups", type=int, default=None, metavar="G",
                   help="with --subject-bootstrap and --interval-method bca: leave out each of "
                        "G random groups of subjects once, for the acceleration of the BCa "
                        "intervals (G refits; default 20 with bca, else 0; 0: bias-corrected "
                        "intervals without acceleration)")
    u.add_argument("--interval-method", choices=("auto", "percentile", "bca"), default="auto",
                   help="intervals of v*: percentile (quantiles of the draws; what auto, the "
                        "default, uses: it covered better on the benchmark worlds) or bca "
                        "(bias-corrected and accelerated; needs --subject-bootstrap)")
    d = p.add_argument_group("decisions")
    d.add_argument("--r", type=float, default=1.0, help="risk aversion r > 0 (default 1)")
    d.add_argument("--r-factors", default="0.25,0.5,1,2,4",
                   help="multiples of r for the sensitivity grid (default 0.25,0.5,1,2,4)")
    d.add_argument("--tau-w", type=float, default=0.3, help="welfare-alignment threshold (0,1)")
    d.add_argument("--tau-m", type=float, default=0.3, help="item-loading threshold (0,1)")
    d.add_argument("--tau-e", type=float, default=1.0,
                   help="signal-to-noise-cost threshold > 0")
    d.add_argument("--interval", type=float, default=0.9,
                   help="probability of the intervals (default 0.9)")
    d.add_argument("--seed", type=int, default=0,
                   help="seed of the residual-variance draws (default 0)")
    p.set_defaults(func=run)


AUTO_REPLICATES = 200  # replicates of --subject-bootstrap auto
# ... which runs only when every item has this many scores: the synthetic worlds it was checked
# on have 25 to 50 per benchmark; on the Epoch table (6 for some) most replicates fail.
AUTO_MIN_SCORES = 25


def _replicates(text: str):
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or a whole number, got {text!r}") \
            from None
    if value != 0 and value < 2:
        raise argparse.ArgumentTypeError(f"must be 0 (the fit's draws) or at least 2 "
                                         f"replicates, got {value}")
    return value


def _sparse_items(fit) -> list[tuple[str, int]]:
    """Items with fewer than AUTO_MIN_SCORES scores in the fit's table, with their counts."""
    import numpy as np

    t = fit.table
    counts = np.bincount(np.asarray(t.item_index), minlength=t.n_items)
    return [(str(t.items[i]), int(c)) for i, c in enumerate(counts) if c < AUTO_MIN_SCORES]


def _noise_per_item(fit_dir: Path) -> bool:
    """Whether ``platinum-jax fit --noise-per-item`` wrote ``fit_dir`` (its fit.json says so)."""
    try:
        info = json.loads((fit_dir / "fit.json").read_text())
    except (OSError, ValueError):
        return False
    return "noise_per_item_refits" in info.get("diagnostics", {})


def _two_columns(path: str, key: str, value: str, option: str):
    import pandas as pd

    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{option} {path} is empty; it needs a header {key},{value} and one "
                         "row per entry") from None
    except pd.errors.ParserError as exc:
        raise ValueError(f"{option} {path} is not a well-formed CSV ({exc})") from None
    if frame.empty:
        raise ValueError(f"{option} {path} has a header but no rows; give one row per entry")
    missing = [c for c in (key, value) if c not in frame.columns]
    if missing:
        raise ValueError(f"{option} {path}: needs columns {key},{value}; missing {missing} "
                         f"(has {list(frame.columns)})")
    if frame[key].duplicated().any():
        raise ValueError(f"{option} {path}: {key} "
                         f"{frame[key][frame[key].duplicated()].iloc[0]!r} appears twice")
    values = pd.to_numeric(frame[value], errors="coerce")
    if values.isna().any():
        raise ValueError(f"{option} {path}: {value} must be a number on every row (row "
                         f"{int(values.isna().to_numpy().argmax())} is not)")
    return dict(zip(frame[key].astype(str), values.astype(float), strict=True))


def _target_names(text: str, items, groups) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    out = []
    for name in names:
        if name in items:
            out.append(name)
        elif groups is not None and name in set(groups.astype(str)):
            out.extend(groups.index[groups.astype(str) == name].astype(str))
        else:
            import difflib

            pool = items + ([] if groups is None else sorted(set(groups.astype(str))))
            close = difflib.get_close_matches(name, pool, n=3)
            raise ValueError(f"--target: {name!r} is neither an item nor a group of the fit"
                             + (f"; did you mean {close}?" if close else ""))
    return out


def _welfare(args, fit, prims):
    from platinum_jax.design import (
        welfare_from_abilities,
        welfare_from_items,
        welfare_from_regression,
    )

    given = [o for o in ("target", "target_weights", "ability_weights", "regress")
             if getattr(args, o) is not None]
    if len(given) != 1:
        raise ValueError("say what you value with exactly one of --target, --target-weights, "
                         f"--ability-weights, --regress (got {len(given)})")
    items = list(prims.items)
    if args.target is not None:
        groups = None if fit is None or fit.table.groups is None else fit.table.item_groups()
        return welfare_from_items(items, _target_names(args.target, items, groups)), \
            f"target: {args.target}"
    if args.target_weights is not None:
        return welfare_from_items(items, _two_columns(args.target_weights, "item", "weight",
                                                      "--target-weights")), \
            f"target weights from {args.target_weights}"
    if args.ability_weights is not None:
        beta = comma_numbers(args.ability_weights, "--ability-weights")
        return welfare_from_abilities(prims.A, beta), f"ability weights {beta}"
    if fit is None:
        raise ValueError("--regress needs the fitted scores of `platinum-jax fit --save-draws`; "
                         "a stitch-bayes directory has none: use --target, --target-weights or "
                         "--ability-weights")
    target = _two_columns(args.regress, "subject", "target", "--regress")
    return welfare_from_regression(fit, target, ridge=args.ridge), \
        f"ridge regression (relative ridge {args.ridge}) of {args.regress} on item scores"


def _plot(path, post):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    items = post.items.sort_values("mean")
    top = items.iloc[-30:] if len(items) > 30 else items
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, max(4.0, 0.25 * len(top) + 1.5)),
                                 gridspec_kw={"width_ratios": [2, 1]})
    y = np.arange(len(top))
    ax.errorbar(top["mean"], y, xerr=[top["mean"] - top["lo"], top["hi"] - top["mean"]],
                fmt="none", ecolor="0.6")
    sc = ax.scatter(top["mean"], y, c=top["p_platinum"], cmap="viridis", vmin=0, vmax=1, zorder=3)
    ax.set_yticks(y, top.index)
    ax.axvline(0, color="0.8", lw=0.8)
    ax.set_xlabel("optimal weight v* (posterior mean, interval)")
    ax.set_title("largest optimal weights" if len(items) > 30 else "optimal weights")
    fig.colorbar(sc, ax=ax, label="P(platinum)")
    s = post.sensitivity
    bx.plot(s.index, s["gain_over_uniform_mean"], "o-", label="over uniform")
    bx.fill_between(s.index, s["gain_over_uniform_lo"], s["gain_over_uniform_hi"], alpha=0.2)
    if post.summary["current_weights"] == "given":
        bx.plot(s.index, s["gain_over_current_mean"], "s--", label="over current")
    bx.set_xscale("log")
    bx.set_xticks(list(s.index), [f"{x:g}" for x in s.index])
    bx.minorticks_off()
    bx.set_xlabel("risk aversion r")
    bx.set_ylabel("welfare gain of v* (share of W(v*))")
    bx.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _fitted_model(fit_dir: Path) -> str | None:
    """The registered name of the model a fit directory holds (None when unknown): the
    Bayesian Rosetta model's posterior brings its own noise per benchmark."""
    import json

    try:
        return (json.loads((fit_dir / "fit.json").read_text()).get("model") or {}).get("name")
    except (OSError, ValueError, AttributeError):
        return None


def run(args: argparse.Namespace) -> int:

    from platinum_jax._runtime import enable_float64

    enable_float64()
    import numpy as np

    from platinum_jax._outputs import output_directory
    from platinum_jax.design import (
        POSTERIOR_FILE,
        posterior_decisions,
        primitives_from_fit,
        primitives_from_stitching,
    )
    from platinum_jax.inference import DRAWS_FILE, read_fit

    factors = comma_numbers(args.r_factors, "--r-factors")
    rank = args.residual_rank
    if rank != "auto":
        try:
            rank = int(rank)
        except ValueError:
            raise ValueError(f"--residual-rank must be 'auto' or an integer >= 0, got "
                             f"{rank!r}") from None
    cost = None if args.cost is None else comma_numbers(args.cost, "--cost")
    fit_dir = Path(args.fit_dir)
    if not (fit_dir / DRAWS_FILE).exists() and (fit_dir / POSTERIOR_FILE).exists() \
            and (not (fit_dir / "fit.json").exists()
                 or _fitted_model(fit_dir) == "rosetta_bayes"):
        fit = None
        for option, given in (("--runs", args.runs is not None),
                              ("--residual-rank", args.residual_rank != "auto")):
            if given:
                raise ValueError(f"{option} applies to `platinum-jax fit` directories; the "
                                 "stitch-bayes posterior brings its own noise per benchmark")
        prims = primitives_from_stitching(fit_dir, cost=cost,
                                          operating_point=args.operating_point)
        print(f"read {fit_dir / POSTERIOR_FILE}: Bayesian stitching posterior, "
              f"{len(prims.items)} benchmarks, {prims.n_draws} draws")
    else:
        fit = read_fit(fit_dir)
        from platinum_jax.cli._common import note_unconverged

        note_unconverged(fit_dir, "weights")
        print(f"read {fit_dir}: model {fit.model.name}, method {fit.method}, "
              f"{fit.table.n_items} items, {fit.table.n_subjects} subjects, "
              f"{1 if fit.draws is None else int(np.shape(fit.draws.items)[0])} draw(s)")
        if fit.draws is None:
            print("platinum-jax weights: the fit has no draws (method map), so intervals are "
                  "points; refit with --method laplace, bootstrap, svi or nuts",
                  file=sys.stderr)
        runs = None
        if args.runs is not None:
            import pandas as pd

            runs = pd.read_csv(args.runs)
        prims = primitives_from_fit(fit, cost=cost, operating_point=args.operating_point,
                                    residual_rank=rank, runs=runs, seed=args.seed)
    w, w_note = _welfare(args, fit, prims)
    replicates = args.subject_bootstrap
    auto_note = None
    if replicates == "auto":
        # Not with --runs (the noise comes from the runs) or one subject's operating point
        # (the bootstrap averages the loadings over each replicate's subjects).
        replicates = AUTO_REPLICATES if (fit is not None and _noise_per_item(fit_dir)
                                         and args.runs is None
                                         and args.operating_point == "average") else 0
        sparse = _sparse_items(fit) if replicates else []
        if sparse:
            replicates = 0
            fewest = min(sparse, key=lambda x: x[1])
            auto_note = (f"the fit's draws, not the bootstrap over subjects: {len(sparse)} "
                         f"item(s) have fewer than {AUTO_MIN_SCORES} scores (fewest: "
                         f"{fewest[0]!r} with {fewest[1]}), where resampling the subjects "
                         "leaves too few distinct ones to estimate an item's noise and many "
                         "replicates fail; --subject-bootstrap R runs it anyway")
            print(f"intervals: {auto_note}")
        elif replicates:
            auto_note = (f"bootstrap over subjects ({replicates} replicates), the default for a "
                         f"fit with a noise level per benchmark and at least {AUTO_MIN_SCORES} "
                         "scores per item")
            print(f"intervals: {auto_note}; --subject-bootstrap 0 uses the fit's draws instead")
    if replicates:
        from platinum_jax.design import bootstrap_subjects

        if fit is None:
            raise ValueError("--subject-bootstrap refits the measurement model, so it needs a "
                             "`platinum-jax fit` directory, not a stitch-bayes posterior")
        if args.operating_point != "average":
            raise ValueError("--subject-bootstrap averages the loadings over each replicate's "
                             "subjects; it does not take --operating-point")
        if args.runs is not None:
            raise ValueError("--subject-bootstrap estimates the noise from the residuals; it "
                             "does not take --runs")
        groups = args.jackknife_groups
        if groups is None:
            groups = 20 if args.interval_method == "bca" else 0
        print(f"bootstrap over subjects: {replicates} replicates and "
              f"{groups} jackknife groups, each a refit")
        prims = bootstrap_subjects(fit.model, dataclasses.replace(fit.table, weight=None), w,
                                   replicates=replicates, residual_rank=rank,
                                   cost=cost, seed=args.seed,
                                   jackknife_groups=groups)
    elif args.interval_method == "bca":
        raise ValueError("--interval-method bca needs bootstrap replicates with the full-data "
                         "estimate: add --subject-bootstrap R")
    notes = {**prims.notes, "welfare_weights": w_note}
    if auto_note is not None:  # set only by --subject-bootstrap auto
        notes["interval_source"] = auto_note
    prims = dataclasses.replace(prims, w=np.broadcast_to(w, prims.d.shape), notes=notes)
    current = None if args.current is None else _two_columns(args.current, "item", "weight",
                                                             "--current")
    post = posterior_decisions(prims, args.r, r_factors=factors, tau_w=args.tau_w,
                               tau_m=args.tau_m, tau_e=args.tau_e, current=current,
                               interval=args.interval, interval_method=args.interval_method)
    table = post.items.copy()
    for r_value in post.p_platinum_by_r.columns:
        table[f"p_platinum_r={r_value:g}"] = post.p_platinum_by_r[r_value]
    with output_directory(args.out, "weights", overwrite=args.overwrite) as out:
        written = [
            out.write("weights.csv", table.to_csv),
            out.write("sensitivity.csv", post.sensitivity.to_csv),
            out.write_text("summary.json", json.dumps(post.summary, indent=2) + "\n"),
            out.write("weights.png", _plot, post),
        ]
    s = post.summary
    g = s["welfare_gain_over_uniform"]
    print(f"noise: {s['primitives']['noise']}")
    print(f"welfare gain of v* over uniform weights at r = {s['r']:g}: {g['mean']:.3g} "
          f"({100 * s['interval']:.0f}% interval {g['lo']:.3g} to {g['hi']:.3g}); expected "
          f"platinum items {s['expected_platinum_items']:.3g}")
    top = post.items.sort_values("mean", ascending=False).head(5)
    print(top[["mean", "lo", "hi", "p_platinum"]].to_string(float_format="%.4g"))
    for path in written:
        print(f"wrote {path}")
    return 0
