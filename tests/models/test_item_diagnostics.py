"""Item diagnostics: infit/outfit, information and curves against NumPy formulas written here,
saturated items, the PNG, and ``platinum-jax fit --diagnostics`` on the LiveCodeBench data.

The worlds are drawn here with NumPy in the shapes the command-line tests fit (26 subjects by
30 items, every cell observed), so each model's fit is compiled once for both; the 2PL's world
has missing cells, and the saturated items are that world with two items' responses replaced.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from platinum_jax.cli import main
from platinum_jax.data import ResponseTable
from platinum_jax.inference import fit_map
from platinum_jax.models import GradedResponse, MultidimensionalTwoPL, ThreePL, TwoPL
from platinum_jax.models.diagnostics import (
    item_curves,
    item_diagnostics,
    item_information,
    plot_item_curves,
)

LCB = Path(__file__).resolve().parents[3] / "shared" / "data" / "item-level" / "livecodebench"


# The LiveCodeBench subset of the command-line tests below: 26 models by 30 items, complete.
N_SUBJECTS, N_ITEMS = 26, 30


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _world(seed, *, categories=2, density=1.0):
    """Responses of a logistic truth drawn here (``categories`` ordered categories, from
    nested cumulative curves), as a table with a share ``density`` of the cells observed."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=N_SUBJECTS)
    a = np.exp(rng.normal(0.0, 0.3, N_ITEMS))
    steps = np.sort(rng.normal(size=(N_ITEMS, categories - 1)), axis=1)
    above = _sigmoid(a[None, :, None] * (theta[:, None, None] - steps[None]))  # P(Y >= k)
    y = (rng.random((N_SUBJECTS, N_ITEMS))[..., None] < above).sum(axis=-1).astype(float)
    s, i = np.meshgrid(np.arange(N_SUBJECTS), np.arange(N_ITEMS), indexing="ij")
    keep = rng.random(s.shape) < density
    keep[np.arange(N_SUBJECTS), np.arange(N_SUBJECTS) % N_ITEMS] = True  # no empty subject
    keep[np.arange(N_ITEMS) % N_SUBJECTS, np.arange(N_ITEMS)] = True  # nor item
    return ResponseTable.from_arrays(s[keep], i[keep], y[keep])


@pytest.fixture(scope="module")
def twopl_fit():
    return fit_map(TwoPL(), _world(21, density=0.8))


def test_infit_outfit_match_the_numpy_formula(twopl_fit):
    fit = twopl_fit
    t = fit.table
    theta = fit.subjects["ability"].to_numpy()[t.subject_index]
    b = fit.items["difficulty"].to_numpy()[t.item_index]
    a = fit.items["discrimination"].to_numpy()[t.item_index]
    p = _sigmoid(a * (theta - b))
    y = t.response
    expected = {"infit": [], "outfit": []}
    for i in range(t.n_items):
        m = t.item_index == i
        resid2 = (y[m] - p[m]) ** 2
        var = p[m] * (1 - p[m])
        expected["infit"].append(resid2.sum() / var.sum())
        expected["outfit"].append(np.mean(resid2 / var))
    diag = item_diagnostics(fit)
    assert list(diag.index) == list(t.items)
    np.testing.assert_allclose(diag["infit"], expected["infit"], rtol=1e-10)
    np.testing.assert_allclose(diag["outfit"], expected["outfit"], rtol=1e-10)
    np.testing.assert_allclose(diag["mean_response"],
                               pd.Series(y).groupby(t.item_index).mean().to_numpy())
    assert diag["n_responses"].sum() == t.n_responses


def test_information_and_curves_match_closed_forms(twopl_fit):
    fit = twopl_fit
    grid = np.linspace(-3, 3, 13)
    b = fit.items["difficulty"].to_numpy()
    a = fit.items["discrimination"].to_numpy()
    p = _sigmoid(a * (grid[:, None] - b))
    curves = item_curves(fit, grid)
    np.testing.assert_allclose(curves.to_numpy(), p, rtol=1e-10)
    info = item_information(fit, grid)
    np.testing.assert_allclose(info[list(fit.table.items)].to_numpy(), a**2 * p * (1 - p),
                               rtol=1e-9)
    np.testing.assert_allclose(info["test"], (a**2 * p * (1 - p)).sum(axis=1), rtol=1e-9)
    diag = item_diagnostics(fit, grid)
    # The 2PL's information peaks at the difficulty, at a^2 / 4 (on a fine grid).
    fine = np.linspace(-6, 6, 2401)
    diag = item_diagnostics(fit, fine)
    inside = np.abs(b) < 5.5
    assert inside.sum() >= N_ITEMS // 2
    np.testing.assert_allclose(diag["ability_at_max_information"][inside], b[inside], atol=0.006)
    # (grid step 0.005: a steep item's peak is missed by at most (a * 0.0025)^2 / 4 relative)
    np.testing.assert_allclose(diag["max_information"][inside], a[inside] ** 2 / 4, rtol=5e-3)


