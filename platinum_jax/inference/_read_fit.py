"""Reading a ``platinum-jax fit`` directory back into a :class:`~platinum_jax.inference.Fit`
from its ``draws.npz`` (written by :mod:`._fit_files`), or for a Bayesian fit without one from
its ``posterior.nc`` (the draws, the responses and their labels are all there), each checked
against what ``fit.json`` records of it.
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


POSTERIOR_FILE = "posterior.nc"


def _summary(directory: Path) -> dict:
    path = directory / "fit.json"
    try:
        summary = json.loads(path.read_text())
        if not isinstance(summary, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} cannot be read ({exc}); refit with `platinum-jax fit ... "
                         "--overwrite`") from None
    return summary


def _from_posterior(directory: Path):
    """The Bayesian fit of ``directory`` from ``fit.json`` (its model) and ``posterior.nc``
    (its draws, responses and labels)."""
    import arviz as az
    import pandas as pd

    from platinum_jax.data import ResponseTable
    from platinum_jax.models import from_config

    from ._problem import Problem, Theta
    from ._results import Fit

    path = directory / POSTERIOR_FILE
    summary = _summary(directory)
    want = (summary.get("files") or {}).get(POSTERIOR_FILE)
    data = path.read_bytes()
    if want is not None and (len(data) != want["bytes"]
                             or hashlib.sha256(data).hexdigest() != want["sha256"]):
        raise ValueError(f"{path} is not the file {directory / 'fit.json'} records (size or "
                         "checksum differs): it was replaced or damaged; refit with --overwrite")
    model = from_config(summary.get("model_config"), f"{directory / 'fit.json'}: model_config")
    try:
        idata = az.from_netcdf(str(path))
        post, const = idata.posterior, idata.constant_data
        y = np.asarray(idata.observed_data["y"].values, np.float64)
    except (OSError, ValueError, AttributeError, KeyError) as exc:
        raise ValueError(f"{path} is not the posterior a Bayesian `platinum-jax fit` writes "
                         f"({type(exc).__name__}: {exc})") from None
    s_dim, i_dim, _ = model.dim_names
    subjects = np.asarray(post.coords[s_dim].values).astype(str)
    items = np.asarray(post.coords[i_dim].values).astype(str)
    frame = pd.DataFrame({"subject": subjects[np.asarray(const["subject_index"].values)],
                          "item": items[np.asarray(const["item_index"].values)],
                          "response": y})
    for column in ("trials", "se", "group", "weight"):
        if column in const:
            frame[column] = np.asarray(const[column].values)
    table = ResponseTable.from_frame(frame, name=str(path))
    problem = Problem(model, table)
    n = post.sizes["chain"] * post.sizes["draw"]
    blocks = []
    for block, start, lead in ((problem.subject, problem.init_S, (table.n_subjects,)),
                               (problem.item, problem.init_I, (table.n_items,)),
                               (problem.glob, problem.init_G, ())):
        raw = np.repeat(np.asarray(start, np.float64)[None], n, axis=0)
        for name, (a, b, _) in block.slices().items():
            p = dict(block.decl)[name]
            if p.data or p.map_only or name not in post:
                continue  # filled by the problem, or held at its start
            values = np.asarray(post[name].values, np.float64).reshape(n, *lead, b - a)
            raw[..., a:b] = p.raw(values, f"{path}: {name}")
        blocks.append(raw)
    draws = Theta(*blocks)
    return Fit(problem=problem, method=summary.get("method", "nuts"),
               theta=Theta(*(d.mean(axis=0) for d in draws)), draws=draws,
               interval=summary.get("interval") or 0.9, inference_data=idata,
               diagnostics=dict(summary.get("diagnostics") or {}),
               converged=bool(summary.get("converged", True)))


def read_fit(directory: str | Path):
    """Rebuild a :class:`platinum_jax.inference.Fit` from a ``platinum-jax fit`` directory.

    Reads the ``draws.npz`` that ``platinum-jax fit --save-draws`` writes (the fixed entries
    of the scale identification read back as they were), or, for a Bayesian fit (NUTS, SVI)
    written without it, its ``posterior.nc``; the model is rebuilt from ``fit.json`` by its
    class and options, whichever model it is.
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
    if not path.exists() and (directory / POSTERIOR_FILE).exists() \
            and (directory / "fit.json").exists():
        return _from_posterior(directory)
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
