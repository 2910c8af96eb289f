"""Per-item measurement noise σ²_i from repeated runs across seeds and checkpoints.

Haupt et al. measure an item's noise as the spread of its correct-answer probability p̂ across
training seeds of the same model at the same checkpoint, pooled over checkpoints:

    σ²_i = Σ_k Σ_s (p̂_isk − p̄_ik)² / (N_i − K_i),   N_i = Σ_k S_ik,

with p̄_ik the mean over seeds at checkpoint k and ``K_i`` the checkpoints with two or more
seeds (8 seeds × 10 checkpoints: N = 80, divisor 70). :func:`pooled_variance` is the one
implementation of this pooled within-cell variance; :func:`platinum_jax.design.noise_from_runs`
uses it too (a cell there is a subject, the runs its repeated evaluations).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

__all__ = ["estimate_noise", "pooled_variance"]

PHAT_RANGE = (0.10, 0.90)
MIN_SIGMA2 = 1e-6


def pooled_variance(item: np.ndarray, cell: np.ndarray, response: np.ndarray, n_items: int):
    """``(σ², dof, dev, cell_size)``: the pooled within-cell variance of each item.

    Args:
        item: ``int[N]`` item position of each observation (``0 .. n_items-1``).
        cell: ``int[N]`` the cell of each observation, equal only for observations of one item
            under one condition (a checkpoint, a subject), whose spread is noise.
        response: ``float[N]`` the observations.

    ``dev = y − mean of its cell``; ``σ²_i = Σ dev² / dof_i`` with ``dof_i = Σ_cells (n_c − 1)``
    (NaN where ``dof_i = 0``); ``cell_size[N]`` the size of each observation's cell. Vectorised
    (``bincount``), no loop over items.
    """
    item = np.asarray(item)
    y = np.asarray(response, dtype=np.float64)
    cell = pd.factorize(np.asarray(cell))[0]
    size = np.bincount(cell)
    dev = y - (np.bincount(cell, y) / size)[cell]
    first = np.unique(cell, return_index=True)[1]
    dof = np.bincount(item[first], size - 1, minlength=n_items).astype(np.int64)
    ss = np.bincount(item, dev**2, minlength=n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        sigma2 = np.where(dof > 0, ss / np.maximum(dof, 1), np.nan)
    return sigma2, dof, dev, size[cell]


def _long_frame(responses, item, run, checkpoint, response, split_subject):
    from platinum_jax.data import ResponseTable

    if isinstance(responses, ResponseTable):
        if split_subject is None:
            raise ValueError("a ResponseTable has one subject label per row: pass "
                             "split_subject=lambda subject: (checkpoint, seed) to say which "
                             "checkpoint and seed each subject is")
        frame = responses.to_frame()
        parts = [split_subject(s) for s in responses.subjects]
        lookup = pd.DataFrame(parts, index=responses.subjects, columns=["checkpoint", "run"])
        frame = frame.assign(checkpoint=lookup["checkpoint"].reindex(frame["subject"]).to_numpy(),
                             run=lookup["run"].reindex(frame["subject"]).to_numpy())
        return frame, ["item"], "run", "checkpoint", "response"
    if not isinstance(responses, pd.DataFrame):
        raise TypeError("responses must be a DataFrame or a ResponseTable, got "
                        f"{type(responses).__name__}")
    items = [item] if isinstance(item, str) else list(item)
    need = [*items, run, checkpoint, response]
    missing = [c for c in need if c not in responses.columns]
    if missing:
        raise ValueError(f"responses has no column(s) {missing} (columns: "
                         f"{list(responses.columns)}); name them with item=, run=, checkpoint=, "
                         "response=")
    return responses, items, run, checkpoint, response


def estimate_noise(responses, *, item: str | Sequence[str] = "item", run: str = "run",
                   checkpoint: str = "checkpoint", response: str = "response",
                   split_subject: Callable[[str], tuple] | None = None,
                   phat_range: tuple[float, float] = PHAT_RANGE,
                   min_sigma2: float = MIN_SIGMA2) -> pd.DataFrame:
    """Per-item noise σ²_i, mean p̂, N and eligibility from a long response table.

    Args:
        responses: a DataFrame with one row per (item, checkpoint, run), the correct-answer
            probability (or a 0/1 score) in ``response``; or a
            :class:`~platinum_jax.data.ResponseTable` whose subjects are (checkpoint, seed)
            pairs, with ``split_subject`` mapping a subject label to ``(checkpoint, seed)``.
        item: the item column, or several (e.g. ``["task", "doc_id"]``).
        run, checkpoint: the seed (run) and checkpoint columns.
        phat_range, min_sigma2: the eligibility filter, ``mean p̂ ∈ [0.10, 0.90]`` and
            ``σ² ≥ 1e-6`` by default (the authors').

    Returns:
        DataFrame indexed by item (the release's ``noise.csv`` names): ``noise_sigma2``,
        ``noise_sigma_hat`` (√σ²), ``noise_mean_phat`` (mean over all runs and checkpoints),
        ``noise_n_obs`` (N), ``noise_dof`` (N − K), ``eligible`` and ``reason`` (why an item
        fails the filter; empty when eligible). Every item is returned; none is dropped.
        Items never run twice at one checkpoint have no noise estimate (NaN, not eligible).
    """
    frame, items, run, checkpoint, response = _long_frame(
        responses, item, run, checkpoint, response, split_subject)
    absent = [c for c in [*items, run, checkpoint] if frame[c].isna().any()]
    if absent:
        raise ValueError(f"responses: column(s) {absent} have missing values; every row needs "
                         "its item, run and checkpoint")
    lo, hi = map(float, phat_range)
    if not 0 <= lo <= hi <= 1:
        raise ValueError(f"phat_range must be (low, high) within [0, 1], got {phat_range!r}")
    y = pd.to_numeric(frame[response], errors="coerce").to_numpy(dtype=float)
    if not np.all(np.isfinite(y)) or np.any((y < 0) | (y > 1)):
        raise ValueError(f"responses: column {response!r} must hold correct-answer "
                         "probabilities or 0/1 scores in [0, 1], with no missing value")
    keys = frame[items]
    code, labels = pd.factorize(pd.MultiIndex.from_frame(keys) if len(items) > 1
                                else keys[items[0]])
    long = pd.DataFrame({"item": code, "subject": frame[checkpoint].to_numpy(),
                         "run": frame[run].to_numpy()})
    if long.duplicated(["item", "subject", "run"]).any():
        row = frame[long.duplicated(["item", "subject", "run"]).to_numpy()].iloc[0]
        raise ValueError(f"responses: item {tuple(row[items].tolist())}, checkpoint {row[checkpoint]!r}, "
                         f"run {row[run]!r} appears twice (one p̂ per item, checkpoint and run)")
    m = len(labels)
    n_obs = np.bincount(code, minlength=m)
    mean = np.bincount(code, y, minlength=m) / n_obs
    ckpt, ckpts = pd.factorize(long["subject"])
    sigma2, dof, _, _ = pooled_variance(code, code.astype(np.int64) * len(ckpts) + ckpt, y, m)
    reason = np.full(m, "", dtype=object)
    reason[~((mean >= lo) & (mean <= hi))] = f"mean p̂ outside [{lo:g}, {hi:g}]"
    low = ~(sigma2 >= min_sigma2)
    reason[low & (reason == "")] = f"σ² below {min_sigma2:g}"
    reason[dof == 0] = "no checkpoint with two or more runs: noise not measured"
    index = (labels.set_names(items) if isinstance(labels, pd.MultiIndex)
             else pd.Index(labels, name=items[0]))
    return pd.DataFrame({
        "noise_sigma2": sigma2, "noise_sigma_hat": np.sqrt(sigma2), "noise_mean_phat": mean,
        "noise_n_obs": n_obs, "noise_dof": dof, "eligible": reason == "",
        "reason": reason.astype(str)}, index=index)
