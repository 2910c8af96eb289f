"""Inspect (``inspect_ai``) evaluation logs, ``.eval`` or ``.json``, read through Inspect's API.

Each log is one task run by one model; every sample holds one score per scorer and epoch. The
item is ``task/sample id``, the group the task, the response the chosen scorer's value averaged
over the epochs; when every value is 0/1 the number of epochs becomes ``trials`` (a binomial
count of correct epochs). Inspect's letter values map as Inspect defines them: ``C`` (correct)
1, ``I`` (incorrect) 0, ``P`` (partial) 0.5, ``N`` (no answer) 0.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from platinum_jax._extras import require
from platinum_jax.importers._common import (
    ImportedResponses,
    LogFormatError,
    collect_files,
    finish,
    repeated_item_rows,
    score_value,
)

__all__ = ["read_inspect"]

_LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


def _log_files(paths: Iterable[str | Path]) -> list[Path]:
    return collect_files(
        paths,
        below=lambda d: (f for f in d.rglob("*") if f.suffix in (".eval", ".json")),
        accepts=lambda f: f.suffix in (".eval", ".json"),
        none_below="no Inspect logs (*.eval, *.json) below it",
        wrong_file="an Inspect log ends in .eval or .json",
    )


def _value(value) -> tuple[float | None, str]:
    if isinstance(value, str):
        if value in _LETTERS:
            return _LETTERS[value], ""
        try:
            number = float(value)
        except ValueError:
            return None, f"score value {value!r} is neither a number nor one of C/I/P/N"
        return (number, "") if np.isfinite(number) else (None, f"score value {value!r}")
    number = score_value(value)
    if number is None:
        kind = type(value).__name__
        return None, f"score value of type {kind} ({value!r}) is not a single number"
    return number, ""


def read_inspect(
    paths: str | Path | Iterable[str | Path],
    *,
    scorer: str | None = None,
) -> ImportedResponses:
    """Read Inspect logs into item-level responses (needs the ``inspect`` extra).

    Args:
        paths: ``.eval`` / ``.json`` log files, or directories searched recursively for them.
        scorer: which scorer's value is the response; None when every log has one scorer
            (with several, the error lists them).

    Returns:
        :class:`ImportedResponses`: subject = the log's model, item = ``task/sample id``,
        group = task, response = mean over epochs, ``trials`` = epochs when every value is 0/1.
        Samples that errored or lack a numeric score for the scorer are in ``missing``; a log
        with no samples (a failed or cancelled run) is there as ``task/*``. ``metadata`` has
        one row per log (model arguments, task arguments, epochs, status, dates, versions).

    Raises:
        MissingExtraError: inspect_ai is not installed.
        LogFormatError: a file that Inspect cannot read (its message kept).
        ValueError: a scorer that a log lacks, or no scorer chosen among several.
    """
    log_api = require("inspect_ai.log", "inspect", "reading Inspect logs")
    if isinstance(paths, str | Path):
        paths = [paths]
    files = _log_files(paths)
    rows: list[dict] = []
    meta: list[dict] = []
    missing: list[dict] = []
    for path in files:
        try:
            log = log_api.read_eval_log(str(path))
        except Exception as exc:  # Inspect raises its own and pydantic errors; keep the message
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise LogFormatError(
                f"{path}: Inspect cannot read this log ({type(exc).__name__}: {first})"
            ) from None
        spec = log.eval
        subject, task = spec.model, spec.task
        samples = log.samples or []
        names = sorted({k for s in samples for k in (s.scores or {})})
        chosen = _choose(scorer, names, path) if samples else scorer
        meta.append({
            "subject": subject, "task": task, "file": str(path), "metric": chosen,
            "status": log.status, "created": spec.created, "task_id": spec.task_id,
            "run_id": spec.run_id, "epochs": spec.config.epochs,
            "model_args": json.dumps(spec.model_args, sort_keys=True, default=str),
            "task_args": json.dumps(spec.task_args, sort_keys=True, default=str),
            "dataset": getattr(spec.dataset, "name", None),
            "n_samples": len(samples), "scorers": ",".join(names),
            "inspect_version": (spec.packages or {}).get("inspect_ai"),
        })
        if not samples:
            missing.append({"subject": subject, "item": f"{task}/*", "group": task,
                            "file": str(path), "task": task, "metric": chosen,
                            "reason": f"the log has no samples (status {log.status!r})"})
            continue
        per_item: dict[str, list[float]] = {}
        for s in samples:
            item = f"{task}/{s.id}"
            where = f"sample {s.id!r} epoch {s.epoch}"
            score = (s.scores or {}).get(chosen)
            if s.error is not None:
                why = f"{where}: the sample errored ({str(s.error.message).splitlines()[0]})"
            elif score is None:
                why = f"{where}: no score from scorer {chosen!r}"
            else:
                value, why = _value(score.value)
                if value is not None:
                    per_item.setdefault(item, []).append(value)
                    continue
                why = f"{where}: {why}"
            missing.append({"subject": subject, "item": item, "group": task,
                            "file": str(path), "task": task, "metric": chosen, "reason": why})
        rows.extend(repeated_item_rows(subject, task, chosen, path, per_item))
    return finish(rows, meta, missing, "inspect", ", ".join(str(p) for p in files))


def _choose(scorer: str | None, names: list[str], path: Path) -> str:
    if scorer is None:
        if len(names) == 1:
            return names[0]
        raise ValueError(
            f"{path}: the samples carry {len(names)} scorers ({', '.join(names) or 'none'}); "
            "choose one with scorer=... (CLI: --metric)"
        )
    if scorer not in names:
        raise ValueError(
            f"{path}: no scorer {scorer!r} in this log; it has {', '.join(names) or 'none'}"
        )
    return scorer
