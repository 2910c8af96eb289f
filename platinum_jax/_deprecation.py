"""Lazy exports and moved names of a module (PEP 562), written once for every package.

A package lists its public names with the module that defines each (loaded on first use, so a
command imports only what it needs) and its old names with their new homes; :func:`module_hooks`
returns the module's ``__getattr__`` and ``__dir__``. An old name still imports, with a
``DeprecationWarning`` that names the replacement on every use (it is never cached).
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = ["Moved", "module_hooks"]


class Moved(NamedTuple):
    """Where an old name went: ``home`` (a module) and ``name`` there; ``note`` ends the warning.

    For a function whose signature changed: ``per_call`` warns on every call instead of when
    the name is looked up; ``dropped`` maps keywords the old function took to ``(default,
    reason)``: any other value raises ``ValueError`` (the new function cannot honour it), the
    default is accepted and left out; ``prefix`` keeps the first ``prefix`` outputs of the new
    function (the old one returned fewer)."""

    home: str
    name: str
    note: str = ""
    per_call: bool = False
    dropped: Mapping[str, tuple[Any, str]] = {}
    prefix: int | None = None


def _warning(owner: str, old: str, moved: Moved) -> str:
    return (f"{owner}.{old} is deprecated: it moved to {moved.home}.{moved.name}; import it from "
            f"{moved.home} (from {moved.home} import {moved.name}){moved.note}")


def _resolve(owner: str, old: str, moved: Moved):
    target = getattr(importlib.import_module(moved.home), moved.name)
    if not moved.per_call:
        warnings.warn(_warning(owner, old, moved), DeprecationWarning, stacklevel=3)
        return target

    @functools.wraps(target)  # its signature, so that jax.jit finds static arguments by name
    def shim(*args, **kwargs):
        warnings.warn(_warning(owner, old, moved), DeprecationWarning, stacklevel=2)
        for key, (default, reason) in moved.dropped.items():
            if kwargs.setdefault(key, default) != default:
                raise ValueError(f"{key}={kwargs[key]!r} is no longer configurable: {reason}; "
                                 "leave it at its default")
            del kwargs[key]
        out = target(*args, **kwargs)
        return out if moved.prefix is None else tuple(out[:moved.prefix])

    shim.__name__ = shim.__qualname__ = old
    shim.__doc__ = f"Deprecated: {moved.home}.{moved.name}; warns on every call."
    return shim


def module_hooks(owner: str, namespace: dict, *, exports: Mapping[str, str] | None = None,
                 moved: Mapping[str, Moved] | None = None, submodules: tuple[str, ...] = ()):
    """``(__getattr__, __dir__)`` for module ``owner`` whose globals are ``namespace``.

    ``exports``: public name -> module defining it (absolute), imported on first use and
    cached in ``namespace``; ``moved``: old name -> :class:`Moved`, warned about on every use
    (the package's tables are in :mod:`platinum_jax._moved_names`); ``submodules``: names of
    sub-modules imported on first use.
    """
    exports, moved = dict(exports or {}), dict(moved or {})

    def __getattr__(name: str):
        if name in submodules:
            return importlib.import_module(f"{owner}.{name}")
        if name in moved:
            return _resolve(owner, name, moved[name])
        if name not in exports:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace.get("__all__", ())) | set(exports)
                      | set(moved) | set(submodules))

    return __getattr__, __dir__
