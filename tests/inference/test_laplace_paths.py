"""One Laplace interval for least squares: the engine's (``fit --model rosetta --method
laplace``, the draws ``weights`` reads) and the stitching path's (``stitch --uncertainty
laplace``) are the same Gaussian, and both equal the textbook ``sigma_hat^2 (J^T J)^{-1}`` with
``sigma_hat^2 = RSS / (n - p)`` on a linear least-squares problem written out in NumPy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest

from platinum_jax.cli import main
from platinum_jax.data import ResponseTable
from platinum_jax.datasets import synthetic_score_table
from platinum_jax.inference import (
    fit_map,
    laplace,
    laplace_covariance,
    noise_variance,
    read_fit,
)
from platinum_jax.inference import objective_hessian as engine_hessian
from platinum_jax.models import (
    Bernoulli,
    Fixed,
    Gaussian,
    Identification,
    Likelihood,
    MeasurementModel,
    Param,
    TwoPL,
)
from platinum_jax.models.rosetta import BenchmarkAnchor
from platinum_jax.stitching import fit_stitching, objective_hessian
from platinum_jax.stitching import laplace as stitching_laplace

SCORES = Path("../shared/data/epoch-benchmark-stitching/scores_long.csv")
needs_data = pytest.mark.skipif(not SCORES.exists(), reason="Epoch scores_long.csv not present")


# ---------------------------------------------------------------------- closed form
class Additive(MeasurementModel):
    """``y = C_s + D_i + noise``: linear in its parameters, no penalty (flat priors), the first
    item's ``D`` fixed at 0; its least-squares Hessian is exactly ``J^T J``."""

    likelihood: Likelihood = Gaussian(noise=1.0)
    name: ClassVar[str] = "additive"

    def subject_params(self):
        return {"level": Param(prior=None)}

    def item_params(self):
        return {"offset": Param(prior=None)}

    def mean(self, subject, item, glob):
        return subject["level"] + item["offset"]

    def identify(self, table):
        mask = np.zeros(table.n_items, bool)
        mask[0] = True
        return Identification(item={"offset": Fixed(mask, np.zeros(table.n_items))})


@pytest.fixture(scope="module")
def linear():
    rng = np.random.default_rng(3)
    n_s, n_i = 6, 4
    s, i = np.meshgrid(np.arange(n_s), np.arange(n_i), indexing="ij")
    s, i = s.ravel(), i.ravel()
    keep = rng.random(s.size) > 0.15  # an incomplete grid (still connected)
    s, i = s[keep], i[keep]
    y = rng.normal(size=n_s)[s] + rng.normal(size=n_i)[i] + rng.normal(0, 0.3, s.size)
    frame = pd.DataFrame({"subject": [f"s{k}" for k in s], "item": [f"i{k}" for k in i],
                          "response": y})
    table = ResponseTable.from_frame(frame)
    # The design matrix in the table's order: subject indicators, then items 1.. (item 0 fixed).
    x = np.zeros((table.n_responses, table.n_subjects + table.n_items - 1))
    x[np.arange(table.n_responses), table.subject_index] = 1.0
    rows = table.item_index > 0
    x[np.flatnonzero(rows), table.n_subjects + table.item_index[rows] - 1] = 1.0
    return table, x


