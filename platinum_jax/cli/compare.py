"""``platinum-jax compare``: is model A better than model B, and how sure?"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

DESCRIPTION = """\
Compare AI models on the items of a response table (CSV or Parquet: subject or model, item,
response or score; optional group or benchmark, cluster, run, trials), or straight on the logs
a harness wrote (the directories and files `platinum-jax import` reads: lm-eval output
directories, Inspect logs, Every Eval Ever records, HELM runs, lighteval details; --format
auto tells them apart, --metric picks the per-item score), and write to OUT:

  accuracy.csv   accuracy per model and benchmark with an interval (--interval, --level)
  pairs.csv      every pair of models per benchmark on their shared items: difference, paired
                 standard error and bootstrap interval, test and p-value, P(A > B), p-values
                 adjusted across all pairs and benchmarks (Benjamini-Hochberg and Holm)
  power.csv      per pair of pairs.csv: correlation of the two models' item scores, the
                 minimum detectable difference at --power and --alpha on the shared items, and
                 the same unpaired (pairs without shared items under --unpaired: the MDE of
                 two independent means; empty where the item differences do not vary);
                 with --subset (e.g. the subset.csv of `platinum-jax subset`), on those items
                 only: what the reduced benchmark can and cannot tell apart (its MDAD)
  forest_<benchmark>.png, p_better_<benchmark>.png   the pictures
  summary.json   what was used and how many pairs are distinguishable

Intervals (--interval; default auto = modified Jeffreys for scores in [0, 1], bootstrap
otherwise; CLT intervals are never the default: below a few hundred items, or near 0 or 1,
they are too narrow):
  jeffreys-modified, jeffreys, uniform         Beta posterior intervals (Beta(1/2,1/2) or
                                               Beta(1,1) prior; modified: exact ends at 0/N)
  wilson, clopper-pearson                      score and exact binomial intervals
  clt, clustered                               normal, independent or cluster-robust variance
  bootstrap                                    items (or whole clusters) resampled

Repeated samples of an item (a run column, or --trials K for shares of K samples) count once
per item; their variance is split into within- and between-item parts. A cluster column
(items sharing a passage or source) widens every interval and test by the clustering.

Tests: McNemar (exact when fewer than 50 discordant items) for single 0/1 outcomes, else a
paired t-test on the item differences (cluster-robust with a cluster column). Models that
share no items in a benchmark are an error unless --unpaired, and pairs.csv says which design
each row used.

Examples:
  platinum-jax compare responses.csv --out compare/ --level 0.9 --alpha 0.05
  platinum-jax compare lm_eval_out/ --metric acc_norm --out compare/
  platinum-jax compare logs/ --format inspect --metric match --out compare/
"""

LOG_FORMATS = ("lm-eval", "inspect", "eee", "helm", "lighteval")
# an Every Eval Ever record: the datastore names each by a UUID
_EEE_RECORD = re.compile(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\.json")


def register(sub) -> None:
    p = sub.add_parser("compare", help="is model A better than model B: accuracy intervals, "
                       "paired tests, P(A > B), power",
                       description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", metavar="DATA",
                   help="response table (CSV or Parquet), or harness logs (a directory or file)")
    p.add_argument("--format", default="auto", choices=("auto", "table", *LOG_FORMATS),
                   help="what DATA is (default auto: a .csv/.parquet file is a table, a log "
                        "directory is recognised by its files)")
    p.add_argument("--metric", action="append", default=None,
                   help="logs: the per-item metric (lm-eval, eee; repeatable, first match per "
                        "task) or scorer (inspect, helm, lighteval)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--interval", default="auto",
                   choices=("auto", "jeffreys-modified", "jeffreys", "uniform", "wilson",
                            "clopper-pearson", "clt", "clustered", "bootstrap"),
                   help="accuracy interval (default auto: chosen by the data, see above)")
    p.add_argument("--level", type=float, default=0.9,
                   help="coverage of the intervals (default 0.9)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="significance level after adjustment across pairs (default 0.05)")
    p.add_argument("--power", type=float, default=0.8,
                   help="power for the minimum detectable difference (default 0.8)")
    p.add_argument("--models", nargs="+", help="compare only these models")
    p.add_argument("--trials", type=int,
                   help="samples behind each fractional response (no trials column), e.g. 10")
    p.add_argument("--unpaired", action="store_true",
                   help="compare pairs with no shared items unpaired instead of failing")
    p.add_argument("--replicates", type=int, default=2000,
                   help="bootstrap resamples (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the bootstrap")
    p.add_argument("--subset", metavar="CSV",
                   help="a CSV with an item column (the subset.csv of `platinum-jax subset`): "
                        "power.csv gives the minimum detectable difference on those items")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG pictures")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the files of an earlier compare run in OUT")
    p.set_defaults(func=run)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "all"


def _detect(path: Path) -> str:
    """The format of DATA: ``table`` or one of the log formats, from its names."""
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix in (".csv", ".parquet", ".pq"):
            return "table"
        if suffix == ".eval":
            return "inspect"
        if path.name.startswith("results") and suffix == ".json":
            return "lm-eval"
        if _EEE_RECORD.fullmatch(path.name):
            return "eee"
        raise ValueError(f"DATA {path}: not a response table (.csv, .parquet) or a log file "
                         "whose kind its name tells; pass --format")
    if not path.is_dir():
        raise FileNotFoundError(f"DATA {path}: no such file or directory")
    found = []
    if next(path.rglob("results*.json"), None) is not None:
        found.append("lm-eval")
    if next(path.rglob("*.eval"), None) is not None:
        found.append("inspect")
    if any(_EEE_RECORD.fullmatch(f.name) for f in path.rglob("*.json")):
        found.append("eee")
    if next(path.rglob("run_spec.json"), None) is not None:
        found.append("helm")
    if next(path.rglob("details_*"), None) is not None:
        found.append("lighteval")
    if len(found) != 1:
        what = "no harness logs" if not found else f"logs of several kinds ({', '.join(found)})"
        raise ValueError(f"DATA {path} is a directory with {what}; compare reads one kind: "
                         f"pass --format {'|'.join(LOG_FORMATS)}, or a response table file")
    return found[0]


def _table_of(args):
    """DATA as compare reads it: the table file's path, or the table of the logs."""
    kind = _detect(Path(args.data)) if args.format == "auto" else args.format
    if kind == "table":
        if args.metric:
            raise ValueError("--metric chooses a score in harness logs; DATA is a table")
        return args.data
    from platinum_jax.cli.import_logs import _read

    logs = _read(argparse.Namespace(
        format=kind, paths=[args.data], metric=args.metric, filter="none", tasks=None,
        level=None, min_benchmarks=None, min_release_date=None, prepare=None, baselines=None))
    print(f"read {kind} logs: {logs.responses['subject'].nunique()} model(s), "
          f"{len(logs.responses)} item response(s), {len(logs.missing)} without a usable score")
    return logs.table(name=f"the {kind} logs in {args.data}")


