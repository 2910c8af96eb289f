"""On-disk chunk stores that let an interrupted sweep resume without recomputing finished chunks.

A store records a fingerprint of the sweep (base primitives, axes, outputs, chunk size) and each
finished chunk of results.  A chunk counts as finished only once it is completely written
(netCDF: atomic rename of the chunk file; Zarr: a per-chunk ``done`` flag set after the data),
so a crash mid-write leaves that chunk to be recomputed, never half-read.

Every chunk also carries its own seal: the sweep's fingerprint, its chunk index and a SHA-256
checksum of each output (netCDF: attributes of the chunk file; Zarr: the ``seal`` array, one row of digests per chunk,
under the fingerprint of the group).
Resuming checks every seal, so a store whose manifest was deleted cannot lend its chunks to
another sweep, and a chunk copied over another, edited, truncated or deleted is recomputed
(with a warning naming it) instead of being read as if it were right.  Reading a chunk back
checks the checksums of the outputs read and raises ``ValueError`` naming the chunk on a
mismatch.

Both formats hold every output flat, as ``(point, *trailing)`` with the grid points in the C
order of the grid; ``platinum_jax.sweeps._lazy`` reads a finished store back as the labelled grid
without loading it.  Each store also opens with xarray as it is: every array names its
dimensions (``point`` and the output's own, e.g. ``item``), and beside the outputs lie the
``item`` labels and, per point, the value of every axis (``r``, ``kappa``, ...), so
``ds.set_index(point=[axis names]).unstack("point")`` gives the labelled grid.  Zarr: one group
(``xarray.open_zarr``); netCDF: one file per chunk, each with a ``point`` coordinate (the flat
grid index), concatenated along ``point``.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path

import numpy as np

from platinum_jax._extras import require
from platinum_jax.sweeps._layout import what_differs

__all__ = ["ChunkStore", "NetCDFStore", "ZarrStore", "as_store"]

_MANIFEST = "manifest.json"
# Names a store gives its own arrays and dimensions; outputs may not take them.
_RESERVED = ("point", "done", "seal", "sweep_chunk", "seal_output", "seal_byte")


def checksum(a: np.ndarray) -> str:
    """SHA-256 of an array's dtype, shape and bytes (C order)."""
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()


def _seal(fingerprint: str, k: int, arrays: dict[str, np.ndarray]) -> dict:
    return {"fingerprint": fingerprint, "chunk": int(k),
            "sha256": {name: checksum(a) for name, a in arrays.items()}}


def _seal_problem(seal: dict | None, fingerprint: str, k: int, arrays: dict[str, np.ndarray]) -> str | None:
    """Why the chunk read as ``arrays`` does not match ``seal`` (None when it does)."""
    if not seal:
        return "it carries no seal (fingerprint, index, checksum)"
    if seal.get("fingerprint") != fingerprint:
        return "it belongs to a different sweep"
    if seal.get("chunk") != k:
        return f"it holds chunk {seal.get('chunk')}, not chunk {k} (a copied file?)"
    sums = seal.get("sha256") or {}
    for name, a in arrays.items():
        if sums.get(name) != checksum(a):
            return f"the checksum of {name!r} does not match (edited, damaged or missing data)"
    return None


