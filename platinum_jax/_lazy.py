"""Lazy exports of a package's face (PEP 562), written once for every package.

A package lists its public names with the module that defines each, loaded on first use, so a
command imports only what it needs (JAX, NumPyro and ArviZ cost seconds); :func:`module_hooks`
returns the package's ``__getattr__`` and ``__dir__``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

__all__ = ["module_hooks"]


def module_hooks(owner: str, namespace: dict, *, exports: Mapping[str, str] | None = None,
                 submodules: tuple[str, ...] = ()):
    """``(__getattr__, __dir__)`` for module ``owner`` whose globals are ``namespace``.

    ``exports``: public name -> module defining it (absolute), imported on first use and
    cached in ``namespace``; ``submodules``: names of sub-modules imported on first use.
    """
    exports = dict(exports or {})

    def __getattr__(name: str):
        if name in submodules:
            return importlib.import_module(f"{owner}.{name}")
        if name not in exports:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace.get("__all__", ())) | set(exports)
                      | set(submodules))

    return __getattr__, __dir__
