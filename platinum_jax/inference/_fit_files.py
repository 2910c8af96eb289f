"""The draws file of a fit (``draws.npz``), written (:mod:`._read_fit` reads it back).

``platinum-jax fit --save-draws`` writes, beside ``subjects.csv``, ``items.csv``, ``globals.csv``
and ``fit.json``, one ``draws.npz`` holding what the weights command needs to rebuild the fit:
the model (its class and options, :func:`platinum_jax.models.to_config`), the responses it was fitted to, the raw point
estimate and the raw draws (Laplace draws, bootstrap replicates or posterior draws).
"""

from __future__ import annotations

import hashlib
import io
import json

import numpy as np

__all__ = ["draws_bytes", "with_integrity", "DRAWS_FILE", "FORMAT"]

DRAWS_FILE = "draws.npz"
FORMAT = 2  # the version of draws.npz this package writes and reads


def draws_bytes(fit) -> bytes:
    """The ``draws.npz`` file of ``fit`` as bytes (no pickled objects inside)."""
    from platinum_jax.models import MODELS, to_config

    model = fit.model
    t = fit.table
    meta = {
        "format": FORMAT, "method": fit.method, "interval": fit.interval,
        # the registry's name where the model has one, and the class with its options always
        # (a model from the user's own module is found again by its import path)
        "model": next((k for k, cls in MODELS.items() if type(model) is cls),
                      type(model).__name__),
        "model_config": to_config(model),
        "has_draws": fit.draws is not None,
        "identification": fit.problem.identification.description,
    }
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
