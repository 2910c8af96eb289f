"""Output directories that lose nothing and mix nothing.

Every command that writes a directory of results goes through :func:`output_directory`:

* ``--out`` naming an existing file is an error, not a traceback;
* the directory is locked (``fcntl.flock`` on ``.platinum-jax.lock``) while a run writes it, so
  a second run into the same directory stops at once with an error instead of mixing its files
  with the first run's;
* a directory that already holds anything is refused unless ``overwrite=True`` (``--overwrite``),
  and then only the files a manifest (``.platinum-jax-manifest.json``) lists as written by an
  earlier run of the same command are removed; files the package did not write are never
  deleted, and their presence is an error that names them;
* every file is written to a temporary name in the same directory and renamed into place, so a
  reader sees the old complete file or the new complete file, never a truncated one, and a run
  killed mid-write leaves no half-written result under a real name.

The manifest records each file before it is renamed into place and marks the run complete at
the end, so a killed run's leftovers are still known to be the command's own.

Example::

    with output_directory(args.out, "stitch", overwrite=args.overwrite) as out:
        out.write("capabilities.csv", caps.to_csv)          # writer(path, *args, **kwargs)
        out.write("fit.png", fig.savefig, dpi=120)
        out.write_text("fit.json", json.dumps(summary))
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["OutputDir", "output_directory", "atomic_write", "MANIFEST", "LOCK"]

MANIFEST = ".platinum-jax-manifest.json"
LOCK = ".platinum-jax.lock"
_PARTIAL = ".platinum-jax-partial-"


def _partial_name(name: str) -> str:
    # The real name is kept as the suffix so writers that infer a format from it (savefig,
    # to_netcdf) still do.
    return f"{_PARTIAL}{os.getpid()}-{name}"


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def atomic_write(path: str | os.PathLike, writer: Callable[..., object], *args, **kwargs) -> Path:
    """Write ``path`` by ``writer(temporary path, *args, **kwargs)`` and rename it into place.

    The temporary file sits in the same directory (so the rename is atomic) and is removed if
    the writer fails; the file at ``path`` is then left as it was.
    """
    path = Path(path)
    tmp = path.with_name(_partial_name(path.name))
    try:
        writer(tmp, *args, **kwargs)
        if not tmp.exists():
            raise RuntimeError(f"writing {path.name} produced no file")
        with open(tmp, "rb") as fh:  # the data reach the disk before the name does
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            _remove(tmp)
        raise
    return path


class OutputDir:
    """A claimed output directory; create it with :func:`output_directory`."""

    def __init__(self, path: Path, command: str):
        self.path = path
        self.command = command
        self.written: list[str] = []
        self._state: list[str] = []
        self.finished = True  # set False (abandon) to leave the manifest marked incomplete

    def abandon(self) -> None:
        """Leave the run marked incomplete in the manifest (e.g. after Ctrl-C)."""
        self.finished = False

    def write(self, name: str, writer: Callable[..., object], *args, **kwargs) -> Path:
        """Write ``name`` atomically with ``writer(path, *args, **kwargs)`` (e.g. ``df.to_csv``)."""
        if Path(name).name != name or name.startswith(".platinum-jax"):
            raise ValueError(f"output name {name!r} must be a plain file name")
        self._record(name)
        return atomic_write(self.path / name, writer, *args, **kwargs)

    def write_text(self, name: str, text: str) -> Path:
        """Write ``text`` (UTF-8) to ``name`` atomically."""
        return self.write(name, lambda p: Path(p).write_text(text, encoding="utf-8"))

    def own(self, name: str) -> Path:
        """Record ``name`` (a file or directory the command fills itself, such as a cache or a
        chunk store) as the command's own, so a later ``--overwrite`` may remove it."""
        self._record(name, state=True)
        return self.path / name

    def _record(self, name: str, state: bool = False) -> None:
        target = self._state if state else self.written
        if name not in target:
            target.append(name)
            self._save_manifest(complete=False)

    def _save_manifest(self, complete: bool) -> None:
        doc = {"command": self.command, "complete": complete, "files": self.written,
               "state": self._state, "updated": datetime.now(UTC).isoformat(timespec="seconds")}
        atomic_write(self.path / MANIFEST,
                     lambda p: Path(p).write_text(json.dumps(doc, indent=1) + "\n"))


def _read_manifest(path: Path) -> dict | None:
    file = path / MANIFEST
    if not file.exists():
        return None
    try:
        doc = json.loads(file.read_text())
        if isinstance(doc, dict) and isinstance(doc.get("files"), list):
            return doc
    except (OSError, ValueError):
        pass
    return None


def _lock(path: Path, option: str):
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory locks, rely on the checks
        return None
    fh = open(path / LOCK, "a+")  # noqa: SIM115 - held open for the whole run
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise ValueError(
            f"{option} {path} is being written by another platinum-jax run right now; wait for "
            "it to finish or choose another directory"
        ) from None
    return fh


@contextlib.contextmanager
def output_directory(
    path: str | os.PathLike,
    command: str,
    *,
    overwrite: bool = False,
    keep: Iterable[str] = (),
    option: str = "--out",
    hint: str = "",
) -> Iterator[OutputDir]:
    """Claim ``path`` for one run of ``command``; yields an :class:`OutputDir` to write through.

    ``keep``: names the command deliberately reuses between runs (a judge cache, the chunk
    store of a resumed sweep); they neither count as existing content nor are removed by
    ``overwrite``.  Raises ``ValueError`` naming ``option`` when the path is a file, is locked
    by another run, or holds content that may not be replaced; ``hint`` is added to the
    message for a non-empty directory (e.g. how to resume instead).
    """
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{option} {out} is an existing file; give a directory path")
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{option} {out}: cannot create the directory ({exc.strerror})") from None
    handle = _lock(out, option)
    try:
        keep = set(keep)
        manifest = _read_manifest(out)
        ours = set()
        if manifest is not None and manifest.get("command") == command:
            ours = set(manifest["files"]) | set(manifest.get("state", []))
        present = sorted(p.name for p in out.iterdir()
                         if p.name not in (LOCK, MANIFEST) and p.name not in keep)
        if present and not overwrite:
            what = (f"the results of an earlier `{manifest['command']}` run"
                    if manifest is not None else "files")
            raise ValueError(
                f"{option} {out} already holds {what} ({', '.join(present[:5])}"
                f"{', ...' if len(present) > 5 else ''}); pass --overwrite to replace them"
                f"{' (' + hint + ')' if hint else ''}, or choose an empty directory"
            )
        foreign = [n for n in present if n not in ours and not n.startswith(_PARTIAL)]
        if foreign:
            raise ValueError(
                f"{option} {out} holds files platinum-jax {command} did not write "
                f"({', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''}); --overwrite "
                "only removes a command's own outputs: move them away or choose another directory"
            )
        for name in present:  # only the command's own files and stale partial files
            _remove(out / name)
        od = OutputDir(out, command)
        od._state = sorted(n for n in keep if (out / n).exists())
        od._save_manifest(complete=False)
        try:
            yield od
        except BaseException:
            # A run that failed before writing anything into a directory it created leaves
            # no empty directory behind.
            if created and not od.written and not any((out / n).exists() for n in od._state):
                for name in (MANIFEST, LOCK):
                    with contextlib.suppress(OSError):
                        (out / name).unlink()
                with contextlib.suppress(OSError):
                    out.rmdir()
            raise
        if od.finished:
            od._save_manifest(complete=True)
    finally:
        if handle is not None:
            handle.close()  # closing the descriptor releases the lock
