"""lm-evaluation-harness logs, from v0.3 to today, and the Evalchemy runs built on them.

Three shapes of a results JSON (its ``results`` object maps each task to its aggregates):

* lm-eval 0.4 and later: ``"acc,none": 0.5`` with ``"acc_stderr,none"`` (metric, filter). A run
  written with ``--log_samples`` keeps, beside ``results_<stamp>.json``, one
  ``samples_<task>_<stamp>.jsonl`` per task: a JSON line per document and filter with
  ``doc_id``, ``filter`` and the document's value of every metric (``"acc": 1.0``).
* lm-eval before 0.4 (and lighteval's results, the Open LLM Leaderboard v1 files among them):
  ``"acc": 0.5`` with ``"acc_stderr"``, no filters; the file has any name (v0.3's
  ``--output_path``). ``--write_out`` writes ``<task>_write_out_info.json`` into
  ``--output_base_path``: a JSON list of per-document records (``doc_id``, ``prompt_<i>``,
  ``logit_<i>``, ``truth`` and the metric values, as strings such as ``"1.0"``). They are read
  from the results file's folder.
* Evalchemy: ``"accuracy_avg"`` (the mean over repeated runs) with ``"accuracy_std_err"``; the
  metric is ``accuracy``. Evalchemy writes no per-document scores.

``level="instance"`` (default) reads the per-document files: item = ``task/doc_id``; tasks
without one are reported in ``missing``. ``level="aggregate"`` reads one score per (model,
task): item = task, with the logged standard error as ``se`` where every row has one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from platinum_jax.importers._common import (
    ImportedResponses,
    LogFormatError,
    collect_files,
    finish,
    format_error,
    load_json,
    require_field,
    score_value,
)

__all__ = ["read_lm_eval"]

WRITE_OUT = "_write_out_info.json"
_STDERR = ("_stderr", "_std_err")
_COUNTS = ("sample_len", "sample_count")  # bookkeeping numbers, never metrics
_NONE_BELOW = ("no results_*.json (nor any JSON file with a 'results' object) below this "
               "directory; point at the --output_path of an lm-evaluation-harness or Evalchemy "
               "run")
_NO_METRIC = ("has no metric: looked for 'metric,filter' keys (lm-eval 0.4 and later), numeric "
              "'<metric>' keys beside '<metric>_stderr' (earlier lm-eval, lighteval) and "
              "'<metric>_avg' beside '<metric>_std_err' (Evalchemy)")


@dataclass(frozen=True)
class _Metric:
    name: str  # the metric as read ("acc", "accuracy")
    filter: str | None  # lm-eval >= 0.4's filter; None where the log has no filters
    key: str  # the aggregate's key in the task's entry
    se_key: str | None  # its standard error's key, if the log has one

    @property
    def label(self) -> str:
        return self.name if self.filter is None else f"{self.name} (filter {self.filter})"


def _is_results(data: object) -> bool:
    return isinstance(data, dict) and isinstance(data.get("results"), dict)


def _results_logs(paths: Iterable[str | Path]) -> list[tuple[Path, object]]:
    """(file, parsed JSON) of every results file: a ``results_*.json`` is always one; another
    JSON file found in a directory only when it has a ``results`` object."""
    logs: list[tuple[Path, object]] = []
    for p in map(Path, paths):
        files = collect_files(
            [p],
            below=lambda d: (f for f in d.rglob("*.json") if not f.name.endswith(WRITE_OUT)),
            accepts=lambda f: f.suffix == ".json" and not f.name.endswith(WRITE_OUT),
            none_below=_NONE_BELOW,
            wrong_file="expected an lm-evaluation-harness results JSON file (results_<date>"
            ".json, or v0.3's --output_path file; a <task>_write_out_info.json is read from "
            "beside it) or a directory holding them",
        )
        kept = []
        for f in files:
            if p.is_dir() and not f.name.startswith("results_"):
                try:
                    data = load_json(f)
                except LogFormatError:
                    continue  # not a log
                if not _is_results(data):
                    continue
            else:
                data = load_json(f)
            kept.append((f, data))
        if not kept:
            raise FileNotFoundError(f"{p}: {_NONE_BELOW}")
        logs.extend(kept)
    return logs


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _metrics(entry: dict, task: str, path: Path) -> list[_Metric]:
    """The metrics of a task's aggregate entry, in the log's order; standard errors are never
    among them."""
    out = []
    if any("," in key for key in entry):  # lm-eval >= 0.4
        for key in entry:
            if "," not in key or "_stderr," in key:
                continue
            m, flt = key.split(",", 1)
            se = f"{m}_stderr,{flt}"
            out.append(_Metric(m, flt, key, se if se in entry else None))
    else:
        for key, value in entry.items():
            if (not _is_number(value) or key.endswith(_STDERR) or key.startswith("num_")
                    or key in _COUNTS):
                continue
            name = key[:-4] if key.endswith("_avg") and key[:-4] not in entry else key
            se = next((s for s in (f"{name}_stderr", f"{name}_std_err") if s in entry), None)
            out.append(_Metric(name, None, key, se))
    if not out:
        raise format_error(path, f"results.{task}", _NO_METRIC)
    return out


def _choose(
    metrics: list[_Metric],
    wanted: Sequence[str] | None,
    filt: str | None,
    task: str,
    path: Path,
) -> _Metric:
    candidates = [m for m in metrics
                  if (filt in (None, "none") if m.filter is None
                      else filt is None or m.filter == filt)]
    if wanted is None:
        if candidates:
            if candidates[0].filter is None:  # unfiltered logs: one with a standard error first
                return next((m for m in candidates if m.se_key), candidates[0])
            return candidates[0]
    else:
        for w in wanted:
            for m in candidates:
                if w in (m.name, m.key):
                    return m
    want = "any metric" if wanted is None else f"metric {' or '.join(map(repr, wanted))}"
    unfiltered = all(m.filter is None for m in metrics)
    flt = "" if filt is None or (filt == "none" and unfiltered) else f" with filter {filt!r}"
    note = (" (no filters: an lm-eval < 0.4, lighteval or Evalchemy entry)"
            if filt not in (None, "none") and unfiltered else "")
    raise ValueError(
        f"{path}: task {task!r} has no {want}{flt}; it reports "
        f"{', '.join(m.label for m in metrics)}{note}. Choose with metric=... / filter=... "
        "(CLI: --metric, --filter)"
    )


def _subject(results: dict, path: Path) -> str:
    for where in (results, results.get("config_general"), results.get("config")):
        name = where.get("model_name") if isinstance(where, dict) else None
        if isinstance(name, str) and name:
            return name
    config = results.get("config") or {}
    args = _model_args(config.get("model_args"))
    model = config.get("model")
    if isinstance(model, str) and model:
        return f"{model}:{args}" if args else model
    raise format_error(path, "", "names no model (fields 'model_name', "
                                 "'config_general.model_name' and 'config.model')")


def _model_args(value) -> str | None:
    """Model arguments as lm-eval's own ``key=value,...`` string (newer versions log a dict)."""
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items()) or None
    return value if isinstance(value, str) and value else None


