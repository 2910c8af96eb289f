"""One Bayesian Rosetta model, one driver: ``platinum-jax fit --model rosetta_bayes --method
nuts`` samples the model ``platinum-jax stitch-bayes`` samples, through the same
:func:`~platinum_jax.inference.nuts`, and writes the same posterior.

Two posteriors are the same when their unnormalised log densities differ by a constant; the
density test evaluates both commands' models at points drawn from the prior, and the command
test runs both commands with one seed and compares their files."""

from __future__ import annotations

import argparse
import warnings

import jax
import numpy as np
import pytest
from numpyro import handlers
from numpyro.infer.util import log_density

from platinum_jax.cli.fit import build_model, register
from platinum_jax.data import ResponseTable, ScoreTable
from platinum_jax.inference import Problem, numpyro_model
from platinum_jax.models import RosettaBayes
from platinum_jax.models.rosetta import STDERR_FLOOR, BenchmarkAnchor, floor_se
from platinum_jax.stitching import stitching_problem

jax.config.update("jax_enable_x64", True)


def _fit_args(tmp_path, model="rosetta_bayes", likelihood=None, method="nuts"):
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
def test_fit_and_stitch_bayes_share_one_posterior_density(tmp_path, likelihood, sparse_scores):
    frame = sparse_scores()
    args = _fit_args(tmp_path, likelihood=likelihood)
    ours, n_floored = _fit_problem(frame, args)
    assert isinstance(ours.model, RosettaBayes)
    assert n_floored == int((frame["stderr"] < STDERR_FLOOR).sum()) > 0
    table = ScoreTable.from_frame(frame)
    theirs, _ = stitching_problem(table, BenchmarkAnchor("b0"), likelihood=likelihood or "gaussian")
    assert list(ours.table.subjects) == list(theirs.table.subjects)
    assert list(ours.table.items) == list(theirs.table.items)
    m_ours, m_theirs = numpyro_model(ours), numpyro_model(theirs)
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


def test_rosetta_bayes_is_only_sampled(tmp_path, sparse_scores):
    from platinum_jax.cli.fit import _check

    with pytest.raises(ValueError, match="--model rosetta_bayes is sampled"):
        _check(_fit_args(tmp_path, "rosetta_bayes", method="laplace"))
    args = _fit_args(tmp_path, "rosetta_bayes")
    args.link = "clipped_linear"
    with pytest.raises(ValueError, match="sigmoid link"):
        build_model(args, ResponseTable.from_frame(sparse_scores().drop(columns=["n_items", "stderr"])))


def test_rosetta_bayes_is_only_sampled_and_rosetta_is_never(tmp_path, sparse_scores):
    from platinum_jax.cli.fit import _check

    with pytest.raises(ValueError, match="rosetta_bayes"):
        _check(_fit_args(tmp_path, "rosetta", method="nuts"))  # one spelling per job
    with pytest.raises(ValueError, match="rosetta_bayes"):
        _check(_fit_args(tmp_path, "rosetta", method="svi"))


