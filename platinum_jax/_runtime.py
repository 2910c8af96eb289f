"""Process-wide JAX settings that the command line turns on and scripts may opt into."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DiskCachedFunction", "disk_cached", "enable_compilation_cache", "enable_float64",
           "executables_directory"]

CACHE_ENV = "PLATINUM_JAX_CACHE"


def enable_float64() -> None:
    """Run JAX in double precision (``jax_enable_x64``) for the rest of the process.

    Fits, Hessians, Laplace covariances and the weights' linear solves need float64: in float32
    their rounding shows in the reported digits. The library never switches it on by itself
    (importing it changes no global setting); every command of the command line and every
    benchmark calls this before it makes an array, and scripts should too. Arrays made before
    the call keep their float32 type.
    """
    import jax

    jax.config.update("jax_enable_x64", True)


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path | None:
    """Keep compiled XLA programs on disk so the next process skips compiling them.

    A NUTS sampler or a bootstrap of the stitching fit takes seconds to compile; with the cache
    a second run of the same shapes loads the program instead (PyMC keeps its compiled C code
    the same way).  The directory is ``path``, else ``$PLATINUM_JAX_CACHE``, else
    ``~/.cache/platinum-jax/xla`` (under ``$XDG_CACHE_HOME`` when that is set).  Set
    ``PLATINUM_JAX_CACHE=off`` to disable it.  The package's least-squares solvers also keep
    their compiled executables in its ``executables/`` sub-directory, so a later process skips
    tracing them as well (see :class:`DiskCachedFunction`).  Call once,
    early; it changes ``jax_compilation_cache_dir`` for the whole process.  Returns the directory
    used, or None when disabled.
    """
    import jax

    chosen = path if path is not None else os.environ.get(CACHE_ENV)
    global _EXECUTABLES
    if chosen is not None and str(chosen).strip().lower() in ("off", "0", "none", ""):
        _EXECUTABLES = None
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
    _EXECUTABLES = directory / "executables"
    return directory


# ---------------------------------------------------------------------- compiled executables
# The persistent compilation cache skips XLA's compilation, but every process still traces and
# lowers each program to look it up: for the least-squares solver (a Levenberg-Marquardt loop)
# that is most of a warm command's time. With the cache on, solvers keyed by
# :func:`disk_cached` also keep their compiled executable, serialised, beside it, and a later
# process of the same package, JAX, device and shapes loads it without tracing.
_EXECUTABLES: Path | None = None
_SOURCE_DIGEST: str | None = None


def executables_directory() -> Path | None:
    """Where serialised executables go (``executables/`` in the compilation cache directory),
    or None when :func:`enable_compilation_cache` has not been called in this process."""
    return _EXECUTABLES


def _source_digest() -> str:
    """Digest of every Python file of the package: any code change invalidates every entry,
    whatever the version number says (an editable install keeps one version across edits)."""
    global _SOURCE_DIGEST
    if _SOURCE_DIGEST is None:
        import hashlib

        root = Path(__file__).resolve().parent
        h = hashlib.sha256()
        for f in sorted(root.rglob("*.py")):
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
        _SOURCE_DIGEST = h.hexdigest()
    return _SOURCE_DIGEST


def _host_cpu() -> str:
    """The processor's model and instruction-set flags: XLA compiles CPU programs for the
    host's features, so a cache shared between machines (a network home) must tell them apart."""
    import hashlib
    import platform

    try:
        info = Path("/proc/cpuinfo").read_text()
        lines = [ln for ln in info.splitlines() if ln.startswith(("model name", "flags"))][:2]
    except OSError:
        lines = []
    text = "\n".join([platform.machine(), *lines])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _environment_key() -> list[str]:
    import jax
    import jaxlib

    devices = jax.devices()
    return [
        f"jax {jax.__version__}",
        f"jaxlib {jaxlib.__version__}",
        f"backend {jax.default_backend()}",
        f"devices {[d.device_kind for d in devices]}",
        f"host {_host_cpu()}",
        f"x64 {bool(jax.config.jax_enable_x64)}",
        f"source {_source_digest()}",
    ]


def _custom_call_targets(module_text: str) -> set[str]:
    import re

    targets = set(re.findall(r"custom_call\s*@([\w.$-]+)", module_text))
    return targets | set(re.findall(r'call_target_name\s*=\s*"([^"]+)"', module_text))


def _portable(module_text: str) -> bool:
    """Whether a lowered program may be loaded by another process: its only custom calls are
    LAPACK's (see :func:`_prepare_custom_calls`). A host callback (``jax.debug.print``,
    ``eqx.error_if``) holds a pointer into this process, and other targets may need set-up
    that loading skips, so such programs stay in memory."""
    return all(t.startswith("lapack_") for t in _custom_call_targets(module_text))


_CACHE_HITS = [0]  # hits of JAX's persistent compilation cache in this process


def _count_cache_hits(event: str, **kwargs) -> None:
    if event == "/jax/compilation_cache/cache_hits":
        _CACHE_HITS[0] += 1