def test_fits_of_one_structure_share_the_programs_and_keep_their_own_parameters(
        twopl_fit, saturated_fit):
    # Two fits of one model and table shape: the curves and information come from one compiled
    # program each (the parameters are its arguments), and each fit's numbers are its own.
    from platinum_jax.models import diagnostics

    grid = np.array([-1.0, 0.5, 2.0])
    for fit in (twopl_fit, saturated_fit, twopl_fit):
        b = fit.items["difficulty"].to_numpy()
        a = fit.items["discrimination"].to_numpy()
        p = _sigmoid(a * (grid[:, None] - b))
        np.testing.assert_allclose(item_curves(fit, grid).to_numpy(), p, rtol=1e-10)
        np.testing.assert_allclose(item_information(fit, grid)[list(fit.table.items)],
                                   a**2 * p * (1 - p), rtol=1e-9)
    kept = [k[0] for k in diagnostics._PROGRAMS
            if k[1] is TwoPL and k[3] == twopl_fit.problem.info and k[0] != "moments"]
    assert sorted(kept) == ["curves", "information"]
    assert not np.allclose(twopl_fit.items["difficulty"], saturated_fit.items["difficulty"])


def test_three_pl_curve_has_its_floor():
    fit = fit_map(ThreePL(), _world(3))
    grid = np.array([-8.0, 0.0, 2.0])
    it = fit.items
    want = it["guessing"].to_numpy() + (1 - it["guessing"].to_numpy()) * _sigmoid(
        it["discrimination"].to_numpy() * (grid[:, None] - it["difficulty"].to_numpy()))
    np.testing.assert_allclose(item_curves(fit, grid).to_numpy(), want, rtol=1e-10)
    assert (want[0] >= it["guessing"].to_numpy()).all()


def test_graded_diagnostics_match_numpy():
    model = GradedResponse(categories=3)
    fit = fit_map(model, _world(4, categories=3))
    t = fit.table
    a = fit.items["discrimination"].to_numpy()
    thr = fit.items[["threshold[0]", "threshold[1]"]].to_numpy()

    def probs(theta, item):  # (n, 3) category probabilities from the cumulative curves
        up = _sigmoid(a[item, None] * (theta[:, None] - thr[item]))
        ones, zeros = np.ones((len(theta), 1)), np.zeros((len(theta), 1))
        cum = np.hstack([ones, up, zeros])
        return cum[:, :-1] - cum[:, 1:]

    theta = fit.subjects["ability"].to_numpy()[t.subject_index]
    pk = probs(theta, t.item_index)
    k = np.arange(3)
    mean = pk @ k
    var = pk @ k**2 - mean**2
    y = t.response
    diag = item_diagnostics(fit)
    for i in range(t.n_items):
        m = t.item_index == i
        assert diag["outfit"].iloc[i] == pytest.approx(np.mean((y[m] - mean[m]) ** 2 / var[m]),
                                                       rel=1e-9)
        assert diag["infit"].iloc[i] == pytest.approx(((y[m] - mean[m]) ** 2).sum() / var[m].sum(),
                                                      rel=1e-9)
    # Information sum_k p_k'^2 / p_k by central differences in NumPy.
    grid = np.array([-1.0, 0.0, 0.8])
    h = 1e-5
    info = item_information(fit, grid)
    for j in range(t.n_items):
        item = np.full(len(grid), j)
        d = (probs(grid + h, item) - probs(grid - h, item)) / (2 * h)
        p = probs(grid, item)
        ok = (p > 1e-8).all(axis=1)  # NumPy's differences of curves underflow in the tails
        want = np.sum(d**2 / p, axis=1)
        np.testing.assert_allclose(info[t.items[j]][ok], want[ok], rtol=1e-6)


@pytest.fixture(scope="module")
def saturated_fit(twopl_fit):
    """The 2PL world with item 1 solved by every subject who answered it and item 3 by none."""
    t = twopl_fit.table
    y = t.response.copy()
    y[t.item_index == 1] = 1.0
    y[t.item_index == 3] = 0.0
    return fit_map(TwoPL(), ResponseTable.from_arrays(t.subject_index, t.item_index, y))


