"""Subset minus general (the domain index's difference per model) against independent
computations: the wild bootstrap's simulated tables refitted by SciPy and reprojected per model by
a scalar minimiser; each row-bootstrap replicate's full refit redone by SciPy on the resample its
weights stand for, and its basket projection on the same weights; the p-value adjustments
against statsmodels; the fresh (released after the model) basket against a per-model selection
in pandas. Coverage and false positives on simulated worlds: benchmarks/bench_subset_difference.py
and the small world study below."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import least_squares, minimize_scalar
from scipy.special import expit
from scipy.stats import norm

from platinum_jax import analysis as an
from platinum_jax.data import ScoreTable
from platinum_jax.datasets import synthetic_score_table
from platinum_jax.inference import resample_counts
from platinum_jax.models.rosetta import BenchmarkAnchor
from platinum_jax.stitching import bootstrap, fit_stitching

ANCHOR = BenchmarkAnchor("bench_00")
BASKET = ["bench_02", "bench_04", "bench_05"]
SEED, REPLICATES = 11, 40


@pytest.fixture(scope="module")
def world():
    table, _ = synthetic_score_table(seed=5, n_models=18, n_benchmarks=6, density=0.85, noise=0.03)
    fit = fit_stitching(table, ANCHOR)
    boot = bootstrap(fit, REPLICATES, seed=SEED, level=0.9)
    return table, fit, boot


def _scipy_weighted_fit(table, l2, w, x0):
    """The paper's objective with each score counted ``w`` times, solved by SciPy."""
    mi, bi, y = table.model_index, table.benchmark_index, table.scores
    nm, nb = table.n_models, table.n_benchmarks
    k = table.benchmark_position("bench_00")
    n = nm + 2 * nb - 1

    def unpack(x):
        return x[:nm], np.insert(x[nm:nm + nb - 1], k, 0.0), np.insert(x[nm + nb - 1:], k, 1.0)

    def resid(x):
        c, d, a = unpack(x)
        centre = np.mean(np.concatenate([c, d]))
        pen = np.sum((c - centre) ** 2) + np.sum((d - centre) ** 2) + np.sum(np.delete(a, k) ** 2)
        return np.append(np.sqrt(w) * (expit(a[bi] * (c[mi] - d[bi])) - y), np.sqrt(l2 * pen / n))

    sol = least_squares(resid, x0, xtol=1e-14, ftol=1e-14, gtol=1e-14)
    return unpack(sol.x)


def _scipy_projection(table, c, d, a, w, rho, rows):
    """Each model's capability on the basket rows, D and alpha fixed, by a scalar minimiser."""
    mi, bi, y = table.model_index[rows], table.benchmark_index[rows], table.scores[rows]
    centre = np.mean(np.concatenate([c, d]))
    out = np.full(table.n_models, np.nan)
    for m in np.unique(mi):
        sel = (mi == m) & (w[rows] > 0)
        if not sel.any():
            continue
        ww, dd, aa, yy = w[rows][sel], d[bi[sel]], a[bi[sel]], y[sel]

        def f(x, ww=ww, dd=dd, aa=aa, yy=yy):
            return 0.5 * np.sum(ww * (expit(aa * (x - dd)) - yy) ** 2) + 0.5 * rho * (x - centre) ** 2

        out[m] = minimize_scalar(f, bracket=(c[m] - 1, c[m] + 1), tol=1e-12).x
    return out


def _scipy_full_fit(table, l2, scores, x0):
    return _scipy_weighted_fit(table.__class__.from_frame(table.data.assign(score=scores),
                                                          name="simulated"),
                               l2, np.ones(table.n_scores), x0)


