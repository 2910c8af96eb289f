"""A griffe extension for the API reference: Sphinx roles in docstrings become links.

Docstrings here name other objects the Sphinx way, ``:func:`fit_stitching```. Markdown would
show the role literally; this extension replaces each role with an optional cross-reference to
the object it names, looked up from the docstring's own scope outwards (class, module, package).
A name that cannot be found, or that the reference does not render, is shown as code.
"""

from __future__ import annotations

import html
import re

import griffe

_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|obj|exc):`(~?)([^`<>]+)`")


def _lookup(scope: griffe.Object | None, name: str) -> str | None:
    """The public path of ``name`` seen from ``scope`` and its parents, or None."""
    while scope is not None:
        for candidate in (name, name.removeprefix(f"{scope.path}.")):
            try:
                found = scope if candidate == scope.path else scope[candidate]
            except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
                continue
            return found.path
        scope = scope.parent
    return None


def _root(obj: griffe.Object) -> griffe.Object:
    while obj.parent is not None:
        obj = obj.parent
    return obj


class SphinxRolesToLinks(griffe.Extension):
    """Rewrite ``:role:`name``` in every docstring of a package once it is loaded."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        seen: set[int] = set()
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if obj.docstring is not None and ":" in obj.docstring.value:
                obj.docstring.value = _ROLE.sub(lambda m, o=obj: self._link(o, m), obj.docstring.value)
            stack.extend(m for m in obj.members.values() if not m.is_alias)

    @staticmethod
    def _link(obj: griffe.Object, match: re.Match) -> str:
        short, name = match[1] == "~", match[2].strip().removesuffix("()")
        title = f"<code>{html.escape(name.rsplit('.', 1)[-1] if short else name)}</code>"
        scope = obj if obj.is_class or obj.is_module else obj.parent
        path = _lookup(scope, name) or _lookup(_root(obj), name.removeprefix("platinum_jax."))
        if path is None:
            return title
        return f'<autoref identifier="{html.escape(path)}" optional>{title}</autoref>'
