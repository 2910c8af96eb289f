"""``platinum-jax import``: evaluation logs -> one long response file that ``fit`` reads."""

from __future__ import annotations

import argparse
from pathlib import Path

DESCRIPTION = """\
Read evaluation logs into one long response table (subject = the evaluated model, item = a
stable id of the question within its task, group = the task, response = the per-item metric)
and write it as Parquet or CSV (by the suffix of --out) for `platinum-jax fit`.

Formats (FORMAT):
  lm-eval  lm-evaluation-harness --output_path directories or results JSON files: v0.4 on
           with --log_samples (samples_<task>_*.jsonl); before v0.4 (any file name) with the
           --write_out files (<task>_write_out_info.json) beside it; Evalchemy results (its
           <metric>_avg is the metric; no per-document scores). --metric acc|acc_norm|...
           (repeat it: the first a task reports is used), --filter; --level aggregate for one
           score per run and task, with its _stderr (Evalchemy: _std_err) as se
  inspect  Inspect .eval / .json logs or directories of them (needs the `inspect` extra);
           --metric names the scorer; epochs become trials when scores are 0/1
  helm     HELM benchmark_output/runs/<suite>/ directories or run directories; --metric names
           the per-instance statistic (default exact_match); train trials become trials
  eee      Every Eval Ever aggregate <uuid>.json logs or directories of them; per-sample
           scores from their _samples.jsonl sidecars, or --level aggregate for one score per
           evaluation; --metric as for lm-eval
  lighteval lighteval --output-dir directories (details/<model>/<timestamp>/) or
           details_<task>_<timestamp>.parquet files (.jsonl / .json too), written with
           --save-details; --metric names the per-sample metric (default: the first)
  tidy     long CSV / Parquet files (subject, item, response[, group, trials, se, weight])
  epoch    Epoch AI benchmarking-hub raw/ directories (benchmark-level scores), by the
           Rosetta paper's rules: --min-release-date (default 2022-11-01; none keeps every
           model) and --min-benchmarks (default 4), or with --prepare epoch by Epoch's
           Capabilities Index rules (--baselines FILE); every score they leave out is listed
           in the .missing.csv side table with its reason

Besides --out, two tables are written beside it: <name>.metadata.csv (one row per run: model
arguments, few-shot count, dates, versions) and <name>.missing.csv (per-item records without a
usable score, with the reason). The written table keeps the provenance columns file, task and
metric. The three files replace earlier ones together, only once all are written; a second
import to the same --out while one runs stops with an error.
"""

