"""Chunk stores as users meet them: a resume that cannot reuse a store refuses and leaves it
byte for byte as it was, a finished store opens with xarray as it is, and ``--no-dataset``
streams to the store alone."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest
import xarray as xr

import platinum_jax.sweeps._grid as grid
from platinum_jax.cli import main
from platinum_jax.datasets import demo_world
from platinum_jax.sweeps import (
    CostScale,
    NetCDFStore,
    Platinum,
    RiskAversion,
    UserOutput,
    Weights,
    Welfare,
    ZarrStore,
    sweep,
)

pytest.importorskip("zarr")

R, K = [0.5, 1.0, 2.0], [1.0, 1.5, 2.5, 4.0]  # 12 points, in 3 chunks (--chunk-size 5 spreads them 4 a chunk)
ARGV = ["sweep", "--r", "0.5,1,2", "--kappa", "1,1.5,2.5,4", "--chunk-size", "5", "--no-plots"]
STORE = {"nc": "chunks", "zarr": "chunks.zarr"}


@pytest.fixture(scope="module")
def world():
    jax.config.update("jax_enable_x64", True)
    return demo_world(seed=0)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


class Interrupted(Exception):
    pass


def _interrupted_cli_run(out: Path, fmt: str, monkeypatch, finished: int = 2) -> None:
    """A CLI run killed while computing chunk ``finished`` (chunks before it are stored)."""
    real, calls = grid._run_chunk, []

    def dies(*args, **kwargs):
        if len(calls) == finished:
            raise Interrupted
        calls.append(None)
        return real(*args, **kwargs)

    with monkeypatch.context() as mp:
        mp.setattr(grid, "_run_chunk", dies)
        with pytest.raises(Interrupted):
            main(ARGV + ["--store-format", fmt, "--out", str(out)])


def _as_grid(flat: xr.Dataset, dims=("r", "kappa")) -> xr.Dataset:
    """A store opened by xarray (outputs over ``point``) as the labelled grid."""
    flat = flat.drop_vars([n for n in ("done", "seal") if n in flat.variables])
    return flat.set_index(point=list(dims)).unstack("point")


def _open_store(path: Path, fmt: str) -> xr.Dataset:
    if fmt == "zarr":
        return xr.open_zarr(path, consolidated=False)
    return xr.concat([xr.open_dataset(f, engine="h5netcdf")
                      for f in sorted(path.glob("chunk_*.nc"))], dim="point")


@pytest.mark.parametrize(("first", "then"), [("nc", "zarr"), ("zarr", "nc")])
def test_resume_in_the_other_format_refuses_and_keeps_every_chunk(world, tmp_path, capsys,
                                                                  monkeypatch, first, then):
    out = tmp_path / "run"
    _interrupted_cli_run(out, first, monkeypatch)
    before = _snapshot(out)
    assert any(name.startswith(STORE[first]) for name in before)
    capsys.readouterr()
    assert main(ARGV + ["--store-format", then, "--resume", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--store-format {first} --resume" in err and "nothing was changed" in err
    assert "--overwrite instead of --resume" in err
    if first == "nc":
        assert "2 chunk file(s)" in err
    else:
        assert "2 finished chunk(s)" in err
    assert _snapshot(out) == before  # every byte of the earlier run is still there
    assert not (out / STORE[then]).exists()
    # The chunks are still good: resuming in their own format reuses both.
    assert main(ARGV + ["--store-format", first, "--resume", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["chunks_reused"] == 2 and summary["chunks_computed"] == 1


@pytest.mark.parametrize("fmt", ["nc", "zarr"])
def test_resume_with_other_axes_refuses_saying_what_differs(world, tmp_path, capsys,
                                                            monkeypatch, fmt):
    out = tmp_path / "run"
    _interrupted_cli_run(out, fmt, monkeypatch)
    before = _snapshot(out)
    capsys.readouterr()
    other = ["sweep", "--r", "0.5,1,2", "--kappa", "1,2", "--chunk-size", "5", "--no-plots"]
    assert main(other + ["--store-format", fmt, "--resume", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "different sweep" in err and "kappa[4], now" in err and "kappa[2]" in err
    assert "--overwrite instead of --resume" in err and "--out" in err
    assert _snapshot(out) == before


def test_a_store_object_of_the_other_format_never_writes_over_chunks(world, tmp_path):
    base, axes = world.primitives, [RiskAversion(R), CostScale(K)]
    nc, zr = tmp_path / "nc", tmp_path / "z.zarr"
    sweep(base, axes, chunk_size=5, store=nc, progress=False)
    sweep(base, axes, chunk_size=5, store=zr, progress=False)
    before_nc, before_zr = _snapshot(nc), _snapshot(zr)
    with pytest.raises(ValueError, match="holds a netCDF chunk store.*--store-format nc"):
        sweep(base, axes, chunk_size=5, store=ZarrStore(nc), resume=True, progress=False)
    with pytest.raises(ValueError, match="is a Zarr store.*--store-format zarr"):
        sweep(base, axes, chunk_size=5, store=NetCDFStore(zr), resume=True, progress=False)
    assert _snapshot(nc) == before_nc and _snapshot(zr) == before_zr
    # What differs is named: the values of an axis, the base primitives.
    with pytest.raises(ValueError, match=r"the values of axis r\)"):
        sweep(base, [RiskAversion([0.5, 1.0, 3.0]), CostScale(K)], chunk_size=5, store=nc,
              resume=True, progress=False)
    other = demo_world(seed=1).primitives
    with pytest.raises(ValueError, match="the base primitives"):
        sweep(other, axes, chunk_size=5, store=zr, resume=True, progress=False)
    assert _snapshot(nc) == before_nc and _snapshot(zr) == before_zr


@pytest.mark.parametrize("fmt", ["nc", "zarr"])
def test_a_finished_store_opens_with_xarray_as_it_is(world, tmp_path, fmt):
    base = world.primitives
    outputs = [Weights(), Welfare(), Platinum(0.3, 0.4, 2.0)]
    path = tmp_path / ("s.zarr" if fmt == "zarr" else "s")
    ds = sweep(base, [RiskAversion(R), CostScale(K)], outputs, chunk_size=5, store=path,
               items=world.item_names, progress=False)
    flat = _open_store(path, fmt)
    assert flat["v"].dims == ("point", "item") and flat["welfare"].dims == ("point",)
    assert flat.sizes["point"] == len(R) * len(K)
    assert list(flat["item"].values) == world.item_names
    if fmt == "zarr":
        assert bool(flat["done"].all())
    else:
        np.testing.assert_array_equal(flat["point"].values, np.arange(len(R) * len(K)))
    # Points run over the grid in C order, each with its own axis values.
    np.testing.assert_array_equal(flat["r"].values, np.repeat(R, len(K)))
    np.testing.assert_array_equal(flat["kappa"].values, np.tile(K, len(R)))
    opened = _as_grid(flat)
    for name in ("v", "welfare", "platinum"):
        np.testing.assert_array_equal(opened[name].transpose(*ds[name].dims).values,
                                      ds[name].values)
    assert opened["platinum"].dtype == bool
    # And independently of the sweep: v* = (M/κ + rΣ)⁻¹ (M/κ) w at (r, κ) = (2, 2.5).
    M, S, w = (np.asarray(x) for x in (base.M, base.Sigma, base.w))
    v = np.linalg.solve(M / 2.5 + 2.0 * S, M / 2.5 @ w)
    np.testing.assert_allclose(opened["v"].sel(r=2.0, kappa=2.5).values, v, atol=1e-10)


def test_store_names_are_reserved(world, tmp_path):
    out = UserOutput("done", lambda p: p.welfare)
    with pytest.raises(ValueError, match="'done' use.*keeps for itself.*rename"):
        sweep(world.primitives, [RiskAversion(R)], [out], store=tmp_path / "x.zarr",
              progress=False)


@pytest.mark.parametrize("fmt", ["nc", "zarr"])
def test_no_dataset_streams_to_the_store_only(world, tmp_path, capsys, fmt):
    ref = tmp_path / "ref"
    assert main(ARGV + ["--platinum", "--out", str(ref)]) == 0
    out = tmp_path / "lean"
    argv = ARGV[:-1] + ["--platinum", "--no-dataset", "--store-format", fmt, "--out", str(out)]
    capsys.readouterr()
    assert main(argv) == 0
    said = capsys.readouterr().out
    store = out / STORE[fmt]
    assert f"wrote {store} (the results, chunk store only)" in said
    assert not (out / "sweep.nc").exists()
    assert (out / "weight_heatmaps.png").exists()  # figures read the store
    summary = json.loads((out / "summary.json").read_text())
    assert summary["results"] == STORE[fmt] and summary["store_format"] == fmt
    assert "open_results" not in summary
    assert summary["chunks_computed"] == 3
    flat = _open_store(store, fmt)
    assert flat.sizes["point"] == len(R) * len(K)  # every point is in the store
    opened = _as_grid(flat)
    with xr.open_dataset(ref / "sweep.nc", engine="h5netcdf") as full:
        for name in ("v", "welfare", "effort_cost", "platinum"):
            np.testing.assert_array_equal(opened[name].transpose(*full[name].dims).values,
                                          full[name].values)
    ref_summary = json.loads((ref / "summary.json").read_text())
    assert ref_summary["results"] == "sweep.nc"
    # A resumed --no-dataset run reads nothing back and recomputes nothing.
    assert main(argv + ["--resume", "--no-plots"]) == 0
    assert json.loads((out / "summary.json").read_text())["chunks_reused"] == 3
