"""The shared lazy-export hooks (``platinum_jax._lazy``) on a module built here: public names
load on first use, once, and a name the module does not export is an AttributeError."""

from __future__ import annotations

import sys
import types

import pytest

from platinum_jax._lazy import module_hooks


@pytest.fixture
def owner(monkeypatch):
    home = types.ModuleType("planted_home")
    home.Thing = type("Thing", (), {})
    monkeypatch.setitem(sys.modules, "planted_home", home)
    sub = types.ModuleType("planted_owner.part")
    monkeypatch.setitem(sys.modules, "planted_owner.part", sub)
    owner = types.ModuleType("planted_owner")
    owner.__all__ = ["Thing"]
    owner.__getattr__, owner.__dir__ = module_hooks(
        "planted_owner", vars(owner), exports={"Thing": "planted_home"}, submodules=("part",))
    return owner, home, sub


def test_a_public_name_loads_once_and_is_cached(owner):
    mod, home, _ = owner
    assert "Thing" not in vars(mod)
    assert mod.Thing is home.Thing
    assert vars(mod)["Thing"] is home.Thing  # later look-ups skip the hook


def test_sub_modules_and_dir(owner):
    mod, _, sub = owner
    assert mod.part is sub
    assert {"Thing", "part"} <= set(dir(mod))


def test_an_unknown_name_is_an_attribute_error(owner):
    mod, _, _ = owner
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        mod.Nope  # noqa: B018
