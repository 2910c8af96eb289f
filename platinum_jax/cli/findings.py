"""``platinum-jax findings``: the paper's tables, figures and robustness checks from the
principal-agent release."""

from __future__ import annotations

import argparse

DESCRIPTION = """\
Reproduce the artifacts of Haupt, Hartenstein, Reuel, Kochenderfer and Koyejo, "Welfare,
Improvability, and Noise: A Principal-Agent Theory of Optimal Benchmark Item Aggregation"
from the per-item tables of their release (DIR: its data/ folder, read by
platinum_jax.importers.read_principal_agent_release).

Writes into --out, one CSV per table and one PNG per artifact:

  table1_cost_quantiles       items around the 1/10/50/90/99 % quantiles of the cost of a 0.10
                              lift of p-hat (cheapest of pre-training, SFT, RL), with the
                              release's bootstrap rank intervals, axis and dollars
  table2_noise_quantiles      the same bands for the across-seed noise sigma-hat
  table4_noise_decomposition  per family: n, median p-hat, sigma-hat, Z = sigma/sqrt(p(1-p)),
                              items won, median gold/runner-up ratio, margin-Z correlation
  figure2_gwa_quadrants       each GWA's worker-desire quadrant and the share of items the judge
  figure2_quadrant_loading    loads on it; per quadrant and perspective, loading and slot share
  figure3_welfare_items       items in (w_auto, w_aug) rescaled to [1, 5]: Pareto frontier,
  figure3_family_gap          dominance counts; math-general gap per axis with a task-cluster
                              bootstrap interval and permutation p-value
  robustness_set1             top-3, top-4, uniform weights, OpenAI judge, flat-mean GWA scores
                              against the headline welfare: Spearman, Kendall, frontier overlap
  robustness_set2_*           three held-out raters: top-5 slot mass per quadrant (split at 3.0)
                              and math-general welfare gaps
  summary.json                the headline figures (also printed), the settings and notes on
                              what the input leaves uncomputable (printed as n/a)

Everything is computed before --out is touched; a failed run writes nothing. Runs in seconds.
"""

EPILOG = """\
examples:
  platinum-jax findings ../shared/data/principal-agent-benchmarks --out findings
  platinum-jax findings DATA --out findings --overwrite      # replace an earlier run's files
  platinum-jax findings DATA --out f --allow-missing         # skip artifacts whose file is absent
"""


# Fewest --resamples: welfare_frontier's floor at its 95 % level, 5 / alpha replicates (2.5
# expected beyond each end of the interval), as `compare` asks of --replicates.
MIN_RESAMPLES = 100


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "findings",
        help="the principal-agent paper's tables, figures and robustness checks from its release",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("release", metavar="DIR", help="the release's data/ folder (noise.csv, "
                   "cost.csv, welfare.csv, gwa_welfare_scores*.csv, judge_loadings*.jsonl, "
                   "heldout_raters/, item_margins.parquet, item_topics.csv)")
    p.add_argument("--out", required=True, help="output directory (created if missing; must be "
                   "empty unless --overwrite)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the files an earlier `findings` run wrote in --out")
    p.add_argument("--allow-missing", action="store_true",
                   help="skip (and list in summary.json) the artifacts whose optional input "
                   "file is absent, instead of stopping")
    p.add_argument("--resamples", type=int, default=10_000,
                   help="cluster bootstrap and permutation replicates for Figure 3 "
                   "(default 10000, as in the paper; at least 100)")
    p.add_argument("--seed", type=int, default=42, help="their random seed (default 42)")
    p.set_defaults(func=run)


def _n(value, spec: str) -> str:
    """``value`` formatted by ``spec``; ``n/a`` for what could not be computed (NaN in the
    tables, null in summary.json; summary.json's notes say why)."""
    if value is None or (isinstance(value, float) and value != value):
        return "n/a"
    return format(value, spec)


