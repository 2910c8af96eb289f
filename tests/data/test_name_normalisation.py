"""Model and benchmark names are normalised once, at the loaders, and every change is reported."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from platinum_jax._names import normalise_names
from platinum_jax.data import ScoreTable
from platinum_jax.importers import read_model_compute


def test_normalise_names_strips_and_collapses_and_reports():
    raw = pd.Series(["a ", " b", "c  d", "e", None])
    with pytest.warns(UserWarning, match=r"3 model name\(s\).*'a ' -> 'a'"):
        out = normalise_names(raw, what="model", source="t.csv")
    assert out.tolist()[:4] == ["a", "b", "c d", "e"]
    assert out.isna().tolist() == [False, False, False, False, True]


def test_clean_names_pass_without_a_report():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = normalise_names(pd.Series(["x", "y z"]), what="benchmark", source="t.csv")
    assert out.tolist() == ["x", "y z"]


def test_trailing_space_does_not_make_a_new_benchmark():
    frame = pd.DataFrame(
        {
            "model": ["m1", "m2", "m3"],
            "benchmark": ["Winogrande", "Winogrande ", "MMLU"],
            "score": [0.5, 0.6, 0.7],
        }
    )
    with pytest.warns(UserWarning, match=r"'Winogrande ' -> 'Winogrande'.*already spelt"):
        table = ScoreTable.from_frame(frame, name="scores.csv")
    assert table.benchmarks == ("MMLU", "Winogrande")
    assert table.n_scores == 3


def test_names_that_collide_after_normalisation_are_duplicates_not_dropped():
    frame = pd.DataFrame(
        {"model": ["m1", "m1 "], "benchmark": ["B", "B"], "score": [0.5, 0.6]}
    )
    with pytest.warns(UserWarning, match="normalised"), pytest.raises(ValueError, match="m1"):
        ScoreTable.from_frame(frame, name="scores.csv")


def test_compute_and_scores_agree_on_the_real_files(scores_long_csv, epoch_dir):
    with pytest.warns(UserWarning, match="Llama-2-70b-hf"):
        table = ScoreTable.from_csv(scores_long_csv)
    with pytest.warns(UserWarning, match="Llama-2-70b-hf"):
        compute = read_model_compute(epoch_dir / "model_compute.csv")
    assert "Llama-2-70b-hf" in table.models
    assert "Llama-2-70b-hf" in compute.index
    assert not any(m != m.strip() for m in table.models)
    assert table.n_benchmarks == 38


def test_fit_and_stitch_tables_normalise_names_alike():
    # `platinum-jax fit` reads a ResponseTable, `platinum-jax stitch` a ScoreTable: one helper
    # cleans both, so a trailing space neither makes a second model nor survives in the output.
    from platinum_jax.data import ResponseTable

    frame = pd.DataFrame({"model": ["m1 ", "m1", " m2", "m2"],
                          "benchmark": ["Winogrande ", "MMLU", "Winogrande", "MMLU  "],
                          "score": [0.5, 0.6, 0.7, 0.8]})
    expected_models = sorted({" ".join(m.split()) for m in frame["model"]})
    expected_benchmarks = sorted({" ".join(b.split()) for b in frame["benchmark"]})
    for build in (ScoreTable.from_frame, ResponseTable.from_frame):  # both in the file's words
        with pytest.warns(UserWarning) as seen:
            build(frame, name="scores.csv")
        said = " ".join(str(w.message) for w in seen)
        assert "2 model name(s)" in said and "2 benchmark name(s)" in said
    with pytest.warns(UserWarning, match="stray whitespace"):
        stitched = ScoreTable.from_frame(frame, name="scores.csv")
    with pytest.warns(UserWarning, match="stray whitespace"):
        fitted = ResponseTable.from_frame(frame, name="scores.csv")
    assert list(stitched.models) == list(fitted.subjects) == expected_models
    assert list(stitched.benchmarks) == list(fitted.items) == expected_benchmarks
    rows = {(" ".join(m.split()), " ".join(b.split()), y) for m, b, y in frame.itertuples(index=False)}
    for table in (stitched.responses, fitted):
        assert set(zip(table.subjects[table.subject_index], table.items[table.item_index],
                       table.response, strict=True)) == rows
