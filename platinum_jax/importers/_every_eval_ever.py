"""Every Eval Ever records: aggregate ``<uuid>.json`` logs (``EvaluationLog``) and their
instance-level ``<uuid>_samples.jsonl`` sidecars.

An aggregate log is one model (``model_info.id``) with a list of ``evaluation_results``, each an
``evaluation_name`` (the benchmark or task) and a metric (``evaluation_result_id`` or
``metric_config.metric_name``) with ``score_details.score``. Its ``detailed_evaluation_results``
names a JSONL sidecar whose lines carry ``sample_id``, ``evaluation_name``,
``evaluation_result_id`` and ``evaluation.score``: one line per sample and metric.

``level="instance"`` (default) reads the sidecars: item = ``evaluation_name/sample_id``;
results without a sidecar are reported in ``missing``. ``level="aggregate"`` reads the
aggregate scores: item = ``evaluation_name``, with the reported standard error as ``se`` where
every row has one.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import pandas as pd

from platinum_jax.importers._common import (
    ImportedResponses,
    collect_files,
    finish,
    format_error,
    load_json,
    require_field,
    score_value,
)

__all__ = ["read_every_eval_ever"]

# In a directory, records are the files the datastore names by a UUID; other JSON (an export's
# summary, a manifest) is not a record.
_RECORD_NAME = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                          r"[0-9a-fA-F]{12}\.json")


def _aggregate_files(paths: Iterable[str | Path]) -> list[Path]:
    return collect_files(
        paths,
        below=lambda d: (f for f in d.rglob("*.json") if _RECORD_NAME.fullmatch(f.name)),
        accepts=lambda f: f.suffix == ".json",
        none_below="no Every Eval Ever aggregate logs (<uuid>.json, the datastore's names) "
        "below it",
        wrong_file="point at an aggregate <uuid>.json log (its _samples.jsonl sidecar is found "
        "beside it) or a directory of them",
    )


def _metric_name(result: dict) -> str | None:
    rid = result.get("evaluation_result_id")
    if isinstance(rid, str) and rid:
        return rid
    config = result.get("metric_config") or {}
    name = config.get("metric_name") or config.get("evaluation_description")
    return name if isinstance(name, str) else None


def _timestamp(value) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(value), tz=UTC)
    except (TypeError, ValueError):
        return None


def read_every_eval_ever(
    paths: str | Path | Iterable[str | Path],
    *,
    metric: str | Sequence[str] | None = None,
    level: Literal["instance", "aggregate"] = "instance",
    subject: Literal["id", "name"] = "id",
    item: Literal["qualified", "sample_id"] = "qualified",
) -> ImportedResponses:
    """Read Every Eval Ever logs into responses.

    Args:
        paths: aggregate ``.json`` logs or directories searched recursively for them.
        metric: the result to read per evaluation (``evaluation_result_id`` or metric name), or
            several in order of preference; None takes each evaluation's first result.
        level: ``"instance"`` (per-sample scores from the sidecars) or ``"aggregate"``
            (one score per evaluation: benchmark-level responses).
        subject: label each model by ``model_info.id`` (default) or ``model_info.name`` (the
            source's own label; what ``platinum-jax export eee`` writes from a table's
            subjects).
        item: instance items as ``evaluation_name/sample_id`` (default; ids unique across
            evaluations) or the bare ``sample_id``.

    Returns:
        :class:`ImportedResponses` with subject = ``model_info.id``, group = evaluation name.
        ``metadata`` has one row per log and evaluation (evaluation id, source, library and
        version, timestamp, developer, model arguments, the aggregate score and its
        uncertainty: ``lower``, ``upper``, ``confidence_level``, ``interval_method``,
        ``standard_error``, ``num_samples``).

    Raises:
        LogFormatError: a log or sidecar that is not JSON, lacks a field, names another model,
            or does not match the checksum its aggregate records (file and line named).
        ValueError: a chosen metric that an evaluation does not report (its metrics listed).
    """
    if level not in ("instance", "aggregate"):
        raise ValueError(f"level={level!r}: choose 'instance' or 'aggregate'")
    if subject not in ("id", "name"):
        raise ValueError(f"subject={subject!r}: choose 'id' or 'name'")
    if item not in ("qualified", "sample_id"):
        raise ValueError(f"item={item!r}: choose 'qualified' or 'sample_id'")
    if isinstance(paths, str | Path):
        paths = [paths]
    if isinstance(metric, str):
        metric = [metric]
    files = _aggregate_files(paths)
    rows: list[dict] = []
    meta: list[dict] = []
    missing: list[dict] = []
    for path in files:
        log = load_json(path)
        model = require_field(log, "model_info", path, "top level", dict)
        model_id = require_field(model, "id", path, "model_info", str)
        label = require_field(model, subject, path, "model_info", str)
        results = require_field(log, "evaluation_results", path, "top level", list)
        chosen = _choose_results(results, metric, path)
        source = log.get("source_metadata") or {}
        library = log.get("eval_library") or {}
        for name, (k, result) in chosen.items():
            m = _metric_name(result)
            details = require_field(result, "score_details", path,
                                    f"evaluation_results[{k}]", dict)
            score = score_value(details.get("score"))
            unc = details.get("uncertainty") or {}
            ci = unc.get("confidence_interval") or {}
            meta.append({
                "subject": label, "task": name, "file": str(path), "metric": m,
                "evaluation_id": log.get("evaluation_id"),
                "source_name": source.get("source_name"),
                "source_organization": source.get("source_organization_name"),
                "evaluator_relationship": source.get("evaluator_relationship"),
                "eval_library": library.get("name"), "eval_library_version":
                library.get("version"), "date": _timestamp(
                    result.get("evaluation_timestamp") or log.get("evaluation_timestamp")),
                "developer": model.get("developer"),
                "model_args": (model.get("additional_details") or {}).get("model_args"),
                "aggregate": score, "lower": score_value(ci.get("lower")),
                "upper": score_value(ci.get("upper")),
                "confidence_level": score_value(ci.get("confidence_level")),
                "interval_method": ci.get("method"),
                "standard_error": score_value((unc.get("standard_error") or {}).get("value")),
                "num_samples": unc.get("num_samples"), "model_id": model_id,
                "model_name": model.get("name"), "schema_version": log.get("schema_version"),
            })
            if level == "aggregate":
                if score is None:
                    missing.append({"subject": label, "item": name, "group": name,
                                    "file": str(path), "task": name, "metric": m,
                                    "reason": f"evaluation_results[{k}].score_details.score="
                                              f"{details.get('score')!r} is not a number"})
                    continue
                se = ((details.get("uncertainty") or {}).get("standard_error") or {}).get("value")
                rows.append({"subject": label, "item": name, "group": name,
                             "response": score, "se": score_value(se), "file": str(path),
                             "task": name, "metric": m})
        if level == "instance":
            _read_sidecar(path, log, (model_id, label), chosen, rows, missing, item)
    frame_rows: list[dict] | pd.DataFrame = rows
    if level == "aggregate" and rows:
        frame_rows = pd.DataFrame(rows)
        if frame_rows["se"].isna().any():
            frame_rows = frame_rows.drop(columns="se")  # se only where every score has one
    return finish(frame_rows, meta, missing, "every-eval-ever", ", ".join(map(str, files)))


def _choose_results(results: list, metric, path: Path) -> dict[str, tuple[int, dict]]:
    """The chosen result per evaluation name: ``{name: (position, result)}``."""
    by_name: dict[str, list[tuple[int, dict]]] = {}
    for k, res in enumerate(results):
        name = require_field(res, "evaluation_name", path, f"evaluation_results[{k}]", str)
        by_name.setdefault(name, []).append((k, res))
    chosen = {}
    for name, options in by_name.items():
        if metric is None:
            chosen[name] = options[0]
            continue
        pick = next(((k, r) for m in metric for k, r in options if _metric_name(r) == m), None)
        if pick is None:
            have = ", ".join(str(_metric_name(r)) for _, r in options)
            raise ValueError(
                f"{path}: evaluation {name!r} has no metric {' or '.join(map(repr, metric))}; it "
                f"reports {have}. Choose with metric=... (CLI: --metric)"
            )
        chosen[name] = pick
    return chosen


def _read_sidecar(path: Path, log: dict, who: tuple[str, str], chosen, rows, missing,
                  naming: str) -> None:
    model_id, subject = who
    detail = log.get("detailed_evaluation_results")
    sidecar = path.with_name(f"{path.stem}_samples.jsonl")
    if not detail or not sidecar.exists():
        why = ("the log has no instance-level results (detailed_evaluation_results)" if not detail
               else f"its sidecar {sidecar.name} is not beside it")
        for name, (_, result) in chosen.items():
            missing.append({"subject": subject, "item": f"{name}/*", "group": name,
                            "file": str(path), "task": name, "metric": _metric_name(result),
                            "reason": why + "; read level='aggregate' for the scores"})
        return
    data = sidecar.read_bytes()
    checksum = detail.get("checksum")
    if detail.get("hash_algorithm") == "sha256" and isinstance(checksum, str):
        if hashlib.sha256(data).hexdigest() != checksum:
            raise format_error(sidecar, "", f"does not match the sha256 checksum that {path.name} "
                                            "records; the sidecar was changed or truncated")
    wanted = {(name, _metric_name(res)) for name, (_, res) in chosen.items()}
    seen: set[tuple[str, str]] = set()
    for lineno, line in enumerate(data.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"line {lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise format_error(sidecar, where, f"is not valid JSON: {exc.msg}") from None
        name = require_field(rec, "evaluation_name", sidecar, where, str)
        sid = require_field(rec, "sample_id", sidecar, where, (str, int))
        rid = rec.get("evaluation_result_id")
        if rid is None and len([n for n, _ in wanted if n == name]) == 1:
            rid = next(m for n, m in wanted if n == name)  # one result: lines need no id
        if (name, rid) not in wanted:
            continue
        line_model = require_field(rec, "model_id", sidecar, where, str)
        if line_model != model_id:
            raise format_error(sidecar, where, f"model_id {line_model!r} differs from the "
                                               f"aggregate's model_info.id {model_id!r}")
        seen.add((name, rid))
        evaluation = require_field(rec, "evaluation", sidecar, where, dict)
        item = f"{name}/{sid}" if naming == "qualified" else str(sid)
        value = score_value(evaluation.get("score"))
        if value is None:
            missing.append({"subject": subject, "item": item, "group": name,
                            "file": str(sidecar), "task": name, "metric": rid,
                            "reason": f"{where}: evaluation.score={evaluation.get('score')!r} "
                                      "is not a number"})
            continue
        rows.append({"subject": subject, "item": item, "group": name, "response": value,
                     "file": str(sidecar), "task": name, "metric": rid})
    for name, m in sorted(wanted - seen, key=str):
        missing.append({"subject": subject, "item": f"{name}/*", "group": name,
                        "file": str(sidecar), "task": name, "metric": m,
                        "reason": "the sidecar has no line for this evaluation and metric"})
