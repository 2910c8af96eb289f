"""Name look-ups shared by every table: an error type for unknown names and a helpful message."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

__all__ = ["UnknownNameError", "close_matches_message", "DEPRECATED_LIKELIHOOD_NAMES",
           "likelihood_name"]


class UnknownNameError(KeyError, ValueError):
    """A name that is not in a table (both a ``KeyError`` and a ``ValueError``)."""

    def __str__(self) -> str:  # KeyError would print the message with quotes around it
        return str(self.args[0]) if self.args else ""


def close_matches_message(kind: str, name: str, known: Sequence[str]) -> str:
    """Message for an unknown ``name`` of ``kind`` listing the closest of ``known`` (difflib)."""
    known = [str(k) for k in known]
    close = difflib.get_close_matches(str(name), known, n=5, cutoff=0.4)
    if not close:  # fall back on case-insensitive substring hits, then on nothing
        close = [k for k in known if str(name).lower() in k.lower()][:5]
    hint = f"closest names: {', '.join(repr(c) for c in close)}" if close else "no close names"
    return f"unknown {kind} {name!r} ({len(known)} {kind}s in the table); {hint}"


#: older spellings of likelihood names, still accepted with a DeprecationWarning -> the name
#: used everywhere now (the registry :data:`platinum_jax.models.likelihoods.LIKELIHOODS`)
DEPRECATED_LIKELIHOOD_NAMES = {"betabinomial": "beta_binomial"}


def likelihood_name(name: str) -> str:
    """The canonical name of a likelihood: ``name`` itself, or for an older spelling of
    :data:`DEPRECATED_LIKELIHOOD_NAMES` its replacement, with a ``DeprecationWarning``."""
    if name in DEPRECATED_LIKELIHOOD_NAMES:
        import warnings

        new = DEPRECATED_LIKELIHOOD_NAMES[name]
        warnings.warn(f"likelihood name {name!r} is deprecated; use {new!r}", DeprecationWarning,
                      stacklevel=3)
        return new
    return name
