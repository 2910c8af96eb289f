"""What every log reader returns, and the errors they raise.

A reader turns one harness's files into a long frame with one row per (subject, item) response
and three provenance columns (``file``, ``task``, ``metric``), plus two side tables: the log's
own metadata (one row per run: model arguments, few-shot count, dates) and the per-item records
that carry no usable score (reported, never dropped in silence).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["ImportedResponses", "LogFormatError", "PROVENANCE"]

PROVENANCE = ("file", "task", "metric")
_RESPONSE_COLUMNS = ("subject", "item", "group", "response", "trials", "se", "weight")
MISSING_COLUMNS = ("subject", "item", "group", "file", "task", "metric", "reason")


class LogFormatError(ValueError):
    """A log file does not have the shape its format promises; the message names the file, the
    place in it (line, record) and the field."""


def format_error(path: Path | str, where: str, problem: str) -> LogFormatError:
    where = f" ({where})" if where else ""
    return LogFormatError(f"{path}{where}: {problem}")


def collect_files(
    paths: Iterable[str | Path],
    *,
    below: Callable[[Path], Iterable[Path]],
    accepts: Callable[[Path], bool],
    none_below: str,
    wrong_file: str,
) -> list[Path]:
    """The log files named by ``paths``: a directory gives ``below(directory)`` (sorted; none is
    an error, ``none_below``), a file must pass ``accepts`` (else ``wrong_file``). Both messages
    follow the path they name."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            hits = sorted(below(p))
            if not hits:
                raise FileNotFoundError(f"{p}: {none_below}")
            found.extend(hits)
        elif p.is_file():
            if not accepts(p):
                raise ValueError(f"{p}: {wrong_file}")
            found.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such file or directory")
    return found


def load_json(path: Path) -> object:
    """Parse a whole JSON file, naming the file and the position of a syntax error."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise format_error(path, "", f"is not UTF-8 text ({exc.reason}); expected JSON") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise format_error(
            path, f"line {exc.lineno}, column {exc.colno}", f"is not valid JSON: {exc.msg}"
        ) from None


def require_field(record: object, key: str, path: Path | str, where: str, kind=None):
    """``record[key]``, or a :class:`LogFormatError` naming the missing or mistyped field."""
    if not isinstance(record, dict):
        raise format_error(path, where, f"expected a JSON object, found {type(record).__name__}")
    if key not in record:
        have = ", ".join(sorted(map(str, record))[:12])
        raise format_error(path, where, f"has no field {key!r} (fields present: {have})")
    value = record[key]
    if kind is not None and not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise format_error(
            path, where, f"field {key!r} should be {names}, found {type(value).__name__}"
        )
    return value


def score_value(value: object) -> float | None:
    """A per-item metric as a float, or None when it is absent or not a finite number (NumPy
    scalars, as Parquet gives them, count as numbers)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and np.isfinite(value):
        return float(value)
    return None


def repeated_item_rows(subject: str, task: str, metric: str, file: Path | str,
                       values: dict[str, list[float]]) -> list[dict]:
    """One response row per item from its repeated scores (epochs, samples): the mean, and
    the number of trials when every score of the run is 0 or 1 (a count of successes)."""
    binary = all(v in (0.0, 1.0) for vals in values.values() for v in vals)
    rows = []
    for item, vals in values.items():
        row = {"subject": subject, "item": item, "group": task, "response": float(np.mean(vals))}
        if binary:
            row["trials"] = len(vals)
        row.update(file=str(file), task=task, metric=metric)
        rows.append(row)
    return rows


@dataclass(frozen=True, eq=False)
class ImportedResponses:
    """Responses read from evaluation logs, with their provenance and the logs' metadata.

    Attributes:
        responses: long frame, one row per (subject, item, metric): ``subject`` (the evaluated
            model), ``item`` (``task/id``, stable within its task), ``group`` (the task or
            benchmark), ``response`` (the per-item metric) and, where the log has them,
            ``trials`` (epochs or samples behind a mean of 0/1 scores) and ``weight``; then the
            provenance columns ``file``, ``task``, ``metric``.
        metadata: one row per run (file): subject, task, file and what the log says about the
            run (model arguments, few-shot count, dates, harness version, ...).
        missing: per-item records with no usable score for the chosen metric: subject, item,
            group, file, task, metric and the reason. They are not in ``responses``.
        format: the log format's name (``"lm-eval"``, ``"inspect"``, ...).
    """

    responses: pd.DataFrame
    metadata: pd.DataFrame
    missing: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=MISSING_COLUMNS))
    format: str = ""

    def table(self, *, duplicates: str = "error", name: str | None = None):
        """The :class:`~platinum_jax.data.ResponseTable` of the responses (labels and values;
        the provenance columns stay in :attr:`responses`)."""
        from platinum_jax.data import ResponseTable

        cols = [c for c in _RESPONSE_COLUMNS if c in self.responses.columns]
        return ResponseTable.from_frame(
            self.responses.loc[:, cols],
            duplicates=duplicates,
            name=name or f"the {self.format} logs",
        )

    def duplicate_pairs(self) -> int:
        """Rows that repeat a (subject, item) pair of an earlier row."""
        return int(self.responses.duplicated(["subject", "item"]).sum())


def finish(
    rows: list[dict] | pd.DataFrame,
    meta: list[dict],
    missing: list[dict],
    fmt: str,
    source: str,
) -> ImportedResponses:
    """Assemble the three frames; an import that yields no response at all is an error."""
    if len(rows) == 0:
        why = ""
        if missing:
            m = missing[0]
            why = (f"; all {len(missing)} per-item record(s) lack a usable score, e.g. "
                   f"{m['item']!r} in {m['file']}: {m['reason']}")
        raise LogFormatError(f"{source}: no per-item responses found{why}")
    frame = rows.reset_index(drop=True) if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    order = [c for c in (*_RESPONSE_COLUMNS, *PROVENANCE) if c in frame.columns]
    frame = frame.loc[:, order + [c for c in frame.columns if c not in order]]
    miss = pd.DataFrame(missing, columns=list(MISSING_COLUMNS))
    return ImportedResponses(frame, pd.DataFrame(meta), miss, fmt)
