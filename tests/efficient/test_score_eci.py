"""`score --scale eci`: a new model placed on the capabilities index from its scores alone (no
refit), by the map that sends the fit's two anchor models to their values, checked against a
NumPy 2 x 2 solve on the fit's capabilities and against the stitching fit's own ECI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from platinum_jax import analysis as an
from platinum_jax.cli import main
from platinum_jax.datasets import synthetic_score_table
from platinum_jax.models.rosetta import BenchmarkAnchor
from platinum_jax.stitching import fit_stitching


def test_a_new_model_on_the_eci_scale(tmp_path, capsys):
    table, truth = synthetic_score_table(seed=8, n_models=30, n_benchmarks=6, density=0.9,
                                         noise=0.03)
    data = tmp_path / "scores.csv"
    table.data.to_csv(data, index=False)
    fit_dir = tmp_path / "fit"
    assert main(["fit", str(data), "--model", "rosetta", "--anchor-benchmark", "bench_00",
                 "--out", str(fit_dir)]) == 0
    caps = pd.read_csv(fit_dir / "subjects.csv", index_col=0)["capability"]
    lo, hi = caps.idxmin(), caps.idxmax()
    # two of the fit's models scored again under new names: their index without a refit
    old = [truth.capabilities.sort_values().index[k] for k in (10, 20)]
    new = table.data[table.data["model"].isin(old)].rename(
        columns={"model": "subject", "benchmark": "item", "score": "response"})
    new["subject"] = "new_" + new["subject"]
    path = tmp_path / "new.csv"
    new[["subject", "item", "response"]].to_csv(path, index=False)
    out = tmp_path / "scores"
    anchors = ["--eci-anchors", lo, "100", hi, "150"]
    assert main(["score", str(fit_dir), str(path), "--data", str(data),
                 "--estimator", "item-model", "--scale", "eci",
                 *anchors, "--out", str(out)]) == 0
    scores = pd.read_csv(out / "scores.csv", index_col=0)
    a, b = np.linalg.solve([[1.0, caps[lo]], [1.0, caps[hi]]], [100.0, 150.0])
    for col, src in (("eci", "ability"), ("eci_lo", "ability_lo"), ("eci_hi", "ability_hi")):
        np.testing.assert_allclose(scores[col], a + b * scores[src], rtol=1e-12)
    np.testing.assert_allclose(scores["eci_sd"], b * scores["ability_sd"], rtol=1e-12)
    # the default (combined) estimate calibrates the score; the index maps the same ability
    assert main(["score", str(fit_dir), str(path), "--data", str(data), "--groups", "random",
                 "--folds", "2", "--scale", "eci", *anchors, "--out", str(tmp_path / "c")]) == 0
    combined = pd.read_csv(tmp_path / "c" / "scores.csv", index_col=0)
    for col in ("eci", "eci_sd", "eci_lo", "eci_hi"):
        np.testing.assert_allclose(combined[col], scores[col], rtol=1e-9)
    # the same map as the stitching fit's index, and the new copies land by their originals
    fit = fit_stitching(table, BenchmarkAnchor("bench_00"))
    eci = an.eci_scale(fit, anchors=((lo, 100.0), (hi, 150.0)), replicates=0)
    assert eci.scale == pytest.approx(b, rel=1e-6)
    for m in old:
        row = scores.loc[f"new_{m}"]
        assert row["eci_lo"] <= eci.models.loc[m, "eci"] <= row["eci_hi"]
    # wrong anchors and a wrong order are named before anything is scored
    assert main(["score", str(fit_dir), str(path), "--data", str(data),
                 "--estimator", "item-model", "--scale", "eci",
                 "--eci-anchors", "no_such_model", "100", hi, "150",
                 "--out", str(tmp_path / "x")]) == 2
    assert "no_such_model" in capsys.readouterr().err
    assert main(["score", str(fit_dir), str(path), "--data", str(data),
                 "--estimator", "item-model", "--scale", "eci",
                 "--eci-anchors", hi, "100", lo, "150", "--out", str(tmp_path / "y")]) == 2
    assert "stronger model" in capsys.readouterr().err
    assert main(["score", str(fit_dir), str(path), "--data", str(data), *anchors,
                 "--out", str(tmp_path / "z")]) == 2  # anchors without --scale eci
    assert not (tmp_path / "x").exists() and not (tmp_path / "z").exists()
