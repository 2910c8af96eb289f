"""Item-level 2PL fits at leaderboard scale: responses streamed from Parquet into one byte per
cell, Bock-Aitkin EM over blocks of subjects, EAP abilities in blocks.

Layout: :class:`~platinum_jax.data.CodedResponses` (one byte per cell: 0 not observed, 1 wrong,
2 right), read from Parquet in record batches by :func:`~platinum_jax.data.read_parquet_streamed`.

EM (Bock and Aitkin 1981), binary responses, ``p_jq = sigmoid(a_j (theta_q - b_j))`` on ``Q``
nodes ``theta_q`` (:func:`~platinum_jax.inference._marginal.quadrature`); the passes over the
data are in :mod:`._stream_passes`, the M-step and the ways to plain EM's fixed point (the scale
step, SQUAREM) in :mod:`._stream_em`. The objective is the package's 2PL: minus the marginal
log-likelihood plus the priors ``b ~ N(0, 3^2)`` and ``log a ~ N(0, 1)``, so the estimates
equal those of ``fit(TwoPL(), table, method="marginal")`` (a test holds the two together).

The products run in float32 (the 0/1 matrices are exact; ``log(1 - p)`` rounds at about
``1e-7``, which moves the estimates by about ``1e-6``); everything else in float64
(``jax_enable_x64``), which the fit needs. Memory: the code matrix plus one block's float32
``K``, ``N`` and products (``block_cells`` cells, 8 bytes each) plus ``(J, Q)`` statistics.
Time per pass: ``6 N J Q`` flops in the three products (``N`` against ``log(1 - p)`` and
``a p``, its transpose against the posteriors); blocks of 2^22 cells keep them near the caches
(0.43 CPU s with 2^24 on 4 x 10^7 cells, 0.22-0.27 s with 2^21-2^22, for two products).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from platinum_jax.data import CodedResponses, read_parquet_streamed

from ._stream_em import _scale_em, _squarem
from ._stream_passes import _blocks, _eap_pass, _host, _mesh

__all__ = ["StreamedFit", "fit_streamed_2pl", "score_streamed_2pl"]

#: the ways to the fixed point of plain EM (``em=`` of :func:`fit_streamed_2pl`)
EM_VARIANTS = ("scale", "squarem")


@dataclass
class StreamedFit:
    """A streamed 2PL fit: ``items`` (difficulty, discrimination by item), ``subjects``
    (ability, ability_sd: EAP and posterior SD by subject), ``diagnostics``."""

    items: pd.DataFrame
    subjects: pd.DataFrame
    converged: bool
    diagnostics: dict = field(default_factory=dict)

    def files(self) -> dict[str, str]:
        """``items.csv``, ``subjects.csv``, ``globals.csv`` (the 2PL has none) and ``fit.json``
        as ``fit`` writes them for ``--model 2pl --method marginal``: the model's config and
        each file's size and checksum, so ``subset``, ``score``, ``cat`` and ``weights`` read
        the directory as any other fit's."""
        from platinum_jax.models import TwoPL, to_config

        from ._fit_files import with_integrity

        d = self.diagnostics
        summary = {"model": {"name": "2pl", "likelihood": "bernoulli"},
                   "model_config": to_config(TwoPL()), "method": "marginal",
                   "layout": "streamed", "converged": self.converged,
                   "identification": "none (priors or penalties fix the scale)",
                   **{k: d[k] for k in ("n_subjects", "n_items", "n_responses") if k in d},
                   "n_free_parameters": len(self.subjects) + 2 * len(self.items),
                   "interval": None, "diagnostics": d}
        return with_integrity({
            "subjects.csv": self.subjects.to_csv(), "items.csv": self.items.to_csv(),
            "globals.csv": pd.DataFrame({"value": []}, index=pd.Index([], name="")).to_csv(),
            "fit.json": json.dumps(summary, indent=2) + "\n"})

    def write(self, out: str | Path, *, overwrite: bool = False) -> list[Path]:
        """Write :meth:`files` into the directory ``out``, all or nothing (a failed run leaves
        ``out`` as it was)."""
        from platinum_jax._outputs import output_directory

        with output_directory(out, "fit", overwrite=overwrite) as d:
            return [d.write_text(name, text) for name, text in self.files().items()]


