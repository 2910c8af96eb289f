"""Fitted measurement models as labelled results: one frame per subject and per item."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import jax
import numpy as np
import pandas as pd

from .._outputs import atomic_write
from ._problem import Block, Problem, Theta

__all__ = ["Fit"]


def _natural_matrix(block: Block, raw: np.ndarray) -> np.ndarray:
    """Raw ``(..., p)`` -> natural values in the same flat layout."""
    if block.size == 0:
        return np.asarray(raw)
    nat = block.natural(block.unflatten(jax.numpy.asarray(raw)))
    lead = raw.shape[:-1]
    return np.concatenate(
        [np.asarray(nat[n]).reshape(*lead, p.size) for n, p in block.decl], axis=-1
    )


@dataclass(frozen=True, eq=False)
class Fit:
    """A fitted measurement model (immutable). Frames use natural parameter values.

    Attributes:
        problem: the model bound to its data (``problem.model``, ``problem.table``).
        method: ``"map"``, ``"laplace"``, ``"bootstrap"``, ``"marginal"``, ``"svi"`` or
            ``"nuts"``.
        theta: the point estimate (MAP; posterior mean for SVI/NUTS), raw blocks.
        draws: raw blocks with a leading draw axis (``None`` for a plain MAP fit): Laplace
            draws, bootstrap replicates or posterior draws.
        objective: the penalised objective at ``theta`` (MAP methods).
        diagnostics: convergence facts (iterations, gradient norm, R-hat, ESS, divergences...).
        interval: probability of the reported equal-tailed intervals (default 0.9).
        inference_data: ArviZ ``InferenceData`` for SVI/NUTS fits (groups posterior,
            sample_stats, log_likelihood, posterior_predictive, observed_data, constant_data;
            dimensions named as the model's ``dim_names``).
        posterior_summary: SVI/NUTS fits: one row per entry of every posterior variable but
            the sampling coordinates (mean, sd, 94% HDI, R-hat, bulk and tail ESS;
            :func:`platinum_jax.inference.posterior_summary`).
        subject_columns: extra per-subject columns (e.g. the posterior SD of an EAP ability
            from a marginal fit), added to :attr:`subjects`.
        raw_sd: Laplace fits: the Gaussian's exact sd of every raw entry (0 where fixed); a
            parameter without a transform reports it as ``_sd``, with the normal interval
            ``value +- z sd`` (the draws would only estimate them, to about ``1/sqrt(2 D)``).
        adaptation: NUTS fits: the warm-up's result per chain (step size, mass matrix, last
            position), the start of a warm-started refit (``nuts(..., warm_start=fit)``).
    """

    problem: Problem
    method: str
    theta: Theta
    objective: float = float("nan")
    converged: bool = True
    diagnostics: dict = field(default_factory=dict)
    draws: Theta | None = None
    interval: float = 0.9
    inference_data: object = None
    posterior_summary: pd.DataFrame | None = field(default=None, repr=False)
    subject_columns: dict = field(default_factory=dict)
    raw_sd: Theta | None = None
    adaptation: object = field(default=None, repr=False)

    @property
    def model(self):
        return self.problem.model

    @property
    def table(self):
        return self.problem.table

    # ------------------------------------------------------------------ frames
    def _frame(self, block: Block, raw_point, raw_draws, index, extra: dict,
               raw_sd=None) -> pd.DataFrame:
        cols = [label for _, label in block.columns()]
        point = _natural_matrix(block, np.asarray(raw_point))
        frame = pd.DataFrame(point, index=index, columns=cols)
        if raw_draws is not None:
            nat = _natural_matrix(block, np.asarray(raw_draws))  # (D, n, p)
            lo_q, hi_q = (1 - self.interval) / 2, 1 - (1 - self.interval) / 2
            sd = nat.std(axis=0, ddof=1)
            lo = np.quantile(nat, lo_q, axis=0)
            hi = np.quantile(nat, hi_q, axis=0)
            if raw_sd is not None:  # exact Gaussian sd and interval where natural = raw
                from scipy.stats import norm

                same = np.concatenate([np.full(p.size, p.transform is None)
                                       for _, p in block.decl])
                exact = np.asarray(raw_sd).reshape(point.shape)
                half = norm.ppf(hi_q) * exact
                sd = np.where(same, exact, sd)
                lo = np.where(same, point - half, lo)
                hi = np.where(same, point + half, hi)
            for k, c in enumerate(cols):
                frame[f"{c}_sd"] = sd[:, k]
                frame[f"{c}_lo"] = lo[:, k]
                frame[f"{c}_hi"] = hi[:, k]
        data = {label for label in cols} - {label for _, label in block.parameter_columns()}
        data |= {f"{d}_{x}" for d in data for x in ("sd", "lo", "hi")}
        frame = frame.drop(columns=[c for c in frame.columns if c in data])  # data, not fitted
        for k, v in extra.items():
            frame[k] = v
        return frame

    @property
    def subjects(self) -> pd.DataFrame:
        """One row per subject: its parameters (and ``_sd``, ``_lo``, ``_hi`` with draws) and
        ``n_responses``."""
        t = self.table
        counts = np.bincount(t.subject_index, minlength=t.n_subjects)
        draws = None if self.draws is None else self.draws.subjects
        sd = None if self.raw_sd is None else self.raw_sd.subjects
        return self._frame(self.problem.subject, self.theta.subjects, draws, t.subjects,
                           {**self.subject_columns, "n_responses": counts}, sd)

    @property
    def items(self) -> pd.DataFrame:
        """One row per item: its parameters (and intervals), ``group`` when the data have
        groups, and ``n_responses``."""
        t = self.table
        extra = {}
        if t.groups is not None:
            extra["group"] = np.asarray(t.groups)[t.item_group]
        extra["n_responses"] = np.bincount(t.item_index, minlength=t.n_items)
        draws = None if self.draws is None else self.draws.items
        sd = None if self.raw_sd is None else self.raw_sd.items
        return self._frame(self.problem.item, self.theta.items, draws, t.items, extra, sd)

    @property
    def globals(self) -> pd.DataFrame:
        """Global parameters (the likelihood's included), natural values, one row each."""
        block = self.problem.glob
        if block.size == 0:
            return pd.DataFrame(columns=["value"])
        draws = None if self.draws is None else self.draws.globals[:, None, :]
        sd = None if self.raw_sd is None else np.asarray(self.raw_sd.globals)[None]
        frame = self._frame(block, np.asarray(self.theta.globals)[None], draws, ["value"], {},
                            sd)
        base = [label for _, label in block.columns()]
        out = pd.DataFrame({"value": frame[base].iloc[0].to_numpy()}, index=pd.Index(base,
                                                                                      name="name"))
        if draws is not None:
            for suffix in ("sd", "lo", "hi"):
                out[suffix] = frame[[f"{c}_{suffix}" for c in base]].iloc[0].to_numpy()
        if self.method in ("svi", "nuts"):  # point-fit devices play no part in a posterior
            hidden = {label for (name, label) in block.columns()
                      if dict(block.decl)[name].map_only}
            out = out.drop(index=sorted(hidden))
        return out

    def predict(self, subject_index=None, item_index=None) -> np.ndarray:
        """Expected responses at the point estimate (default: every row of the data); for a
        model whose mean is a vector of category log-probabilities, the expected category."""
        t = self.table
        s = t.subject_index if subject_index is None else np.asarray(subject_index)
        i = t.item_index if item_index is None else np.asarray(item_index)
        return np.asarray(self.problem.expected(self.theta, s, i))

    @property
    def residuals(self) -> pd.DataFrame:
        """Per response: ``subject, item, response, predicted, residual`` (predicted minus
        response), with the model's own mean function (its link included)."""
        t = self.table
        pred = self.predict()
        return pd.DataFrame({
            "subject": t.subjects[t.subject_index],
            "item": t.items[t.item_index],
            "response": t.response,
            "predicted": pred,
            "residual": pred - t.response,
        })

    def summary(self) -> dict:
        """Plain-Python summary (what ``platinum-jax fit`` writes to ``fit.json``)."""
        t = self.table
        from platinum_jax.models import to_config

        return {
            "model": self.model.describe(),
            "model_config": to_config(self.model),
            "method": self.method,
            "objective": float(self.objective),
            "converged": bool(self.converged),
            "identification": self.problem.identification.description,
            "n_subjects": t.n_subjects,
            "n_items": t.n_items,
            "n_responses": t.n_responses,
            "n_free_parameters": self.problem.n_free,
            "interval": self.interval if self.draws is not None else None,
            "diagnostics": _plain(self.diagnostics),
        }

    def files(self, *, draws: bool = False) -> dict[str, str | bytes]:
        """The result as files: ``subjects.csv``, ``items.csv``, ``globals.csv``, ``fit.json``;
        a Bayesian fit adds ``summary.csv`` (:attr:`posterior_summary`) and ``posterior.nc``
        (:attr:`inference_data` as netCDF, ``arviz.from_netcdf`` reads it), and a NUTS fit
        ``adaptation.npz`` (:attr:`adaptation`, for ``--warm-start``); ``draws=True``
        adds ``draws.npz`` (the model, the responses, the raw point estimate and draws, which
        :func:`platinum_jax.inference.read_fit` and ``platinum-jax weights`` read). ``fit.json``
        records the size and checksum of every other file."""
        from ._fit_files import DRAWS_FILE, draws_bytes, with_integrity

        out: dict[str, str | bytes] = {
            "subjects.csv": self.subjects.to_csv(),
            "items.csv": self.items.to_csv(),
            "globals.csv": self.globals.to_csv(),
            "fit.json": json.dumps(self.summary(), indent=2) + "\n",
        }
        if self.posterior_summary is not None:
            out["summary.csv"] = self.posterior_summary.to_csv(index=False)
        if self.inference_data is not None:
            out["posterior.nc"] = _netcdf_bytes(self.inference_data)
        if self.adaptation is not None:  # a NUTS fit: what a warm-started refit starts from
            out[self.adaptation.FILE] = self.adaptation.to_bytes()
        if draws:
            out[DRAWS_FILE] = draws_bytes(self)
        return with_integrity(out)

    def write(self, out: str | Path, *, draws: bool = False) -> list[Path]:
        """Write :meth:`files` (with ``draws.npz`` when ``draws``) into the directory ``out``,
        each file to a temporary name, then renamed, so none is ever half-written."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        return [atomic_write(out / name, Path.write_bytes if isinstance(content, bytes)
                             else Path.write_text, content)
                for name, content in self.files(draws=draws).items()]


def _netcdf_bytes(idata) -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "posterior.nc"
        # uncompressed: posterior draws are doubles that zlib shrinks by about 6% at nearly
        # three times the writing time (a Bayesian stitching fit: 223 MB in 1.9 s, not
        # 210 MB in 5.0 s)
        idata.to_netcdf(str(path), engine="h5netcdf", compress=False)
        return path.read_bytes()


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.generic, np.ndarray)) or hasattr(value, "dtype"):
        arr = np.asarray(value)
        return arr.item() if arr.ndim == 0 else arr.tolist()
    return value
