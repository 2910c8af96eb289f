"""The measurement engine: response table, Rosetta and IRT models, MAP, Laplace, scoring.

Expected numbers come from SciPy/NumPy written here, closed forms, or simulated truth.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import least_squares, minimize
from scipy.stats import spearmanr

from platinum_jax.data import ResponseTable
from platinum_jax.inference import (
    bootstrap,
    cross_validate,
    fit_map,
    laplace,
    simulate,
)
from platinum_jax.models import (
    Bernoulli,
    Gaussian,
    MultidimensionalTwoPL,
    Rosetta,
    TwoPL,
    varimax,
)
from platinum_jax.models.rosetta import BenchmarkAnchor, ModelAnchor

GPT5 = "gpt-5-2025-08-07_high"
FRONTIERMATH = "FrontierMath-2025-02-28-Private"


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# ---------------------------------------------------------------------- response table
def test_aliases_read_score_and_item_level_layouts():
    bench = ResponseTable.from_frame(
        pd.DataFrame({"model": ["a", "b"], "benchmark": ["X", "X"], "score": [0.1, 0.2]})
    )
    assert list(bench.items) == ["X"] and bench.groups is None
    items = ResponseTable.from_frame(pd.DataFrame({
        "model": ["a", "a", "b"], "item": ["q1", "q2", "q1"], "benchmark": ["B", "B", "B"],
        "score": [1, 0, 1]}))
    assert list(items.items) == ["q1", "q2"] and list(items.groups) == ["B"]
    assert items.missing_share == pytest.approx(1 - 3 / 4)
    back = items.to_frame()
    assert set(back.columns) >= {"subject", "item", "response", "group"}


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (pd.DataFrame({"subject": ["a"], "item": ["x"]}), "lacks the column"),
        (pd.DataFrame({"subject": ["a", None], "item": ["x", "y"], "response": [1, 0]}),
         "have no subject"),
        (pd.DataFrame({"subject": ["a", "b"], "item": ["x", "y"], "response": [1, np.nan]}),
         "NaN or infinite"),
        (pd.DataFrame({"subject": ["a", "a"], "item": ["x", "x"], "response": [1, 0]}),
         "repeat a \\(subject, item\\) pair"),
        (pd.DataFrame({"subject": ["a"], "item": ["x"], "response": [0.5], "trials": [2.5]}),
         "whole numbers"),
        (pd.DataFrame({"subject": ["a", "b"], "item": ["x", "x"], "group": ["G", "H"],
                       "response": [1, 0]}), "more than one group"),
        (pd.DataFrame({"model": ["a"], "subject": ["a"], "item": ["x"], "response": [1]}),
         "both 'model' and 'subject'"),
    ],
)
def test_bad_tables_are_named(frame, message):
    with pytest.raises(ValueError, match=message):
        ResponseTable.from_frame(frame, name="t.csv")


def test_duplicates_mean_pools_successes_over_trials():
    df = pd.DataFrame({"subject": ["a", "a"], "item": ["x", "x"], "response": [0.5, 1.0],
                       "trials": [2, 8]})
    t = ResponseTable.from_frame(df, duplicates="mean")
    assert t.n_responses == 1
    assert t.response[0] == pytest.approx((0.5 * 2 + 1.0 * 8) / 10)
    assert t.trials[0] == 10


def test_percentages_and_disconnected_graphs_get_clear_errors(tmp_path):
    pct = ResponseTable.from_frame(pd.DataFrame({
        "subject": ["a", "b", "c"], "item": ["x", "x", "x"], "response": [40.0, 65.0, 80.0]}))
    with pytest.raises(ValueError, match="percentages; divide by 100"):
        fit_map(TwoPL(), pct)
    split = ResponseTable.from_frame(pd.DataFrame({
        "subject": ["a", "b"], "item": ["x", "y"], "response": [1.0, 0.0]}))
    with pytest.raises(ValueError, match="2 disconnected components"):
        fit_map(TwoPL(), split)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty.csv is empty"):
        ResponseTable.read(empty)


# ---------------------------------------------------------------------- Rosetta on real data
def _scipy_rosetta(table, anchor, l2=0.1, link=_sigmoid, start=None):
    """The paper's objective in NumPy (all C and D free, anchor slope fixed, plain L2), TRF."""
    m, b = table.n_subjects, table.n_items
    k = table.item_position(anchor)
    mi, bi, y = table.subject_index, table.item_index, table.response

    def resid(x):
        c, d = x[:m], x[m:m + b]
        a = np.insert(x[m + b:], k, 1.0)
        pen = np.sum(c**2) + np.sum(d**2) + np.sum(np.delete(a, k) ** 2)
        return np.concatenate([link(a[bi] * (c[mi] - d[bi])) - y,
                               [np.sqrt(l2 * pen / (m + 2 * b - 1))]])

    x0 = np.concatenate([np.zeros(m + b), np.ones(b - 1)]) if start is None else start
    res = least_squares(resid, x0, method="trf", xtol=1e-12, ftol=1e-12, gtol=1e-12)
    c, d = res.x[:m], res.x[m:m + b]
    return res.cost, c - d[k], d - d[k], np.insert(res.x[m + b:], k, 1.0)