def fit_streamed_2pl(responses: CodedResponses | str | Path, *, nodes: int = 61,
                     max_iter: int = 500, tol: float = 1e-4, newton_steps: int = 2,
                     eap_nodes: int = 241, block_cells: int = 1 << 22,
                     batch_rows: int = 1 << 22, mesh=None,
                     em: str = "scale") -> StreamedFit:
    """Marginal (Bock-Aitkin EM) 2PL fit of binary responses held one byte per cell, with
    EAP abilities; ``responses`` a :class:`CodedResponses` or a Parquet path (read by
    :func:`read_parquet_streamed`). Float64 (``jax_enable_x64``) is required.

    The estimates are those of ``fit(TwoPL(), table, method="marginal", nodes=nodes)`` (same
    objective, priors and quadrature): plain EM's fixed point, reached by one of two ways
    (``em``), and the fit stops when a step moves no ``b_j`` or ``log a_j`` more than ``tol``.

    * ``"scale"`` (default): every EM step is followed by a Newton step along the common
      location and scale of the abilities (all items moved as ``b -> (b - mu) / s``,
      ``a -> a s``), the direction plain EM creeps along when each subject answers many items.
      Its gradient and Hessian are those of the quadrature's own marginal likelihood (Fisher's
      and Louis's identities, from the same pass over the data), so the fixed point is plain
      EM's on any grid. Where that likelihood is not concave along the direction, the first
      steps take the parameter-expanded step instead (PX-EM, Liu, Rubin and Wu 1998) until the
      objective rises, and plain EM after that; a step that raises the objective is replaced
      by the plain EM step. One pass per step, with one more product than plain EM's.
    * ``"squarem"``: plain EM steps extrapolated by SQUAREM (Varadhan and Roland 2008), as
      ``fit(..., method="marginal")`` does: the reference, slow when each subject answers
      thousands of items.

    ``block_cells``: cells per block of subjects (memory: about 10 bytes a cell beyond the
    code matrix). ``mesh``: ``True`` (every device JAX sees, every host's under
    ``jax.distributed``) or a 1-D :class:`jax.sharding.Mesh` splits the blocks of subjects
    across devices; each device runs the E-step on its own blocks and the item statistics are
    summed across them (the same estimates as on one device, up to the order of the sums).

    Returns:
        A :class:`StreamedFit`; ``diagnostics``: the marginal log-likelihood, the passes over
        the data (``iterations``; with ``"scale"`` also ``scale_steps``, ``expanded_steps``
        and ``steps_replaced``), the last change, the seconds of reading and fitting.
    """
    from ._marginal import quadrature

    if not jax.config.jax_enable_x64:
        raise ValueError("the streamed fit needs float64: call "
                         "jax.config.update('jax_enable_x64', True) before any JAX work")
    for name, value, least in (("nodes", nodes, 2), ("max_iter", max_iter, 1),
                               ("newton_steps", newton_steps, 1), ("eap_nodes", eap_nodes, 3),
                               ("block_cells", block_cells, 1)):
        if value < least:
            raise ValueError(f"{name} must be >= {least} (got {value})")
    if not tol > 0:
        raise ValueError(f"tol must be > 0 (got {tol})")
    if em not in EM_VARIANTS:
        raise ValueError(f"em must be one of {EM_VARIANTS} (got {em!r})")
    t0 = time.perf_counter()
    if not isinstance(responses, CodedResponses):
        responses = read_parquet_streamed(responses, batch_rows=batch_rows)
    t_read = time.perf_counter() - t0
    codes = responses.codes
    mesh = _mesh(mesh)
    blocks, rows = _blocks(codes, block_cells, mesh)
    cdt = jnp.float32 if tol >= 1e-6 else jnp.float64  # exact 0/1 matrices in float32
    f64 = jnp.float64
    x, w = quadrature(nodes)
    x, log_w = jnp.asarray(x, f64), jnp.asarray(np.log(w), f64)
    # successes and attempts per item from the codes, column by column of blocks
    r0 = np.zeros(responses.n_items)
    att = np.zeros(responses.n_items)
    for k in range(0, codes.shape[0], rows):
        part = codes[k:k + rows]
        r0 += np.count_nonzero(part == 2, axis=0)
        att += np.count_nonzero(part, axis=0)
    # difficulties started where each item's share of successes puts them (at a = 1)
    share = (r0 + 0.5) / (att + 1.0)
    b = jnp.asarray(-np.log(share / (1.0 - share)) * np.sqrt(1.0 + np.pi / 8.0), f64)
    la = jnp.zeros(responses.n_items, f64)
    r0 = jnp.asarray(r0, f64)
    counts = {}
    if em == "scale":
        b, la, it, change, ll, counts = _scale_em(blocks, b, la, r0, x, log_w, cdt,
                                                  newton_steps, max_iter, tol, mesh)
    else:
        b, la, it, change, ll = _squarem(blocks, b, la, r0, x, log_w, cdt, newton_steps,
                                         max_iter, tol, mesh)
    grid = np.linspace(-6.0, 6.0, eap_nodes)
    log_prior = -0.5 * grid**2
    log_prior -= np.log(np.exp(log_prior).sum())
    mean, sd, _, _ = _eap_pass(blocks, jnp.exp(la), b, jnp.asarray(grid, f64),
                               jnp.asarray(log_prior, f64), 0.95, cdt, mesh)
    n_s = responses.n_subjects
    items = pd.DataFrame({"difficulty": np.asarray(b), "discrimination": np.exp(np.asarray(la)),
                          "n_responses": np.asarray(att, np.int64)}, index=responses.items)
    per_subject = np.count_nonzero(responses.codes[:n_s], axis=1)
    subjects = pd.DataFrame({"ability": _host(mean)[:n_s], "ability_sd": _host(sd)[:n_s],
                             "n_responses": per_subject}, index=responses.subjects)
    converged = bool(change <= tol)
    return StreamedFit(items, subjects, converged, {
        "marginal_log_lik": float(ll), "iterations": it, "max_change": float(change),
        "nodes": nodes, "em": em, **counts, "n_responses": responses.n_responses,
        "devices": 1 if mesh is None else mesh.size,
        "n_subjects": n_s, "n_items": responses.n_items, "block_rows": rows,
        "seconds_read": t_read, "seconds_total": time.perf_counter() - t0})


