"""Process-wide JAX settings that the command line turns on and scripts may opt into."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["enable_compilation_cache"]

CACHE_ENV = "PLATINUM_JAX_CACHE"


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path | None:
    """Keep compiled XLA programs on disk so the next process skips compiling them.

    A NUTS sampler or a bootstrap of the stitching fit takes seconds to compile; with the cache
    a second run of the same shapes loads the program instead (PyMC keeps its compiled C code
    the same way).  The directory is ``path``, else ``$PLATINUM_JAX_CACHE``, else
    ``~/.cache/platinum-jax/xla`` (under ``$XDG_CACHE_HOME`` when that is set).  Set
    ``PLATINUM_JAX_CACHE=off`` to disable it.  Call once,
    early; it changes ``jax_compilation_cache_dir`` for the whole process.  Returns the directory
    used, or None when disabled.
    """
    import jax

    chosen = path if path is not None else os.environ.get(CACHE_ENV)
    if chosen is not None and str(chosen).strip().lower() in ("off", "0", "none", ""):
        return None
    if chosen is not None:
        directory = Path(chosen)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        directory = Path(base) / "platinum-jax" / "xla"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(
            f"cannot create the compilation cache directory {directory} ({exc}); set "
            f"{CACHE_ENV} to a writable directory, or to 'off'"
        ) from exc
    jax.config.update("jax_compilation_cache_dir", str(directory))
    # Cache every program: a least-squares run compiles a dozen programs of 0.05-0.3 s each,
    # which together are most of a warm command's time; loading one takes milliseconds.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return directory
