"""Reading a ``platinum-jax fit`` directory back into a :class:`~platinum_jax.inference.Fit`
from its ``draws.npz`` (written by :mod:`._fit_files`), checked against what ``fit.json``
records of it.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np

from ._fit_files import DRAWS_FILE, FORMAT

__all__ = ["read_fit"]


def _check_against_record(directory: Path, path: Path, z, meta: dict) -> None:
    """``draws.npz`` against what ``fit.json`` records of it (when fit.json is there)."""
    summary_path = directory / "fit.json"
    if not summary_path.exists():
        return
    try:
        summary = json.loads(summary_path.read_text())
        if not isinstance(summary, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        raise ValueError(f"{summary_path} cannot be read ({exc}); it was damaged: refit with "
                         "`platinum-jax fit ... --overwrite`") from None
    fitted = (summary.get("model") or {}).get("name")
    if fitted is not None and fitted != meta.get("model"):
        raise ValueError(f"{path} holds draws of the {meta.get('model')} model, but "
                         f"{summary_path} is a {fitted} fit: the file belongs to another fit; "
                         "refit this directory with --save-draws --overwrite")
    if summary.get("method") is not None and summary["method"] != meta.get("method"):
        raise ValueError(f"{path} holds {meta.get('method')} draws, but {summary_path} records "
                         f"method {summary['method']}: the file belongs to another fit")
    want = (summary.get("files") or {}).get(DRAWS_FILE)
    if want is not None:
        data = path.read_bytes()
        if len(data) != want["bytes"] or hashlib.sha256(data).hexdigest() != want["sha256"]:
            raise ValueError(f"{path} is not the file {summary_path} records (size or checksum "
                             "differs): it was replaced or damaged; refit with --save-draws "
                             "--overwrite")
    shapes = (summary.get("draws") or {}).get("shapes") or {}
    for key, shape in shapes.items():
        if key not in z.files or list(z[key].shape) != list(shape):
            raise ValueError(f"{path}: array {key} has shape "
                             f"{list(z[key].shape) if key in z.files else 'none'}, but "
                             f"{summary_path} records {shape}; the file belongs to another fit")


def _check_shapes(path: Path, z, problem, has_draws: bool) -> None:
    """The arrays of ``draws.npz`` have the shapes its own model and responses imply."""
    want = {"subjects": problem.init_S.shape, "items": problem.init_I.shape,
            "globals": problem.init_G.shape}
    for key, shape in want.items():
        names = [f"theta_{key}"] + ([f"draws_{key}"] if has_draws else [])
        for name in names:
            got = z[name].shape[1:] if name.startswith("draws_") else z[name].shape
            if tuple(got) != tuple(shape):
                raise ValueError(f"{path}: array {name} has shape {tuple(z[name].shape)}, but "
                                 f"its {problem.model.name} model on these responses needs "
                                 f"{tuple(shape)}{' per draw' if name.startswith('draws_') else ''}"
                                 "; the file is damaged: refit with --save-draws --overwrite")


def _fixed(block, free, values) -> dict:
    """The fixed entries of one flat block, as the model's identification states them."""
    from platinum_jax.models import Fixed

    out = {}
    for name, (a, b, shape) in block.slices().items():
        mask = ~free[..., a:b]
        if mask.any():
            lead = mask.shape[:-1]
            out[name] = Fixed(mask.reshape(*lead, *shape), values[..., a:b].reshape(*lead, *shape))
    return out


class _Arrays(dict):
    """The arrays of a loaded ``.npz`` (``files`` and ``in`` as ``NpzFile`` has them)."""

    @property
    def files(self) -> list[str]:
        return list(self)


def read_fit(directory: str | Path):
    """Rebuild a :class:`platinum_jax.inference.Fit` from a ``platinum-jax fit`` directory.

    Needs the ``draws.npz`` that ``platinum-jax fit --save-draws`` writes; the fixed entries
    of the scale identification are read back from it as they were.
    """
    import jax.numpy as jnp
    import pandas as pd

    from platinum_jax.data import ResponseTable
    from platinum_jax.models import Identification, from_config

    from ._problem import Problem, Theta
    from ._results import Fit

    directory = Path(directory)
    path = directory / DRAWS_FILE
    if not directory.is_dir():
        raise FileNotFoundError(f"fit directory {directory} does not exist")
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: rerun `platinum-jax fit ... --save-draws --out {directory} "
            "--overwrite` (use --method laplace, bootstrap, svi or nuts for a posterior)")
    try:
        z = np.load(path, allow_pickle=False)
        meta = json.loads(str(z["meta"]))
        arrays = {k: z[k] for k in z.files}  # reads every member: a truncated file fails here
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        what = "empty" if path.stat().st_size == 0 else "truncated or damaged"
        raise ValueError(f"{path} is {what}, not a draws file written by `platinum-jax fit` "
                         f"({type(exc).__name__}: {exc}); refit with --save-draws --overwrite") \
            from None
    z = _Arrays(arrays)
    _check_against_record(directory, path, z, meta)
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path} has format {meta.get('format')!r}; this version reads "
                         f"format {FORMAT}")
    model = from_config(meta.get("model_config"), f"{path}: model_config")
    frame = pd.DataFrame({"subject": z["subject"], "item": z["item"], "response": z["response"]})
    if "trials" in z:
        frame["trials"] = z["trials"]
    if "weight" in z:
        frame["weight"] = z["weight"]
    if "group" in z:
        frame["group"] = z["group"]
    table = ResponseTable.from_frame(frame, name=str(path))
    bare = Problem(model, table, identification=Identification())
    ident = Identification(
        subject=_fixed(bare.subject, z["free_subjects"], z["fixed_subjects"]),
        item=_fixed(bare.item, z["free_items"], z["fixed_items"]),
        glob=_fixed(bare.glob, z["free_globals"], z["fixed_globals"]),
        description=meta["identification"],
    )
    problem = Problem(model, table, identification=ident)
    _check_shapes(path, z, problem, bool(meta["has_draws"]))
    theta = Theta(*(jnp.asarray(z[f"theta_{k}"]) for k in ("subjects", "items", "globals")))
    draws = None
    if meta["has_draws"]:
        draws = Theta(*(jnp.asarray(z[f"draws_{k}"]) for k in ("subjects", "items", "globals")))
    raw_sd = None
    if "sd_subjects" in z:
        raw_sd = Theta(*(np.asarray(z[f"sd_{k}"]) for k in ("subjects", "items", "globals")))
    return Fit(problem, meta["method"], theta, draws=draws, interval=meta["interval"],
               raw_sd=raw_sd)
