"""Every Eval Ever records on disk: the datastore tree, written whole or not at all."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from platinum_jax.export._eee_records import EveryEvalEverLog, ExportError

__all__ = ["write_every_eval_ever"]


def _dumps(obj) -> str:
    try:
        return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:  # a NaN or infinity that slipped past the builders
        raise ExportError(f"a record holds a non-finite number ({exc}); strict JSON cannot "
                          "carry it") from None


def write_every_eval_ever(
    logs: Sequence[EveryEvalEverLog],
    out: str | Path,
    *,
    overwrite: bool = False,
    summary: dict | None = None,
) -> list[Path]:
    """Write records as an Every Eval Ever datastore below ``out``:
    ``out/data/<collection>/<developer>/<model>/<uuid>.json`` and, where a record has
    instance-level lines, ``<uuid>_samples.jsonl`` beside it (its sha256 checksum and row
    count recorded in the aggregate's ``detailed_evaluation_results``). ``summary`` (a dict)
    is written as ``out/export.json``.

    The tree is staged and swapped in as a whole (``overwrite=True`` to replace an earlier
    export); a failure leaves ``out`` as it was. Returns the paths written.

    Check the files with the schema's own validator (Python >= 3.12)::

        every_eval_ever validate --format json 'out/data/*/*/*/*.json*'
    """
    from platinum_jax._outputs import output_directory

    if not logs:
        raise ExportError("no records to write")
    written = []
    with output_directory(out, "export eee", overwrite=overwrite) as target:
        for log in logs:
            record = dict(log.aggregate)
            base = log.path[: -len(".json")]
            if log.samples:
                text = "".join(json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n"
                               for line in log.samples)
                data = text.encode("utf-8")
                name = f"{base}_samples.jsonl"
                written.append(target.write(name, lambda p, d=data: Path(p).write_bytes(d)))
                record["detailed_evaluation_results"] = {
                    "format": "jsonl", "file_path": name, "hash_algorithm": "sha256",
                    "checksum": hashlib.sha256(data).hexdigest(),
                    "total_rows": len(log.samples)}
            written.append(target.write_text(log.path, _dumps(record) + "\n"))
        if summary is not None:
            written.append(target.write_text("export.json", _dumps(summary) + "\n"))
    return written
