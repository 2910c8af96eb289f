"""lighteval details: the per-sample files of a run saved with ``--save-details``.

lighteval writes ``{output_dir}/details/{model_name}/{timestamp}/details_{task}_{timestamp}
.parquet``, one file per task (``task`` as lighteval names it: ``suite|task|fewshot`` such as
``lighteval|gsm8k|0`` or ``leaderboard|arc:challenge|25``; ``gsm8k|0`` in recent versions),
and the run's aggregates in ``{output_dir}/results/{model_name}/results_{timestamp}.json``
(``config_general.model_name``, ``results``). The Open LLM Leaderboard v1 ``details_*``
datasets have the same files, with ``results_{timestamp}.json`` beside the timestamp folders.

Two layouts of a details row:

* lighteval >= 0.11: ``doc`` (the document: ``query``, ``choices``, ``gold_index``, ``id``
  (its index in the dataset split), ...), ``model_response`` and ``metric`` (metric -> score).
* earlier versions: ``example``, ``full_prompt``, ``predictions``, ``gold``, ``choices``, ...,
  and ``metrics`` (metric -> score); no document id. A run whose rows could not be stored as
  they were kept every field as its ``str()``: such ``metrics`` are parsed back.

Item ids: ``task/<doc.id>`` where every row of the file has a ``doc.id``, else
``task/<row position>`` (0-based, the file's order, which follows the task's documents). The
same JSON records as JSON Lines (``.jsonl``) or a JSON list (``.json``, e.g. written with
``datasets.Dataset.to_json``) are read too.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from platinum_jax.importers._common import (
    ImportedResponses,
    LogFormatError,
    collect_files,
    finish,
    format_error,
    load_json,
    score_value,
)

__all__ = ["read_lighteval"]

_SUFFIXES = (".parquet", ".jsonl", ".json")
_STAMP = re.compile(r"_(\d{4}-\d{2}-\d{2}T[0-9.\-]+)$")


def _detail_files(paths: Iterable[str | Path]) -> list[Path]:
    return collect_files(
        paths,
        below=lambda d: (f for f in d.rglob("details_*") if f.suffix in _SUFFIXES and f.is_file()),
        accepts=lambda f: f.name.startswith("details_") and f.suffix in _SUFFIXES,
        none_below="no lighteval details_*.parquet below it; point at the --output-dir of a run "
        "saved with --save-details (or its details/ folder)",
        wrong_file="expected a lighteval details_<task>_<timestamp>.parquet (or .jsonl / .json) "
        "file or a directory holding them",
    )


def _task_and_stamp(path: Path) -> tuple[str, str | None]:
    stem = path.name[len("details_"): -len(path.suffix)]
    folder = path.parent.name
    if len(stem) > len(folder) + 1 and stem.endswith(f"_{folder}"):
        return stem[: -len(folder) - 1], folder
    found = _STAMP.search(stem)
    if found:
        return stem[: found.start()], found.group(1)
    return stem, None


def _run_folder(path: Path, stamp: str | None) -> Path:
    """The folder that holds the run's timestamp folders (``details/<model>``)."""
    return path.parent.parent if stamp is not None and path.parent.name == stamp else path.parent


def _results_file(run: Path, stamp: str | None) -> Path | None:
    """The run's ``results_<stamp>.json``: beside the timestamp folder (older lighteval, the
    Hub's details datasets) or under ``<output_dir>/results/<model>/``."""
    if stamp is None:
        return None
    candidates = [run / f"results_{stamp}.json"]
    parts = run.parts
    if "details" in parts:
        k = len(parts) - 1 - parts[::-1].index("details")
        candidates.append(Path(*parts[:k], "results", *parts[k + 1:], f"results_{stamp}.json"))
    return next((c for c in candidates if c.is_file()), None)


def _model_from_path(run: Path) -> str:
    parts = run.parts
    if "details" in parts:
        k = len(parts) - 1 - parts[::-1].index("details")
        if parts[k + 1:]:
            return "/".join(parts[k + 1:])
    if run.name.startswith("details_"):  # a Hub details dataset: details_<org>__<model>
        return run.name[len("details_"):].replace("__", "/")
    return run.name


def _records(path: Path) -> list[dict]:
    if path.suffix == ".parquet":
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow's errors have no common base
            raise format_error(path, "", f"is not a readable Parquet file ({exc})") from None
        return frame.to_dict("records")
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            data = None  # JSON Lines under a .json name
        else:
            if isinstance(data, list):
                return data
            raise format_error(path, "top level", "should be a list of per-sample records")
    out = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise format_error(path, f"line {lineno}", f"is not valid JSON: {exc.msg}") from None
    return out


def _metric_field(rec: object, path: Path, where: str) -> str:
    if not isinstance(rec, dict):
        raise format_error(path, where, f"expected a record, found {type(rec).__name__}")
    for field in ("metric", "metrics"):  # lighteval >= 0.11, earlier
        if field in rec:
            return field
    have = ", ".join(sorted(map(str, rec))[:12])
    raise format_error(path, where, "has no field 'metric' (lighteval >= 0.11) or 'metrics' "
                                    f"(earlier versions) (fields present: {have})")


