"""Optional dependencies: import them where they are used, and say which extra provides them.

The core install is the numerical stack.  Modules that need more (the LLM clients of the judge,
for instance) call :func:`require` at the point of use, so importing ``platinum_jax`` or any of
its sub-packages never fails for want of an optional package.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MissingExtraError", "require"]


class MissingExtraError(ImportError):
    """An optional package is not installed; the message names the extra that installs it."""


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module``, or raise :class:`MissingExtraError` with a one-line install hint.

    ``extra`` is the name in ``pip install "platinum-jax[extra]"``; ``purpose`` says what needs
    the module, e.g. ``"the openai judge provider"``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name is not None and exc.name != module and not module.startswith(f"{exc.name}."):
            raise  # the package is there but one of its own imports failed: show that error
        raise MissingExtraError(
            f"{purpose} needs the {module!r} package, which is not installed; "
            f'install it with: pip install "platinum-jax[{extra}]"',
            name=module,
        ) from None
