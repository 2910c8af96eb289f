"""One Bayesian Rosetta model: ``platinum-jax fit --model rosetta --method nuts`` (and
``--model rosetta_bayes``) samples the model ``platinum-jax stitch-bayes`` samples.

Two posteriors are the same when their unnormalised log densities differ by a constant; the
density test evaluates both commands' models at points drawn from the prior, and the sampled
test holds their posterior means against each other within Monte Carlo error."""

from __future__ import annotations

import argparse
import warnings

import jax
import numpy as np
import pytest
from numpyro import handlers
from numpyro.infer.util import log_density

from platinum_jax.cli.fit import build_model, register, sampled_model_note
from platinum_jax.data import ResponseTable
from platinum_jax.inference import Problem, numpyro_model
from platinum_jax.models.rosetta_bayes import STDERR_FLOOR, RosettaBayes, floor_se
from platinum_jax.stitching import BenchmarkAnchor, ScoreTable
from platinum_jax.stitching.bayes import fit_stitching_bayes, prepare_data, stitching_problem

jax.config.update("jax_enable_x64", True)


def _fit_args(tmp_path, model="rosetta", likelihood=None, method="nuts"):
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    argv = ["fit", "x.csv", "--model", model, "--method", method, "--out", str(tmp_path),
            "--anchor-benchmark", "b0"]
    return parser.parse_args(argv + ([] if likelihood is None else ["--likelihood", likelihood]))


def _fit_problem(frame, args):
    """The model and rows `platinum-jax fit` builds from the same scores."""
    counts = args.likelihood in ("binomial", "beta_binomial")
    long = frame.rename(columns={"stderr": "se", "n_items": "trials"})
    if not counts:
        long = long.drop(columns="trials")
    table = ResponseTable.from_frame(long)
    model = build_model(args, table)
    table, n_floored = floor_se(table)
    return Problem(model, table), n_floored


@pytest.mark.parametrize("likelihood", [None, "beta_binomial"])
@pytest.mark.parametrize("model", ["rosetta", "rosetta_bayes"])
def test_fit_and_stitch_bayes_share_one_posterior_density(tmp_path, model, likelihood,
                                                          sparse_scores):
    frame = sparse_scores()
    args = _fit_args(tmp_path, model, likelihood)
    ours, n_floored = _fit_problem(frame, args)
    assert isinstance(ours.model, RosettaBayes)
    assert n_floored == int((frame["stderr"] < STDERR_FLOOR).sum()) > 0
    table = ScoreTable.from_frame(frame)
    lik = likelihood or "gaussian"
    data, _ = prepare_data(table, lik)
    theirs, _ = stitching_problem(table, BenchmarkAnchor("b0"), likelihood=lik, data=data)
    assert list(ours.table.subjects) == list(theirs.table.subjects)
    assert list(ours.table.items) == list(theirs.table.items)
    m_ours, m_theirs = numpyro_model(ours), numpyro_model(theirs, plain_names=True)
    d_ours, d_theirs = ours.data(), theirs.data()

    # Four points from the prior and both log densities at each, as three compiled programs
    # (run op by op, NumPyro's handlers compile every operation on its own).
    def prior_point(key):
        trace = handlers.trace(handlers.seed(m_theirs, key)).get_trace(d_theirs, observed=False)
        return {n: s["value"] for n, s in trace.items() if s["type"] == "sample" and n != "y"}

    draw = jax.jit(prior_point)
    points = jax.tree.map(lambda *v: jax.numpy.stack(v), *[draw(jax.random.PRNGKey(k))
                                                          for k in range(4)])
    # the site names of `fit`'s model (prefixed by the model's name), without running it
    names = []
    jax.eval_shape(lambda: names.extend(
        handlers.trace(handlers.seed(m_ours, 0)).get_trace(d_ours).keys()))
    renamed = {site: points[site.split(".", 1)[-1]] for site in names
               if site.split(".", 1)[-1] in points}
    assert set(s.split(".", 1)[-1] for s in renamed) == set(points)

    def log_densities(model, rows, at):
        return jax.jit(jax.vmap(lambda p: log_density(model, (rows,), {}, p)[0]))(at)

    gaps = log_densities(m_ours, d_ours, renamed) - log_densities(m_theirs, d_theirs, points)
    # One model: the same density at every point (rows are the same scores, so the constant
    # is 0; a count likelihood's k-out-of-n pmf is the same on both sides).
    np.testing.assert_allclose(gaps, 0.0, atol=1e-8)


