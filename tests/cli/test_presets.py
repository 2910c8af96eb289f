"""``stitch`` and ``stitch-bayes`` are presets of ``fit``'s one runner: the same options, the
same files, and the runner's output and precision policy for every preset."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from platinum_jax._outputs import LOCK, MANIFEST
from platinum_jax.cli import build_parser, main
from platinum_jax.cli._runner import Preset, run


def _scores(path: Path, n_models: int = 14, seed: int = 0) -> tuple[Path, pd.Series]:
    """A tidy score CSV from score = sigmoid(alpha_b (C_m - D_b)) + small noise; the true C_m."""
    rng = np.random.default_rng(seed)
    benchmarks = ["Winogrande", "b1", "b2", "b3", "b4"]
    capability = pd.Series(np.linspace(-1.5, 1.5, n_models),
                           index=[f"m{k}" for k in range(n_models)])
    difficulty = np.array([0.0, -0.8, 0.3, 0.9, -0.2])
    slope = np.array([1.0, 1.4, 0.8, 1.2, 2.0])
    rows = [(m, b, float(np.clip(1 / (1 + np.exp(-a * (c - d))) + rng.normal(0, 0.01), 0, 1)))
            for m, c in capability.items() for b, d, a in zip(benchmarks, difficulty, slope,
                                                              strict=True)]
    pd.DataFrame(rows, columns=["model", "benchmark", "score"]).to_csv(path, index=False)
    return path, capability


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())
            if p.name not in (LOCK, MANIFEST)}


def test_fit_preset_stitch_writes_the_files_of_stitch_byte_for_byte(tmp_path):
    data, truth = _scores(tmp_path / "scores.csv")
    common = [str(data), "--uncertainty", "laplace", "--rescale", "m0", "100", "m13", "200"]
    assert main(["stitch", *common, "--out", str(tmp_path / "a")]) == 0
    assert main(["fit", *common, "--preset", "stitch", "--out", str(tmp_path / "b")]) == 0
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert set(a) == {"capabilities.csv", "benchmarks.csv", "residuals.csv", "fit.json"}
    assert a == b
    caps = pd.read_csv(tmp_path / "b" / "capabilities.csv", index_col="model")
    # the fit recovers the synthetic ordering, and the rescaled ends read 100 and 200
    assert caps["capability"].loc[truth.index].rank().tolist() == truth.rank().tolist()
    np.testing.assert_allclose(caps.loc[["m0", "m13"], "capability_rescaled"], [100, 200],
                               atol=1e-9)
    assert (caps["sd"] > 0).all()


def test_an_out_written_by_one_spelling_is_overwritten_by_the_other(tmp_path, capsys):
    data, _ = _scores(tmp_path / "scores.csv")
    out = tmp_path / "out"
    assert main(["stitch", str(data), "--out", str(out)]) == 0
    assert main(["fit", str(data), "--preset", "stitch", "--l2", "0.5", "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["fit", str(data), "--preset", "stitch", "--l2", "0.5", "--overwrite",
                 "--out", str(out)]) == 0
    assert '"l2": 0.5' in (out / "fit.json").read_text()


def test_a_preset_that_fails_on_its_data_leaves_out_as_it_was(tmp_path, capsys):
    data, _ = _scores(tmp_path / "scores.csv")
    out = tmp_path / "out"
    assert main(["stitch", str(data), "--out", str(out)]) == 0
    before = _files(out)
    rc = main(["fit", str(data), "--preset", "stitch", "--anchor-benchmark", "nope",
               "--overwrite", "--out", str(out)])
    assert rc == 2 and "nope" in capsys.readouterr().err
    assert _files(out) == before
    fresh = tmp_path / "never"
    assert main(["fit", str(data), "--preset", "stitch", "--l2", "-1", "--out", str(fresh)]) == 2
    assert not fresh.exists()


def _parsed(argv: list[str]) -> dict:
    args = vars(build_parser([argv[0]], argv).parse_args(argv))
    return {k: v for k, v in args.items() if k not in ("func", "command", "preset")}


@pytest.mark.parametrize("name", ["stitch", "stitch-bayes"])
def test_fit_preset_takes_the_options_and_defaults_of_the_command(name):
    tail = ["d.csv", "--out", "o", "--chains", "2", "--anchor-slope", "2"]
    direct = _parsed([name, *tail])
    via_fit = _parsed(["fit", *tail, "--preset", name])
    assert via_fit == direct
    if name == "stitch-bayes":  # its own defaults, not fit's (500 draws, 0.9)
        assert (direct["samples"], direct["target_accept"]) == (1500, 0.99)


def test_the_preset_is_found_in_either_spelling_and_before_a_double_dash():
    from platinum_jax.cli._runner import preset_in

    assert preset_in(["fit", "d.csv", "--preset", "stitch"]) == "stitch"
    assert preset_in(["fit", "--preset=stitch-bayes", "d.csv"]) == "stitch-bayes"
    assert preset_in(["fit", "d.csv", "--model", "2pl"]) is None
    assert preset_in(["fit", "--", "--preset", "stitch"]) is None
    assert preset_in(["fit", "--preset", "bogus"]) is None  # the parser names it


def test_fit_preset_refuses_the_options_of_fit_and_unknown_presets(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["fit", "d.csv", "--preset", "stitch", "--model", "2pl", "--out", "o"])
    assert "--model" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fit", "d.csv", "--preset", "bogus", "--out", "o"])
    assert "bogus" in capsys.readouterr().err


def _preset(**hooks) -> Preset:
    base = dict(name="toy", help="", description="", epilog="", add_arguments=lambda p: None,
                load=lambda path, args: Path(path).read_text(),
                prepare=lambda args, table: table, fit=lambda args, plan: plan.upper(),
                write=lambda result, out, args: [out.write_text("result.txt", result)])
    return Preset(**(base | hooks))


def test_the_runner_fits_in_float64_and_writes_all_or_nothing(tmp_path):
    import jax
    import jax.numpy as jnp

    data = tmp_path / "in.txt"
    data.write_text("abc")
    out = tmp_path / "out"
    args = argparse.Namespace(data=str(data), out=str(out), overwrite=False)
    seen = {}

    def fit(args, plan):
        seen["dtype"] = jnp.asarray(1.0).dtype
        return plan.upper()

    previous = jax.config.jax_enable_x64
    try:
        assert run(_preset(fit=fit), args) == 0
        assert seen["dtype"] == jnp.float64
    finally:
        jax.config.update("jax_enable_x64", previous)
    assert (out / "result.txt").read_text() == "ABC"

    def broken_write(result, out_dir, args):
        out_dir.write_text("result.txt", "half")
        raise RuntimeError("the writer failed")

    args.overwrite = True
    with pytest.raises(RuntimeError, match="writer failed"):
        run(_preset(write=broken_write), args)
    assert (out / "result.txt").read_text() == "ABC"  # the earlier run's file, untouched
    claimed = []

    def prepare(args, table):
        claimed.append((tmp_path / "fresh").exists())
        raise ValueError("bad data")

    args.out = str(tmp_path / "fresh")
    with pytest.raises(ValueError, match="bad data"):
        run(_preset(prepare=prepare), args)
    assert claimed == [False] and not (tmp_path / "fresh").exists()