EPILOG = """\
examples:
  platinum-jax import lm-eval lm_eval_out/ --metric acc_norm --metric exact_match \\
      --out responses.parquet
  platinum-jax import inspect logs/ --metric match --duplicates mean --out responses.parquet
  platinum-jax import lm-eval leaderboard_v1/ --level aggregate --metric acc_norm \\
      --out scores.parquet
  platinum-jax import lighteval lighteval_out/ --metric acc --out responses.parquet
  platinum-jax fit responses.parquet --model 2pl --out irt
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from platinum_jax.importers import FORMATS  # light: the readers import their tools lazily

    p = subparsers.add_parser(
        "import",
        help="read evaluation logs (lm-eval, Evalchemy, Inspect, HELM, Every Eval Ever, lighteval, "
        "tidy, Epoch) into a response table",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("format", metavar="FORMAT", choices=tuple(FORMATS),
                   help=f"log format: {', '.join(FORMATS)}")
    p.add_argument("paths", metavar="PATH", nargs="+", help="log files or directories")
    p.add_argument("--out", required=True, help="output file, .parquet or .csv")
    p.add_argument("--overwrite", action="store_true", help="replace --out and its side tables")
    p.add_argument("--metric", action="append", default=None,
                   help="per-item metric (lm-eval, eee: repeatable, first match per task; "
                   "helm, lighteval: one) or scorer (inspect); default: the only or first one "
                   "the log reports")
    p.add_argument("--filter", default="none",
                   help="lm-eval filter name (default 'none'; 'any' accepts the first reported)")
    p.add_argument("--level", choices=("instance", "aggregate"), default=None,
                   help="eee, lm-eval: per-sample scores (default) or one score per "
                   "evaluation (run and task)")
    p.add_argument("--tasks", nargs="+", default=None, help="lm-eval: keep only these tasks")
    p.add_argument("--duplicates", choices=("error", "mean", "max", "min", "first", "last"),
                   default="error",
                   help="repeated (subject, item) pairs, e.g. the same model run twice: fail "
                   "(default) or reduce them (mean pools the trials)")
    p.add_argument("--stream", action="store_true",
                   help="tidy, one Parquet file of binary responses: read it in record "
                   "batches into one byte per (subject, item) cell and write the rows back "
                   "block by block (memory: the cells, never a frame of the rows); the "
                   "output is a .parquet file with subject, item and response, ready for "
                   "`fit --stream`")
    e = p.add_argument_group("epoch")
    e.add_argument("--min-benchmarks", type=int, default=None,
                   help="keep models scored on at least this many benchmarks (default 4; 1 "
                   "keeps all)")
    e.add_argument("--min-release-date", default=None, metavar="DATE",
                   help="keep models released on or after DATE (default 2022-11-01, or "
                   "2023-01-01 with --prepare epoch; 'none' keeps every model, those of unknown "
                   "date too)")
    from ._scores import add_prepare_arguments

    add_prepare_arguments(e)
    p.set_defaults(func=run)


def _epoch_options(args) -> dict:
    given = {k: v for k, v in (("--min-benchmarks", args.min_benchmarks),
                               ("--min-release-date", args.min_release_date),
                               ("--prepare", args.prepare), ("--baselines", args.baselines))
             if v is not None}
    if args.format != "epoch":
        if given:
            raise ValueError(f"{', '.join(given)} apply to the epoch format, not to "
                             f"{args.format}")
        return {}
    from ._scores import resolve_prepare

    options = {"prepare": resolve_prepare(args, True)}  # the --baselines rule with it
    if args.baselines is not None:
        options["baselines"] = args.baselines
    if args.min_benchmarks is not None:
        if args.min_benchmarks < 1:
            raise ValueError(f"--min-benchmarks must be >= 1 (got {args.min_benchmarks})")
        options["min_benchmarks"] = args.min_benchmarks
    if args.min_release_date is not None:
        date = args.min_release_date
        if date.lower() == "none":
            options["min_release_date"] = None
        else:
            import pandas as pd

            try:
                pd.Timestamp(date)
            except (TypeError, ValueError):
                raise ValueError(f"--min-release-date {date!r} is not a date; use e.g. "
                                 "2022-11-01, or none for no date rule") from None
            options["min_release_date"] = date
    return options


def _read(args):
    from platinum_jax.importers import FORMATS

    reader = FORMATS[args.format]
    epoch = _epoch_options(args)
    level = args.level or "instance"
    if args.format == "lm-eval":
        return reader(args.paths, metric=args.metric, level=level,
                      filter=None if args.filter == "any" else args.filter, tasks=args.tasks)
    if args.level is not None and args.format != "eee":
        raise ValueError(f"--level applies to eee and lm-eval logs, not to {args.format}")
    if args.filter != "none" or args.tasks is not None:
        raise ValueError(f"--filter and --tasks apply to lm-eval logs, not to {args.format}")
    if args.format == "eee":
        return reader(args.paths, metric=args.metric, level=level)
    if args.format in ("inspect", "helm", "lighteval"):
        if args.metric is not None and len(args.metric) > 1:
            raise ValueError(f"{args.format}: give one --metric (got {args.metric})")
        if args.format == "lighteval":
            return reader(args.paths, metric=args.metric[0] if args.metric else None)
        if args.format == "helm":
            return reader(args.paths, **({"metric": args.metric[0]} if args.metric else {}))
        return reader(args.paths, scorer=args.metric[0] if args.metric else None)
    if args.metric is not None:
        raise ValueError(f"--metric does not apply to the {args.format} format")
    import warnings

    from platinum_jax.importers import EpochDataWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", EpochDataWarning)
        imported = reader(args.paths, **epoch)
    for w in caught:  # said as stitch and analyze say them
        if issubclass(w.category, EpochDataWarning):
            print(f"note: {w.message}")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return imported


def _side_paths(out: Path) -> tuple[Path, Path]:
    stem = out.name[: -len(out.suffix)] if out.suffix else out.name
    return out.with_name(f"{stem}.metadata.csv"), out.with_name(f"{stem}.missing.csv")


def _with_provenance(table, responses):
    """The reduced table's rows with the provenance of the rows each one came from."""
    import pandas as pd

    def join(values):
        return ";".join(dict.fromkeys(str(v) for v in values))

    prov = responses.groupby(["subject", "item"], sort=False).agg(
        file=("file", join), task=("task", join), metric=("metric", join),
        n_rows=("response", "size"),
    ).reset_index()
    frame = table.to_frame()
    return pd.merge(frame, prov, on=["subject", "item"], how="left", validate="one_to_one")


def _by_rule(reasons) -> dict[str, int]:
    """Counts of the reasons, with the per-model details (dates) folded into their rule."""
    import re

    rules = reasons.astype(str).map(lambda r: re.sub(r"released \d{4}-\d{2}-\d{2}, ",
                                                     "released ", r))
    return rules.value_counts().to_dict()