def _date(value) -> datetime | None:
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), tz=UTC)
    return None


def _is_group(results: dict, task: str, has_samples: bool, n_samples: dict) -> bool:
    """A group of tasks (its members carry the items), or lighteval's mean over all tasks."""
    if has_samples:
        return False
    if task == "all" and ("config_general" in results
                          or any("|" in t for t in results.get("results") or {})):
        return True
    if task in (results.get("groups") or {}) or (results.get("group_subtasks") or {}).get(task):
        return True
    return bool(n_samples) and task not in n_samples


def read_lm_eval(
    paths: str | Path | Iterable[str | Path],
    *,
    metric: str | Sequence[str] | None = None,
    filter: str | None = "none",  # lm-eval's own word for it
    tasks: Sequence[str] | None = None,
    level: Literal["instance", "aggregate"] = "instance",
) -> ImportedResponses:
    """Read lm-evaluation-harness (and Evalchemy) runs into responses.

    Args:
        paths: results JSON files (``results_*.json``; any name for lm-eval < 0.4) or
            directories searched recursively for them (a ``results_*.json``, or any JSON file
            with a ``results`` object). One ``--output_path`` may hold several model runs; each
            is one subject.
        metric: the metric (``"acc"``, ``"acc_norm"``, ``"exact_match"``, Evalchemy's
            ``"accuracy"`` ...), or several in order of preference (the first a task reports is
            used). None takes each task's first reported metric (in logs without filters, the
            first that has a standard error). A ``*_stderr`` / ``*_std_err`` key is never a
            metric.
        filter: lm-eval's filter name (``"none"``, ``"strict-match"``, ...); None accepts any
            (the first reported). Logs before lm-eval 0.4 have no filters: ``"none"`` or None.
        tasks: keep only these tasks (all by default).
        level: ``"instance"`` (per-document scores: ``samples_<task>_<stamp>.jsonl`` of lm-eval
            >= 0.4, ``<task>_write_out_info.json`` of earlier versions) or ``"aggregate"`` (one
            score per run and task; Evalchemy's only level).

    Returns:
        :class:`ImportedResponses`: subject = the ``model_name`` of the run (else
        ``config_general.model_name``, else ``model:model_args``), group = task, response =
        the metric. Instance level: item = ``task/doc_id``; documents without a finite value
        go to ``missing``, and so do tasks without a per-document file (item ``task/*``).
        Aggregate level: item = task, ``se`` = the logged standard error (a column only where
        every row has one). ``metadata`` has one row per run and task with model arguments,
        few-shot count, date, versions, the log's aggregate and its standard error.

    Raises:
        LogFormatError: a file that is not JSON (line named), lacks a required field or has a
            task entry of no known shape (the keys looked for named).
        ValueError: a chosen metric or filter that a task does not report (its metrics named).
    """
    if level not in ("instance", "aggregate"):
        raise ValueError(f"level={level!r}: choose 'instance' or 'aggregate'")
    if isinstance(paths, str | Path):
        paths = [paths]
    if isinstance(metric, str):
        metric = [metric]
    rows: list[dict] = []
    meta: list[dict] = []
    missing: list[dict] = []
    logs = _results_logs(paths)
    for path, results in logs:
        per_task = require_field(results, "results", path, "top level", dict)
        subject = _subject(results, path)
        stamp = path.stem[len("results_"):] if path.name.startswith("results_") else None
        config = results.get("config") if isinstance(results.get("config"), dict) else {}
        n_shot = results.get("n-shot") or {}
        n_samples = results.get("n-samples") or {}
        versions = results.get("versions") or {}
        samples = {} if stamp is None else {
            s.name[len("samples_"): -len(f"_{stamp}.jsonl")]: s
            for s in path.parent.glob(f"samples_*_{stamp}.jsonl")
        }
        for task, entry in per_task.items():
            if tasks is not None and task not in tasks:
                continue
            if not isinstance(entry, dict):
                raise format_error(path, f"results.{task}", "should be a JSON object")
            if _is_group(results, task, task in samples, n_samples):
                continue
            chosen = _choose(_metrics(entry, task, path), metric, filter, task, path)
            expected = (n_samples.get(task) or {}).get("effective")
            info = {
                "subject": subject,
                "task": task,
                "file": str(path),
                "samples_file": str(samples[task]) if task in samples else None,
                "metric": chosen.name,
                "filter": chosen.filter,
                "model": config.get("model"),
                "model_args": _model_args(config.get("model_args")),
                "num_fewshot": n_shot.get(task) if n_shot else config.get("num_fewshot"),
                "date": _date(results.get("date")),
                "task_version": versions.get(task),
                "lm_eval_version": results.get("lm_eval_version"),
                "git_hash": results.get("git_hash"),
                "aggregate": entry.get(chosen.key),
                "stderr": entry.get(chosen.se_key) if chosen.se_key else None,
                "n_expected": expected,
            }
            meta.append(info)
            base = {"subject": subject, "group": task, "file": str(path), "task": task,
                    "metric": chosen.name}
            if level == "aggregate":
                _aggregate_row(entry, chosen, base, rows, missing)
                continue
            if chosen.filter is None:
                _unfiltered_instances(path, results, chosen, base, info, rows, missing)
                continue
            if task not in samples:
                info["n_read"] = 0
                missing.append({**base, "item": f"{task}/*",
                                "reason": "no samples file: the run was not written with "
                                          "--log_samples; or read level='aggregate'"})
                continue
            got = _read_samples(samples[task], subject, task, chosen.name, chosen.filter,
                                rows, missing)
            info["n_read"] = got
            if isinstance(expected, int) and got < expected:
                missing.append({**base, "item": f"{task}/*", "file": str(samples[task]),
                                "reason": f"{expected - got} of {expected} documents have no "
                                          "line in the samples file"})
    if tasks is not None and not meta:
        raise ValueError(f"none of the tasks {list(tasks)} is in {[str(p) for p, _ in logs]}")
    frame: list[dict] | pd.DataFrame = rows
    if level == "aggregate" and rows:
        frame = pd.DataFrame(rows)
        if frame["se"].isna().any():
            frame = frame.drop(columns="se")  # se only where every score has one
    return finish(frame, meta, missing, "lm-eval", ", ".join(str(p) for p, _ in logs))