@pytest.fixture(scope="module")
def epoch_table(scores_long_csv):
    return ResponseTable.read(scores_long_csv)


def test_rosetta_matches_scipy_on_real_data(epoch_table):
    fit = fit_map(Rosetta(), epoch_table)
    cost, c, d, alpha = _scipy_rosetta(epoch_table, "Winogrande")
    assert fit.converged
    assert fit.objective <= cost + 1e-7
    assert fit.objective == pytest.approx(cost, abs=1e-5)
    np.testing.assert_allclose(fit.subjects["capability"], c, atol=2e-3)
    np.testing.assert_allclose(fit.items["difficulty"], d, atol=2e-3)
    assert spearmanr(fit.subjects["capability"], c).statistic == pytest.approx(1.0)
    assert fit.subjects.loc[GPT5, "capability"] == pytest.approx(2.6, abs=0.1)
    assert fit.items.loc[FRONTIERMATH, "difficulty"] == pytest.approx(2.8, abs=0.1)
    assert fit.items.loc["Winogrande", "slope"] == 1.0


def test_rosetta_restarts_reach_the_well_converged_cost(epoch_table):
    fit = fit_map(Rosetta(), epoch_table, restarts=32)
    assert fit.objective <= 3.4448
    # SciPy started from our best point stays there: it is a minimum of the same objective.
    m, b = epoch_table.n_subjects, epoch_table.n_items
    k = epoch_table.item_position("Winogrande")
    shift = float(fit.globals.loc["shift", "value"])
    x0 = np.concatenate([fit.subjects["capability"] - shift, fit.items["difficulty"] - shift,
                         np.delete(fit.items["slope"].to_numpy(), k)])
    cost, *_ = _scipy_rosetta(epoch_table, "Winogrande", start=x0)
    assert cost == pytest.approx(fit.objective, abs=1e-6)
    assert m == 179 and b == 38


def test_model_anchor_fixes_two_capabilities(epoch_table):
    anchor = ModelAnchor((GPT5, "gpt-4o-2024-05-13"), (2.6, 1.5))
    fit = fit_map(Rosetta(anchor=anchor), epoch_table)
    assert fit.subjects.loc[GPT5, "capability"] == 2.6
    assert fit.subjects.loc["gpt-4o-2024-05-13", "capability"] == 1.5
    assert fit.globals.loc["shift", "value"] == 0.0
    with pytest.raises(KeyError, match="closest names"):
        fit_map(Rosetta(anchor=BenchmarkAnchor("Winogrand")), epoch_table)


