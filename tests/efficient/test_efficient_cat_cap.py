"""The hard exposure cap of adaptive testing: on the simulated population no item goes to
more than ``max_exposure`` of the test-takers, by counting, and a cap the tests cannot fit
under is refused, by the library and by `platinum-jax cat --max-exposure`."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from platinum_jax.cli import main
from platinum_jax.data import ResponseTable
from platinum_jax.efficient import AdaptiveTest, item_bank, simulate_adaptive, sympson_hetter
from platinum_jax.inference import Fit, Problem, simulate
from platinum_jax.models import TwoPL

N_SUBJECTS, N_ITEMS, BUDGET = 200, 40, 5


@pytest.fixture(scope="module")
def world():
    table, truth = simulate(TwoPL(), N_SUBJECTS, N_ITEMS, seed=5)
    fit = Fit(problem=Problem(TwoPL(), table), method="truth", theta=truth)
    return table, item_bank(fit, dispersion=1.0)


@pytest.mark.parametrize("cap", [0.3, 0.5])
def test_sympson_hetter_cap_is_met_exactly_on_the_simulated_population(world, cap):
    table, bank = world
    cat = sympson_hetter(AdaptiveTest(bank, budget=BUDGET), table, cap=cap, iterations=3)
    run = simulate_adaptive(cat, table, seed=1)
    limit = int(np.floor(cap * N_SUBJECTS))
    counts = run.trace.item.value_counts()  # administrations per item, from the trace
    assert counts.max() <= limit
    assert run.items.exposure.max() <= cap
    assert cat.max_exposure == cap
    assert (run.items.closed == (run.items.exposure * N_SUBJECTS >= limit)).all()
    assert (run.subjects.n_items == BUDGET).all()  # the closures cut no test short


def test_tightest_cap_still_gives_every_test_its_budget(world):
    """At cap = budget / items, floor(cap S) x items equals the administrations needed: the
    room rule keeps every later test able to finish; one step lower is refused."""
    table, bank = world
    run = simulate_adaptive(AdaptiveTest(bank, budget=BUDGET, max_exposure=0.125), table)
    assert run.items.exposure.max() <= 0.125
    assert (run.subjects.n_items == BUDGET).all()
    assert run.items.closed.all()  # every item used to the last test it may go to
    with pytest.raises(ValueError, match=r"floor\(cap x 200\) = 24 .* at least 0\.125"):
        simulate_adaptive(AdaptiveTest(bank, budget=BUDGET, max_exposure=0.12), table)


def test_cap_that_never_binds_gives_the_vmapped_tests(world):
    """Tested one after another with room for everyone, each test-taker gets the very test
    the vmapped simulation gives it (the same random keys per test-taker)."""
    table, bank = world
    k = pd.Series(np.linspace(0.5, 1.0, N_ITEMS), index=bank.items)
    free = simulate_adaptive(AdaptiveTest(bank, budget=BUDGET, randomesque=3, exposure=k),
                             table, seed=4)
    capped = simulate_adaptive(AdaptiveTest(bank, budget=BUDGET, randomesque=3, exposure=k,
                                            max_exposure=1.0), table, seed=4)
    pd.testing.assert_frame_equal(free.trace, capped.trace)
    assert not capped.items.closed.any()


def test_caps_that_cannot_be_met_are_refused(world):
    table, bank = world
    cat = AdaptiveTest(bank, budget=BUDGET)
    frame = table.to_frame()
    few = ResponseTable.from_frame(frame[frame.subject.isin(table.subjects[:4])])
    with pytest.raises(ValueError, match=r"floor\(cap x 4\) = 0 .*raise the cap to at least"):
        sympson_hetter(cat, few, cap=0.2)  # cap x subjects < 1: no item could be given
    with pytest.raises(ValueError, match="mean exposure"):
        sympson_hetter(cat, table, cap=0.1)
    with pytest.raises(ValueError, match="max_exposure"):
        AdaptiveTest(bank, budget=BUDGET, max_exposure=0.0)


def test_cat_command_meets_the_cap_or_refuses(tmp_path, capsys):
    table, _ = simulate(TwoPL(), 60, 25, seed=8)
    data = tmp_path / "responses.csv"
    table.to_frame()[["subject", "item", "response"]].to_csv(data, index=False)
    assert main(["fit", str(data), "--model", "2pl", "--out", str(tmp_path / "fit")]) == 0
    items = str(tmp_path / "fit" / "items.csv")
    for cap in ("0.3", "0.5"):
        out = tmp_path / f"cat{cap}"
        assert main(["cat", str(data), "--items", items, "--budget", "6", "--max-exposure", cap,
                     "--randomesque", "2", "--out", str(out)]) == 0
        summary = json.loads((out / "summary.json").read_text())
        exposure = pd.read_csv(out / "items.csv", index_col="item").exposure
        assert summary["max_exposure"] == pytest.approx(exposure.max())
        assert summary["max_exposure"] <= float(cap) == summary["max_exposure_cap"]
        used = pd.read_csv(out / "subjects.csv", index_col=0).n_items
        assert (used == 6).all()
    capsys.readouterr()
    # 0.24 = budget / items passes the mean-exposure rule, but floor(0.24 x 60) = 14 tests per
    # item give 25 x 14 = 350 administrations for the 60 x 6 = 360 needed.
    for cap, rule in (("0.24", r"floor\(cap x 60\) = 14"), ("0.01", "mean exposure")):
        bad = tmp_path / f"bad{cap}"
        assert main(["cat", str(data), "--items", items, "--budget", "6", "--max-exposure", cap,
                     "--out", str(bad)]) == 2
        err = capsys.readouterr().err
        assert f"--max-exposure {cap}" in err
        assert re.search(rule, err)
        assert "raise the cap to at least" in err
        assert not bad.exists() or not any(bad.iterdir())


def test_a_capped_test_is_calibrated_on_folds_of_a_few_models(world):
    """Calibration replays an exposure-controlled test on each fold's models as new
    test-takers are tested, one by one with the Sympson-Hetter lottery: the hard cap, which
    counts a population's tests, would let each item go to one of a fold's nine models, room
    for 40 administrations where their five-item tests need 45. The replay's items are those of the lottery alone."""
    from dataclasses import replace

    from platinum_jax.efficient import fit_bias_sd, interval_scale
    from platinum_jax.efficient._calibrate import _calibration_subset

    table, bank = world
    cat = sympson_hetter(AdaptiveTest(bank, budget=BUDGET), table, cap=0.2, iterations=3)
    frame = table.to_frame()
    folds = [frame[frame.subject.isin(table.subjects[j:j + 9])] for j in (0, 9)]
    with pytest.raises(ValueError, match="cannot be met on 9 test-takers"):
        simulate_adaptive(cat, ResponseTable.from_frame(folds[0]), seed=0)
    asked, _ = _calibration_subset(bank, folds[0], BUDGET, cat, seed=0)
    alone = simulate_adaptive(replace(cat, max_exposure=None),
                              ResponseTable.from_frame(folds[0]), seed=0)
    got = asked.to_frame().sort_values(["subject", "item"])[["subject", "item"]]
    want = alone.trace[["subject", "item"]].sort_values(["subject", "item"])
    np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())
    banks = [(bank, f) for f in folds]
    scale, z = interval_scale(banks, BUDGET, method=cat)
    assert len(z) == 18 and np.isfinite(scale) and scale > 0
    fitted = fit_bias_sd(banks, BUDGET, method=cat)
    assert len(fitted.z) == 18 and 0 <= fitted.coverage <= 1
