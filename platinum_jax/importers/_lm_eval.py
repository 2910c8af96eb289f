"""lm-evaluation-harness logs: the ``--output_path`` layout written with ``--log_samples``.

A run writes, per model, ``results_<stamp>.json`` (aggregates, configuration, few-shot counts,
versions) and one ``samples_<task>_<stamp>.jsonl`` per task: one JSON line per document and
filter, holding ``doc_id``, ``filter`` and the per-document value of every metric of the task
(``"acc": 1.0``). Each document becomes an item ``task/doc_id`` in group ``task``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from platinum_jax.importers._common import (
    ImportedResponses,
    collect_files,
    finish,
    format_error,
    load_json,
    require_field,
    score_value,
)

__all__ = ["read_lm_eval"]


def _results_files(paths: Iterable[str | Path]) -> list[Path]:
    return collect_files(
        paths,
        below=lambda d: d.rglob("results_*.json"),
        accepts=lambda f: f.name.startswith("results_") and f.suffix == ".json",
        none_below="no results_*.json below this directory; point at the --output_path of an "
        "lm-evaluation-harness run (written with --log_samples)",
        wrong_file="expected an lm-evaluation-harness results_<date>.json file or a directory "
        "holding them",
    )


def _metric_keys(entry: dict, task: str, path: Path) -> list[tuple[str, str]]:
    """(metric, filter) pairs of a task's aggregate entry, in the log's order."""
    pairs = []
    for key in entry:
        if "," not in key or "_stderr," in key:
            continue
        metric, flt = key.split(",", 1)
        pairs.append((metric, flt))
    if not pairs:
        raise format_error(path, f"results.{task}", "has no 'metric,filter' entries")
    return pairs


def _choose(
    pairs: list[tuple[str, str]],
    metrics: Sequence[str] | None,
    filt: str | None,
    task: str,
    path: Path,
) -> tuple[str, str]:
    names = [f"{m} (filter {f})" for m, f in pairs]
    candidates = [p for p in pairs if filt is None or p[1] == filt]
    if metrics is None:
        if candidates:
            return candidates[0]
    else:
        for m in metrics:
            for pair in candidates:
                if pair[0] == m:
                    return pair
    want = "any metric" if metrics is None else f"metric {' or '.join(map(repr, metrics))}"
    flt = "" if filt is None else f" with filter {filt!r}"
    raise ValueError(
        f"{path}: task {task!r} has no {want}{flt}; it reports {', '.join(names)}. Choose with "
        "metric=... / filter=... (CLI: --metric, --filter)"
    )


def _subject(results: dict, path: Path) -> str:
    name = results.get("model_name")
    if isinstance(name, str) and name:
        return name
    config = results.get("config") or {}
    args = _model_args(config.get("model_args"))
    model = config.get("model")
    if isinstance(model, str) and model:
        return f"{model}:{args}" if args else model
    raise format_error(path, "", "names no model (fields 'model_name' and 'config.model')")


def _model_args(value) -> str | None:
    """Model arguments as lm-eval's own ``key=value,...`` string (newer versions log a dict)."""
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items()) or None
    return value if isinstance(value, str) and value else None


def _date(value) -> datetime | None:
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), tz=UTC)
    return None


