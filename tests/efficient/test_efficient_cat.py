"""Adaptive testing on a synthetic 2PL world with known truth: the item-by-item posterior
against NumPy, exposure control, content balancing, stopping and the `cat` command."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, log_expit
from scipy.stats import norm

from platinum_jax.cli import main
from platinum_jax.data import ResponseTable
from platinum_jax.efficient import AdaptiveTest, item_bank, simulate_adaptive, sympson_hetter
from platinum_jax.inference import Fit, Problem, simulate
from platinum_jax.models import TwoPL

N_SUBJECTS, N_ITEMS = 200, 40


@pytest.fixture(scope="module")
def world():
    """The true 2PL parameters stand in for the fit (prior N(0, 1) on the ability)."""
    table, truth = simulate(TwoPL(), N_SUBJECTS, N_ITEMS, seed=5)
    fit = Fit(problem=Problem(TwoPL(), table), method="truth", theta=truth)
    bank = item_bank(fit, dispersion=1.0)
    wide = table.to_frame().pivot(index="subject", columns="item", values="response")
    return table, truth, bank, wide


def test_item_by_item_posterior_equals_the_full_data_posterior(world):
    _, truth, bank, wide = world
    cat = AdaptiveTest(bank, budget=N_ITEMS)
    y = wide.iloc[7]
    state, asked = cat.start(key=1), []
    while not cat.finished(state):
        item, state = cat.next_item(state)
        asked.append(item)
        state = cat.update(state, item, y[item])
    assert sorted(asked) == sorted(wide.columns)  # every item once
    grid = np.asarray(bank.grid)
    b, a = truth.items[:, 0], np.exp(truth.items[:, 1])
    z = a[None] * (grid[:, None] - b[None])
    yy = y[bank.items].to_numpy()
    log = norm.logpdf(grid) + np.sum(yy * log_expit(z) + (1 - yy) * log_expit(-z), axis=1)
    post = np.exp(log - log.max())
    post /= post.sum()
    assert cat.posterior(state).to_numpy() == pytest.approx(post, abs=1e-10)
    s = cat.summary(state)
    assert s["ability"] == pytest.approx(post @ grid, abs=1e-9)
    assert s["score"] == pytest.approx(yy.mean(), abs=1e-12)  # nothing left to predict
    assert s["n_items"] == N_ITEMS
    with pytest.raises(ValueError, match="finished"):
        cat.next_item(state)
    first = cat.start(key=1)
    item, first = cat.next_item(first)
    # The first item maximises the information under the prior, computed by NumPy.
    p = expit(z)
    prior = np.exp(norm.logpdf(grid))
    prior /= prior.sum()
    assert item == bank.items[np.argmax(prior @ (a ** 2 * p * (1 - p)))]
    state = cat.update(first, item, 1.0)
    with pytest.raises(ValueError, match="already given"):
        cat.update(state, item, 0.0)
    with pytest.raises(ValueError, match="no item is left"):
        cat.next_item(state, available=[item])
    other = [i for i in bank.items if i != item][:2]
    assert cat.next_item(state, available=other)[0] in other


def test_sympson_hetter_keeps_exposure_under_the_cap(world):
    table, _, bank, _ = world
    cat = AdaptiveTest(bank, budget=5)
    free = simulate_adaptive(cat, table)
    assert free.items.exposure.max() > 0.9  # without control the best item goes to all
    cap = 0.25
    controlled = sympson_hetter(cat, table, cap=cap, iterations=8)
    fresh, _ = simulate(TwoPL(), N_SUBJECTS, N_ITEMS, seed=6)  # new test-takers, same items
    run = simulate_adaptive(controlled, fresh, seed=3)
    tol = 3 * np.sqrt(cap * (1 - cap) / N_SUBJECTS)
    assert run.items.exposure.max() <= cap + tol
    assert (run.subjects.n_items == 5).all()
    assert run.overlap < free.overlap
    # Exposure and overlap recomputed from the trace with pandas.
    sets = run.trace.groupby("subject").item.apply(set)
    share = run.trace.item.value_counts() / N_SUBJECTS
    assert run.items.exposure[share.index].to_numpy() == pytest.approx(share.to_numpy())
    names = list(sets.index)
    pairs = [len(sets[u] & sets[v]) / ((len(sets[u]) + len(sets[v])) / 2)
             for k, u in enumerate(names) for v in names[k + 1:]]
    assert run.overlap == pytest.approx(np.mean(pairs))
    with pytest.raises(ValueError, match="mean exposure"):
        sympson_hetter(cat, table, cap=0.1)


def test_randomesque_spreads_the_first_item(world):
    table, truth, bank, _ = world
    # budget 5, the length of the exposure test's runs: the rules are arguments of one program
    run = simulate_adaptive(AdaptiveTest(bank, budget=5, randomesque=4), table, seed=2)
    grid = np.asarray(bank.grid)
    b, a = truth.items[:, 0], np.exp(truth.items[:, 1])
    p = expit(a[None] * (grid[:, None] - b[None]))
    prior = np.exp(norm.logpdf(grid))
    top4 = bank.items[np.argsort(-(prior / prior.sum()) @ (a ** 2 * p * (1 - p)))[:4]]
    counts = run.trace[run.trace.step == 0].item.value_counts()
    assert set(counts.index) == set(top4)
    tol = 3 * np.sqrt(0.25 * 0.75 / N_SUBJECTS)
    assert np.all(np.abs(counts / N_SUBJECTS - 0.25) <= tol)


def test_content_balancing_and_stopping(world):
    table, _, bank, _ = world
    groups = pd.Series(np.where(np.arange(N_ITEMS) < 10, "a", "b"), index=bank.items)
    run = simulate_adaptive(AdaptiveTest(bank, budget=8, groups=groups,
                                         group_share=pd.Series({"a": 0.5, "b": 0.5})), table)
    per = run.trace.assign(g=groups[run.trace.item].to_numpy()).groupby(["subject", "g"]).size()
    assert (per == 4).all()  # share 1/2 of 8 items each, whatever the information says
    target = 0.6
    run = simulate_adaptive(AdaptiveTest(bank, budget=8, target_se=target), table)
    last = run.trace.groupby("subject").tail(1).set_index("subject")
    stopped = run.subjects.stopped
    assert stopped.any()
    assert (last.ability_sd[stopped] <= target).all()
    assert (run.subjects.n_items[~stopped] == 8).all()
    before = run.trace.groupby("subject").ability_sd.apply(lambda s: s.iloc[:-1].min())
    assert (before[stopped[stopped].index].dropna() > target).all()
    with pytest.raises(ValueError, match="groups lacks"):
        AdaptiveTest(bank, budget=3, groups=groups.iloc[:5])
    with pytest.raises(ValueError, match="budget"):
        AdaptiveTest(bank, budget=0)


def test_cat_command(world, tmp_path):
    table, truth = simulate(TwoPL(), 60, 25, seed=8)  # the fit shape of the other command tests
    data = tmp_path / "responses.csv"
    table.to_frame()[["subject", "item", "response"]].to_csv(data, index=False)
    assert main(["fit", str(data), "--model", "2pl", "--out", str(tmp_path / "fit")]) == 0
    items = tmp_path / "fit" / "items.csv"
    assert main(["cat", str(data), "--items", str(items), "--budget", "6",
                 "--max-exposure", "0.3", "--randomesque", "2",
                 "--out", str(tmp_path / "cat")]) == 0
    summary = json.loads((tmp_path / "cat" / "summary.json").read_text())
    exposure = pd.read_csv(tmp_path / "cat" / "items.csv", index_col="item").exposure
    assert summary["max_exposure"] == pytest.approx(exposure.max())
    used = pd.read_csv(tmp_path / "cat" / "subjects.csv", index_col=0).n_items
    assert exposure.sum() == pytest.approx(used.mean())  # each given item counts once
    assert used.max() == 6
    assert main(["cat", str(data), "--items", str(items), "--budget", "6", "--group-column",
                 "nope", "--out", str(tmp_path / "bad")]) == 2
    assert not (tmp_path / "bad").exists() or not any((tmp_path / "bad").iterdir())
    # The response check `fit` makes: percentages and values below 0 are refused, by name.
    frame = table.to_frame()[["subject", "item", "response"]]
    for name, values in (("percent", frame.response * 100), ("negative", frame.response - 1)):
        bad = tmp_path / f"{name}.csv"
        frame.assign(response=values).to_csv(bad, index=False)
        assert main(["cat", str(bad), "--items", str(items), "--budget", "6",
                     "--out", str(tmp_path / name)]) == 2
        assert not (tmp_path / name).exists()
        with pytest.raises(ValueError, match=f"{name}.csv, column response"):
            simulate_adaptive(AdaptiveTest(item_bank(Fit(problem=Problem(TwoPL(), table),
                                                         method="truth", theta=truth), dispersion=1.0),
                                           budget=3), ResponseTable.read(bad))


def test_mdad_matches_the_closed_form(world):
    from scipy.stats import norm as normal

    from platinum_jax.efficient import irt_mdad, irt_mdad_subjects

    _, truth, bank, _ = world
    b, a = truth.items[:, 0], np.exp(truth.items[:, 1])
    grid = np.asarray(bank.grid)
    theta = grid[200]  # a grid point, so no interpolation is involved
    items = list(bank.items[:10])
    p = expit(a * (theta - b))
    info = np.sum((a ** 2 * p * (1 - p))[:10])
    z = normal.ppf(0.975) + normal.ppf(0.8)
    out = irt_mdad(bank, items, theta)
    assert out.information.iloc[0] == pytest.approx(info, rel=1e-10)
    assert out.mdad_ability.iloc[0] == pytest.approx(z * np.sqrt(2 / info), rel=1e-10)
    tcc_slope = np.mean(a * p * (1 - p))
    assert out.mdad_score.iloc[0] == pytest.approx(tcc_slope * z * np.sqrt(2 / info), rel=1e-8)
    # A subject given those ten items at that ability has the same MDAD.
    frame = pd.DataFrame({"subject": "m", "item": items})
    per = irt_mdad_subjects(bank, frame, pd.Series({"m": theta}))
    assert per.loc["m", "mdad_ability"] == pytest.approx(out.mdad_ability.iloc[0])
    # More items, smaller MDAD; a 90%-power MDAD is larger.
    assert irt_mdad(bank, bank.items, theta).mdad_ability.iloc[0] < out.mdad_ability.iloc[0]
    assert irt_mdad(bank, items, theta, power=0.9).mdad_ability.iloc[0] > \
        out.mdad_ability.iloc[0]
    with pytest.raises(ValueError, match="power"):
        irt_mdad(bank, items, theta, power=1.5)


def test_banks_of_one_likelihood_share_the_compiled_simulation(world):
    """The bank's arrays are arguments of the simulation, not constants: a second bank (here
    the items' curves in reverse order) reuses the first one's program, and its run is its
    own: the first item is the second bank's most informative under the prior (NumPy), and a
    test-taker's whole test equals the one given item by item through the harness API."""
    import dataclasses

    table, truth, bank, wide = world
    other = dataclasses.replace(bank, mean=bank.mean[:, ::-1], slope=bank.slope[:, ::-1])
    one, two = AdaptiveTest(bank, budget=5), AdaptiveTest(other, budget=5)
    assert two._jit_run is one._jit_run
    run = simulate_adaptive(two, table)
    grid = np.asarray(bank.grid)
    b, a = truth.items[::-1, 0], np.exp(truth.items[::-1, 1])  # the reversed curves
    p = expit(a[None] * (grid[:, None] - b[None]))
    prior = np.exp(norm.logpdf(grid))
    first = other.items[np.argmax((prior / prior.sum()) @ (a ** 2 * p * (1 - p)))]
    assert set(run.trace[run.trace.step == 0].item) == {first}
    assert first != simulate_adaptive(one, table).trace.item.iloc[0]
    name = table.subjects[3]
    state, asked = two.start(), []
    while not two.finished(state):
        item, state = two.next_item(state)
        asked.append(item)
        state = two.update(state, item, wide.loc[name, item])
    mine = run.trace[run.trace.subject == name]
    assert list(mine.item) == asked
    assert mine.ability.iloc[-1] == pytest.approx(two.summary(state)["ability"], abs=1e-12)
