"""Epoch AI's own preparation of the hub export for its Capabilities Index (``prepare="epoch"``).

The Rosetta Stone paper fits raw fractions of each benchmark (the ``"paper"`` preparation of
:func:`platinum_jax.importers.read_epoch_raw`).  The index Epoch publishes is fitted to scores
prepared differently (as described by Epoch's public ``eci-public`` loader; this is our own
implementation of those rules):

1. **Normalisation.** Each score becomes ``(score - baseline) / (ceiling - baseline)`` with the
   benchmark's random-guessing ``baseline`` (0.25 for four-option multiple choice, 0.5 for two
   options, 1/3 for three-way NLI, 0 for generative and agentic tasks) and its ``ceiling`` (the
   best achievable score), then **clipped** to [0, 1]: a score below chance reads 0.  How many
   scores were clipped at each end is reported (``attrs["clipped"]``), never hidden.
2. **Benchmarks.** Only benchmarks marked ``in_eci`` in the baseline table enter.
3. **Model groups.** Model versions that share a model (``Model`` in ``model_versions.csv``)
   *and* a release date are one model: reasoning-effort settings, chat and base variants of the
   same release.  A group is named by its model; where that model has releases on several
   dates the date is added, ``"Claude 3.5 Sonnet (2024-06-20)"``.  A version without a ``Model``
   is a group of its own, named by its id.  Versions missing from ``model_versions.csv`` leave.
4. **Date cut.** Groups released before ``min_release_date`` (Epoch: 2023-01-01) or of unknown
   date leave.
5. **Supersession.** Where the table says benchmark ``A`` is ``superseded_by`` ``B``, a group
   scored on ``B`` loses its ``A`` scores (the pair would otherwise count twice).
6. **Minimum.** Groups scored on fewer than ``min_benchmarks`` distinct benchmarks (Epoch: 4)
   leave, counted after rules 2-5.
7. **Best score.** One row per (group, benchmark): the highest prepared score.

Unlike the paper's table, leaderboard rows without a cited source are kept (Epoch's loader does
not require one).  The baselines are a table shipped with the package
(``platinum_jax/importers/epoch_baselines.csv``: ``benchmark, baseline, ceiling,
superseded_by, in_eci, source``); pass your own file as ``baselines=``.  Every benchmark the
reader reads needs a row: a missing one is an error, never a default.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from platinum_jax._names import normalise_names

from ._epoch_files import (
    _EXTERNAL_SPECS,
    BENCHMARK_INFO_FILE,
    EPOCH_RUN_BENCHMARKS,
    EXTERNAL_BENCHMARKS,
    OUTPUT_COLUMNS,
    RUNS_FILE,
    VERSIONS_FILE,
    EpochDataWarning,
    _check_dir,
    _parse_dates,
    _read_csv,
    _read_external,
    _read_runs,
    _require,
)

SHIPPED_BASELINES = Path(__file__).with_name("epoch_baselines.csv")
EPOCH_MIN_RELEASE_DATE = "2023-01-01"
_COLUMNS = ("benchmark", "baseline", "ceiling", "source")
_ADD_ROW = (
    "add a row 'benchmark,baseline,ceiling,superseded_by,in_eci,source' for it to a copy of "
    f"{SHIPPED_BASELINES.name} (the random-guessing score, the best achievable score, where "
    "they come from) and pass it with --baselines FILE (library: baselines=FILE)"
)


def read_baselines(path: str | Path | None = None) -> pd.DataFrame:
    """The baseline table (default: the shipped one), checked, indexed by ``benchmark``.

    Columns ``baseline``, ``ceiling`` (floats, ``0 <= baseline < ceiling``), ``superseded_by``
    (a benchmark of the table or missing), ``in_eci`` (bool; TRUE when the column is absent)
    and ``source``.  Raises ``ValueError`` naming the file, the row and the rule broken.
    """
    path = SHIPPED_BASELINES if path is None else Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"baseline table {str(path)!r} does not exist; give a CSV with columns "
            f"{', '.join(_COLUMNS)} (optional superseded_by, in_eci), like {SHIPPED_BASELINES}"
        )
    table = _read_csv(path, _COLUMNS, "baselines and ceilings per benchmark")
    table = table[table["benchmark"].notna()].reset_index(drop=True)
    names = normalise_names(table["benchmark"], what="benchmark", source=path.name)
    if names.duplicated().any():
        raise ValueError(
            f"{path.name}: benchmark(s) {sorted(set(names[names.duplicated()]))} are listed more "
            "than once; keep one row per benchmark"
        )
    out = pd.DataFrame(index=pd.Index(names.to_numpy(), name="benchmark"))
    for col in ("baseline", "ceiling"):
        values = pd.to_numeric(table[col], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{path.name}: {col} of {names.iloc[i]!r} is {table[col].iloc[i]!r}, not a finite "
                f"number; write the {col} as a fraction in [0, 1]"
            )
        out[col] = values
    bad = ~((out["baseline"] >= 0) & (out["baseline"] < out["ceiling"]) & (out["ceiling"] <= 1))
    if bad.any():
        b = bad[bad].index[0]
        raise ValueError(
            f"{path.name}: {b!r} has baseline {out.at[b, 'baseline']!r} and ceiling "
            f"{out.at[b, 'ceiling']!r}; they must satisfy 0 <= baseline < ceiling <= 1 (scores "
            "are fractions; the baseline is the random-guessing score, the ceiling the best one)"
        )
    sup = table.get("superseded_by", pd.Series(pd.NA, index=table.index)).astype("string")
    sup = sup.str.strip().replace("", pd.NA)
    unknown = sup.notna() & ~sup.isin(out.index)
    if unknown.any():
        i = int(np.flatnonzero(unknown.to_numpy())[0])
        raise ValueError(
            f"{path.name}: {names.iloc[i]!r} is superseded_by {sup.iloc[i]!r}, which has no row; "
            "name a benchmark of the table or leave superseded_by empty"
        )
    out["superseded_by"] = sup.to_numpy()
    if "in_eci" in table.columns:
        flag = table["in_eci"].astype("string").str.strip().str.upper()
        if (~flag.isin(["TRUE", "FALSE"]).fillna(False)).any():
            i = int(np.flatnonzero((~flag.isin(["TRUE", "FALSE"]).fillna(False)).to_numpy())[0])
            raise ValueError(
                f"{path.name}: in_eci of {names.iloc[i]!r} is {table['in_eci'].iloc[i]!r}; "
                "write TRUE or FALSE"
            )
        out["in_eci"] = (flag == "TRUE").to_numpy()
    else:
        out["in_eci"] = True
    out["source"] = table["source"].astype("string").to_numpy()
    out.attrs["path"] = str(path)
    return out


def _check_coverage(baselines: pd.DataFrame, benchmarks, path: str) -> None:
    known = set(EPOCH_RUN_BENCHMARKS) | set(EXTERNAL_BENCHMARKS)
    extra = sorted(set(baselines.index) - known)
    if extra:
        raise ValueError(
            f"{Path(path).name}: unknown benchmark(s) {extra}; the Epoch reader reads only "
            f"{sorted(known)} (check the spelling)"
        )
    missing = sorted(set(benchmarks) - set(baselines.index))
    if missing:
        raise ValueError(
            f"{Path(path).name} has no baseline for benchmark(s) {missing}, so their scores "
            f"cannot be normalised; {_ADD_ROW}"
        )


def _groups(raw_dir: Path) -> pd.DataFrame:
    """``group`` and ``group_date`` per model version id (index) from ``model_versions.csv``."""
    path = raw_dir / VERSIONS_FILE
    v = _read_csv(path, ("id", "Model", "Version release date"), "model versions and groups")
    v = v[v["id"].notna()].reset_index(drop=True)
    ids = normalise_names(v["id"], what="model", source=path.name)
    model = normalise_names(v["Model"], what="model", source=path.name)
    date = _parse_dates(v, "Version release date", path)
    frame = pd.DataFrame({"model": model.to_numpy(), "date": date.to_numpy()},
                         index=pd.Index(ids.to_numpy(), name="model_version"))
    frame = frame[~frame.index.duplicated()]
    # A model released on several dates is several groups, told apart by the date (an unknown
    # date counts as one more: those versions cannot be placed in a dated release).
    n_dates = frame.groupby("model")["date"].nunique(dropna=False)
    several = frame["model"].map(n_dates).fillna(0) > 1
    day = frame["date"].dt.strftime("%Y-%m-%d").fillna("date unknown")
    group = frame["model"].where(~several, frame["model"] + " (" + day + ")")
    frame["group"] = group.fillna(pd.Series(frame.index, index=frame.index)).astype("string")
    # A version id without a model could spell another model's name: two releases, one name.
    clash = frame.groupby("group")[["model", "date"]].nunique(dropna=False)
    clash = clash[(clash > 1).any(axis=1)]
    if len(clash):
        raise ValueError(
            f"{path.name}: the model group name(s) {clash.index.tolist()[:5]} stand for more "
            "than one release (a version id without a Model equals another model's name); "
            "fill in the Model column of those versions")
    return frame.rename(columns={"date": "group_date"})[["group", "group_date"]]


def read_epoch_prepared(raw_dir: str | Path, *, baselines: str | Path | None = None,
                        min_benchmarks: int = 4,
                        min_release_date: str | pd.Timestamp | None = EPOCH_MIN_RELEASE_DATE,
                        benchmark_dates: pd.Series | None = None) -> pd.DataFrame:
    """The long score table of ``raw_dir`` prepared by Epoch's rules (module docstring).

    Columns as :func:`read_epoch_raw` (``model`` is the model group, ``score`` the normalised
    score), plus ``model_version`` (the version holding the best score) and ``raw_score`` (its
    score before normalisation).  ``attrs``: ``preparation``, ``baselines`` (path), ``clipped``
    (scores clipped below the baseline / above the ceiling, among the rows read),
    ``model_groups`` (version id -> group of every version in the table), ``dropped_models``
    (groups below the minimum), ``excluded_benchmarks`` and ``notes``.  ``benchmark_dates``
    (release date per benchmark, from ``benchmark_optim.csv``) fills ``benchmark_release_date``.
    """
    if isinstance(min_benchmarks, bool) or not isinstance(min_benchmarks, (int, np.integer)) \
            or min_benchmarks < 1:
        raise ValueError(f"min_benchmarks must be a positive integer, got {min_benchmarks!r}")
    try:
        cutoff = None if min_release_date is None else pd.Timestamp(min_release_date)
    except (TypeError, ValueError):
        raise ValueError(f"min_release_date {min_release_date!r} is not a date; use e.g. "
                         f"'{EPOCH_MIN_RELEASE_DATE}' (Epoch's cut) or None for no date rule"
                         ) from None
    raw_dir = _check_dir(raw_dir)
    _require(raw_dir / RUNS_FILE, "Epoch's own evaluations")
    table = read_baselines(baselines)
    parts = [_read_runs(raw_dir)] + [
        _read_external(raw_dir, spec, require_source=False) for spec in _EXTERNAL_SPECS]
    scores = pd.concat(parts, ignore_index=True)
    _check_coverage(table, scores["benchmark"].unique(), table.attrs["path"])

    excluded = sorted(set(scores["benchmark"]) & set(table.index[~table["in_eci"]]))
    scores = scores[~scores["benchmark"].isin(excluded)].reset_index(drop=True)
    base = scores["benchmark"].map(table["baseline"]).to_numpy(np.float64)
    span = scores["benchmark"].map(table["ceiling"]).to_numpy(np.float64) - base
    raw = scores["score"].to_numpy(np.float64)
    normalised = (raw - base) / span
    clipped = {"below_baseline": int((normalised < 0).sum()),
               "above_ceiling": int((normalised > 1).sum())}
    scores = scores.assign(raw_score=raw, score=np.clip(normalised, 0.0, 1.0),
                           stderr=scores["stderr"].to_numpy(np.float64) / span)

    groups = _groups(raw_dir)
    scores = scores.rename(columns={"model": "model_version"})
    unknown = sorted(set(scores["model_version"]) - set(groups.index))
    scores = scores.join(groups, on="model_version", how="inner")
    early = undated = []
    if cutoff is not None:
        early = sorted(set(scores.loc[scores["group_date"] < cutoff, "group"]))
        undated = sorted(set(scores.loc[scores["group_date"].isna(), "group"]))
        scores = scores[scores["group_date"] >= cutoff]
    n_rows = len(scores)
    for old, new in table["superseded_by"].dropna().items():
        with_new = set(scores.loc[scores["benchmark"] == new, "group"])
        scores = scores[~((scores["benchmark"] == old) & scores["group"].isin(with_new))]
    superseded = n_rows - len(scores)
    n_bench = scores.groupby("group")["benchmark"].transform("nunique")
    dropped = sorted(set(scores.loc[n_bench < min_benchmarks, "group"]))
    scores = scores[n_bench >= min_benchmarks]
    # The best score per (group, benchmark); ties go to the first version id, then file order.
    best = scores.sort_values(["score", "model_version"], ascending=[False, True], kind="stable")
    best = best.drop_duplicates(["group", "benchmark"])

    info = pd.Series(dtype="datetime64[ns]") if benchmark_dates is None else benchmark_dates
    out = pd.DataFrame({
        "model": best["group"].to_numpy(), "benchmark": best["benchmark"].to_numpy(),
        "score": best["score"].to_numpy(), "stderr": best["stderr"].to_numpy(),
        "n_items": best["n_items"].to_numpy(), "model_release_date": best["group_date"].to_numpy(),
        "benchmark_release_date": info.reindex(best["benchmark"].to_numpy()).to_numpy(),
        "source": best["source"].to_numpy(), "model_version": best["model_version"].to_numpy(),
        "raw_score": best["raw_score"].to_numpy()})
    out = out.sort_values(["model", "benchmark"], kind="stable").reset_index(drop=True)
    out = out.astype({"model": "string", "benchmark": "string", "source": "string",
                      "model_version": "string", "model_release_date": "datetime64[ns]",
                      "benchmark_release_date": "datetime64[ns]", "n_items": "float64"})
    out = out.loc[:, list(OUTPUT_COLUMNS) + ["model_version", "raw_score"]]
    notes = [f"Epoch preparation: {clipped['below_baseline']} score(s) below their benchmark's "
             f"random baseline clipped to 0 and {clipped['above_ceiling']} above the ceiling "
             f"clipped to 1 (baselines: {table.attrs['path']})"]
    if not (raw_dir / BENCHMARK_INFO_FILE).exists():
        notes.append(f"{BENCHMARK_INFO_FILE} is missing from {raw_dir}: every benchmark release "
                     "date is unknown (NaT); add the file for analyses by benchmark date")
    if excluded:
        notes.append(f"{len(excluded)} benchmark(s) outside Epoch's index (in_eci FALSE) left "
                     f"out: {', '.join(excluded)}")
    if unknown:
        notes.append(f"{len(unknown)} model version(s) missing from {VERSIONS_FILE} left out "
                     "(no model group or date)")
    if early or undated:
        notes.append(f"{len(early)} model group(s) released before {cutoff.date()} and "
                     f"{len(undated)} of unknown release date left out (min_release_date; None "
                     "keeps them)")
    if superseded:
        notes.append(f"{superseded} score(s) on a superseded benchmark left out where the model "
                     "group also has its successor's score (the baseline table's superseded_by)")
    if dropped:
        shown = ", ".join(dropped[:10]) + (f", ... ({len(dropped) - 10} more)"
                                           if len(dropped) > 10 else "")
        notes.append(f"{len(dropped)} model group(s) scored on fewer than {min_benchmarks} "
                     f"benchmarks were left out (min_benchmarks={min_benchmarks}; lower it to "
                     f"keep them): {shown}")
    versions = groups.index.intersection(pd.Index(_parts_models(parts)))
    out.attrs.update(preparation="epoch", baselines=table.attrs["path"], clipped=clipped,
                     model_groups={str(k): str(groups.at[k, "group"]) for k in versions},
                     dropped_models=dropped, excluded_benchmarks=excluded,
                     released_before=early, undated_models=undated, superseded_scores=superseded,
                     notes=notes)
    for note in notes:
        models = dropped if dropped and note.startswith(f"{len(dropped)} model group") else None
        warnings.warn(EpochDataWarning(note, models=models), stacklevel=3)
    return out


def _parts_models(parts) -> list[str]:
    """Every model version id read from the score files (for the group map)."""
    return sorted(set().union(*(set(p["model"].astype(str)) for p in parts)))