def summary_lines(logs, table, out: Path, rule: str) -> list[str]:
    """What was read, for the terminal: sizes, missing share, duplicates, unscored items."""
    n_dup = logs.duplicate_pairs()
    groups = len(table.groups) if table.groups is not None else 0
    lines = [
        f"format: {logs.format}; log entries (runs x tasks, or files): {len(logs.metadata)}",
        f"subjects: {table.n_subjects}",
        f"items: {table.n_items}",
        f"groups: {groups}",
        f"responses: {table.n_responses}",
        f"missing share: {table.missing_share:.1%} of the {table.n_subjects} x {table.n_items} "
        "subject x item matrix",
    ]
    if n_dup:
        lines.append(f"duplicates: {n_dup} row(s) repeated a (subject, item) pair; reduced by "
                     f"--duplicates {rule}")
    else:
        lines.append("duplicates: none")
    miss = logs.missing
    named = miss[~miss["item"].astype(str).str.endswith("/*")]
    lost = sorted(set(named["item"]) - set(table.items))
    if lost:
        lines.append(f"items with no usable response from any subject (not in the table): "
                     f"{len(lost)}, e.g. {', '.join(lost[:3])}")
    lines.append(f"per-item records without a usable score: {len(miss)}"
                 + (f" (listed in {_side_paths(out)[1].name})" if len(miss) else ""))
    if len(miss):
        for reason, n in _by_rule(miss["reason"]).items():
            lines.append(f"  {n} left out: {reason}")
    for r in miss.head(5).itertuples():
        lines.append(f"  {r.subject} {r.item}: {r.reason} [{r.file}]")
    if len(miss) > 5:
        lines.append(f"  ... and {len(miss) - 5} more")
    return lines


def _run_stream(args, out: Path, meta_path: Path, miss_path: Path) -> int:
    """``import tidy --stream``: one Parquet file through :func:`read_parquet_streamed` and
    :meth:`CodedResponses.to_parquet`."""
    import pandas as pd

    from platinum_jax._outputs import output_files
    from platinum_jax.data import read_parquet_streamed

    if args.format != "tidy":
        raise ValueError(f"--stream reads tidy Parquet files, not {args.format} logs")
    if len(args.paths) != 1 or Path(args.paths[0]).suffix.lower() not in (".parquet", ".pq"):
        raise ValueError(f"--stream reads one .parquet file (got {args.paths}); combine the "
                         "files first or import without --stream")
    if out.suffix.lower() not in (".parquet", ".pq"):
        raise ValueError(f"--stream writes a .parquet file (got --out {out})")
    if args.duplicates != "error":
        raise ValueError("--stream keeps one response per (subject, item) pair; reduce "
                         f"repeated pairs without --stream (got --duplicates {args.duplicates})")
    path = args.paths[0]
    with output_files(out, overwrite=args.overwrite, companions=(meta_path, miss_path)) as write:
        coded = read_parquet_streamed(path)
        write(out, coded.to_parquet)
        meta = pd.DataFrame([{"file": str(path), "n_responses": coded.n_responses,
                              "n_subjects": coded.n_subjects, "n_items": coded.n_items}])
        write(meta_path, meta.to_csv, index=False)
        missing = pd.DataFrame(columns=["subject", "item", "group", "file", "task", "metric",
                                        "reason"])
        write(miss_path, missing.to_csv, index=False)
    cells = coded.n_subjects * coded.n_items
    print(f"format: tidy (streamed); {coded}")
    print(f"missing share: {1 - coded.n_responses / cells:.1%} of the {coded.n_subjects} x "
          f"{coded.n_items} subject x item matrix")
    print(f"wrote {out}, {meta_path.name}, {miss_path.name}")
    return 0


def run(args: argparse.Namespace) -> int:
    from platinum_jax._outputs import output_files

    out = Path(args.out)
    if out.suffix.lower() not in (".parquet", ".pq", ".csv"):
        raise ValueError(f"--out {out}: name a .parquet or .csv file")
    meta_path, miss_path = _side_paths(out)
    if args.stream:
        return _run_stream(args, out, meta_path, miss_path)
    # Locked for the whole run; the three files are swapped in together at the end.
    with output_files(out, overwrite=args.overwrite, companions=(meta_path, miss_path)) as write:
        logs = _read(args)
        table = logs.table(duplicates=args.duplicates, name=f"the {logs.format} logs")
        frame = _with_provenance(table, logs.responses)
        if out.suffix.lower() == ".csv":
            write(out, frame.to_csv, index=False)
        else:
            write(out, frame.to_parquet, index=False)
        write(meta_path, logs.metadata.to_csv, index=False)
        write(miss_path, logs.missing.to_csv, index=False)
    for line in summary_lines(logs, table, out, args.duplicates):
        print(line)
    print(f"wrote {out}, {meta_path.name}, {miss_path.name}")
    return 0
