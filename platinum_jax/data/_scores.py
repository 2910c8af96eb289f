"""Scores in [0, 1], one per (model, benchmark) pair: the table of benchmark stitching.

A thin view over :class:`~platinum_jax.data.ResponseTable`, which validates names, numbers and
duplicates for every table; this adds the rule that scores are fractions (percentages are
detected and named in the error) and keeps Epoch's metadata (release dates, item counts,
provenance) beside the rows. Models are the subjects, benchmarks the items.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from platinum_jax._names import UnknownNameError, close_matches_message

from ._connectivity import linked_through_busiest
from ._responses import ResponseTable

__all__ = ["ScoreTable"]

Duplicates = Literal["error", "max", "min", "mean", "first", "last"]

_REQUIRED = ("model", "benchmark", "score")
_COLUMNS = (
    "model",
    "benchmark",
    "score",
    "n_items",
    "stderr",
    "model_release_date",
    "benchmark_release_date",
    "source",
)
_DUPLICATE_RULES = ("error", "max", "min", "mean", "first", "last")


def _looks_like_percentages(values: np.ndarray) -> bool:
    """Scores on a 0-100 scale: all within [0, 100] and most of them clearly above 1.

    "Clearly" (above 1.5) keeps fractions that overshoot 1 a little, such as 1.02 from rounding,
    from being called percentages.
    """
    return bool(
        values.min() >= 0.0 and values.max() <= 100.0 and np.mean(values > 1.5) > 0.5
    )


def _describe_rows(frame: pd.DataFrame, mask: np.ndarray, limit: int = 8) -> str:
    rows = frame.loc[mask]
    parts = [f"row {i}: ({r.model!r}, {r.benchmark!r}, score={r.score!r})" for i, r in zip(rows.index[:limit], rows.itertuples(), strict=False)]
    more = f" ... and {len(rows) - limit} more" if len(rows) > limit else ""
    return "; ".join(parts) + more


@dataclass(frozen=True, eq=False)
class ScoreTable:
    """Validated benchmark scores in long form (one row per model-benchmark pair).

    Attributes:
        data: tidy frame with columns ``model, benchmark, score, n_items, stderr,
            model_release_date, benchmark_release_date, source``; rows sorted by (model, benchmark).
        models, benchmarks: sorted unique names; ``M = n_models``, ``B = n_benchmarks``.
        model_index, benchmark_index: ``int32[N]`` positions of each row's model and benchmark.
        scores: ``float64[N]`` the observed scores ``y_i`` in [0, 1].
        responses: the same rows as the engine's :class:`~platinum_jax.data.ResponseTable`
            (subjects = models, items = benchmarks), which every fit reads.

    Build one with :meth:`from_frame`, :meth:`from_csv` or :meth:`from_wide`
    (:class:`platinum_jax.data.ScoreTable` adds ``from_epoch`` for Epoch AI's files).
    """

    data: pd.DataFrame
    models: tuple[str, ...]
    benchmarks: tuple[str, ...]
    model_index: np.ndarray = field(repr=False)
    benchmark_index: np.ndarray = field(repr=False)
    scores: np.ndarray = field(repr=False)
    responses: ResponseTable = field(repr=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_frame(
        cls,
        df: pd.DataFrame,
        *,
        duplicates: Duplicates = "error",
        clip: bool = False,
        name: str = "the score frame",
    ) -> ScoreTable:
        """Validate a tidy frame ``model, benchmark, score[, n_items, stderr, dates, source]``.

        The names, numbers and duplicate rule are those of
        :meth:`platinum_jax.data.ResponseTable.from_frame` (one validation for every table);
        this adds what the paper needs: scores are fractions in [0, 1], and the Epoch metadata
        columns ride along.

        Args:
            df: one row per score; extra columns are ignored.
            duplicates: what to do with repeated (model, benchmark) pairs: ``"error"`` (default)
                raises, ``"max"``/``"min"``/``"mean"``/``"first"``/``"last"`` reduce the scores (the
                kept metadata are those of the run the rule picks, the first run under
                ``"mean"``).
            clip: clip scores into [0, 1] instead of raising when some fall outside.
            name: how error messages refer to the input (e.g. a file name).

        Raises:
            ValueError: missing columns, missing names, NaN/inf or non-numeric scores (rows named),
                scores outside [0, 1] (percentages detected), duplicates with ``duplicates="error"``.
        """
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"{name}: expected a pandas DataFrame, got {type(df).__name__}")
        if duplicates not in _DUPLICATE_RULES:
            raise ValueError(f"duplicates={duplicates!r} is not one of {_DUPLICATE_RULES}")
        if len(df) == 0:
            raise ValueError(f"{name} has no rows; a score table needs at least one score")
        core = df.loc[:, [c for c in _REQUIRED if c in df.columns]]
        checked = ResponseTable.checked_frame(core, name=name)  # rows stay in df's order
        frame = df.reset_index(drop=True).copy()
        frame["model"], frame["benchmark"] = checked["subject"], checked["item"]
        values = checked["response"].to_numpy()
        outside = (values < 0.0) | (values > 1.0)
        if outside.any():
            frame["score"] = values
            if not clip:
                hint = (
                    " -- these look like percentages; divide by 100"
                    if _looks_like_percentages(values)
                    else ""
                )
                raise ValueError(
                    f"{name}: {int(outside.sum())} score(s) lie outside [0, 1] (min "
                    f"{values.min():g}, max {values.max():g}){hint}: "
                    f"{_describe_rows(frame, outside)}; pass clip=True to clip them instead"
                )
            values = np.clip(values, 0.0, 1.0)
        frame["score"] = values
        checked["response"] = values
        frame = _metadata(frame)
        if checked.duplicated(["subject", "item"]).any():
            reduced = ResponseTable.reduce_duplicates(checked, duplicates, name=name)
            frame = _reduce_duplicates(frame, reduced, duplicates)
        frame = frame.sort_values(["model", "benchmark"], kind="stable").reset_index(drop=True)
        return cls._from_clean(frame)

    @classmethod
    def _from_clean(cls, frame: pd.DataFrame) -> ScoreTable:
        models = tuple(sorted(frame["model"].unique()))
        benchmarks = tuple(sorted(frame["benchmark"].unique()))
        model_index = pd.Categorical(frame["model"], categories=models).codes.astype(np.int32)
        benchmark_index = pd.Categorical(frame["benchmark"], categories=benchmarks).codes.astype(
            np.int32
        )
        scores = frame["score"].to_numpy(dtype=np.float64, copy=True)
        for arr in (model_index, benchmark_index, scores):
            arr.setflags(write=False)  # the table is immutable: arrays are shared, never edited
        # The engine's view of the same rows (names sorted in both, so positions carry over).
        responses = ResponseTable(
            subjects=pd.Index(list(models), name="subject"),
            items=pd.Index(list(benchmarks), name="item"),
            subject_index=model_index, item_index=benchmark_index, response=scores,
            source="the score table",
        )
        return cls(frame, models, benchmarks, model_index, benchmark_index, scores, responses)

    @classmethod
    def from_csv(cls, path: str | Path, **kw) -> ScoreTable:
        """Read a tidy CSV (``model, benchmark, score[, ...]``); keywords go to :meth:`from_frame`."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(
                f"score file {str(path)!r} does not exist; pass a tidy CSV with columns "
                "model, benchmark, score (or an Epoch raw/ directory to "
                "platinum_jax.data.ScoreTable.from_epoch)"
            )
        try:
            df = pd.read_csv(path)
        except pd.errors.EmptyDataError:
            raise ValueError(
                f"score file {str(path)!r} is empty; it needs a header line (model, benchmark, "
                "score) and one row per score"
            ) from None
        except pd.errors.ParserError as exc:
            raise ValueError(f"score file {str(path)!r} is not a readable CSV: {exc}") from None
        kw.setdefault("name", path.name)
        return cls.from_frame(df, **kw)

    @classmethod
    def from_wide(cls, df: pd.DataFrame, **kw) -> ScoreTable:
        """Build from a models x benchmarks matrix (index = models, columns = benchmarks).

        NaN cells mean "not evaluated" and are dropped; infinite cells raise.
        """
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"from_wide expects a DataFrame, got {type(df).__name__}")
        kw.setdefault("name", "the wide score matrix")
        wide = df.copy()
        wide.index = wide.index.astype(str)
        wide.columns = wide.columns.astype(str)
        wide.index.name = "model"
        wide.columns.name = "benchmark"
        long = wide.reset_index().melt(id_vars="model", var_name="benchmark", value_name="score")
        numeric = pd.to_numeric(long["score"], errors="coerce")
        keep = numeric.notna() | (long["score"].notna() & numeric.isna())  # keep non-numeric to report
        long = long.loc[keep.to_numpy()].reset_index(drop=True)
        if len(long) == 0:
            raise ValueError(f"{kw['name']} has no scores (every cell is NaN)")
        return cls.from_frame(long, **kw)

    # ------------------------------------------------------------------ sizes
    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def n_benchmarks(self) -> int:
        return len(self.benchmarks)

    @property
    def n_scores(self) -> int:
        return int(self.scores.shape[0])

    def __repr__(self) -> str:
        return (
            f"ScoreTable({self.n_scores} scores, {self.n_models} models, "
            f"{self.n_benchmarks} benchmarks)"
        )

    # ------------------------------------------------------------------ lookups
    def model_position(self, name: str) -> int:
        """Index of model ``name``; unknown names raise :class:`UnknownNameError` with close matches."""
        try:
            return self.models.index(name)
        except ValueError:
            raise UnknownNameError(close_matches_message("model", name, self.models)) from None

    def benchmark_position(self, name: str) -> int:
        """Index of benchmark ``name``; unknown names raise :class:`UnknownNameError`."""
        try:
            return self.benchmarks.index(name)
        except ValueError:
            raise UnknownNameError(
                close_matches_message("benchmark", name, self.benchmarks)
            ) from None

    def model_release_dates(self) -> pd.Series:
        """Release date per model (first non-missing value; NaT if unknown), indexed by model."""
        dates = self.data.groupby("model", sort=True)["model_release_date"].first()
        return dates.reindex(list(self.models)).rename("release_date")

    def benchmark_release_dates(self) -> pd.Series:
        """Release date per benchmark (NaT if unknown), indexed by benchmark."""
        dates = self.data.groupby("benchmark", sort=True)["benchmark_release_date"].first()
        return dates.reindex(list(self.benchmarks)).rename("release_date")

    def per_model(self, columns: dict) -> pd.DataFrame:
        """``columns`` (name -> one value per model, in table order) as a float64 frame indexed
        by ``model``, with ``release_date`` and ``n_scores`` (the model's number of scores)."""
        return self._per("model", self.models, self.model_release_dates(), self.model_index,
                         columns)

    def per_benchmark(self, columns: dict) -> pd.DataFrame:
        """As :meth:`per_model`, one row per benchmark (index ``benchmark``)."""
        return self._per("benchmark", self.benchmarks, self.benchmark_release_dates(),
                         self.benchmark_index, columns)

    @staticmethod
    def _per(kind, names, dates, positions, columns) -> pd.DataFrame:
        return pd.DataFrame({**{k: np.asarray(v, np.float64) for k, v in columns.items()},
                             "release_date": dates.to_numpy(),
                             "n_scores": np.bincount(positions, minlength=len(names))},
                            index=pd.Index(names, name=kind))

    def wide(self) -> pd.DataFrame:
        """Models x benchmarks matrix of scores, NaN where not evaluated."""
        return self.data.pivot(index="model", columns="benchmark", values="score")

    # ------------------------------------------------------------------ graph
    def components(self) -> list[tuple[set[str], set[str]]]:
        """Connected components of the model-benchmark graph, largest first.

        Two models share a scale only through chains of common benchmarks, so each component
        is identified separately. Returns a list of ``(models, benchmarks)`` name sets (the
        components of :meth:`platinum_jax.data.ResponseTable.components`, by name).
        """
        comps = [({self.models[i] for i in s}, {self.benchmarks[j] for j in b})
                 for s, b in self.responses.components()]
        comps.sort(key=lambda c: (-(len(c[0]) + len(c[1])), sorted(c[1])[:1]))
        return comps

    def check_connected(self, remedy: str = "keep one with table.select_models(...)") -> None:
        """Raise naming the components (their sizes and first benchmarks) when the
        model-benchmark graph falls apart: scores in different components have no common
        scale. ``remedy`` ends the message's list of fixes."""
        r = self.responses
        if linked_through_busiest(r.subject_index, r.item_index, r.n_subjects, r.n_items):
            return
        comps = self.components()
        if len(comps) <= 1:
            return
        parts = [f"component {k + 1}: {len(ms)} models, {len(bs)} benchmarks ("
                 + ", ".join(repr(n) for n in sorted(bs)[:4]) + (" ...)" if len(bs) > 4 else ")")
                 for k, (ms, bs) in enumerate(comps[:6])]
        more = f"; ... and {len(comps) - 6} more" if len(comps) > 6 else ""
        raise ValueError(
            f"the model-benchmark graph has {len(comps)} disconnected components, so their "
            f"scales are not comparable: {'; '.join(parts)}{more}. Add scores that link them, "
            f"drop the small components, or {remedy}")

    def warn_unidentified(self, fixed: Iterable[str] = (), *, stacklevel: int = 1) -> None:
        """Warn about benchmarks (other than ``fixed`` ones) scored by one model: one score
        cannot set both a slope and a difficulty, so only a fit's penalty or prior picks them.
        ``stacklevel`` 1 points the warning at the caller, 2 at the caller's caller."""
        counts = self.data.groupby("benchmark", observed=True)["model"].nunique()
        fixed = set(fixed)
        lonely = [str(b) for b, n in counts.items() if n < 2 and b not in fixed]
        if lonely:
            warnings.warn(
                f"{len(lonely)} benchmark(s) scored by only one model: "
                f"{', '.join(map(repr, lonely[:5]))}{', ...' if len(lonely) > 5 else ''}. One "
                "score cannot determine a slope and a difficulty: the L2 penalty alone sets "
                "them, so their values are meaningless. Add scores from other models, or drop "
                "them (ScoreTable.drop_benchmarks)", UserWarning, stacklevel=stacklevel + 1)

    # ------------------------------------------------------------------ subsets
    def _subset(self, mask: np.ndarray, what: str) -> ScoreTable:
        frame = self.data.loc[mask].reset_index(drop=True)
        if len(frame) == 0:
            raise ValueError(f"{what} leaves no scores")
        return type(self)._from_clean(frame)

    def drop_benchmarks(self, names: Iterable[str]) -> ScoreTable:
        """A new table without the named benchmarks (unknown names raise with close matches)."""
        names = [names] if isinstance(names, str) else list(names)
        for n in names:
            self.benchmark_position(n)
        mask = ~self.data["benchmark"].isin(names).to_numpy()
        return self._subset(mask, f"dropping benchmarks {names}")

    def select_models(self, names: Iterable[str]) -> ScoreTable:
        """A new table with only the named models (unknown names raise with close matches)."""
        names = [names] if isinstance(names, str) else list(names)
        for n in names:
            self.model_position(n)
        mask = self.data["model"].isin(names).to_numpy()
        return self._subset(mask, f"selecting models {names}")

    def select_benchmarks(self, names: Iterable[str]) -> ScoreTable:
        """A new table with only the named benchmarks."""
        names = [names] if isinstance(names, str) else list(names)
        for n in names:
            self.benchmark_position(n)
        mask = self.data["benchmark"].isin(names).to_numpy()
        return self._subset(mask, f"selecting benchmarks {names}")

    def drop_models(self, names: Iterable[str]) -> ScoreTable:
        """A new table without the named models."""
        names = [names] if isinstance(names, str) else list(names)
        for n in names:
            self.model_position(n)
        mask = ~self.data["model"].isin(names).to_numpy()
        return self._subset(mask, f"dropping models {names}")


