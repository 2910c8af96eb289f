"""A model of the user's own, outside the package (tests/fixtures/user_models/rosetta_floor.py:
the Rosetta model with a guessing floor per answer format), through every method and command,
on a simulated world whose floors are known; and the two silent wrong fits now said."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import jax
import numpy as np
import pandas as pd
import pytest

from platinum_jax.cli import main
from platinum_jax.data import ResponseTable
from platinum_jax.inference import bootstrap, fit_map, laplace, nuts, svi
from platinum_jax.models import Gaussian, Rosetta, from_config, model_class, to_config

jax.config.update("jax_enable_x64", True)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "user_models" / "rosetta_floor.py"
BENCHMARKS = ["Winogrande", "PIQA", "ANLI", "MMLU", "GPQA diamond", "ARC AI2", "GSM8K",
              "MATH level 5", "SWE-Bench verified"]
# below each format's chance rate, where the model's floors lie
TRUE_FLOOR = {"free response": 0.0, "2-option": 0.4, "3-option": 0.25, "4-option": 0.2}
# The paper's L2 strength (0.1) shrinks the scale of a world this small, floors with it; the
# recovery checks fit with a weaker penalty.
L2 = 0.001


def _user_module():
    """The fixture's module, loaded by path as ``--model path/to/file.py:Class`` loads it."""
    import sys

    return sys.modules[model_class(f"{FIXTURE}:RosettaFloor").__module__]


@pytest.fixture(scope="module")
def user():
    return _user_module()


def _world(user, seed=0, n_models=60, noise=0.04) -> pd.DataFrame:
    """Scores from the floor model itself: a known truth (Winogrande: D = 0, alpha = 1)."""
    rng = np.random.default_rng(seed)
    c = rng.normal(0.0, 1.2, n_models)
    d = rng.normal(0.5, 1.0, len(BENCHMARKS))
    a = np.exp(rng.normal(0.3, 0.3, len(BENCHMARKS)))
    d[0], a[0] = 0.0, 1.0
    rows = []
    for m in range(n_models):
        for b, name in enumerate(BENCHMARKS):
            floor = TRUE_FLOOR[user.FORMAT_OF.get(name, "free response")]
            mu = floor + (1 - floor) / (1 + np.exp(-a[b] * (c[m] - d[b])))
            rows.append((f"m{m:02d}", name, mu + noise * rng.normal()))
    return pd.DataFrame(rows, columns=["model", "benchmark", "score"])


@pytest.fixture(scope="module")
def table(user):
    return ResponseTable.from_frame(_world(user))


def _floors(fit, user) -> dict:
    g = fit.globals["value"]
    return {f: float(g[f"floor[{k}]"]) for k, f in enumerate(user.FORMATS)}


