"""Names shared by every table: an error type for unknown names, a helpful message, and one
normalisation of spellings (stray whitespace) for every reader."""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["UnknownNameError", "close_matches_message", "BAYES_LIKELIHOODS", "COUNT_LIKELIHOODS",
           "check_bayes_likelihood", "normalise_names", "unknown_name_message"]


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


def unknown_name_message(kind: str, name: str, known: Sequence[str]) -> str:
    """An error message for an unknown ``kind`` name that suggests close matches."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown {kind} {name!r}{hint} (known: {', '.join(map(str, known))})"


def normalise_names(values, *, what: str, source: str) -> pd.Series:
    """Model or benchmark names with surrounding whitespace removed and inner runs collapsed.

    Every loader calls this once on its name columns, so ``"Llama-2-70b-hf "`` in one file and
    ``"Llama-2-70b-hf"`` in another name the same model, and ``"Winogrande "`` does not become a
    second benchmark. Names that change are reported (a ``UserWarning`` listing each old and new
    spelling, and which spellings merged into one name), never altered in silence. Missing
    values stay missing. Returns a string Series on the index of ``values``.
    """
    import pandas as pd

    raw = pd.Series(values).astype("string")
    clean = raw.str.strip().str.replace(r"\s+", " ", regex=True)
    changed = (raw != clean).fillna(False).to_numpy(dtype=bool)
    if changed.any():
        pairs = sorted({(str(a), str(b)) for a, b in zip(raw[changed], clean[changed], strict=True)})
        merged = sorted(set(clean[changed].dropna()) & set(raw[~changed].dropna()))
        shown = ", ".join(f"{a!r} -> {b!r}" for a, b in pairs[:10])
        more = f" and {len(pairs) - 10} more" if len(pairs) > 10 else ""
        note = (
            f"; {len(merged)} of them now match a name already spelt that way ({merged[:5]})"
            if merged
            else ""
        )
        warnings.warn(
            f"{source}: {len(pairs)} {what} name(s) had stray whitespace and were normalised: "
            f"{shown}{more}{note}. Fix the spelling in the file to silence this",
            UserWarning,
            stacklevel=3,
        )
    return clean


#: the likelihoods of the Bayesian Rosetta model (``rosetta_bayes``, ``stitch-bayes``), named as
#: in the registry; the count ones need the number of items of each score
BAYES_LIKELIHOODS = ("gaussian", "beta", "binomial", "beta_binomial")
COUNT_LIKELIHOODS = ("binomial", "beta_binomial")


def check_bayes_likelihood(name: str) -> str:
    """``name`` if it is one of :data:`BAYES_LIKELIHOODS`, else a ``ValueError`` listing
    them."""
    if name not in BAYES_LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {BAYES_LIKELIHOODS}, got {name!r}")
    return name