def test_least_squares_laplace_is_textbook_covariance(linear):
    table, x = linear
    beta, rss, *_ = np.linalg.lstsq(x, table.response, rcond=None)
    n, p = x.shape
    s2 = float(rss[0]) / (n - p)  # the unbiased residual variance, RSS / (n - p)
    xtx = x.T @ x
    expected = s2 * np.linalg.solve(xtx, np.eye(p))
    fits = {noise: fit_map(Additive(likelihood=Gaussian(noise=noise)), table)
            for noise in (1.0, 0.25)}
    for noise, fit in fits.items():  # the residual estimate ignores the noise fixed by hand
        assert fit.converged
        cov = laplace_covariance(fit)
        assert cov.attrs["noise_scale"] == "residual" and cov.attrs["residual_dof"] == n - p
        assert cov.attrs["noise_variance"] * noise**2 == pytest.approx(s2, rel=1e-8)
        np.testing.assert_allclose(cov.to_numpy(), expected, rtol=1e-7, atol=1e-12)
        # the objective 0.5 sum (r / noise)^2 has the Hessian X^T X / noise^2, exactly
        np.testing.assert_allclose(np.asarray(engine_hessian(fit)), xtx / noise**2,
                                   rtol=1e-10, atol=1e-12)
    fit = fits[1.0]
    np.testing.assert_allclose(fit.subjects["level"], beta[: table.n_subjects], atol=1e-7)
    # The likelihood as written (noise 1 is a device): (J^T J)^{-1}; a given sd 0.5: 0.25 of it.
    np.testing.assert_allclose(laplace_covariance(fit, noise_scale="likelihood").to_numpy(),
                               np.linalg.solve(xtx, np.eye(p)), rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(laplace_covariance(fit, noise_scale=0.5).to_numpy(),
                               0.25 * np.linalg.solve(xtx, np.eye(p)), rtol=1e-7, atol=1e-12)
    # The fit's frames report the Gaussian's sd; its draws carry the same scale.
    lap = laplace(fit, draws=4000, seed=1)
    assert lap.diagnostics["noise_scale"] == "residual"
    sd = np.sqrt(np.diag(expected))
    np.testing.assert_allclose(lap.subjects["level_sd"], sd[: table.n_subjects], rtol=1e-7)
    drawn = np.asarray(lap.draws.subjects)[..., 0].std(axis=0, ddof=1)
    # sd of a sample sd from 4000 normal draws: sd / sqrt(2 * 3999), about 1.1%; allow 5 of them
    np.testing.assert_allclose(drawn, sd[: table.n_subjects], rtol=5 / np.sqrt(2 * 3999))


def test_noise_scale_is_checked(linear):
    table, _ = linear
    fit = fit_map(Additive(), table)  # compiled already by the test above
    with pytest.raises(ValueError, match="noise_scale must be one of"):
        noise_variance(fit, "pooled")
    with pytest.raises(ValueError, match="positive number"):
        noise_variance(fit, -1.0)
    binary = ResponseTable.from_frame(pd.DataFrame({
        "subject": np.repeat([f"s{k}" for k in range(8)], 3), "item": ["a", "b", "c"] * 8,
        "response": (np.arange(24) * 7 % 5 > 1).astype(float)}))
    irt = fit_map(TwoPL(likelihood=Bernoulli()), binary)
    assert noise_variance(irt) == {"noise_scale": "likelihood", "noise_variance": 1.0}
    with pytest.raises(ValueError, match="least-squares likelihoods"):
        noise_variance(irt, "residual")


def test_stitching_hessian_and_engine_covariance_agree():
    """The stitching Hessian over the layout's parameters (the engine's, penalty centre
    profiled out by a Schur complement) against the engine covariance its ``laplace`` reads
    (the centre marginalised): the two ways of removing the centre agree."""
    table, _ = synthetic_score_table(seed=2, n_models=10, n_benchmarks=4, density=1.0,
                                     noise=0.03)
    fit = fit_stitching(table, BenchmarkAnchor("bench_00"), l2=0.1)
    lap = stitching_laplace(fit)
    hess = np.asarray(objective_hessian(fit))
    resid = fit.residuals["residual"].to_numpy()
    s2 = np.sum(resid**2) / (table.n_scores - fit.theta.size)
    sd = np.sqrt(s2 * np.diag(np.linalg.solve(hess, np.eye(hess.shape[0]))))
    np.testing.assert_allclose(lap["sd"].to_numpy(), sd, rtol=1e-8)


# ---------------------------------------------------------------------- the Epoch table
@pytest.fixture(scope="module")
def epoch(tmp_path_factory):
    """Both commands on scores_long.csv, in-process: ``fit`` (with the draws ``weights``
    reads) and ``stitch``."""
    out = tmp_path_factory.mktemp("epoch")
    assert main(["fit", str(SCORES), "--model", "rosetta", "--method", "laplace",
                 "--save-draws", "--out", str(out / "fit")]) == 0
    assert main(["stitch", str(SCORES), "--uncertainty", "laplace",
                 "--out", str(out / "stitch")]) == 0
    return out


def _stripped(frame):
    frame = frame.copy()
    frame.index = frame.index.str.strip()  # the stitching reader trims stray whitespace
    return frame


@needs_data
def test_fit_and_stitch_report_the_same_laplace_sd(epoch):
    fit = _stripped(pd.read_csv(epoch / "fit" / "subjects.csv", index_col=0))
    stitch = pd.read_csv(epoch / "stitch" / "capabilities.csv", index_col=0)
    np.testing.assert_allclose(fit["capability"], stitch.loc[fit.index, "capability"],
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(fit["capability_sd"], stitch.loc[fit.index, "sd"], rtol=0.01)
    items = pd.read_csv(epoch / "fit" / "items.csv", index_col=0)
    bench = pd.read_csv(epoch / "stitch" / "benchmarks.csv", index_col=0)
    free = items.index != "Winogrande"  # the anchor: fixed, no sd
    for col in ("difficulty_sd", "slope_sd"):
        np.testing.assert_allclose(items.loc[free, col], bench.loc[items.index[free], col],
                                   rtol=0.01)
    summary = json.loads((epoch / "fit" / "fit.json").read_text())
    assert summary["diagnostics"]["noise_scale"] == "residual"
    # s^2 = RSS / (n - p) from the stitch command's own residuals, p = 179 + 2 * 37 free
    resid = pd.read_csv(epoch / "stitch" / "residuals.csv")["residual"].to_numpy()
    s2 = np.sum(resid**2) / (resid.size - (179 + 2 * 37))
    assert summary["diagnostics"]["noise_variance"] == pytest.approx(s2, rel=1e-6)


@needs_data
def test_weights_reads_draws_on_the_residual_scale(epoch):
    back = read_fit(epoch / "fit")  # what `platinum-jax weights` reads
    draws = np.asarray(back.draws.subjects)[..., 0]
    drawn = draws.std(axis=0, ddof=1)
    stitch = pd.read_csv(epoch / "stitch" / "capabilities.csv", index_col=0)
    ref = stitch.loc[pd.Index(back.table.subjects).str.strip(), "sd"].to_numpy()
    # A sample sd of D normal draws is within sd / sqrt(2 (D - 1)) of the truth (one sd);
    # allow 5 (the old scale was off by a factor of about 12).
    tol = 5 / np.sqrt(2 * (draws.shape[0] - 1))
    assert np.all(np.abs(drawn / ref - 1) < tol)