def test_map_recovers_the_floors_and_says_nothing_is_wrong(user, table):
    model = user.RosettaFloor.from_table(table, l2=L2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no prior-bound floor, no nesting alarm
        fit = fit_map(model, table)
    floors = _floors(fit, user)
    # within 3 of Laplace's standard errors of the truth; the 2-option floor, which only the
    # weakest models inform, has a standard error of 0.09 in this world, the others 0.01-0.02
    sd = laplace(fit, draws=200).globals["sd"]
    for k, (fmt, truth) in enumerate(TRUE_FLOOR.items()):
        assert abs(floors[fmt] - truth) < 3 * sd[f"floor[{k}]"], (fmt, floors[fmt], truth)
        assert sd[f"floor[{k}]"] < 0.1
    assert max(abs(floors[f] - TRUE_FLOOR[f]) for f in ("3-option", "4-option")) < 0.03
    nested = fit.diagnostics["nested"]
    assert nested["base"] == "rosetta" and not nested["worse_than_base"]
    assert fit.objective < nested["base_objective"]  # the floors explain what plain cannot
    assert "prior_dominated" not in fit.diagnostics


def test_the_default_penalty_that_swamps_least_squares_is_named(user, table):
    """The silent wrong fit: floors left on the default penalty -log prior sit at the prior's
    centre on the unit-noise least-squares objective; the fit now names them and the nesting
    check says the extended model fits worse than the one it nests."""
    model = user.RosettaFloorDefaultPenalty.from_table(table, l2=L2)
    with pytest.warns(UserWarning) as caught:
        fit = fit_map(model, table)
    said = " ".join(str(w.message) for w in caught)
    assert "cannot be worse" in said and "penalty" in said
    assert fit.diagnostics["nested"]["worse_than_base"]
    # the floors stay near the prior's centre, which the data do not support
    start = float(user.FLOOR(0.0)[1])  # the prior's centre, u = 0: half of chance
    assert abs(_floors(fit, user)["2-option"] - start) < abs(TRUE_FLOOR["2-option"] - start)


def test_a_floor_the_data_cannot_see_is_named(user):
    """A floor that no score informs (no benchmark of that format) is fixed by its penalty,
    and the fit names it rather than reporting it as an estimate."""
    frame = _world(user)
    table = ResponseTable.from_frame(frame[frame["benchmark"] != "ANLI"])  # no 3-option
    with pytest.warns(UserWarning, match="fixed by their penalty"):
        fit = fit_map(user.RosettaFloor.from_table(table, l2=L2), table)
    assert fit.diagnostics["prior_dominated"] == ["floor[2]"]


def test_laplace_bootstrap_and_svi_run(user, table):
    model = user.RosettaFloor.from_table(table, l2=L2)
    point = fit_map(model, table)
    lap = laplace(point, draws=400)
    assert {"floor[3]"} <= set(lap.globals.index) and (lap.globals["sd"] > 0).all()
    boot = bootstrap(model, table, replicates=8, seed=1)
    assert boot.diagnostics["replicates_converged"] >= 6
    var = svi(model, table, steps=300, draws=200, seed=0)
    assert np.isfinite(var.globals["value"]).all()
    # NUTS: the command-line test below (fit --method nuts, the sampler's defaults)


def test_a_bayesian_fit_never_samples_a_placeholder_noise(table):
    """The second silent wrong fit: NUTS on a least-squares likelihood sampled its noise fixed
    at 1. A model without a declared replacement is refused; the Rosetta models say theirs."""
    from platinum_jax.models import TwoPL

    with pytest.raises(ValueError, match="noise is fixed by hand"):
        nuts(TwoPL(likelihood=Gaussian(noise=1.0)), table, chains=1, warmup=5, samples=5)
    assert Rosetta().sampling_model().likelihood == Gaussian()


def test_a_user_model_is_recorded_by_its_path_and_found_again(user, tmp_path):
    model = user.RosettaFloor(item_groups=(0, 1, 2))
    doc = json.loads(json.dumps(to_config(model)))
    assert doc["class"].endswith("rosetta_floor.py:RosettaFloor") or ":RosettaFloor" in doc["class"]
    copy = shutil.copy(FIXTURE, tmp_path / "mymodel.py")
    found = model_class(f"{copy}:RosettaFloor")
    assert found.__name__ == "RosettaFloor"
    again = from_config(to_config(found(item_groups=(1, 2))))
    assert again.item_groups == (1, 2) and type(again) is found
    with pytest.raises(ValueError, match="cannot be imported"):
        model_class("no_such_module_here:Model")
    with pytest.raises(ValueError, match="unknown model"):
        model_class("nonesuch")


def test_fit_weights_and_score_from_the_command_line(user, tmp_path, monkeypatch, capsys):
    """The model in the user's own file (mymodel.py beside the data) on the command line:
    fit by NUTS at the sampler's defaults, converging on a world whose floors are known, then
    weights and score find it again from fit.json."""
    shutil.copy(FIXTURE, tmp_path / "mymodel.py")
    monkeypatch.chdir(tmp_path)
    frame = _world(user, seed=3, n_models=30)
    frame.to_csv("data.csv", index=False)
    run = ["--l2", str(L2)]  # the sampler's defaults: the Bayesian Rosetta model's (4 x 600 + 2,000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["fit", "data.csv", "--model", "mymodel:RosettaFloor", "--method", "nuts",
                     *run, "--out", "f"]) == 0
        summary = json.loads(Path("f/fit.json").read_text())
        # the least-squares placeholder noise is never sampled: NUTS samples the model's
        # sampling_model, the Bayesian Rosetta model with the floors (a noise per benchmark),
        # recorded by its import path
        assert summary["model_config"]["class"] == "mymodel:RosettaFloorBayes"
        assert summary["model_config"]["options"]["likelihood"]["class"].endswith(":NoisyGaussian")
        want = user.RosettaFloor.from_table(ResponseTable.from_frame(frame)).item_groups
        assert tuple(summary["model_config"]["options"]["item_groups"]) == want
        d = summary["diagnostics"]
        assert d["divergences"] == 0 and d["rhat_max"] <= 1.01 and d["warmup"] == 600, d
        glob = pd.read_csv("f/globals.csv", index_col=0)["value"]
        assert 0.03 < np.exp(glob["noise_log_mu"]) < 0.05  # truth 0.04
        # A posterior mean is not the MAP: a floor trades against the capabilities' scale,
        # whose marginal is skewed, and the free-response floor's truth, 0, is its bound. The
        # recovery to Laplace's standard errors is the MAP test's; here 0.1 and the ordering.
        floors = {f: float(glob[f"floor[{k}]"]) for k, f in enumerate(user.FORMATS)}
        for fmt, truth in TRUE_FLOOR.items():
            assert abs(floors[fmt] - truth) < 0.1, (fmt, floors[fmt], truth)
        assert sorted(floors, key=floors.get) == sorted(TRUE_FLOOR, key=TRUE_FLOOR.get)
        assert main(["weights", "f", "--target", "GPQA diamond", "--out", "w"]) == 0
        assert len(pd.read_csv("w/weights.csv")) == len(BENCHMARKS)
        new = frame[frame["model"].isin(["m00", "m01"])].assign(
            model=lambda d: d["model"].str.replace("m", "new"))
        new[new["benchmark"].isin(["MMLU", "GSM8K", "Winogrande"])].to_csv("new.csv",
                                                                             index=False)
        assert main(["score", "f", "new.csv", "--data", "data.csv", "--estimator", "item-model",
                     "--out", "s"]) == 0
    scores = pd.read_csv("s/scores.csv", index_col=0)
    assert list(scores.index) == ["new00", "new01"]
    assert ((scores["score"] > 0) & (scores["score"] < 1)).all()
    # the floors are read back through the model's own transform: a 2-option floor above its
    # ceiling of 1/2 (an edited file) is named, not mapped to NaN
    shutil.copytree("f", "edited")
    glob = pd.read_csv("edited/globals.csv", index_col=0)
    glob.loc["floor[1]", "value"] = 0.7
    glob.to_csv("edited/globals.csv")
    capsys.readouterr()
    assert main(["score", "edited", "new.csv", "--data", "data.csv", "--estimator",
                 "item-model", "--out", "s2"]) == 2
    assert "floor[1]" in capsys.readouterr().err and not Path("s2").exists()


def test_the_models_command_lists_built_in_and_registered_models(tmp_path, monkeypatch, capsys):
    """A package registers a model under the entry-point group platinum_jax.models."""
    import sys

    site = tmp_path / "site"
    dist = site / "floor_models-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: floor-models\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[platinum_jax.models]\nrosetta_floor = rosetta_floor:RosettaFloor\n")
    shutil.copy(FIXTURE, site / "rosetta_floor.py")
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "2pl" in out and "rosetta_bayes" in out and "built-in" in out
    assert "rosetta_floor" in out and "floor-models" in out
    assert model_class("rosetta_floor").__name__ == "RosettaFloor"
