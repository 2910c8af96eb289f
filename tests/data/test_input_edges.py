"""Inputs that used to pass without a word: a benchmark scored by one model, a truncated raw
file, an empty CSV, and error messages that showed NumPy reprs or keyword arguments."""

from __future__ import annotations

import shutil
import warnings

import pandas as pd
import pytest

from platinum_jax.cli import main
from platinum_jax.data import ScoreTable
from platinum_jax.datasets import synthetic_score_table
from platinum_jax.importers import read_epoch_scores
from platinum_jax.models.rosetta import BenchmarkAnchor
from platinum_jax.stitching import fit_stitching


def test_a_benchmark_scored_by_one_model_is_named(tmp_path):
    table, _ = synthetic_score_table(seed=2, n_models=8, n_benchmarks=3, density=1.0, noise=0.02)
    data = table.data[["model", "benchmark", "score"]]
    solo = pd.concat([data, pd.DataFrame({"model": ["model_003"], "benchmark": ["solo"],
                                          "score": [0.4]})])
    with pytest.warns(UserWarning, match="1 benchmark\\(s\\) scored by only one model: 'solo'"):
        fit = fit_stitching(ScoreTable.from_frame(solo), BenchmarkAnchor("bench_00"))
    assert "solo" in fit.benchmarks.index  # warned, not dropped
    # a second model's score identifies the benchmark: no warning
    pair = pd.concat([solo, pd.DataFrame({"model": ["model_005"], "benchmark": ["solo"],
                                          "score": [0.7]})])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ScoreTable.from_frame(pair).warn_unidentified({"bench_00"})
        ScoreTable.from_frame(data).warn_unidentified({"bench_00"})



def test_a_truncated_raw_file_is_refused_by_name(tmp_path, epoch_dir, capsys):
    raw = tmp_path / "raw"
    shutil.copytree(epoch_dir / "raw", raw)
    mmlu = raw / "external_benchmark_mmlu.csv"
    data = mmlu.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 40  # 40 bytes into a row
    mmlu.write_bytes(data[:cut])
    with pytest.raises(ValueError, match="external_benchmark_mmlu.csv looks truncated .*MMLU"):
        read_epoch_scores(raw)
    rc = main(["stitch", str(raw), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and "looks truncated" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
    # a complete file without a final line break is fine, and so is the untouched data
    mmlu.write_bytes(data.rstrip(b"\r\n"))
    assert read_epoch_scores(raw).n_scores == read_epoch_scores(epoch_dir / "raw").n_scores


def test_messages_name_the_file_the_rows_and_the_option(tmp_path, capsys):
    empty = tmp_path / "scores.csv"
    empty.write_text("")
    assert main(["stitch", str(empty), "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "scores.csv' is empty" in err and "No columns to parse" not in err
    frame = pd.DataFrame({"model": ["a", None, "c"], "benchmark": ["x", "y", "z"],
                          "score": [0.1, 0.2, 0.3]})
    with pytest.raises(ValueError, match=r"\(rows \[1\]\)"):
        ScoreTable.from_frame(frame)
    pct = tmp_path / "pct.csv"
    pd.DataFrame({"model": ["a", "a", "b", "b"], "benchmark": ["x", "y", "x", "y"],
                  "score": [50.0, 0.4, 0.3, 0.2]}).to_csv(pct, index=False)
    assert main(["stitch", str(pct), "--anchor-benchmark", "x", "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "pass --clip to clip them instead" in err and "clip=True" not in err
    with pytest.raises(ValueError, match="pass clip=True"):  # the library keeps its own words
        ScoreTable.from_csv(pct)


def test_certify_refuses_a_negative_temperature(tmp_path, capsys):
    items = tmp_path / "items.jsonl"
    items.write_text('{"item_id": "q1", "text": "What is 2 + 2?"}\n')
    rc = main(["certify", str(items), "--judge", "openai:m", "--temperature", "-3",
               "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "--temperature" in err and "got -3" in err
    assert not (tmp_path / "o").exists()


def test_certify_checks_its_inputs_before_any_call(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    items = tmp_path / "items.jsonl"
    items.write_text('{"item_id": "q1", "text": "What is 2 + 2?"}\n'
                     '{"item_id": "q2", "text": "Name a prime."}\n')
    results = tmp_path / "results.csv"
    results.write_text("model,q1,q2\nA,90,80\n")  # percentages
    base = ["certify", str(items), "--judge", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
            "--out", str(tmp_path / "o")]
    assert main([*base, "--results", str(results)]) == 2
    assert "--results" in capsys.readouterr().err and not (tmp_path / "o").exists()
    results.write_text("model,q1,q3\nA,0.9,0.8\n")  # an item the items file does not have
    assert main([*base, "--results", str(results)]) == 2
    assert "not in the items file ['q3']" in capsys.readouterr().err
    # a directory where a file belongs is a message, not a traceback
    assert main(["certify", str(tmp_path), "--judge", "openai:m", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "platinum-jax certify: error:" in err and "Traceback" not in err