def score_streamed_2pl(responses: CodedResponses | str | Path, items: pd.DataFrame, *,
                       level: float = 0.95, eap_nodes: int = 241, block_cells: int = 1 << 22,
                       batch_rows: int = 1 << 22, mesh=None) -> pd.DataFrame:
    """EAP abilities of new subjects against frozen 2PL items, block by block.

    ``items``: indexed by item label with ``difficulty`` and ``discrimination`` columns (a
    fit's ``items``); every item of ``responses`` must be there (the extra ones are unused).
    Under the prior ``theta ~ N(0, 1)`` on ``eap_nodes`` even points over +-6, each subject gets
    its posterior mean (``ability``), SD (``ability_sd``) and central ``level`` interval
    (``lower``, ``upper``: posterior quantiles). Float64 required, as for the fit; ``mesh``
    splits the subjects across devices as in :func:`fit_streamed_2pl`.
    """
    if not jax.config.jax_enable_x64:
        raise ValueError("scoring needs float64: call "
                         "jax.config.update('jax_enable_x64', True) before any JAX work")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1) (got {level})")
    if eap_nodes < 3 or block_cells < 1:
        raise ValueError(f"eap_nodes must be >= 3 and block_cells >= 1 (got {eap_nodes}, "
                         f"{block_cells})")
    missing_cols = {"difficulty", "discrimination"} - set(items.columns)
    if missing_cols:
        raise ValueError(f"items lacks the columns {sorted(missing_cols)}; pass a 2PL fit's "
                         "items table (difficulty, discrimination by item)")
    if not isinstance(responses, CodedResponses):
        responses = read_parquet_streamed(responses, batch_rows=batch_rows)
    unknown = responses.items.difference(items.index)
    if len(unknown):
        raise ValueError(f"{len(unknown)} items of the responses are not in items (e.g. "
                         f"{list(unknown[:5])}); score against the fit that calibrated them")
    frozen = items.loc[responses.items, ["difficulty", "discrimination"]].to_numpy(np.float64)
    if not np.all(np.isfinite(frozen)) or np.any(frozen[:, 1] <= 0):
        raise ValueError("items must have finite difficulties and positive discriminations")
    mesh = _mesh(mesh)
    blocks, _ = _blocks(responses.codes, block_cells, mesh)
    grid = np.linspace(-6.0, 6.0, eap_nodes)
    log_prior = -0.5 * grid**2
    log_prior -= np.log(np.exp(log_prior).sum())
    f64 = jnp.float64
    out = _eap_pass(blocks, jnp.asarray(frozen[:, 1], f64), jnp.asarray(frozen[:, 0], f64),
                    jnp.asarray(grid, f64), jnp.asarray(log_prior, f64), level, jnp.float32,
                    mesh)
    n_s = responses.n_subjects
    return pd.DataFrame({k: _host(v)[:n_s] for k, v in
                         zip(("ability", "ability_sd", "lower", "upper"), out, strict=True)},
                        index=responses.subjects)
