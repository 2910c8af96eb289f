"""The files of Epoch AI's benchmarking-hub export and how each one is parsed.

Constants naming the files and columns of the ``raw/`` directory, the specification of every
external leaderboard (its score column and number format), and the low-level readers that
check a CSV and turn its scores into fractions. :mod:`._epoch` assembles them into the
paper's long table; this module knows the formats, that one the paper's rules.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from platinum_jax._names import normalise_names

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


def _read_external(raw_dir: Path, spec: _External, require_source: bool = True) -> pd.DataFrame:
    path = raw_dir / f"external_benchmark_{spec.file}.csv"
    needed = ("Model version", spec.score_column) + tuple(
        c for c in (spec.source_column, spec.stderr_column, spec.n_items_column) if c
    )
    frame = _read_csv(path, needed, f"the {spec.benchmark} leaderboard")
    keep = frame["Model version"].notna() & frame[spec.score_column].notna()
    # Leaderboard rows with no model version cannot be dated or matched, so they are skipped.
    if spec.source_column is not None and require_source:
        # Rows without a citation are skipped, as in the paper's table (not in Epoch's index).
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


class EpochDataWarning(UserWarning):
    """Something :func:`read_epoch_raw` left out or could not fill in (said in the message).

    ``models`` lists the models concerned (all of them; the message shows the first ten).
    """

    def __init__(self, message: str, models: list[str] | None = None):
        super().__init__(message)
        self.models = list(models or [])
