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
