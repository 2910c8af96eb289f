"""Outputs that lose nothing and mix nothing.

Every command that writes a directory of results goes through :func:`output_directory`, and
every command that writes single files through :func:`output_files`:

* ``--out`` naming a file where a directory belongs (or the reverse) is an error, not a
  traceback;
* the output is locked (``fcntl.flock``) while a run writes it, so a second run to the same
  ``--out`` stops at once with an error instead of mixing its files with the first run's;
* existing results are refused unless ``overwrite=True`` (``--overwrite``), and then only the
  files a manifest (``.platinum-jax-manifest.json``) lists as written by an earlier run of the
  same command are replaced; files the package did not write are never deleted, and their
  presence is an error that names them;
* a run computes and writes everything into a staging directory (or temporary files) beside
  the target and swaps it in only as its last step (rename the old one aside, rename the new
  one in, delete the old one), so a failure or an interrupt at any point before leaves the
  previous results exactly as they were; staging left by a killed run is removed by the next.

Example::

    with output_directory(args.out, "stitch", overwrite=args.overwrite) as out:
        out.write("capabilities.csv", caps.to_csv)          # writer(path, *args, **kwargs)
        out.write("fit.png", fig.savefig, dpi=120)
        out.write_text("fit.json", json.dumps(summary))
    # here, and only here, --out holds the new results
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["OutputDir", "output_directory", "output_files", "atomic_write", "discard_in_flight",
           "MANIFEST", "LOCK"]

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
    """A claimed output directory; create it with :func:`output_directory`.

    ``path`` is the target directory; :meth:`write` puts files into a staging directory beside
    it, which replaces the target only when the run ends without an error.
    """

    def __init__(self, path: Path, command: str, stage: Path, *, fresh: bool,
                 keep: Iterable[str] = ()):
        self.path = path
        self.command = command
        self.written: list[str] = []
        self._state: list[str] = []
        self._stage = stage
        self._fresh = fresh  # the target held no earlier results: state may live in it
        self._keep = set(keep)
        self.finished = True  # set False (abandon) to keep the previous results in place

    def abandon(self) -> None:
        """Discard this run's outputs and leave the previous results in place (e.g. after
        Ctrl-C)."""
        self.finished = False

    def write(self, name: str, writer: Callable[..., object], *args, **kwargs) -> Path:
        """Write ``name`` with ``writer(path, *args, **kwargs)`` (e.g. ``df.to_csv``) into the
        staging directory; returns the path the file will have once the run completes. A name
        with folders (``data/a/b.json``) is written below them; the top folder is the output."""
        parts = name.split("/")
        if (any(not p or p in (".", "..") or Path(p).name != p for p in parts)
                or name.startswith(".platinum-jax")):
            raise ValueError(f"output name {name!r} must be a plain file name or a relative "
                             "path of plain names")
        self._record(parts[0])  # a tree is owned, and replaced, by its top folder
        target = self._stage / name
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, writer, *args, **kwargs)
        return self.path / name

    def write_text(self, name: str, text: str) -> Path:
        """Write ``text`` (UTF-8) to ``name``."""
        return self.write(name, lambda p: Path(p).write_text(text, encoding="utf-8"))

    def own(self, name: str) -> Path:
        """Record ``name`` (a file or directory the command fills itself, such as a cache or a
        chunk store) as the command's own, so a later ``--overwrite`` may remove it.

        Kept names (``keep=``) and any state of a directory that held no earlier results live
        in the target itself, so an interrupted run's finished work survives for the next one;
        other state is staged with the outputs.
        """
        self._record(name, state=True)
        return (self.path if name in self._keep or self._fresh else self._stage) / name

    def _record(self, name: str, state: bool = False) -> None:
        target = self._state if state else self.written
        if name not in target:
            target.append(name)
            self._save_manifest(complete=False)

    def _save_manifest(self, complete: bool) -> None:
        doc = {"command": self.command, "complete": complete, "files": self.written,
               "state": self._state, "updated": datetime.now(UTC).isoformat(timespec="seconds")}
        text = json.dumps(doc, indent=1) + "\n"
        places = [self._stage] + ([self.path] if self._fresh and not complete else [])
        for place in places:
            atomic_write(place / MANIFEST, lambda p: Path(p).write_text(text))

    def _swap(self, old_own: set[str]) -> None:
        """Put the staged run in place of the target (the last step of a run).

        Whatever in the target is not a replaced output of the earlier run (kept state, the
        user's files) moves into the staging directory first; then the target is renamed aside,
        the staging directory renamed in, and the old one deleted.  A run killed between the
        two renames is undone by the next run (:func:`_recover`).
        """
        with SWAP_LOCK:
            self._save_manifest(complete=True)
            for entry in list(self.path.iterdir()):
                name = entry.name
                if name in (LOCK, MANIFEST) or name.startswith(_PARTIAL):
                    continue
                if (name in old_own and name not in self._keep and name not in self._state) \
                        or (self._stage / name).exists():
                    continue
                os.replace(entry, self._stage / name)
            aside = _sibling(self.path, _ASIDE)
            os.replace(self.path, aside)
            os.replace(self._stage, self.path)
            _forget(self._stage)
            with contextlib.suppress(OSError):
                _remove(aside)


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


def _lock(path: Path, option: str, lock: Path | None = None):
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory locks, rely on the checks
        return None
    file = lock or path / LOCK
    busy = ValueError(f"{option} {path} is being written by another platinum-jax run right now; "
                      "wait for it to finish or choose another path")
    # A run that ends removes the lock file it made, so the file locked here may have been
    # unlinked between opening and locking it: only a lock on the file still at the path counts.
    for _ in range(8):
        fh = open(file, "a+")  # noqa: SIM115 - held open for the whole run
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            raise busy from None
        try:
            if os.path.samestat(os.fstat(fh.fileno()), os.stat(file)):
                return fh
        except OSError:
            pass
        fh.close()
    raise busy


# --------------------------------------------------------------------------- staging siblings
_STAGING = "platinum-jax-staging"
_ASIDE = "platinum-jax-old"
SWAP_LOCK = threading.RLock()  # held by a swap; the interrupt handler waits for it
# Staging paths of runs in progress, for the interrupt handler, each with what undoes its
# claim of the target (None for single files).
_IN_FLIGHT: dict[Path, Callable[[], None] | None] = {}


def _sibling(target: Path, kind: str) -> Path:
    return target.with_name(f".{target.name}.{kind}-{os.getpid()}")


def _siblings(target: Path, kind: str) -> list[Path]:
    pattern = f".{glob.escape(target.name)}.{kind}-*"
    return sorted(target.parent.glob(pattern))


def _forget(path: Path) -> None:
    _IN_FLIGHT.pop(path, None)


def discard_in_flight() -> list[Path]:
    """Delete the staging files and directories of every run in progress in this process
    and undo their claims (the interrupt handler's clean-up): the targets keep their previous
    contents, and a lock file, manifest or directory a run made is removed again.  Waits for a
    swap under way to finish.  Returns the targets' staging paths removed."""
    with SWAP_LOCK:
        gone = list(_IN_FLIGHT)
        for path in gone:
            undo = _IN_FLIGHT.pop(path, None)
            with contextlib.suppress(OSError):
                _remove(path)
            if undo is not None:
                with contextlib.suppress(OSError):
                    undo()
        return gone


def _recover(target: Path) -> None:
    """Undo what a killed run left beside ``target``: a target renamed aside but not replaced
    comes back; stale staging and aside copies are removed.  Call with the target locked, or
    (for the restore) before creating it."""
    asides = _siblings(target, _ASIDE)
    if not target.exists() and asides:
        with contextlib.suppress(FileNotFoundError):
            os.replace(asides.pop(), target)
    for stale in asides + _siblings(target, _STAGING):
        if stale not in _IN_FLIGHT:
            with contextlib.suppress(OSError):
                _remove(stale)


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
    """Claim ``path`` for one run of ``command`` (:func:`_claimed_directory`); in a
    multi-process run only process 0 claims and writes it, the others write into a temporary
    directory that is deleted at the end, and all stop together when process 0 cannot claim
    it (:mod:`platinum_jax._distributed`)."""
    from platinum_jax import _distributed

    with contextlib.ExitStack() as stack:
        if not _distributed.joined():
            yield stack.enter_context(_claimed_directory(path, command, overwrite=overwrite,
                                                         keep=keep, option=option, hint=hint))
            return
        if _distributed.is_writer():
            try:
                od = stack.enter_context(_claimed_directory(
                    path, command, overwrite=overwrite, keep=keep, option=option, hint=hint))
            except (ValueError, OSError) as exc:
                _distributed.agree(str(exc))
                raise
            _distributed.agree(None)
        else:
            _distributed.agree(None)  # raises what process 0 could not do
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(
                prefix="platinum-jax-process-")))
            od = OutputDir(Path(path), command, scratch, fresh=False)
        yield od


