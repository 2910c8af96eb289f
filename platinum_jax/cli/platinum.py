"""``platinum-jax platinum``: optimal weights and platinum items from measured per-item primitives."""

from __future__ import annotations

import argparse
import json

from platinum_jax.cli._common import comma_numbers

DESCRIPTION = """\
Which benchmark items are platinum, how sure the measurements make us, and what weighting gains.

Reads a release directory of per-item measurements in the format of Haupt, Hartenstein, Reuel,
Kochenderfer and Koyejo, "Welfare, Improvability, and Noise: A Principal-Agent Theory of
Optimal Benchmark Item Aggregation" (noise.csv, cost.csv, welfare.csv, gwa_welfare_scores*.csv,
judge_loadings*.jsonl), builds the primitives of Haupt, Reuel, Kochenderfer and Koyejo,
"Optimal Aggregation Mechanisms for AI Benchmarking and Platinum Benchmarks":

  Sigma  diag(sigma2_i), the across-seed noise of item i (probability^2)
  C      diag(c_i), the dollar cost of improving item i on its cheapest axis (cost_min_usd,
         taken as given), so r is in 1/$
  w      the item's welfare score (--welfare auto: w_auto; aug: w_aug)
  A      --view items: identity (effort per item; the 149 items with noise, cost and welfare)
         --view concepts: the judge's top-k GWA rank weights / sqrt(c_i) (effort per work
         activity; all 317 welfare items, noise or cost imputed from the item's family where
         not measured: counted in summary.json and flagged per item in platinum.csv)

and draws them from what was measured (--draws): sigma2 from its scaled inverse-chi^2
sampling distribution (70 degrees of freedom), the cost from its bootstrap rank interval
(lognormal), the welfare from a judge/aggregation variant drawn at random (Claude or OpenAI
judge, top-3/4/5, reciprocal or uniform rank weights, share or mean GWA scores). For every draw:
v* = (M + r Sigma)^-1 M w, Definition 1's platinum flags, and the welfare gain of v* over
uniform weights and over the benchmark's task-average weights (each task equal weight, split
among its items), at r and at r times 0.01 ... 100 (the sweep).

These platinum items (Haupt et al.: welfare-aligned, cheap to improve, precisely measured) are
not MIT's "Platinum Benchmarks" (relabelled, error-free subsets of benchmarks).

Outputs in --out: weights.csv (per item: w, sigma2, cost, v* mean/sd/interval, share,
current weight, imputation flags; in the concept view top_gwa, the activity the item loads on
most), platinum.csv (P(platinum) per item at every r of the sweep),
sweep.csv (welfare gains and expected platinum count per r), summary.json (settings,
headline numbers, what was imputed) and four PNGs (v* intervals, P(platinum), gain
distribution, r sweep).
"""

