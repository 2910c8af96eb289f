"""``platinum-jax fit``: files, columns and errors, on the real data and a simulated world."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from platinum_jax.cli import main
from platinum_jax.inference import simulate
from platinum_jax.models import TwoPL

LCB = "livecodebench"


def test_rosetta_from_the_papers_csv(scores_long_csv, tmp_path, capsys):
    out = tmp_path / "fit"
    assert main(["fit", str(scores_long_csv), "--model", "rosetta", "--out", str(out)]) == 0
    subjects = pd.read_csv(out / "subjects.csv", index_col=0)
    items = pd.read_csv(out / "items.csv", index_col=0)
    summary = json.loads((out / "fit.json").read_text())
    assert len(subjects) == 179 and len(items) == 38
    assert summary["objective"] == pytest.approx(3.44738, abs=1e-5)
    assert summary["converged"] and summary["model"]["name"] == "rosetta"
    assert items.loc["Winogrande", "difficulty"] == 0.0
    assert subjects.loc["gpt-5-2025-08-07_high", "capability"] == pytest.approx(2.6, abs=0.1)
    # A second run into the same directory is refused unless --overwrite.
    assert main(["fit", str(scores_long_csv), "--model", "rosetta", "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err


def test_2pl_with_laplace_on_item_level_data(tmp_path):
    table, truth = simulate(TwoPL(), 80, 30, seed=7, density=0.9)
    frame = table.to_frame().rename(columns={"subject": "model", "response": "score"})
    frame["benchmark"] = "demo"
    path = tmp_path / "responses.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "irt"
    assert main(["fit", str(path), "--model", "2pl", "--method", "laplace", "--out",
                 str(out)]) == 0
    subjects = pd.read_csv(out / "subjects.csv", index_col=0)
    items = pd.read_csv(out / "items.csv", index_col=0)
    assert {"ability", "ability_sd", "ability_lo", "ability_hi"} <= set(subjects.columns)
    assert (items["group"] == "demo").all()
    assert np.corrcoef(subjects["ability"], truth.subjects[:, 0])[0, 1] > 0.8


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--method", "nuts", "--target-accept", "1.5"], "strictly between 0 and 1"),
        (["--replicates", "0"], "--replicates must be >= 1"),
        (["--model", "rosetta", "--anchor-benchmark", "Winogrand"], "closest names"),
    ],
)
def test_bad_options_are_named(scores_long_csv, tmp_path, capsys, extra, message):
    rc = main(["fit", str(scores_long_csv), "--out", str(tmp_path / "x"), *extra])
    assert rc == 2
    assert message in capsys.readouterr().err


def test_percentages_get_a_hint(tmp_path, capsys):
    path = tmp_path / "pct.csv"
    pd.DataFrame({"model": ["a", "b", "c"], "benchmark": ["X"] * 3,
                  "score": [40, 60, 80]}).to_csv(path, index=False)
    assert main(["fit", str(path), "--model", "2pl", "--out", str(tmp_path / "o")]) == 2
    assert "divide by 100" in capsys.readouterr().err


def _fraction_table(tmp_path):
    """Pass rates over 4 samples from a simulated 2PL: exact 0s and 1s and values between."""
    rng = np.random.default_rng(3)
    theta, b = rng.normal(size=40), rng.normal(size=12)
    p = 1 / (1 + np.exp(-(theta[:, None] - b[None])))
    k = rng.binomial(4, p)
    frame = pd.DataFrame({"model": np.repeat([f"m{i}" for i in range(40)], 12),
                          "benchmark": np.tile([f"q{j}" for j in range(12)], 40),
                          "score": (k / 4).ravel()})
    path = tmp_path / "fractions.csv"
    frame.to_csv(path, index=False)
    return frame, path


def test_from_fractions_derives_what_graded_and_beta_need(tmp_path, capsys):
    frame, path = _fraction_table(tmp_path)
    # none-some-all: the same fit as the categories derived by hand.
    by_hand = frame.assign(score=np.select([frame.score == 0, frame.score == 1], [0, 2], 1))
    by_hand.to_csv(tmp_path / "categories.csv", index=False)
    assert main(["fit", str(path), "--model", "graded", "--from-fractions", "none-some-all",
                 "--out", str(tmp_path / "g")]) == 0
    assert main(["fit", str(tmp_path / "categories.csv"), "--model", "graded",
                 "--out", str(tmp_path / "h")]) == 0
    got = json.loads((tmp_path / "g" / "fit.json").read_text())
    want = json.loads((tmp_path / "h" / "fit.json").read_text())
    assert got["objective"] == pytest.approx(want["objective"], rel=1e-10)
    n0, n2 = int((frame.score == 0).sum()), int((frame.score == 1).sum())
    assert got["diagnostics"]["responses_derived"] == (
        f"responses derived from fractions: 0 = none ({n0}), 1 = some "
        f"({len(frame) - n0 - n2}), 2 = all ({n2})")
    # squeeze: (y (n - 1) + 0.5) / n, the same fit as that column written by hand.
    n = len(frame)
    frame.assign(score=(frame.score * (n - 1) + 0.5) / n).to_csv(tmp_path / "sq.csv",
                                                                 index=False)
    assert main(["fit", str(path), "--model", "beta", "--from-fractions", "squeeze",
                 "--out", str(tmp_path / "b")]) == 0
    assert main(["fit", str(tmp_path / "sq.csv"), "--model", "beta",
                 "--out", str(tmp_path / "c")]) == 0
    got = json.loads((tmp_path / "b" / "fit.json").read_text())
    want = json.loads((tmp_path / "c" / "fit.json").read_text())
    assert got["objective"] == pytest.approx(want["objective"], rel=1e-10)
    assert f"n = {n}" in got["diagnostics"]["responses_derived"]
    # Without the option both models refuse the fractions and name it.
    capsys.readouterr()
    assert main(["fit", str(path), "--model", "graded", "--out", str(tmp_path / "x")]) == 2
    assert "--from-fractions none-some-all" in capsys.readouterr().err
    assert main(["fit", str(path), "--model", "beta", "--out", str(tmp_path / "y")]) == 2
    assert "--from-fractions squeeze" in capsys.readouterr().err


@pytest.mark.parametrize("extra, message", [
    (["--model", "2pl", "--from-fractions", "squeeze"], "is for --model beta"),
    (["--model", "beta", "--from-fractions", "none-some-all"], "is for --model graded"),
])
def test_from_fractions_with_the_wrong_model_is_refused(tmp_path, capsys, extra, message):
    _, path = _fraction_table(tmp_path)
    assert main(["fit", str(path), *extra, "--out", str(tmp_path / "z")]) == 2
    assert message in capsys.readouterr().err


def test_from_fractions_refuses_percentages(tmp_path, capsys):
    frame, _ = _fraction_table(tmp_path)
    frame.assign(score=frame.score * 100).to_csv(tmp_path / "pct.csv", index=False)
    assert main(["fit", str(tmp_path / "pct.csv"), "--model", "graded", "--from-fractions",
                 "none-some-all", "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert "needs responses in [0, 1]" in err and "percentages" in err
