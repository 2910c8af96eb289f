"""The one validation pass of a response table's rows, and the duplicate rules.

:meth:`ResponseTable.from_frame` (and every reader that builds a table) goes through
:func:`check_frame`: column names and their aliases, names normalised, numbers checked, each
failure an error that names the rows and says what to do. :func:`reduce_duplicates` applies
the rule for repeated (subject, item) pairs.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from platinum_jax._names import normalise_names

Duplicates = Literal["error", "mean", "max", "min", "first", "last"]
DUPLICATE_RULES = ("error", "mean", "max", "min", "first", "last")
OPTIONAL = ("trials", "se", "weight")
# Label columns besides subject and item: the item's group (benchmark) and cluster (items that
# share a passage, a template, a repository), and a row's run (one of repeated samples of an
# item: runs, epochs, seeds).
LABELS = ("group", "cluster", "run")
# Accepted spellings: the package's stitching tables say model/benchmark/score.
_ALIASES = {"model": "subject", "score": "response"}


def _rename_aliases(df: pd.DataFrame, name: str) -> pd.DataFrame:
    cols = set(df.columns)
    mapping = {a: c for a, c in _ALIASES.items() if a in cols and c not in cols}
    if "item" not in cols and "benchmark" in cols:
        mapping["benchmark"] = "item"  # benchmark-level scores: each benchmark is one item
    elif "group" not in cols and "benchmark" in cols:
        mapping["benchmark"] = "group"  # item-level scores: the benchmark groups the items
    for alias, canonical in _ALIASES.items():
        if alias in cols and canonical in cols:
            raise ValueError(
                f"{name} has both {alias!r} and {canonical!r} columns; keep one of them "
                f"({alias!r} is read as {canonical!r})"
            )
    return df.rename(columns=mapping)


def _rows(frame: pd.DataFrame, mask: np.ndarray, column: str, limit: int = 6) -> str:
    idx = np.flatnonzero(mask)
    parts = [
        f"row {i}: ({frame['subject'].iat[i]!r}, {frame['item'].iat[i]!r}, "
        f"{column}={frame[column].iat[i]!r})"
        for i in idx[:limit]
    ]
    more = f" ... and {len(idx) - limit} more" if len(idx) > limit else ""
    return "; ".join(parts) + more


def check_frame(df: pd.DataFrame, name: str) -> pd.DataFrame:
    """Columns ``subject, item, response[, group, cluster, run, trials, se, weight]`` (aliases
    renamed),
    names normalised, numbers checked, rows in the order of ``df``; see
    :meth:`ResponseTable.checked_frame`."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{name}: expected a pandas DataFrame, got {type(df).__name__}")
    frame = _rename_aliases(df, name)
    # messages name a column as the file spells it ("model name(s)" for a model column)
    spelt = {new: old for old, new in zip(df.columns, frame.columns, strict=True)}
    missing = [c for c in ("subject", "item", "response") if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{name} lacks the column(s) {missing}; a response table needs columns "
            "subject, item, response (model/benchmark/score are accepted as aliases) and "
            f"optionally group, cluster, run, trials, se, weight (found {list(df.columns)})"
        )
    if len(frame) == 0:
        raise ValueError(f"{name} has no rows; a response table needs at least one response")
    keep = ["subject", "item", "response"] + [
        c for c in (*LABELS, *OPTIONAL) if c in frame.columns
    ]
    frame = frame.loc[:, keep].reset_index(drop=True)
    for col in ("subject", "item") + tuple(c for c in LABELS if c in frame.columns):
        bad = frame[col].isna().to_numpy()
        if bad.any():
            raise ValueError(
                f"{name}: {int(bad.sum())} row(s) have no {spelt.get(col, col)} (rows "
                f"{[int(i) for i in np.flatnonzero(bad)[:8]]}); fill in or drop those rows"
            )
        # "m04" and "m04 " are one subject here as in every reader (said, not silent).
        frame[col] = normalise_names(frame[col], what=str(spelt.get(col, col)),
                                     source=name).astype(str)
    for col in ("response", *OPTIONAL):
        if col not in frame.columns:
            continue
        raw = frame[col]
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            what = "non-numeric, NaN or infinite"
            raise ValueError(
                f"{name}: {int(bad.sum())} {col} value(s) are {what}: "
                f"{_rows(frame, bad, col)}; fix or drop those rows (strip '%' signs and "
                "divide by 100 for percentages)"
            )
        frame[col] = values
    if "trials" in frame.columns:
        t = frame["trials"].to_numpy()
        bad = (t < 1) | (t != np.round(t))
        if bad.any():
            raise ValueError(
                f"{name}: trials must be whole numbers >= 1 (the attempts behind each "
                f"response): {_rows(frame, bad, 'trials')}"
            )
    for col in ("se", "weight"):
        if col in frame.columns and (frame[col].to_numpy() < 0).any():
            bad = frame[col].to_numpy() < 0
            raise ValueError(f"{name}: negative {col}: {_rows(frame, bad, col)}")
    if "weight" in frame.columns and not (frame["weight"].to_numpy() > 0).any():
        raise ValueError(f"{name}: every weight is 0, so no response counts and a fit would "
                         "return its prior alone; give some rows a positive weight or drop "
                         "the weight column")
    return frame