def test_difference_test_is_the_wild_bootstrap_refitted(world):
    import jax

    table, fit, _ = world
    n_rows, k = table.n_scores, fit.theta.size
    rho = fit.l2 / (table.n_models + 2 * table.n_benchmarks - 1)
    draws = 12
    res = an.domain_index(fit, BASKET, eci_anchors=None, level=0.9, difference_draws=draws,
                          seed=4)
    m = res.models
    rows = table.data["benchmark"].isin(BASKET).to_numpy()
    # the point estimate: the basket projection on every score, minus the full capability
    point = _scipy_projection(table, np.asarray(fit.params.capability),
                              np.asarray(fit.params.difficulty), np.asarray(fit.params.slope),
                              np.ones(n_rows), rho, rows)
    pos = [table.model_position(x) for x in m.index]
    np.testing.assert_allclose(m["basket"], point[pos], atol=1e-7)
    # the simulated tables: fitted scores plus each residual, inflated by sqrt(N / (N - P)),
    # with a random sign (the signs are JAX's Rademacher draws for the seed, over the rows
    # padded to a multiple of PAD_ROWS), clipped to [0, 1]
    from platinum_jax.analysis._baskets import PAD_ROWS

    yhat = fit.predicted
    padded = -(-n_rows // PAD_ROWS) * PAD_ROWS
    signs = np.asarray(jax.random.rademacher(jax.random.PRNGKey(4), (draws, padded),
                                             dtype=np.float64))[:, :n_rows]
    sims = np.clip(yhat + np.sqrt(n_rows / (n_rows - k)) * (table.scores - yhat) * signs, 0, 1)
    diffs = []
    for y in sims:  # each refitted by SciPy and reprojected by a scalar minimiser
        c, d, a = _scipy_full_fit(table, fit.l2, y, np.asarray(fit.theta))
        sim_table = table.__class__.from_frame(table.data.assign(score=y), name="simulated")
        diffs.append(_scipy_projection(sim_table, c, d, a, np.ones(n_rows), rho, rows) - c)
    diffs = np.asarray(diffs)[:, pos]
    sd, null = diffs.std(axis=0, ddof=1), diffs.mean(axis=0)
    np.testing.assert_allclose(m["difference_sd"], sd, atol=1e-6)
    np.testing.assert_allclose(m["null_difference"], null, atol=1e-6)
    z = norm.ppf(0.95)
    np.testing.assert_allclose(m["difference_lower"], m["difference"] - z * sd, atol=1e-6)
    np.testing.assert_allclose(m["difference_upper"], m["difference"] + z * sd, atol=1e-6)
    np.testing.assert_allclose(m["p_value"], 2 * norm.sf(np.abs(m["difference"] - null) / sd),
                               rtol=1e-4)
    # on the ECI scale the difference and its sd scale by the map's slope
    caps = fit.capabilities["capability"]
    anchors = ((caps.idxmin(), 130.0), (caps.idxmax(), 150.0))
    eci = an.domain_index(fit, BASKET, eci_anchors=anchors, difference_draws=draws, seed=4)
    scale = an.eci_scale(fit, anchors=anchors, replicates=0).scale
    np.testing.assert_allclose(eci.models["difference"], scale * m["difference"], atol=1e-8)
    np.testing.assert_allclose(eci.models["difference_sd"], abs(scale) * sd, atol=1e-5)
    np.testing.assert_allclose(eci.models["p_value"], m["p_value"], rtol=1e-6)
    for bad in (1, -3, 2.5):
        with pytest.raises(ValueError, match="difference_draws"):
            an.domain_index(fit, BASKET, eci_anchors=None, difference_draws=bad)


def test_basket_interval_projects_each_replicate_on_its_own_resample(world):
    table, fit, boot = world
    rho = fit.l2 / (table.n_models + 2 * table.n_benchmarks - 1)
    m = an.domain_index(fit, BASKET, bootstrap=boot, eci_anchors=None, level=0.9).models
    rows = table.data["benchmark"].isin(BASKET).to_numpy()
    # the replicates' weights are the bootstrap's own: SciPy's refit of the full objective on the
    # resample they stand for gives the replicate's parameters
    weights = resample_counts(SEED, REPLICATES, table.n_scores)
    assert boot.converged.all()
    for r in (0, 7):
        cs, _, _ = _scipy_weighted_fit(table, fit.l2, weights[r], np.asarray(boot.thetas[r]))
        np.testing.assert_allclose(boot.replicates.loc[r, "capability"].to_numpy(), cs, atol=1e-5)
    k = table.benchmark_position("bench_00")
    basket = []
    for r in range(REPLICATES):
        rep = boot.replicates.loc[r]
        basket.append(_scipy_projection(
            table, rep["capability"].to_numpy(), np.insert(rep["difficulty"].to_numpy(), k, 0.0),
            np.insert(rep["slope"].to_numpy(), k, 1.0), weights[r], rho, rows))
    basket = np.asarray(basket)[:, [table.model_position(x) for x in m.index]]
    lo, hi = np.nanquantile(basket, [0.05, 0.95], axis=0)
    np.testing.assert_allclose(m["lower"], lo, atol=1e-6)
    np.testing.assert_allclose(m["upper"], hi, atol=1e-6)


def test_p_value_adjustments_match_statsmodels(world):
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    _, fit, boot = world
    for ours, theirs in (("holm", "holm"), ("bh", "fdr_bh")):
        m = an.domain_index(fit, BASKET, eci_anchors=None, difference_draws=20,
                            adjust=ours).models
        np.testing.assert_allclose(m["p_adjusted"], multipletests(m["p_value"], method=theirs)[1])
    m = an.domain_index(fit, BASKET, eci_anchors=None, difference_draws=20, adjust="none").models
    np.testing.assert_array_equal(m["p_adjusted"], m["p_value"])
    with pytest.raises(ValueError, match="adjust"):
        an.domain_index(fit, BASKET, difference_draws=20, adjust="bonferroni")


def test_a_bootstrap_without_its_seed_is_refused(world):
    from platinum_jax.stitching import BootstrapResult

    _, fit, boot = world
    bare = BootstrapResult(fit, boot.thetas, boot.costs, boot.converged, 0.9)
    with pytest.raises(ValueError, match="seed"):
        an.domain_index(fit, BASKET, bootstrap=bare, eci_anchors=None)


def test_fresh_basket_keeps_benchmarks_released_after_each_model(world):
    table, _, _ = world
    frame = table.data.copy()
    released = {b: pd.Timestamp("2023-01-01") + pd.Timedelta(days=200 * k)
                for k, b in enumerate(table.benchmarks)}
    frame["benchmark_release_date"] = frame["benchmark"].map(released)
    dated = ScoreTable.from_frame(frame, name="dated")
    fit = fit_stitching(dated, ANCHOR)
    res = an.domain_index(fit, None, fresh=True, eci_anchors=None)
    # pandas: for each model, its rows on benchmarks released after it
    after = (frame["benchmark_release_date"] > frame["model_release_date"]).to_numpy()
    n = dated.n_models + 2 * dated.n_benchmarks - 1
    want = _scipy_projection(dated, np.asarray(fit.params.capability),
                             np.asarray(fit.params.difficulty), np.asarray(fit.params.slope),
                             np.ones(dated.n_scores), fit.l2 / n, after)
    have = frame[after].groupby("model")["benchmark"].nunique()
    assert sorted(res.models.index) == sorted(have.index)
    np.testing.assert_allclose(res.models["basket"], want[[dated.model_position(x) for x in res.models.index]],
                               atol=1e-7)
    np.testing.assert_array_equal(res.models["n_benchmarks"], have.reindex(res.models.index))
    for bad in ({"fresh": True}, {"difference_draws": 10}):
        with pytest.raises(ValueError, match="mode='project'"):
            an.domain_index(fit, None, mode="refit", eci_anchors=None, **bad)
    # a benchmark without a release date is named, not passed over
    frame.loc[frame["benchmark"] == "bench_03", "benchmark_release_date"] = pd.NaT
    fit2 = fit_stitching(ScoreTable.from_frame(frame, name="undated"), ANCHOR)
    with pytest.raises(ValueError, match="bench_03"):
        an.domain_index(fit2, None, fresh=True, eci_anchors=None)


def test_a_model_scored_on_the_basket_only_is_not_tested(world):
    table, _, _ = world
    frame = table.data
    alone = "model_004"
    frame = frame[(frame["model"] != alone) | frame["benchmark"].isin(BASKET)]
    fit = fit_stitching(ScoreTable.from_frame(frame, name="one model on the basket only"), ANCHOR)
    m = an.domain_index(fit, BASKET, eci_anchors=None, difference_draws=20).models
    assert m.loc[alone, "difference"] == pytest.approx(0.0, abs=1e-6)
    untested = ["difference_sd", "difference_lower", "null_difference", "p_value", "p_adjusted"]
    assert m.loc[alone, untested].isna().all()
    assert m.drop(index=alone)[untested].notna().all().all()


def _world(rng, n_models=60, n_benchmarks=12, basket=4, density=0.4, noise=0.04):
    """Observed and expected scores of a world where no model differs on the basket."""
    from scipy.stats import norm as normal

    cap, diff = rng.normal(0, 1.2, n_models), rng.normal(0, 1, n_benchmarks)
    slope = rng.uniform(0.7, 2.5, n_benchmarks)
    diff[0], slope[0] = 0.0, 1.0
    keep = rng.random((n_models, n_benchmarks)) < density
    keep[:, 0] = True
    keep[np.arange(n_models), n_benchmarks - 1 - rng.integers(basket, size=n_models)] = True
    mi, bi = np.nonzero(keep)
    mu = expit(slope[bi] * (cap[mi] - diff[bi]))
    lo, hi = -mu / noise, (1 - mu) / noise  # E clip(mu + noise Z, 0, 1) in closed form
    expected = (mu * (normal.cdf(hi) - normal.cdf(lo)) + noise * (normal.pdf(lo) - normal.pdf(hi))
                + normal.sf(hi))
    frame = pd.DataFrame({"model": [f"model_{i:03d}" for i in mi],
                          "benchmark": [f"bench_{j:02d}" for j in bi],
                          "score": np.clip(mu + noise * rng.standard_normal(mi.size), 0, 1)})
    return (ScoreTable.from_frame(frame, name="world"),
            ScoreTable.from_frame(frame.assign(score=expected), name="expected"),
            [f"bench_{j:02d}" for j in range(n_benchmarks - basket, n_benchmarks)])


def test_difference_intervals_cover_the_truth_of_simulated_worlds():
    # the truth: the same procedure on the expected scores (what unlimited data would give)
    rng = np.random.default_rng(2026)
    covered, flagged = [], []
    for w in range(3):
        table, expected, basket = _world(rng)
        truth = an.domain_index(fit_stitching(expected, ANCHOR), basket, eci_anchors=None).models
        m = an.domain_index(fit_stitching(table, ANCHOR), basket, eci_anchors=None,
                            difference_draws=100, seed=w).models.dropna(subset=["p_value"])
        t = truth["difference"].reindex(m.index)
        covered += list((m["difference_lower"] <= t) & (t <= m["difference_upper"]))
        flagged += list(m["p_value"] < 0.10)
    # about 180 intervals at 90%: a binomial sd of 2.2 points
    assert 0.82 <= np.mean(covered) <= 0.97, np.mean(covered)
    assert np.mean(flagged) <= 0.16, np.mean(flagged)


def test_cli_baskets_writes_the_difference_test(world, tmp_path, capsys):
    from platinum_jax.cli import main

    table, fit, _ = world
    frame = table.data.copy()
    frame["benchmark_release_date"] = frame["benchmark"].map(
        {b: pd.Timestamp("2023-06-01") + pd.Timedelta(days=150 * k)
         for k, b in enumerate(table.benchmarks)})
    data = tmp_path / "scores.csv"
    frame.to_csv(data, index=False)
    caps = fit.capabilities["capability"]
    common = ["--anchor", "bench_00", "--eci-replicates", "0",
              "--eci-anchors", caps.idxmin(), "130", caps.idxmax(), "150"]
    out = tmp_path / "fresh"
    assert main(["analyze", "baskets", str(data), "--out", str(out), "--basket-fresh",
                 "--difference-draws", "10", "--adjust", "bh", *common]) == 0
    m = pd.read_csv(out / "domain_index.csv", index_col=0)
    direct = an.domain_index(
        fit_stitching(ScoreTable.from_frame(frame, name="dated"), ANCHOR), None, fresh=True,
        eci_anchors=((caps.idxmin(), 130.0), (caps.idxmax(), 150.0)), difference_draws=10,
        adjust="bh").models
    np.testing.assert_allclose(m["difference_sd"], direct["difference_sd"], rtol=1e-6)
    np.testing.assert_allclose(m["p_adjusted"], direct["p_adjusted"], rtol=1e-6)
    assert (out / "domain_index.png").is_file()
    assert "largest fresh - general differences" in capsys.readouterr().out
    # a fresh basket in refit mode fails and writes nothing
    bad = tmp_path / "bad"
    assert main(["analyze", "baskets", str(data), "--out", str(bad), "--basket-fresh",
                 "--basket-mode", "refit", *common]) != 0
    assert not (bad / "domain_index.csv").exists()
