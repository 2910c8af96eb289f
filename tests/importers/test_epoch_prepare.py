"""Tests of Epoch's preparation of the hub export (``read_epoch_raw(..., prepare="epoch")``).

On the shipped files the reader is held against a second implementation written here in plain
pandas straight from the raw CSVs (only the file -> column map is shared with the package);
every rule is also tested alone on tiny raw directories written by hand.
"""

from __future__ import annotations

import csv
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from platinum_jax.importers import read_epoch_raw, read_epoch_scores
from platinum_jax.importers._epoch_files import (
    _EXTERNAL_SPECS,
    EPOCH_RUN_BENCHMARKS,
    EXTERNAL_BENCHMARKS,
)
from platinum_jax.importers._epoch_prepare import SHIPPED_BASELINES

KEYS = ["model", "benchmark"]
DIVISOR = {"fraction": 1.0, "percent_text": 100.0, "percent_number": 100.0, "out_of_ten": 10.0}


def _epoch(raw, **kw) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_epoch_raw(raw, prepare="epoch", **kw)


def _clean(names: pd.Series) -> pd.Series:
    return names.astype("string").str.strip().str.replace(r"\s+", " ", regex=True)


def _independent(raw: Path) -> pd.DataFrame:
    """Epoch's rules, read afresh: every score row, normalised, grouped, cut, best kept."""
    base = pd.read_csv(SHIPPED_BASELINES).set_index("benchmark")
    rows = []
    runs = pd.read_csv(raw / "benchmarks_runs.csv", encoding="utf-8-sig")
    runs = runs[runs["task"].str.strip().isin(EPOCH_RUN_BENCHMARKS)]
    runs = runs.dropna(subset=["model", "Best score (across scorers)"])
    rows.append(pd.DataFrame({"version": _clean(runs["model"]), "benchmark": runs["task"].str.strip(),
                              "raw": runs["Best score (across scorers)"].astype(float)}))
    for spec in _EXTERNAL_SPECS:
        f = pd.read_csv(raw / f"external_benchmark_{spec.file}.csv", encoding="utf-8-sig")
        f.columns = [c.strip() for c in f.columns]
        f = f.dropna(subset=["Model version", spec.score_column])
        text = f[spec.score_column].astype(str).str.strip().str.rstrip("%")
        rows.append(pd.DataFrame({"version": _clean(f["Model version"]), "benchmark": spec.benchmark,
                                  "raw": text.astype(float) / DIVISOR[spec.scale]}))
    s = pd.concat(rows, ignore_index=True)
    s = s[s["benchmark"].map(base["in_eci"])]
    b, c = s["benchmark"].map(base["baseline"]), s["benchmark"].map(base["ceiling"])
    s["score"] = ((s["raw"] - b) / (c - b)).clip(0, 1)
    v = pd.read_csv(raw / "model_versions.csv", encoding="utf-8-sig")
    v = v.assign(version=_clean(v["id"]), name=_clean(v["Model"]),
                 date=pd.to_datetime(v["Version release date"].str.replace("/", "-")))
    v = v.dropna(subset=["version"]).drop_duplicates("version")
    # one group per (model, release date); a blank date is a release of its own
    day = v["date"].dt.strftime("%Y-%m-%d").fillna("date unknown")
    many = v.groupby("name")["date"].transform(lambda d: d.nunique(dropna=False)) > 1
    v["group"] = np.where(v["name"].isna(), v["version"],
                          np.where(many, v["name"] + " (" + day + ")", v["name"]))
    s = s.merge(v[["version", "group", "date"]], on="version")
    cut = {"before": sorted(set(s.loc[s["date"] < "2023-01-01", "group"])),
           "undated": sorted(set(s.loc[s["date"].isna(), "group"]))}
    s = s[s["date"] >= "2023-01-01"]
    keep = s.groupby("group")["benchmark"].nunique()
    s = s[s["group"].isin(keep[keep >= 4].index)]
    s = s.sort_values(["score", "version"], ascending=[False, True]).drop_duplicates(["group", "benchmark"])
    out = s.rename(columns={"group": "model"}).sort_values(KEYS).reset_index(drop=True)
    out.attrs.update(cut)
    return out