def _aggregate_row(entry: dict, chosen: _Metric, base: dict, rows, missing) -> None:
    task = base["task"]
    value = score_value(entry.get(chosen.key))
    if value is None:
        missing.append({**base, "item": task, "reason": f"results.{task}.{chosen.key}="
                                                        f"{entry.get(chosen.key)!r} is not a "
                                                        "finite number"})
        return
    se = score_value(entry.get(chosen.se_key)) if chosen.se_key else None
    rows.append({"subject": base["subject"], "item": task, "group": task, "response": value,
                 "se": np.nan if se is None else se, "file": base["file"], "task": task,
                 "metric": chosen.name})


def _unfiltered_instances(path: Path, results: dict, chosen: _Metric, base: dict, info: dict,
                          rows, missing) -> None:
    """Per-document scores of a log without filters: v0.3's write_out file beside it."""
    task = base["task"]
    entry = results["results"][task]
    write_out = path.parent / f"{task}{WRITE_OUT}"
    if not write_out.is_file():
        info["n_read"] = 0
        if any(k.endswith("_avg") for k in entry) or "examples" in entry:
            why = "Evalchemy writes no per-document scores"
        elif "config_general" in results:
            why = "lighteval keeps its per-sample scores in details files (read_lighteval)"
        else:
            why = (f"no {write_out.name} beside the results file (lm-eval < 0.4 writes it "
                   "with --write_out into --output_base_path)")
        missing.append({**base, "item": f"{task}/*",
                        "reason": f"{why}; read level='aggregate' for the task's score"})
        return
    info["samples_file"] = str(write_out)
    info["n_read"] = _read_write_out(write_out, base, chosen.name, rows, missing)


def _written_value(value: object) -> float | None:
    """A v0.3 write_out metric: written with ``str()`` (``"1.0"``, ``"True"``), or a number."""
    if isinstance(value, str):
        if value in ("True", "False"):
            return float(value == "True")
        try:
            number = float(value)
        except ValueError:
            return None
        return number if np.isfinite(number) else None
    return score_value(value)


def _read_write_out(path: Path, base: dict, metric: str, rows, missing) -> int:
    records = load_json(path)
    if not isinstance(records, list):
        raise format_error(path, "top level", "should be a JSON list of per-document records "
                                              "(lm-eval < 0.4 --write_out)")
    task = base["task"]
    for k, rec in enumerate(records):
        where = f"record {k}"
        doc_id = require_field(rec, "doc_id", path, where, (int, str))
        item = f"{task}/{doc_id}"
        value = _written_value(rec.get(metric))
        if value is None:
            why = (f"no field {metric!r}" if metric not in rec
                   else f"{metric}={rec[metric]!r} is not a number")
            missing.append({**base, "item": item, "file": str(path), "reason": f"{where}: {why}"})
            continue
        rows.append({**base, "item": item, "response": value, "file": str(path)})
    return len(records)


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
