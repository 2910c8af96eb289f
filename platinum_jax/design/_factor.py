"""Factor analysis of residuals with missing cells by EM (``z_sb = g_s . f_b + e_sb``,
``g_s ~ N(0, I_k)``, ``e_sb ~ N(0, psi_b)``), shared by the noise of a fit's residuals
(:mod:`._from_fit`) and of repeated runs (:mod:`._runs`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["factor_em"]


def factor_em(z, s_idx, i_idx, S, m, rank, iterations, *, moments=False):
    """EM for ``z_sb = g_sᵀf_b + e_sb`` on the observed entries; returns ``f, ψ, log-lik``
    (and, with ``moments``, each item's ``Σ_s E[g_s g_sᵀ]`` over its subjects, (m, k, k))."""
    n = np.bincount(i_idx, minlength=m)
    eye = np.eye(rank)
    if rank == 0:
        psi = np.bincount(i_idx, z**2, minlength=m) / n
        loglik = -0.5 * np.sum(np.log(2 * np.pi * psi[i_idx]) + z**2 / psi[i_idx])
        return (np.zeros((m, 0)), psi, loglik) + ((np.zeros((m, 0, 0)),) if moments else ())
    # Start from the leading right singular vectors of the zero-filled matrix.
    X = np.zeros((S, m))
    X[s_idx, i_idx] = z
    _, sv, vt = np.linalg.svd(X / np.sqrt(np.maximum(n, 1)), full_matrices=False)
    f = vt[:rank].T * sv[:rank] * 0.5
    psi = np.ones(m)

    def e_step(f, psi):
        ff = np.einsum("bk,bl->bkl", f, f) / psi[:, None, None]
        prec = eye + np.zeros((S, rank, rank))
        np.add.at(prec, s_idx, ff[i_idx])
        rhs = np.zeros((S, rank))
        np.add.at(rhs, s_idx, f[i_idx] * (z / psi[i_idx])[:, None])
        cov = np.linalg.solve(prec, np.broadcast_to(eye, prec.shape))  # rank x rank each
        return prec, rhs, cov, np.einsum("skl,sl->sk", cov, rhs)

    for _ in range(iterations):
        _, _, cov, mean = e_step(f, psi)
        second = cov + np.einsum("sk,sl->skl", mean, mean)
        Egg = np.zeros((m, rank, rank))
        np.add.at(Egg, i_idx, second[s_idx])
        Egz = np.zeros((m, rank))
        np.add.at(Egz, i_idx, mean[s_idx] * z[:, None])
        f = np.linalg.solve(Egg + 1e-9 * eye, Egz[..., None])[..., 0]
        psi = np.bincount(i_idx, z**2, minlength=m) / n - np.einsum("bk,bk->b", f, Egz) / n
        psi = np.maximum(psi, 1e-6)
    # Marginal log-likelihood of each subject's observed residuals, N(0, ΨO + FO FOᵀ), by the
    # determinant lemma and Woodbury: prec = I + FOᵀΨO⁻¹FO, rhs = FOᵀΨO⁻¹zO.
    prec, rhs, cov, mean = e_step(f, psi)
    logdet = np.linalg.slogdet(prec)[1].sum()
    quad = np.sum(z**2 / psi[i_idx]) - np.einsum("sk,sk->", rhs, mean)
    loglik = -0.5 * (np.sum(np.log(2 * np.pi * psi[i_idx])) + logdet + quad)
    if not moments:
        return f, psi, loglik
    Egg = np.zeros((m, rank, rank))
    np.add.at(Egg, i_idx, (cov + np.einsum("sk,sl->skl", mean, mean))[s_idx])
    return f, psi, loglik, Egg
