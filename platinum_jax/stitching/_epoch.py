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

import difflib
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from ._table import normalise_names

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

Duplicates = Literal["max", "mean", "error"]
Scale = Literal["fraction", "percent_text", "percent_number", "out_of_ten"]

OUTPUT_COLUMNS = (
    "model",
    "benchmark",
    "score",
    "stderr",
    "n_items",
    "model_release_date",
    "benchmark_release_date",
    "source",
)

RUNS_FILE = "benchmarks_runs.csv"
VERSIONS_FILE = "model_versions.csv"
BENCHMARK_INFO_FILE = "benchmark_optim.csv"
METR_FILE = "external_benchmark_metr.csv"
DISTILLED_FILE = "distilled_models.csv"

# Epoch's own tasks that enter the analysis; the "-Public" FrontierMath splits are left out
# because the paper uses only the held-out private problem sets.
EPOCH_RUN_BENCHMARKS = (
    "GPQA diamond",
    "FrontierMath-2025-02-28-Private",
    "MATH level 5",
    "OTIS Mock AIME 2024-2025",
    "FrontierMath-Tier-4-2025-07-01-Private",
    "SWE-Bench verified",
)
EPOCH_RUN_SOURCE = "Epoch evaluations"

# How much a raw value is divided by to become a fraction, per number format.
_DIVISOR = {"fraction": 1.0, "percent_text": 100.0, "percent_number": 100.0, "out_of_ten": 10.0}


@dataclass(frozen=True)
class _External:
    """How one external leaderboard file maps onto (model, benchmark, score).

    ``scale`` names the number format of ``score_column``: ``percent_text`` means strings like
    ``"85.2%"`` (a value without ``%`` is refused as ambiguous), ``percent_number`` plain numbers
    on 0-100, ``out_of_ten`` plain numbers on 0-10.  ``stderr_column`` (same format) and
    ``n_items_column`` are read when the leaderboard publishes them.
    """

    file: str
    benchmark: str
    score_column: str
    scale: Scale = "percent_text"
    source_column: str | None = "Source"
    stderr_column: str | None = None
    n_items_column: str | None = None


