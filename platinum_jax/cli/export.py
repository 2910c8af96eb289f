"""``platinum-jax export eee``: results as Every Eval Ever 0.3.0 records."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

DESCRIPTION = """\
Write results as Every Eval Ever (EEE) 0.3.0 records: an EEE datastore tree below OUT,
OUT/data/<collection>/<developer>/<model>/<uuid>.json (one aggregate record per model), with
<uuid>_samples.jsonl instance-level lines beside it when --items gives the item text, and
OUT/export.json (what was written and what was left out).

SOURCE is any of:
  a `compare` output directory      accuracy per model and benchmark, its interval (method and
                                    level named), standard error and item count
  an `analyze eci` output directory the Epoch Capabilities Index per model with its bootstrap
                                    interval (eci.csv, eci_summary.csv)
  a `fit` output directory          each subject's parameters (abilities) with their intervals
                                    and sds where the fit has them (subjects.csv, fit.json)
  a response table (CSV / Parquet)  accuracy per model and benchmark with the default
                                    interval of `compare`; with --items (the item text) and
                                    an output column (each answer), instance records too

Nothing a record requires is guessed. You state the source (--collection,
--source-organization, --evaluator-relationship, --eval-library); the model table
(--model-info CSV: column model, and any of id, name, developer, deployment_type,
model_availability, inference_platform) gives each model's Hugging Face style id and
developer. The datastore files records by developer: a model whose id has no 'org/' prefix
needs a developer, or is left out by --drop-unknown-developers (listed in export.json).
deployment_type and model_availability are the schema's "unknown" unless the table says.

Validate with the schema's own tool (Python >= 3.12; `make eee-validator` makes one):
  .venv-eee/bin/every_eval_ever validate 'OUT/data/*/*/*/*.json*'
Read back with `platinum-jax import eee OUT --level aggregate`.
"""

EPILOG = """\
example:
  platinum-jax compare responses.csv --out cmp
  platinum-jax export eee cmp --out eee --collection livecodebench \\
      --source-organization LiveCodeBench --evaluator-relationship third_party \\
      --eval-library lcb_runner --model-info models.csv
