"""``platinum-jax sweep`` end to end: files written, numbers right, resume, input errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

from platinum_jax.cli import main
from platinum_jax.cli.sweep import parse_values
from platinum_jax.datasets import demo_world

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_parse_values_specs():
    np.testing.assert_allclose(parse_values("--r", "0.1:10:3:log"), [0.1, 1.0, 10.0])
    np.testing.assert_allclose(parse_values("--kappa", "0.5:4:8"), np.linspace(0.5, 4, 8))
    np.testing.assert_allclose(parse_values("--delta", "0,0.5, 2"), [0.0, 0.5, 2.0])
    with pytest.raises(ValueError, match="START:STOP:NUM"):
        parse_values("--r", "1:2")
    with pytest.raises(ValueError, match="log spacing needs START and STOP > 0"):
        parse_values("--r", "0:1:5:log")


def test_sweep_command_on_demo_world_and_resume(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["sweep", "--r", "0.5,1,2", "--kappa", "1:2:3", "--delta", "0:1:2", "--concept", "1",
            "--platinum", "--chunk-size", "5", "--out", str(out)]
    assert main(argv) == 0
    assert "fast path" in capsys.readouterr().out
    for name in ("weight_curves.png", "weight_heatmaps.png", "measurement_shift.png"):
        assert (out / name).read_bytes()[:8] == PNG_MAGIC
    summary = json.loads((out / "summary.json").read_text())
    assert summary["grid"] == {"r": 3, "kappa": 3, "delta": 2} and summary["path"] == "fast"
    assert summary["chunks_computed"] == 4  # 18 points in chunks of 5

    world = demo_world(seed=0)
    with xr.open_dataset(out / "sweep.nc", engine="h5netcdf") as ds:
        assert list(ds["item"].values) == world.item_names
        M, S, w = (np.asarray(x) for x in (world.primitives.M, world.primitives.Sigma,
                                            world.primitives.w))
        v = np.linalg.solve(M / 1.5 + 2.0 * S, M / 1.5 @ w)
        np.testing.assert_allclose(ds["v"].sel(r=2.0, kappa=1.5, delta=0.0).values, v, atol=1e-10)
        # The unperturbed point certifies exactly the items the world was built to make platinum.
        flags = ds["platinum"].sel(r=1.0, kappa=1.0, delta=0.0).values.astype(bool)
        np.testing.assert_array_equal(flags, world.items["platinum"].to_numpy())

    assert main(argv) == 2  # the store exists: the user must ask to resume
    assert "--resume" in capsys.readouterr().err
    assert main(argv + ["--resume", "--no-plots"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["chunks_computed"] == 0 and summary["chunks_reused"] == 4


def test_sweep_command_reads_primitives_files(tmp_path, capsys):
    rng = np.random.default_rng(5)
    A, X = rng.normal(size=(4, 5)), rng.normal(size=(4, 4))
    prims = dict(A=A, C=np.eye(5), Sigma=X @ X.T / 4 + np.eye(4), w=rng.uniform(size=4), r=1.0)
    np.savez(tmp_path / "p.npz", **prims)
    (tmp_path / "p.json").write_text(json.dumps({k: np.asarray(v).tolist() for k, v in prims.items()}))
    M = A @ A.T
    expected = np.linalg.solve(M + 0.5 * prims["Sigma"], M @ prims["w"])
    for name in ("p.npz", "p.json"):
        out = tmp_path / f"out_{name}"
        assert main(["sweep", "--primitives", str(tmp_path / name), "--r", "0.5,3",
                     "--summary-only", "--no-plots", "--out", str(out)]) == 0
        with xr.open_dataset(out / "sweep.nc", engine="h5netcdf") as ds:
            assert "v" not in ds and float(ds["v_max"].sel(r=0.5)) == pytest.approx(expected.max())
    assert main(["sweep", "--primitives", str(tmp_path / "nope.npz"), "--r", "1"]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text(json.dumps({"A": [[1.0]]}))
    assert main(["sweep", "--primitives", str(tmp_path / "bad.json"), "--r", "1"]) == 2
    assert "missing" in capsys.readouterr().err
    assert main(["sweep", "--r=-1,1", "--out", str(tmp_path / "neg")]) == 2
    assert "r must be >= 0" in capsys.readouterr().err
    assert main(["sweep", "--out", str(tmp_path / "none")]) == 2
    assert "no axis given" in capsys.readouterr().err