# One entry per leaderboard; the benchmark name is the one the paper's table uses (it matches
# benchmark_optim.csv).  Each comment says why that column is the score.
_EXTERNAL_SPECS = (
    # headline metric: share of the 225 exercises solved, printed as 0-100 numbers
    _External("aider_polyglot", "Aider polyglot", "Percent correct", "percent_number"),
    # the leaderboard's overall accuracy over the three adversarial rounds
    _External("anli", "ANLI", "Score"),
    # ARC Prize semi-private score
    _External("arc_agi", "ARC-AGI", "Score"),
    # the Challenge split is the one reported for modern models (Easy is saturated)
    _External("arc_ai2", "ARC AI2", "Challenge score"),
    # average progress over all games; the paper's table carries no source for Balrog
    _External(
        "balrog",
        "Balrog",
        "Average progress",
        source_column=None,
        stderr_column="Average Standard error",
    ),
    # BIG-Bench Hard average over its 23 tasks
    _External("bbh", "BBH", "Average"),
    # overall pass rate; "Total tasks" is the number of CAD problems behind it
    _External("cadeval", "CadEval", "Overall pass (%)", n_items_column="Total tasks"),
    # accuracy on the CommonsenseQA 2.0 test set
    _External("csqa2", "CSQA2", "Score"),
    # unguided solve rate is the headline number (no subtask hints)
    _External("cybench", "Cybench", "Unguided % Solved"),
    # the leaderboard's average score
    _External("deepresearch", "DeepResearch Bench", "Average score"),
    # lab-play success rate is the only bounded fraction (production score is unbounded)
    _External("factorio_learning_environment", "Factorio learning environment", "Lab Success %"),
    # the 16k-token context column: long enough to discriminate, reported by most models
    _External("fictionlivebench", "Fiction.LiveBench", "16k token score"),
    # country accuracy on the ACW map set (the set every row reports)
    _External("geobench", "GeoBench", "ACW Country %"),
    # exact match on the GSM8K test set
    _External("gsm8k", "GSM8K", "EM"),
    # single-attempt optimisation success
    _External("gso_bench", "GSO-Bench", "Score OPT@1"),
    # overall accuracy on the validation/test set
    _External("hellaswag", "HellaSwag", "Overall accuracy"),
    # last-word prediction accuracy
    _External("lambada", "LAMBADA", "Score"),
    # judges' mean grade is on a 0-10 scale
    _External("lech_mazur_writing", "Lech Mazur Writing", "Mean score", "out_of_ten"),
    # global average over all categories, printed as 0-100 numbers
    _External("livebench", "LiveBench", "Global average", "percent_number"),
    # exact match over the 57 subjects
    _External("mmlu", "MMLU", "EM"),
    # accuracy on the test set
    _External("openbookqa", "OpenBookQA", "Accuracy"),
    # success rate, printed as 0-100 numbers
    _External("os_world", "OSWorld", "Score", "percent_number"),
    # difficulty-weighted score across its levels
    _External("osuniverse", "OSUniverse", "Weighted Score"),
    # accuracy on physical commonsense questions
    _External("piqa", "PIQA", "Score"),
    # average accuracy over all question types
    _External("scienceqa", "ScienceQA", "Score"),
    # mean over five runs
    _External("simple_bench", "SimpleBench", "Score (AVG@5)"),
    # the SuperGLUE aggregate score
    _External("superglue", "SuperGLUE", "Score"),
    # mean accuracy over repeated runs, with its standard error
    _External("terminal_bench", "Terminal Bench", "Accuracy mean", stderr_column="Accuracy SE"),
    # fully resolved tasks (the partial-credit "% Score" rewards checkpoints, not completion)
    _External("the_agent_company", "The Agent Company", "% Resolved"),
    # exact match
    _External("triviaqa", "TriviaQA", "EM"),
    # overall accuracy without subtitles (the setting every row reports)
    _External("videomme", "VideoMME", "Overall (no subtitles)"),
    # share of physics puzzles predicted correctly
    _External("vpct", "VPCT", "Correct"),
    # average accuracy over the tasks
    _External("weirdml", "WeirdML", "Accuracy"),
    # accuracy; Winogrande is the paper's anchor benchmark
    _External("winogrande", "Winogrande", "Accuracy"),
)

# Leaderboards present in raw/ that do not enter the score table, and why.
_IGNORED_EXTERNAL = {
    "boolq": "BoolQ is one of the SuperGLUE tasks, which is already included",
    "mcbench": "an arena win rate depends on the opponents, so it is not a per-model score",
    "metr": "METR time horizons are minutes, not scores (see read_metr_horizons)",
}

EXTERNAL_BENCHMARKS = tuple(spec.benchmark for spec in _EXTERNAL_SPECS)


# --------------------------------------------------------------------------- file helpers
def _directory_contents_hint() -> str:
    return (
        f"an Epoch raw/ directory holds {RUNS_FILE}, {VERSIONS_FILE}, {BENCHMARK_INFO_FILE} and "
        f"one external_benchmark_<name>.csv per leaderboard ({len(_EXTERNAL_SPECS)} are read: "
        f"{', '.join(s.file for s in _EXTERNAL_SPECS)})"
    )


def _check_dir(raw_dir: str | Path) -> Path:
    raw_dir = Path(raw_dir)
    if not raw_dir.is_dir():
        raise FileNotFoundError(
            f"Epoch raw directory {str(raw_dir)!r} does not exist; {_directory_contents_hint()}"
        )
    return raw_dir


def _require(path: Path, what: str) -> Path:
    if not path.is_file():
        raise FileNotFoundError(
            f"required file {str(path)!r} is missing ({what}); {_directory_contents_hint()}"
        )
    return path


def _check_not_truncated(path: Path, n_columns: int, what: str) -> None:
    """Refuse a file that stops in the middle of a row (a cut-off download or copy).

    A complete export ends with a line break; a file that does not, and whose last row has
    fewer fields than the header, lost its tail, and reading it would silently drop every
    score that was in the lost part.
    """
    import csv
    import io

    data = path.read_bytes()
    if not data or data.endswith((b"\n", b"\r")):
        return
    # Parse whole records: a quoted field may hold line breaks, so the last physical line
    # alone could be the tail of a longer, complete record.
    records = list(csv.reader(io.StringIO(data.decode("utf-8-sig", errors="replace"))))
    fields = len(records[-1]) if records else 0
    if fields < n_columns:
        raise ValueError(
            f"{path.name} looks truncated ({what}): it stops in the middle of a row (record "
            f"{len(records)} has {fields} of {n_columns} fields and no line end), so the scores "
            "after it are missing; download or copy the file again"
        )