def _metadata(frame: pd.DataFrame) -> pd.DataFrame:
    """The stitching view's columns: Epoch's item counts, errors, dates and provenance (missing
    ones filled as unknown), in the order of ``_COLUMNS``."""
    for col in ("n_items", "stderr"):
        if col in frame.columns:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("float64")
        else:
            frame[col] = np.nan
    for col in ("model_release_date", "benchmark_release_date"):
        if col in frame.columns:
            frame[col] = pd.to_datetime(frame[col], errors="coerce")
        else:
            frame[col] = pd.Series(pd.NaT, index=frame.index, dtype="datetime64[ns]")
    if "source" not in frame.columns:
        frame["source"] = ""
    frame["source"] = frame["source"].fillna("").astype(str)
    return frame.loc[:, list(_COLUMNS)]


def _reduce_duplicates(frame: pd.DataFrame, reduced: pd.DataFrame, rule: str) -> pd.DataFrame:
    """One row per (model, benchmark): the score ``reduced`` holds (the response table's rule)
    and the metadata of one run: the best under ``"max"``, the worst under ``"min"``, the last
    under ``"last"``, else the first."""
    if rule in ("max", "min"):
        frame = frame.sort_values("score", ascending=rule == "min", kind="stable")
    kept = frame.drop_duplicates(["model", "benchmark"], keep="last" if rule == "last" else "first")
    score = reduced.set_index(["subject", "item"])["response"]
    kept = kept.copy()
    kept["score"] = score.reindex(pd.MultiIndex.from_frame(kept[["model", "benchmark"]])).to_numpy()
    return kept