def read_lm_eval(
    paths: str | Path | Iterable[str | Path],
    *,
    metric: str | Sequence[str] | None = None,
    filter: str | None = "none",  # lm-eval's own word for it
    tasks: Sequence[str] | None = None,
) -> ImportedResponses:
    """Read lm-evaluation-harness runs into item-level responses.

    Args:
        paths: ``results_*.json`` files or directories searched recursively for them (one
            ``--output_path`` may hold several model runs; each is one subject).
        metric: the per-document metric (``"acc"``, ``"acc_norm"``, ``"exact_match"``, ...), or
            several in order of preference (the first a task reports is used). None takes each
            task's first reported metric.
        filter: lm-eval's filter name (``"none"``, ``"strict-match"``, ...); None accepts any
            (the first reported).
        tasks: keep only these tasks (all by default).

    Returns:
        :class:`ImportedResponses`: subject = the ``model_name`` of the run (else
        ``model:model_args``), item = ``task/doc_id``, group = task, response = the metric.
        Documents whose line lacks a finite value of the metric go to ``missing``, and so do
        tasks whose samples file is absent (item ``task/*``). ``metadata`` has one row per run
        and task with model arguments, few-shot count, date, versions and the log's aggregate.

    Raises:
        LogFormatError: a file that is not JSON (line named) or lacks a required field.
        ValueError: a chosen metric or filter that a task does not report (its metrics named).
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    if isinstance(metric, str):
        metric = [metric]
    rows: list[dict] = []
    meta: list[dict] = []
    missing: list[dict] = []
    files = _results_files(paths)
    for path in files:
        results = load_json(path)
        per_task = require_field(results, "results", path, "top level", dict)
        subject = _subject(results, path)
        stamp = path.stem[len("results_"):]
        config = results.get("config") or {}
        n_shot = results.get("n-shot") or {}
        n_samples = results.get("n-samples") or {}
        versions = results.get("versions") or {}
        samples = {
            s.name[len("samples_"): -len(f"_{stamp}.jsonl")]: s
            for s in path.parent.glob(f"samples_*_{stamp}.jsonl")
        }
        for task, entry in per_task.items():
            if tasks is not None and task not in tasks:
                continue
            if not isinstance(entry, dict):
                raise format_error(path, f"results.{task}", "should be a JSON object")
            if task not in samples and task not in n_samples:
                continue  # a group of tasks: its members carry the items
            m, f = _choose(_metric_keys(entry, task, path), metric, filter, task, path)
            expected = (n_samples.get(task) or {}).get("effective")
            info = {
                "subject": subject,
                "task": task,
                "file": str(path),
                "samples_file": str(samples[task]) if task in samples else None,
                "metric": m,
                "filter": f,
                "model": config.get("model"),
                "model_args": _model_args(config.get("model_args")),
                "num_fewshot": n_shot.get(task),
                "date": _date(results.get("date")),
                "task_version": versions.get(task),
                "lm_eval_version": results.get("lm_eval_version"),
                "git_hash": results.get("git_hash"),
                "aggregate": entry.get(f"{m},{f}"),
                "n_expected": expected,
            }
            if task not in samples:
                info["n_read"] = 0
                meta.append(info)
                missing.append({"subject": subject, "item": f"{task}/*", "group": task,
                                "file": str(path), "task": task, "metric": m,
                                "reason": "no samples file: the run was not written with "
                                          "--log_samples"})
                continue
            got = _read_samples(samples[task], subject, task, m, f, rows, missing)
            info["n_read"] = got
            meta.append(info)
            if isinstance(expected, int) and got < expected:
                missing.append({"subject": subject, "item": f"{task}/*", "group": task,
                                "file": str(samples[task]), "task": task, "metric": m,
                                "reason": f"{expected - got} of {expected} documents have no "
                                          "line in the samples file"})
    if tasks is not None and not meta:
        raise ValueError(f"none of the tasks {list(tasks)} is in {[str(p) for p in files]}")
    return finish(rows, meta, missing, "lm-eval", ", ".join(str(p) for p in files))


def _read_samples(path: Path, subject, task, metric, filt, rows, missing) -> int:
    seen = 0
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise format_error(path, f"line {lineno}", f"is not valid JSON: {exc.msg}") from None
            where = f"line {lineno}"
            doc_id = require_field(rec, "doc_id", path, where, (int, str))
            if rec.get("filter", filt) != filt:
                continue
            seen += 1
            item = f"{task}/{doc_id}"
            value = score_value(rec.get(metric))
            if value is None:
                why = ("no field " + repr(metric)) if metric not in rec else (
                    f"{metric}={rec[metric]!r} is not a finite number")
                missing.append({"subject": subject, "item": item, "group": task,
                                "file": str(path), "task": task, "metric": metric,
                                "reason": f"{where}: {why}"})
                continue
            rows.append({"subject": subject, "item": item, "group": task, "response": value,
                         "file": str(path), "task": task, "metric": metric})
    return seen