@contextlib.contextmanager
def _claimed_directory(
    path: str | os.PathLike,
    command: str,
    *,
    overwrite: bool = False,
    keep: Iterable[str] = (),
    option: str = "--out",
    hint: str = "",
) -> Iterator[OutputDir]:
    """Claim ``path`` for one run of ``command``; yields an :class:`OutputDir` to write through.

    The run writes into a staging directory beside ``path``; when the ``with`` block ends
    without an error the staging directory replaces ``path`` (rename the old one aside, rename
    the new one in, delete the old one).  An error, ``abandon()`` or an interrupt at any point
    leaves ``path`` exactly as it was.

    ``keep``: names the command deliberately reuses between runs (a judge cache, the chunk
    store of a resumed sweep); they neither count as existing content nor are removed by
    ``overwrite``.  Raises ``ValueError`` naming ``option`` when the path is a file, is locked
    by another run, or holds content that may not be replaced; ``hint`` is added to the
    message for a non-empty directory (e.g. how to resume instead).
    """
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{option} {out} is an existing file; give a directory path")
    if out.parent.exists() and not out.exists():
        _recover(out)  # a target a killed run renamed aside comes back before anything else
    made = [out, *out.parents]  # the directories this claim creates, deepest first
    made = made[:next(i for i, d in enumerate(made) if d.exists())]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{option} {out}: cannot create the directory ({exc.strerror})") from None
    had = {name for name in (LOCK, MANIFEST) if (out / name).exists()}
    handle = _lock(out, option)
    stage = _sibling(out, _STAGING)
    od = None

    def undo() -> None:
        """Leave ``out`` as this run found it (a refusal, a failure, ``abandon()``, Ctrl-C):
        the lock file and the manifest it made go, and so do the directories it created;
        only work kept in the target for the next run (an interrupted sweep's chunks) stays,
        with the manifest that vouches for it."""
        kept = od is not None and any((out / n).exists() for n in od._state)
        for name in {LOCK} - had if kept else {LOCK, MANIFEST} - had:
            with contextlib.suppress(OSError):
                (out / name).unlink()
        if made and not kept:
            with contextlib.suppress(OSError):
                _remove(out)
            for parent in made[1:]:
                with contextlib.suppress(OSError):
                    parent.rmdir()  # only while empty

    _IN_FLIGHT[stage] = undo  # from here on an interrupt undoes the claim too
    stage_handle = None
    try:
        _recover(out)
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
        stage.mkdir()
        stage_handle = _lock(stage, option)  # the staged directory is locked before it is in place
        fresh = manifest is None and not present
        od = OutputDir(out, command, stage, fresh=fresh, keep=keep)
        od._state = sorted(n for n in keep if (out / n).exists())
        od._save_manifest(complete=False)
        yield od
        if od.finished:
            od._swap(ours)  # forgets the stage: nothing below undoes a completed run
    finally:
        if stage_handle is not None:
            stage_handle.close()
        with SWAP_LOCK:
            if stage in _IN_FLIGHT:  # not swapped in, nor discarded by the interrupt handler
                with contextlib.suppress(OSError):
                    _remove(stage)
                _forget(stage)
                undo()
        if handle is not None:
            handle.close()  # closing the descriptor releases the lock


