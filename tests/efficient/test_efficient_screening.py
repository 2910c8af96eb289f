"""Item screening on a synthetic 2PL world with planted bad items: negative discrimination,
items nobody or everybody solves, a flipped answer key; and subsets that leave them out."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from platinum_jax.cli import main
from platinum_jax.data import ResponseTable
from platinum_jax.efficient import item_bank, screen_items, select_items
from platinum_jax.inference import fit_map
from platinum_jax.models import TwoPL

N_SUBJECTS, N_ITEMS = 200, 30
NEGATIVE = [3, 17]  # slope -1.2
NONE, ALL = 5, 9  # every response 0 / 1
FLIPPED = 25  # a mislabeled key: the response is 1 - y


@pytest.fixture(scope="module")
def world():
    rng = np.random.default_rng(11)
    theta = rng.normal(size=N_SUBJECTS)
    b = rng.normal(size=N_ITEMS)
    a = rng.uniform(0.8, 2.0, N_ITEMS)
    a[NEGATIVE] = -1.2
    y = (rng.random((N_SUBJECTS, N_ITEMS)) < expit(a * (theta[:, None] - b))).astype(float)
    y[:, NONE], y[:, ALL] = 0.0, 1.0
    y[:, FLIPPED] = 1.0 - y[:, FLIPPED]
    s, i = np.meshgrid(np.arange(N_SUBJECTS), np.arange(N_ITEMS), indexing="ij")
    frame = pd.DataFrame({"subject": [f"s{k:03d}" for k in s.ravel()],
                          "item": [f"i{k:02d}" for k in i.ravel()], "response": y.ravel()})
    table = ResponseTable.from_frame(frame)
    fit = fit_map(TwoPL(), table)
    return frame, y, fit, item_bank(fit, dispersion=1.0)


def _label(i):
    return f"i{i:02d}"


def test_screening_flags_the_planted_items(world):
    _, y, _, bank = world
    out = screen_items(bank)
    for i in NEGATIVE + [FLIPPED]:
        # The 2PL keeps slopes positive (a = exp(log a)), so a reversed item is fitted flat.
        assert "near-zero discrimination" in out.loc[_label(i), "reason"]
        assert "negative item-rest correlation" in out.loc[_label(i), "reason"]
    assert "solved by none" in out.loc[_label(NONE), "reason"]
    assert "solved by all" in out.loc[_label(ALL), "reason"]
    planted = {_label(i) for i in NEGATIVE + [NONE, ALL, FLIPPED]}
    # Good items with slope >= 0.8 are not flagged (a few chance misfits are tolerated).
    assert set(out.index[out.flagged]) >= planted
    assert out.flagged.sum() <= len(planted) + 2
    # The item-rest correlation recomputed by pandas from the dense matrix.
    total = y.sum(1)
    for i in (0, NEGATIVE[0], FLIPPED):
        rest = (total - y[:, i]) / (N_ITEMS - 1)
        assert out.loc[_label(i), "item_rest_r"] == pytest.approx(
            np.corrcoef(y[:, i], rest)[0, 1], abs=1e-10)
    assert out.loc[_label(NONE), "share_failed"] == 1.0
    assert out.loc[_label(ALL), "share_solved"] == 1.0


def test_a_falling_item_curve_is_negative_discrimination(world):
    """A model whose slopes may be negative (here the bank's slope of item 0 reversed): the
    rule reads the sign of the population-averaged slope."""
    import dataclasses

    _, _, _, bank = world
    flipped = dataclasses.replace(bank, slope=bank.slope.at[:, 0].multiply(-1.0))
    out = screen_items(flipped)
    assert out.loc[_label(0), "discrimination"] < 0
    assert "negative discrimination" in out.loc[_label(0), "reason"]


def test_infit_and_outfit_match_numpy(world):
    frame, y, fit, bank = world
    out = screen_items(bank)
    mu = fit.predict().reshape(N_SUBJECTS, N_ITEMS)  # the frame is subject-major and complete
    e2, v = (y - mu) ** 2, mu * (1 - mu)
    for i in (0, 1, FLIPPED):
        assert out.loc[_label(i), "outfit"] == pytest.approx(np.mean(e2[:, i] / v[:, i]), rel=1e-8)
        assert out.loc[_label(i), "infit"] == pytest.approx(e2[:, i].sum() / v[:, i].sum(),
                                                            rel=1e-8)


def test_subsets_leave_screened_items_out(world, tmp_path):
    frame, _, _, bank = world
    out = screen_items(bank)
    bad = out.index[out.flagged]
    for method in ("fisher", "random", "stratified", "anchor"):
        sub = select_items(bank, 20, method, exclude=bad)
        assert len(sub) == 20 and not sub.index.isin(bad).any()
        assert sub.weight.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="exceeds the"):
        select_items(bank, N_ITEMS, "random", exclude=bad)
    with pytest.raises(ValueError, match="not items of the fitted model"):
        select_items(bank, 5, "random", exclude=["nope"])
    with pytest.raises(ValueError, match="max_misfit"):
        screen_items(bank, max_misfit=0.5)


def test_subset_command_reports_screened_items(world, tmp_path):
    frame, _, _, _ = world
    data = tmp_path / "responses.csv"
    frame.to_csv(data, index=False)
    assert main(["fit", str(data), "--model", "2pl", "--out", str(tmp_path / "fit")]) == 0
    assert main(["subset", str(tmp_path / "fit"), "--k", "10", "--method", "random",
                 "--data", str(data), "--out", str(tmp_path / "sub")]) == 0
    screened = pd.read_csv(tmp_path / "sub" / "screened.csv", index_col="item")
    chosen = pd.read_csv(tmp_path / "sub" / "subset.csv", index_col="item")
    assert {_label(i) for i in NEGATIVE + [NONE, ALL]} <= set(screened.index)
    assert screened.reason.str.len().gt(0).all()
    assert not chosen.index.isin(screened.index).any()