def run(args: argparse.Namespace) -> int:
    from platinum_jax.compare import accuracy, as_compare_data, compare_pairs, mdad

    if args.replicates < 100:
        raise ValueError(f"--replicates {args.replicates}: pass at least 100 resamples")
    data = as_compare_data(_table_of(args), trials=args.trials)
    if args.models:
        missing = [m for m in args.models if m not in data.subjects]
        if missing:
            raise ValueError(f"--models {missing} are not in {data.source}; the models are "
                             f"{list(data.subjects)}")
    # Everything is computed before the output directory is touched: a failure writes nothing.
    acc = accuracy(data, method=args.interval, level=args.level, replicates=args.replicates,
                   seed=args.seed)
    if args.models:
        acc = acc[acc.index.get_level_values("subject").isin(args.models)]
    pairs = compare_pairs(data, models=args.models, level=args.level, alpha=args.alpha,
                          replicates=args.replicates, seed=args.seed, unpaired=args.unpaired)
    subset = None
    if args.subset:
        import pandas as pd

        sub = pd.read_csv(args.subset)
        if "item" not in sub.columns:
            raise ValueError(f"--subset {args.subset}: expected a CSV with an item column "
                             f"(found {list(sub.columns)}); pass the subset.csv of "
                             "`platinum-jax subset` or a one-column list of item ids")
        subset = sub["item"].astype(str).tolist()
    power = mdad(data, items=subset, models=args.models, unpaired=args.unpaired,
                 alpha=args.alpha, power=args.power)
    figures = {}
    if not args.no_plots:
        import matplotlib

        matplotlib.use("Agg")
        from platinum_jax.compare import forest_plot, p_better_heatmap

        for group in acc.index.get_level_values("group").unique():
            figures[f"forest_{_slug(group)}.png"] = forest_plot(acc, group)
            if group in pairs.index.get_level_values("group"):
                figures[f"p_better_{_slug(group)}.png"] = p_better_heatmap(pairs, group, acc=acc)
    summary = {
        "data": str(args.data), "models": int(acc.index.get_level_values("subject").nunique()),
        "groups": [str(g) for g in data.groups], "interval": str(acc["method"].iat[0]),
        "level": args.level, "alpha": args.alpha, "power": args.power,
        "repeated_samples": data.repeated, "clusters": None if data.clusters is None
        else len(data.clusters),
        "pairs": {str(g): {"compared": int(len(d)), "significant_bh": int(d.significant_bh.sum()),
                           "significant_holm": int(d.significant_holm.sum()),
                           "designs": sorted(d.design.unique().tolist()),
                           "tests": sorted(d.test.unique().tolist())}
                  for g, d in pairs.groupby(level="group")},
        "median_mde": {str(g): float(d.mde.median()) for g, d in power.groupby(level="group")},
        "power_items": "all shared items" if subset is None else
        f"the {len(subset)} items of {args.subset}",
    }
    from platinum_jax._outputs import output_directory

    written = []
    with output_directory(args.out, "compare", overwrite=args.overwrite) as out:
        written.append(out.write("accuracy.csv", acc.to_csv))
        written.append(out.write("pairs.csv", pairs.to_csv))
        written.append(out.write("power.csv", power.to_csv))
        for name, fig in figures.items():
            written.append(out.write(name, fig.savefig, dpi=120))
        written.append(out.write_text("summary.json", json.dumps(summary, indent=2)))
    for g, s in summary["pairs"].items():
        mde = summary["median_mde"].get(g)
        tail = (f"median MDE {mde:.3f}" if mde is not None else
                "no pair shares two items of the subset")
        print(f"{g}: {s['significant_bh']} of {s['compared']} pairs distinguishable "
              f"(Benjamini-Hochberg, alpha {args.alpha}); {tail}")
    for path in written:
        print(f"wrote {path}")
    return 0
