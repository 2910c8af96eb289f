"""The Epoch raw-directory reader on the published data, as both stitching commands use it:
an optional benchmark_optim.csv, the duplicate rule and --min-benchmarks as options, and a
message that says how to convert scores that are not fractions."""

from __future__ import annotations

import shutil
import warnings

import pandas as pd
import pytest

from platinum_jax.importers import EpochDataWarning, read_epoch_raw


@pytest.fixture()
def raw_copy(tmp_path, epoch_dir):
    """A scratch copy of the published raw/ directory (the original stays untouched)."""
    return shutil.copytree(epoch_dir / "raw", tmp_path / "raw")


def _quiet_read(raw, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EpochDataWarning)
        return read_epoch_raw(raw, **kw)


def test_missing_benchmark_dates_file_is_not_fatal(raw_copy):
    full = _quiet_read(raw_copy)
    (raw_copy / "benchmark_optim.csv").unlink()
    with pytest.warns(EpochDataWarning, match="benchmark_optim.csv is missing"):
        without = read_epoch_raw(raw_copy)
    assert without["benchmark_release_date"].isna().all()
    assert full["benchmark_release_date"].notna().any()
    cols = ["model", "benchmark", "score", "stderr"]
    pd.testing.assert_frame_equal(without[cols], full[cols])


def test_dropped_models_are_listed(epoch_dir):
    everything = _quiet_read(epoch_dir / "raw", min_benchmarks=1)
    per_model = everything.groupby("model")["benchmark"].nunique()
    expected = sorted(per_model.index[per_model < 4].astype(str))
    with pytest.warns(EpochDataWarning, match=f"{len(expected)} model\\(s\\) scored on fewer"):
        kept = read_epoch_raw(epoch_dir / "raw")
    assert kept.attrs["dropped_models"] == expected
    assert set(kept["model"]) == set(per_model.index[per_model >= 4])


def test_cli_takes_min_benchmarks_and_duplicates_for_a_directory(tmp_path, epoch_dir, capsys):
    from platinum_jax.cli import main

    raw = epoch_dir / "raw"
    loose = _quiet_read(raw, min_benchmarks=3, duplicates="mean")
    out = tmp_path / "out"
    argv = ["stitch", str(raw), "--min-benchmarks", "3", "--duplicates", "mean", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "fewer than 3 benchmarks were left out (min_benchmarks=3" in printed
    everything = _quiet_read(raw, min_benchmarks=1, duplicates="mean")
    per_model = everything.groupby("model")["benchmark"].nunique()
    listed = (out / "dropped_models.txt").read_text().splitlines()
    assert listed == sorted(per_model.index[per_model < 3].astype(str))
    caps = pd.read_csv(out / "capabilities.csv", index_col="model")
    assert set(caps.index) == set(loose["model"]) and len(caps) > 179
    assert main([*argv[:2], "--min-benchmarks", "0", "--out", str(out)]) == 2
    assert "--min-benchmarks must be at least 1" in capsys.readouterr().err


def test_scores_that_are_not_fractions_say_how_to_convert(raw_copy):
    path = raw_copy / "benchmarks_runs.csv"
    runs = pd.read_csv(path, dtype=str, keep_default_na=False)
    col = "Best score (across scorers)"
    runs.loc[0, col] = "85.2"  # a percentage in a column of fractions
    runs.to_csv(path, index=False)
    with pytest.raises(ValueError) as info:
        _quiet_read(raw_copy)
    message = str(info.value)
    assert "benchmarks_runs.csv" in message and repr(col) in message
    assert "divide every score by 100" in message
