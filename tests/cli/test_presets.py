"""``stitch`` and ``stitch-bayes`` are the paper's views of ``fit``: one runner, one spelling
per job, the runner's output and precision policy for every command."""

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


def test_stitch_and_fit_model_rosetta_fit_one_model(tmp_path):
    """``stitch`` is the paper's view of ``fit --model rosetta``: the same capabilities."""
    data, truth = _scores(tmp_path / "scores.csv")
    assert main(["stitch", str(data), "--uncertainty", "laplace", "--rescale", "m0", "100",
                 "m13", "200", "--out", str(tmp_path / "a")]) == 0
    assert main(["fit", str(data), "--model", "rosetta", "--out", str(tmp_path / "b")]) == 0
    assert set(_files(tmp_path / "a")) == {"capabilities.csv", "benchmarks.csv",
                                           "residuals.csv", "fit.json"}
    caps = pd.read_csv(tmp_path / "a" / "capabilities.csv", index_col="model")
    subjects = pd.read_csv(tmp_path / "b" / "subjects.csv", index_col=0)
    np.testing.assert_allclose(subjects["capability"].loc[caps.index], caps["capability"],
                               atol=1e-6)
    # the fit recovers the synthetic ordering, and the rescaled ends read 100 and 200
    assert caps["capability"].loc[truth.index].rank().tolist() == truth.rank().tolist()
    np.testing.assert_allclose(caps.loc[["m0", "m13"], "capability_rescaled"], [100, 200],
                               atol=1e-9)
    assert (caps["sd"] > 0).all()


def test_one_spelling_per_job(tmp_path, capsys):
    """``fit --preset`` and ``stitch --bayes`` are gone; the paper's commands stay."""
    data, _ = _scores(tmp_path / "scores.csv")
    for argv in (["fit", str(data), "--preset", "stitch", "--out", "o"],
                 ["stitch", str(data), "--bayes", "--out", "o"]):
        with pytest.raises(SystemExit):
            main(argv)
        assert "unrecognized arguments" in capsys.readouterr().err


def test_a_command_that_fails_on_its_data_leaves_out_as_it_was(tmp_path, capsys):
    data, _ = _scores(tmp_path / "scores.csv")
    out = tmp_path / "out"
    assert main(["stitch", str(data), "--out", str(out)]) == 0
    before = _files(out)
    rc = main(["stitch", str(data), "--anchor-benchmark", "nope", "--overwrite",
               "--out", str(out)])
    assert rc == 2 and "nope" in capsys.readouterr().err
    assert _files(out) == before
    fresh = tmp_path / "never"
    assert main(["stitch", str(data), "--l2", "-1", "--out", str(fresh)]) == 2
    assert not fresh.exists()


def test_stitch_bayes_takes_the_model_s_sampler_settings():
    """The sampler settings have one home, the model's declaration: the command's options
    default to None, and the model's ``nuts_settings`` fill them."""
    from platinum_jax.inference import nuts_settings
    from platinum_jax.models import RosettaBayes

    args = vars(build_parser(["stitch-bayes"]).parse_args(["stitch-bayes", "d.csv", "--out",
                                                           "o"]))
    assert args["samples"] is None and args["warmup"] is None
    assert args["target_accept"] is None and args["mass_matrix"] is None
    settings = nuts_settings(RosettaBayes())
    assert {k: settings[k] for k in RosettaBayes.nuts_settings} == RosettaBayes.nuts_settings


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
