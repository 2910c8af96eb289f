"""The main job: ``platinum-jax demo`` on the embedded synthetic world."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from platinum_jax.cli import build_parser, main
from platinum_jax.datasets import demo_world


def test_demo_writes_outputs_and_recovers_truth(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "Platinum items: 9 of 20" in printed
    items = pd.read_csv(tmp_path / "items.csv", index_col="item")
    truth = demo_world(0).items["platinum"]
    pd.testing.assert_series_equal(items["platinum"], truth, check_names=False)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["platinum_matches_truth"] and summary["comparative_statics_match_theory"]
    assert summary["welfare_optimal"] > summary["welfare_uniform_best_scale"]
    assert (tmp_path / "weights.png").stat().st_size > 10_000
    assert abs(items["optimal_share"].sum() - 1.0) < 1e-12


def test_help_teaches(capsys):
    parser = build_parser()
    text = parser.format_help()
    assert "demo" in text and "v* = (M + r Sigma)^-1 M w" in text


def test_bad_argument_is_reported_without_traceback(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--tau-w", "1.5"]) == 2
    assert "tau_w must lie in (0, 1)" in capsys.readouterr().err


def test_compilation_cache_setting(tmp_path, monkeypatch):
    import jax

    from platinum_jax import _runtime, enable_compilation_cache

    before = jax.config.jax_compilation_cache_dir
    min_time = jax.config.jax_persistent_cache_min_compile_time_secs
    monkeypatch.setattr(_runtime, "_EXECUTABLES", _runtime._EXECUTABLES)  # put back afterwards
    try:
        monkeypatch.setenv("PLATINUM_JAX_CACHE", "off")
        assert enable_compilation_cache() is None
        assert jax.config.jax_compilation_cache_dir == before
        target = tmp_path / "xla"
        assert enable_compilation_cache(target) == target
        assert target.is_dir() and jax.config.jax_compilation_cache_dir == str(target)
        blocker = tmp_path / "file"
        blocker.write_text("not a directory")
        with pytest.raises(ValueError, match="PLATINUM_JAX_CACHE"):
            enable_compilation_cache(blocker / "xla")
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", min_time)