def test_the_model_carries_its_link():
    """Regression: residuals and the objective use the fitted model's own link."""
    table, _ = simulate(Rosetta(link="clipped_linear", likelihood=Gaussian(noise=0.05),
                                anchor=BenchmarkAnchor("i0")), 30, 6, seed=1)
    fit = fit_map(Rosetta(link="clipped_linear", anchor=BenchmarkAnchor("i0")), table)
    subj, items = fit.subjects, fit.items
    c = subj["capability"].to_numpy()[table.subject_index]
    d = items["difficulty"].to_numpy()[table.item_index]
    a = items["slope"].to_numpy()[table.item_index]
    expected = np.clip(0.5 + 0.25 * a * (c - d), 0.0, 1.0)
    np.testing.assert_allclose(fit.residuals["predicted"], expected, atol=1e-12)
    shift = float(fit.globals.loc["shift", "value"])
    n = table.n_subjects + 2 * table.n_items - 1
    pen = (np.sum((subj["capability"] - shift) ** 2) + np.sum((items["difficulty"] - shift) ** 2)
           + np.sum(items["slope"].to_numpy()[1:] ** 2))
    half_ss = 0.5 * np.sum((expected - table.response) ** 2)
    assert fit.objective == pytest.approx(half_ss + 0.5 * 0.1 * pen / n, rel=1e-10)


# ---------------------------------------------------------------------- IRT
@pytest.fixture(scope="module")
def small_2pl():
    """One small 2PL world and its MAP fit for the tests below (one set of shapes, so the
    solver, bootstrap and cross-validation programs compile once for all of them)."""
    table, _ = simulate(TwoPL(), 60, 10, seed=5)
    return table, fit_map(TwoPL(), table)


def test_2pl_map_equals_scipy_minimum_of_the_same_objective(small_2pl):
    table, fit = small_2pl
    s, i, y = table.subject_index, table.item_index, table.response
    n_s, n_i = table.n_subjects, table.n_items

    def objective(x):
        th, b, loga = x[:n_s], x[n_s:n_s + n_i], x[n_s + n_i:]
        p = np.clip(_sigmoid(np.exp(loga)[i] * (th[s] - b[i])), 1e-15, 1 - 1e-15)
        nll = -np.sum(y * np.log(p) + (1 - y) * np.log(1 - p))
        return nll + 0.5 * np.sum(th**2) + 0.5 * np.sum(b**2) / 9 + 0.5 * np.sum(loga**2)

    ours = np.concatenate([fit.subjects["ability"], fit.items["difficulty"],
                           np.log(fit.items["discrimination"])])
    # The same objective up to the priors' constants ...
    const = n_s * 0.5 * np.log(2 * np.pi) + n_i * (np.log(3) + 0.5 * np.log(2 * np.pi)) \
        + n_i * 0.5 * np.log(2 * np.pi)
    assert fit.objective == pytest.approx(objective(ours) + const, abs=1e-9)
    # ... at least as low as SciPy's BFGS from zero, and a minimum SciPy cannot improve on.
    from_zero = minimize(objective, np.zeros(n_s + 2 * n_i), method="BFGS")
    assert objective(ours) <= from_zero.fun + 1e-8
    polished = minimize(objective, ours, method="BFGS", options={"gtol": 1e-10})
    assert polished.fun == pytest.approx(objective(ours), abs=1e-8)
    np.testing.assert_allclose(polished.x, ours, atol=1e-4)
    assert fit.converged and fit.diagnostics["iterations"] < 60


def test_2pl_recovers_a_simulated_truth():
    table, truth = simulate(TwoPL(), 400, 60, seed=3)
    fit = fit_map(TwoPL(), table)
    assert np.corrcoef(fit.subjects["ability"], truth.subjects[:, 0])[0, 1] > 0.9
    assert np.corrcoef(fit.items["difficulty"], truth.items[:, 0])[0, 1] > 0.9
    # Discriminations are log-normal: compare on the log scale they are drawn on.
    assert np.corrcoef(np.log(fit.items["discrimination"]), truth.items[:, 1])[0, 1] > 0.8