def test_fit_says_it_samples_the_bayesian_rosetta_model(tmp_path):
    for method in ("svi", "nuts"):
        assert "stitch-bayes" in sampled_model_note("rosetta", method)
        assert "rosetta_bayes" in sampled_model_note("rosetta", method)
    assert sampled_model_note("rosetta", "laplace") is None
    assert sampled_model_note("2pl", "nuts") is None


def test_rosetta_bayes_is_only_sampled(tmp_path, sparse_scores):
    from platinum_jax.cli.fit import _check

    with pytest.raises(ValueError, match="--model rosetta_bayes is sampled"):
        _check(_fit_args(tmp_path, "rosetta_bayes", method="laplace"))
    args = _fit_args(tmp_path, "rosetta")
    args.link = "clipped_linear"
    with pytest.raises(ValueError, match="sigmoid link"):
        build_model(args, ResponseTable.from_frame(sparse_scores().drop(columns=["n_items", "stderr"])))


@pytest.mark.slow
def test_the_two_commands_posteriors_agree(tmp_path, sparse_scores):
    """Short runs of both paths: posterior means of C_m within 5 Monte Carlo standard errors."""
    from platinum_jax.inference import fit

    frame = sparse_scores(seed=1, n_models=8, n_bench=3)
    table = ScoreTable.from_frame(frame.drop(columns="n_items"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = fit_stitching_bayes(table, BenchmarkAnchor("b0"), chains=1, warmup=200,
                                     samples=400, seed=3)
        problem, _ = _fit_problem(frame, _fit_args(tmp_path))
        ours = fit(problem.model, problem.table, method="nuts", chains=1, warmup=200,
                   samples=400, seed=4)
    c_theirs = theirs.capabilities
    mean_ours = ours.subjects["capability"].reindex(c_theirs.index)
    # Monte Carlo standard error of each mean: sd / sqrt(ESS), both runs' added in variance.
    ess = np.minimum(c_theirs["ess_bulk"].to_numpy(), 400.0)
    se = np.sqrt(2.0) * c_theirs["sd"].to_numpy() / np.sqrt(np.maximum(ess, 50.0))
    gap = np.abs(mean_ours.to_numpy() - c_theirs["mean"].to_numpy())
    assert np.all(gap < 5 * se), (gap / se)


@pytest.mark.parametrize("old, home, new", [
    ("Priors", "platinum_jax.models.rosetta_bayes", "Priors"),
    ("SamplingWarning", "platinum_jax.inference", "SamplingWarning"),
    ("check_diagnostics", "platinum_jax.inference", "check_diagnostics"),
    ("posterior_summary", "platinum_jax.inference", "posterior_summary"),
    ("use_cpu_devices_for_chains", "platinum_jax.inference", "use_cpu_devices_for_chains"),
    ("posterior_optimal_weights", "platinum_jax.design", "posterior_optimal_weights"),
    ("optimal_weight_draws", "platinum_jax.design", "optimal_weight_draws"),
    ("load_weights_config", "platinum_jax.design", "load_weights_config"),
    ("plot_capabilities", "platinum_jax.plots", "plot_posterior_capabilities"),
    ("plot_ppc", "platinum_jax.plots", "plot_ppc"),
])
def test_moved_names_still_import_with_a_pointer_to_their_home(old, home, new):
    import importlib

    import platinum_jax.stitching.bayes as bayes

    with pytest.warns(DeprecationWarning, match=f"moved to {home}.{new}"):
        value = getattr(bayes, old)
    assert value is getattr(importlib.import_module(home), new)


def test_old_threshold_names_still_read(tmp_path):
    from platinum_jax.inference._summary import threshold_names

    with pytest.warns(DeprecationWarning, match="rhat_max"):
        assert threshold_names(400.0, 1.01, {"max_r_hat": 1.05}, "f") == (400.0, 1.05)
    with pytest.warns(DeprecationWarning, match="ess_min"):
        assert threshold_names(400.0, 1.01, {"min_ess": 100}, "f") == (100.0, 1.01)
    with pytest.raises(TypeError, match="unexpected"):
        threshold_names(400.0, 1.01, {"rhat": 1.0}, "f")