def _listen_for_cache_hits() -> None:
    if not _LISTENING:
        import jax

        jax.monitoring.register_event_listener(_count_cache_hits)
        _LISTENING.append(True)


_LISTENING: list = []


def _prepare_custom_calls() -> None:
    # JAX fills in the LAPACK routines behind CPU Cholesky and eigh solves when it lowers a
    # program that uses them; an executable loaded without lowering would call empty slots
    # (a crash). jax.export does the same before running a deserialised program.
    from jax._src.lax import linalg

    linalg.initialize_lapack()


class DiskCachedFunction:
    """A jitted function whose compiled executables persist across processes.

    ``key`` must name everything the traced program depends on besides its arguments'
    shapes and dtypes (the model and its settings, fixed entries, solver options); the
    package's source, the JAX and jaxlib versions, the backend, the devices and the x64 switch
    are added here, and the arguments' tree structure, shapes and dtypes per call. An entry
    that cannot be read, or whose recorded key differs from the one expected, is rebuilt and
    rewritten (atomically), never used; one that loads but fails to run is deleted and the
    function traced as usual. Only freshly compiled executables are written: one taken from
    the compilation cache serialises incompletely, so a process whose compilation cache
    already holds the program (e.g. after an edit of the package that left the solver's
    program unchanged) keeps tracing it until that cache is emptied.
    """

    def __init__(self, jitted, key: str):
        self.jitted = jitted
        self.key = key
        self._compiled: dict[str, object] = {}
        _listen_for_cache_hits()

    def __call__(self, *args):
        directory = _EXECUTABLES
        if directory is None:
            return self.jitted(*args)
        full = self._full_key(args)
        compiled = self._compiled.get(full)
        if compiled is not None:
            return compiled(*args)
        loaded = self._load(directory, full)
        if loaded is None:
            compiled = self._build(directory, full, args)
            self._compiled[full] = compiled
            return compiled(*args)
        try:
            out = loaded(*args)
        except Exception:  # an entry that loads but cannot run: drop it, trace instead
            self._path(directory, full).unlink(missing_ok=True)
            self._compiled[full] = self.jitted
            return self.jitted(*args)
        self._compiled[full] = loaded
        return out

    def lower(self, *args, **kwargs):
        return self.jitted.lower(*args, **kwargs)

    def _full_key(self, args) -> str:
        import jax

        leaves, tree = jax.tree_util.tree_flatten(args)
        shapes = [(tuple(getattr(x, "shape", ())), str(getattr(x, "dtype", type(x).__name__)),
                   bool(getattr(getattr(x, "aval", None), "weak_type", False))) for x in leaves]
        return "\n".join([self.key, *_environment_key(), f"tree {tree}", f"args {shapes}"])

    @staticmethod
    def _path(directory: Path, full: str) -> Path:
        import hashlib

        return directory / (hashlib.sha256(full.encode()).hexdigest() + ".executable")

    def _load(self, directory: Path, full: str):
        import pickle

        path = self._path(directory, full)
        if not path.exists():
            return None
        try:
            from jax.experimental.serialize_executable import deserialize_and_load

            with path.open("rb") as f:
                stored_key, uses_lapack, payload, in_tree, out_tree = pickle.load(f)
            if stored_key != full:
                return None  # a digest collision or a foreign file: rebuild
            if uses_lapack:
                _prepare_custom_calls()
            return deserialize_and_load(payload, in_tree, out_tree)
        except Exception:  # unreadable, truncated, from another jaxlib: rebuild
            return None

    def _build(self, directory: Path, full: str, args):
        import pickle

        lowered = self.jitted.lower(*args)
        hits = _CACHE_HITS[0]
        compiled = lowered.compile()
        if _CACHE_HITS[0] != hits:
            # Taken from the compilation cache: such an executable serialises without all of
            # its code (loading it elsewhere fails), so only a fresh compilation is kept.
            return compiled
        try:
            text = lowered.as_text()
            if not _portable(text):
                return compiled
            from jax.experimental.serialize_executable import serialize

            payload, in_tree, out_tree = serialize(compiled)
            # LAPACK's set-up (about 0.2 s: it imports SciPy's linear algebra) only where needed
            uses_lapack = bool(_custom_call_targets(text))
            blob = pickle.dumps((full, uses_lapack, payload, in_tree, out_tree))
        except Exception:  # a backend that cannot serialise: run from memory only
            return compiled
        path = self._path(directory, full)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
        try:
            directory.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(blob)
            os.replace(tmp, path)  # readers see the whole entry or none
        except OSError:  # a read-only or full cache directory: the next run compiles again
            tmp.unlink(missing_ok=True)
        return compiled


def disk_cached(jitted, key: str | None):
    """``jitted`` wrapped as a :class:`DiskCachedFunction` under ``key`` (None: unchanged)."""
    return jitted if key is None else DiskCachedFunction(jitted, key)
