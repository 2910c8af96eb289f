"""The draws file of a fit (``draws.npz``) and reading a fit directory back.

``platinum-jax fit --save-draws`` writes, beside ``subjects.csv``, ``items.csv``, ``globals.csv``
and ``fit.json``, one ``draws.npz`` holding what the weights command needs to rebuild the fit:
the model (registry name and simple options), the responses it was fitted to, the raw point
estimate and the raw draws (Laplace draws, bootstrap replicates or posterior draws).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np

__all__ = ["draws_bytes", "read_fit", "with_integrity", "DRAWS_FILE"]

DRAWS_FILE = "draws.npz"
_FORMAT = 1


def _simple_fields(obj) -> dict:
    out = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, (bool, int, float, str)) or value is None:
            out[f.name] = value
    return out


def draws_bytes(fit) -> bytes:
    """The ``draws.npz`` file of ``fit`` as bytes (no pickled objects inside)."""
    from platinum_jax.models import MODELS

    model = fit.model
    name = next((k for k, cls in MODELS.items() if type(model) is cls), None)
    if name is None:
        raise ValueError(f"only the built-in models {sorted(MODELS)} can be saved with their "
                         f"draws (got {type(model).__name__})")
    t = fit.table
    meta = {
        "format": _FORMAT, "model": name, "method": fit.method, "interval": fit.interval,
        "model_options": {k: v for k, v in _simple_fields(model).items()},
        "likelihood": model.likelihood.name,
        "likelihood_options": _simple_fields(model.likelihood),
        "has_draws": fit.draws is not None,
        "identification": fit.problem.identification.description,
    }
    from platinum_jax.models import BenchmarkAnchor

    if isinstance(getattr(model, "anchor", None), BenchmarkAnchor):
        # So that a refit from the file (the subject bootstrap) pins the same benchmark.
        meta["anchor"] = dataclasses.asdict(model.anchor)
    arrays = {
        "meta": np.asarray(json.dumps(meta)),
        "subject": np.asarray(t.subjects[t.subject_index], dtype=str),
        "item": np.asarray(t.items[t.item_index], dtype=str),
        "response": np.asarray(t.response, np.float64),
        "theta_subjects": np.asarray(fit.theta.subjects),
        "theta_items": np.asarray(fit.theta.items),
        "theta_globals": np.asarray(fit.theta.globals),
    }
    pr = fit.problem
    for key, free, init in (("subjects", pr.free_S, pr.init_S), ("items", pr.free_I, pr.init_I),
                            ("globals", pr.free_G, pr.init_G)):
        arrays[f"free_{key}"] = np.asarray(free, bool)
        arrays[f"fixed_{key}"] = np.asarray(init, np.float64)
    if t.trials is not None:
        arrays["trials"] = np.asarray(t.trials, np.float64)
    if t.weight is not None:  # e.g. the per-item noise weights of fit_heteroscedastic
        arrays["weight"] = np.asarray(t.weight, np.float64)
    if t.groups is not None:
        arrays["group"] = np.asarray(np.asarray(t.groups)[t.item_group][t.item_index], dtype=str)
    if fit.draws is not None:
        arrays["draws_subjects"] = np.asarray(fit.draws.subjects)
        arrays["draws_items"] = np.asarray(fit.draws.items)
        arrays["draws_globals"] = np.asarray(fit.draws.globals)
    if getattr(fit, "raw_sd", None) is not None:  # a Laplace fit's exact sds (optional)
        for key, sd in zip(("subjects", "items", "globals"), fit.raw_sd, strict=True):
            arrays[f"sd_{key}"] = np.asarray(sd)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def with_integrity(files: dict[str, str | bytes]) -> dict[str, str | bytes]:
    """``files`` (name -> content, ``fit.json`` among them) with ``fit.json`` recording what
    the other files must be: for each its size and SHA-256, and for ``draws.npz`` the model,
    method and array shapes it holds, so a reader can refuse a file that was truncated,
    replaced or written by another fit (:func:`read_fit` checks them)."""
    doc = json.loads(files["fit.json"])
    record = {}
    for name, content in files.items():
        if name == "fit.json":
            continue
        data = content.encode() if isinstance(content, str) else content
        record[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    doc["files"] = record
    if DRAWS_FILE in files:
        z = np.load(io.BytesIO(files[DRAWS_FILE]), allow_pickle=False)
        meta = json.loads(str(z["meta"]))
        doc["draws"] = {"model": meta["model"], "method": meta["method"],
                        "shapes": {k: list(z[k].shape) for k in z.files
                                   if k.startswith(("theta_", "draws_"))}}
    return {**files, "fit.json": json.dumps(doc, indent=2) + "\n"}


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
    from platinum_jax.inference import Fit, Problem, Theta
    from platinum_jax.models import Identification
    from platinum_jax.models._registry import MODELS
    from platinum_jax.models.likelihoods import LIKELIHOODS

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
    if meta.get("format") != _FORMAT:
        raise ValueError(f"{path} has format {meta.get('format')!r}; this version reads "
                         f"format {_FORMAT}")
    lik = LIKELIHOODS[meta["likelihood"]](**meta["likelihood_options"])
    options = dict(meta["model_options"])
    if "anchor" in meta:
        from platinum_jax.models import BenchmarkAnchor

        options["anchor"] = BenchmarkAnchor(**meta["anchor"])
    model = MODELS[meta["model"]](likelihood=lik, **options)
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