"""


def register(sub) -> None:
    p = sub.add_parser("export", help="write results (compare, fit, ECI, response tables) as "
                       "Every Eval Ever 0.3.0 records",
                       description="Write results in the formats the field shares.")
    fmt = p.add_subparsers(dest="format", metavar="FORMAT", required=True)
    e = fmt.add_parser("eee", help="Every Eval Ever 0.3.0 records", description=DESCRIPTION,
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("source", metavar="SOURCE",
                   help="a compare, analyze eci or fit output directory, or a response table")
    e.add_argument("--out", required=True, help="output directory (the datastore root)")
    s = e.add_argument_group("the source (required)")
    s.add_argument("--collection", required=True,
                   help="datastore collection folder: the benchmark or leaderboard")
    s.add_argument("--source-organization", required=True,
                   help="organisation that provides the data")
    s.add_argument("--evaluator-relationship", required=True,
                   choices=("first_party", "third_party", "collaborative", "other"),
                   help="who ran the evaluation, relative to the models' developers")
    s.add_argument("--eval-library", required=True,
                   help="library or harness that produced the item results")
    o = e.add_argument_group("optional")
    o.add_argument("--eval-library-version", default="unknown",
                   help="its version (default: the schema's 'unknown')")
    o.add_argument("--source-name", help="title of the source (leaderboard, paper)")
    o.add_argument("--dataset-url", action="append", default=[],
                   help="where the evaluation data is (repeatable)")
    o.add_argument("--hf-repo", help="Hugging Face dataset of the evaluation data")
    o.add_argument("--model-info", metavar="CSV", help="the model table (see above)")
    o.add_argument("--drop-unknown-developers", action="store_true",
                   help="leave out models with a flat id and no developer, instead of failing")
    o.add_argument("--items", metavar="CSV",
                   help="response tables: item, input, reference[, choices as a JSON list] "
                        "per item, for instance-level records")
    o.add_argument("--interaction-type", choices=("single_turn",),
                   help="instance records: how the model was queried (single_turn: one "
                        "prompt, one answer, from the table's output column)")
    o.add_argument("--correct-at", type=float,
                   help="instance records: the score from which an item counts as correct "
                        "(needed when scores are not 0/1)")
    o.add_argument("--retrieved", help="record time in Unix seconds (default: now)")
    o.add_argument("--overwrite", action="store_true", help="replace an earlier export in OUT")
    e.set_defaults(func=run)


def _read_csv(path: str, what: str, need: tuple[str, ...]):
    import pandas as pd

    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{what} {p} is a directory; pass a CSV file")
    if not p.is_file():
        raise FileNotFoundError(f"{what} {p} does not exist")
    frame = pd.read_csv(p, dtype=str, keep_default_na=False, na_values=[""])
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} {p} lacks the column(s) {missing} (found {list(frame.columns)})")
    return frame


def _model_table(path: str | None):
    if path is None:
        return None
    frame = _read_csv(path, "--model-info", ("model",))
    return frame.set_index("model")


def _items(path: str | None):
    if path is None:
        return None
    frame = _read_csv(path, "--items", ("item", "input", "reference"))
    if "choices" in frame.columns:
        def parse(v, row):
            if not isinstance(v, str):
                return None
            try:
                out = json.loads(v)
            except json.JSONDecodeError:
                out = None
            if not isinstance(out, list):
                raise ValueError(f"--items {path}: choices of item {row!r} should be a JSON "
                                 f"list of strings (got {v!r})")
            return out
        frame["choices"] = [parse(v, r) for v, r in zip(frame["choices"], frame["item"],
                                                       strict=True)]
    return frame


def _kind(source: Path) -> str:
    if source.is_dir():
        if (source / "accuracy.csv").is_file():
            return "compare"
        if (source / "eci.csv").is_file() and (source / "eci_summary.csv").is_file():
            return "eci"
        if (source / "subjects.csv").is_file() and (source / "fit.json").is_file():
            return "fit"
        raise ValueError(f"SOURCE {source} is a directory but not a compare (accuracy.csv), "
                         "analyze eci (eci.csv, eci_summary.csv) or fit (subjects.csv, fit.json) "
                         "output; pass one of those, or a response table file")
    if source.is_file():
        if source.suffix.lower() in (".csv", ".parquet", ".pq"):
            return "table"
        raise ValueError(f"SOURCE {source}: a response table is a .csv or .parquet file")
    raise FileNotFoundError(f"SOURCE {source}: no such file or directory")


def _records(kind: str, source: Path, src, args):
    import pandas as pd

    from platinum_jax import export

    drop = args.drop_unknown_developers
    instance = (args.items, args.interaction_type, args.correct_at)
    if kind != "table" and any(v is not None for v in instance):
        raise ValueError("--items, --interaction-type and --correct-at make instance records "
                         f"from a response table; SOURCE {source} is a {kind} output")
    if kind == "compare":
        acc = pd.read_csv(source / "accuracy.csv")
        return export.eee_from_accuracy(acc, src, drop_unknown_developers=drop)
    if kind == "eci":
        eci = pd.read_csv(source / "eci.csv")
        summary = pd.read_csv(source / "eci_summary.csv", index_col=0)["value"]
        if "level" not in summary.index:
            raise ValueError(f"{source / 'eci_summary.csv'} records no interval level (an "
                             "output of an earlier version); rerun `analyze eci`")
        replicates = int(summary["replicates"])
        anchors = [(k[4:-1], float(v)) for k, v in summary.items() if k.startswith("eci[")]
        return export.eee_from_eci(eci, src, level=float(summary["level"]) if replicates
                                   else None, replicates=replicates, anchors=anchors,
                                   drop_unknown_developers=drop)
    if kind == "fit":
        info = json.loads((source / "fit.json").read_text())
        subjects = pd.read_csv(source / "subjects.csv")
        model = (info.get("model") or {}).get("name", "the")
        return export.eee_from_fit(subjects, src, model=str(model),
                                   method=str(info.get("method")), level=info.get("interval"),
                                   drop_unknown_developers=drop)
    from platinum_jax.compare import accuracy
    from platinum_jax.data import ResponseTable

    table = ResponseTable.read(source)
    acc = accuracy(table)
    responses = None
    if args.items is not None or args.interaction_type:
        responses = _with_outputs(table.to_frame(), source)
        if table.groups is None:
            responses = responses.assign(group="all")
    return export.eee_from_accuracy(acc, src, responses=responses, items=_items(args.items),
                                    interaction_type=args.interaction_type,
                                    correct_at=args.correct_at, drop_unknown_developers=drop)


def _with_outputs(frame, source: Path):
    """The responses with the table file's ``output`` column (each model's answer)."""
    import pandas as pd

    raw = (pd.read_parquet(source) if source.suffix.lower() in (".parquet", ".pq")
           else pd.read_csv(source, dtype={"output": str}))
    if "subject" not in raw.columns and "model" in raw.columns:
        raw = raw.rename(columns={"model": "subject"})
    if "output" not in raw.columns:
        raise ValueError(f"{source}: instance records need each model's answer, an output "
                         f"column beside subject and item (found {list(raw.columns)})")
    raw = raw[["subject", "item", "output"]].astype({"subject": str, "item": str})
    return frame.merge(raw, on=["subject", "item"], how="left", validate="one_to_one")


def run(args: argparse.Namespace) -> int:
    from platinum_jax import export

    source = Path(args.source)
    kind = _kind(source)
    src = export.EveryEvalEverSource(
        collection=args.collection, source_organization=args.source_organization,
        evaluator_relationship=args.evaluator_relationship, eval_library=args.eval_library,
        eval_library_version=args.eval_library_version, source_name=args.source_name,
        dataset_urls=tuple(args.dataset_url), hf_repo=args.hf_repo,
        models=_model_table(args.model_info), retrieved=args.retrieved)
    logs, dropped = _records(kind, source, src, args)
    if not logs:
        raise ValueError(f"every model of {source} was left out for want of a developer; give "
                         "--model-info with a developer per model")
    summary = {"schema_version": "0.3.0", "source": str(source), "kind": kind,
               "records": len(logs), "instance_records": sum(len(g.samples or ())
                                                             for g in logs),
               "results": sum(len(g.aggregate["evaluation_results"]) for g in logs),
               "left_out_without_developer": dropped}
    written = export.write_every_eval_ever(logs, args.out, overwrite=args.overwrite,
                                           summary=summary)
    print(f"{kind} results of {source}: {summary['records']} aggregate record(s), "
          f"{summary['results']} result(s), {summary['instance_records']} instance line(s)")
    if dropped:
        print(f"left out (flat id, no developer): {len(dropped)} model(s), e.g. "
              f"{', '.join(dropped[:5])} (all listed in export.json)")
    print(f"wrote {len(written)} file(s) below {Path(args.out) / 'data'} and export.json")
    return 0
