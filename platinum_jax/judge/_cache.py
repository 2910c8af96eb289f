"""On-disk SQLite cache of judge calls, so reruns are free and interrupted runs resume.

Each finished call (parsed reply or recorded failure) is one row keyed by a SHA-256 of
(provider, model, prompt hash, sampling settings incl. the sample index).  The base URL is not
part of the key, so that caches stay valid when a server moves; keep one cache per endpoint
when different servers answer under the same model name.  Calls that gave up on transient
errors (429, 5xx, timeouts) are not finished and are not stored.  Rows are committed as
soon as a call completes; WAL journaling lets readers and the writer proceed together and keeps
the file consistent if the process is killed mid-run.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["JudgmentCache", "CacheCorruptError", "call_key", "prompt_hash", "set_aside"]


class CacheCorruptError(ValueError):
    """The cache file is not a readable judge cache (damaged, truncated, or another file)."""


def _corrupt(path, exc: Exception) -> CacheCorruptError:
    return CacheCorruptError(
        f"judge cache {path} is damaged or not a judge cache ({exc}); rebuild it with "
        "--rebuild-cache (the file is set aside and finished calls are asked again), or give "
        "another file with --cache"
    )


def set_aside(path: str | Path) -> Path:
    """Rename a damaged cache (and its ``-wal``/``-shm`` files) to ``NAME.corrupt-TIMESTAMP``
    so that a new one can be built in its place; returns the new name of the main file."""
    path = Path(path)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.replace(target.with_name(target.name + suffix))
    path.replace(target)
    return target

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judgments (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_sha256 TEXT NOT NULL,
    settings TEXT NOT NULL,
    kind TEXT NOT NULL,
    item_id TEXT,
    concept TEXT NOT NULL,
    sample INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    value TEXT,
    raw_replies TEXT NOT NULL,
    error TEXT,
    attempts INTEGER NOT NULL,
    prompt TEXT NOT NULL,
    finished_at TEXT NOT NULL
)
"""
_COLUMNS = ("key", "provider", "model", "prompt_sha256", "settings", "kind", "item_id", "concept",
            "sample", "status", "value", "raw_replies", "error", "attempts", "prompt", "finished_at")


def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def call_key(provider: str, model: str, prompt: str, settings: dict) -> str:
    """Cache key of one call: hash of provider, model, prompt hash and sampling settings."""
    blob = json.dumps({"provider": provider, "model": model, "prompt_sha256": prompt_hash(prompt),
                       "settings": settings}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class JudgmentCache:
    """Thread-safe SQLite store of finished calls (``path=None`` keeps it in memory)."""

    def __init__(self, path: str | Path | None = None):
        self.path = None if path is None else Path(path)
        if self.path is not None and self.path.parent and not self.path.parent.exists():
            raise FileNotFoundError(f"cache directory {self.path.parent} does not exist; create it first")
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(":memory:" if self.path is None else str(self.path),
                                     check_same_thread=False, timeout=60.0)
        try:
            with self._lock:
                if self.path is not None:
                    self._conn.execute("PRAGMA journal_mode=WAL")
                    self._conn.execute("PRAGMA synchronous=NORMAL")
                self._conn.execute(_SCHEMA)
                self._conn.commit()
                cols = [r[1] for r in self._conn.execute("PRAGMA table_info(judgments)")]
                if cols != list(_COLUMNS):
                    raise sqlite3.DatabaseError(f"its judgments table has columns {cols}")
                if self.path is not None:
                    check = self._conn.execute("PRAGMA quick_check").fetchone()[0]
                    if check != "ok":
                        raise sqlite3.DatabaseError(f"integrity check: {check}")
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise _corrupt(self.path, exc) from None

    def get(self, key: str) -> dict | None:
        try:
            with self._lock:
                row = self._conn.execute(
                    f"SELECT {', '.join(_COLUMNS)} FROM judgments WHERE key = ?", (key,)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise _corrupt(self.path, exc) from None
        if row is None:
            return None
        rec = dict(zip(_COLUMNS, row, strict=True))
        try:
            rec["value"] = None if rec["value"] is None else json.loads(rec["value"])
            rec["raw_replies"] = json.loads(rec["raw_replies"])
            rec["settings"] = json.loads(rec["settings"])
        except (TypeError, ValueError):
            return None  # an unreadable row is a call not yet made: it is asked again
        return rec

    def put(self, rec: dict) -> None:
        """Insert or replace one finished call and commit at once."""
        row = dict(rec)
        row["value"] = None if row.get("value") is None else json.dumps(row["value"])
        row["raw_replies"] = json.dumps(list(row.get("raw_replies", [])))
        row["settings"] = json.dumps(row["settings"], sort_keys=True)
        row.setdefault("finished_at", datetime.now(UTC).isoformat(timespec="seconds"))
        values = tuple(row.get(c) for c in _COLUMNS)
        with self._lock:
            self._conn.execute(
                f"INSERT OR REPLACE INTO judgments ({', '.join(_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(_COLUMNS))})", values)
            self._conn.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> JudgmentCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
