"""Readers for Epoch AI's benchmarking-hub export (the ``raw/`` directory of the stitching data).

The Rosetta Stone paper fits ``score = sigmoid(alpha_b (C_m - D_b))`` to a long table of
(model m, benchmark b, score y in [0, 1]) triples assembled from two kinds of files:

* ``benchmarks_runs.csv`` -- Epoch's own evaluations, one row per run, the score already a
  fraction in ``Best score (across scorers)`` and ``Scores`` holding ``scorer:mean±stderr``;
* ``external_benchmark_<name>.csv`` -- one external leaderboard per file, each with its own
  score column and number format (``"85.2%"`` text, ``85.2`` numbers, or marks out of ten).

:func:`read_epoch_raw` turns them into that long table with the paper's rules; the table in
``scores_long.csv`` next to ``raw/`` is what it returns with its default arguments.  The other
readers give the side tables the analyses need: release dates and flags per benchmark, METR
time horizons, the distillation list and training compute.

Units: scores and standard errors are fractions in [0, 1]; dates are ``datetime64[ns]``
(``NaT`` when unknown); time horizons are minutes of skilled-human working time; training
compute is in FLOP.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from platinum_jax._names import normalise_names

from ._epoch_files import (  # noqa: F401  (some are re-exported for the tests and readers)
    _EXTERNAL_SPECS,
    BENCHMARK_INFO_FILE,
    DISTILLED_FILE,
    EPOCH_RUN_BENCHMARKS,
    EXTERNAL_BENCHMARKS,
    METR_FILE,
    OUTPUT_COLUMNS,
    RUNS_FILE,
    VERSIONS_FILE,
    Duplicates,
    EpochDataWarning,
    _check_dir,
    _model_release_dates,
    _parse_dates,
    _parse_fraction,
    _read_csv,
    _read_external,
    _read_runs,
    _require,
    _row_label,
    _show,
)

__all__ = [
    "EPOCH_RUN_BENCHMARKS",
    "EXTERNAL_BENCHMARKS",
    "EpochDataWarning",
    "read_benchmark_info",
    "read_distilled_models",
    "read_epoch_raw",
    "read_metr_horizons",
    "read_model_compute",
]


def read_benchmark_info(raw_dir: str | Path) -> pd.DataFrame:
    """Benchmark release dates and flags from ``benchmark_optim.csv``.

    Returns a DataFrame indexed by ``benchmark`` (names as in the score table) with columns
    ``benchmark_release_date`` (datetime64, the paper/announcement date), ``optimized_for``
    (bool: developers are believed to have targeted it), ``is_coding``, ``is_math`` (bool) and
    ``source_url`` (where the date comes from).
    """
    raw_dir = _check_dir(raw_dir)
    path = raw_dir / BENCHMARK_INFO_FILE
    flags = ("optimized_for", "is_coding", "is_math")
    info = _read_csv(
        path, ("benchmark", "benchmark_release_date") + flags, "benchmark release dates and flags"
    )
    info = info[info["benchmark"].notna()].reset_index(drop=True)
    out = pd.DataFrame(
        {"benchmark_release_date": _parse_dates(info, "benchmark_release_date", path).to_numpy()},
        index=pd.Index(
            normalise_names(info["benchmark"], what="benchmark", source=path.name).to_numpy(),
            name="benchmark",
        ),
    )
    for flag in flags:
        text = info[flag].astype("string").str.strip().str.upper()
        unknown = ~text.isin(["TRUE", "FALSE"])
        if unknown.any():
            pos = int(np.flatnonzero(unknown.to_numpy())[0])
            raise ValueError(
                f"{path.name}: {flag!r} at {_row_label(info, pos)} is {_show(info[flag].iloc[pos])}; "
                "write TRUE or FALSE"
            )
        out[flag] = (text == "TRUE").to_numpy()
    out["source_url"] = (
        info["source"].astype("string").to_numpy() if "source" in info.columns else pd.NA
    )
    if out.index.duplicated().any():
        raise ValueError(
            f"{path.name}: benchmark(s) {out.index[out.index.duplicated()].tolist()} are listed "
            "more than once; keep one row per benchmark"
        )
    return out


# --------------------------------------------------------------------------- the score table
def _reduce_duplicates(scores: pd.DataFrame, how: Duplicates) -> pd.DataFrame:
    """One row per (model, benchmark); ``scores`` must be in file order (for ``source``)."""
    keys = ["model", "benchmark"]
    dup = scores.duplicated(keys, keep=False)
    if not dup.any():
        return scores
    if how == "error":
        pairs = scores.loc[dup, keys].drop_duplicates().head(5).to_records(index=False).tolist()
        raise ValueError(
            f"{int(dup.sum())} rows repeat a (model, benchmark) pair, e.g. {pairs}; pass "
            "duplicates='max' (the paper's choice) or 'mean' to combine them"
        )
    groups = scores.groupby(keys, sort=False)
    # The paper keeps the first cited source of a pair, whichever row holds the best score.
    firsts = groups[["source", "model_release_date"]].first()
    if how == "max":
        # score, stderr and n_items all come from the best-scoring row (first one on ties).
        order = scores.sort_values("score", ascending=False, kind="stable")
        best = order.drop_duplicates(keys).set_index(keys)
        combined = best[["score", "stderr", "n_items"]]
    elif how == "mean":
        combined = groups["score"].mean().to_frame()
        k = groups["score"].size()
        # The mean of k independent estimates has stderr sqrt(sum se^2) / k; unknown if any is.
        var_sum = scores["stderr"].pow(2).groupby([scores[c] for c in keys], sort=False).sum()
        any_unknown = groups["stderr"].count() < k
        combined["stderr"] = (np.sqrt(var_sum) / k).where(~any_unknown)
        # Keep the item count only when every combined row agrees on it.
        same_n = groups["n_items"].nunique(dropna=False) == 1
        combined["n_items"] = groups["n_items"].first().where(same_n)
    else:
        raise ValueError(f"duplicates must be 'max', 'mean' or 'error', got {how!r}")
    return combined.join(firsts).reset_index()


def read_epoch_raw(
    raw_dir: str | Path,
    *,
    min_benchmarks: int = 4,
    min_release_date: str | pd.Timestamp | None = "default",
    duplicates: Duplicates = "max",
    prepare: Literal["paper", "epoch"] = "paper",
    baselines: str | Path | None = None,
) -> pd.DataFrame:
    """Assemble the stitching paper's long score table from an Epoch ``raw/`` directory.

    Every row is one observed score ``y_{m,b}`` in [0, 1] of model version ``m`` on benchmark
    ``b`` -- the data the stitching model ``y ≈ sigmoid(alpha_b (C_m - D_b))`` is fitted to.

    Rules (each also commented where it is applied):

    * Epoch's runs: the six tasks in :data:`EPOCH_RUN_BENCHMARKS`, score from
      ``Best score (across scorers)``, ``stderr`` from the best scorer in ``Scores``.
    * External leaderboards: one file per benchmark in :data:`EXTERNAL_BENCHMARKS`, each with
      its own score column and format (percent text, 0-100 numbers, or marks out of 10);
      rows without a model version, a score or (where the file cites one) a source are skipped.
    * Models are matched to ``model_versions.csv`` by exact version id; models missing there
      are dropped unless ``min_release_date`` is None (then their date is NaT).
    * Models released before ``min_release_date`` are dropped (unknown dates too).
    * Repeated (model, benchmark) scores are combined by ``duplicates``: ``"max"`` keeps the
      best (the paper), ``"mean"`` averages them, ``"error"`` refuses.
    * Models with fewer than ``min_benchmarks`` distinct benchmarks left are dropped; an
      :class:`EpochDataWarning` lists them, and so does ``frame.attrs["dropped_models"]``.
    * ``benchmark_optim.csv`` (benchmark release dates) is optional: without it every
      benchmark release date is NaT, with an :class:`EpochDataWarning` saying so.

    ``prepare="epoch"`` applies instead the preparation of Epoch's published Capabilities
    Index (:mod:`platinum_jax.importers._epoch_prepare`: scores normalised by per-benchmark
    random baselines and ceilings from ``baselines`` (default: the table shipped in the
    package) and clipped to [0, 1], model versions grouped, groups released before 2023 left
    out, supersession, at least ``min_benchmarks`` benchmarks, best score per group and
    benchmark); ``duplicates`` must then be ``"max"``.

    Parameters
    ----------
    raw_dir
        The ``raw/`` directory.
    min_benchmarks
        Keep models scored on at least this many benchmarks (paper: 4). ``1`` keeps all.
    min_release_date
        Keep models released on or after this date; None: no filter; ``"default"``:
        ``"2022-11-01"`` (the paper) or, with ``prepare="epoch"``, ``"2023-01-01"`` (Epoch).
    duplicates
        ``"max"``, ``"mean"`` or ``"error"``, see above.

    Returns
    -------
    DataFrame with columns ``model, benchmark, score, stderr, n_items, model_release_date,
    benchmark_release_date, source`` and one row per (model, benchmark), sorted by model then
    benchmark.  ``score``/``stderr`` are fractions; ``stderr``/``n_items`` are NaN where a file
    gives none; dates are datetime64 (``NaT`` when unknown).
    """
    if prepare not in ("paper", "epoch"):
        raise ValueError(f"prepare must be 'paper' or 'epoch', got {prepare!r}")
    if prepare == "epoch":
        from ._epoch_prepare import EPOCH_MIN_RELEASE_DATE, read_epoch_prepared

        if duplicates != "max":
            raise ValueError(f"prepare='epoch' keeps the best score per model group and "
                             f"benchmark (Epoch's rule); duplicates={duplicates!r} applies to "
                             "prepare='paper' only")
        info = _check_dir(raw_dir) / BENCHMARK_INFO_FILE
        return read_epoch_prepared(raw_dir, baselines=baselines, min_benchmarks=min_benchmarks,
                                   min_release_date=EPOCH_MIN_RELEASE_DATE
                                   if min_release_date == "default" else min_release_date,
                                   benchmark_dates=read_benchmark_info(raw_dir)[
                                       "benchmark_release_date"] if info.exists() else None)
    if baselines is not None:
        raise ValueError("baselines apply to prepare='epoch' only; the paper's preparation "
                         "uses raw fractions")
    if min_release_date == "default":
        min_release_date = "2022-11-01"
    if isinstance(min_benchmarks, bool) or not isinstance(min_benchmarks, (int, np.integer)):
        raise ValueError(f"min_benchmarks must be a positive integer, got {min_benchmarks!r}")
    if min_benchmarks < 1:
        raise ValueError(f"min_benchmarks must be at least 1, got {min_benchmarks}")
    if duplicates not in ("max", "mean", "error"):
        raise ValueError(f"duplicates must be 'max', 'mean' or 'error', got {duplicates!r}")
    cutoff = None
    if min_release_date is not None:
        try:
            cutoff = pd.Timestamp(min_release_date)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"min_release_date {min_release_date!r} is not a date; use e.g. '2022-11-01' or "
                "None for no date filter"
            ) from exc
    raw_dir = _check_dir(raw_dir)

    # Read every file first so a missing one is reported before any work is done.
    _require(raw_dir / RUNS_FILE, "Epoch's own evaluations")
    _require(raw_dir / VERSIONS_FILE, "model version release dates")
    for spec in _EXTERNAL_SPECS:
        _require(
            raw_dir / f"external_benchmark_{spec.file}.csv", f"the {spec.benchmark} leaderboard"
        )

    parts = [_read_runs(raw_dir)] + [_read_external(raw_dir, spec) for spec in _EXTERNAL_SPECS]
    scores = pd.concat(parts, ignore_index=True)
    release = _model_release_dates(raw_dir)
    scores["model_release_date"] = release.reindex(scores["model"].to_numpy()).to_numpy()

    if cutoff is not None:
        # Unknown or earlier release dates fail the test, so such models leave the table.
        scores = scores[scores["model_release_date"] >= cutoff]
    # Without a date filter, models missing from model_versions.csv stay in with a NaT date.
    scores = _reduce_duplicates(scores.reset_index(drop=True), duplicates)

    # A model needs enough benchmarks to be placed on the common scale (paper: at least 4).
    n_bench = scores.groupby("model")["benchmark"].transform("nunique")
    dropped = sorted(set(scores.loc[n_bench < min_benchmarks, "model"].astype(str)))
    scores = scores[n_bench >= min_benchmarks]

    notes: list[EpochDataWarning] = []
    if dropped:
        shown = ", ".join(dropped[:10]) + (f", ... ({len(dropped) - 10} more)" if len(dropped) > 10 else "")
        notes.append(
            EpochDataWarning(
                f"{len(dropped)} model(s) scored on fewer than {min_benchmarks} benchmarks were "
                f"left out (min_benchmarks={min_benchmarks}; lower it to keep them): {shown}",
                models=dropped,
            )
        )
    if (raw_dir / BENCHMARK_INFO_FILE).exists():
        release = read_benchmark_info(raw_dir)["benchmark_release_date"]
    else:
        # Release dates of benchmarks only feed date-based analyses; the scores stand without.
        release = pd.Series(dtype="datetime64[ns]")
        notes.append(
            EpochDataWarning(
                f"{BENCHMARK_INFO_FILE} is missing from {raw_dir}: every benchmark release date "
                "is unknown (NaT); add the file for analyses by benchmark date"
            )
        )
    # Benchmarks without a row in benchmark_optim.csv keep an unknown (NaT) release date.
    scores = scores.assign(
        benchmark_release_date=release.reindex(scores["benchmark"].to_numpy()).to_numpy()
    )
    out = scores.loc[:, list(OUTPUT_COLUMNS)].sort_values(["model", "benchmark"], kind="stable")
    out = out.astype(
        {
            "model": "string",
            "benchmark": "string",
            "score": "float64",
            "stderr": "float64",
            "n_items": "float64",
            "model_release_date": "datetime64[ns]",
            "benchmark_release_date": "datetime64[ns]",
            "source": "string",
        }
    )
    out = out.reset_index(drop=True)
    out.attrs["dropped_models"] = dropped
    out.attrs["notes"] = [str(note) for note in notes]
    for note in notes:
        warnings.warn(note, stacklevel=2)
    return out


# --------------------------------------------------------------------------- side tables
_CONFIDENCE_ORDER = ("low", "medium", "high")



def read_distilled_models(
    raw_dir: str | Path,
    *,
    min_confidence: Literal["low", "medium", "high"] = "low",
    as_frame: bool = False,
) -> frozenset[str] | pd.DataFrame:
    """Models believed to be distilled from a larger teacher, from ``distilled_models.csv``.

    The file gives, per model version id, a TRUE/FALSE ``distilled`` judgement, the curator's
    ``confidence`` in it (low < medium < high) and free-text ``notes``.  A distilled model's
    capability partly reflects its teacher's compute, so algorithmic-progress fits leave
    these models out.

    Returns the frozenset of model ids judged distilled with confidence at least
    ``min_confidence`` (default: every distilled judgement), or with ``as_frame=True`` the whole
    table indexed by ``model`` with columns ``distilled`` (bool), ``confidence`` (ordered
    categorical) and ``notes``.
    """
    if min_confidence not in _CONFIDENCE_ORDER:
        raise ValueError(
            f"min_confidence must be one of {_CONFIDENCE_ORDER}, got {min_confidence!r}"
        )
    raw_dir = _check_dir(raw_dir)
    path = raw_dir / DISTILLED_FILE
    table = _read_csv(path, ("model", "distilled", "confidence"), "the distillation list")
    table = table[table["model"].notna()].reset_index(drop=True)
    flag = table["distilled"].astype("string").str.strip().str.upper()
    confidence = table["confidence"].astype("string").str.strip().str.lower()
    for name, values, allowed in (
        ("distilled", flag, ("TRUE", "FALSE")),
        ("confidence", confidence, _CONFIDENCE_ORDER),
    ):
        unknown = ~values.isin(allowed).fillna(False)
        if unknown.any():
            pos = int(np.flatnonzero(unknown.to_numpy())[0])
            raise ValueError(
                f"{path.name}: {name!r} at {_row_label(table, pos)} is "
                f"{_show(table[name].iloc[pos])}; allowed values are {list(allowed)}"
            )
    frame = pd.DataFrame(
        {
            "distilled": (flag == "TRUE").to_numpy(dtype=bool),
            "confidence": pd.Categorical(
                confidence.to_numpy(), categories=_CONFIDENCE_ORDER, ordered=True
            ),
            "notes": (
                table["notes"].astype("string").to_numpy() if "notes" in table.columns else pd.NA
            ),
        },
        index=pd.Index(
            normalise_names(table["model"], what="model", source=path.name).to_numpy(), name="model"
        ),
    )
    if frame.index.duplicated().any():
        raise ValueError(
            f"{path.name}: model(s) {frame.index[frame.index.duplicated()].tolist()[:5]} are "
            "listed more than once; keep one judgement per model"
        )
    if as_frame:
        return frame
    chosen = frame["distilled"] & (frame["confidence"] >= min_confidence)
    return frozenset(frame.index[chosen.to_numpy()])


def read_metr_horizons(raw_dir: str | Path) -> pd.DataFrame:
    """METR 50% time horizons from ``external_benchmark_metr.csv``.

    The 50% time horizon of a model is the length of task (measured by how long it takes a
    skilled human) that the model completes with probability 0.5.

    Returns a DataFrame indexed by ``model`` (version id) with columns ``horizon_minutes``,
    ``ci_low_minutes``, ``ci_high_minutes`` (METR's confidence interval; all three in minutes
    of human working time), ``average_score`` (mean success over METR's task suite, a fraction)
    and ``release_date`` (from ``model_versions.csv``; NaT if the id is not listed there).
    """
    raw_dir = _check_dir(raw_dir)
    path = raw_dir / METR_FILE
    columns = ("Model version", "Time horizon", "CI_low", "CI_high")
    table = _read_csv(path, columns, "METR time horizons")
    table = table[table["Model version"].notna()].reset_index(drop=True)
    out = pd.DataFrame(
        index=pd.Index(
            normalise_names(table["Model version"], what="model", source=path.name).to_numpy(),
            name="model",
        )
    )
    for source, name in (
        ("Time horizon", "horizon_minutes"),
        ("CI_low", "ci_low_minutes"),
        ("CI_high", "ci_high_minutes"),
    ):
        minutes = pd.to_numeric(table[source], errors="coerce").to_numpy(dtype=np.float64)
        broken = table[source].notna().to_numpy() & ~(minutes > 0)
        if broken.any():
            pos = int(np.flatnonzero(broken)[0])
            raise ValueError(
                f"{path.name}: {source!r} at {_row_label(table, pos)} is "
                f"{_show(table[source].iloc[pos])}; time horizons must be positive minutes"
            )
        out[name] = minutes
    outside = (out["ci_low_minutes"] > out["horizon_minutes"]) | (
        out["ci_high_minutes"] < out["horizon_minutes"]
    )
    if outside.any():
        raise ValueError(
            f"{path.name}: for {outside[outside].index.tolist()[:5]} the horizon lies outside its "
            "own interval [CI_low, CI_high]; the two CI columns may be swapped"
        )
    if "average_score" in table.columns:
        out["average_score"] = _parse_fraction(
            table, "average_score", "fraction", path, "average score"
        ).to_numpy()
    if out.index.duplicated().any():
        raise ValueError(
            f"{path.name}: model(s) {out.index[out.index.duplicated()].tolist()[:5]} have more "
            "than one time horizon; keep one row per model"
        )
    out["release_date"] = _model_release_dates(raw_dir).reindex(out.index).to_numpy()
    return out


def read_model_compute(path: str | Path) -> pd.DataFrame:
    """Training compute per model from ``model_compute.csv`` (it sits beside ``raw/``).

    Returns a DataFrame indexed by ``model`` with columns ``release_date`` (datetime64, NaT when
    blank), ``organization``, ``training_compute_flop`` (total training compute in FLOP, > 0)
    and ``compute_confidence`` (Epoch's label for the estimate: Confident, Likely or
    Speculative).
    """
    path = Path(path)
    if path.is_dir():
        path = path / "model_compute.csv"
    if not path.is_file():
        raise FileNotFoundError(
            f"model compute file {str(path)!r} does not exist; pass the model_compute.csv that "
            "sits beside the Epoch raw/ directory (columns model, release_date, organization, "
            "training_compute_flop, compute_confidence)"
        )
    columns = (
        "model",
        "release_date",
        "organization",
        "training_compute_flop",
        "compute_confidence",
    )
    table = _read_csv(path, columns, "training compute per model")
    table = table[table["model"].notna()].reset_index(drop=True)
    flop = pd.to_numeric(table["training_compute_flop"], errors="coerce").to_numpy(np.float64)
    broken = ~(np.isfinite(flop) & (flop > 0))
    if broken.any():
        pos = int(np.flatnonzero(broken)[0])
        raise ValueError(
            f"{path.name}: 'training_compute_flop' at {_row_label(table, pos)} is "
            f"{_show(table['training_compute_flop'].iloc[pos])}; it must be a positive FLOP count "
            "(drop the row if the compute is unknown)"
        )
    out = pd.DataFrame(
        {
            "release_date": _parse_dates(table, "release_date", path).to_numpy(),
            "organization": table["organization"].astype("string").to_numpy(),
            "training_compute_flop": flop,
            "compute_confidence": table["compute_confidence"].astype("string").to_numpy(),
        },
        index=pd.Index(
            normalise_names(table["model"], what="model", source=path.name).to_numpy(), name="model"
        ),
    )
    if out.index.duplicated().any():
        raise ValueError(
            f"{path.name}: model(s) {out.index[out.index.duplicated()].tolist()[:5]} are listed "
            "more than once; keep one row per model"
        )
    return out
