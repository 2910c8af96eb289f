"""A model as plain JSON and back: what a fit's files record so that a later command (``weights``,
``score``, ``subset``, ``cat``, a refit) rebuilds the same model, whichever model it is.

A model, its likelihood, its anchor and its priors are frozen dataclasses (Equinox modules are
dataclasses too), so one rule covers them all: a dataclass becomes ``{"class": "module:Name",
"options": {field: value}}`` with each field encoded the same way, numbers, strings, booleans
and tuples of them kept as they are. Reading imports ``module`` and calls ``Name(**options)``;
a model defined in the user's own file is found again by its import path. A field holding
anything else (an array, a function) cannot be written as JSON and is refused by name.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

__all__ = ["from_config", "to_config"]


def _path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _encode(value: Any, where: str):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "dtype") and getattr(value, "shape", None) == ():
        return value.item()  # a NumPy or JAX scalar
    if isinstance(value, (tuple, list)):
        return [_encode(v, f"{where}[{k}]") for k, v in enumerate(value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_config(value, where)
    raise TypeError(f"{where} is a {type(value).__name__}, which a fit's files cannot record; "
                    "give the model's options as numbers, strings, tuples or dataclasses")


def to_config(obj, where: str | None = None) -> dict:
    """``obj`` (a model, likelihood, anchor, priors: any frozen dataclass) as JSON-ready data."""
    where = where or type(obj).__name__
    options = {}
    for f in dataclasses.fields(obj):
        if not f.init:
            continue
        options[f.name] = _encode(getattr(obj, f.name), f"{where}.{f.name}")
    return {"class": _path(type(obj)), "options": options}


def _import(path: str, where: str) -> type:
    module, _, name = path.partition(":")
    try:
        target = importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(f"{where} names the class {path!r}, but its module {module!r} cannot be "
                         f"imported ({exc}); install it or put its directory on PYTHONPATH") \
            from None
    for part in name.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ValueError(f"{where} names the class {path!r}, but {module!r} has no "
                             f"{name!r}; was it renamed since the fit was written?")
    if not (isinstance(target, type) and dataclasses.is_dataclass(target)):
        raise ValueError(f"{where} names {path!r}, which is not a model, likelihood or option "
                         "class")
    return target


def _decode(value, where: str):
    if isinstance(value, dict) and set(value) == {"class", "options"}:
        return from_config(value, where)
    if isinstance(value, list):
        return tuple(_decode(v, where) for v in value)
    return value


def from_config(doc: dict, where: str = "the model record") -> Any:
    """The object :func:`to_config` recorded (its class imported by path)."""
    if not (isinstance(doc, dict) and isinstance(doc.get("class"), str)
            and isinstance(doc.get("options"), dict)):
        raise ValueError(f"{where} is not a model record ({{'class': 'module:Name', "
                         "'options': {...}}}); was the file written by this version?")
    cls = _import(doc["class"], where)
    options = {k: _decode(v, f"{where}.{k}") for k, v in doc["options"].items()}
    try:
        return cls(**options)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {doc['class']} does not accept the recorded options "
                         f"({exc})") from None