class ChunkStore:
    """Interface: ``open(...)`` once, then ``finished()``, ``write(k, arrays)``, ``read(k)``.

    ``read(k, names)`` returns ``{name: (points in chunk k, *trailing)}`` for the outputs in
    ``names`` (all when None).  ``layout`` (set by the sweep before ``open``, see
    :func:`platinum_jax.sweeps._layout.store_layout`) describes the grid, so the stored arrays carry dimension names and
    coordinates; a store without it still works, with generic dimension names.
    """

    path: Path
    layout: dict | None = None

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

    fingerprint: str = ""

    def _valid_chunks(self, candidates) -> set[int]:
        """The chunks among ``candidates`` whose seal matches; warns naming the others."""
        good, bad = set(), []
        for k in sorted(candidates):
            try:
                problem = self._check_chunk(k)
            except Exception as exc:  # unreadable: as good as absent
                problem = f"it cannot be read ({type(exc).__name__}: {exc})"
            if problem is None:
                good.add(k)
            else:
                bad.append(f"chunk {k} ({problem})")
        if bad:
            warnings.warn(
                f"store {self.path}: {len(bad)} stored chunk(s) failed their check and are "
                f"recomputed: {'; '.join(bad[:5])}{'; ...' if len(bad) > 5 else ''}",
                stacklevel=3)
        return good

    def _check_chunk(self, k: int) -> str | None:
        raise NotImplementedError

    def _verified(self, k: int, arrays: dict[str, np.ndarray], seal: dict | None):
        problem = _seal_problem(seal, self.fingerprint, k, arrays)
        if problem is not None:
            raise ValueError(
                f"store {self.path}: chunk {k} failed its check: {problem}; rerun the sweep with "
                "resume=True (CLI: --resume) to recompute it"
            )
        return arrays

    # ---------------------------------------------------------------- layout and manifest
    def _check_names(self, spec) -> None:
        """Outputs may not take the names the store gives its own arrays and dimensions."""
        taken = [f"{name!r}" for name in spec if name in _RESERVED]
        for name, dims in ((self.layout or {}).get("variables") or {}).items():
            taken += [f"dimension {d!r} of {name!r}" for d in dims if d in _RESERVED]
        if taken:
            raise ValueError(
                f"store {self.path}: {', '.join(taken)} use(s) a name the chunk store keeps for "
                f"itself ({', '.join(_RESERVED)}); rename the output or dimension")

    def _trailing_dims(self, name: str, ndim: int) -> tuple[str, ...]:
        dims = ((self.layout or {}).get("variables") or {}).get(name)
        if dims is not None and len(dims) == ndim:
            return tuple(dims)
        return tuple(f"{name}_{i}" for i in range(ndim))

    def _axis_values(self, start: int, stop: int) -> dict[str, np.ndarray]:
        """The value of every axis at the points ``[start, stop)`` (empty without a layout)."""
        if self.layout is None:
            return {}
        idx = np.unravel_index(np.arange(start, stop), tuple(self.layout["grid"]))
        return {d: self.layout["coords"][d][i] for d, i in zip(self.layout["dims"], idx,
                                                                strict=True)}

    def _about(self, chunk_size: int) -> dict | None:
        if self.layout is None:
            return None
        return {**self.layout["about"], "chunk_size": int(chunk_size)}

    def _stored_meta(self) -> dict | None:
        manifest = self.path / _MANIFEST
        return json.loads(manifest.read_text()) if manifest.exists() else None

    def _check_manifest(self, fingerprint: str, resume: bool, has_data: bool,
                        chunk_size: int | None = None) -> None:
        meta = self._stored_meta()
        if meta is None:
            return
        written_as = {"NetCDFStore": NetCDFStore, "ZarrStore": ZarrStore}.get(meta.get("format"))
        if written_as is not None and not isinstance(self, written_as):
            raise ValueError(
                f"store {self.path} was written as a {meta['format']}, not a "
                f"{type(self).__name__}; open it in its own format to resume it, or use another "
                "directory")
        if meta["fingerprint"] != fingerprint:
            differs = what_differs(meta.get("about"),
                                    None if chunk_size is None else self._about(chunk_size))
            raise ValueError(
                f"store {self.path} holds chunks of a different sweep ({differs}), so none of "
                "them can be reused; rerun with the settings the store was made with to resume "
                "it, or start afresh in another directory (CLI: a new --out) or after removing "
                "this one (CLI: --overwrite instead of --resume)"
            )
        if has_data and not resume:
            raise ValueError(
                f"store {self.path} already holds chunks of this sweep; pass resume=True "
                "(CLI: --resume) to continue it, or use a new directory"
            )

    def _sweep_meta(self, fingerprint: str, n_points: int, chunk_size: int) -> dict:
        doc = {"fingerprint": fingerprint, "n_points": n_points, "chunk_size": chunk_size,
               "format": type(self).__name__}
        if self.layout is not None:
            doc.update(dims=self.layout["dims"], grid=self.layout["grid"],
                       about=self._about(chunk_size))
        return doc

    def _write_manifest(self, fingerprint: str, n_points: int, chunk_size: int) -> None:
        doc = self._sweep_meta(fingerprint, n_points, chunk_size)
        (self.path / _MANIFEST).write_text(json.dumps(doc, indent=1))


