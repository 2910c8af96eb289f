"""Rank-normalised split R-hat, bulk and tail ESS and the highest-density interval of many
quantities at once (Vehtari, Gelman, Simpson, Carpenter and Buerkner 2021, "Rank-normalization,
folding, and localization: an improved R-hat"; the definitions ArviZ implements).

Why not ArviZ's own functions: ArviZ 0.x (and arviz-stats) loop in Python over every scalar
entry of a posterior (830 entries in a Bayesian Rosetta fit of Epoch's table, 5 CPU seconds for
the diagnostics and intervals here, 3 with this module, row labels included). Here every step is one
NumPy operation over all entries: ranks along the draws, one FFT for the autocovariances of
every chain and entry, and Geyer's initial monotone sequence as a running minimum over the
pairs of lags. The tests hold every number against ArviZ.

Arrays are ``(chains, draws, k)``: ``k`` quantities, each with its chains and draws.
"""

from __future__ import annotations

import numpy as np
from scipy import fft, special

__all__ = ["convergence", "ess_bulk", "ess_tail", "hdi", "rhat_rank"]


def _split(x):
    """Each chain's first and last half as two chains: ``(k, 2 chains, draws // 2)``."""
    half = x.shape[2] // 2
    return np.concatenate([x[:, :, :half], x[:, :, x.shape[2] - half:]], axis=1)


def _average_ranks(a):
    """Ranks 1..N along the last axis of ``(k, N)``, ties sharing their mean rank (SciPy's
    ``rankdata(method="average")``, which is several times slower along an axis)."""
    k, big_n = a.shape
    order = np.argsort(a, axis=1)
    v = np.take_along_axis(a, order, axis=1)
    pos = np.broadcast_to(np.arange(1.0, big_n + 1.0), (k, big_n)).copy()
    tied = v[:, 1:] == v[:, :-1]
    rows = np.flatnonzero(tied.any(axis=1))
    if rows.size:  # a run of equal values shares the mean of its positions
        t = tied[rows]
        idx = np.broadcast_to(np.arange(big_n), t.shape[:1] + (big_n,))
        new = np.ones(idx.shape, bool)
        new[:, 1:] = ~t
        last = np.ones(idx.shape, bool)
        last[:, :-1] = ~t
        first_pos = np.maximum.accumulate(np.where(new, idx, 0), axis=1)
        last_pos = np.minimum.accumulate(np.where(last, idx, big_n)[:, ::-1], axis=1)[:, ::-1]
        pos[rows] = 0.5 * (first_pos + last_pos) + 1.0
    ranks = np.empty((k, big_n))
    ranks[np.arange(k)[:, None], order] = pos
    return ranks


def _z_scale(x):
    """Normal scores of the pooled ranks of each entry (average ranks for ties, Blom's
    offset 3/8): ``Phi^-1((r - 3/8) / (N + 1/4))``."""
    k, c, n = x.shape
    rank = _average_ranks(x.reshape(k, c * n))
    return special.ndtri((rank - 0.375) / (c * n + 0.25)).reshape(k, c, n)


def _rhat(x):
    """Potential scale reduction of ``(k, chains, draws)``: ``sqrt((B/W + n - 1) / n)`` with
    ``B = n Var(chain means)`` and ``W`` the mean within-chain variance."""
    n = x.shape[2]
    between = n * np.var(x.mean(axis=2), axis=1, ddof=1)
    within = np.var(x, axis=2, ddof=1).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt((between / within + n - 1) / n)