def _read_csv(path: Path, columns: tuple[str, ...], what: str) -> pd.DataFrame:
    """Read ``path`` and check it has ``columns``; the hub writes a UTF-8 byte-order mark."""
    _require(path, what)
    try:
        frame = pd.read_csv(path, encoding="utf-8-sig")
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path.name} is empty ({what}); download it again") from None
    except pd.errors.ParserError as exc:
        raise ValueError(f"{path.name} is not a readable CSV ({what}): {exc}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    _check_not_truncated(path, len(frame.columns), what)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        hints = {c: difflib.get_close_matches(c, list(frame.columns), n=3) for c in missing}
        raise ValueError(
            f"{path.name}: missing column(s) {missing} ({what}); close matches in the file: "
            f"{hints}; columns present: {list(frame.columns)}"
        )
    return frame


def _show(value: object) -> str:
    """repr of a cell as the user wrote it (plain Python scalars, not NumPy wrappers)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _row_label(frame: pd.DataFrame, position: int) -> str:
    """Human-readable row reference: 1-based data row plus the record id when there is one."""
    label = f"data row {position + 1}"
    for id_col in ("id", "ID", "UUID"):
        if id_col in frame.columns and pd.notna(frame[id_col].iloc[position]):
            return f"{label} ({id_col} {_show(frame[id_col].iloc[position])})"
    return label


def _parse_fraction(
    frame: pd.DataFrame, column: str, scale: Scale, path: Path, what: str
) -> pd.Series:
    """Turn ``frame[column]`` into fractions in [0, 1] by the file's number format.

    Missing cells stay NaN.  Unparseable text, a percent column entry without ``%``, and any
    value outside [0, 1] after division raise ``ValueError`` naming file, row and value.
    """
    raw = frame[column]
    present = raw.notna().to_numpy()
    if pd.api.types.is_numeric_dtype(raw):
        text = raw.astype("float64").map(repr)
        has_percent = np.zeros(len(raw), dtype=bool)
        numbers = raw.astype("float64")
    else:
        text = raw.astype("string").str.strip()
        has_percent = text.str.endswith("%").fillna(False).to_numpy(dtype=bool)
        numbers = pd.to_numeric(text.str.removesuffix("%").str.strip(), errors="coerce")
        numbers = numbers.astype("float64")
    values = numbers.to_numpy(dtype=np.float64, copy=True)

    def fail(mask: np.ndarray, why: str) -> None:
        pos = int(np.flatnonzero(mask)[0])
        raise ValueError(
            f"{path.name}: cannot use {what} column {column!r} at {_row_label(frame, pos)}: "
            f"value {_show(raw.iloc[pos])} {why} ({int(mask.sum())} such row(s) in the file)"
        )

    # A cell that is present but not a number is a broken export, not a missing score.
    unparsable = present & ~np.isfinite(values)
    if unparsable.any():
        fail(unparsable, "is not a finite number; fix or blank that cell")
    if scale == "percent_text":
        # Without the % sign "0.85" could be a fraction or a typo for 0.85%: refuse to guess.
        bare = present & ~has_percent
        if bare.any():
            fail(
                bare,
                "has no '%' sign but this file writes percentages like '85.2%'; write the cell "
                "as a percentage (a fraction 0.852 becomes '85.2%')",
            )
    elif scale == "out_of_ten" and (present & has_percent).any():
        fail(present & has_percent, "is a percentage but this file's scores are marks out of 10")
    values = values / _DIVISOR[scale]
    if (present & (values > 1.0)).any():
        why = (
            "is above 1: it looks like a percentage, but this column holds fractions in [0, 1]; "
            "convert the column to fractions (divide every score by 100, e.g. 85.2 -> 0.852) "
            "or write it as percent text ('85.2%')"
            if scale == "fraction"
            else f"is above 1 after dividing by {_DIVISOR[scale]:g}, so it is on the wrong scale "
            "(a percentage written as a fraction of 100 twice?); correct the cell"
        )
        fail(present & (values > 1.0), why)
    if (present & (values < 0.0)).any():
        fail(present & (values < 0.0), "is negative; scores must lie in [0, 1]")
    return pd.Series(values, index=frame.index)


# --------------------------------------------------------------------------- the two score kinds
def _parse_scorer_stderr(scores: pd.Series, path: Path, frame: pd.DataFrame) -> np.ndarray:
    """Standard error of the best scorer in each ``scorer:mean±stderr[,scorer:mean±stderr]`` cell.

    The best scorer is the one with the largest mean, since ``Best score (across scorers)`` is
    that maximum; its stderr is already on the [0, 1] scale.  Empty cells give NaN.
    """
    text = scores.astype("string").str.strip()
    entry = r"[^,:]+:\s*[-+0-9.eE]+\s*±\s*[-+0-9.eE]+"
    wellformed = text.str.fullmatch(rf"{entry}(?:\s*,\s*{entry})*").fillna(True)
    if not wellformed.all():
        pos = int(np.flatnonzero(~wellformed.to_numpy(dtype=bool))[0])
        raise ValueError(
            f"{path.name}: cannot parse 'Scores' at {_row_label(frame, pos)}: value "
            f"{_show(scores.iloc[pos])} is not of the form 'scorer:mean±stderr[,scorer:mean±stderr]'"
        )
    parts = text.str.extractall(
        r"(?P<scorer>[^,:]+):\s*(?P<mean>[-+0-9.eE]+)\s*±\s*(?P<se>[-+0-9.eE]+)"
    )
    parts = parts.astype({"mean": "float64", "se": "float64"})
    stderr = np.full(len(scores), np.nan)
    if len(parts):
        best = parts.groupby(level=0)["mean"].idxmax()
        rows = best.index.to_numpy()
        stderr[frame.index.get_indexer(rows)] = parts.loc[best.to_list(), "se"].to_numpy()
    bad = np.isfinite(stderr) & ((stderr < 0) | (stderr > 1))
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{path.name}: 'Scores' at {_row_label(frame, pos)} gives a standard error "
            f"{float(stderr[pos])!r} outside [0, 1] (value {_show(scores.iloc[pos])}); fix the cell"
        )
    return stderr


def _read_runs(raw_dir: Path) -> pd.DataFrame:
    path = raw_dir / RUNS_FILE
    score_col = "Best score (across scorers)"
    runs = _read_csv(path, ("task", "model", score_col, "Scores"), "Epoch's own evaluations")
    # Only the paper's task list; other tasks (public FrontierMath splits) are not analysed.
    runs = runs[runs["task"].astype("string").str.strip().isin(EPOCH_RUN_BENCHMARKS)]
    # A run without a model or a score has nothing to contribute.
    runs = runs[runs["model"].notna() & runs[score_col].notna()].reset_index(drop=True)
    # The hub already writes this column as a fraction in [0, 1].
    score = _parse_fraction(runs, score_col, "fraction", path, "score")
    return pd.DataFrame(
        {
            "model": normalise_names(runs["model"], what="model", source=path.name).to_numpy(),
            "benchmark": runs["task"].astype("string").str.strip().to_numpy(),
            "score": score.to_numpy(),
            "stderr": _parse_scorer_stderr(runs["Scores"], path, runs),
            "n_items": np.nan,
            "source": EPOCH_RUN_SOURCE,
        }
    )


def _read_external(raw_dir: Path, spec: _External) -> pd.DataFrame:
    path = raw_dir / f"external_benchmark_{spec.file}.csv"
    needed = ("Model version", spec.score_column) + tuple(
        c for c in (spec.source_column, spec.stderr_column, spec.n_items_column) if c
    )
    frame = _read_csv(path, needed, f"the {spec.benchmark} leaderboard")
    keep = frame["Model version"].notna() & frame[spec.score_column].notna()
    # Leaderboard rows with no model version cannot be dated or matched, so they are skipped.
    if spec.source_column is not None:
        # Rows without a citation are skipped, as in the paper's table.
        keep &= frame[spec.source_column].notna()
    frame = frame[keep].reset_index(drop=True)
    score = _parse_fraction(frame, spec.score_column, spec.scale, path, "score")
    stderr = (
        _parse_fraction(frame, spec.stderr_column, spec.scale, path, "standard-error")
        if spec.stderr_column
        else pd.Series(np.nan, index=frame.index)
    )
    if spec.n_items_column:
        n_items = pd.to_numeric(frame[spec.n_items_column], errors="coerce")
        broken = frame[spec.n_items_column].notna() & ~(n_items > 0)
        if broken.any():
            pos = int(np.flatnonzero(broken.to_numpy())[0])
            raise ValueError(
                f"{path.name}: {spec.n_items_column!r} at {_row_label(frame, pos)} is "
                f"{_show(frame[spec.n_items_column].iloc[pos])}; it must be a positive item count"
            )
    else:
        n_items = pd.Series(np.nan, index=frame.index)
    source = (
        frame[spec.source_column] if spec.source_column else pd.Series(pd.NA, index=frame.index)
    )
    return pd.DataFrame(
        {
            "model": normalise_names(
                frame["Model version"], what="model", source=path.name
            ).to_numpy(),
            "benchmark": spec.benchmark,
            "score": score.to_numpy(),
            "stderr": stderr.to_numpy(),
            "n_items": n_items.astype("float64").to_numpy(),
            "source": source.astype("string").to_numpy(),
        }
    )


# --------------------------------------------------------------------------- dates
def _parse_dates(frame: pd.DataFrame, column: str, path: Path) -> pd.Series:
    """Dates in ISO (``2024-12-21``) or slash (``2024/12/21``) form; blanks become NaT."""
    text = frame[column].astype("string").str.strip().str.replace("/", "-", regex=False)
    dates = pd.to_datetime(text, format="ISO8601", errors="coerce")
    broken = (text.notna() & (text != "") & dates.isna()).to_numpy()
    if broken.any():
        pos = int(np.flatnonzero(broken)[0])
        raise ValueError(
            f"{path.name}: {column!r} at {_row_label(frame, pos)} is {_show(frame[column].iloc[pos])}, "
            "not a date; write it as YYYY-MM-DD"
        )
    return dates.astype("datetime64[ns]")


def _model_release_dates(raw_dir: Path) -> pd.Series:
    """Release date per model version id (index), from ``model_versions.csv``."""
    path = raw_dir / VERSIONS_FILE
    versions = _read_csv(path, ("id", "Version release date"), "model version release dates")
    versions = versions[versions["id"].notna()].reset_index(drop=True)
    dates = pd.Series(
        _parse_dates(versions, "Version release date", path).to_numpy(),
        index=pd.Index(
            normalise_names(versions["id"], what="model", source=path.name).to_numpy(), name="model"
        ),
        name="model_release_date",
    )
    # The same id listed twice with different dates would make the date filter arbitrary.
    clash = dates.groupby(level=0).nunique(dropna=False) > 1
    if clash.any():
        raise ValueError(
            f"{path.name}: model version id(s) {clash[clash].index.tolist()[:5]} are listed more "
            "than once with different release dates; keep one row per id"
        )
    return dates[~dates.index.duplicated()]


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
    min_release_date: str | pd.Timestamp | None = "2022-11-01",
    duplicates: Duplicates = "max",
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

    Parameters
    ----------
    raw_dir
        The ``raw/`` directory.
    min_benchmarks
        Keep models scored on at least this many benchmarks (paper: 4). ``1`` keeps all.
    min_release_date
        Keep models released on or after this date (paper: ``"2022-11-01"``); None: no filter.
    duplicates
        ``"max"``, ``"mean"`` or ``"error"``, see above.

    Returns
    -------
    DataFrame with columns ``model, benchmark, score, stderr, n_items, model_release_date,
    benchmark_release_date, source`` and one row per (model, benchmark), sorted by model then
    benchmark.  ``score``/``stderr`` are fractions; ``stderr``/``n_items`` are NaN where a file
    gives none; dates are datetime64 (``NaT`` when unknown).
    """
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


class EpochDataWarning(UserWarning):
    """Something :func:`read_epoch_raw` left out or could not fill in (said in the message).

    ``models`` lists the models concerned (all of them; the message shows the first ten).
    """

    def __init__(self, message: str, models: list[str] | None = None):
        super().__init__(message)
        self.models = list(models or [])


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