class NetCDFStore(ChunkStore):
    """A directory with ``manifest.json`` and one ``chunk_XXXXXX.nc`` file (h5netcdf) per chunk.

    Each chunk file is a netCDF dataset of its points: the outputs over ``point`` (and their
    own dimensions), a ``point`` coordinate holding the flat grid index, the value of every
    axis at each point and the ``item`` labels; the files concatenate along ``point``.
    """

    def _chunk_path(self, k: int) -> Path:
        return self.path / f"chunk_{k:06d}.nc"

    def open(self, fingerprint, spec, n_points, chunk_size, resume):
        if (self.path / "zarr.json").exists():
            raise ValueError(
                f"store {self.path} is a Zarr store (it holds zarr.json), not a netCDF one; "
                "open it as Zarr to resume it (a store path ending in .zarr, or ZarrStore; CLI: "
                "--store-format zarr), or use another directory")
        self._check_names(spec)
        files = sorted(self.path.glob("chunk_*.nc")) if self.path.is_dir() else []
        self._check_manifest(fingerprint, resume, bool(files), chunk_size)
        if files and self._stored_meta() is None:
            # No manifest: the chunks' own seals say which sweep they belong to.
            foreign = [p.name for p in files if self._seal_of(p).get("fingerprint") != fingerprint]
            if foreign:
                raise ValueError(
                    f"store {self.path} holds chunks of a different sweep or of unknown origin "
                    f"({', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}) and no "
                    "manifest; use a new directory or delete this one"
                )
        self.fingerprint = fingerprint
        self.path.mkdir(parents=True, exist_ok=True)
        self._write_manifest(fingerprint, n_points, chunk_size)
        self._chunk_size = int(chunk_size)

    @staticmethod
    def _seal_of(path: Path) -> dict:
        import h5py

        try:
            with h5py.File(path, "r") as f:
                raw = f.attrs.get("platinum_jax_seal", "{}")
            return json.loads(raw.decode() if isinstance(raw, bytes) else str(raw))
        except (OSError, ValueError):
            return {}

    def finished(self):
        found = {int(p.stem.split("_")[1]) for p in self.path.glob("chunk_*.nc")}
        return self._valid_chunks(found)

    def _check_chunk(self, k):
        arrays, seal = self._load(k, None)
        return _seal_problem(seal, self.fingerprint, k, arrays)

    def write(self, k, arrays):
        import xarray as xr

        data = {name: (("point",) + self._trailing_dims(name, a.ndim - 1), a)
                for name, a in arrays.items()}
        n = next(iter(arrays.values())).shape[0]
        start = k * self._chunk_size
        coords = {"point": ("point", np.arange(start, start + n, dtype=np.int64))}
        coords.update({d: ("point", v) for d, v in self._axis_values(start, start + n).items()})
        if self.layout is not None and any("item" in dims for dims, _ in data.values()):
            coords["item"] = ("item", np.asarray(self.layout["items"], dtype=str))
        attrs = {"platinum_jax_seal": json.dumps(_seal(self.fingerprint, k, arrays))}
        if self.layout is not None:
            attrs["platinum_jax_grid"] = json.dumps({"dims": self.layout["dims"],
                                                     "grid": self.layout["grid"]})
        tmp = self.path / f".chunk_{k:06d}.nc.partial"
        xr.Dataset(data, coords=coords, attrs=attrs).to_netcdf(tmp, engine="h5netcdf")
        os.replace(tmp, self._chunk_path(k))  # atomic: a chunk file is either complete or absent

    def _load(self, k, names):
        # h5py directly: an order of magnitude faster than opening each chunk with xarray,
        # which matters when a resume checks every chunk.
        import h5py

        with h5py.File(self._chunk_path(k), "r") as f:
            raw = f.attrs.get("platinum_jax_seal", "{}")
            seal = json.loads(raw.decode() if isinstance(raw, bytes) else str(raw))
            if names is None:
                # The outputs are what the seal lists (the coordinates beside them are not
                # sealed); a file without a seal offers its data variables for the check.
                names = list((seal or {}).get("sha256") or {}) or [
                    n for n, d in f.items() if isinstance(d, h5py.Dataset)
                    and d.attrs.get("CLASS") != b"DIMENSION_SCALE"]
            arrays = {}
            for name in names:
                d = f[name]
                a = d[()]
                if d.attrs.get("dtype") in ("bool", b"bool"):  # xarray stores bool as int8
                    a = a.astype(bool)
                arrays[name] = a
        return arrays, seal

    def read(self, k, names=None):
        return self._verified(k, *self._load(k, names))


