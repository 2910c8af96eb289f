"""The draws file of a fit (``draws.npz``) and reading a fit directory back.

``platinum-jax fit --save-draws`` writes, beside ``subjects.csv``, ``items.csv``, ``globals.csv``
and ``fit.json``, one ``draws.npz`` holding what the weights command needs to rebuild the fit:
the model (registry name and simple options), the responses it was fitted to, the raw point
estimate and the raw draws (Laplace draws, bootstrap replicates or posterior draws).
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import numpy as np

__all__ = ["draws_bytes", "read_fit", "DRAWS_FILE"]

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
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"{path} is not a draws file written by `platinum-jax fit`: {exc}") \
            from exc
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
    theta = Theta(*(jnp.asarray(z[f"theta_{k}"]) for k in ("subjects", "items", "globals")))
    draws = None
    if meta["has_draws"]:
        draws = Theta(*(jnp.asarray(z[f"draws_{k}"]) for k in ("subjects", "items", "globals")))
    raw_sd = None
    if "sd_subjects" in z:
        raw_sd = Theta(*(np.asarray(z[f"sd_{k}"]) for k in ("subjects", "items", "globals")))
    return Fit(problem, meta["method"], theta, draws=draws, interval=meta["interval"],
               raw_sd=raw_sd)
