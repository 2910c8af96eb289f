"""Compiled programs kept by what they depend on, for every layer that compiles one per model
structure (the MAP solvers, Laplace, cross-validation, item diagnostics)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["kept_program"]


def kept_program(cache: dict, key: Hashable | None, problem: Any,
                 build: Callable[[Any], Any], *, limit: int,
                 keep: Callable[[Any], Any] | None = None):
    """``build(bare)`` kept in ``cache`` under ``key``, so a second call with an equal key
    returns the same program. ``bare`` is a shallow copy of ``problem`` without its table: a
    kept program holds no table alive and reads its rows from an argument. ``keep`` wraps a
    program before it is kept; once ``limit`` are kept the oldest goes. ``key=None`` (a
    structure that cannot be hashed) builds afresh and keeps nothing."""
    if key is not None and key in cache:
        return cache[key]
    bare = copy.copy(problem)
    bare.table = None
    fn = build(bare)
    if key is not None:
        if keep is not None:
            fn = keep(fn)
        if len(cache) >= limit:
            cache.pop(next(iter(cache)))  # the oldest
        cache[key] = fn
    return fn
