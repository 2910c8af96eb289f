"""The package's shape, guarded by tests rather than reviews: one home per public name, a
public surface of bounded size, small modules, every registered model exported, and an engine
that names no model."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import platinum_jax

PACKAGE = Path(platinum_jax.__file__).resolve().parent
MAX_LINES = 500
MAX_PUBLIC_NAMES = 450
# a module longer than MAX_LINES says why in its docstring, with these words
LONG_MODULE_NOTE = "longer than 500 lines because"


def _public_modules() -> list[str]:
    """Every module whose dotted path has no private part: the package's faces."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(p.startswith("_") for p in parts[1:]):
            out.append(".".join(parts))
    return out


def _faces() -> dict[str, list[str]]:
    faces = {}
    for name in _public_modules():
        module = importlib.import_module(name)
        if hasattr(module, "__all__"):
            faces[name] = list(module.__all__)
    return faces


def _homes(faces: dict[str, list[str]]) -> dict[int, list[str]]:
    """Each exported object (by identity) and the faces that export it."""
    where: dict[int, list[str]] = {}
    seen = {}
    for face, names in faces.items():
        module = importlib.import_module(face)
        for name in names:
            obj = getattr(module, name)
            if isinstance(obj, (int, float, str, bool, tuple)) and not callable(obj):
                key = (face, name)  # constants compare by value: count each export once
            else:
                key = id(obj)
            seen[key] = obj
            where.setdefault(key, []).append(f"{face}.{name}")
    return where


def test_every_public_name_has_one_home():
    twice = {k: v for k, v in _homes(_faces()).items() if len(v) > 1}
    assert not twice, "exported from two places: " + "; ".join(" and ".join(v) for v in twice.values())


def test_the_public_surface_is_bounded():
    total = sum(len(names) for names in _faces().values())
    assert total < MAX_PUBLIC_NAMES, f"{total} public names (the bound is {MAX_PUBLIC_NAMES})"


def test_every_exported_name_exists():
    for face, names in _faces().items():
        module = importlib.import_module(face)
        missing = [n for n in names if not hasattr(module, n)]
        assert not missing, f"{face}.__all__ names what it does not have: {missing}"


def test_every_registered_model_is_exported():
    import platinum_jax.models as models

    for name, cls in models.MODELS.items():
        assert cls.__name__ in models.__all__, f"{name}: {cls.__name__} is not exported"
        assert getattr(models, cls.__name__) is cls


def test_the_engine_exports_nothing_named_for_one_model():
    import platinum_jax.inference as inference

    named = [n for n in inference.__all__
             if any(word in n.lower() for word in ("rosetta", "stitch", "layout", "anchor"))]
    assert not named, f"platinum_jax.inference exports names of one model: {named}"


def _long_modules() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        n = text.count("\n")
        if n > MAX_LINES:
            doc = ast.get_docstring(ast.parse(text)) or ""
            if LONG_MODULE_NOTE not in doc:
                out.append(f"{path.relative_to(PACKAGE.parent)} ({n} lines)")
    return out


def test_modules_stay_small():
    long = _long_modules()
    assert not long, (f"modules over {MAX_LINES} lines that do not say why ('"
                      f"{LONG_MODULE_NOTE} ...' in the docstring): " + ", ".join(long))


@pytest.mark.parametrize("face", ["platinum_jax", "platinum_jax.agency", "platinum_jax.models"])
def test_the_checks_see_a_planted_duplicate(face, monkeypatch):
    module = importlib.import_module(face)
    faces = _faces()
    name = faces[face][0]
    planted = dict(faces, **{"platinum_jax.planted": [name]})
    monkeypatch.setitem(importlib.sys.modules, "platinum_jax.planted",
                        type(module)("platinum_jax.planted"))
    setattr(importlib.sys.modules["platinum_jax.planted"], name, getattr(module, name))
    twice = {k: v for k, v in _homes(planted).items() if len(v) > 1}
    assert any(f"platinum_jax.planted.{name}" in v for v in twice.values())
