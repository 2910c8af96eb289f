"""The 3PL with one guessing floor per benchmark (``3pl_group``): the floors come back from a
world simulated here, and the model runs through the command line, ``weights`` and ``score``
like any registered model."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from platinum_jax.cli import main
from platinum_jax.data import ResponseTable
from platinum_jax.inference import fit_marginal
from platinum_jax.models import make_model

FLOORS = np.array([0.05, 0.2, 0.35])


def _world(n_subjects: int, per_group: int, seed: int) -> pd.DataFrame:
    """Responses of a 3PL whose floor is ``FLOORS[g]`` on every item of benchmark ``g``."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(len(FLOORS)), per_group)
    n_items = len(groups)
    ability = rng.normal(size=n_subjects)
    difficulty = rng.normal(size=n_items)
    slope = np.exp(rng.normal(0.3, 0.2, n_items))
    floor = FLOORS[groups]
    p = floor + (1 - floor) / (1 + np.exp(-slope * (ability[:, None] - difficulty)))
    y = (rng.random(p.shape) < p).astype(float)
    s, i = np.meshgrid(np.arange(n_subjects), np.arange(n_items), indexing="ij")
    return pd.DataFrame({"subject": [f"m{k:04d}" for k in s.ravel()],
                         "item": [f"q{k:02d}" for k in i.ravel()],
                         "group": [f"bench{groups[k]}" for k in i.ravel()],
                         "response": y.ravel()})


def test_marginal_em_recovers_the_shared_floors():
    table = ResponseTable.from_frame(_world(1500, 12, seed=3))
    model = make_model("3pl_group", table=table)
    assert model.groups == 3
    fit = fit_marginal(model, table)
    assert fit.converged, fit.diagnostics
    floors = fit.globals["value"][[f"guessing[{g}]" for g in range(3)]].to_numpy()
    # Each floor is measured by 1,500 subjects on 12 items; the prior logit c ~ N(-2, 1)
    # pulls it a little towards 0.12.
    np.testing.assert_allclose(floors, FLOORS, atol=0.06)
    assert np.all(np.diff(floors) > 0)


def test_the_model_needs_each_items_benchmark():
    frame = _world(20, 2, seed=0).drop(columns="group")
    table = ResponseTable.from_frame(frame)
    with pytest.raises(ValueError, match="add a group column"):
        make_model("3pl_group", table=table)
    with pytest.raises(ValueError, match="has 3 groups .* built for 2"):
        from platinum_jax.inference import fit_map

        fit_map(make_model("3pl_group", groups=2), ResponseTable.from_frame(_world(20, 2, 0)))


def test_fit_weights_and_score_from_the_command_line(tmp_path):
    frame = _world(120, 4, seed=1)
    data = tmp_path / "responses.csv"
    frame.to_csv(data, index=False)
    fit_dir = tmp_path / "fit"
    assert main(["fit", str(data), "--model", "3pl_group", "--method", "laplace",
                 "--save-draws", "--out", str(fit_dir)]) == 0
    summary = json.loads((fit_dir / "fit.json").read_text())
    assert summary["model"]["name"] == "3pl_group" and summary["model"]["groups"] == 3
    glob = pd.read_csv(fit_dir / "globals.csv", index_col=0)
    assert list(glob.index) == ["guessing[0]", "guessing[1]", "guessing[2]"]
    assert ((glob["value"] > 0) & (glob["value"] < 1)).all() and (glob["sd"] > 0).all()
    items = pd.read_csv(fit_dir / "items.csv", index_col=0)
    # the benchmark each item reads its floor from is data (the group column), not a
    # parameter: the items table names it and reports no fitted "benchmark"
    assert "benchmark" not in items.columns
    assert sorted(set(items["group"])) == ["bench0", "bench1", "bench2"]
    w_dir = tmp_path / "weights"
    assert main(["weights", str(fit_dir), "--target", "q00,q05", "--out", str(w_dir)]) == 0
    weights = pd.read_csv(w_dir / "weights.csv", index_col=0)
    assert len(weights) == 12 and np.isfinite(weights["mean"]).all()
    new = frame[frame["subject"].isin(["m0000", "m0001"])].assign(
        subject=lambda d: d["subject"].str.replace("m", "new"))
    new.to_csv(tmp_path / "new.csv", index=False)
    s_dir = tmp_path / "score"
    assert main(["score", str(fit_dir), str(tmp_path / "new.csv"), "--data", str(data),
                 "--estimator", "item-model", "--out", str(s_dir)]) == 0
    scores = pd.read_csv(s_dir / "scores.csv", index_col=0)
    assert list(scores.index) == ["new0000", "new0001"]
    # both answered every item: the full-benchmark score is their observed mean
    observed = new.groupby("subject")["response"].mean()
    np.testing.assert_allclose(scores["score"], observed.loc[scores.index], atol=1e-12)