def _headline(f) -> list[str]:
    s = f.summary
    lines = [f"Items: noise {s['items']['noise']}, cost {s['items']['cost']}, welfare "
             f"{s['items']['welfare']}; all three {s['items']['noise_cost_welfare']}"]
    if "table1" in s:
        lines.append("Table 1, median cost of a 0.10 lift per band: " + ", ".join(
            f"{q} ${_n(v, ',.0f')}" for q, v in s["table1"].items()))
    if "table2" in s:
        lines.append("Table 2, median sigma-hat per band: " + ", ".join(
            f"{q} {_n(v, '.3f')}" for q, v in s["table2"].items()))
    if "table4" in s:
        lines.append("Table 4 (family: n, med p, med sigma, med Z, n won, med ratio, r):")
        lines += [f"  {fam:9s} {r['n']:6d} {_n(r['median_phat'], '.3f')} "
                  f"{_n(r['median_sigma'], '.3f')} {_n(r['median_sigma_z'], '.3f')} "
                  f"{r['n_won']:5d} {_n(r['median_log_ratio_won'], '.3f')} "
                  f"{_n(r['r_margin_z'], '+.3f')}" for fam, r in s["table4"].items()]
    if "figure2" in s:
        t = f.tables["figure2_quadrant_loading"]
        for persp in ("automation", "augmentation"):
            lines.append(f"Figure 2, {persp}: % of top-5 slots per quadrant: " + ", ".join(
                f"{row['label']} {_n(float(row['slot_share_pct']), '.1f')}"
                for _, row in t.loc[persp].iterrows()))
    if "figure3" in s:
        h = s["figure3"]
        lines.append(f"Figure 3: frontier {h['frontier_n']} items ({h['frontier_n_math']} math);"
                     f" {_n(h['pct_math_dominated_by_general'], '.1f')}% of {h['n_math']} math "
                     f"items dominated by a general item; "
                     f"{_n(h['pct_general_dominated_by_math'], '.1f')}% of general items by a "
                     "math item")
        for axis in ("w_auto", "w_aug"):
            lines.append(f"  {axis} gap (general - math) "
                         f"{_n(h[f'{axis}_gap_general_minus_math'], '+.3f')} "
                         f"[{_n(h[f'{axis}_gap_ci_lo'], '+.3f')}, "
                         f"{_n(h[f'{axis}_gap_ci_hi'], '+.3f')}], cluster permutation p = "
                         f"{_n(h[f'{axis}_cluster_permutation_p'], '.2e')}")
        lines.append(f"  welfare recomputed from the judge rankings vs welfare.csv: max |diff| "
                     f"{_n(h['welfare_recomputed_max_abs_diff'], '.1e')}")
    if "robustness_set1" in f.tables:
        lines.append("Robustness set 1 (Spearman auto/aug, frontier Jaccard):")
        lines += [f"  {v:26s} {_n(float(r['spearman_auto']), '.3f')} / "
                  f"{_n(float(r['spearman_aug']), '.3f')}, "
                  f"{_n(float(r['frontier_jaccard']), '.3f')}"
                  for v, r in f.tables["robustness_set1"].iterrows()]
    if "robustness_set2" in s:
        lines.append("Robustness set 2 (gap w_auto / w_aug, % math dominated):")
        lines += [f"  {rater:10s} {_n(r['gap_w_auto'], '+.3f')} / {_n(r['gap_w_aug'], '+.3f')}, "
                  f"{_n(r['pct_math_dominated'], '.0f')}%"
                  for rater, r in s["robustness_set2"].items()]
    for what, why in f.skipped.items():
        lines.append(f"Skipped {what}: {why}")
    lines += [f"Note: {note}" for note in s.get("notes", [])]
    return lines


def run(args: argparse.Namespace) -> int:
    from platinum_jax.measured import reproduce_findings

    if args.resamples < MIN_RESAMPLES:
        raise ValueError(
            f"--resamples {args.resamples}: Figure 3's 95% cluster-bootstrap interval needs at "
            f"least {MIN_RESAMPLES} replicates (its ends are the 2.5% and 97.5% quantiles of "
            "the replicates; with fewer, under 2.5 lie beyond each end and the interval need "
            f"not even contain the estimate): pass --resamples {MIN_RESAMPLES} or more (the "
            "paper: 10000)")
    findings = reproduce_findings(args.release, args.out, overwrite=args.overwrite,
                                  allow_missing=args.allow_missing, n_resamples=args.resamples,
                                  seed=args.seed)
    print("\n".join(_headline(findings)))
    print(f"Wrote {len(findings.tables)} tables, their figures and summary.json to {args.out}")
    return 0
