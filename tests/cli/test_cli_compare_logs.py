"""``platinum-jax compare`` on what a harness wrote: the same pairs.csv as importing the logs
first and comparing the table."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from platinum_jax.cli import main

LOGS = Path(__file__).parents[1] / "fixtures" / "logs"
QUICK = ["--no-plots", "--replicates", "200"]


def _same_pairs(tmp_path: Path, fmt: str, logs: Path, metric: list[str]) -> pd.DataFrame:
    chosen = [a for m in metric for a in ("--metric", m)]
    assert main(["import", fmt, str(logs), *chosen, "--out", str(tmp_path / "t.csv")]) == 0
    assert main(["compare", str(tmp_path / "t.csv"), "--out", str(tmp_path / "table"),
                 *QUICK]) == 0
    assert main(["compare", str(logs), *chosen, "--out", str(tmp_path / "direct"),
                 *QUICK]) == 0
    for name in ("pairs.csv", "accuracy.csv", "power.csv"):
        a = (tmp_path / "table" / name).read_text()
        b = (tmp_path / "direct" / name).read_text()
        assert a == b, name
    return pd.read_csv(tmp_path / "direct" / "pairs.csv")


def test_compare_on_an_lm_eval_output_directory(tmp_path):
    pairs = _same_pairs(tmp_path, "lm-eval", LOGS / "lm_eval", ["acc_norm", "exact_match"])
    assert sorted(pairs["group"]) == ["tiny_gen", "tiny_mc"]
    assert set(pairs["a"]) | set(pairs["b"]) == {"dummy-a", "dummy-b"}


def test_compare_on_an_inspect_log_directory(tmp_path):
    logs = pytest.importorskip("inspect_ai.log")
    folder = tmp_path / "logs"
    folder.mkdir()
    source = sorted((LOGS / "inspect").glob("*.eval"))[0]
    shutil.copy(source, folder / source.name)
    other = logs.read_eval_log(str(source))
    other.eval.model = "mockllm/other"  # the same samples, answered by a second model
    for sample in other.samples:
        for score in sample.scores.values():
            score.value = "I" if score.value == "C" else "C"
    logs.write_eval_log(other, str(folder / f"other_{source.name}"))
    pairs = _same_pairs(tmp_path, "inspect", folder, ["match"])
    assert set(pairs["a"]) | set(pairs["b"]) == {"mockllm/model", "mockllm/other"}
    assert np.isfinite(pairs["diff"]).all()


def test_compare_on_every_eval_ever_records(tmp_path):
    rng = np.random.default_rng(5)
    pd.DataFrame([{"subject": m, "item": f"q{i}", "group": "toy",
                   "response": float(rng.random() < p), "output": "x"}
                  for m, p in (("acme/a", 0.2), ("acme/b", 0.9)) for i in range(30)]
                 ).to_csv(tmp_path / "r.csv", index=False)
    pd.DataFrame({"item": [f"q{i}" for i in range(30)], "input": "?", "reference": "!"}
                 ).to_csv(tmp_path / "items.csv", index=False)
    assert main(["export", "eee", str(tmp_path / "r.csv"), "--out", str(tmp_path / "eee"),
                 "--collection", "toy", "--source-organization", "Acme",
                 "--evaluator-relationship", "first_party", "--eval-library", "toy",
                 "--items", str(tmp_path / "items.csv"), "--interaction-type",
                 "single_turn"]) == 0
    (tmp_path / "cmp").mkdir()
    pairs = _same_pairs(tmp_path / "cmp", "eee", tmp_path / "eee", [])
    assert list(pairs["group"]) == ["toy"]


def test_a_directory_of_no_known_logs_is_named(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["compare", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) != 0
    err = capsys.readouterr().err
    assert "no harness logs" in err and "--format" in err
