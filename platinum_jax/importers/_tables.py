"""The formats the package read before the log readers: a tidy long table and the Epoch layout."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from platinum_jax.importers._common import ImportedResponses, finish

__all__ = ["read_epoch", "read_tidy"]


def read_tidy(paths: str | Path | Iterable[str | Path]) -> ImportedResponses:
    """Long CSV or Parquet files with columns subject, item, response (aliases model, score,
    benchmark as :meth:`ResponseTable.from_frame` reads them) and optional group, trials, se,
    weight. Each file is validated on its own; the rows are stacked with ``file`` provenance."""
    from platinum_jax.data import ResponseTable

    if isinstance(paths, str | Path):
        paths = [paths]
    frames: list[pd.DataFrame] = []
    meta: list[dict] = []
    for path in map(Path, paths):
        table = ResponseTable.read(path, duplicates="error")  # names the file and the bad rows
        frame = table.to_frame()
        frame["file"] = str(path)
        frame["task"] = frame["group"] if "group" in frame.columns else None
        frame["metric"] = "response"
        frames.append(frame)
        meta.append({"file": str(path), "n_responses": len(frame),
                     "n_subjects": table.n_subjects, "n_items": table.n_items})
    return finish(pd.concat(frames, ignore_index=True), meta, [], "tidy",
                  ", ".join(map(str, paths)))


def read_epoch(raw_dirs: str | Path | Iterable[str | Path]) -> ImportedResponses:
    """Epoch AI's benchmarking-hub export (a ``raw/`` directory) as benchmark-level responses:
    subject = model, item = benchmark, response = score in [0, 1], by the Rosetta Stone paper's
    rules (:func:`platinum_jax.stitching.read_epoch_raw` with its defaults)."""
    from platinum_jax.stitching import read_benchmark_info, read_epoch_raw

    if isinstance(raw_dirs, str | Path):
        raw_dirs = [raw_dirs]
    frames: list[pd.DataFrame] = []
    meta: list[pd.DataFrame] = []
    for raw in map(Path, raw_dirs):
        scores = read_epoch_raw(raw)
        frame = pd.DataFrame({"subject": scores["model"], "item": scores["benchmark"],
                              "response": scores["score"], "file": str(raw),
                              "task": scores["benchmark"], "metric": "score"})
        frames.append(frame)
        info = read_benchmark_info(raw).reset_index()
        info.insert(0, "file", str(raw))
        meta.append(info)
    return finish(pd.concat(frames, ignore_index=True), pd.concat(meta, ignore_index=True).to_dict("records"), [], "epoch",
                  ", ".join(map(str, raw_dirs)))