def test_laplace_bootstrap_and_cv_are_labelled(small_2pl):
    table, fit = small_2pl
    lap = laplace(fit, draws=500)
    assert {"ability_sd", "ability_lo", "ability_hi"} <= set(lap.subjects.columns)
    assert (lap.items["discrimination_lo"] > 0).all()  # natural scale, from log draws
    # the replicates, chunk and block of the bootstrap_replicates test below: one program
    boot = bootstrap(fit, replicates=7, chunk=7, seed=3)
    assert boot.diagnostics["replicates"] == 7 and boot.diagnostics["replicates_converged"] >= 6
    assert (boot.subjects["ability_sd"] > 0).all()
    # 4 folds padded to the bootstrap's chunk of 7: its compiled program refits them
    cv = cross_validate(TwoPL(likelihood=Bernoulli()), table, folds=4, chunk=7)
    assert list(cv.index) == [0, 1, 2, 3] and cv["n_test"].sum() == table.n_responses
    assert cv["converged"].all() and (cv["mse"] < 0.25).all()


def test_cv_takes_the_callers_fold_labels(small_2pl):
    table, _ = small_2pl
    model = TwoPL(likelihood=Bernoulli())
    n = table.n_responses
    # the random split of folds=4, seed=4, rebuilt with NumPy, given as labels: the same folds
    labels = np.random.default_rng(4).permutation(np.arange(n) % 4)
    by_count = cross_validate(model, table, folds=4, seed=4, chunk=7)
    by_label = cross_validate(model, table, folds=labels, chunk=7)
    pd.testing.assert_frame_equal(by_count, by_label)
    np.testing.assert_array_equal(by_label["n_test"], np.bincount(labels))
    with pytest.raises(ValueError, match="one integer fold label per response"):
        cross_validate(model, table, folds=labels[:-1])
    with pytest.raises(ValueError, match="every fold used"):
        cross_validate(model, table, folds=np.where(labels == 1, 2, labels))
    with pytest.raises(ValueError, match="chunk must be positive"):
        cross_validate(model, table, folds=4, chunk=0)
    with pytest.raises(TypeError, match=r"unknown solver option\(s\) \['steps'\]"):
        cross_validate(model, table, folds=4, steps=3)


def test_cv_refits_in_the_bootstraps_program_equal_one_solve_per_fold(small_2pl):
    """The folds refitted by the bootstrap's program (padded to its chunk, a lax.map of
    vmapped solves) are the MAP solver's refits of each fold's row weights, one at a time
    (the fixture's compiled solver). Vmapped and single solves round differently and each
    stops once its gradient is under gtol = 1e-9, so the two agree to about gtol over the
    smallest curvature of the objective: 1e-6 on probabilities leaves a wide margin."""
    import dataclasses

    import jax.numpy as jnp

    from platinum_jax.inference import Problem
    from platinum_jax.inference._map import map_solver

    table, _ = small_2pl
    model = TwoPL(likelihood=Bernoulli())
    labels = np.random.default_rng(4).permutation(np.arange(table.n_responses) % 4)
    cv = cross_validate(model, table, folds=labels, chunk=7)
    problem = Problem(model, table)
    data = problem.data()
    solve = map_solver(problem)
    oof = np.empty(table.n_responses)
    for k in range(4):
        w = jnp.asarray(labels != k, jnp.float64) * data.weight
        ref = solve(problem.start(), dataclasses.replace(data, weight=w))
        assert bool(ref.converged) and bool(cv.loc[k, "converged"])
        pred = np.asarray(problem.expected(ref.theta, data.subject_index, data.item_index))
        oof[labels == k] = pred[labels == k]
    np.testing.assert_allclose(cv.attrs["predictions"], oof, rtol=0, atol=1e-6)
    y = np.asarray(table.response)
    mse = [np.mean((oof[labels == k] - y[labels == k]) ** 2) for k in range(4)]
    np.testing.assert_allclose(cv["mse"], mse, rtol=1e-5)


