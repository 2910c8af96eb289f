"""Digests of user callables, so that a stored sweep is not resumed after the code behind it
changed: what a function computes (its bytecode, constants, defaults, closure and the globals
it reads, recursively to a bounded depth), not where it sits in a file."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["callable_fingerprint"]


def callable_fingerprint(fn: Callable) -> str:
    """A digest of what ``fn`` computes, so that a stored sweep is not resumed after an edit.

    Hashes the qualified name, the bytecode (``co_code``), constants (``co_consts``, nested
    functions and lambdas included) and the names it looks up (``co_names``: ``p.M`` and
    ``p.Sigma`` differ only there), together with the *values* it depends on: defaults,
    closure cells and module-level globals it reads.  Values are described by their contents
    (numbers, strings, arrays by dtype, shape and bytes, containers, functions and objects
    recursively); a value with no stable description (its repr holds a memory address) adds
    only its type name.  Line numbers are left out, so moving code keeps the fingerprint.
    """
    h = hashlib.sha256()
    _describe(fn, h, 0, set())
    return h.hexdigest()


_MAX_DEPTH = 6  # deep enough for helpers of helpers; bounded so large object graphs stay cheap


def _describe(x: Any, h, depth: int, seen: set[int]) -> None:
    import functools
    import types

    def put(*parts):
        h.update(repr(parts).encode())

    if x is None or isinstance(x, bool | int | float | complex | str | bytes):
        put(type(x).__name__, x)
        return
    if isinstance(x, np.ndarray | np.generic | jax.Array):
        if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        arr = np.ascontiguousarray(np.asarray(x))
        put("array", arr.dtype.str, arr.shape)
        h.update(hashlib.sha256(arr.tobytes()).digest())
        return
    if depth >= _MAX_DEPTH or id(x) in seen:
        put("ref", type(x).__qualname__)
        return
    seen = seen | {id(x)}
    nxt = depth + 1
    if isinstance(x, types.ModuleType):
        put("module", x.__name__)
    elif isinstance(x, type):
        put("class", x.__module__, x.__qualname__)
    elif isinstance(x, types.CodeType):
        put("code", x.co_code, x.co_names)
        for c in x.co_consts:
            _describe(c, h, nxt, seen)
    elif isinstance(x, types.FunctionType):
        code = x.__code__
        put("function", x.__module__, x.__qualname__)
        _describe(code, h, nxt, seen)
        _describe(x.__defaults__, h, nxt, seen)
        _describe(x.__kwdefaults__, h, nxt, seen)
        for cell in x.__closure__ or ():
            try:
                _describe(cell.cell_contents, h, nxt, seen)
            except ValueError:  # an empty cell (a name bound later)
                put("empty cell")
        names = _global_names(code)
        for name in sorted(names & x.__globals__.keys()):
            put("global", name)
            _describe(x.__globals__[name], h, nxt, seen)
    elif isinstance(x, types.MethodType):
        put("method")
        _describe(x.__func__, h, nxt, seen)
        _describe(x.__self__, h, nxt, seen)
    elif isinstance(x, functools.partial):
        put("partial")
        for part in (x.func, x.args, x.keywords):
            _describe(part, h, nxt, seen)
    elif isinstance(x, tuple | list | set | frozenset):
        items = sorted(x, key=repr) if isinstance(x, set | frozenset) else x
        put(type(x).__name__, len(items))
        for item in items:
            _describe(item, h, nxt, seen)
    elif isinstance(x, dict):
        put("dict", len(x))
        for key in sorted(x, key=repr):
            _describe(key, h, nxt, seen)
            _describe(x[key], h, nxt, seen)
    elif isinstance(x, eqx.Module) or hasattr(x, "__dict__"):
        # Objects (Primitives, equinox modules, callable instances): type, call code, fields.
        put("object", type(x).__module__, type(x).__qualname__)
        call = next((k.__dict__["__call__"] for k in type(x).__mro__ if "__call__" in k.__dict__),
                    None)
        if isinstance(call, types.FunctionType):
            _describe(call, h, nxt, seen)
        fields = vars(x) if hasattr(x, "__dict__") else {}
        _describe(dict(fields), h, nxt, seen)
    else:
        text = repr(x)
        put("value", type(x).__qualname__, "" if " at 0x" in text else text)


def _global_names(code) -> set[str]:
    """Names ``code`` and the code objects nested in it may read as globals."""
    import types

    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return names
