"""The shared lazy-export and deprecation hooks (``platinum_jax._deprecation``) on a module built
here: public names load once, old names warn on every use and name their new home, and an old
signature's dropped keywords and shorter return are honoured or refused."""

from __future__ import annotations

import sys
import types
import warnings

import pytest

from platinum_jax._deprecation import Moved, module_hooks


@pytest.fixture
def homes(monkeypatch):
    new = types.ModuleType("planted_home")
    new.solve = lambda x, *, tol=1e-8: (2 * x, "cost", True, "extra")
    new.Thing = type("Thing", (), {})
    monkeypatch.setitem(sys.modules, "planted_home", new)
    owner = types.ModuleType("planted_owner")
    owner.__all__ = ["Thing"]
    moved = {"OldThing": Moved("planted_home", "Thing"),
             "old_solve": Moved("planted_home", "solve", " (see the guide)", per_call=True,
                                dropped={"damping": (0.5, "the solver picks it")}, prefix=2)}
    owner.__getattr__, owner.__dir__ = module_hooks(
        "planted_owner", vars(owner), exports={"Thing": "planted_home"}, moved=moved)
    return owner, new


def test_exports_load_once_and_are_cached(homes):
    owner, new = homes
    assert "Thing" not in vars(owner)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert owner.Thing is new.Thing
    assert vars(owner)["Thing"] is new.Thing  # the next look-up skips the hook
    with pytest.raises(AttributeError, match="planted_owner.*'nothing'"):
        owner.nothing  # noqa: B018


def test_an_old_name_warns_on_every_use_and_names_its_home(homes):
    owner, new = homes
    for _ in range(2):
        with pytest.warns(DeprecationWarning,
                          match=r"planted_owner.OldThing is deprecated: it moved to "
                                r"planted_home.Thing; .*from planted_home import Thing"):
            assert owner.OldThing is new.Thing
    assert {"OldThing", "old_solve", "Thing"} <= set(dir(owner))


def test_an_old_signature_warns_per_call_and_refuses_a_dropped_keyword(homes):
    owner, _ = homes
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shim = owner.old_solve  # looking it up does not warn; calling it does
    assert shim.__name__ == "old_solve"
    with pytest.warns(DeprecationWarning, match=r"import solve\) \(see the guide\)"):
        assert shim(3, damping=0.5, tol=1e-3) == (6, "cost")  # the default is accepted
    with pytest.warns(DeprecationWarning), \
            pytest.raises(ValueError, match="damping=0.1 is no longer configurable: the solver"):
        shim(3, damping=0.1)
