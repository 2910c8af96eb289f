"""Efficient evaluation on simulated worlds with known truth: the grid posterior against NumPy,
interval coverage, subset selection, adaptive testing and the two commands."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, log_expit
from scipy.stats import norm, t

from platinum_jax.cli import main
from platinum_jax.data import ResponseTable
from platinum_jax.efficient import (
    AdaptiveTest,
    assisted_scores,
    estimate_scores,
    item_bank,
    select_items,
    simulate_adaptive,
)
from platinum_jax.inference import Fit, Problem, simulate
from platinum_jax.models import TwoPL

N_SUBJECTS, N_ITEMS = 400, 60


@pytest.fixture(scope="module")
def world():
    """A 2PL world: the true parameters stand in for the fit, so the model is exactly right."""
    table, truth = simulate(TwoPL(), N_SUBJECTS, N_ITEMS, seed=3)
    fit = Fit(problem=Problem(TwoPL(), table), method="truth", theta=truth)
    bank = item_bank(fit, dispersion=1.0)
    frame = table.to_frame()[["subject", "item", "response"]]
    return table, truth, fit, bank, frame


def _numpy_posterior(grid, a, b, y):
    """Posterior of one subject on ``grid`` under the N(0, 1) prior, by NumPy."""
    z = a[None] * (grid[:, None] - b[None])
    log = norm.logpdf(grid) + np.sum(y * log_expit(z) + (1 - y) * log_expit(-z), axis=1)
    w = np.exp(log - log.max())
    return w / w.sum()


def test_grid_posterior_and_score_match_numpy(world):
    _, truth, _, bank, frame = world
    grid = np.asarray(bank.grid)
    b, a = truth.items[:, 0], np.exp(truth.items[:, 1])
    items = sorted(frame.item.unique())[:15]
    sub = frame[frame.item.isin(items) & frame.subject.isin(["s000", "s001", "s002"])]
    est = estimate_scores(bank, ResponseTable.from_frame(sub))
    for name, part in sub.groupby("subject"):
        pos = [int(i[1:]) for i in part.item]
        post = _numpy_posterior(grid, a[pos], b[pos], part.response.to_numpy())
        mean = post @ grid
        assert est.loc[name, "ability"] == pytest.approx(mean, abs=1e-9)
        assert est.loc[name, "ability_sd"] == pytest.approx(
            np.sqrt(post @ grid ** 2 - mean ** 2), abs=1e-9)
        unseen = np.setdiff1d(np.arange(N_ITEMS), pos)
        p_all = expit(a[None] * (grid[:, None] - b[None]))
        expected = (part.response.sum() + post @ p_all[:, unseen].sum(1)) / N_ITEMS
        assert est.loc[name, "score"] == pytest.approx(expected, abs=1e-9)
        assert est.loc[name, "n_observed"] == 15


def test_banks_of_one_likelihood_share_the_compiled_posterior(world):
    """The bank's arrays are arguments of the grid posterior, not constants: a second bank (the
    items' curves in reverse order, another dispersion) reuses the first one's program, and its
    posterior is its own (NumPy, tempered by the dispersion)."""
    import dataclasses

    from platinum_jax.efficient import grid_posterior
    from platinum_jax.efficient._estimate import _posterior_fn

    _, truth, _, bank, frame = world
    other = dataclasses.replace(bank, mean=bank.mean[:, ::-1], slope=bank.slope[:, ::-1],
                                dispersion=2.0)
    assert _posterior_fn(other) is _posterior_fn(bank)
    grid = np.asarray(bank.grid)
    sub = frame[frame.subject.isin(["s000", "s001", "s002"])
                & frame.item.isin(sorted(frame.item.unique())[:15])]
    table = ResponseTable.from_frame(sub)
    y, tr, seen = (np.zeros((3, N_ITEMS)), np.ones((3, N_ITEMS)), np.zeros((3, N_ITEMS), bool))
    pos = [int(i[1:]) for i in table.items]
    y[table.subject_index, np.asarray(pos)[table.item_index]] = table.response
    seen[table.subject_index, np.asarray(pos)[table.item_index]] = True
    for b_, phi, post in ((bank, 1.0, grid_posterior(bank, y, tr, seen)),
                          (other, 2.0, grid_posterior(other, y, tr, seen))):
        flip = slice(None, None, -1) if b_ is other else slice(None)
        b, a = truth.items[flip, 0], np.exp(truth.items[flip, 1])
        z = a[None] * (grid[:, None] - b[None])
        for s in range(3):
            ll = (y[s] * log_expit(z) + (1 - y[s]) * log_expit(-z))[:, seen[s]].sum(1) / phi
            log = norm.logpdf(grid) + ll
            want = np.exp(log - log.max())
            np.testing.assert_allclose(np.asarray(post)[s], want / want.sum(), atol=1e-12)


def test_intervals_cover_the_known_truth(world):
    _, truth, _, bank, frame = world
    rng = np.random.default_rng(0)
    keep = frame.groupby("subject").item.transform(lambda s: rng.random(len(s)) < 0.25)
    est = estimate_scores(bank, ResponseTable.from_frame(frame[keep])).reindex(
        sorted(frame.subject.unique()))
    theta = truth.subjects[:, 0]
    accuracy = frame.groupby("subject").response.mean().reindex(est.index)
    cover_theta = np.mean((est.ability_lo <= theta) & (theta <= est.ability_hi))
    cover_acc = np.mean((est.score_lo <= accuracy) & (accuracy <= est.score_hi))
    # 400 subjects: a 90% interval covers 0.90 +- 0.015 (one binomial sd).
    assert 0.85 <= cover_theta <= 0.95
    assert 0.85 <= cover_acc <= 0.95
    # The item model beats the plain mean of the same items.
    err_irt = np.mean(np.abs(est.score - accuracy))
    err_mean = np.mean(np.abs(est.observed_mean - accuracy))
    assert err_irt < err_mean


def test_fisher_selection_is_the_greedy_d_optimal_design(world):
    _, truth, _, bank, _ = world
    grid = np.asarray(bank.grid)
    b, a = truth.items[:, 0], np.exp(truth.items[:, 1])
    p = expit(a[None] * (grid[:, None] - b[None]))
    info = a[None] ** 2 * p * (1 - p)
    ability = truth.subjects[:, 0]
    w = norm.pdf(grid, ability.mean(), ability.std())
    w /= w.sum()
    total, chosen = np.zeros(len(grid)), []
    for _ in range(8):
        gain = w @ np.log(1 / ability.var() + total[:, None] + info)
        gain[chosen] = -np.inf
        chosen.append(int(np.argmax(gain)))
        total += info[:, chosen[-1]]
    sel = select_items(bank, 8, "fisher")
    assert list(sel.index) == [f"i{i:02d}" for i in chosen]
    assert chosen[0] == int(np.argmax(w @ info))  # the first is the most informative
    assert sel.weight.sum() == pytest.approx(1.0)


def test_anchor_points_find_planted_clusters():
    # Four groups of items with identical response patterns: one anchor per group, weighted
    # by the group's share.
    rng = np.random.default_rng(1)
    sizes = [3, 5, 7, 9]
    patterns = rng.integers(0, 2, (4, 30)).astype(float)
    rows = []
    item = 0
    for g, n in enumerate(sizes):
        for _ in range(n):
            rows += [(f"s{s:02d}", f"i{item:02d}", patterns[g, s]) for s in range(30)]
            item += 1
    table = ResponseTable.from_frame(pd.DataFrame(rows, columns=["subject", "item", "response"]))
    problem = Problem(TwoPL(), table)
    fit = Fit(problem=problem, method="truth", theta=problem.start())
    sel = select_items(item_bank(fit, dispersion=1.0), 4, "anchor", seed=2)
    group_of = np.repeat(np.arange(4), sizes)
    got = sorted(group_of[int(i[1:])] for i in sel.index)
    assert got == [0, 1, 2, 3]
    share = {group_of[int(i[1:])]: w for i, w in sel.weight.items()}
    assert [share[g] for g in range(4)] == pytest.approx(np.array(sizes) / sum(sizes))


def test_stratified_and_random_selection(world):
    _, _, _, bank, frame = world
    sel = select_items(bank, 20, "stratified", strata=10, seed=4)
    assert len(sel) == 20 and sel.index.is_unique
    assert sel.weight.sum() == pytest.approx(1.0)
    # Ten bins of six items by mean response: two items from each.
    rate = frame.groupby("item").response.mean()
    ordered = np.sort(rate.to_numpy())
    assert sel.groupby("group").size().tolist() == [2] * 10
    for item, g in sel.group.items():  # bin g holds ranks 6g .. 6g+5 (ties either side)
        assert ordered[6 * g] <= rate[item] <= ordered[6 * g + 5]
    rand = select_items(bank, 20, "random", seed=4)
    assert len(rand) == 20 and rand.index.is_unique
    with pytest.raises(ValueError, match="exceeds the 60 items"):
        select_items(bank, 61, "random")
    with pytest.raises(ValueError, match="unknown selection method"):
        select_items(bank, 5, "best")


def test_adaptive_testing_beats_random_items(world):
    table, truth, _, bank, frame = world
    theta = truth.subjects[:, 0]
    cat = simulate_adaptive(AdaptiveTest(bank, budget=10), table)
    # First item: the one of maximum information under the prior (NumPy).
    grid = np.asarray(bank.grid)
    b, a = truth.items[:, 0], np.exp(truth.items[:, 1])
    p = expit(a[None] * (grid[:, None] - b[None]))
    prior = norm.pdf(grid)
    first = int(np.argmax((prior / prior.sum()) @ (a[None] ** 2 * p * (1 - p))))
    assert set(cat.trace[cat.trace.step == 0].item) == {f"i{first:02d}"}
    assert (cat.subjects.n_items == 10).all()
    rng = np.random.default_rng(5)
    pick = frame.groupby("subject").item.transform(
        lambda s: np.isin(np.arange(len(s)), rng.choice(len(s), 10, replace=False)))
    rand = estimate_scores(bank, ResponseTable.from_frame(frame[pick]))
    rmse_cat = np.sqrt(np.mean((cat.subjects.ability.to_numpy() - theta) ** 2))
    rmse_rand = np.sqrt(np.mean((rand.ability.to_numpy() - theta) ** 2))
    assert rmse_cat < 0.85 * rmse_rand
    # The vmapped run equals a run for one test-taker alone.
    one = simulate_adaptive(AdaptiveTest(bank, budget=10),
                            ResponseTable.from_frame(frame[frame.subject == "s007"]))
    assert list(one.trace.item) == list(cat.trace[cat.trace.subject == "s007"].item)


def test_unknown_items_are_named(world):
    _, _, _, bank, _ = world
    bad = ResponseTable.from_frame(pd.DataFrame({"subject": ["x"], "item": ["nope"],
                                                 "response": [1.0]}))
    with pytest.raises(ValueError, match="not items of the fitted model.*nope"):
        estimate_scores(bank, bad)


def test_subset_and_score_commands(tmp_path, capsys):
    table, truth = simulate(TwoPL(), 60, 25, seed=11)
    data = tmp_path / "responses.csv"
    table.to_frame()[["subject", "item", "response"]].to_csv(data, index=False)
    fit_dir = tmp_path / "fit"
    assert main(["fit", str(data), "--model", "2pl", "--out", str(fit_dir)]) == 0
    out = tmp_path / "subset"
    assert main(["subset", str(fit_dir), "--k", "6", "--out", str(out)]) == 0
    subset = pd.read_csv(out / "subset.csv", index_col=0)
    assert len(subset) == 6 and subset.weight.sum() == pytest.approx(1.0)
    assert main(["subset", str(fit_dir), "--k", "6", "--method", "anchor",
                 "--out", str(tmp_path / "a")]) == 2  # anchor points need --data
    assert main(["subset", str(fit_dir), "--k", "6", "--method", "anchor", "--data", str(data),
                 "--out", str(tmp_path / "a")]) == 0
    # New subjects answer the subset; their scores come with intervals.
    # five subjects of a second world of the same shape (its simulation program is the first's)
    new, _ = simulate(TwoPL(), 60, 25, seed=12)
    frame = new.to_frame()[["subject", "item", "response"]]
    frame = frame[frame.subject.isin(new.subjects[:5])]
    frame["subject"] = "new_" + frame.subject
    path = tmp_path / "new.csv"
    frame[frame.item.isin(subset.index)].to_csv(path, index=False)
    scores_dir = tmp_path / "scores"
    assert main(["score", str(fit_dir), str(path), "--out", str(scores_dir)]) == 2  # no phi
    assert main(["score", str(fit_dir), str(path), "--data", str(data),
                 "--out", str(scores_dir)]) == 2  # the default calibrates: no grouping named
    assert "no family, base_model, release_date or date column" in capsys.readouterr().err
    assert main(["score", str(fit_dir), str(path), "--data", str(data), "--estimator",
                 "item-model", "--out", str(scores_dir)]) == 0
    scores = pd.read_csv(scores_dir / "scores.csv", index_col=0)
    assert len(scores) == 5 and (scores.n_observed == 6).all()
    # the capabilities index is a map of the Rosetta model's capabilities, not of a 2PL's
    assert main(["score", str(fit_dir), str(path), "--data", str(data), "--scale", "eci",
                 "--out", str(tmp_path / "eci")]) == 2
    assert ((scores.score_lo <= scores.score) & (scores.score <= scores.score_hi)).all()
    # The command's numbers are those of the library on the fit it read back.
    from platinum_jax.efficient._io import load_fit

    fit = load_fit(fit_dir, data)
    saved = pd.read_csv(fit_dir / "items.csv", index_col=0)
    assert np.exp(fit.theta.items[:, 1]) == pytest.approx(saved.discrimination.to_numpy())
    lib = estimate_scores(item_bank(fit), ResponseTable.read(path))
    assert scores.ability.to_numpy() == pytest.approx(lib.ability.to_numpy(), abs=1e-9)
    # with the subset file the model-assisted estimate of the library is written
    assert main(["subset", str(fit_dir), "--k", "6", "--method", "random",
                 "--out", str(tmp_path / "r")]) == 0
    drawn = pd.read_csv(tmp_path / "r" / "subset.csv", index_col=0)
    frame[frame.item.isin(drawn.index)].to_csv(path, index=False)
    assert main(["score", str(fit_dir), str(path), "--data", str(data), "--estimator",
                 "assisted", "--subset", str(tmp_path / "r" / "subset.csv"),
                 "--out", str(tmp_path / "as")]) == 0
    written = pd.read_csv(tmp_path / "as" / "scores.csv", index_col=0)
    lib = assisted_scores(item_bank(fit), ResponseTable.read(path), drawn)
    assert written.score.to_numpy() == pytest.approx(lib.score.to_numpy(), abs=1e-9)
    assert written.score_se.to_numpy() == pytest.approx(lib.score_se.to_numpy(), abs=1e-9)


def test_scale_widens_the_score_interval_about_the_same_mean(world):
    _, _, _, bank, frame = world
    sub = ResponseTable.from_frame(frame[frame.item.isin([f"i{i:02d}" for i in range(12)])
                                         & frame.subject.isin(["s010", "s011", "s012"])])
    one = estimate_scores(bank, sub, seed=1)
    two = estimate_scores(bank, sub, seed=1, scale=2.0)
    assert two.score.to_numpy() == pytest.approx(one.score.to_numpy(), abs=1e-12)
    assert two.score_sd.to_numpy() == pytest.approx(2 * one.score_sd.to_numpy(), rel=1e-12)
    assert (two.score_hi - two.score).to_numpy() == pytest.approx(
        2 * (one.score_hi - one.score).to_numpy(), rel=1e-9)
    assert two.ability_lo.to_numpy() == pytest.approx(one.ability_lo.to_numpy(), abs=1e-12)
    with pytest.raises(ValueError, match="scale must be a positive number"):
        estimate_scores(bank, sub, scale=0.0)


def test_interval_scale_is_near_one_when_the_model_is_right(world):
    from platinum_jax.efficient import cross_fitted_banks, interval_scale

    # 120 subjects and 25 items of the 2PL world: each fold's refit is 60 x 25, the shape of
    # the command test's fit, so the two share one compiled program.
    frame = world[4]
    table = ResponseTable.from_frame(frame[frame.subject.isin([f"s{j:03d}" for j in range(120)])
                                           & frame.item.isin([f"i{i:02d}" for i in range(25)])])
    banks = cross_fitted_banks(TwoPL(), table, folds=2, dispersion=1.0)
    scale, z = interval_scale(banks, 8, method="random")
    assert len(z) == 120
    # The scale is the 90% quantile of |z| over the normal one (recomputed here) ...
    assert scale == pytest.approx(np.quantile(np.abs(z), 0.9) / norm.ppf(0.95))
    # ... and with the model right it stays near 1 (a little above: the items are
    # re-estimated from 60 subjects, an error the model's own interval leaves out).
    assert 0.8 <= scale <= 1.5
    # Adaptive tests calibrate through the one adaptive path: its rules run on each fold's bank.
    rules = AdaptiveTest(banks[0][0], budget=3, randomesque=2)
    scale_cat, z_cat = interval_scale(banks, 6, method=rules)
    assert len(z_cat) == 120 and 0.5 <= scale_cat <= 2.0
    assert scale_cat == pytest.approx(np.quantile(np.abs(z_cat), 0.9) / norm.ppf(0.95))


def test_item_measurability(world):
    from platinum_jax.efficient import item_measurability

    _, truth, _, bank, frame = world
    grid = np.asarray(bank.grid)
    b, a = truth.items[:, 0], np.exp(truth.items[:, 1])
    p = expit(a[None] * (grid[:, None] - b[None]))
    ability = truth.subjects[:, 0]
    w = norm.pdf(grid, ability.mean(), ability.std())
    platinum = pd.Series([True, False], index=["i00", "i01"])
    m = item_measurability(bank, platinum)
    assert m.information.to_numpy() == pytest.approx(
        (w / w.sum()) @ (a[None] ** 2 * p * (1 - p)), rel=1e-9)
    assert m.discrimination.to_numpy() == pytest.approx(a)
    by_item = frame.groupby("item").response
    assert m.share_never.to_numpy() == pytest.approx(by_item.apply(lambda r: np.mean(r == 0)))
    assert m.saturation.to_numpy() == pytest.approx(by_item.apply(
        lambda r: max(np.mean(r == 0), np.mean(r == 1))))
    assert m.saturation.min() >= 0.5  # 0/1 responses: the larger share is at least half
    assert m.platinum["i00"] and not m.platinum["i01"] and m.platinum.isna().sum() == 58
    with pytest.raises(ValueError, match="does not have"):
        item_measurability(bank, pd.Series([True], index=["zz"]))


def test_assisted_score_matches_numpy(world):
    """The difference estimate and its stratified, finite-population-corrected variance,
    recomputed with NumPy from the grid posterior of the drawn items."""
    _, truth, _, bank, frame = world
    grid = np.asarray(bank.grid)
    b, a = truth.items[:, 0], np.exp(truth.items[:, 1])
    p_all = expit(a[None] * (grid[:, None] - b[None]))  # (G, N)
    people = ["s004", "s005", "s006"]
    for method in ("random", "stratified"):
        sel = select_items(bank, 16, method, seed=2, strata=4)
        sub = frame[frame.item.isin(sel.index) & frame.subject.isin(people)]
        est = assisted_scores(bank, ResponseTable.from_frame(sub), sel, interval=0.8)
        pos = np.array([int(i[1:]) for i in sel.index])
        groups = sel.group.to_numpy()
        for name in people:
            y = sub[sub.subject == name].set_index("item").response.reindex(sel.index).to_numpy()
            post = _numpy_posterior(grid, a[pos], b[pos], y)
            mu = post @ p_all
            e = y - mu[pos]
            if method == "random":  # one stratum: (1 - k/N) s^2 / k
                var = (1 - 16 / N_ITEMS) * e.var(ddof=1) / 16
                value = mu.mean() + e.mean()
            else:  # strata of N_h items with n_h drawn: sum (N_h/N)^2 (1 - n_h/N_h) s_h^2 / n_h
                value, var = mu.mean(), 0.0
                for h in np.unique(groups):
                    eh = e[groups == h]
                    n_h, big = len(eh), sel.weight[groups == h].sum() * N_ITEMS
                    value += sel.weight[groups == h].sum() * eh.mean()
                    var += (big / N_ITEMS) ** 2 * (1 - n_h / big) * eh.var(ddof=1) / n_h
            row = est.loc[name]
            assert row.score == pytest.approx(value, abs=1e-9)
            assert row.score_se == pytest.approx(np.sqrt(var), rel=1e-9)
            assert row.score_hi - row.score == pytest.approx(t.ppf(0.9, 15) * np.sqrt(var),
                                                             rel=1e-9)
            assert row.ability == pytest.approx(post @ grid, abs=1e-9)
    # the whole benchmark drawn: no sampling error is left
    every = select_items(bank, N_ITEMS, "random")
    full = assisted_scores(bank, ResponseTable.from_frame(frame[frame.subject.isin(people)]),
                           every)
    mean = frame[frame.subject.isin(people)].groupby("subject").response.mean()
    assert full.score.to_numpy() == pytest.approx(mean.reindex(full.index).to_numpy(), abs=1e-12)
    assert full.score_se.to_numpy() == pytest.approx(0.0, abs=1e-12)


def test_assisted_score_is_unbiased_where_the_item_model_is_not(world):
    """New subjects whose item profile departs from the bank's (a per-subject bonus on the
    even items): over random subsets the residual correction removes the item model's bias and
    the 90% interval covers the known truth, their mean over all items, about 90% of the time."""
    _, truth, _, bank, _ = world
    rng = np.random.default_rng(5)
    b, a = truth.items[:, 0], np.exp(truth.items[:, 1])
    n_new = 120
    theta = rng.normal(size=n_new)
    bonus = rng.normal(0.0, 1.5, n_new)
    logit = a[None] * (theta[:, None] - b[None]) + bonus[:, None] * (np.arange(N_ITEMS) % 2 == 0)
    y = (rng.random((n_new, N_ITEMS)) < expit(logit)).astype(float)
    names = [f"new{j:03d}" for j in range(n_new)]
    frame = pd.DataFrame({"subject": np.repeat(names, N_ITEMS),
                          "item": np.tile([f"i{i:02d}" for i in range(N_ITEMS)], n_new),
                          "response": y.ravel()})
    accuracy = pd.Series(y.mean(1), index=names)
    err_a, err_i, cover = [], [], []
    for rep in range(20):
        sel = select_items(bank, 20, "random", seed=rep)
        sub = ResponseTable.from_frame(frame[frame.item.isin(sel.index)])
        ast = assisted_scores(bank, sub, sel).reindex(names)
        irt = estimate_scores(bank, sub, draws=10).reindex(names)
        err_a.append(ast.score - accuracy)
        err_i.append(irt.score - accuracy)
        cover.append((ast.score_lo <= accuracy) & (accuracy <= ast.score_hi))
    bias_a = np.mean(np.abs(np.mean(err_a, axis=0)))
    bias_i = np.mean(np.abs(np.mean(err_i, axis=0)))
    assert bias_a < 0.5 * bias_i
    # 2,400 intervals (120 subjects x 20 subsets, correlated within a subject)
    assert 0.85 <= np.mean(cover) <= 0.95


def test_assisted_score_names_bad_input(world):
    _, _, _, bank, frame = world
    sel = select_items(bank, 10, "random", seed=1)
    part = frame[frame.item.isin(sel.index[:-1]) & (frame.subject == "s001")]
    with pytest.raises(ValueError, match="no response to subset item"):
        assisted_scores(bank, ResponseTable.from_frame(part), sel)
    with pytest.raises(ValueError, match="weight"):
        assisted_scores(bank, ResponseTable.from_frame(part), sel.drop(columns="weight"))
    with pytest.raises(ValueError, match="interval"):
        assisted_scores(bank, ResponseTable.from_frame(part), sel, interval=1.0)


def test_binomial_responses_of_several_subjects_are_scored_as_each_alone():
    """Pass counts of ten samples (a binomial likelihood): the unseen items' variance is
    ``phi mu (1 - mu) / n`` with each subject's own ``n``, checked against NumPy, and scoring
    subjects together gives each the ability posterior and score it gets alone (the variance
    of several subjects' trials once failed to broadcast)."""
    from platinum_jax.models import Binomial

    model = TwoPL(likelihood=Binomial())
    table, truth = simulate(model, 40, 20, seed=4, trials=10)
    bank = item_bank(Fit(problem=Problem(model, table), method="truth", theta=truth),
                     dispersion=2.0)
    mu = np.asarray(bank.mean)
    n = np.array([10.0, 4.0, 1.0])
    var = np.asarray(bank.variance(bank.mean[None], n[:, None, None]))
    np.testing.assert_allclose(var, 2.0 * mu[None] * (1 - mu[None]) / n[:, None, None],
                               rtol=1e-12)
    frame = table.to_frame()[["subject", "item", "response", "trials"]]
    some = frame[frame.item.isin(sorted(frame.item.unique())[:8])
                 & frame.subject.isin(["s00", "s01", "s02"])].copy()
    some.loc[some.subject == "s01", "trials"] = 4.0  # another subject, another n
    some.loc[some.subject == "s01", "response"] = np.round(
        some.loc[some.subject == "s01", "response"] * 4) / 4
    together = estimate_scores(bank, ResponseTable.from_frame(some))
    for name, part in some.groupby("subject"):
        alone = estimate_scores(bank, ResponseTable.from_frame(part))
        for col in ("ability", "ability_sd", "score"):
            assert together.loc[name, col] == pytest.approx(alone.loc[name, col], abs=1e-12)
