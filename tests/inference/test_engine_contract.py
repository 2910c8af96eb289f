"""Every registered model through every inference method, on a world simulated from it.

Adding a model adds one row to ``WORLDS``; the methods, their labelled outputs and the recovery
of the subjects' main parameter are then checked for it.
"""

from __future__ import annotations

import numpy as np
import pytest

from platinum_jax.inference import (
    bootstrap,
    cross_validate,
    fit_map,
    laplace,
    loo,
    nuts,
    simulate,
    svi,
)
from platinum_jax.models import (
    MODELS,
    BetaTwoPL,
    FourPL,
    Gaussian,
    GradedResponse,
    HierarchicalTwoPL,
    MultidimensionalTwoPL,
    OnePL,
    Rosetta,
    ThreePL,
    TwoPL,
)
from platinum_jax.models.rosetta import BenchmarkAnchor, RosettaBayes

# name -> (model, main subject parameter, subjects, items, minimum MAP correlation with truth)
# Each world's tests share one module fixture; the suite spreads the worlds over its workers.

WORLDS = {
    "rosetta": (Rosetta(likelihood=Gaussian(noise=0.05), anchor=BenchmarkAnchor("i00")),
                "capability", 60, 12, 0.9),
    # The Bayesian Rosetta model (a noise per benchmark, standardised sampling coordinates):
    # the model `stitch-bayes` samples, on a small world to keep the suite quick.
    "rosetta_bayes": (RosettaBayes(anchor=BenchmarkAnchor("i00")), "capability", 60, 12, 0.9),
    "1pl": (OnePL(), "ability", 120, 20, 0.85),
    "2pl": (TwoPL(), "ability", 120, 20, 0.8),
    "3pl": (ThreePL(), "ability", 120, 20, 0.7),
    # One guessing floor per benchmark (three of four items; twelve items, as the Bayesian
    # check draws): tests/models/test_group_guessing.py checks the floors' recovery.
    "3pl_group": (MODELS["3pl_group"](groups=3, item_groups=(0,) * 4 + (1,) * 4 + (2,) * 4),
                  "ability", 120, 12, 0.55),
    "4pl": (FourPL(), "ability", 120, 20, 0.7),
    "mirt": (MultidimensionalTwoPL(dims=2), "ability[0]", 150, 20, 0.7),
    "graded": (GradedResponse(categories=3), "ability", 120, 20, 0.8),
    "beta": (BetaTwoPL(), "ability", 120, 20, 0.85),
    # Simulated tables have no group column: the model carries the items' benchmarks (three
    # benchmarks of four items; the Bayesian check below also draws 12 items). Twelve items
    # drawn from the hyper-priors measure abilities loosely: the bar is the wiring's, and
    # tests/models/test_item_models.py checks the recovery of this model on a designed world.
    "hierarchical": (HierarchicalTwoPL(groups=3, item_groups=(0,) * 4 + (1,) * 4 + (2,) * 4),
                     "ability", 120, 12, 0.45),
}


# Models whose abilities are identified only up to sign (a reflection of one dimension).
SIGN_FREE = {"mirt"}


def _corr(name, a, b):
    c = np.corrcoef(a, b)[0, 1]
    return abs(c) if name in SIGN_FREE else c


def test_every_registered_model_has_a_world():
    assert set(WORLDS) == set(MODELS)


@pytest.fixture(scope="module", params=sorted(WORLDS))
def world(request):
    model, param, n_s, n_i, min_corr = WORLDS[request.param]
    table, truth = simulate(model, n_s, n_i, seed=11)
    base = fit_map(model, table)
    return request.param, model, param, table, truth, base, min_corr


def _labelled(frame, index, columns):
    assert list(frame.index) == list(index)
    assert set(columns) <= set(frame.columns)
    assert np.isfinite(frame[list(columns)].to_numpy(dtype=float)).all()