@pytest.mark.slow
def test_the_two_commands_write_the_same_posterior(tmp_path):
    """``stitch-bayes`` and ``fit --model rosetta_bayes --method nuts`` on one file with one seed:
    the same groups, variables and draws, and the same summary columns; stitch-bayes adds the
    paper's files."""
    import arviz as az
    import pandas as pd

    from platinum_jax.cli import main

    rng = np.random.default_rng(2)
    rows = [(f"m{m}", f"b{b}", float(np.clip(0.5 + 0.2 * rng.normal(), 0.01, 0.99)))
            for m in range(12) for b in range(4) if (m + b) % 5]
    csv = tmp_path / "scores.csv"
    # rows listed out of order: the response table sorts them, as the score table does
    pd.DataFrame(rows[::-1], columns=["model", "benchmark", "score"]).to_csv(csv, index=False)
    run = ["--chains", "2", "--warmup", "60", "--samples", "40", "--seed", "5",
           "--anchor-benchmark", "b0"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["stitch-bayes", str(csv), "--out", str(tmp_path / "sb"), *run]) == 0
        main(["fit", str(csv), "--model", "rosetta_bayes", "--method", "nuts", "--out",
              str(tmp_path / "fit"), *run])
    sb, ft = (az.from_netcdf(str(tmp_path / d / "posterior.nc")) for d in ("sb", "fit"))
    assert sb.groups() == ft.groups()

    def rows(idata):  # each table keeps its rows' order: align them by model and benchmark
        labels = idata.observed_data
        return np.lexsort((labels["score_benchmark"].values, labels["score_model"].values))

    for group in sb.groups():
        a, b = getattr(sb, group), getattr(ft, group)
        assert sorted(a.data_vars) == sorted(b.data_vars)
        for var in a.data_vars:
            x, y = a[var].values, b[var].values
            if "score" in a[var].dims:  # per score: the last dimension
                x, y = x[..., rows(sb)], y[..., rows(ft)]
                if group == "constant_data":  # positions: compare the names they point to
                    continue
            np.testing.assert_array_equal(x, y)
    summaries = [pd.read_csv(tmp_path / d / "summary.csv") for d in ("sb", "fit")]
    assert list(summaries[0].columns) == list(summaries[1].columns)
    fit_files = {p.name for p in (tmp_path / "fit").iterdir()}
    sb_files = {p.name for p in (tmp_path / "sb").iterdir()}
    assert fit_files - {".platinum-jax-manifest.json"} <= sb_files
    assert {"capabilities.csv", "benchmarks.csv", "ppc.png"} <= sb_files - fit_files


def test_a_reparameterised_posterior_of_rows_in_any_order(sparse_scores):
    """NUTS of the Bayesian Rosetta model on a table whose rows are listed benchmark by
    benchmark (as Epoch's scores_long.csv is): the sampler runs on the rows sorted by model and
    the posterior is mapped forward there. Each draw's difficulty then follows the same draw's
    sampled intercepts exactly as in the reparameterisation (D_b = mu_C + tau_C (zbar_b -
    beta_b / exp(eta_b))), checked in NumPy; and a second table of the same sizes but other
    rows gets its own push-forward, not the first table's."""
    from platinum_jax.inference import nuts

    frame = sparse_scores(seed=3).drop(columns=["n_items", "stderr"])
    by_benchmark = frame.sort_values(["benchmark", "model"], ascending=[True, False])
    table = ResponseTable.from_frame(by_benchmark)
    assert not np.all(np.diff(table.subject_index) >= 0)  # not in the sampler's order
    model = RosettaBayes(anchor=BenchmarkAnchor("b0"))

    def fit(t):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return nuts(model, t, chains=1, warmup=30, samples=20, seed=0)

    def check(post, t):
        p = post.inference_data.posterior
        z = p["capability_z"].values[0]  # (draws, free capabilities): all models are free
        mu, tau = p["capability_mu"].values[0], p["capability_tau"].values[0]
        slope, diff = p["slope"].values[0], p["difficulty"].values[0]
        items = list(t.items)
        free = [b for b in items if b != "b0"]
        beta = p["intercept"].values[0]
        for j, b in enumerate(free):
            k = items.index(b)
            on = np.asarray(t.item_index) == k
            zbar = z[:, np.asarray(t.subject_index)[on]].mean(axis=1)
            want = mu + tau * (zbar - beta[:, j] / (slope[:, k] * tau))
            np.testing.assert_allclose(diff[:, k], want, rtol=1e-9, atol=1e-9)

    check(fit(table), table)
    # the same sizes, other rows: each model's scores moved to another benchmark
    other = by_benchmark.assign(benchmark=by_benchmark["benchmark"].map(
        {"b0": "b0", "b1": "b2", "b2": "b3", "b3": "b1"}))
    other_table = ResponseTable.from_frame(other)
    assert other_table.n_responses == table.n_responses
    assert not np.array_equal(other_table.item_index, table.item_index)
    check(fit(other_table), other_table)
