"""What a chunk store records of a sweep besides its fingerprint.

The grid (axis names, sizes and values), the item labels and each output's trailing
dimensions make a store readable by xarray as it is; a short description of the sweep
(``about``) lets a store that another sweep tries to resume say what differs.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["store_layout", "what_differs"]


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def _show(x) -> str:
    return ", ".join(map(str, x)) if isinstance(x, list) else str(x)


def store_layout(axes, shape, items, var_dims: dict, base_arrays) -> dict:
    """What a store records of a sweep besides its fingerprint: the grid (axis names, sizes,
    values), the item labels and each output's trailing dimensions, which make the store
    readable by xarray, and a short description (``about``) that names what differs when
    another sweep tries to resume it."""
    coords = {a.name: np.asarray(a.coords()) for a in axes}
    about = {"axes": [f"{type(a).__name__} {a.name}[{len(a.values)}]" for a in axes],
             "axis_values": {a.name: _digest(coords[a.name]) for a in axes},
             "outputs": sorted(var_dims), "items": len(items),
             "item_names": _digest(np.asarray([str(i) for i in items])),
             "primitives": _digest(*(np.asarray(x, np.float64) for x in base_arrays))}
    return {"dims": [a.name for a in axes], "grid": [int(n) for n in shape], "coords": coords,
            "items": [str(i) for i in items],
            "variables": {name: list(dims) for name, dims in var_dims.items()}, "about": about}


def what_differs(old: dict | None, new: dict | None) -> str:
    """The differences between two ``about`` descriptions, in words."""
    if not old or not new:
        return "the store does not record what it was made with, only its fingerprint"
    said = []
    for key, label in (("axes", "axes"), ("items", "number of items"), ("outputs", "outputs"),
                       ("chunk_size", "chunk size")):
        if old.get(key) != new.get(key):
            said.append(f"{label}: stored {_show(old.get(key))}, now {_show(new.get(key))}")
    if old.get("items") == new.get("items") and old.get("item_names") != new.get("item_names"):
        said.append("the item names")
    if old.get("primitives") != new.get("primitives"):
        said.append("the base primitives (A, C, Sigma, w or r)")
    if old.get("axes") == new.get("axes"):
        changed = [n for n, d in (new.get("axis_values") or {}).items()
                   if (old.get("axis_values") or {}).get(n) != d]
        if changed:
            said.append(f"the values of axis {', '.join(changed)}")
    return "; ".join(said) or ("a setting not listed here (a concept index, a platinum "
                               "threshold, a user function's code or the float precision)")