def test_map_recovers_the_truth(world):
    name, model, param, table, truth, base, min_corr = world
    assert base.converged, base.diagnostics
    _labelled(base.subjects, table.subjects, [param, "n_responses"])
    _labelled(base.items, table.items, [c for _, c in base.problem.item.parameter_columns()])
    corr = _corr(name, base.subjects[param], truth.subjects[:, 0])
    assert corr > min_corr, (name, corr)


def test_laplace_and_bootstrap_give_intervals(world):
    _, model, param, table, truth, base, _ = world
    lap = laplace(base, draws=300)
    _labelled(lap.subjects, table.subjects, [f"{param}_sd", f"{param}_lo", f"{param}_hi"])
    assert (lap.subjects[f"{param}_sd"] > 0).all()
    assert (lap.subjects[f"{param}_lo"] <= lap.subjects[f"{param}_hi"]).all()
    boot = bootstrap(base, replicates=8, chunk=8)
    assert boot.diagnostics["replicates_converged"] >= 6
    _labelled(boot.items, table.items, [f"{c}_sd" for _, c in base.problem.item.parameter_columns()])


def test_cross_validation_predicts_every_response(world):
    _, model, _, table, _, _, _ = world
    # three folds padded to the bootstrap's chunk of 8 above: one compiled refit program
    cv = cross_validate(model, table, folds=3, chunk=8)
    assert cv["n_test"].sum() == table.n_responses
    oof = cv.attrs["predictions"]
    assert oof.shape == (table.n_responses,) and np.isfinite(oof).all()
    assert np.isfinite(cv["log_lik"]).all()


def test_svi_and_nuts_give_labelled_posteriors(world):
    name, model, param, _, _, _, min_corr = world
    # A smaller world: these check the wiring and labels; calibration lives in benchmarks/.
    # (Sampling the world's own table instead saves this world's programs but not time: the
    # 2PL world's test took three times as long, NUTS on 120 x 20 responses running far
    # longer than the two compilations it saved.)
    # Trees of at most 31 leapfrog steps: on 40 x 12 responses most of these posteriors keep
    # NUTS at its default depth limit (1,023 steps a draw for the 3PL, 4PL, graded, mirt and
    # hierarchical models), which cost most of the row's time without changing what it checks.
    # A diagonal mass matrix: its warm-up compiles in about half the time of the default low
    # rank one (whose adaptation tests/inference/test_nuts_sampler.py and the Bayesian Rosetta
    # tests check); the labels and the wiring are the same.
    table, truth = simulate(model, 40, 12, seed=5)
    post = nuts(model, table, chains=1, warmup=100, samples=100, seed=1, max_tree_depth=5,
                mass="diagonal")
    _labelled(post.subjects, table.subjects, [param, f"{param}_sd", f"{param}_lo"])
    idata = post.inference_data
    site = param.split("[")[0]
    subject_dim = model.dim_names[0]  # "subject", or "model" for the Rosetta models
    assert list(idata.posterior[site].coords[subject_dim].values) == list(table.subjects)
    assert post.diagnostics["rhat_max"] == "unavailable with one chain"
    assert post.diagnostics["max_tree_depth"] == 5
    corr = _corr(name, post.subjects[param], truth.subjects[:, 0])
    # So few responses cannot always carry the big world's recovery (a 4PL's abilities from 12
    # items: the MAP itself correlates about 0.5 with the truth); the bar is the lower of that
    # and what the point fit reaches on the same table, less 0.15.
    point = _corr(name, fit_map(model, table).subjects[param], truth.subjects[:, 0])
    assert corr > min(min_corr, point) - 0.15, (name, corr, point)
    assert np.isfinite(loo(post).elpd_loo)
    var = svi(model, table, steps=200, draws=100, seed=1)
    _labelled(var.items, table.items, [f"{c}_sd" for _, c in post.problem.item.parameter_columns()])


def test_models_are_values_with_their_own_options():
    assert TwoPL() == TwoPL() and ThreePL().name == "3pl"
    assert Rosetta(link="clipped_linear").describe()["link"] == "clipped_linear"
    with pytest.raises(ValueError, match="unknown link"):
        Rosetta(link="probit")