class ZarrStore(ChunkStore):
    """One Zarr v3 group: an array per output with leading dimension ``point`` (the grid
    points), chunked like the sweep, plus a ``done`` flag per chunk, the ``seal`` digests,
    the ``item`` labels and each axis's value per point.  ``xarray.open_zarr`` opens it."""

    def open(self, fingerprint, spec, n_points, chunk_size, resume):
        zarr = require("zarr", "zarr", "a Zarr sweep store (a store path ending in .zarr)")

        self._check_names(spec)
        n_chunks = -(-n_points // chunk_size)
        meta = self._stored_meta()
        if meta is None:
            self._refuse_foreign(spec)
        group = None if meta is None else zarr.open_group(str(self.path), mode="r+")
        # Only finished chunks count as data: a store created by a run that stopped before its
        # first chunk was done holds nothing to protect, so a plain rerun continues it.
        has_data = group is not None and bool(np.any(group["done"][:]))
        self._check_manifest(fingerprint, resume, has_data, chunk_size)
        self.fingerprint = fingerprint
        if group is not None:
            self._group = group
            self._chunk_size = int(meta["chunk_size"])
            self._names = meta.get("outputs")
            if "seal" not in group:  # written before chunks were sealed: all are recomputed
                self._create_seal(group, int(meta["n_points"]), len(self._outputs()))
            return
        group = zarr.open_group(str(self.path), mode="w")
        coords = " ".join((self.layout or {}).get("dims", ()))
        for name, (shape, dtype) in spec.items():
            arr = group.create_array(name, shape=(n_points, *shape), chunks=(chunk_size, *shape),
                                     dtype=dtype, dimension_names=("point",)
                                     + self._trailing_dims(name, len(shape)))
            if coords:
                arr.attrs["coordinates"] = coords  # xarray: the per-point axis values
        if self.layout is not None:
            for d in self.layout["dims"]:
                group.create_array(d, shape=(n_points,), chunks=(chunk_size,),
                                   dtype=self.layout["coords"][d].dtype,
                                   dimension_names=("point",))
            items = np.asarray(self.layout["items"], dtype=str)
            group.create_array("item", shape=items.shape, chunks=items.shape, dtype=str,
                               dimension_names=("item",))[:] = items
        done = group.create_array("done", shape=(n_chunks,), chunks=(n_chunks,), dtype=bool,
                                  fill_value=False, dimension_names=("sweep_chunk",))
        done.attrs["description"] = (f"chunk k (points [k * {chunk_size}, (k + 1) * "
                                     f"{chunk_size})) is finished")
        self._chunk_size = chunk_size
        self._names = sorted(spec)
        self._create_seal(group, n_points, len(spec))
        self._group = group
        # Written last: a store whose manifest exists has all its arrays.
        group.attrs["sweep"] = {**self._sweep_meta(fingerprint, n_points, chunk_size),
                                "outputs": self._names}

    def _refuse_foreign(self, spec) -> None:
        """A new group replaces what is at the path; refuse unless that is nothing, or the
        arrays of a store whose run stopped before its description was written."""
        if not self.path.exists():
            return
        if not self.path.is_dir():
            raise ValueError(f"store {self.path} is a file; give a directory path")
        entries = sorted(p.name for p in self.path.iterdir())
        if (self.path / _MANIFEST).exists() or any(n.startswith("chunk_") for n in entries):
            raise ValueError(
                f"store {self.path} holds a netCDF chunk store (manifest.json, chunk_*.nc), not "
                "a Zarr one; a Zarr store cannot reuse its chunks and is never written over "
                "them: open it as netCDF to resume it (a path not ending in .zarr, or "
                "NetCDFStore; CLI: --store-format nc), or use another directory")
        ours = {"zarr.json", "done", "seal", "item", *spec, *(self.layout or {}).get("dims", ())}
        foreign = [n for n in entries if n not in ours]
        if foreign or (entries and "zarr.json" not in entries):
            raise ValueError(
                f"store {self.path} is not empty and is not a sweep store "
                f"({', '.join((foreign or entries)[:5])}); choose a new or empty directory")

    def _create_seal(self, group, n_points: int, n_outputs: int) -> None:
        n_chunks = -(-n_points // self._chunk_size)
        seal = group.create_array("seal", shape=(n_chunks, n_outputs, 32),
                                  chunks=(1, n_outputs, 32), dtype="uint8", fill_value=0,
                                  dimension_names=("sweep_chunk", "seal_output", "seal_byte"))
        seal.attrs["description"] = "SHA-256 of each output (in sorted order) of each chunk"

    def _stored_meta(self):
        if not (self.path / "zarr.json").exists():
            return None
        zarr = require("zarr", "zarr", "a Zarr sweep store (a store path ending in .zarr)")

        return dict(zarr.open_group(str(self.path), mode="r").attrs.get("sweep", {})) or None

    def _cs(self) -> int:
        return self._chunk_size

    def finished(self):
        return self._valid_chunks(int(k) for k in np.flatnonzero(self._group["done"][:]))

    def _outputs(self) -> list[str]:
        if getattr(self, "_names", None):
            return list(self._names)
        # A store written before the outputs were recorded holds nothing but them beside these.
        return sorted(n for n, _ in self._group.arrays() if n not in ("done", "seal"))

    def _seal_of(self, k: int) -> dict:
        # The group's fingerprint and the row's position stand in for the seal's own fields.
        digests = np.asarray(self._group["seal"][k])
        return {"fingerprint": self.fingerprint, "chunk": k,
                "sha256": {name: bytes(d).hex() for name, d in zip(self._outputs(), digests,
                                                                  strict=True)}}

    def _check_chunk(self, k):
        return _seal_problem(self._seal_of(k), self.fingerprint, k, self._load(k, None))

    def write(self, k, arrays):
        cs = self._cs()
        for name, a in arrays.items():
            self._group[name][k * cs: k * cs + a.shape[0]] = a
        n = next(iter(arrays.values())).shape[0]
        for d, values in self._axis_values(k * cs, k * cs + n).items():
            if d in self._group:  # absent from stores written before they were kept
                self._group[d][k * cs: k * cs + n] = values
        self._group["seal"][k] = np.stack([np.frombuffer(bytes.fromhex(checksum(arrays[name])),
                                                         dtype=np.uint8)
                                           for name in self._outputs()])
        self._group["done"][k] = True  # set last: the chunk counts only once its data are in

    def _load(self, k, names):
        cs = self._cs()
        names = self._outputs() if names is None else names
        return {name: np.asarray(self._group[name][k * cs: (k + 1) * cs]) for name in names}

    def read(self, k, names=None):
        return self._verified(k, self._load(k, names), self._seal_of(k))


def as_store(store: ChunkStore | str | os.PathLike | None) -> ChunkStore | None:
    """``None`` → no store; a path ending in ``.zarr`` → :class:`ZarrStore`; other paths →
    :class:`NetCDFStore`; a store object is returned as is."""
    if store is None or isinstance(store, ChunkStore):
        return store
    if isinstance(store, str | os.PathLike):
        path = Path(store)
        return ZarrStore(path) if path.suffix == ".zarr" else NetCDFStore(path)
    raise ValueError(f"store must be a directory path, a NetCDFStore or a ZarrStore, got {store!r}")
