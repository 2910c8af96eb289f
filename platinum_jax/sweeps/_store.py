"""On-disk chunk stores that let an interrupted sweep resume without recomputing finished chunks.

A store records a fingerprint of the sweep (base primitives, axes, outputs, chunk size) and each
finished chunk of results.  A chunk counts as finished only once it is completely written
(netCDF: atomic rename of the chunk file; Zarr: a per-chunk ``done`` flag set after the data),
so a crash mid-write leaves that chunk to be recomputed, never half-read.

Both formats hold every output flat, as ``(grid point, *trailing)`` in the C order of the grid;
``platinum_jax.sweeps._lazy`` reads a finished store back as the labelled grid without loading it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from platinum_jax._extras import require

__all__ = ["ChunkStore", "NetCDFStore", "ZarrStore", "as_store"]

_MANIFEST = "manifest.json"


class ChunkStore:
    """Interface: ``open(...)`` once, then ``finished()``, ``write(k, arrays)``, ``read(k)``.

    ``read(k, names)`` returns ``{name: (points in chunk k, *trailing)}`` for the outputs in
    ``names`` (all when None).
    """

    path: Path

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def open(self, fingerprint: str, spec: dict[str, tuple[tuple[int, ...], str]],
             n_points: int, chunk_size: int, resume: bool) -> None:
        raise NotImplementedError

    def finished(self) -> set[int]:
        raise NotImplementedError

    def write(self, k: int, arrays: dict[str, np.ndarray]) -> None:
        raise NotImplementedError

    def read(self, k: int, names=None) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _stored_meta(self) -> dict | None:
        manifest = self.path / _MANIFEST
        return json.loads(manifest.read_text()) if manifest.exists() else None

    def _check_manifest(self, fingerprint: str, resume: bool, has_data: bool) -> None:
        meta = self._stored_meta()
        if meta is not None:
            if meta["fingerprint"] != fingerprint:
                raise ValueError(
                    f"store {self.path} holds chunks of a different sweep (other primitives, "
                    "axes, outputs or chunk size); use a new directory or delete this one"
                )
            if has_data and not resume:
                raise ValueError(
                    f"store {self.path} already holds chunks of this sweep; pass resume=True "
                    "(CLI: --resume) to continue it, or use a new directory"
                )

    def _write_manifest(self, fingerprint: str, n_points: int, chunk_size: int) -> None:
        doc = {"fingerprint": fingerprint, "n_points": n_points, "chunk_size": chunk_size,
               "format": type(self).__name__}
        (self.path / _MANIFEST).write_text(json.dumps(doc, indent=1))


class NetCDFStore(ChunkStore):
    """A directory with ``manifest.json`` and one ``chunk_XXXXXX.nc`` file (h5netcdf) per chunk."""

    def _chunk_path(self, k: int) -> Path:
        return self.path / f"chunk_{k:06d}.nc"

    def open(self, fingerprint, spec, n_points, chunk_size, resume):
        has_data = self.path.is_dir() and any(self.path.glob("chunk_*.nc"))
        self._check_manifest(fingerprint, resume, has_data)
        self.path.mkdir(parents=True, exist_ok=True)
        self._write_manifest(fingerprint, n_points, chunk_size)

    def finished(self):
        return {int(p.stem.split("_")[1]) for p in self.path.glob("chunk_*.nc")}

    def write(self, k, arrays):
        import xarray as xr

        data = {name: ((("point",) + tuple(f"{name}_{i}" for i in range(a.ndim - 1))), a)
                for name, a in arrays.items()}
        tmp = self.path / f".chunk_{k:06d}.nc.partial"
        xr.Dataset(data).to_netcdf(tmp, engine="h5netcdf")
        os.replace(tmp, self._chunk_path(k))  # atomic: a chunk file is either complete or absent

    def read(self, k, names=None):
        import xarray as xr

        with xr.open_dataset(self._chunk_path(k), engine="h5netcdf") as ds:
            return {name: ds[name].values for name in (ds.data_vars if names is None else names)}


class ZarrStore(ChunkStore):
    """One Zarr group: an array per output with leading dimension = grid points, chunked like
    the sweep, plus a ``done`` flag per chunk."""

    def open(self, fingerprint, spec, n_points, chunk_size, resume):
        zarr = require("zarr", "zarr", "a Zarr sweep store (a store path ending in .zarr)")

        n_chunks = -(-n_points // chunk_size)
        meta = self._stored_meta()
        group = None if meta is None else zarr.open_group(str(self.path), mode="r+")
        # Only finished chunks count as data: a store created by a run that stopped before its
        # first chunk was done holds nothing to protect, so a plain rerun continues it.
        has_data = group is not None and bool(np.any(group["done"][:]))
        self._check_manifest(fingerprint, resume, has_data)
        if group is not None:
            self._group = group
            self._chunk_size = int(meta["chunk_size"])
            return
        group = zarr.open_group(str(self.path), mode="w")
        for name, (shape, dtype) in spec.items():
            group.create_array(name, shape=(n_points, *shape), chunks=(chunk_size, *shape),
                               dtype=dtype)
        group.create_array("done", shape=(n_chunks,), chunks=(n_chunks,), dtype=bool,
                           fill_value=False)
        self._group = group
        self._chunk_size = chunk_size
        # Written last: a store whose manifest exists has all its arrays.
        group.attrs["sweep"] = {"fingerprint": fingerprint, "n_points": n_points,
                                "chunk_size": chunk_size, "format": "ZarrStore"}

    def _stored_meta(self):
        if not (self.path / "zarr.json").exists():
            return None
        zarr = require("zarr", "zarr", "a Zarr sweep store (a store path ending in .zarr)")

        return dict(zarr.open_group(str(self.path), mode="r").attrs.get("sweep", {})) or None

    def _cs(self) -> int:
        return self._chunk_size

    def finished(self):
        return {int(k) for k in np.flatnonzero(self._group["done"][:])}

    def write(self, k, arrays):
        cs = self._cs()
        for name, a in arrays.items():
            self._group[name][k * cs: k * cs + a.shape[0]] = a
        self._group["done"][k] = True  # set last: the chunk counts only once its data are in

    def read(self, k, names=None):
        cs = self._cs()
        names = [n for n, _ in self._group.arrays() if n != "done"] if names is None else names
        return {name: np.asarray(self._group[name][k * cs: (k + 1) * cs]) for name in names}


def as_store(store: ChunkStore | str | os.PathLike | None) -> ChunkStore | None:
    """``None`` → no store; a path ending in ``.zarr`` → :class:`ZarrStore`; other paths →
    :class:`NetCDFStore`; a store object is returned as is."""
    if store is None or isinstance(store, ChunkStore):
        return store
    if isinstance(store, str | os.PathLike):
        path = Path(store)
        return ZarrStore(path) if path.suffix == ".zarr" else NetCDFStore(path)
    raise ValueError(f"store must be a directory path, a NetCDFStore or a ZarrStore, got {store!r}")