EPILOG = """\
examples:
  platinum-jax platinum ../data/principal-agent-benchmarks --out plat
      the 149 items with all three measurements, 200 draws, r where the median item's
      signal-to-noise-cost ratio is 1
  platinum-jax platinum DIR --view concepts --welfare aug --out plat-gwa
      all welfare items, effort on work activities, augmentation welfare
  platinum-jax platinum DIR --r 0.01 --draws 1000 --seed 1 --out plat --overwrite
"""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be at least 2, got {value}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "platinum",
        help="optimal weights and platinum items with intervals, from measured noise, cost "
             "and welfare",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("release", metavar="DIR", help="the release directory (noise.csv, cost.csv, "
                   "welfare.csv, gwa_welfare_scores.csv, judge_loadings.jsonl, ...)")
    p.add_argument("--out", required=True, help="output directory (created if missing)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the files an earlier `platinum` run wrote in --out")
    p.add_argument("--view", choices=("items", "concepts"), default="items",
                   help="items: A = I on the items with all three measurements (default); "
                   "concepts: effort on GWAs, all welfare items")
    p.add_argument("--welfare", choices=("auto", "aug"), default="auto",
                   help="welfare score: auto (w_auto, automation; default) or aug (w_aug)")
    p.add_argument("--welfare-variants", choices=("all", "headline"), default="all",
                   help="all: each draw takes one of the judge/aggregation variants (default); "
                   "headline: the release's welfare.csv only (no welfare uncertainty)")
    p.add_argument("--draws", type=_positive_int, default=200,
                   help="draws of the primitives (default 200)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the draws (default 0)")
    p.add_argument("--r", type=float, default=None,
                   help="the lab's risk aversion in 1/$ (default: 1/median(c_i sigma2_i), where "
                   "the median item's signal-to-noise-cost ratio is 1)")
    p.add_argument("--r-factors", default="0.01,0.03,0.1,0.3,1,3,10,30,100",
                   help="multiples of r for the sweep (default 0.01,...,100)")
    p.add_argument("--tau-w", type=float, default=None,
                   help="welfare-alignment threshold in (0,1) (default 1/sqrt(m): the cosine of "
                   "an evenly spread direction with each of the m items)")
    p.add_argument("--tau-m", type=float, default=None,
                   help="item-loading threshold in (0,1) (default 1/sqrt(m))")
    p.add_argument("--tau-e", type=float, default=1.0,
                   help="signal-to-noise-cost threshold > 0 (default 1)")
    p.add_argument("--interval", type=float, default=0.9,
                   help="probability of the intervals (default 0.9)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:

    from platinum_jax._runtime import enable_float64

    enable_float64()

    from platinum_jax._outputs import output_directory
    from platinum_jax.design import platinum_from_release
    from platinum_jax.design import write_measured_plots as write_plots
    from platinum_jax.importers import read_principal_agent_release

    factors = comma_numbers(args.r_factors, "--r-factors")
    if args.r is not None and not args.r > 0:
        raise ValueError(f"--r (risk aversion, 1/$) must be > 0, got {args.r}")
    release = read_principal_agent_release(args.release)
    print(f"read {args.release}: {len(release.noise)} noise, {len(release.cost)} cost, "
          f"{len(release.welfare)} welfare items; {args.draws} draws, view {args.view}",
          flush=True)
    res = platinum_from_release(release, view=args.view, welfare=args.welfare,
                                n_draws=args.draws, seed=args.seed, r=args.r,
                                r_factors=factors, tau_w=args.tau_w, tau_m=args.tau_m,
                                tau_e=args.tau_e, interval=args.interval,
                                variants=args.welfare_variants)
    post = res.posterior
    platinum = res.items[["item", "family", "p_platinum"]].copy()
    for r_value in post.p_platinum_by_r.columns:
        platinum[f"p_platinum_r={r_value:.4g}"] = post.p_platinum_by_r[r_value].to_numpy()
    summary = json.dumps(res.summary, indent=2, default=float) + "\n"
    with output_directory(args.out, "platinum", overwrite=args.overwrite) as out:
        written = [
            out.write("weights.csv", res.items.to_csv),
            out.write("platinum.csv", platinum.to_csv),
            out.write("sweep.csv", post.sensitivity.to_csv),
            out.write_text("summary.json", summary),
            *write_plots(out, res),
        ]
    s = res.summary
    g, c = s["welfare_gain_over_uniform"], s["welfare_gain_over_current"]
    pct = f"{100 * s['interval']:.0f}%"
    print(f"r = {res.r:.4g} per $ ({s['r_rule']}); {s['n_items']} items")
    print(f"platinum items: {s['n_platinum_p_above_0.9']} with P > 0.9, "
          f"{s['n_platinum_p_above_0.5']} with P > 0.5 (expected {s['expected_platinum_items']:.3g})")
    print(f"welfare gain of v* over uniform weights: {g['mean']:.3g} ({pct} interval "
          f"{g['lo']:.3g} to {g['hi']:.3g}); over task-average weights: {c['mean']:.3g} "
          f"({c['lo']:.3g} to {c['hi']:.3g})")
    top = res.items.sort_values("p_platinum", ascending=False).head(5)
    print(top[["w", "sigma2", "cost", "mean", "lo", "hi", "p_platinum"]]
          .to_string(float_format="%.4g"))
    for path in written:
        print(f"wrote {path}")
    return 0
