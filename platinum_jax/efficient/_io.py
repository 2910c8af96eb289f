"""Rebuild a :class:`~platinum_jax.inference.Fit` from the directory ``platinum-jax fit`` wrote.

``fit.json["model"]`` names the model and likelihood (and the Rosetta link); ``items.csv`` and
``globals.csv`` hold natural parameter values, mapped back to the raw scale by the inverse of
each parameter's transform; ``subjects.csv`` the fitted abilities (the population of
:func:`~platinum_jax.efficient.select_items`).
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax.data import ResponseTable
from platinum_jax.inference import Fit, Problem, Theta
from platinum_jax.models import Identification, from_config

__all__ = ["load_fit"]


def _check_values(param, values: np.ndarray, index, source: str, label: str) -> None:
    """Every value finite and of the sign (range) the parameter's transform implies: a
    discrimination ``exp(raw)`` is positive, a probability ``sigmoid(raw)`` inside (0, 1)."""
    f = param.transform
    bad = ~np.isfinite(values)
    need = "a finite number"
    if f is jnp.exp:
        bad |= ~(values > 0)
        need = "a positive number (the model writes it as exp of its fitted value)"
    elif f is jax.nn.sigmoid:
        bad |= ~((values > 0) & (values < 1))
        need = "strictly between 0 and 1"
    if bad.any():
        rows = [f"{index[i]}: {values[i]:g}" for i in np.flatnonzero(bad)[:5]]
        raise ValueError(
            f"{source}, column {label}: {int(bad.sum())} value(s) are not {need} ({'; '.join(rows)}"
            f"{', ...' if bad.sum() > 5 else ''}); the file was edited or damaged: refit with "
            "`platinum-jax fit ... --overwrite`")


def _read_block(block, frame: pd.DataFrame, source: str, init=None) -> np.ndarray:
    """The raw values of ``block`` from its frame; entries the data fill (an item's group
    position) come from ``init``, the problem's own values. A vector parameter's columns are
    mapped back together, so that a transform that treats its entries differently (a
    ceiling per entry) gets them in place."""
    n = len(frame)
    out = np.zeros((n, block.size))
    labels = [label for _, label in block.columns()]  # one per flat entry, in block order
    for name, (a, b, shape) in block.slices().items():
        param = dict(block.decl)[name]
        cols = labels[a:b]
        if param.data or (param.map_only and cols[0] not in frame.columns):
            # filled from the data, or a point-fit device a Bayesian fit does not report
            out[:, a:b] = np.asarray(init, np.float64)[..., a:b] * np.ones((n, 1))
            continue
        lacking = [c for c in cols if c not in frame.columns]
        if lacking:
            raise ValueError(f"{source} lacks the column {lacking[0]!r} of parameter {name!r}; "
                             "was it written by `platinum-jax fit` with the same model?")
        values = frame[cols].to_numpy(np.float64)
        for k, label in enumerate(cols):
            _check_values(param, values[:, k], frame.index, source, label)
        raw = np.asarray(param.raw(values.reshape((n, *shape)), f"{source}:{name}"),
                         np.float64).reshape(n, b - a)
        if not np.isfinite(raw).all():  # a value outside the range of the model's transform
            k = int(np.flatnonzero(~np.isfinite(raw).all(axis=0))[0])
            raise ValueError(f"{source}, column {cols[k]}: a value lies outside the range of "
                             f"parameter {name!r}'s transform; the file was edited or damaged: "
                             "refit with `platinum-jax fit ... --overwrite`")
        out[:, a:b] = raw
    return out


def load_fit(directory: str | Path, data: str | Path | ResponseTable | None = None) -> Fit:
    """The fit stored in ``directory`` (``fit.json``, ``subjects.csv``, ``items.csv``,
    ``globals.csv``). With ``data`` (the responses it was fitted to, a path or a table) the
    fit carries them (needed for Pearson's dispersion, anchor points and stratification);
    without, it carries a placeholder table and says so in ``diagnostics``."""
    d = Path(directory)
    missing = [n for n in ("fit.json", "subjects.csv", "items.csv", "globals.csv")
               if not (d / n).is_file()]
    if missing:
        raise ValueError(f"{d} lacks {missing}; give a directory written by `platinum-jax fit`")
    try:
        summary = json.loads((d / "fit.json").read_text())
        desc = summary.get("model", {})
        desc.get("name")
    except (ValueError, AttributeError) as exc:
        raise ValueError(f"{d / 'fit.json'} is not the JSON summary `platinum-jax fit` writes "
                         f"({exc}); it was damaged: refit with `platinum-jax fit ... "
                         "--overwrite`") from None
    model = from_config(summary.get("model_config"), f"{d / 'fit.json'}: model_config")
    subjects = pd.read_csv(d / "subjects.csv", index_col=0)
    items = pd.read_csv(d / "items.csv", index_col=0)
    glob = pd.read_csv(d / "globals.csv", index_col=0)
    subjects.index = subjects.index.astype(str)
    items.index = items.index.astype(str)
    placeholder = data is None
    if placeholder:
        # One row per item and per subject so the table lists them all; values are never used.
        n_s, n_i = len(subjects), len(items)
        m = max(n_s, n_i)
        rows = pd.DataFrame({"subject": subjects.index[np.arange(m) % n_s],
                             "item": items.index[np.arange(m) % n_i], "response": 0.5})
        if "group" in items.columns:  # each item's benchmark, as the fit's table had it
            rows["group"] = items["group"].to_numpy()[np.arange(m) % n_i]
        table = ResponseTable.from_frame(rows, name=f"{d} (parameters only)")
    else:
        table = data if isinstance(data, ResponseTable) else ResponseTable.read(data)
        for kind, have, want in (("subjects", table.subjects, subjects.index),
                                 ("items", table.items, items.index)):
            if not have.equals(pd.Index(sorted(want), name=have.name)):
                raise ValueError(f"the data's {kind} differ from those of the fit in {d}; give "
                                 "the responses the fit was made from")
    problem = Problem(model, table, identification=Identification(
        description="parameters read back from a fit directory"))
    items = items.reindex(table.items)
    subjects = subjects.reindex(table.subjects)
    g_frame = pd.DataFrame([glob["value"].to_numpy()], columns=glob.index.astype(str))
    theta = Theta(_read_block(problem.subject, subjects, f"{d}/subjects.csv"),
                  _read_block(problem.item, items, f"{d}/items.csv", problem.init_I),
                  _read_block(problem.glob, g_frame, f"{d}/globals.csv", problem.init_G)[0])
    _check_recorded_files(d, summary, ("subjects.csv", "items.csv", "globals.csv"))
    return Fit(problem=problem, method=summary.get("method", "map"), theta=theta,
               diagnostics={"placeholder_table": placeholder})


def _check_recorded_files(d: Path, summary: dict, names) -> None:
    """Each parameter table against the size and SHA-256 that ``fit.json`` records of it (fits
    written before the record existed carry none and pass): a table edited or swapped after the
    fit is named, after its values have passed their own checks."""
    import hashlib

    record = summary.get("files") or {}
    for name in names:
        want = record.get(name)
        if not isinstance(want, dict):
            continue
        data = (d / name).read_bytes()
        if len(data) != want.get("bytes") or hashlib.sha256(data).hexdigest() != want.get("sha256"):
            raise ValueError(f"{d / name} is not the file {d / 'fit.json'} records (size or "
                             "checksum differs): it was edited or replaced after the fit; refit "
                             "with `platinum-jax fit ... --overwrite`, or restore the file")