def _ess(x):
    """Effective sample size of ``(k, chains, draws)`` by Geyer's initial monotone sequence
    over the autocorrelations pooled across chains.

    ``rho_t = 1 - (W - mean_c acov_c(t)) / var+`` with ``var+ = W (n-1)/n + Var(chain
    means)``; the pairs ``P_j = rho_2j + rho_2j+1`` are summed while positive (at most the
    lags ``t < n - 3`` are read), each capped by the one before it, and the first pair that
    is not summed contributes its even lag when that is positive (or when the pair is
    exactly zero): ``tau = -1 + 2 sum_j P_j + rho_2K``, ``ESS = c n / max(tau, 1/log10(c n))``.
    """
    k, c, n = x.shape
    total = c * n
    spread = x.max(axis=(1, 2)) - x.min(axis=(1, 2))
    dev = x - x.mean(axis=2, keepdims=True)
    m = fft.next_fast_len(2 * n)
    f = fft.rfft(dev, n=m, axis=2)
    acov = fft.irfft(f * np.conjugate(f), n=m, axis=2)[:, :, :n] / n  # (k, c, n)
    mean_acov = acov.mean(axis=1)  # (k, n)
    mean_var = mean_acov[:, 0] * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if c > 1:
        var_plus = var_plus + np.var(x.mean(axis=2), axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1.0 - (mean_var[:, None] - mean_acov) / var_plus[:, None]  # (k, n)
    rho[:, 0] = 1.0
    pairs = max((n - 1) // 2, 1)  # P_0 .. P_{pairs-1}
    rho = np.concatenate([rho, np.zeros((k, max(2 * pairs - n, 0)))], axis=1)
    p = rho[:, 0:2 * pairs:2] + rho[:, 1:2 * pairs:2]  # (k, pairs)
    # pair j >= 1 is read while every pair before it is positive, and while 2j - 1 < n - 3
    readable = max((n - 1) // 2 - 1, 0)
    lead = np.cumprod(p > 0, axis=1).sum(axis=1)  # pairs before the first non-positive one
    big_k = np.minimum(lead, readable)  # K: the pairs summed are 0 .. K-1
    capped = np.minimum.accumulate(p, axis=1)
    j = np.arange(pairs)[None, :]
    summed = np.where(j < big_k[:, None], capped, 0.0).sum(axis=1)
    # the even lag after the last summed pair: 1 when nothing was read; else rho_2K when its
    # pair was kept (non-negative) or is positive itself, otherwise 0
    rows = np.arange(k)
    even = rho[rows, 2 * big_k]
    pair_k = p[rows, big_k]
    tail = np.where(big_k == 0, 1.0, np.where((pair_k >= 0) | (even > 0), even, 0.0))
    tau = np.maximum(-1.0 + 2.0 * summed + tail, 1.0 / np.log10(total))
    out = np.where(np.isnan(rho).any(axis=1), np.nan, total / tau)
    # a constant entry: every draw counts
    return np.where(spread < np.finfo(float).resolution, float(total), out)


def _entries(x):
    """``(chains, draws, k)`` as a float ``(k, chains, draws)`` array, draws contiguous."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 3:
        raise ValueError(f"expected draws shaped (chains, draws, quantities), got {x.shape}")
    return np.ascontiguousarray(np.moveaxis(x, 2, 0))


def _valid(x):
    """Entries with finite draws only, and enough draws to diagnose."""
    ok = np.isfinite(x).all(axis=(1, 2))
    if x.shape[2] < 4:
        ok[:] = False
    return ok


def hdi(x, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """The narrowest interval holding ``floor(prob * N)`` + 1 of the ``N`` pooled draws of
    each entry (unimodal highest-density interval): ``(lower, upper)``, each ``(k,)``."""
    x = _entries(x)
    flat = np.sort(x.reshape(x.shape[0], -1), axis=1)
    n = flat.shape[1]
    inc = int(np.floor(prob * n))
    if n - inc < 1:
        raise ValueError(f"too few draws ({n}) for a {prob:.0%} interval")
    first = np.argmin(flat[:, inc:] - flat[:, :n - inc], axis=1)
    rows = np.arange(flat.shape[0])
    return flat[rows, first], flat[rows, first + inc]


def convergence(x) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rhat_rank, ess_bulk, ess_tail)`` of every entry of ``(chains, draws, k)`` in one pass:
    the rank-normalised split R-hat (the larger of the bulk, normal scores of the split chains,
    and the tail, normal scores of the distance from the median; NaN with one chain), the bulk
    ESS (of the same normal scores) and the tail ESS (the smaller ESS of the indicators
    ``x <= q`` at the 5% and 95% quantiles, R's type 7). Entries with non-finite draws, or
    fewer than 4 draws, get NaN."""
    e = _entries(x)
    k = e.shape[0]
    rh, eb, et = (np.full(k, np.nan) for _ in range(3))
    ok = _valid(e)
    if not ok.any():
        return rh, eb, et
    y = e[ok]
    s = _split(y)
    z = _z_scale(s)
    eb[ok] = _ess(z)
    if e.shape[1] >= 2:  # R-hat compares chains
        folded = np.abs(s - np.median(s.reshape(s.shape[0], -1), axis=1)[:, None, None])
        rh[ok] = np.maximum(_rhat(z), _rhat(_z_scale(folded)))
    q = np.quantile(y.reshape(y.shape[0], -1), [0.05, 0.95], axis=1)[:, :, None, None]
    et[ok] = np.minimum(_ess(_split((y <= q[0]).astype(float))),
                        _ess(_split((y <= q[1]).astype(float))))
    return rh, eb, et


def rhat_rank(x) -> np.ndarray:
    """The R-hat of :func:`convergence`."""
    return convergence(x)[0]


def ess_bulk(x) -> np.ndarray:
    """The bulk ESS of :func:`convergence`."""
    return convergence(x)[1]


def ess_tail(x) -> np.ndarray:
    """The tail ESS of :func:`convergence`."""
    return convergence(x)[2]
