"""Trajectory shapes by PSIS-LOO on synthetic frontiers whose true shape is known, and the
per-observation log-likelihood (with measurement error) recomputed by SciPy from the draws."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from platinum_jax import analysis as an

# One frontier size and one set of NUTS settings for every comparison here (the command line's
# too): the frontier's data are arguments of the compiled sampler, so each shape compiles once.
N = 24
TINY = {"num_warmup": 150, "num_samples": 150, "num_chains": 2}


def _world(curvature, seed):
    """A frontier of N models over four years: C = 0.4 x + curvature x^2 + noise, x in years."""
    rng = np.random.default_rng(seed)
    year = 2022.0 + np.sort(rng.uniform(0.0, 4.0, N))
    x = year - 2022.0
    c = 0.4 * x + curvature * x**2 + 0.08 * rng.standard_normal(N)
    names = [f"m{k:02d}" for k in range(N)]
    caps = pd.DataFrame({"capability": c, "release_date": an.year_to_timestamp(year)},
                        index=names)
    # draws whose spread is each model's measurement error (known, different per model)
    sd = rng.uniform(0.02, 0.1, N)
    draws = pd.DataFrame(c + sd * rng.standard_normal((200, N)), columns=names)
    return caps, draws


@pytest.fixture(scope="module")
def quadratic_world():
    caps, draws = _world(0.3, seed=0)
    return caps, draws, an.compare_shapes(caps, draws=draws, shapes=["linear", "quadratic"],
                                          top_n=N, **TINY)


def test_quadratic_truth_wins(quadratic_world):
    _, _, res = quadratic_world
    cmp = res.comparison
    assert res.best == "quadratic"
    # the linear shape loses by many standard errors of the difference
    assert cmp.loc["linear", "elpd_diff"] > 4 * cmp.loc["linear", "dse"]
    assert (res.diagnostics["rhat_max"] < 1.1).all()
    assert set(res.pareto_k.columns) == {"linear", "quadratic"} and len(res.pareto_k) == N


def test_pointwise_log_likelihood_by_scipy(quadratic_world):
    caps, draws, res = quadratic_world
    post = res.idata["quadratic"].posterior
    data = res.data
    year, c = data["year"].to_numpy(), data["capability"].to_numpy()
    # the documented standardisation, recomputed: u in (0, 1], z = (C - mean) / sd
    t0 = year.min() - 1 / 12
    u = (year - t0) / (year.max() - t0)
    centre, scale = c.mean(), c.std()
    s = draws[data.index].std(ddof=1).to_numpy() / scale
    np.testing.assert_allclose(data["measurement_sd"], draws[data.index].std(ddof=1), rtol=1e-12)
    a, b, q, sigma = (post[v].to_numpy()[..., None] for v in ("a", "b", "c", "sigma"))
    want = stats.norm.logpdf((c - centre) / scale, a + b * u + q * u**2, np.sqrt(sigma**2 + s**2))
    got = res.idata["quadratic"].log_likelihood["z"].to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    # the fitted curve at the last release, back in capability units, near the truth
    x = year.max() - 2022.0
    assert res.curves.query("shape == 'quadratic'")["median"].iloc[-1] == pytest.approx(
        0.4 * x + 0.3 * x**2, abs=0.15)


def test_linear_truth_extra_parameters_do_not_win():
    caps, draws = _world(0.0, seed=1)
    res = an.compare_shapes(caps, draws=draws, top_n=N, **TINY)
    cmp = res.comparison
    assert set(cmp.index) == set(an.SHAPES)
    # no shape with more parameters beats the line by more than the SE of the difference
    assert cmp.loc["linear", "elpd_diff"] <= cmp.loc["linear", "dse"]


def test_shapes_bad_input():
    caps, _ = _world(0.0, seed=2)
    with pytest.raises(ValueError, match="shapes"):
        an.compare_shapes(caps, shapes=["cubic"])
    with pytest.raises(ValueError, match="frontier models"):
        an.compare_shapes(caps.iloc[:4], top_n=N)


def test_cli_shapes_on_saved_capabilities(tmp_path):
    from platinum_jax.cli import main

    caps, _ = _world(0.3, seed=3)
    path = tmp_path / "capabilities.csv"
    caps.rename_axis("model").to_csv(path)
    out = tmp_path / "shapes"
    argv = ["analyze", "shapes", str(path), "--capabilities", str(path), "--top-n", str(N),
            "--eci-replicates", "0", "--shapes", "linear",
            "--shape-warmup", str(TINY["num_warmup"]), "--shape-samples",
            str(TINY["num_samples"]), "--shape-chains", str(TINY["num_chains"]),
            "--out", str(out)]
    assert main(argv) == 0
    cmp = pd.read_csv(out / "shapes_compare.csv", index_col=0)
    assert list(cmp.index) == ["linear"] and (out / "shapes.png").is_file()
    assert len(pd.read_csv(out / "shapes_pareto_k.csv")) == N