@contextlib.contextmanager
def output_files(
    path: str | os.PathLike,
    *,
    overwrite: bool = False,
    companions: Iterable[str | os.PathLike] = (),
    option: str = "--out",
) -> Iterator[Callable[..., Path]]:
    """Claim the single file ``path`` (and ``companions``, files written beside it) for one
    run; yields ``write(path, writer, *args, **kwargs)``.

    A second run to the same file stops at once with an error naming ``option`` (a lock file
    ``.NAME.platinum-jax.lock`` beside it, removed at the end).  Existing files are refused
    unless ``overwrite``.  Every file is written to a temporary name; all of them are renamed
    into place together when the ``with`` block ends without an error, so a failure or an
    interrupt leaves the previous files exactly as they were.  Temporary files of a killed
    run are removed by the next one.  In a multi-process run only process 0 writes; the
    others' files go to a temporary directory that is deleted at the end.
    """
    from platinum_jax import _distributed

    if _distributed.joined() and not _distributed.is_writer():
        with tempfile.TemporaryDirectory(prefix="platinum-jax-process-") as scratch:
            yield lambda target, writer, *args, **kwargs: (
                writer(Path(scratch) / Path(target).name, *args, **kwargs), Path(target))[1]
        return
    out = Path(path)
    files = [out, *map(Path, companions)]
    if out.is_dir():
        raise ValueError(f"{option} {out} is a directory; name a file")
    if not out.parent.is_dir():
        raise FileNotFoundError(f"{option} {out}: the directory {out.parent} does not exist")
    lock = out.with_name(f".{out.name}.platinum-jax.lock")
    handle = _lock(out, option, lock)
    staged: dict[Path, Path] = {}
    try:
        for f in files:  # partial files of a killed run
            for stale in _siblings(f, _STAGING):
                with contextlib.suppress(OSError):
                    _remove(stale)
        existing = [f for f in files if f.exists()]
        if existing and not overwrite:
            raise ValueError(f"{', '.join(map(str, existing))} already exist(s); pass "
                             "--overwrite to replace them")

        def write(target, writer: Callable[..., object], *args, **kwargs) -> Path:
            target = Path(target)
            if target not in files:
                raise ValueError(f"{target} is not one of the claimed outputs {files}")
            tmp = target.with_name(f".{target.name}.{_STAGING}-{os.getpid()}{target.suffix}")
            staged[target] = tmp
            _IN_FLIGHT[tmp] = None
            writer(tmp, *args, **kwargs)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            return target

        yield write
        with SWAP_LOCK:
            for target, tmp in staged.items():
                os.replace(tmp, target)
                _forget(tmp)
    finally:
        with SWAP_LOCK:
            for tmp in staged.values():
                if tmp in _IN_FLIGHT:
                    with contextlib.suppress(OSError):
                        _remove(tmp)
                    _forget(tmp)
        if handle is not None:
            with contextlib.suppress(OSError):
                lock.unlink()
            handle.close()
