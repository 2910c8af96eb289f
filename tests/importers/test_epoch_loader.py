"""Tests of the Epoch ``raw/`` readers.

Truth comes from two independent places: the published analysis set ``scores_long.csv`` (the
paper's own table) and tiny raw directories written here by hand, one per rule or error.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from platinum_jax.importers import (
    read_benchmark_info,
    read_distilled_models,
    read_epoch_raw,
    read_metr_horizons,
    read_model_compute,
)
from platinum_jax.importers._epoch_files import _EXTERNAL_SPECS

KEYS = ["model", "benchmark"]


# --------------------------------------------------------------------------- real data
@pytest.fixture(scope="module")
def raw_dir(epoch_dir: Path) -> Path:
    return epoch_dir / "raw"


@pytest.fixture(scope="module")
def loaded(raw_dir: Path) -> pd.DataFrame:
    return read_epoch_raw(raw_dir)


@pytest.fixture(scope="module")
def reference(scores_long_csv: Path) -> pd.DataFrame:
    ref = pd.read_csv(scores_long_csv)
    # the loaders strip stray whitespace from names ('Llama-2-70b-hf ' in the published file)
    ref["model"] = ref["model"].str.strip()
    for col in ("model_release_date", "benchmark_release_date"):
        ref[col] = pd.to_datetime(ref[col])
    return ref.sort_values(KEYS).reset_index(drop=True)


def test_reproduces_scores_long_row_for_row(loaded, reference):
    ours = loaded.sort_values(KEYS).reset_index(drop=True)
    assert list(ours.columns) == [
        "model",
        "benchmark",
        "score",
        "stderr",
        "n_items",
        "model_release_date",
        "benchmark_release_date",
        "source",
    ]
    assert len(ours) == len(reference)
    assert ours["model"].tolist() == reference["model"].tolist()
    assert ours["benchmark"].tolist() == reference["benchmark"].tolist()
    np.testing.assert_allclose(ours["score"], reference["score"], rtol=0, atol=1e-12)
    for col in ("model_release_date", "benchmark_release_date"):
        left = ours[col].to_numpy(dtype="datetime64[ns]")
        right = reference[col].to_numpy(dtype="datetime64[ns]")
        np.testing.assert_array_equal(np.isnat(left), np.isnat(right))
        np.testing.assert_array_equal(left[~np.isnat(left)], right[~np.isnat(right)])
    src_ours = ours["source"].astype(object).where(ours["source"].notna(), None).tolist()
    src_ref = reference["source"].astype(object).where(reference["source"].notna(), None).tolist()
    assert src_ours == src_ref


def test_paper_counts(loaded):
    assert len(loaded) == 1324
    assert loaded["model"].nunique() == 179
    assert loaded["benchmark"].nunique() == 38
    assert not loaded.duplicated(KEYS).any()
    assert loaded["score"].between(0.0, 1.0).all()


def test_defaults_satisfy_the_paper_filters(loaded):
    per_model = loaded.groupby("model")["benchmark"].nunique()
    assert per_model.min() >= 4
    assert loaded["model_release_date"].min() >= pd.Timestamp("2022-11-01")


def test_stderr_parsed_from_best_scorer(loaded):
    # Hand-read from benchmarks_runs.csv: the stderr after the largest "mean" in `Scores`.
    expected = {
        # "normalized_string_match:0.92±0.01,sympy_equiv:0.92±0.01,model_graded_equiv:0.97±0"
        ("DeepSeek-R1-0528", "MATH level 5"): 0.0,
        # "normalized_string_match:0.78±0.01,sympy_equiv:0.78±0.01,model_graded_equiv:0.93±0.01"
        ("DeepSeek-R1", "MATH level 5"): 0.01,
        ("DeepSeek-R1", "OTIS Mock AIME 2024-2025"): 0.08,  # "model_graded:0.53±0.08"
        ("DeepSeek-R1-0528", "GPQA diamond"): 0.02,  # "choice:0.76±0.02"
        ("DeepSeek-R1-0528", "SWE-Bench verified"): 0.02,  # "swe_bench_scorer:0.33±0.02"
    }
    got = loaded.set_index(KEYS)["stderr"]
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key


def test_stderr_from_leaderboards_that_publish_it(loaded, raw_dir):
    # Terminal Bench gives "Accuracy SE" next to "Accuracy mean"; read both straight from text.
    with open(raw_dir / "external_benchmark_terminal_bench.csv", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    tb = loaded[loaded["benchmark"] == "Terminal Bench"].set_index("model")
    assert tb["stderr"].notna().all()
    for model, row in tb.iterrows():
        # The kept stderr belongs to a raw row of this model whose mean is the kept score.
        candidates = [
            float(r["Accuracy SE"].rstrip("%")) / 100
            for r in rows
            if r["Model version"] == model
            and r["Accuracy mean"]
            and abs(float(r["Accuracy mean"].rstrip("%")) / 100 - row["score"]) < 1e-12
        ]
        assert any(abs(row["stderr"] - c) < 1e-12 for c in candidates), model
    # Leaderboards without a stderr column leave it unknown.
    assert loaded.loc[loaded["benchmark"] == "MMLU", "stderr"].isna().all()
    assert loaded.loc[loaded["benchmark"] != "CadEval", "n_items"].isna().all()
    assert (loaded.loc[loaded["benchmark"] == "CadEval", "n_items"] == 50).all()


def test_min_benchmarks_one_is_a_superset(loaded, raw_dir):
    loose = read_epoch_raw(raw_dir, min_benchmarks=1)
    assert len(loose) > len(loaded)
    joined = loaded.merge(loose, on=KEYS, how="left", suffixes=("", "_loose"))
    assert joined["score_loose"].notna().all()
    np.testing.assert_array_equal(joined["score"], joined["score_loose"])
    strict = read_epoch_raw(raw_dir, min_benchmarks=10)
    assert strict.groupby("model")["benchmark"].nunique().min() >= 10
    assert set(strict["model"]) < set(loaded["model"])


def test_release_date_filter_options(loaded, raw_dir):
    unfiltered = read_epoch_raw(raw_dir, min_release_date=None)
    assert set(map(tuple, loaded[KEYS].to_numpy())) <= set(map(tuple, unfiltered[KEYS].to_numpy()))
    assert (unfiltered["model_release_date"] < pd.Timestamp("2022-11-01")).any()
    late = read_epoch_raw(raw_dir, min_release_date="2025-01-01")
    assert late["model_release_date"].min() >= pd.Timestamp("2025-01-01")
    assert set(late["model"]) < set(loaded["model"])


def test_duplicate_options_on_real_data(loaded, raw_dir):
    mean = read_epoch_raw(raw_dir, duplicates="mean")
    joined = loaded.merge(mean, on=KEYS, suffixes=("_max", "_mean"))
    assert len(joined) == len(loaded) == len(mean)
    assert (joined["score_mean"] <= joined["score_max"] + 1e-15).all()
    assert (joined["score_mean"] < joined["score_max"] - 1e-9).any()
    with pytest.raises(ValueError, match="repeat a \\(model, benchmark\\) pair"):
        read_epoch_raw(raw_dir, duplicates="error")


# --------------------------------------------------------------------------- tiny raw dirs
RUN_HEADER = ["id", "task", "model", "Best score (across scorers)", "Scores", "Status"]


def _write(path: Path, header: list[str], rows: list[list[object]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


def make_raw(
    root: Path,
    *,
    runs: list[list[object]] = (),
    versions: list[list[object]] = (),
    info: list[list[object]] = (),
    files: dict[str, tuple[list[str], list[list[object]]]] | None = None,
) -> Path:
    """A raw/ directory: the given rows, every other leaderboard present but empty."""
    raw = root / "raw"
    raw.mkdir()
    _write(raw / "benchmarks_runs.csv", RUN_HEADER, list(runs))
    _write(raw / "model_versions.csv", ["id", "Model", "Version release date"], list(versions))
    _write(
        raw / "benchmark_optim.csv",
        ["benchmark", "optimized_for", "is_coding", "is_math", "benchmark_release_date", "source"],
        list(info),
    )
    files = dict(files or {})
    for spec in _EXTERNAL_SPECS:
        name = f"external_benchmark_{spec.file}.csv"
        if name not in files:
            cols = ["id", "Model version", spec.score_column]
            cols += [c for c in (spec.source_column, spec.stderr_column, spec.n_items_column) if c]
            files[name] = (cols, [])
    for name, (header, rows) in files.items():
        _write(raw / name, header, rows)
    return raw


def _versions(*models: str, date: str = "2024-01-01") -> list[list[object]]:
    return [[m, m, date] for m in models]


def _gsm8k(rows: list[list[object]]) -> dict:
    return {"external_benchmark_gsm8k.csv": (["id", "Name", "EM", "Model version", "Source"], rows)}


def _four_gsm8k_models() -> list[list[object]]:
    """Runs placing models a..d on four benchmarks so min_benchmarks does not interfere."""
    tasks = ["GPQA diamond", "MATH level 5", "OTIS Mock AIME 2024-2025", "SWE-Bench verified"]
    return [
        [f"{m}{t}", task, m, 0.5, "choice:0.5±0.05", "Success"]
        for m in "ab"
        for t, task in enumerate(tasks)
    ]


def test_percent_text_percent_number_and_out_of_ten(tmp_path):
    files = {
        "external_benchmark_gsm8k.csv": (
            ["id", "Name", "EM", "Model version", "Source"],
            [["r1", "A", "85.2%", "a", "paper A"]],
        ),
        "external_benchmark_aider_polyglot.csv": (
            ["id", "Model version", "Percent correct", "Source"],
            [["r2", "a", 88.0, "aider"]],
        ),
        "external_benchmark_lech_mazur_writing.csv": (
            ["ID", "Model version", "Mean score", "Source"],
            [["r3", "a", 8.39, "writing"]],
        ),
        "external_benchmark_terminal_bench.csv": (
            ["id", "Model version", "Accuracy mean", "Accuracy SE", "Source"],
            [["r4", "a", "64.5%", "0.6%", "tb"]],
        ),
    }
    raw = make_raw(tmp_path, versions=_versions("a"), files=files)
    out = read_epoch_raw(raw).set_index("benchmark")
    assert out.loc["GSM8K", "score"] == pytest.approx(0.852, abs=1e-12)
    assert out.loc["Aider polyglot", "score"] == pytest.approx(0.88, abs=1e-12)
    assert out.loc["Lech Mazur Writing", "score"] == pytest.approx(0.839, abs=1e-12)
    assert out.loc["Terminal Bench", "score"] == pytest.approx(0.645, abs=1e-12)
    assert out.loc["Terminal Bench", "stderr"] == pytest.approx(0.006, abs=1e-12)
    assert np.isnan(out.loc["GSM8K", "stderr"])
    assert out.loc["GSM8K", "source"] == "paper A"


def test_row_exclusions_and_task_whitelist(tmp_path):
    runs = _four_gsm8k_models() + [
        ["p1", "FrontierMath-2025-02-28-Public", "a", 0.9, "verification_code:0.9±0.1", "Success"],
        ["p2", "GPQA diamond", "c", "", "", "Success"],  # no score: nothing to use
    ]
    gsm = [
        ["g1", "A", "50.0%", "a", "paper"],
        ["g2", "no version", "60.0%", "", "paper"],  # no model version: cannot be matched
        ["g3", "B", "70.0%", "b", ""],  # no source: skipped like the paper
        ["g4", "A", "", "a", "paper"],  # no score
    ]
    balrog = (
        ["id", "Model version", "Average progress", "Average Standard error", "Source"],
        [["b1", "b", "40.0%", "2.0%", ""]],  # Balrog's source is not read, so this row stays
    )
    files = _gsm8k(gsm) | {"external_benchmark_balrog.csv": balrog}
    raw = make_raw(tmp_path, runs=runs, versions=_versions("a", "b", "c"), files=files)
    out = read_epoch_raw(raw, min_benchmarks=1)
    pairs = set(map(tuple, out[KEYS].to_numpy()))
    assert ("a", "FrontierMath-2025-02-28-Public") not in pairs
    assert "c" not in set(out["model"])
    assert ("b", "GSM8K") not in pairs
    assert out.set_index(KEYS).loc[("a", "GSM8K"), "score"] == pytest.approx(0.5)
    balrog_row = out.set_index(KEYS).loc[("b", "Balrog")]
    assert balrog_row["score"] == pytest.approx(0.4)
    assert balrog_row["stderr"] == pytest.approx(0.02)
    assert pd.isna(balrog_row["source"])


def test_ignored_leaderboards_do_not_enter(tmp_path):
    files = {
        "external_benchmark_boolq.csv": (
            ["id", "Name", "Score", "Model version", "Source"],
            [["q", "A", "80.0%", "a", "paper"]],
        ),
        "external_benchmark_mcbench.csv": (
            ["Name", "Model version", "Win rate", "Source"],
            [["A", "a", "70.0%", "arena"]],
        ),
    }
    raw = make_raw(tmp_path, runs=_four_gsm8k_models(), versions=_versions("a", "b"), files=files)
    out = read_epoch_raw(raw)
    assert set(out["benchmark"]) == {
        "GPQA diamond",
        "MATH level 5",
        "OTIS Mock AIME 2024-2025",
        "SWE-Bench verified",
    }


def test_release_date_matching_and_cutoff(tmp_path):
    runs = [
        [f"{m}{i}", "GPQA diamond", m, 0.1 * (i + 1), f"choice:{0.1 * (i + 1):.1f}±0.01", "S"]
        for i, m in enumerate(["on_cutoff", "day_before", "undated", "unlisted"])
    ]
    versions = [
        ["on_cutoff", "x", "2022-11-01"],
        ["day_before", "x", "2022-10-31"],
        ["undated", "x", ""],
    ]
    raw = make_raw(tmp_path, runs=runs, versions=versions)
    out = read_epoch_raw(raw, min_benchmarks=1)
    assert out["model"].tolist() == ["on_cutoff"]
    assert out["model_release_date"].iloc[0] == pd.Timestamp("2022-11-01")
    everything = read_epoch_raw(raw, min_benchmarks=1, min_release_date=None)
    assert sorted(everything["model"]) == ["day_before", "on_cutoff", "undated", "unlisted"]
    dates = everything.set_index("model")["model_release_date"]
    assert pd.isna(dates["undated"]) and pd.isna(dates["unlisted"])


def test_duplicates_max_mean_error(tmp_path):
    runs = [
        ["r1", "GPQA diamond", "a", 0.60, "choice:0.6±0.03", "S"],
        ["r2", "GPQA diamond", "a", 0.70, "choice:0.7±0.04", "S"],
    ]
    gsm = [["g1", "A", "40.0%", "a", "first paper"], ["g2", "A", "50.0%", "a", "second paper"]]
    raw = make_raw(tmp_path, runs=runs, versions=_versions("a"), files=_gsm8k(gsm))
    best = read_epoch_raw(raw, min_benchmarks=1).set_index("benchmark")
    assert best.loc["GPQA diamond", "score"] == pytest.approx(0.70)
    assert best.loc["GPQA diamond", "stderr"] == pytest.approx(0.04)
    assert best.loc["GSM8K", "score"] == pytest.approx(0.50)
    assert best.loc["GSM8K", "source"] == "first paper"  # the first cited source is kept
    mean = read_epoch_raw(raw, min_benchmarks=1, duplicates="mean").set_index("benchmark")
    assert mean.loc["GPQA diamond", "score"] == pytest.approx(0.65)
    assert mean.loc["GPQA diamond", "stderr"] == pytest.approx(np.hypot(0.03, 0.04) / 2)
    assert mean.loc["GSM8K", "score"] == pytest.approx(0.45)
    assert np.isnan(mean.loc["GSM8K", "stderr"])
    with pytest.raises(ValueError, match="GPQA diamond|GSM8K"):
        read_epoch_raw(raw, min_benchmarks=1, duplicates="error")


def test_min_benchmarks_boundary_and_benchmark_dates(tmp_path):
    tasks = [
        "GPQA diamond",
        "MATH level 5",
        "OTIS Mock AIME 2024-2025",
        "FrontierMath-Tier-4-2025-07-01-Private",
    ]
    runs = [[f"a{i}", t, "four", 0.3, "x:0.3±0.01", "S"] for i, t in enumerate(tasks)]
    runs += [[f"b{i}", t, "three", 0.3, "x:0.3±0.01", "S"] for i, t in enumerate(tasks[:3])]
    info = [["GPQA diamond", "TRUE", "FALSE", "FALSE", "2023/11/20", "https://example.org"]]
    raw = make_raw(tmp_path, runs=runs, versions=_versions("four", "three"), info=info)
    out = read_epoch_raw(raw)
    assert set(out["model"]) == {"four"}
    dates = out.set_index("benchmark")["benchmark_release_date"]
    assert dates["GPQA diamond"] == pd.Timestamp("2023-11-20")
    assert pd.isna(dates["MATH level 5"])  # not listed in benchmark_optim.csv
    assert set(read_epoch_raw(raw, min_benchmarks=3)["model"]) == {"four", "three"}


# --------------------------------------------------------------------------- errors
def test_missing_directory(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match="nowhere.*benchmarks_runs.csv"):
        read_epoch_raw(missing)


@pytest.mark.parametrize(
    "name",
    [
        "benchmarks_runs.csv",
        "model_versions.csv",
        "external_benchmark_winogrande.csv",
    ],
)
def test_missing_required_file(tmp_path, name):
    raw = make_raw(tmp_path)
    (raw / name).unlink()
    with pytest.raises(FileNotFoundError, match=name.replace(".", r"\.")) as info:
        read_epoch_raw(raw)
    assert "external_benchmark_<name>.csv" in str(info.value)


def test_unparseable_score_names_file_row_value(tmp_path):
    gsm = [["g1", "A", "50.0%", "a", "p"], ["rec_bad", "B", "n/a%", "a", "p"]]
    raw = make_raw(tmp_path, versions=_versions("a"), files=_gsm8k(gsm))
    with pytest.raises(
        ValueError, match=r"external_benchmark_gsm8k\.csv.*data row 2.*rec_bad.*n/a"
    ):
        read_epoch_raw(raw)


def test_percent_column_without_percent_sign(tmp_path):
    raw = make_raw(tmp_path, versions=_versions("a"), files=_gsm8k([["g", "A", "0.85", "a", "p"]]))
    with pytest.raises(ValueError, match=r"gsm8k\.csv.*0\.85.*no '%' sign"):
        read_epoch_raw(raw)


@pytest.mark.parametrize(
    ("file", "header", "row", "pattern"),
    [
        (
            "external_benchmark_gsm8k.csv",
            ["id", "Name", "EM", "Model version", "Source"],
            ["g", "A", "8520%", "a", "p"],
            r"gsm8k\.csv.*8520%.*above 1",
        ),
        (
            "external_benchmark_aider_polyglot.csv",
            ["id", "Model version", "Percent correct", "Source"],
            ["g", "a", 188.0, "p"],
            r"aider_polyglot\.csv.*188.*above 1",
        ),
        (
            "external_benchmark_lech_mazur_writing.csv",
            ["ID", "Model version", "Mean score", "Source"],
            ["g", "a", 83.9, "p"],
            r"lech_mazur_writing\.csv.*83\.9.*above 1",
        ),
        (
            "external_benchmark_livebench.csv",
            ["id", "Model version", "Global average", "Source"],
            ["g", "a", -3.0, "p"],
            r"livebench\.csv.*negative",
        ),
    ],
)
def test_scores_on_the_wrong_scale_raise(tmp_path, file, header, row, pattern):
    raw = make_raw(tmp_path, versions=_versions("a"), files={file: (header, [row])})
    with pytest.raises(ValueError, match=pattern):
        read_epoch_raw(raw)


def test_epoch_run_percentages_raise(tmp_path):
    runs = [["run7", "GPQA diamond", "a", 85.0, "choice:85±2", "S"]]
    raw = make_raw(tmp_path, runs=runs, versions=_versions("a"))
    with pytest.raises(ValueError, match=r"benchmarks_runs\.csv.*run7.*looks like a percentage"):
        read_epoch_raw(raw)


def test_malformed_scorer_string(tmp_path):
    runs = [["run9", "GPQA diamond", "a", 0.5, "choice=0.5+-0.02", "S"]]
    raw = make_raw(tmp_path, runs=runs, versions=_versions("a"))
    with pytest.raises(ValueError, match=r"benchmarks_runs\.csv.*run9.*scorer:mean±stderr"):
        read_epoch_raw(raw)


def test_missing_score_column_lists_close_matches(tmp_path):
    files = {
        "external_benchmark_gsm8k.csv": (["id", "Name", "EM score", "Model version", "Source"], [])
    }
    raw = make_raw(tmp_path, files=files)
    with pytest.raises(ValueError, match=r"gsm8k\.csv.*'EM'.*EM score"):
        read_epoch_raw(raw)


def test_bad_release_date(tmp_path):
    raw = make_raw(tmp_path, versions=[["a", "A", "sometime in 2024"]])
    with pytest.raises(ValueError, match=r"model_versions\.csv.*sometime in 2024"):
        read_epoch_raw(raw)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"min_benchmarks": 0}, "min_benchmarks"),
        ({"min_benchmarks": 2.5}, "min_benchmarks"),
        ({"min_release_date": "not a date"}, "min_release_date"),
        ({"duplicates": "first"}, "duplicates"),
    ],
)
def test_bad_options(tmp_path, kwargs, pattern):
    raw = make_raw(tmp_path)
    with pytest.raises(ValueError, match=pattern):
        read_epoch_raw(raw, **kwargs)


# --------------------------------------------------------------------------- side tables
def _csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8-sig", newline="") as fh:
        return list(csv.DictReader(fh))


def test_benchmark_info(raw_dir):
    info = read_benchmark_info(raw_dir)
    rows = _csv_rows(raw_dir / "benchmark_optim.csv")
    assert len(info) == len(rows)
    for row in rows:
        got = info.loc[row["benchmark"].strip()]
        y, m, d = (int(x) for x in row["benchmark_release_date"].split("/"))
        assert got["benchmark_release_date"] == pd.Timestamp(y, m, d)
        for flag in ("optimized_for", "is_coding", "is_math"):
            assert bool(got[flag]) == (row[flag] == "TRUE")


def test_metr_horizons(raw_dir):
    horizons = read_metr_horizons(raw_dir)
    rows = _csv_rows(raw_dir / "external_benchmark_metr.csv")
    assert len(horizons) == len(rows)
    for row in rows:
        got = horizons.loc[row["Model version"]]
        assert got["horizon_minutes"] == float(row["Time horizon"])
        assert got["ci_low_minutes"] == float(row["CI_low"])
        assert got["ci_high_minutes"] == float(row["CI_high"])
    assert horizons.loc["gpt-4-0314", "release_date"] == pd.Timestamp("2023-03-14")
    assert (horizons["ci_low_minutes"] <= horizons["horizon_minutes"]).all()


def test_distilled_models(raw_dir):
    rows = _csv_rows(raw_dir / "distilled_models.csv")
    expected = {r["model"] for r in rows if r["distilled"] == "TRUE"}
    expected_high = {
        r["model"] for r in rows if r["distilled"] == "TRUE" and r["confidence"] == "high"
    }
    assert read_distilled_models(raw_dir) == expected
    assert read_distilled_models(raw_dir, min_confidence="high") == expected_high
    table = read_distilled_models(raw_dir, as_frame=True)
    assert len(table) == len(rows)
    assert table["distilled"].sum() == len(expected)


def test_model_compute(epoch_dir):
    compute = read_model_compute(epoch_dir / "model_compute.csv")
    rows = _csv_rows(epoch_dir / "model_compute.csv")
    assert len(compute) == len(rows) == 198
    for row in rows[:20]:
        got = compute.loc[row["model"]]
        assert got["training_compute_flop"] == float(row["training_compute_flop"])
        assert got["compute_confidence"] == row["compute_confidence"]
    assert (compute["training_compute_flop"] > 0).all()
    assert compute["release_date"].dtype.kind == "M"


def test_side_table_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="model_compute.csv"):
        read_model_compute(tmp_path / "model_compute.csv")
    bad = tmp_path / "model_compute.csv"
    _write(
        bad,
        ["model", "release_date", "organization", "training_compute_flop", "compute_confidence"],
        [["m", "2024-01-01", "Org", "-1e24", "Likely"]],
    )
    with pytest.raises(ValueError, match=r"model_compute\.csv.*-1e\+?24"):
        read_model_compute(bad)
    raw = make_raw(tmp_path)
    with pytest.raises(FileNotFoundError, match="external_benchmark_metr.csv"):
        read_metr_horizons(raw)
    _write(
        raw / "external_benchmark_metr.csv",
        ["id", "Model version", "CI_high", "CI_low", "Time horizon"],
        [["r", "a", 5.0, 20.0, 10.0]],
    )
    with pytest.raises(ValueError, match="swapped"):
        read_metr_horizons(raw)
    _write(
        raw / "distilled_models.csv", ["model", "distilled", "confidence"], [["a", "maybe", "low"]]
    )
    with pytest.raises(ValueError, match=r"distilled_models\.csv.*maybe"):
        read_distilled_models(raw)


def test_epoch_readers_have_one_home():
    import platinum_jax.importers as importers
    import platinum_jax.stitching as st

    for name in ("read_epoch_raw", "read_epoch_scores", "read_benchmark_info",
                 "read_metr_horizons", "read_distilled_models", "read_model_compute"):
        assert hasattr(importers, name) and not hasattr(st, name)
