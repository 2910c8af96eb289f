"""Scores laid out for comparison: one dense (subject x item) grid per quantity.

Any response table reads, through :class:`~platinum_jax.data.ResponseTable` (the one
validation of every table): a long frame or CSV/Parquet file with ``subject, item, response``
(``model``/``score`` accepted; ``benchmark`` is the group when an ``item`` column exists) and
optional ``group``, ``cluster`` (items sharing a passage, a prompt template, a repository),
``run`` (repeated samples of an item: runs, epochs, seeds) and ``trials`` (the attempts behind a
fractional response), or a table itself (imported logs included).

For each (subject, item) the grid holds ``y`` (the item score: the mean over its samples),
``n`` (the number of 0/1 samples behind it, 0 where the subject has no response) and ``k`` (the
successes, ``y * n``).  Items count equally, whatever their number of samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from platinum_jax.models import Bernoulli

__all__ = [
    "CompareData",
    "CompareInputError",
    "TooFewModelsError",
    "NoSharedItemsError",
    "SingleClusterError",
    "NonBinaryScoresError",
    "as_compare_data",
]


class CompareInputError(ValueError):
    """Input that a comparison cannot use; the message says what to pass instead."""


class TooFewModelsError(CompareInputError):
    """A comparison needs at least two models."""


class NoSharedItemsError(CompareInputError):
    """Two models share no items, so a paired comparison is impossible."""


class SingleClusterError(CompareInputError):
    """A cluster column with a single cluster gives no between-cluster variance."""


class NonBinaryScoresError(CompareInputError):
    """A test for 0/1 outcomes (McNemar, exact intervals) was given other scores."""


@dataclass(frozen=True, eq=False)
class CompareData:
    """Dense grids ``[S, I]`` of item scores ``y``, samples ``n`` and successes ``k``.

    Attributes:
        subjects, items: labels (``pd.Index``).
        y: ``float64[S, I]`` mean score of each (subject, item), NaN where missing.
        n: ``float64[S, I]`` number of samples behind ``y`` (0 where missing); a fractional
            response with no ``trials`` and no ``run`` counts as one sample.
        groups: group labels (benchmarks); ``item_group``: ``int[I]`` (all 0 without groups).
        clusters: cluster labels or None; ``item_cluster``: ``int[I]`` or None.
        binary: every sample is 0/1 (so ``k = y * n`` are whole counts).
        repeated: some item has more than one sample.
    """

    subjects: pd.Index
    items: pd.Index
    y: np.ndarray
    n: np.ndarray
    groups: pd.Index
    item_group: np.ndarray
    clusters: pd.Index | None
    item_cluster: np.ndarray | None
    binary: bool
    repeated: bool
    source: str = "the response table"

    @property
    def k(self) -> np.ndarray:
        return np.where(self.n > 0, np.nan_to_num(self.y) * self.n, 0.0)

    @property
    def grouped(self) -> bool:
        return not (len(self.groups) == 1 and self.groups[0] == "(all)")

    def group_items(self, g: int) -> np.ndarray:
        return np.flatnonzero(self.item_group == g)


def _table(df: pd.DataFrame, name: str):
    """The response table of ``df`` (the one validation of every table: aliases, names,
    numbers, repeated samples by ``run``), its errors as :class:`CompareInputError`."""
    from platinum_jax.data import ResponseTable

    if len(df) == 0:
        raise CompareInputError(f"{name} has no rows; pass at least one response per model")
    try:
        return ResponseTable.from_frame(df, name=name)
    except ValueError as exc:
        raise CompareInputError(str(exc)) from None


def _from_table(table, name: str, trials: int | None) -> CompareData:
    resp = np.asarray(table.response, np.float64)
    # The same support check as fit, score and subset (a likelihood's own check), so that
    # percentages and counts get the same message everywhere.
    try:
        Bernoulli().check(resp, table.trials, f"{name}, column response")
    except ValueError as exc:
        raise CompareInputError(f"{exc}; compare reads scores in [0, 1]") from None
    if table.trials is not None and trials is not None:
        raise CompareInputError(f"{name} has a trials column and trials={trials} was given; "
                                "pass one of them")
    t = table.trials
    if t is None and trials is not None:
        if int(trials) != trials or trials < 1:
            raise CompareInputError(f"trials={trials!r}: pass a whole number >= 1")
        t = np.full(len(resp), float(trials))
    if t is not None:
        succ = resp * t
        bad = np.abs(succ - np.round(succ)) > 1e-6 * t
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise NonBinaryScoresError(
                f"{name}: response {resp[i]!r} with {t[i]:g} trials (row {i}) is not a share of "
                f"successes k/{t[i]:g}; pass responses as successes / trials, or drop the "
                "trials (column or option) to treat responses as plain item scores"
            )
    s_codes, i_codes = table.subject_index, table.item_index
    n_subj, n_item = table.n_subjects, table.n_items
    n_rows = np.ones(len(resp)) if t is None else t
    n = np.zeros((n_subj, n_item))
    tot = np.zeros((n_subj, n_item))
    np.add.at(n, (s_codes, i_codes), n_rows)
    np.add.at(tot, (s_codes, i_codes), resp * n_rows)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.where(n > 0, tot / np.where(n > 0, n, 1.0), np.nan)
    binary = bool(t is not None or np.isin(resp, (0.0, 1.0)).all())
    if table.groups is None:
        groups, item_group = pd.Index(["(all)"], name="group"), np.zeros(n_item, dtype=np.int64)
    else:
        groups, item_group = table.groups, np.asarray(table.item_group, dtype=np.int64)
    clusters = table.clusters
    item_cluster = None if clusters is None else np.asarray(table.item_cluster, dtype=np.int64)
    if clusters is not None and len(clusters) < 2:
        raise SingleClusterError(
            f"{name}: the cluster column has a single cluster ({clusters[0]!r}), which gives no "
            "between-cluster variance; drop the cluster column (items independent) or pass the "
            "real clusters (passage, template, repository) of the items"
        )
    return CompareData(
        subjects=pd.Index(table.subjects, name="subject"), items=pd.Index(table.items, name="item"),
        y=y, n=n, groups=groups, item_group=item_group, clusters=clusters,
        item_cluster=item_cluster, binary=binary, repeated=bool((n > 1).any()), source=name,
    )


def as_compare_data(data, *, trials: int | None = None, name: str | None = None) -> CompareData:
    """Read ``data`` (a :class:`CompareData`, a ``ResponseTable``, a long ``DataFrame`` or a
    CSV/Parquet path) into dense comparison grids; see the module docstring for the columns.

    Args:
        trials: the number of 0/1 samples behind every fractional response, when the table
            has no ``trials`` column (e.g. 10 for pass@1 over 10 samples).

    Raises:
        CompareInputError: a bad input (or one of its subclasses), naming the input and what
            to pass instead.
    """
    if isinstance(data, CompareData):
        return data
    if isinstance(data, (str, Path)):
        path = Path(data)
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file")
        frame = (pd.read_parquet(path) if path.suffix.lower() in (".parquet", ".pq")
                 else pd.read_csv(path))
        name = name or path.name
        return _from_table(_table(frame, name), name, trials)
    if isinstance(data, pd.DataFrame):
        name = name or "the response table"
        return _from_table(_table(data, name), name, trials)
    if hasattr(data, "to_frame") and hasattr(data, "item_index"):  # a ResponseTable
        return _from_table(data, name or data.source, trials)
    raise TypeError(f"expected a DataFrame, a ResponseTable or a file path, got "
                    f"{type(data).__name__}")


def require_two_models(data: CompareData) -> None:
    if len(data.subjects) < 2:
        raise TooFewModelsError(
            f"{data.source} has {len(data.subjects)} model(s) ({list(data.subjects)}); a "
            "comparison needs at least two: pass responses of two or more models (subject column)"
        )


def model_positions(data: CompareData, models=None) -> np.ndarray:
    """Positions of ``models`` among the subjects of ``data``, in the order given (every
    subject when None); unknown names and fewer than two models are refused by name."""
    if models is None:
        return np.arange(len(data.subjects))
    missing = [m for m in models if m not in data.subjects]
    if missing:
        raise CompareInputError(f"models {missing} are not in {data.source}; the models "
                                f"are {list(data.subjects)}")
    if len(models) < 2:
        raise TooFewModelsError(f"models={list(models)}: a comparison needs at least two; "
                                f"pass two or more of {list(data.subjects)}")
    return np.asarray([data.subjects.get_loc(m) for m in models])
