"""The package's import graph: no cycles, imports only downwards through the floors, and no
reaching into another package's private modules.

Cycles count every import, those inside functions too (the lazy ones that keep the command line
fast): a lazy import cannot fail at import time, but it still ties two modules together, and
two modules that need each other are one idea split in two. Only the ``if TYPE_CHECKING:``
blocks, which only type checkers run, are left out.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import platinum_jax

PACKAGE = Path(platinum_jax.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(tree: ast.Module, *, inside_functions: bool = True):
    """Every ``import`` and ``from ... import`` of a module, or with ``inside_functions=False``
    only those that run when it is imported (top level and top-level ``if``/``try`` blocks);
    never those under ``if TYPE_CHECKING:``."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)  # the body runs only under a type checker
        elif isinstance(node, ast.If | ast.Try):
            for block in (node.body, node.orelse, getattr(node, "finalbody", []),
                          *(h.body for h in getattr(node, "handlers", []))):
                stack.extend(block)
        elif inside_functions:
            stack.extend(ast.iter_child_nodes(node))


@functools.cache
def _graph(*, inside_functions: bool = True) -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        tree = ast.parse(path.read_text(), str(path))
        for node in _imports(tree, inside_functions=inside_functions):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    root = ".".join(base[: len(base) - node.level + 1])
                    mod = f"{root}.{node.module}" if node.module else root
                else:
                    mod = node.module or ""
                # ``from pkg import sub`` imports the sub-module when there is one
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod
                           for a in node.names]
            for t in targets:
                while t and t not in mods:  # ``import a.b.c`` where only ``a.b`` is ours
                    t = t.rpartition(".")[0]
                if t and t != name:
                    graph[name].add(t)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_counting_imports_inside_functions():
    graph = _graph()
    assert "platinum_jax.stitching._fit" in graph  # the walk sees the package
    cycles = _cycles(graph)
    if cycles:
        pytest.fail("import cycles: " + "; ".join(" <-> ".join(c) for c in cycles))


def test_the_walk_sees_imports_inside_functions():
    # fit's run imports the engine inside the function, which keeps `--help` fast
    assert "platinum_jax.inference" in _graph()["platinum_jax.cli.fit"]
    assert "platinum_jax.inference" not in _graph(inside_functions=False)["platinum_jax.cli.fit"]


# The floors, lowest first, each named: a module imports only from its own floor or lower
# ones. Data flows responses -> table -> fit -> parameters -> primitives -> weights (inference/
# never imports design/); the command line is the top. Every sub-package has a floor: a new one
# fails test_every_package_has_a_floor until it is placed.
FLOORS = {
    "base": ("_names", "_outputs", "_runtime", "_memory", "_validation", "_extras", "_lazy",
             "_welfare_ranks", "_programs", "_distributed"),
    "tables and the principal-agent model": ("data", "agency", "platinum_jax"),
    "models and readers": ("models", "importers", "datasets", "rubric"),
    "inference and measured primitives": ("inference", "measured", "judge"),
    "the papers' presets and designs": ("stitching", "design", "efficient", "compare",
                                         "sweeps"),
    "analyses and figures": ("analysis", "plots", "export"),
    "command line": ("cli",),
}
_LEVEL = {pkg: k for k, (_, pkgs) in enumerate(FLOORS.items()) for pkg in pkgs}
_NAMES = list(FLOORS)

# Imports that no floor order forbids but that must never exist: the engine names no model.
NEVER = (("platinum_jax.inference", "platinum_jax.models.rosetta"),
         ("platinum_jax.inference", "platinum_jax.stitching"))


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "platinum_jax"


def _floor(module: str) -> int:
    return _LEVEL[_package(module)]


def _upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} ({_NAMES[_floor(a)]}) -> {b} ({_NAMES[_floor(b)]})"
                  for a, targets in graph.items() for b in targets if _floor(b) > _floor(a))


def _never_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  for src, dst in NEVER
                  if (a == src or a.startswith(src + ".")) and (b == dst or b.startswith(dst + ".")))


def test_every_package_has_a_floor():
    packages = {_package(m) for m in _graph()}
    assert packages <= set(_LEVEL), f"place these packages on a floor: {packages - set(_LEVEL)}"


def test_imports_go_down_the_floors():
    bad = _upward_imports(_graph())
    assert not bad, "imports from a lower floor to a higher one: " + "; ".join(bad)


def test_the_engine_never_imports_a_model_or_its_presets():
    bad = _never_imports(_graph())
    assert not bad, "imports the never rules forbid: " + "; ".join(bad)


def test_floor_check_finds_a_planted_wrong_way_arrow():
    # design (presets) -> analysis (a floor above) is wrong-way, though both are "top" packages
    graph = {"platinum_jax.inference._x": {"platinum_jax.design._y", "platinum_jax.models"},
             "platinum_jax.design._y": {"platinum_jax.inference", "platinum_jax.analysis._z"},
             "platinum_jax.analysis._z": set()}
    assert _upward_imports(graph) == [
        "platinum_jax.design._y (the papers' presets and designs) -> platinum_jax.analysis._z "
        "(analyses and figures)",
        "platinum_jax.inference._x (inference and measured primitives) -> "
        "platinum_jax.design._y (the papers' presets and designs)"]


def test_never_check_finds_a_planted_import():
    graph = {"platinum_jax.inference._bayes": {"platinum_jax.models.rosetta._bayes",
                                               "platinum_jax.models"}}
    assert _never_imports(graph) == [
        "platinum_jax.inference._bayes -> platinum_jax.models.rosetta._bayes"]


def _private_imports_across_packages(mods=None) -> set[tuple[str, str]]:
    """(importing module, imported private module or name) for every import, at any depth, that
    reaches into another sub-package's private modules or names (``platinum_jax.stitching._fit``,
    ``from platinum_jax.stitching import _x``) instead of its ``__init__``'s public API.
    ``mods`` (module name -> file) defaults to the whole package."""
    mods = _modules() if mods is None else mods
    out = set()
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        own = ".".join(name.split(".")[:2])  # platinum_jax.<package>
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    root = ".".join(base[: len(base) - node.level + 1])
                    mod = f"{root}.{node.module}" if node.module else root
                else:
                    mod = node.module or ""
                targets = [f"{mod}.{a.name}" for a in node.names]
            else:
                continue
            for t in targets:
                parts = t.split(".")
                if parts[0] != "platinum_jax" or ".".join(parts[:2]) == own:
                    continue
                if any(p.startswith("_") and not p.startswith("__") for p in parts[2:]):
                    out.add((name, t))
    return out


def test_packages_use_only_public_names_of_other_packages():
    new = sorted(_private_imports_across_packages())
    assert not new, "private imports across packages: " + "; ".join(f"{m} -> {t}" for m, t in new)


def test_private_import_finder_sees_function_level_imports(tmp_path):
    planted = tmp_path / "_planted.py"
    planted.write_text("from platinum_jax.stitching import ScoreTable\n"
                       "from ._trends import x\n\n"
                       "def f():\n"
                       "    from platinum_jax.stitching._engine import layout_problem\n"
                       "    return layout_problem\n")
    found = _private_imports_across_packages({"platinum_jax.analysis._planted": planted})
    # a lazy import inside a function is found; public names and the package's own privates not
    assert found == {("platinum_jax.analysis._planted",
                      "platinum_jax.stitching._engine.layout_problem")}
