"""ScoreTable's connectivity check, single-model warning and per-model/per-benchmark frames,
and the anchors' table helpers, against pandas re-derivations on small tables built here."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from platinum_jax.data import ScoreTable
from platinum_jax.models.rosetta import BenchmarkAnchor, ModelAnchor, anchor_for_table

ROWS = [("m1", "a", 0.2), ("m1", "b", 0.4), ("m2", "a", 0.6), ("m2", "b", 0.3),
        ("m3", "b", 0.9), ("m3", "c", 0.5)]


def _table(rows=ROWS) -> ScoreTable:
    return ScoreTable.from_frame(pd.DataFrame(rows, columns=["model", "benchmark", "score"]))


def test_a_connected_table_passes_and_islands_are_named():
    _table().check_connected()
    island = [*ROWS, ("x1", "z", 0.5), ("x2", "z", 0.7)]
    with pytest.raises(ValueError, match=r"2 disconnected components.*component 2: 2 models, "
                                         r"1 benchmarks \('z'\).*or fit them apart"):
        _table(island).check_connected("fit them apart")


def test_benchmarks_scored_by_one_model_are_named_unless_fixed():
    table = _table()  # 'c' has one model's score
    with pytest.warns(UserWarning, match=r"1 benchmark\(s\) scored by only one model: 'c'"):
        table.warn_unidentified()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table.warn_unidentified({"c"})


def test_per_model_and_per_benchmark_frames_count_scores():
    table = _table()
    frame = pd.DataFrame(ROWS, columns=["model", "benchmark", "score"])
    caps = table.per_model({"capability": np.arange(table.n_models)})
    assert list(caps.index) == list(table.models) and caps.index.name == "model"
    np.testing.assert_array_equal(caps["n_scores"], frame.groupby("model").size()
                                  .reindex(table.models).to_numpy())
    assert caps["capability"].dtype == np.float64 and caps["release_date"].isna().all()
    bench = table.per_benchmark({"difficulty": [1, 2, 3], "slope": [1.0, 1.0, 2.0]})
    np.testing.assert_array_equal(bench["n_scores"], frame.groupby("benchmark").size()
                                  .reindex(table.benchmarks).to_numpy())
    assert list(bench.columns) == ["difficulty", "slope", "release_date", "n_scores"]


def test_anchor_for_table_keeps_a_present_anchor_else_the_busiest_benchmark():
    table = _table()
    assert anchor_for_table(BenchmarkAnchor("a"), table) == BenchmarkAnchor("a")
    # 'b' has the most scores (3); the anchor's D and alpha are kept
    assert anchor_for_table(BenchmarkAnchor("gone", 0.5, 2.0), table) == BenchmarkAnchor(
        "b", 0.5, 2.0)
    both = ModelAnchor(("m1", "m2"), (0.0, 1.0))
    assert anchor_for_table(both, table) is both
    assert anchor_for_table(ModelAnchor(("m1", "zz"), (0.0, 1.0)), table) == BenchmarkAnchor("b")
    assert both.to_dict() == {"kind": "models", "models": ["m1", "m2"],
                              "capabilities": [0.0, 1.0]}
    assert BenchmarkAnchor("b", 0.5, 2.0).to_dict() == {
        "kind": "benchmark", "benchmark": "b", "difficulty": 0.5, "slope": 2.0}
