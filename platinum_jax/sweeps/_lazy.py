"""A finished chunk store read back as one labelled ``xarray.Dataset`` that stays on disk.

Stores hold each output flat, ``(grid point, *trailing)`` with points in the C order of the
grid ``(n_1, …, n_k)``.  An outer index into the grid (an integer, slice or integer array per
axis) selects the points ``ravel_multi_index(ix_(i_1, …, i_k), grid)``; chunk ``c`` holds the
points ``[c · chunk_size, (c + 1) · chunk_size)``, so only the chunks ``flat // chunk_size`` of
the selection are read.  Memory therefore follows the selection, never the grid.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from platinum_jax.sweeps._store import ChunkStore

__all__ = ["open_sweep"]


class _GridArray(BackendArray):
    """One stored output seen as an array of shape ``grid + trailing`` (read on indexing)."""

    def __init__(self, store: ChunkStore, name: str, grid, trailing, dtype, chunk_size: int):
        self.store, self.name = store, name
        self.grid, self.trailing = tuple(grid), tuple(trailing)
        self.shape = self.grid + self.trailing
        self.dtype = np.dtype(dtype)
        self.chunk_size = int(chunk_size)

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._read)

    def _read(self, key: tuple) -> np.ndarray:
        k = len(self.grid)
        picks = [np.arange(n)[sel] for n, sel in zip(self.grid, key[:k], strict=True)]
        scalar = [np.ndim(p) == 0 for p in picks]
        picks = [np.atleast_1d(p) for p in picks]
        flat = np.ravel_multi_index(np.ix_(*picks), self.grid).ravel()
        out = np.empty((flat.size, *self.trailing), self.dtype)
        which = flat // self.chunk_size
        for c in np.unique(which):
            here = which == c
            part = self.store.read(int(c), [self.name])[self.name]
            out[here] = part[flat[here] - int(c) * self.chunk_size]
        out = out.reshape(*(p.size for p in picks), *self.trailing)
        # Trailing dimensions one at a time, last first, so each index stays outer (NumPy would
        # broadcast two integer arrays together) and earlier axis numbers stay valid.
        for axis in range(len(key) - 1, k - 1, -1):
            sel = key[axis]
            out = (out[(slice(None),) * axis + (sel,)] if isinstance(sel, slice | int | np.integer)
                   else np.take(out, np.asarray(sel), axis=axis))
        # Integer grid keys drop their dimension, as in NumPy.
        return out[tuple(0 if s else slice(None) for s in scalar)]


class _SweepBackend(BackendEntrypoint):
    """``xarray.open_dataset`` engine for a sweep store; ``layout`` describes the grid."""

    description = "a finished platinum_jax sweep held in a chunk store (netCDF or Zarr)"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "layout")

    def open_dataset(self, filename_or_obj, *, drop_variables=None, layout=None):
        drop = {drop_variables} if isinstance(drop_variables, str) else set(drop_variables or ())
        data = {}
        for name, (dims, trailing, dtype) in layout["variables"].items():
            if name not in drop:
                arr = _GridArray(layout["store"], name, layout["grid"], trailing, dtype,
                                 layout["chunk_size"])
                data[name] = xr.Variable(tuple(layout["dims"]) + tuple(dims),
                                         indexing.LazilyIndexedArray(arr))
        return xr.Dataset(data, coords=layout["coords"])


def open_sweep(store: ChunkStore, *, dims, coords, grid, variables, chunk_size) -> xr.Dataset:
    """The finished sweep in ``store`` as an ``xarray.Dataset`` whose values stay on disk.

    ``dims`` are the axis names, of sizes ``grid``; ``coords`` their values (and ``item``);
    ``variables`` maps each output to ``(trailing dims, trailing shape, dtype)``.  Values are
    read when accessed: ``ds["v"].sel(r=1.0).values`` reads only the chunks holding those
    points, and ``.load()`` brings a selection into memory.  Opened through
    ``xarray.open_dataset`` with ``cache=False``, so repeated access re-reads instead of
    silently keeping a full copy in memory.
    """
    layout = dict(store=store, dims=tuple(dims), coords=coords, grid=tuple(grid),
                  variables=variables, chunk_size=int(chunk_size))
    return xr.open_dataset(str(store.path), engine=_SweepBackend, cache=False,
                           backend_kwargs={"layout": layout})
