"""The item-level family: recovery of known truths (asymptotes, graded thresholds, benchmark
means and spreads), the beta variant, and the input errors each model names.

Every world here is drawn with NumPy in the test from parameters the test chose, so each
expected number is the test's own truth, not the package's output.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from platinum_jax.data import ResponseTable
from platinum_jax.inference import Problem, fit_map
from platinum_jax.models import (
    Beta,
    BetaTwoPL,
    Categorical,
    Fixed,
    FourPL,
    GradedResponse,
    HierarchicalTwoPL,
    Identification,
    OnePL,
    ThreePL,
    make_model,
)
from platinum_jax.models._graded import ordered_thresholds


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _table(y, groups=None, trials=None):
    n_s, n_i = y.shape
    s, i = np.meshgrid(np.arange(n_s), np.arange(n_i), indexing="ij")
    frame = pd.DataFrame({"subject": [f"s{k:03d}" for k in s.ravel()],
                          "item": [f"i{k:03d}" for k in i.ravel()], "response": y.ravel()})
    if groups is not None:
        frame["group"] = [f"g{k}" for k in np.asarray(groups)[i.ravel()]]
    if trials is not None:
        frame["trials"] = trials
    return ResponseTable.from_frame(frame)


def _affine(estimate, truth):
    """``truth ~ alpha + kappa * estimate`` by least squares (NumPy), fitted on item locations
    (each pinned by many responses): joint MAP sets the ability scale by prior balance, so
    scale-dependent parameters are compared after this one linear change of scale."""
    kappa, alpha = np.polyfit(estimate, truth, 1)
    return alpha, kappa


# ---------------------------------------------------------------------- 1PL to 4PL
def test_1pl_recovers_difficulties_and_the_shared_discrimination_ratio():
    rng = np.random.default_rng(1)
    theta, b = rng.normal(size=200), np.linspace(-2, 2, 12)
    y = (rng.random((200, 12)) < _sigmoid(1.5 * (theta[:, None] - b))).astype(float)
    fit = fit_map(OnePL(), _table(y))
    assert fit.converged
    alpha, kappa = _affine(fit.items["difficulty"].to_numpy(), b)
    assert np.corrcoef(fit.subjects["ability"], theta)[0, 1] > 0.75  # 12 items per subject
    # a (theta - b) is invariant: the true slope is the fitted one divided by kappa (within
    # joint MAP's known discrimination bias when each subject answers only a dozen items).
    assert fit.globals.loc["discrimination", "value"] / kappa == pytest.approx(1.5, rel=0.25)
    np.testing.assert_allclose(alpha + kappa * fit.items["difficulty"], b, atol=0.25)


@pytest.mark.parametrize("model", [ThreePL(), FourPL()], ids=["3pl", "4pl"])
def test_asymptotes_are_recovered_on_a_known_ability_scale(model):
    """Item calibration with the abilities held at their true values (the fixed-entry
    identification): the asymptotes, slopes and difficulties come back. Joint MAP with free
    abilities shrinks the ability scale and pulls the asymptotes toward their priors (see
    docs/guide/models.md for the measured figures); this test isolates the model itself."""
    rng = np.random.default_rng(2)
    n_s = 1000
    theta = rng.normal(size=n_s)
    # Hard items show the floor (most subjects sit below them), easy items the ceiling.
    b = np.concatenate([np.linspace(-2.2, -0.8, 5), np.linspace(0.8, 2.2, 5)])
    hard, easy = b > 0, b < 0
    a = np.full(b.size, 2.0)
    c = np.full(b.size, 0.25)  # e.g. four-option multiple choice
    d = np.full(b.size, 0.8 if isinstance(model, FourPL) else 1.0)  # 20% label noise
    p = c + (d - c) * _sigmoid(a * (theta[:, None] - b))
    y = (rng.random(p.shape) < p).astype(float)
    table = _table(y)
    known = Identification(subject={"ability": Fixed(np.ones(n_s, bool), theta)},
                           description="abilities at their true values")
    fit = fit_map(Problem(model, table, identification=known), table)
    assert fit.converged
    np.testing.assert_array_equal(fit.subjects["ability"], theta)
    # Pooled over the items that expose each asymptote (one item's alone is weakly pinned).
    assert fit.items["guessing"][hard].mean() == pytest.approx(0.25, abs=0.05)
    if isinstance(model, FourPL):
        assert fit.items["upper"][easy].mean() == pytest.approx(0.8, abs=0.05)
    assert np.corrcoef(fit.items["difficulty"], b)[0, 1] > 0.97
    assert np.median(fit.items["discrimination"]) == pytest.approx(2.0, rel=0.25)


# ---------------------------------------------------------------------- graded
def _graded_world(rng, n_s, thresholds, a):
    theta = rng.normal(size=n_s)
    above = _sigmoid(a[None, :, None] * (theta[:, None, None] - thresholds[None]))  # P(Y >= k)
    u = rng.random((n_s, len(a)))[..., None]
    return theta, (u < above).sum(axis=-1).astype(float)  # cumulative curves are nested


@pytest.mark.parametrize("cls", [ThreePL, FourPL], ids=["3pl", "4pl"])
def test_asymptote_priors_are_options_recorded_and_read_back(cls, tmp_path):
    """The floor's (and the 4PL's ceiling's) prior is a model option: the declared prior and
    the EM's starting point follow it, ``fit.json`` records it, ``load_fit`` (what ``weights``
    and ``score`` call) rebuilds the model with it, and a bad value is named."""
    from scipy.stats import norm

    from platinum_jax.efficient import load_fit
    from platinum_jax.inference import fit as fit_any

    # the default floor prior keeps less than 1% of its mass above 0.5 (a two-option floor)
    default = cls().item_params()["guessing"]
    assert norm.sf(0.0, float(default.prior.loc), float(default.prior.scale)) < 0.01
    chance = float(np.log(0.25 / 0.75))  # logit of four-option chance
    options = {"guessing_loc": chance, "guessing_scale": 0.5}
    if cls is FourPL:
        options |= {"upper_loc": 4.0, "upper_scale": 0.8}
    model = make_model(cls.name, **options)
    decl = model.item_params()
    for name in ("guessing", "upper") if cls is FourPL else ("guessing",):
        loc, scale = options[f"{name}_loc"], options[f"{name}_scale"]
        assert (float(decl[name].prior.loc), float(decl[name].prior.scale)) == (loc, scale)
        assert decl[name].init == loc
        assert model.describe()[f"{name}_loc"] == loc
    rng = np.random.default_rng(5)
    y = (rng.random((60, 6)) < _sigmoid(rng.normal(size=(60, 1)) - rng.normal(size=6))
         ).astype(float)
    # the shape, nodes and precision of the four-option 3PL's fit in
    # tests/inference/test_marginal.py: one compiled EM serves both
    res = fit_any(model, _table(y), method="marginal", nodes=21, tol=1e-9)
    out = tmp_path / "fit"
    out.mkdir()
    for name, text in res.files().items():
        (out / name).write_text(text)
    assert load_fit(out).model == model
    with pytest.raises(ValueError, match="guessing_scale must be a finite number > 0"):
        cls(guessing_scale=0.0)
    with pytest.raises(ValueError, match="guessing_loc must be a finite number"):
        cls(guessing_loc=float("nan"))
    if cls is FourPL:
        with pytest.raises(ValueError, match="upper_scale"):
            cls(upper_scale=-1.0)


def test_graded_thresholds_are_recovered_and_stay_ordered():
    rng = np.random.default_rng(3)
    n_i = 20
    first, steps = rng.uniform(-2.0, -0.5, n_i), rng.uniform(0.6, 1.4, (n_i, 2))
    thresholds = np.cumsum(np.column_stack([first, steps]), axis=1)
    a = rng.uniform(0.8, 1.8, n_i)
    theta, y = _graded_world(rng, 200, thresholds, a)
    model = GradedResponse(categories=4)
    fit = fit_map(model, _table(y))
    assert fit.converged
    cols = ["threshold[0]", "threshold[1]", "threshold[2]"]
    est = fit.items[cols].to_numpy()
    assert (np.diff(est, axis=1) > 0).all()
    alpha, kappa = _affine(est.ravel(), thresholds.ravel())
    assert np.corrcoef(fit.subjects["ability"], theta)[0, 1] > 0.9
    aligned = alpha + kappa * est
    assert np.corrcoef(aligned.ravel(), thresholds.ravel())[0, 1] > 0.97
    assert np.abs(aligned - thresholds).mean() < 0.2
    ratio = fit.items["discrimination"].to_numpy() / kappa / a
    assert np.median(ratio) == pytest.approx(1.0, abs=0.2)
    # Predictions are expected categories: sum_k k P(Y = k), within 0..K-1.
    pred = fit.predict()
    assert pred.shape == (y.size,) and (pred >= 0).all() and (pred <= 3).all()
    assert np.corrcoef(pred, y.ravel())[0, 1] > 0.5


def test_graded_category_probabilities_by_numpy():
    model = GradedResponse(categories=4)
    b, a, theta = np.array([-1.0, 0.5, 3.0]), 1.7, 0.2
    logp = np.asarray(model.mean({"ability": theta}, {"discrimination": a, "threshold": b}, {}))
    upper = np.concatenate([[1.0], _sigmoid(a * (theta - b)), [0.0]])
    np.testing.assert_allclose(np.exp(logp), upper[:-1] - upper[1:], rtol=1e-12)
    # Far in the tail the top category keeps an exact log-probability (no underflow to 0).
    far = np.asarray(model.mean({"ability": -40.0}, {"discrimination": a, "threshold": b}, {}))
    assert far[3] == pytest.approx(np.log(_sigmoid(a * (-40.0 - 3.0))), rel=1e-10)


def test_ordered_thresholds_map_by_numpy():
    raw = np.array([[0.3, -1.0, 2.0]])
    steps = np.log1p(np.exp(raw[0, 1:]))
    np.testing.assert_allclose(np.asarray(ordered_thresholds(raw))[0],
                               [0.3, 0.3 + steps[0], 0.3 + steps[0] + steps[1]], rtol=1e-12)


def test_graded_categories_get_clear_errors():
    bad = ResponseTable.from_frame(pd.DataFrame({"subject": ["a", "b", "a", "b"],
                                                 "item": ["x", "x", "y", "y"],
                                                 "response": [0, 1.5, 2, 1]}))
    with pytest.raises(ValueError, match=r"not a category 0..2.*rows \[1\]"):
        fit_map(GradedResponse(categories=3), bad)
    too_high = ResponseTable.from_frame(pd.DataFrame({"subject": ["a", "b"], "item": ["x", "x"],
                                                      "response": [0, 3]}))
    with pytest.raises(ValueError, match="not a category 0..2"):
        fit_map(GradedResponse(categories=3), too_high)
    with pytest.raises(ValueError, match="needs Categorical"):
        GradedResponse(categories=3, likelihood=Categorical(4))
    assert make_model("graded", categories=5).likelihood == Categorical(5)


def test_categorical_moments_by_numpy():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    mean, var = Categorical(4).moments(np.log(p), None, {})
    k = np.arange(4)
    assert float(mean) == pytest.approx(np.sum(k * p))
    assert float(var) == pytest.approx(np.sum(k**2 * p) - np.sum(k * p) ** 2)


# ---------------------------------------------------------------------- beta
def test_beta_2pl_recovers_items_and_precision():
    rng = np.random.default_rng(4)
    n_s, n_i, phi = 200, 10, 30.0
    theta, b = rng.normal(size=n_s), np.linspace(-1.5, 1.5, n_i)
    a = rng.uniform(0.7, 1.5, n_i)
    mu = _sigmoid(a * (theta[:, None] - b))
    y = rng.beta(mu * phi, (1 - mu) * phi)
    fit = fit_map(BetaTwoPL(), _table(y))
    assert fit.converged
    assert np.corrcoef(fit.subjects["ability"], theta)[0, 1] > 0.97
    assert np.corrcoef(fit.items["difficulty"], b)[0, 1] > 0.97
    # The precision is scale-free: it is recovered as it is.
    assert fit.globals.loc["log_precision", "value"] == pytest.approx(phi, rel=0.15)


def test_beta_names_the_rows_at_zero_or_one():
    frame = pd.DataFrame({"subject": ["a", "b", "c", "a"], "item": ["x", "x", "x", "y"],
                          "response": [0.2, 0.0, 1.0, 0.5]})
    with pytest.raises(ValueError, match=r"1 response\(s\) are exactly 0 and 1 exactly 1 "
                       r"\(rows \[1, 2\]\).*\(k \+ 0.5\) / \(n \+ 1\)"):
        fit_map(BetaTwoPL(), ResponseTable.from_frame(frame))
    with pytest.raises(ValueError, match="strictly inside"):
        Beta().check(np.array([0.5, 1.0]), None, "t")


# ---------------------------------------------------------------------- hierarchical
def _hierarchical_world(seed, n_s=150, per=12):
    rng = np.random.default_rng(seed)
    beta, gamma = np.array([-1.0, 0.0, 1.5]), np.array([0.0, 0.3, -0.2])
    sd_b, sd_a = 0.8, 0.3
    groups = np.repeat(np.arange(3), per)
    b = beta[groups] + sd_b * rng.normal(size=groups.size)
    a = np.exp(gamma[groups] + sd_a * rng.normal(size=groups.size))
    theta = rng.normal(size=n_s)
    y = (rng.random((n_s, groups.size)) < _sigmoid(a * (theta[:, None] - b))).astype(float)
    return dict(theta=theta, beta=beta, gamma=gamma, b=b, a=a, groups=groups, y=y)


def test_hierarchical_map_recovers_benchmark_means_and_difficulty_spread():
    w = _hierarchical_world(0)
    table = _table(w["y"], groups=w["groups"])
    model = HierarchicalTwoPL.from_table(table)
    fit = fit_map(model, table)
    assert fit.converged
    items = model.item_table(fit)
    alpha, kappa = _affine(items["difficulty"].to_numpy(), w["b"])
    bench = model.benchmark_table(fit)
    assert list(bench.index) == ["g0", "g1", "g2"]
    np.testing.assert_allclose(alpha + kappa * bench["difficulty"], w["beta"], atol=0.35)
    # The realised spread of the drawn difficulties around their benchmark's (NumPy).
    realised = np.std(w["b"] - w["beta"][w["groups"]])
    spread = kappa * fit.globals.loc["difficulty_spread", "value"]
    assert spread == pytest.approx(realised, rel=0.2)
    assert np.corrcoef(items["difficulty"], w["b"])[0, 1] > 0.95
    assert (items["benchmark"].to_numpy() == np.array(["g0", "g1", "g2"])[w["groups"]]).all()


def test_hierarchical_item_and_benchmark_rows_in_one_fit():
    """Benchmark-level scores enter as items of their own benchmark (binomial with trials)."""
    w = _hierarchical_world(1, n_s=100, per=8)
    table = _table(w["y"], groups=w["groups"])
    frame = table.to_frame()
    frame["trials"] = 1.0
    # Each subject's benchmark score over 40 further questions of that benchmark (NumPy).
    rng = np.random.default_rng(9)
    rows = []
    for g in range(3):
        b = w["beta"][g] + 0.8 * rng.normal(size=40)
        p = _sigmoid(np.exp(w["gamma"][g]) * (w["theta"][:, None] - b)).mean(axis=1)
        k = rng.binomial(40, p)
        rows.append(pd.DataFrame({"subject": table.subjects, "item": f"g{g}/overall",
                                  "response": k / 40, "group": f"g{g}", "trials": 40.0}))
    both = ResponseTable.from_frame(pd.concat([frame, *rows], ignore_index=True))
    model = HierarchicalTwoPL.from_table(both, likelihood=make_model("2pl",
                                                                   likelihood="binomial").likelihood)
    fit = fit_map(model, both)
    assert fit.converged and both.n_items == table.n_items + 3
    items = model.item_table(fit).loc[table.items]
    alpha, kappa = _affine(items["difficulty"].to_numpy(), w["b"])
    np.testing.assert_allclose(alpha + kappa * model.benchmark_table(fit)["difficulty"],
                               w["beta"], atol=0.4)


def test_hierarchical_needs_groups():
    table = _table(np.random.default_rng(0).integers(0, 2, (10, 4)).astype(float))
    with pytest.raises(ValueError, match="group column"):
        HierarchicalTwoPL.from_table(table)
    with pytest.raises(ValueError, match="no group column and the model no item_groups"):
        fit_map(HierarchicalTwoPL(groups=2), table)
    w = _hierarchical_world(2, n_s=20, per=3)
    grouped = _table(w["y"], groups=w["groups"])
    with pytest.raises(ValueError, match="has 3 groups .* built for 2"):
        fit_map(HierarchicalTwoPL(groups=2), grouped)
