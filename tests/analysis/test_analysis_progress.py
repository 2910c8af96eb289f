"""The paper's algorithmic-progress recipe: k from single-release families, Delta b over all models.

Expected numbers come from NumPy (``np.polyfit``) written here, on synthetic worlds with a known
k and drift and on the real Epoch tables.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from platinum_jax import analysis as an
from platinum_jax.data import ScoreTable
from platinum_jax.importers import read_distilled_models, read_model_compute
from platinum_jax.stitching import fit_stitching

DAYS = 365.25


def _year(dates):
    delta = pd.to_datetime(pd.Series(np.asarray(dates))) - pd.Timestamp("1970-01-01")
    return 1970.0 + delta.dt.total_seconds().to_numpy() / 86400.0 / DAYS


def _world(seed=3, k=0.2, drift=0.3):
    """Three single-release families (4 sizes each) and 20 unrelated models; b drifts by
    ``drift`` per year for everyone."""
    rng = np.random.default_rng(seed)
    rows = []
    for f, t in enumerate((2023.2, 2023.8, 2024.6)):
        for j in range(4):
            logf = np.log(10.0) * (22 + j + rng.uniform(-0.2, 0.2))
            rows.append((f"fam{f}-{j}", t, logf, f"F{f}"))
    for i in range(20):
        rows.append((f"solo{i}", rng.uniform(2023, 2025.5), np.log(10.0) * rng.uniform(22, 26), ""))
    df = pd.DataFrame(rows, columns=["model", "year", "logf", "family"]).set_index("model")
    df["capability"] = k * df["logf"] + drift * (df["year"] - 2023) - 9 + rng.normal(0, 0.02, len(df))
    dates = pd.Timestamp("1970-01-01") + pd.to_timedelta((df["year"] - 1970) * DAYS, unit="D")
    caps = pd.DataFrame({"capability": df["capability"], "release_date": dates.dt.round("s")})
    compute = pd.DataFrame({"training_compute_flop": np.exp(df["logf"])}, index=df.index)
    families = {f"F{f}": [f"fam{f}-{j}" for j in range(4)] for f in range(3)}
    return caps, compute, families, df


def test_families_recipe_matches_numpy_and_recovers_truth():
    caps, compute, families, df = _world()
    res = an.fit_algorithmic_progress(caps, compute, families=families, n_boot=300, seed=2)
    slopes, sizes = [], []
    for members in families.values():
        sub = df.loc[members]
        slopes.append(np.polyfit(sub["logf"], caps.loc[members, "capability"], 1)[0])
        sizes.append(len(members))
    k = np.average(slopes, weights=sizes)
    assert res.k == pytest.approx(k, rel=1e-9)
    np.testing.assert_allclose(res.family_slopes["slope"], slopes, rtol=1e-9)
    b = caps["capability"] - k * np.log(compute.loc[caps.index, "training_compute_flop"])
    db = np.polyfit(_year(caps["release_date"]), b.to_numpy(), 1)[0]
    assert res.delta_b_per_year == pytest.approx(db, rel=1e-8)
    assert res.reduction_per_year == pytest.approx(np.exp(db / k), rel=1e-10)
    assert res.k == pytest.approx(0.2, abs=0.01)
    assert res.delta_b_per_year == pytest.approx(0.3, abs=0.03)
    s = res.summary()
    assert s.loc["k", "low"] <= 0.2 <= s.loc["k", "high"]
    assert s.loc["delta_b_per_year", "low"] <= 0.3 <= s.loc["delta_b_per_year", "high"]
    assert len(res.models) == len(df)  # every model with compute enters Delta b


def test_family_errors_name_the_problem():
    caps, compute, families, _ = _world()
    with pytest.raises(ValueError, match=r"family 'F0'.*'ghost' \(no compute estimate\)"):
        an.fit_algorithmic_progress(caps, compute, families={"F0": ["fam0-0", "ghost"]}, n_boot=2)
    with pytest.raises(ValueError, match=r"'fam0-1' \(distilled\)"):
        an.fit_algorithmic_progress(caps, compute, families=families, distilled=["fam0-1"], n_boot=2)
    with pytest.raises(ValueError, match="two or more sizes"):
        an.fit_algorithmic_progress(caps, compute, families={"F0": ["fam0-0"]}, n_boot=2)
    with pytest.raises(ValueError, match="two families"):
        an.fit_algorithmic_progress(caps, compute, families={"A": ["fam0-0", "fam0-1"],
                                                             "B": ["fam0-1", "fam0-2"]}, n_boot=2)
    with pytest.raises(ValueError, match="method must be one of"):
        an.fit_algorithmic_progress(caps, compute, method="paper", n_boot=2)


@pytest.fixture(scope="module")
def epoch(epoch_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # reported name normalisation
        table = ScoreTable.from_csv(epoch_dir / "scores_long.csv")
        compute = read_model_compute(epoch_dir / "model_compute.csv")
        distilled = read_distilled_models(epoch_dir / "raw")
    return fit_stitching(table), compute, distilled


def test_paper_figures_on_the_epoch_tables(epoch):
    fit, compute, distilled = epoch
    res = an.fit_algorithmic_progress(fit, compute, distilled=distilled, n_boot=400)
    caps = fit.capabilities
    # NumPy, from the paper's description: LLaMA, LLaMA 2, LLaMA 3.1 slopes, size-weighted
    slopes, sizes = [], []
    for members in an.PAPER_FAMILIES.values():
        members = list(members)
        x = np.log(compute.loc[members, "training_compute_flop"].to_numpy())
        slopes.append(np.polyfit(x, caps.loc[members, "capability"].to_numpy(), 1)[0])
        sizes.append(len(members))
    k = np.average(slopes, weights=sizes)
    keep = [m for m in compute.index if m in caps.index and m not in distilled]
    b = caps.loc[keep, "capability"] - k * np.log(compute.loc[keep, "training_compute_flop"])
    db = np.polyfit(_year(caps.loc[keep, "release_date"]), b.to_numpy(), 1)[0]
    assert res.k == pytest.approx(k, rel=1e-9)
    assert res.delta_b_per_year == pytest.approx(db, rel=1e-8)
    assert len(res.models) == len(keep) == 68
    # the trailing-space model is matched, not dropped as "no capability estimate"
    assert "Llama-2-70b-hf" in res.models.index
    assert "Llama-2-70b-hf" not in set(res.excluded["model"])
    # the paper's figures: k 0.168, Delta b 0.297 / yr, about 6x less compute per year
    assert res.k == pytest.approx(0.168, abs=0.01)
    assert res.delta_b_per_year == pytest.approx(0.297, abs=0.02)
    assert 5.0 <= res.reduction_per_year <= 7.0
    s = res.summary()
    for q in ("k", "delta_b_per_year", "compute_reduction_per_year"):
        assert s.loc[q, "low"] < s.loc[q, "value"] < s.loc[q, "high"]
    # the organisation variant mixes algorithmic progress into k
    org = an.fit_algorithmic_progress(fit, compute, distilled=distilled, method="organization",
                                      n_boot=50)
    assert org.k > res.k + 0.03
    assert org.reduction_per_year < res.reduction_per_year / 1.5