def check_duplicate_rule(rule: str) -> None:
    if rule not in DUPLICATE_RULES:
        raise ValueError(f"duplicates={rule!r} is not one of {DUPLICATE_RULES}")


def reduce_duplicates(frame: pd.DataFrame, rule: str, name: str) -> pd.DataFrame:
    """One row per (subject, item) of a checked frame by ``rule`` (``"error"`` names the
    repeated pairs). With a ``run`` column a row is one sample of its item: (subject, item)
    repeats across runs and stays, and a repeated (subject, item, run) is an error."""
    check_duplicate_rule(rule)
    if "run" in frame.columns:
        key = ["subject", "item", "run"]
        dup = frame.duplicated(key, keep=False).to_numpy()
        if dup.any():
            i = int(np.flatnonzero(dup)[0])
            raise ValueError(
                f"{name}: {int(dup.sum())} rows repeat a (subject, item, run) key, e.g. "
                f"{tuple(frame.iloc[i][key])}; give each repeated sample its own run label")
        return frame
    dup = frame.duplicated(["subject", "item"], keep=False).to_numpy()
    if not dup.any():
        return frame
    if rule == "error":
        pairs = frame.loc[dup, ["subject", "item"]].drop_duplicates().head(5)
        shown = "; ".join(f"({r.subject!r}, {r.item!r})" for r in pairs.itertuples())
        raise ValueError(
            f"{name}: {int(dup.sum())} rows repeat a (subject, item) pair, e.g. {shown}; pass "
            "duplicates='mean'|'max'|'min'|'first'|'last' (CLI: --duplicates) to reduce them, "
            "or add a run column (run, epoch or sample id) to keep them as repeated samples"
        )
    pooled = rule == "mean" and "trials" in frame.columns
    if pooled:  # a mean of fractions over different trials: pool the successes
        frame = frame.assign(_successes=frame["response"] * frame["trials"])
    grouped = frame.groupby(["subject", "item"], sort=False, as_index=False)
    if rule in ("first", "last"):
        return grouped.nth(0 if rule == "first" else -1).reset_index(drop=True)
    agg = {"response": rule}
    if pooled:
        agg["_successes"] = "sum"
    for label in ("group", "cluster"):
        if label in frame.columns:
            agg[label] = "first"
    if "trials" in frame.columns:
        agg["trials"] = "sum" if rule == "mean" else "first"
    if "se" in frame.columns:
        agg["se"] = "mean"
    if "weight" in frame.columns:
        agg["weight"] = "sum" if rule == "mean" else "first"
    out = grouped.agg(agg).reset_index(drop=True)
    if pooled:
        out["response"] = out.pop("_successes") / out["trials"]
    return out