def test_saturated_items_are_flagged(saturated_fit):
    y = saturated_fit.table.response
    t = saturated_fit.table
    diag = item_diagnostics(saturated_fit)
    # the other items, by NumPy: solved by all (none) when their observed mean is 1 (0)
    mean = pd.Series(y).groupby(t.item_index).mean().to_numpy()
    assert diag["solved_by_all"].tolist() == list(mean == 1.0)
    assert diag["solved_by_none"].tolist() == list(mean == 0.0)
    assert diag["solved_by_all"].iloc[1] and diag["solved_by_none"].iloc[3]
    assert diag["solved_by_all"].sum() + diag["solved_by_none"].sum() < N_ITEMS


def test_multidimensional_model_gets_fit_statistics_but_no_curves():
    model = MultidimensionalTwoPL(dims=2)
    fit = fit_map(model, _world(5))
    diag = item_diagnostics(fit)
    assert {"infit", "outfit"} <= set(diag.columns)
    assert "max_information" not in diag.columns
    with pytest.raises(ValueError, match="one scalar ability per subject"):
        item_curves(fit)


def test_plot_writes_a_png(twopl_fit, tmp_path):
    path = plot_item_curves(twopl_fit, tmp_path / "curves.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="unknown item"):
        plot_item_curves(twopl_fit, tmp_path / "x.png", items=["nope"])
    with pytest.raises(ValueError, match="grid"):
        item_curves(twopl_fit, [0.0])


# ---------------------------------------------------------------------- the command line
@pytest.fixture(scope="module")
def lcb_subset(tmp_path_factory):
    """Real LiveCodeBench responses: the models that answered both code generation and code
    execution, on the first 15 items of each (derived columns as docs/guide/models.md says)."""
    frame = pd.read_csv(LCB / "responses.csv")
    both = frame.groupby("model")["benchmark"].nunique()
    keep = set(frame.loc[frame["model"].isin(both[both >= 2].index)
                         & (frame["benchmark"] == "livecodebench_execution"), "model"])
    frame = frame[frame["model"].isin(keep)
                  & frame["benchmark"].isin(["livecodebench_codegen",
                                             "livecodebench_execution"])]
    items = frame.groupby("benchmark")["item"].apply(lambda s: sorted(set(s))[:15])
    frame = frame[frame["item"].isin(set(items.sum()))].reset_index(drop=True)
    samples = np.where(frame["model"].str.contains("(n=1)", regex=False), 1, 10)
    passed = np.round(frame["score"] * samples)
    out = tmp_path_factory.mktemp("lcb")
    frame.to_csv(out / "scores.csv", index=False)
    graded = frame.assign(score=np.where(passed == 0, 0, np.where(passed == samples, 2, 1)))
    graded.to_csv(out / "graded.csv", index=False)
    frame.assign(score=(passed + 0.5) / (samples + 1)).to_csv(out / "beta.csv", index=False)
    return out


@pytest.mark.parametrize("model", ["1pl", "2pl", "3pl", "4pl", "mirt", "hierarchical",
                                   "graded", "beta"])
def test_every_item_model_fits_livecodebench_with_diagnostics(lcb_subset, tmp_path, model):
    data = {"graded": "graded.csv", "beta": "beta.csv"}.get(model, "scores.csv")
    out = tmp_path / model
    rc = main(["fit", str(lcb_subset / data), "--model", model, "--diagnostics",
               "--out", str(out)])
    assert rc == 0
    diag = pd.read_csv(out / "items_diagnostics.csv", index_col=0)
    items = pd.read_csv(out / "items.csv", index_col=0)
    assert list(diag.index) == list(items.index) and len(items) == 30
    assert np.isfinite(diag[["infit", "outfit"]].to_numpy()).all()
    assert (out / "item_curves.png").exists() == (model != "mirt")


def test_command_line_errors_for_items_models(lcb_subset, tmp_path, capsys):
    rc = main(["fit", str(lcb_subset / "scores.csv"), "--model", "graded",
               "--out", str(tmp_path / "g")])
    assert rc == 2
    assert "derive a category column" in capsys.readouterr().err
    rc = main(["fit", str(lcb_subset / "scores.csv"), "--model", "beta",
               "--out", str(tmp_path / "b")])
    assert rc == 2
    assert "exactly 0" in capsys.readouterr().err
    rc = main(["fit", str(lcb_subset / "scores.csv"), "--model", "beta", "--likelihood",
               "gaussian", "--out", str(tmp_path / "c")])
    assert rc == 2
    assert "brings its own likelihood" in capsys.readouterr().err
