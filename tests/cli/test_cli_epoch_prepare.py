"""``--prepare epoch`` on the command line: stitch, analyze eci and import epoch read an Epoch
directory by the rules of Epoch's Capabilities Index, and say what they left out."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from platinum_jax.cli import main

EPOCH_RAW = Path(__file__).resolve().parents[3] / "shared" / "data" / "epoch-benchmark-stitching" / "raw"
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_stitch_scale_eci_on_a_directory_fits_epochs_preparation(tmp_path, capsys):
    out = tmp_path / "fit"
    assert main(["stitch", str(EPOCH_RAW), "--scale", "eci", "--eci-replicates", "0",
                 "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "preparation: epoch" in said and "clipped to 0" in said
    info = json.loads((out / "fit.json").read_text())
    assert info["prepare"] == "epoch" and info["epoch_clipped"]["below_baseline"] > 0
    caps = pd.read_csv(out / "capabilities.csv", index_col=0)
    # the default anchors (model versions) stand for the groups of their releases
    assert caps.loc[["Claude 3.5 Sonnet (2024-06-20)", "GPT-5 (2025-08-07)"], "eci"].tolist() == \
        pytest.approx([130.0, 150.0])
    assert "gpt-5-2025-08-07_high" not in caps.index  # one model per release
    assert (out / "dropped_models.txt").is_file()


def test_option_errors(tmp_path, capsys, scores_long_csv):
    assert main(["stitch", str(scores_long_csv), "--prepare", "epoch",
                 "--out", str(tmp_path / "a")]) == 2
    assert "need an Epoch raw/ directory" in capsys.readouterr().err
    assert main(["stitch", str(EPOCH_RAW), "--baselines", str(tmp_path / "b.csv"),
                 "--out", str(tmp_path / "b")]) == 2
    assert "--baselines applies to --prepare epoch" in capsys.readouterr().err
    table = tmp_path / "mine.csv"
    table.write_text("benchmark,baseline,ceiling,source\nMMLU,0.25,1,4-option\n")
    assert main(["stitch", str(EPOCH_RAW), "--prepare", "epoch", "--baselines", str(table),
                 "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "error: mine.csv has no baseline for benchmark(s)" in err
    assert not (tmp_path / "c" / "capabilities.csv").exists()


def test_analyze_eci_and_import_read_a_directory_without_benchmark_dates(tmp_path, capsys):
    raw = tmp_path / "raw"
    raw.mkdir()
    for f in EPOCH_RAW.glob("*.csv"):
        if f.name != "benchmark_optim.csv":
            (raw / f.name).symlink_to(f)
    assert main(["analyze", "eci", str(raw), "--eci-replicates", "0",
                 "--out", str(tmp_path / "eci")]) == 0
    said = capsys.readouterr().out
    assert "note: benchmark_optim.csv is missing" in said and "preparation: epoch" in said
    eci = pd.read_csv(tmp_path / "eci" / "eci.csv", index_col=0)
    assert eci.loc["GPT-5 (2025-08-07)", "eci"] == pytest.approx(150.0)
    for prepare in ("paper", "epoch"):
        target = tmp_path / f"{prepare}.csv"
        assert main(["import", "epoch", str(raw), "--prepare", prepare, "--out", str(target)]) == 0
        assert "note: benchmark_optim.csv is missing" in capsys.readouterr().out
    epoch = pd.read_csv(tmp_path / "epoch.csv")
    assert epoch["response"].between(0, 1).all() and "GPT-5 (2025-08-07)" in set(epoch["subject"])
    gone = pd.read_csv(tmp_path / "epoch.missing.csv")
    assert "SWE-Bench verified" in set(gone.loc[gone["reason"].str.contains("outside"), "item"])
