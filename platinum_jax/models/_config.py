"""A model as plain JSON and back: what a fit's files record so that a later command (``weights``,
``score``, ``subset``, ``cat``, a refit) rebuilds the same model, whichever model it is.

A model, its likelihood, its anchor and its priors are frozen dataclasses (Equinox modules are
dataclasses too), so one rule covers them all: a dataclass becomes ``{"class": "module:Name",
"options": {field: value}}`` with each field encoded the same way, numbers, strings, booleans
and tuples of them kept as they are. Reading imports ``module`` and calls ``Name(**options)``;
a model defined in the user's own file is found again by its import path. A field holding
anything else (an array, a function) cannot be written as JSON and is refused by name.

A class is found by ``"module:Name"`` (a module on the import path; the current directory is
searched too, as ``python -m`` does) or ``"path/to/file.py:Name"`` (a file of the user's own,
loaded by path and recorded by its absolute path), by :func:`import_class`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["from_config", "import_class", "to_config"]

# modules loaded from a file by path live under this name (their file is what is recorded)
_FILE_MODULES = "platinum_jax_user_file"


def _path(cls: type) -> str:
    module = sys.modules.get(cls.__module__)
    source = getattr(module, "__platinum_jax_file__", None)
    if source is not None:  # loaded by path: the file is its address
        return f"{source}:{cls.__qualname__}"
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


def _module_from_file(file: str, where: str):
    path = Path(file).expanduser().resolve()
    if not path.is_file():
        raise ValueError(f"{where}: the file {file!r} does not exist")
    name = f"{_FILE_MODULES}_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__platinum_jax_file__ = str(path)
    sys.modules[name] = module  # before running it: dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise ValueError(f"{where}: running {path} failed ({type(exc).__name__}: {exc})") \
            from None
    return module


def _module(name: str, where: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        cwd = os.getcwd()
        if exc.name == name.split(".")[0] and cwd not in sys.path:
            sys.path.insert(0, cwd)  # a module of the user's own, beside the data
            try:
                return importlib.import_module(name)
            except ImportError:
                sys.path.remove(cwd)
        raise ValueError(f"{where} names the module {name!r}, which cannot be imported "
                         f"({exc}); install it, put its directory on PYTHONPATH, or give the "
                         "file instead (path/to/file.py:Name)") from None
    except Exception as exc:
        raise ValueError(f"{where}: importing {name!r} failed ({type(exc).__name__}: {exc})") \
            from None


def import_class(spec: str, where: str = "the class") -> type:
    """The class ``spec`` names: ``"module:Name"`` or ``"path/to/file.py:Name"`` (a dotted
    ``Name`` for a nested class). Errors name the module or file and what to do."""
    module_part, sep, name = str(spec).rpartition(":")
    if not sep or not module_part or not name:
        raise ValueError(f"{where}: {spec!r} is not 'module:Name' or 'path/to/file.py:Name'")
    if module_part.endswith(".py"):
        target = _module_from_file(module_part, where)
    else:
        target = _module(module_part, where)
    for part in name.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ValueError(f"{where} names {name!r} in {module_part!r}, which has no such "
                             "name; was it renamed?")
    if not isinstance(target, type):
        raise ValueError(f"{where}: {spec!r} is not a class")
    return target


def _import(path: str, where: str) -> type:
    target = import_class(path, where)
    if not dataclasses.is_dataclass(target):
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
