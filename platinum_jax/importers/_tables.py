"""The formats the package read before the log readers: a tidy long table and the Epoch layout."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from platinum_jax.importers._common import ImportedResponses, finish

__all__ = ["read_epoch", "read_epoch_scores", "read_tidy"]


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


def read_epoch(raw_dirs: str | Path | Iterable[str | Path], *, min_benchmarks: int = 4,
               min_release_date: str | None = "default", prepare: str = "paper",
               baselines: str | Path | None = None) -> ImportedResponses:
    """Epoch AI's benchmarking-hub export (a ``raw/`` directory) as benchmark-level responses:
    subject = model, item = benchmark, response = score in [0, 1], by the Rosetta Stone paper's
    rules (:func:`platinum_jax.importers.read_epoch_raw`): models released before
    ``min_release_date`` (or of unknown date) and models scored on fewer than
    ``min_benchmarks`` benchmarks are left out.  Every score left out is a row of ``missing``
    with its reason, so nothing leaves the table without a word.  ``prepare="epoch"`` reads
    instead by the rules of Epoch's Capabilities Index (subject = model group, response = the
    baseline-normalised score; ``min_release_date`` then defaults to 2023-01-01 and
    ``baselines`` may name your own table), as :func:`read_epoch_raw` explains."""
    import warnings

    from platinum_jax.importers._epoch import (
        EpochDataWarning,
        read_benchmark_info,
        read_epoch_raw,
    )

    if isinstance(raw_dirs, str | Path):
        raw_dirs = [raw_dirs]
    if min_release_date == "default":
        min_release_date = "2023-01-01" if prepare == "epoch" else "2022-11-01"
    rules = {"prepare": prepare, "baselines": baselines}
    frames: list[pd.DataFrame] = []
    meta: list[pd.DataFrame] = []
    missing: list[dict] = []
    for raw in map(Path, raw_dirs):
        with warnings.catch_warnings():
            # The rules' warnings name the library's arguments; the left-out rows are reported
            # below, one by one, with the command's options instead.
            warnings.simplefilter("ignore", EpochDataWarning)
            every = read_epoch_raw(raw, min_benchmarks=1, min_release_date=None, **rules)
            scores = read_epoch_raw(raw, min_benchmarks=min_benchmarks,
                                    min_release_date=min_release_date, **rules)
        missing += _left_out(every, scores, raw, min_benchmarks, min_release_date)
        missing += [{"subject": "", "item": b, "group": b, "file": str(raw), "task": b,
                     "metric": "score", "reason": "benchmark outside Epoch's index (in_eci "
                     "FALSE in the baseline table): left out by --prepare epoch"}
                    for b in scores.attrs.get("excluded_benchmarks", [])]
        frame = pd.DataFrame({"subject": scores["model"], "item": scores["benchmark"],
                              "response": scores["score"], "file": str(raw),
                              "task": scores["benchmark"], "metric": "score"})
        frames.append(frame)
        # The reader's notes that no missing row carries (an absent benchmark_optim.csv, the
        # scores Epoch's preparation clipped) are said as stitch says them.
        for note in scores.attrs.get("notes", []):
            if "fewer than" not in note and "outside Epoch's index" not in note:
                warnings.warn(EpochDataWarning(note), stacklevel=2)
        if (raw / "benchmark_optim.csv").is_file():
            info = read_benchmark_info(raw).reset_index()
            info.insert(0, "file", str(raw))
            meta.append(info)
    return finish(pd.concat(frames, ignore_index=True),
                  pd.concat(meta, ignore_index=True).to_dict("records") if meta else [],
                  missing, "epoch",
                  ", ".join(map(str, raw_dirs)))


def _left_out(every: pd.DataFrame, kept: pd.DataFrame, raw: Path, min_benchmarks: int,
              min_release_date) -> list[dict]:
    """One record per (model, benchmark) score of ``every`` that ``kept`` lacks, with the rule
    that removed it (the release-date rule applies first, as in the reader)."""
    key = ["model", "benchmark"]
    gone = every.merge(kept[key], on=key, how="left", indicator=True)
    gone = gone[gone["_merge"] == "left_only"]
    cutoff = None if min_release_date is None else pd.Timestamp(min_release_date)
    out = []
    for r in gone.itertuples(index=False):
        date = r.model_release_date
        if cutoff is not None and pd.isna(date):
            reason = ("release date unknown (not in model_versions.csv): left out by "
                      "--min-release-date (--min-release-date none keeps it)")
        elif cutoff is not None and date < cutoff:
            reason = (f"model released {date:%Y-%m-%d}, before --min-release-date "
                      f"{cutoff:%Y-%m-%d}")
        else:
            reason = (f"model scored on fewer than --min-benchmarks {min_benchmarks} "
                      "benchmarks")
        out.append({"subject": str(r.model), "item": str(r.benchmark),
                    "group": str(r.benchmark), "file": str(raw), "task": str(r.benchmark),
                    "metric": "score", "reason": reason})
    return out


def read_epoch_scores(raw_dir: str | Path, *, min_benchmarks: int = 4,
                      min_release_date: str | pd.Timestamp | None = "default",
                      duplicates="max", prepare="paper", baselines=None, **kw):
    """Epoch's ``raw/`` directory as a :class:`~platinum_jax.data.ScoreTable`: the rows of
    :func:`read_epoch_raw` with its filters and preparation (``prepare="paper"``: models with at
    least ``min_benchmarks`` scores, released on or after ``min_release_date``, repeated runs
    reduced by ``duplicates``; ``prepare="epoch"``: Epoch's index, see :func:`read_epoch_raw`);
    other keywords go to :meth:`~platinum_jax.data.ScoreTable.from_frame`."""
    from platinum_jax.data import ScoreTable
    from platinum_jax.importers._epoch import read_epoch_raw

    raw_dir = Path(raw_dir)
    if not raw_dir.is_dir():
        raise FileNotFoundError(f"Epoch raw directory {str(raw_dir)!r} does not exist")
    frame = read_epoch_raw(raw_dir, min_benchmarks=min_benchmarks,
                           min_release_date=min_release_date, duplicates=duplicates,
                           prepare=prepare, baselines=baselines)
    kw.setdefault("name", f"Epoch data in {raw_dir.name}/"
                  + (" (Epoch's preparation)" if prepare == "epoch" else ""))
    return ScoreTable.from_frame(frame, **kw)