@pytest.fixture(scope="module")
def shipped(epoch_dir: Path) -> pd.DataFrame:
    return _epoch(epoch_dir / "raw")


def test_matches_an_independent_pandas_reading_of_the_shipped_files(shipped, epoch_dir):
    ref = _independent(epoch_dir / "raw")
    assert list(shipped[KEYS].itertuples(index=False)) == list(ref[KEYS].itertuples(index=False))
    np.testing.assert_allclose(shipped["score"], ref["score"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(shipped["raw_score"], ref["raw"], rtol=0, atol=1e-12)
    assert (shipped["model_version"].to_numpy() == ref["version"].to_numpy()).all()
    assert (shipped["model_release_date"].to_numpy() == ref["date"].to_numpy()).all()
    assert shipped["score"].between(0, 1).all()
    assert shipped.groupby("model")["benchmark"].nunique().min() >= 4
    assert (shipped["model_release_date"] >= "2023-01-01").all()
    # what the date cut left out is counted and named, as the independent reading finds it
    a = shipped.attrs
    assert a["released_before"] == ref.attrs["before"] and a["undated_models"] == ref.attrs["undated"]
    assert len(a["released_before"]) > 0
    assert any(n.startswith(f"{len(ref.attrs['before'])} model group(s) released before 2023-01-01 "
                            f"and {len(ref.attrs['undated'])} of unknown") for n in a["notes"])


def test_shipped_preparation_reports_what_it_did(shipped):
    a = shipped.attrs
    assert a["preparation"] == "epoch"
    assert a["clipped"]["below_baseline"] > 0 and a["clipped"]["above_ceiling"] == 0
    assert "SWE-Bench verified" in a["excluded_benchmarks"]
    assert a["model_groups"]["gpt-5-2025-08-07_high"] == a["model_groups"]["gpt-5-2025-08-07_low"]
    assert any("clipped to 0" in n for n in a["notes"])


def test_shipped_table_has_a_sourced_row_for_every_benchmark_read():
    t = pd.read_csv(SHIPPED_BASELINES).set_index("benchmark")
    assert set(t.index) == set(EPOCH_RUN_BENCHMARKS) | set(EXTERNAL_BENCHMARKS)
    assert t["source"].str.len().min() > 10
    assert (t["baseline"] < t["ceiling"]).all()
    assert t.loc["MMLU", "baseline"] == 0.25 and t.loc["Winogrande", "baseline"] == 0.5
    assert t.loc["ANLI", "baseline"] == pytest.approx(1 / 3, abs=1e-15)


# --------------------------------------------------------------------------- tiny raw dirs
RUN_HEADER = ["id", "task", "model", "Best score (across scorers)", "Scores"]
TASKS = ("GPQA diamond", "MATH level 5", "OTIS Mock AIME 2024-2025",
         "FrontierMath-2025-02-28-Private")


def _write(path: Path, header, rows) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def _raw(root: Path, runs, versions) -> Path:
    """A raw/ directory with the given runs and versions, every leaderboard present but empty."""
    raw = root / "raw"
    raw.mkdir()
    _write(raw / "benchmarks_runs.csv", RUN_HEADER,
           [[f"r{i}", t, m, s, f"x:{s}±0.01"] for i, (t, m, s) in enumerate(runs)])
    _write(raw / "model_versions.csv", ["id", "Model", "Version release date"], versions)
    for spec in _EXTERNAL_SPECS:
        cols = ["Model version", spec.score_column]
        cols += [c for c in (spec.source_column, spec.stderr_column, spec.n_items_column) if c]
        _write(raw / f"external_benchmark_{spec.file}.csv", cols, [])
    return raw


def _table(root: Path, rows, name="mine.csv") -> Path:
    path = root / name
    _write(path, ["benchmark", "baseline", "ceiling", "superseded_by", "in_eci", "source"], rows)
    return path


def _four(model: str, scores=(0.5, 0.5, 0.5, 0.5)):
    return [(t, model, s) for t, s in zip(TASKS, scores, strict=True)]


def test_normalisation_and_clip_are_counted(tmp_path):
    raw = _raw(tmp_path, _four("a", (0.625, 0.5, 0.5, 0.5)) + _four("b", (0.1, 0.5, 0.5, 0.5))
               + _four("c", (0.9, 0.5, 0.5, 0.5)),
               [["a", "A", "2024-01-01"], ["b", "B", "2024-01-01"], ["c", "C", "2024-01-01"]])
    out = _epoch(raw).set_index(KEYS)
    assert out.loc[("A", "GPQA diamond"), "score"] == pytest.approx(0.5, abs=1e-15)  # (.625-.25)/.75
    assert out.loc[("B", "GPQA diamond"), "score"] == 0.0  # below chance: clipped
    assert out.loc[("B", "GPQA diamond"), "raw_score"] == 0.1
    assert out.loc[("A", "OTIS Mock AIME 2024-2025"), "score"] == pytest.approx(0.499 / 0.999)
    assert out.attrs["clipped"] == {"below_baseline": 1, "above_ceiling": 0}
    rows = [[t, 0.0, 0.8, "", "TRUE", "test"] for t in TASKS]
    out = _epoch(raw, baselines=_table(tmp_path, rows)).set_index(KEYS)
    assert out.loc[("A", "GPQA diamond"), "score"] == pytest.approx(0.625 / 0.8)
    assert out.loc[("C", "GPQA diamond"), "score"] == 1.0  # above the ceiling: clipped
    assert out.loc[("A", "MATH level 5"), "score"] == pytest.approx(0.625)
    assert out.attrs["clipped"] == {"below_baseline": 0, "above_ceiling": 1}


def test_versions_of_one_release_form_one_group_with_its_best_score(tmp_path):
    runs = (_four("o-low", (0.4, 0.2, 0.2, 0.2)) + _four("o-high", (0.7, 0.1, 0.3, 0.2))
            + _four("c-jun") + _four("c-oct") + _four("lone"))
    versions = [["o-low", "O", "2024-04-16"], ["o-high", "O", "2024-04-16"],
                ["c-jun", "C", "2024-06-20"], ["c-oct", "C", "2024-10-22"], ["lone", "", "2024-01-01"]]
    out = _epoch(_raw(tmp_path, runs, versions))
    assert sorted(out["model"].unique()) == ["C (2024-06-20)", "C (2024-10-22)", "O", "lone"]
    o = out[out["model"] == "O"].set_index("benchmark")
    assert o.loc["GPQA diamond", "model_version"] == "o-high"
    assert o.loc["GPQA diamond", "score"] == pytest.approx((0.7 - 0.25) / 0.75)
    assert o.loc["MATH level 5", "model_version"] == "o-low"
    assert o.loc["MATH level 5", "score"] == pytest.approx(0.2)
    assert out.attrs["model_groups"]["o-low"] == "O"


def test_an_undated_version_is_not_merged_into_a_dated_release(tmp_path):
    runs = _four("x1") + _four("x0")
    out = _epoch(_raw(tmp_path, runs, [["x1", "X", "2024-01-01"], ["x0", "X", ""]]),
                 min_release_date=None)
    assert sorted(out["model"].unique()) == ["X (2024-01-01)", "X (date unknown)"]


def test_a_version_id_spelling_another_models_name_is_refused(tmp_path):
    raw = _raw(tmp_path, _four("a"), [["a", "Twin", "2024-01-01"], ["Twin", "", "2024-05-01"]])
    with pytest.raises(ValueError, match=r"group name\(s\) \['Twin'\] stand for more than one"):
        _epoch(raw)


def test_date_cut_drops_groups_before_2023_and_undated(tmp_path):
    runs = _four("new") + _four("edge") + _four("old") + _four("undated") + _four("stranger")
    versions = [["new", "N", "2024-01-01"], ["edge", "E", "2023-01-01"],
                ["old", "Old", "2022-12-31"], ["undated", "U", ""]]
    out = _epoch(_raw(tmp_path, runs, versions))
    assert sorted(out["model"].unique()) == ["E", "N"]
    assert any("missing from model_versions.csv" in n for n in out.attrs["notes"])
    assert sorted(_epoch(tmp_path / "raw", min_release_date=None)["model"].unique()) == \
        ["E", "N", "Old", "U"]


def test_supersession_drops_the_replaced_benchmark_only_where_both_exist(tmp_path):
    runs = _four("a") + [("GPQA diamond", "b", 0.5), ("MATH level 5", "b", 0.5),
                         ("OTIS Mock AIME 2024-2025", "b", 0.5)]
    versions = [["a", "A", "2024-01-01"], ["b", "B", "2024-01-01"]]
    table = _table(tmp_path, [["GPQA diamond", 0.25, 1, "", "TRUE", "t"],
                              ["MATH level 5", 0, 1, "", "TRUE", "t"],
                              ["OTIS Mock AIME 2024-2025", 0, 1, "", "TRUE", "t"],
                              ["FrontierMath-2025-02-28-Private", 0, 1, "MATH level 5", "TRUE", "t"]])
    out = _epoch(_raw(tmp_path, runs, versions), baselines=table, min_benchmarks=3)
    a = set(out.loc[out["model"] == "A", "benchmark"])
    assert "FrontierMath-2025-02-28-Private" not in a and "MATH level 5" in a
    # B has no score on the replacement, so it keeps the replaced benchmark
    assert set(out.loc[out["model"] == "B", "benchmark"]) == set(TASKS[:3])


def test_minimum_counts_benchmarks_after_the_other_rules(tmp_path):
    runs = _four("a") + _four("b")[:3] + [("SWE-Bench verified", "b", 0.4)]
    versions = [["a", "A", "2024-01-01"], ["b", "B", "2024-01-01"]]
    out = _epoch(_raw(tmp_path, runs, versions))
    # SWE-Bench verified is outside Epoch's index, so B keeps three benchmarks: too few
    assert set(out["model"]) == {"A"} and out.attrs["dropped_models"] == ["B"]
    assert set(_epoch(tmp_path / "raw", min_benchmarks=3)["model"]) == {"A", "B"}


def test_score_table_and_option_errors(tmp_path):
    raw = _raw(tmp_path, _four("a"), [["a", "A", "2024-01-01"]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = read_epoch_scores(raw, prepare="epoch")
    assert table.n_models == 1 and table.n_benchmarks == 4
    with pytest.raises(ValueError, match="duplicates='mean' applies to prepare='paper'"):
        read_epoch_raw(raw, prepare="epoch", duplicates="mean")
    with pytest.raises(ValueError, match="baselines apply to prepare='epoch'"):
        read_epoch_raw(raw, baselines=SHIPPED_BASELINES)
    with pytest.raises(ValueError, match="prepare must be"):
        read_epoch_raw(raw, prepare="fancy")


@pytest.mark.parametrize("rows, pattern", [
    ([["GPQA diamond", 0.5, 0.5, "", "TRUE", "t"]], r"0 <= baseline < ceiling"),
    ([["GPQA diamond", "", 1, "", "TRUE", "t"]], r"baseline of 'GPQA diamond' is .*finite"),
    ([["GPQA diamond", 0.25, "high", "", "TRUE", "t"]], r"ceiling of 'GPQA diamond'"),
    ([["GPQA diamond", 0.25, 1.5, "", "TRUE", "t"]], r"ceiling <= 1"),
    ([["GPQA diamond", 0.25, 1, "", "maybe", "t"]], r"in_eci of 'GPQA diamond'"),
    ([["GPQA diamond", 0.25, 1, "GPQA v2", "TRUE", "t"]], r"superseded_by 'GPQA v2'"),
    ([["GPQA diamond", 0.25, 1, "", "TRUE", "t"]] * 2, r"more than once"),
    ([["GPQA diamond", 0.25, 1, "", "TRUE", "t"], ["Chess", 0, 1, "", "TRUE", "t"]],
     r"unknown benchmark\(s\) \['Chess'\]"),
    ([["GPQA diamond", 0.25, 1, "", "TRUE", "t"]],
     r"no baseline for benchmark\(s\) \['FrontierMath-2025-02-28-Private'.*--baselines FILE"),
])
def test_bad_baseline_tables_are_named(tmp_path, rows, pattern):
    raw = _raw(tmp_path, _four("a"), [["a", "A", "2024-01-01"]])
    with pytest.raises(ValueError, match=pattern):
        _epoch(raw, baselines=_table(tmp_path, rows))


def test_missing_baseline_file(tmp_path):
    raw = _raw(tmp_path, _four("a"), [["a", "A", "2024-01-01"]])
    with pytest.raises(FileNotFoundError, match="baseline table"):
        _epoch(raw, baselines=tmp_path / "nope.csv")
