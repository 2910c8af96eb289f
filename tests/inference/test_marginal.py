"""Marginal estimation over abilities (EM over a quadrature grid, EAP abilities).

Expected numbers come from SciPy quadrature written here, or from a synthetic truth drawn here.

A compiled EM is specific to the model, the world's shape and the number of nodes, so tests
whose checks do not depend on the world share one: ``_shared_world`` (150 subjects, 12 items,
30% missing) for the comparisons of paths and against SciPy's optimiser on 21 nodes, and
``_recovery_world`` for the recovery checks and the command line on the default rule.
"""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd
import pytest
from scipy.integrate import quad
from scipy.special import expit
from scipy.stats import norm

from platinum_jax.data import ResponseTable
from platinum_jax.inference import Problem, fit, fit_map, marginal_log_likelihood
from platinum_jax.models import Gaussian, MultidimensionalTwoPL, OnePL, ThreePL, TwoPL

jax.config.update("jax_enable_x64", True)


def _world(n_s, n_i, seed, *, missing=0.0, guessing=None):
    """2PL (or 3PL with ``guessing``) responses from a truth drawn here; the abilities are
    standardised so that the sample has the scale the N(0, 1) prior identifies."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_s)
    theta = (theta - theta.mean()) / theta.std()
    b = rng.normal(size=n_i)
    a = np.exp(rng.normal(0.0, 0.3, n_i))
    c = np.zeros(n_i) if guessing is None else np.full(n_i, guessing)
    s, i = np.divmod(np.arange(n_s * n_i), n_i)
    keep = rng.random(len(s)) >= missing
    s, i = s[keep], i[keep]
    p = c[i] + (1 - c[i]) * expit(a[i] * (theta[s] - b[i]))
    y = (rng.random(len(s)) < p).astype(float)
    return ResponseTable.from_arrays(s, i, y), theta, b, a


def _shared_world():
    return _world(150, 12, seed=21, missing=0.3)


def _recovery_world(missing):
    return _world(800, 25, seed=7, missing=missing)


def _quad_loglik(table, prob):
    """sum_s log int prod_i p^y (1-p)^(1-y) phi(t) dt by adaptive quadrature."""
    total = 0.0
    for s in range(table.n_subjects):
        rows = table.subject_index == s
        ii, yy = table.item_index[rows], table.response[rows]

        def f(t, ii=ii, yy=yy):
            p = prob(t, ii)
            return np.prod(np.where(yy == 1, p, 1 - p)) * norm.pdf(t)

        total += np.log(quad(f, -12, 12, epsabs=0, epsrel=1e-12, limit=200)[0])
    return total


def test_marginal_log_likelihood_matches_scipy_quadrature():
    table, _, _, _ = _world(25, 7, seed=3, missing=0.3)
    rng = np.random.default_rng(0)
    b, log_a = rng.normal(size=7), rng.normal(0, 0.4, 7)
    items = np.stack([b, log_a], axis=1)
    ours = marginal_log_likelihood(Problem(TwoPL(), table), items, np.zeros(0), nodes=61)
    expected = _quad_loglik(table, lambda t, i: expit(np.exp(log_a[i]) * (t - b[i])))
    assert ours == pytest.approx(expected, rel=1e-9)


def test_marginal_log_likelihood_with_guessing_and_a_shared_slope():
    table, _, _, _ = _world(20, 6, seed=4, guessing=0.2)
    rng = np.random.default_rng(1)
    b, log_a, logit_c = rng.normal(size=6), rng.normal(0, 0.4, 6), rng.normal(-1.5, 0.5, 6)
    items = np.stack([b, log_a, logit_c], axis=1)
    ours = marginal_log_likelihood(Problem(ThreePL(), table), items, np.zeros(0), nodes=61)
    c = expit(logit_c)
    expected = _quad_loglik(table, lambda t, i: c[i] + (1 - c[i]) * expit(np.exp(log_a[i])
                                                                          * (t - b[i])))
    assert ours == pytest.approx(expected, rel=1e-9)
    # 1PL: one discrimination in the globals
    ours1 = marginal_log_likelihood(Problem(OnePL(), table), b[:, None], np.array([0.3]),
                                    nodes=61)
    expected1 = _quad_loglik(table, lambda t, i: expit(np.exp(0.3) * (t - b[i])))
    assert ours1 == pytest.approx(expected1, rel=1e-9)


def test_even_rule_resolves_subjects_with_many_items():
    """With 400 items per subject each subject's likelihood peaks about 0.1 prior SD wide: the
    default rule (61 nodes 0.2 SD apart) still integrates it to a few thousandths per subject,
    where 31 Gauss-Hermite nodes (0.56 SD apart at the centre) are off by whole units."""
    table, _, b, a = _world(12, 400, seed=21)
    items = np.stack([b, np.log(a)], axis=1)
    expected = _quad_loglik(table, lambda t, i: expit(a[i] * (t - b[i])))
    problem = Problem(TwoPL(), table)
    even = marginal_log_likelihood(problem, items, np.zeros(0))
    assert abs(even - expected) < 0.05  # 12 subjects
    finer = marginal_log_likelihood(problem, items, np.zeros(0), nodes=81)
    assert abs(finer - expected) < 0.002
    hermite = marginal_log_likelihood(problem, items, np.zeros(0), nodes=31,
                                      rule="gauss-hermite")
    assert abs(hermite - expected) > 1.0
    with pytest.raises(ValueError, match="rule"):
        marginal_log_likelihood(problem, items, np.zeros(0), rule="simpson")


@pytest.fixture(scope="module")
def many_items():
    """A world with 300 items per subject (240 answered on average) and its fit by the default
    rule: the table and the fit."""
    table, _, _, _ = _world(600, 300, seed=22, missing=0.2)
    return table, fit(TwoPL(), table, method="marginal")


def test_default_rule_keeps_the_scale_of_the_exact_marginal_fit(many_items):
    """A coarse rule does not only add noise: it shrinks the fitted scale. Against a fit on 201
    nodes (the integral, for these purposes), 300 items per subject: the default keeps the
    difficulties' scale and location to 1e-3; 31 Gauss-Hermite nodes shrink the scale by over
    10%."""
    table, default = many_items
    exact = fit(TwoPL(), table, method="marginal", nodes=201).items["difficulty"]
    for kwargs, ok in (({}, True), ({"nodes": 31, "rule": "gauss-hermite"}, False)):
        got = (default if not kwargs
               else fit(TwoPL(), table, method="marginal", **kwargs)).items["difficulty"]
        scale, _ = np.polyfit(got, exact, 1)
        shift = float(np.mean(exact - got))
        if ok:
            assert abs(scale - 1) < 1e-3 and abs(shift) < 1e-3
            np.testing.assert_allclose(got, exact, atol=3e-3)
        else:
            assert scale < 0.9


@pytest.mark.parametrize("missing", [0.0, 0.2])  # complete: the all-ones shortcut
def test_dense_and_row_e_steps_agree(missing):
    table, _, _, _ = _world(30, 8, seed=5, missing=missing)
    items = np.stack([np.linspace(-1, 1, 8), np.linspace(-0.3, 0.3, 8)], axis=1)
    problem = Problem(TwoPL(), table)
    dense = marginal_log_likelihood(problem, items, np.zeros(0), dense=True)
    rows = marginal_log_likelihood(problem, items, np.zeros(0), dense=False)
    assert dense == pytest.approx(rows, rel=1e-12)


@pytest.mark.parametrize("missing", [0.0, 0.3])
def test_2pl_recovery_and_eap(missing):
    table, theta, b, a = _recovery_world(missing)
    res = fit(TwoPL(), table, method="marginal")
    assert res.converged and res.method == "marginal"
    items = res.items
    assert np.corrcoef(items["difficulty"], b)[0, 1] > 0.97
    assert np.sqrt(np.mean((items["difficulty"] - b) ** 2)) < 0.2
    assert np.corrcoef(items["discrimination"], a)[0, 1] > 0.8
    assert np.sqrt(np.mean((np.log(items["discrimination"]) - np.log(a)) ** 2)) < 0.2
    subj = res.subjects
    assert np.corrcoef(subj["ability"], theta)[0, 1] > 0.85
    # EAP and posterior SD at the fitted items, by SciPy quadrature, for a few subjects
    bh, ah = items["difficulty"].to_numpy(), items["discrimination"].to_numpy()
    for s in (0, 11, 500):
        rows = table.subject_index == s
        ii, yy = table.item_index[rows], table.response[rows]

        def lik(t, ii=ii, yy=yy):
            p = expit(ah[ii] * (t - bh[ii]))
            return np.prod(np.where(yy == 1, p, 1 - p)) * norm.pdf(t)

        z = quad(lik, -10, 10, epsrel=1e-12)[0]
        m1 = quad(lambda t: t * lik(t), -10, 10, epsrel=1e-12)[0] / z
        m2 = quad(lambda t: t * t * lik(t), -10, 10, epsrel=1e-12)[0] / z
        assert subj["ability"].iloc[s] == pytest.approx(m1, abs=1e-6)
        assert subj["ability_sd"].iloc[s] == pytest.approx(np.sqrt(m2 - m1**2), abs=1e-6)


def test_eap_sd_of_a_subject_with_many_items(many_items):
    # about 240 items: a posterior far narrower than the Gauss-Hermite spacing gets its SD
    table, res = many_items
    bh = res.items["difficulty"].to_numpy()
    ah = res.items["discrimination"].to_numpy()
    rows = table.subject_index == 3
    ii, yy = table.item_index[rows], table.response[rows]

    def log_lik(t):
        p = expit(ah[ii] * (t - bh[ii]))
        return np.sum(np.where(yy == 1, np.log(p), np.log1p(-p))) + norm.logpdf(t)

    grid = np.linspace(-6, 6, 20001)
    lp = np.array([log_lik(t) for t in grid])
    w = np.exp(lp - lp.max())
    w /= w.sum()
    m1 = w @ grid
    sd = np.sqrt(w @ grid**2 - m1**2)
    assert sd < 0.2
    assert res.subjects["ability"].iloc[3] == pytest.approx(m1, abs=1e-4)
    assert res.subjects["ability_sd"].iloc[3] == pytest.approx(sd, rel=1e-3)


def test_marginal_beats_joint_map_on_discriminations_with_few_subjects():
    # the shared world (150 subjects, about 8 of its 12 items each) on its 21 nodes: the EM
    # compiled for the comparisons of paths below
    table, _, _, a = _shared_world()
    marg = fit(TwoPL(), table, method="marginal", nodes=21)
    joint = fit_map(TwoPL(), table)

    def rmse(f):
        return np.sqrt(np.mean((np.log(f.items["discrimination"]) - np.log(a)) ** 2))

    assert rmse(marg) < rmse(joint)
    # joint MAP shrinks abilities toward 0 and so inflates the slopes
    assert np.mean(np.log(joint.items["discrimination"])) > np.mean(np.log(a))


def _numpy_objective(table, nodes, model):
    """Minus the Gauss-Hermite marginal log-likelihood plus the models' item penalties
    (``b ~ N(0, 3^2)``, ``log a ~ N(0, 1)``), written here in NumPy: for the 2PL ``x`` holds
    ``(b_i, log a_i)`` per item, for the 1PL the ``b_i`` and then the shared ``log a``."""
    x_q, w_q = np.polynomial.hermite_e.hermegauss(nodes)
    w_q = w_q / w_q.sum()
    s, i, y = table.subject_index, table.item_index, table.response
    n_i = table.n_items

    def objective(x):
        if model == "2pl":
            b, log_a = x[:n_i], x[n_i:]
        else:
            b, log_a = x[:n_i], np.full(n_i, x[n_i])
        z = np.exp(log_a)[i, None] * (x_q[None, :] - b[i, None])
        # log p and log(1 - p) of p = expit(z), without overflow far out
        rows = -np.logaddexp(0.0, np.where(y[:, None] == 1, -z, z))
        per_subject = np.zeros((table.n_subjects, nodes))
        np.add.at(per_subject, s, rows)
        ll = np.sum(np.log(np.exp(per_subject) @ w_q))
        log_a_free = log_a if model == "2pl" else x[n_i:]
        return -ll + np.sum(b**2) / 18.0 + np.sum(log_a_free**2) / 2.0

    return objective


@pytest.mark.parametrize("model", ["1pl", "2pl"])
def test_accelerated_em_reaches_the_optimum_scipy_finds(model):
    # The extrapolated EM must land where a general-purpose optimiser of the same objective,
    # written independently in NumPy, lands.
    from scipy.optimize import minimize

    table, _, _, _ = _shared_world()
    n_i = table.n_items
    cls = {"1pl": OnePL, "2pl": TwoPL}[model]
    res = fit(cls(), table, method="marginal", nodes=21, rule="gauss-hermite",
              tol=1e-9)
    assert res.converged
    objective = _numpy_objective(table, 21, model)
    n_x = 2 * n_i if model == "2pl" else n_i + 1
    ref = minimize(objective, np.zeros(n_x), method="BFGS", options={"gtol": 1e-8})
    b = res.items["difficulty"].to_numpy()
    if model == "2pl":
        ours = np.concatenate([b, np.log(res.items["discrimination"].to_numpy())])
    else:
        ours = np.concatenate([b, [np.log(res.globals.loc["discrimination", "value"])]])
    np.testing.assert_allclose(ours, ref.x, atol=1e-4)
    assert objective(ours) <= ref.fun + 1e-7
    # the reported marginal log-likelihood is the NumPy one at the estimates
    penalty = np.sum(ours[:n_i] ** 2) / 18.0 + np.sum(ours[n_i:] ** 2) / 2.0
    assert res.diagnostics["marginal_log_lik"] == pytest.approx(-(objective(ours) - penalty),
                                                                rel=1e-10)


def _difficulty_se(table, b, a):
    """Standard errors of the difficulties at the truth, from each item's Fisher information
    ``a_i^2 sum_s p (1 - p)`` over its observed cells (abilities taken as known): the scale
    against which a numerical difference between two fits of the same objective is judged."""
    theta = np.zeros(table.n_subjects)  # the truth's abilities are not needed at this precision
    p = expit(a[table.item_index] * (theta[table.subject_index] - b[table.item_index]))
    info = np.bincount(table.item_index, a[table.item_index] ** 2 * p * (1 - p), table.n_items)
    return 1.0 / np.sqrt(info)


@pytest.mark.parametrize("model,missing", [("1pl", 0.3), ("2pl", 0.3), ("1pl", 0.0)])
def test_fast_logistic_path_equals_the_generic_path(model, missing, monkeypatch):
    # The 1PL/2PL on a dense matrix take the closed-form path (two-column E-step, closed-form
    # M-step); the row layout takes the generic one. Both maximise the same objective, so at
    # a tight tolerance they must land on the same estimates, far inside the estimates'
    # standard errors. At the default tolerance the dense path's expected counts come from a
    # float32 product: the same estimates again, to the stopping rule's precision. A complete
    # 1PL runs on one row per raw score (its sufficient statistic) instead of one per subject.
    from platinum_jax.inference import _marginal_layout

    table, _, b, a = _shared_world() if missing == 0.3 else _world(150, 12, 21, missing=missing)
    cls = {"1pl": OnePL, "2pl": TwoPL}[model]
    se = _difficulty_se(table, b, a)

    def same(x, y, atol):
        assert x.converged and y.converged
        for part in ("items", "globals", "subjects"):
            np.testing.assert_allclose(getattr(x, part).to_numpy(float),
                                       getattr(y, part).to_numpy(float), atol=atol, rtol=0)

    fast = fit(cls(), table, method="marginal", nodes=21, tol=1e-9)
    generic = fit(cls(), table, method="marginal", nodes=21, tol=1e-9, dense=False)
    grouped = model == "1pl" and missing == 0.0
    assert fast.diagnostics["e_step"] == ("scores" if grouped else "dense")
    assert generic.diagnostics["e_step"] == "rows"
    same(fast, generic, 1e-4 * se.min())  # four orders below the smallest standard error
    assert fast.diagnostics["marginal_log_lik"] == pytest.approx(
        generic.diagnostics["marginal_log_lik"], rel=1e-10)

    single = fit(cls(), table, method="marginal", nodes=21, tol=1e-6)
    monkeypatch.setattr(_marginal_layout, "_SINGLE_COUNTS", False)
    double = fit(cls(), table, method="marginal", nodes=21, tol=1e-6)
    same(single, double, 1e-3 * se.min())
    same(single, fast, 1e-3 * se.min())


def test_1pl_shared_discrimination_recovered():
    # A complete 1PL runs on one row per raw score: 12 items on 21 nodes is the program the
    # complete case of the comparison of paths below compiles, whatever the number of subjects.
    rng = np.random.default_rng(2)
    n_s, n_i, a = 1500, 12, 1.6
    theta, b = rng.normal(size=n_s), rng.normal(size=n_i)
    s, i = np.divmod(np.arange(n_s * n_i), n_i)
    y = (rng.random(len(s)) < expit(a * (theta[s] - b[i]))).astype(float)
    res = fit(OnePL(), ResponseTable.from_arrays(s, i, y), method="marginal", nodes=21)
    assert res.converged
    assert res.globals.loc["discrimination", "value"] == pytest.approx(a, rel=0.08)
    assert np.sqrt(np.mean((res.items["difficulty"] - b) ** 2)) < 0.1


def test_3pl_fit_is_finite_and_recovers_difficulty_order():
    table, _, b, _ = _world(1500, 20, seed=13, guessing=0.2)
    res = fit(ThreePL(), table, method="marginal")
    items = res.items
    assert np.all(np.isfinite(items.to_numpy(dtype=float)))
    assert np.corrcoef(items["difficulty"], b)[0, 1] > 0.9
    assert 0.05 < items["guessing"].mean() < 0.35


@pytest.mark.parametrize("model,match", [
    (MultidimensionalTwoPL(dims=2), "one scalar ability"),
    (TwoPL(likelihood=Gaussian(noise=1.0)), "binary and binomial"),
])
def test_models_outside_the_method_are_refused(model, match):
    table, _, _, _ = _world(20, 5, seed=1)
    with pytest.raises(ValueError, match=match):
        fit(model, table, method="marginal")


def test_bad_options_are_named():
    table, _, _, _ = _world(20, 5, seed=1)
    with pytest.raises(ValueError, match="nodes"):
        fit(TwoPL(), table, method="marginal", nodes=1)
    with pytest.raises(ValueError, match="max_iter"):
        fit(TwoPL(), table, method="marginal", max_iter=0)


def test_command_line_marginal(tmp_path):
    import json

    from platinum_jax.cli import main

    table, theta, b, _ = _recovery_world(0.3)
    path = tmp_path / "responses.csv"
    table.to_frame().to_csv(path, index=False)
    out = tmp_path / "irt"
    assert main(["fit", str(path), "--model", "2pl", "--method", "marginal", "--out",
                 str(out)]) == 0
    subjects = pd.read_csv(out / "subjects.csv", index_col=0)
    items = pd.read_csv(out / "items.csv", index_col=0)
    summary = json.loads((out / "fit.json").read_text())
    assert summary["method"] == "marginal" and summary["converged"]
    assert (subjects["ability_sd"] > 0).all()
    assert np.corrcoef(subjects["ability"], theta)[0, 1] > 0.8
    assert np.corrcoef(items["difficulty"], b)[0, 1] > 0.95


def test_the_closed_form_path_is_a_strategy_a_model_declares():
    # The EM driver does not know the package's 2PL: a model of the user's that declares the
    # logistic curve takes the same closed-form path (so lands on the very same numbers), and a
    # subclass of the 2PL that changes the curve does not inherit the declaration.
    from platinum_jax.models import LogisticCurve, MeasurementModel, Param, PriorSpec

    class MyTwoPL(MeasurementModel):
        likelihood: object = TwoPL().likelihood

        def subject_params(self):
            return {"ability": Param(prior=PriorSpec("Normal", 0.0, 1.0))}

        def item_params(self):
            return {"difficulty": Param(prior=PriorSpec("Normal", 0.0, 3.0)),
                    "discrimination": Param(prior=PriorSpec("Normal", 0.0, 1.0),
                                            transform=jax.numpy.exp)}

        def mean(self, subject, item, glob):
            return jax.nn.sigmoid(item["discrimination"]
                                  * (subject["ability"] - item["difficulty"]))

        def logistic_curve(self):
            return LogisticCurve("difficulty", "discrimination", shared=False)

    class Shifted(TwoPL):
        def mean(self, subject, item, glob):
            return 0.5 * super().mean(subject, item, glob)

    assert TwoPL().logistic_curve() is not None and Shifted().logistic_curve() is None
    table, _, _, _ = _shared_world()
    ours = fit(TwoPL(), table, method="marginal", nodes=21)
    theirs = fit(MyTwoPL(), table, method="marginal", nodes=21)
    assert ours.diagnostics["iterations"] == theirs.diagnostics["iterations"]
    np.testing.assert_array_equal(ours.theta.items, theirs.theta.items)


@pytest.mark.parametrize("options", [{}, {"guessing_loc": float(np.log(1 / 3)),
                                          "guessing_scale": 0.5}],
                         ids=["default-prior", "four-option-prior"])
def test_3pl_em_reaches_the_penalised_optimum_scipy_finds(options):
    # The 3PL's floor prior is read from the model's own declaration (its default, or the
    # user's centred on 1/4), and a NumPy objective with that prior is minimised by SciPy.
    from scipy.optimize import minimize

    model = ThreePL(**options)
    prior = model.item_params()["guessing"].prior
    loc, scale = float(prior.loc), float(prior.scale)
    table, _, _, _ = _world(60, 6, seed=17, guessing=0.25)
    n_i = table.n_items
    x_q, w_q = np.polynomial.hermite_e.hermegauss(21)
    w_q = w_q / w_q.sum()
    s, i, y = table.subject_index, table.item_index, table.response

    def objective(x):
        b, log_a, u = x[:n_i], x[n_i:2 * n_i], x[2 * n_i:]
        z = np.exp(log_a)[i, None] * (x_q[None, :] - b[i, None])
        # log p and log(1 - p) of p = c + (1 - c) expit(z), without overflow far out:
        # 1 - p = (1 - c) expit(-z)
        log_c, log_1c = -np.logaddexp(0.0, -u)[i, None], -np.logaddexp(0.0, u)[i, None]
        log_q = log_1c - np.logaddexp(0.0, z)
        rows = np.where(y[:, None] == 1, np.logaddexp(log_c, log_1c - np.logaddexp(0.0, -z)),
                        log_q)
        per_subject = np.zeros((table.n_subjects, len(x_q)))
        np.add.at(per_subject, s, rows)
        ll = np.sum(np.log(np.exp(per_subject) @ w_q))
        return (-ll + np.sum(b**2) / 18.0 + np.sum(log_a**2) / 2.0
                + np.sum((u - loc) ** 2) / (2.0 * scale**2))

    res = fit(model, table, method="marginal", nodes=21, rule="gauss-hermite", tol=1e-9)
    assert res.converged
    ref = minimize(objective, np.concatenate([np.zeros(2 * n_i), np.full(n_i, loc)]),
                   method="BFGS", options={"gtol": 1e-7})
    it = res.items
    ours = np.concatenate([it["difficulty"], np.log(it["discrimination"]),
                           np.log(it["guessing"] / (1 - it["guessing"]))])
    np.testing.assert_allclose(ours, ref.x, atol=2e-4)
    assert objective(ours) <= ref.fun + 1e-7