def _as_dict(value: object) -> dict | None:
    """A row's metric scores: a dict, a Parquet map (pairs), or the ``str()`` of a dict."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                return None
    if isinstance(value, list | np.ndarray) and all(
            isinstance(p, tuple | list) and len(p) == 2 for p in value):
        value = {k: v for k, v in value}
    return value if isinstance(value, dict) else None


def _doc_id(rec: dict) -> str | None:
    doc = rec.get("doc")
    if isinstance(doc, dict) and doc.get("id") not in (None, ""):
        return str(doc["id"])
    return None


def read_lighteval(
    paths: str | Path | Iterable[str | Path],
    *,
    metric: str | Sequence[str] | None = None,
) -> ImportedResponses:
    """Read lighteval details files (per-sample scores) into item-level responses.

    Args:
        paths: ``details_<task>_<timestamp>.parquet`` files (or ``.jsonl`` / ``.json`` with
            the same records) or directories searched recursively for them: a run's
            ``--output-dir``, its ``details/`` folder, a downloaded details dataset.
        metric: the per-sample metric (``"acc"``, ``"em"``, ``"extractive_match"``, ...), or
            several in order of preference (the first a file reports is used). None takes each
            file's first metric.

    Returns:
        :class:`ImportedResponses`: subject = ``config_general.model_name`` of the run's
        ``results_<timestamp>.json`` where one is found, else the model folder below
        ``details/`` (``org/model``); item = ``task/<doc.id>`` (lighteval >= 0.11) or
        ``task/<row position>`` (earlier versions, whose rows carry no id); group = task;
        response = the metric. Rows without a finite value go to ``missing`` with the reason.
        ``metadata`` has one row per file: timestamp, results file, the run's aggregate and
        its standard error, model and lighteval revisions, the layout of the rows.

    Raises:
        LogFormatError: a file that is not Parquet / JSON, or whose rows lack a metric field
            (file and row named).
        ValueError: a chosen metric that a file does not report (its metrics named).
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    if isinstance(metric, str):
        metric = [metric]
    files = _detail_files(paths)
    rows: list[dict] = []
    meta: list[dict] = []
    missing: list[dict] = []
    for path in files:
        task, stamp = _task_and_stamp(path)
        run = _run_folder(path, stamp)
        results_path = _results_file(run, stamp)
        results = _load_results(results_path)
        general = results.get("config_general") or {}
        name = general.get("model_name")
        subject = name if isinstance(name, str) and name else _model_from_path(run)
        records = _records(path)
        if not records:
            missing.append({"subject": subject, "item": f"{task}/*", "group": task,
                            "file": str(path), "task": task, "metric": None,
                            "reason": "the details file has no rows"})
            continue
        field = _metric_field(records[0], path, "row 0")
        scores = []
        for k, rec in enumerate(records):
            _metric_field(rec, path, f"row {k}")  # every row a record with its scores
            scores.append(_as_dict(rec.get(field)))
        chosen = _choose(scores, metric, task, path)
        ids = [_doc_id(r) for r in records]
        if not all(ids):
            ids = [str(k) for k in range(len(records))]
        base = {"subject": subject, "group": task, "file": str(path), "task": task,
                "metric": chosen}
        n_read = _rows(records, scores, ids, field, chosen, base, rows, missing)
        aggregate = (results.get("results") or {}).get(task) or {}
        meta.append({
            "subject": subject, "task": task, "file": str(path), "metric": chosen,
            "timestamp": stamp, "results_file": str(results_path) if results_path else None,
            "aggregate": aggregate.get(chosen), "stderr": aggregate.get(f"{chosen}_stderr"),
            "model_sha": general.get("model_sha"), "lighteval_sha": general.get("lighteval_sha"),
            "layout": "doc/model_response/metric" if field == "metric"
            else "example/predictions/metrics",
            "n_rows": len(records), "n_read": n_read,
        })
    return finish(rows, meta, missing, "lighteval", ", ".join(map(str, files)))


def _load_results(path: Path | None) -> dict:
    if path is None:
        return {}
    try:
        data = load_json(path)
    except LogFormatError:
        return {}  # the details are read without it; the subject comes from the path
    return data if isinstance(data, dict) else {}


def _choose(scores: list[dict | None], metric: Sequence[str] | None, task: str,
            path: Path) -> str:
    available = list(dict.fromkeys(k for s in scores if s for k in s))
    if not available:
        raise format_error(path, "", "no row has readable metric scores (a 'metric' or "
                                     "'metrics' mapping of metric names to numbers)")
    if metric is None:
        return available[0]
    for m in metric:
        if m in available:
            return m
    raise ValueError(
        f"{path}: task {task!r} has no metric {' or '.join(map(repr, metric))}; its details "
        f"report {', '.join(available)}. Choose with metric=... (CLI: --metric)"
    )


def _rows(records, scores, ids, field, chosen, base, rows, missing) -> int:
    """One response per item: an item whose id repeats (lighteval logs a document once per
    sampling method, each row with its own metrics) takes the rows that carry the metric."""
    found: dict[str, list[float]] = {}
    reasons: dict[str, str] = {}
    for k, (rec, score, sid) in enumerate(zip(records, scores, ids, strict=True)):
        if score is None:
            reasons.setdefault(sid, f"row {k}: {field}={rec.get(field)!r} is not a mapping of "
                                    "metric scores")
            continue
        value = score_value(score.get(chosen))
        if value is None:
            why = (f"no metric {chosen!r}" if chosen not in score
                   else f"{chosen}={score[chosen]!r} is not a finite number")
            reasons.setdefault(sid, f"row {k}: {why}")
            continue
        found.setdefault(sid, []).append(value)
    for sid in dict.fromkeys(ids):
        item = f"{base['task']}/{sid}"
        if sid in found:
            rows.extend({**base, "item": item, "response": v} for v in found[sid])
        else:
            missing.append({**base, "item": item, "reason": reasons[sid]})
    return sum(map(len, found.values()))
