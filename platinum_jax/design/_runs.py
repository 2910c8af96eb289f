"""The noise covariance of item scores from repeated runs (the same model evaluated again).

When each subject was evaluated several times on the same items (different sampling seeds, run
repeats), the run-to-run spread is a direct measurement of Haupt et al.'s noise ``ε`` in
``y = Aa + ε``: the model, hence its abilities, is the same across runs, so every difference
between runs is noise.  Its covariance across items is estimated from the deviations of each run
from the subject's mean over runs, pooled over subjects, and returned as ``diag(d) + FFᵀ``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from platinum_jax.measured import pooled_variance

from ._factor import factor_em

__all__ = ["noise_from_runs"]

_UNIQUE_FLOOR = 0.05


def noise_from_runs(runs: pd.DataFrame, items: Sequence[str], *, rank: int | str = "auto"):
    """``(d, F, dof, note)``: ``Σ = diag(d) + FFᵀ`` the covariance of one run's item scores,
    ``dof`` the degrees of freedom of each item's variance.

    Args:
        runs: long frame with columns ``subject, item, run, response``: one row per run of a
            subject on an item; a (subject, item) cell with two or more runs contributes.
        items: the items of the fit, in order (every one needs repeated runs).
        rank: columns of ``F``; ``"auto"`` keeps the components of the run-to-run correlation
            matrix whose eigenvalues exceed the Marchenko-Pastur edge ``(1 + √(m/n))²`` of pure
            noise (``n`` the median degrees of freedom per item), ``0`` a diagonal ``Σ``.

    The variance of item ``i`` is ``Σ dev² / dof_i`` with ``dof_i = Σ_cells (runs − 1)``; the
    correlation comes from a factor analysis (EM on the observed entries) of the deviations of
    runs that share a subject and a run label.
    """
    need = {"subject", "item", "run", "response"}
    if not isinstance(runs, pd.DataFrame) or not need <= set(runs.columns):
        have = list(runs.columns) if isinstance(runs, pd.DataFrame) else type(runs).__name__
        raise ValueError(f"runs must be a frame with columns subject, item, run, response "
                         f"(got {have})")
    frame = runs[["subject", "item", "run", "response"]].copy()
    frame["item"] = frame["item"].astype(str)
    items = [str(i) for i in items]
    unknown = sorted(set(frame["item"]) - set(items))
    if unknown:
        raise ValueError(f"runs name items that are not in the fit: {unknown[:5]}")
    response = pd.to_numeric(frame["response"], errors="coerce")
    if not np.all(np.isfinite(response)):
        raise ValueError("runs: every response must be a finite number")
    frame["response"] = response
    if frame.duplicated(["subject", "item", "run"]).any():
        row = frame[frame.duplicated(["subject", "item", "run"])].iloc[0]
        raise ValueError(f"runs: subject {row['subject']!r}, item {row['item']!r}, run "
                         f"{row['run']!r} appears twice")
    pos = {name: k for k, name in enumerate(items)}
    m = len(items)
    # The item variances are the pooled within-cell variance shared with measured.estimate_noise.
    cell = pd.MultiIndex.from_frame(frame[["subject", "item"]].astype(str))
    var, dof, frame["dev"], frame["runs_in_cell"] = pooled_variance(
        frame["item"].map(pos).to_numpy(), pd.factorize(cell)[0], frame["response"], m)
    frame = frame[frame["runs_in_cell"] >= 2]
    col = frame["item"].map(pos).to_numpy()
    if np.any(dof < 1):
        missing = [items[i] for i in np.flatnonzero(dof < 1)[:5]]
        raise ValueError(f"items {missing} have no subject with two or more runs: the runs "
                         "cannot measure their noise (give runs for every item of the fit)")
    ss = var * dof
    if np.any(var <= 0):
        flat = [items[i] for i in np.flatnonzero(var <= 0)[:5]]
        raise ValueError(f"items {flat} score the same in every run: no run-to-run noise to "
                         "estimate; drop them")
    rows = pd.MultiIndex.from_frame(frame[["subject", "run"]].astype(str))
    codes, _ = pd.factorize(rows)
    X = np.zeros((codes.max() + 1, m))
    X[codes, col] = frame["dev"].to_numpy() / np.sqrt(ss[col])
    _, sv, vt = np.linalg.svd(X, full_matrices=False)
    eig = sv**2
    if rank == "auto":
        n = float(np.median(dof))
        edge = (1 + np.sqrt(m / n)) ** 2 * np.mean(np.diag(X.T @ X))
        k = int(np.sum(eig > edge))
    elif isinstance(rank, (int, np.integer)) and 0 <= rank < min(X.shape):
        k = int(rank)
    else:
        raise ValueError(f"rank must be 'auto' or an integer in [0, {min(X.shape)}), got "
                         f"{rank!r}")
    if k == 0:
        return var, np.zeros((m, 0)), dof, (
            f"run-to-run variance of repeated runs (median {np.median(dof):g} degrees of "
            "freedom per item): diagonal" + (", no component above the Marchenko-Pastur edge"
                                             if rank == "auto" else " (rank 0 asked)"))
    # The loadings by a factor analysis of the standardised deviations (principal components
    # would fold part of the unique noise into the loadings).

    n_i = np.bincount(col, minlength=m)
    z = frame["dev"].to_numpy() / np.sqrt(ss[col] / n_i[col])
    f, psi, _ = factor_em(z, codes, col, int(codes.max()) + 1, m, k, 300)
    total = (f**2).sum(axis=1) + psi
    unique = np.maximum(psi / total, _UNIQUE_FLOOR)
    F_unit = f / np.sqrt(total)[:, None]
    load = (F_unit**2).sum(axis=1)
    keep = np.minimum(load, 1.0 - unique) / np.where(load > 0, load, 1.0)
    F = np.sqrt(var)[:, None] * F_unit * np.sqrt(keep)[:, None]
    note = (f"run-to-run covariance of repeated runs (median {np.median(dof):g} degrees of "
            f"freedom per item): diagonal + rank-{k}"
            + (" (Marchenko-Pastur edge)" if rank == "auto" else ""))
    return var * unique, F, dof, note