def test_multidimensional_loadings_recovered_up_to_rotation():
    model = MultidimensionalTwoPL(dims=2)
    table, truth = simulate(model, 600, 24, seed=8)
    fit = fit_map(model, table)
    assert fit.converged
    est = fit.items[["loading[0]", "loading[1]"]].to_numpy()
    true = truth.items[:, 1:3]
    # Orthogonal Procrustes (NumPy SVD): the best rotation of the estimate onto the truth.
    u, _, vt = np.linalg.svd(est.T @ true)
    aligned = est @ (u @ vt)
    for k in range(2):
        assert np.corrcoef(aligned[:, k], true[:, k])[0, 1] > 0.8
    # Item 0 loads on the first ability only: the fixed entry that pins the rotation.
    assert fit.items["loading[1]"].iloc[0] == 0.0
    rot = varimax(est)
    np.testing.assert_allclose(rot @ rot.T, np.eye(2), atol=1e-10)

    def criterion(a):
        return np.sum(np.var(a**2, axis=0))

    assert criterion(est @ rot) >= criterion(est) - 1e-12


def test_bootstrap_replicates_refit_on_their_resample_in_any_chunking(small_2pl):
    import dataclasses

    import jax

    from platinum_jax.inference import bootstrap_replicates, resample_counts

    table, fit = small_2pl
    n, reps = table.n_responses, 7
    counts = resample_counts(3, reps, n)
    assert counts.shape == (reps, n) and (counts == np.round(counts)).all()
    np.testing.assert_array_equal(counts.sum(axis=1), n)
    # 7 replicates in blocks of 3 (the last padded) and chunks of 2, against one block of 7
    res = bootstrap_replicates(fit, reps, seed=3, chunk=2, block=3)
    one = bootstrap_replicates(fit, reps, seed=3, chunk=7, block=7)
    assert np.asarray(res.converged).all() and res.theta.items.shape[0] == reps
    # Each chunking stops on its own iterate once a step changes the cost by under ftol * |cost|
    # (about 1e-10 here), which pins the parameters to about 1e-7 (4e-8 seen with the suite's
    # XLA flags): well inside the gradient bound below, and far below what a wrong resample moves.
    np.testing.assert_allclose(res.theta.items, one.theta.items, atol=1e-6)
    problem = fit.problem
    data = problem.data()
    free = [np.asarray(f, bool) for f in (problem.free_S, problem.free_I, problem.free_G)]

    def grad_norm(k, w):
        theta = type(fit.theta)(*(np.asarray(t)[k] for t in res.theta))
        g = jax.grad(problem.objective)(theta, dataclasses.replace(data, weight=data.weight * w))
        return max(float(np.abs(np.asarray(gi)[f]).max(initial=0.0)) for gi, f in zip(g, free, strict=True))

    with pytest.raises(TypeError, match="batch_size is now chunk"):
        bootstrap(fit, replicates=4, batch_size=2)
    with pytest.raises(ValueError, match="chunk and block must be positive"):
        bootstrap_replicates(fit, 4, chunk=0)
    # replicate k is a stationary point of the objective weighted by its own counts, not another's
    for k in range(reps):
        assert grad_norm(k, counts[k]) < 1e-5
        assert grad_norm(k, counts[(k + 1) % reps]) > 1e-2


def test_a_second_fit_of_the_same_structure_compiles_nothing(no_compilation_cache):
    """Every program a MAP fit (with its prior-dominance check) and a NUTS fit (with its MAP
    start and the draws' push-forward) compile is kept: a second fit of the same table with
    another seed compiles no program at all (counted by JAX's own compile events, with the
    persistent cache off so that a load cannot hide one)."""
    import warnings

    import jax

    from platinum_jax.inference import nuts

    compiled = []
    counting = [False]

    def listen(event, duration, **_):
        if counting[0] and event == "/jax/core/compile/backend_compile_duration":
            compiled.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listen)
    model = TwoPL()
    table, _ = simulate(model, 30, 8, seed=21)

    def both(table, seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # short chains: the sampler says so
            fit_map(model, table, seed=seed)
            nuts(model, table, chains=1, warmup=20, samples=20, seed=seed, mass="diagonal",
                 max_tree_depth=4)

    both(table, 0)
    counting[0] = True
    both(table, 1)
    counting[0] = False
    assert compiled == [], f"{len(compiled)} program(s) compiled again"
