"""The response table: one observed response per (subject, item) row, long and sparse.

A *subject* is what is measured (an AI model); an *item* is what it is measured on (a single
question, or a whole benchmark when scores are benchmark-level); an optional *group* says which
benchmark or task an item belongs to. Every measurement model and every inference method in the
package reads the integer arrays of a :class:`ResponseTable`; the labels stay here for reporting.

Memory: the arrays are ``int32`` indices and ``float64`` values (about 16 bytes a response plus 8
per optional column), so 10 million responses take well under 1 GB.

The validation pass of the rows and the duplicate rules are in ``_frame_checks.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from platinum_jax._names import UnknownNameError, close_matches_message

from ._connectivity import bipartite_components, linked_through_busiest
from ._frame_checks import (
    OPTIONAL,
    Duplicates,
    check_duplicate_rule,
    check_frame,
    reduce_duplicates,
)

__all__ = ["ResponseTable"]



@dataclass(frozen=True, eq=False)
class ResponseTable:
    """Validated responses in long form: one row per observed (subject, item) pair, in the
    order of the input rows.

    Attributes:
        subjects, items: sorted unique labels (``pd.Index`` named ``subject``/``item``).
        subject_index, item_index: ``int32[N]`` positions of each row's subject and item.
        response: ``float64[N]`` the observed responses (0/1, a fraction, a count share, ...;
            which values are valid is the likelihood's business, checked when a model is fitted).
        trials: ``float64[N]`` or None: the number of attempts behind a fraction (pass@k, a
            benchmark's item count); ``se``: known standard errors or None; ``weight``: row
            weights (default None = 1).
        groups: labels of item groups (benchmarks) or None; ``item_group``: ``int32[I]``.
        clusters: labels of item clusters (items that share a passage, a prompt template, a
            repository) or None; ``item_cluster``: ``int32[I]``.
        run: per row, the label of its run (one of repeated samples of the item: runs,
            epochs, seeds) or None; with runs a (subject, item) pair may repeat, one row per
            sample, and models see each sample as one response.
        source: how messages name the input (a file name).

    Build one with :meth:`from_frame`, :meth:`from_csv`/:meth:`from_parquet` (:meth:`read`
    picks by suffix) or :meth:`from_arrays`.
    """

    subjects: pd.Index
    items: pd.Index
    subject_index: np.ndarray = field(repr=False)
    item_index: np.ndarray = field(repr=False)
    response: np.ndarray = field(repr=False)
    trials: np.ndarray | None = field(default=None, repr=False)
    se: np.ndarray | None = field(default=None, repr=False)
    weight: np.ndarray | None = field(default=None, repr=False)
    groups: pd.Index | None = None
    item_group: np.ndarray | None = field(default=None, repr=False)
    clusters: pd.Index | None = None
    item_cluster: np.ndarray | None = field(default=None, repr=False)
    run: np.ndarray | None = field(default=None, repr=False)
    source: str = "the response table"

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_frame(
        cls,
        df: pd.DataFrame,
        *,
        duplicates: Duplicates = "error",
        name: str = "the response table",
    ) -> ResponseTable:
        """Validate a long frame ``subject, item, response[, group, cluster, run, trials, se,
        weight]``.

        ``model``/``score`` are read as ``subject``/``response``; ``benchmark`` is read as
        ``item`` when there is no ``item`` column (benchmark-level scores), else as ``group``.

        Args:
            duplicates: repeated (subject, item) pairs: ``"error"`` (default) names them;
                ``"mean"``, ``"max"``, ``"min"``, ``"first"``, ``"last"`` reduce them (trials
                are summed under ``"mean"`` so that a mean of fractions keeps its precision).
            name: how messages refer to the input.

        Raises:
            ValueError: missing columns or names, non-numeric or non-finite values (rows named),
                negative or non-integer trials, negative standard errors or weights, an item
                that lies in two groups, duplicates under ``duplicates="error"``.
        """
        check_duplicate_rule(duplicates)  # before the data: a wrong option is said first
        frame = cls.checked_frame(df, name=name)
        frame = reduce_duplicates(frame, duplicates, name)
        return cls._from_clean(frame, name)

    @staticmethod
    def checked_frame(df: pd.DataFrame, *, name: str = "the response table") -> pd.DataFrame:
        """The validation pass of :meth:`from_frame` without the duplicate rule: columns
        ``subject, item, response[, group, trials, se, weight]`` (aliases renamed), names
        normalised, numbers checked, rows in the order of ``df`` (so a caller can keep its own
        columns beside them). Raises as :meth:`from_frame` does."""
        return check_frame(df, name)

    @staticmethod
    def reduce_duplicates(frame: pd.DataFrame, duplicates: Duplicates = "error", *,
                          name: str = "the response table") -> pd.DataFrame:
        """One row per (subject, item) of a :meth:`checked_frame` by the rule ``duplicates``
        (as :meth:`from_frame` applies it; ``"error"`` names the repeated pairs)."""
        return reduce_duplicates(frame, duplicates, name)

    @classmethod
    def _from_clean(cls, frame: pd.DataFrame, name: str) -> ResponseTable:
        s_codes, subjects = pd.factorize(frame["subject"], sort=True)
        i_codes, items = pd.factorize(frame["item"], sort=True)

        def per_item(label):
            """The item's group or cluster: labels and a position per item (one each)."""
            if label not in frame.columns:
                return None, None
            codes, labels = pd.factorize(frame[label], sort=True)
            per = np.full(len(items), -1, dtype=np.int64)
            per[i_codes] = codes
            clash = per[i_codes] != codes
            if clash.any():
                i = int(np.flatnonzero(clash)[0])
                raise ValueError(
                    f"{name}: item {frame['item'].iat[i]!r} appears in more than one {label} "
                    f"(e.g. {frame[label].iat[i]!r}); give each item one {label}, or make item "
                    f"ids unique within {label}s (for example '{label}/item')"
                )
            return pd.Index(labels, name=label), per.astype(np.int32)

        groups, item_group = per_item("group")
        clusters, item_cluster = per_item("cluster")

        def col(c):
            return frame[c].to_numpy(dtype=np.float64, copy=True) if c in frame.columns else None

        table = cls(
            subjects=pd.Index(subjects, name="subject"),
            items=pd.Index(items, name="item"),
            subject_index=s_codes.astype(np.int32),
            item_index=i_codes.astype(np.int32),
            response=col("response"),
            trials=col("trials"),
            se=col("se"),
            weight=col("weight"),
            groups=groups,
            item_group=item_group,
            clusters=clusters,
            item_cluster=item_cluster,
            run=(frame["run"].to_numpy(dtype=object, copy=True) if "run" in frame.columns
                 else None),
            source=name,
        )
        for arr in (table.subject_index, table.item_index, table.response, table.trials,
                    table.se, table.weight, table.item_group, table.item_cluster, table.run):
            if arr is not None:
                arr.setflags(write=False)  # shared, never edited
        return table

    @classmethod
    def from_arrays(
        cls,
        subject_index,
        item_index,
        response,
        *,
        subjects: Iterable[str] | None = None,
        items: Iterable[str] | None = None,
        trials=None,
        name: str = "the response arrays",
    ) -> ResponseTable:
        """Table from integer positions (for simulations and large data). Labels default to
        ``s0, s1, ...`` zero-padded (``s007``) so that sorted labels keep the positions.

        Vectorised throughout (no per-row labels are built): 10 million rows take about a
        second. Positions no row uses are dropped and the rest renumbered, as
        :meth:`from_frame` would.

        Raises:
            ValueError: arrays of different lengths, negative or non-integer positions,
                positions beyond the given labels, non-finite responses or trials that are not
                whole numbers >= 1 (rows named), a repeated (subject, item) pair.
        """
        s = np.asarray(subject_index)
        i = np.asarray(item_index)
        y = np.asarray(response, dtype=np.float64)
        n = len(y)
        if s.shape != (n,) or i.shape != (n,):
            raise ValueError(
                f"{name}: subject_index, item_index and response must be 1-D and of one length "
                f"(got shapes {s.shape}, {i.shape}, {y.shape})"
            )
        if n == 0:
            raise ValueError(f"{name} has no rows; a response table needs at least one response")
        for what, arr in (("subject_index", s), ("item_index", i)):
            if not np.issubdtype(arr.dtype, np.integer):
                if not (np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr))):
                    raise ValueError(f"{name}: {what} must hold whole-number positions")
            if arr.min() < 0:
                raise ValueError(f"{name}: {what} has negative positions (row "
                                 f"{int(np.argmin(arr))}); positions count from 0")
        s, i = s.astype(np.int64, copy=False), i.astype(np.int64, copy=False)
        s_names = None if subjects is None else [str(x) for x in subjects]
        i_names = None if items is None else [str(x) for x in items]
        for what, names, arr in (("subjects", s_names, s), ("items", i_names, i)):
            if names is None:
                continue
            if sorted(names) != names:
                raise ValueError("from_arrays needs labels in sorted order (positions follow "
                                 "them)")
            if len(set(names)) != len(names):
                raise ValueError(f"{name}: {what} labels repeat; give each position one label")
            if arr.max() >= len(names):
                raise ValueError(f"{name}: a position ({int(arr.max())}) is beyond the "
                                 f"{len(names)} {what} labels")
        bad = ~np.isfinite(y)
        if bad.any():
            rows = [int(r) for r in np.flatnonzero(bad)[:6]]
            raise ValueError(f"{name}: {int(bad.sum())} response value(s) are NaN or infinite "
                             f"(rows {rows}); fix or drop those rows")
        t = None
        if trials is not None:
            t = np.asarray(trials, dtype=np.float64)
            bad = ~np.isfinite(t) | (t < 1) | (t != np.round(t))
            if bad.any():
                rows = [int(r) for r in np.flatnonzero(bad)[:6]]
                raise ValueError(f"{name}: trials must be whole numbers >= 1 (the attempts "
                                 f"behind each response): rows {rows}")
        s_codes, s_used = _compact(s)
        i_codes, i_used = _compact(i)
        n_s, n_i = len(s_used), len(i_used)
        # In place: every fresh array of this length costs page faults on first touch.
        flat = s_codes.astype(np.int64)
        flat *= n_i
        flat += i_codes
        if n_s * n_i <= 4 * n + 1_000_000:
            dup = np.bincount(flat, minlength=n_s * n_i) > 1
            repeated = np.flatnonzero(dup[flat]) if dup.any() else np.zeros(0, np.int64)
        else:
            order = np.argsort(flat, kind="stable")
            same = flat[order][1:] == flat[order][:-1]
            repeated = np.sort(np.concatenate([order[1:][same], order[:-1][same]]))
        if len(repeated):
            shown = "; ".join(f"(subject position {int(s[r])}, item position {int(i[r])})"
                              for r in repeated[:5])
            raise ValueError(
                f"{name}: {len(repeated)} rows repeat a (subject, item) pair, e.g. {shown}; "
                "reduce them first (ResponseTable.from_frame with duplicates='mean', ...)"
            )
        s_all = _labels("s", int(s.max()) + 1) if s_names is None else s_names
        i_all = _labels("i", int(i.max()) + 1) if i_names is None else i_names
        table = cls(
            # from a list of str, so the index has the string dtype from_frame's would have
            subjects=pd.Index([s_all[k] for k in s_used], name="subject"),
            items=pd.Index([i_all[k] for k in i_used], name="item"),
            subject_index=s_codes,
            item_index=i_codes,
            response=y.copy(),
            trials=None if t is None else t.copy(),
            source=name,
        )
        for arr in (table.subject_index, table.item_index, table.response, table.trials):
            if arr is not None:
                arr.setflags(write=False)
        return table

    @classmethod
    def from_csv(cls, path: str | Path, **kw) -> ResponseTable:
        """Read a long CSV (see :meth:`from_frame` for the columns and options)."""
        path = Path(path)
        try:
            df = pd.read_csv(path)
        except pd.errors.EmptyDataError:
            raise ValueError(f"{path} is empty; expected a CSV with a header row") from None
        except pd.errors.ParserError as exc:  # e.g. a row with more fields than the header
            raise ValueError(f"{path} is not a well-formed CSV ({exc}); every row needs as "
                             "many fields as the header") from None
        return cls.from_frame(df, name=kw.pop("name", path.name), **kw)

    @classmethod
    def from_parquet(cls, path: str | Path, **kw) -> ResponseTable:
        """Read a long Parquet file (needs ``pyarrow``)."""
        path = Path(path)
        return cls.from_frame(pd.read_parquet(path), name=kw.pop("name", path.name), **kw)

    @classmethod
    def read(cls, path: str | Path, **kw) -> ResponseTable:
        """CSV or Parquet by the file's suffix."""
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file")
        if path.suffix.lower() in (".parquet", ".pq"):
            return cls.from_parquet(path, **kw)
        return cls.from_csv(path, **kw)

    @classmethod
    def from_score_table(cls, table) -> ResponseTable:
        """Benchmark-level scores of a stitching ``ScoreTable``: subjects = models, items =
        benchmarks (its ``n_items`` and ``stderr`` columns become ``trials`` and ``se`` where
        every row has them)."""
        data = table.data
        frame = pd.DataFrame(
            {"subject": data["model"], "item": data["benchmark"], "response": data["score"]}
        )
        return cls.from_frame(frame, name="the score table")

    # ------------------------------------------------------------------ sizes and labels
    @property
    def n_subjects(self) -> int:
        return len(self.subjects)

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_responses(self) -> int:
        return int(self.response.shape[0])

    def __len__(self) -> int:
        return self.n_responses

    def __repr__(self) -> str:
        grp = f", {len(self.groups)} groups" if self.groups is not None else ""
        return (
            f"ResponseTable({self.n_responses} responses, {self.n_subjects} subjects, "
            f"{self.n_items} items{grp}; missing share {self.missing_share:.1%})"
        )

    @property
    def missing_share(self) -> float:
        """Share of the subject x item matrix with no response."""
        return 1.0 - self.n_responses / float(self.n_subjects * self.n_items)

    def subject_position(self, name: str) -> int:
        return _position(self.subjects, name, "subject")

    def item_position(self, name: str) -> int:
        return _position(self.items, name, "item")

    def to_frame(self) -> pd.DataFrame:
        """The rows as a labelled frame (the inverse of :meth:`from_frame`)."""
        out = pd.DataFrame(
            {
                "subject": self.subjects[self.subject_index],
                "item": self.items[self.item_index],
                "response": self.response,
            }
        )
        if self.groups is not None:
            out["group"] = self.groups[self.item_group[self.item_index]]
        if self.clusters is not None:
            out["cluster"] = self.clusters[self.item_cluster[self.item_index]]
        if self.run is not None:
            out["run"] = self.run
        for c in OPTIONAL:
            if getattr(self, c) is not None:
                out[c] = getattr(self, c)
        return out

    def item_groups(self) -> pd.Series | None:
        """Group label per item (indexed by item), or None without groups."""
        if self.groups is None:
            return None
        return pd.Series(self.groups[self.item_group], index=self.items, name="group")

    def components(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Connected components of the subject-item graph, largest first, as
        ``(subject positions, item positions)``; a fit puts only one component on one scale."""
        return bipartite_components(self.subject_index, self.item_index, self.n_subjects,
                                    self.n_items)

    def check_connected(self) -> None:
        """Raise naming the components when the subject-item graph falls apart."""
        if linked_through_busiest(self.subject_index, self.item_index, self.n_subjects,
                                  self.n_items):
            return
        comps = self.components()
        if len(comps) <= 1:
            return
        parts = []
        for k, (s, i) in enumerate(comps[:5]):
            shown = ", ".join(repr(self.items[j]) for j in i[:3]) + (" ..." if len(i) > 3 else "")
            parts.append(f"component {k + 1}: {len(s)} subjects, {len(i)} items ({shown})")
        more = f"; ... and {len(comps) - 5} more" if len(comps) > 5 else ""
        raise ValueError(
            f"{self.source}: the subject-item graph has {len(comps)} disconnected components, so "
            f"their scales are not comparable: {'; '.join(parts)}{more}. Add responses that link "
            "them, or fit each component on its own (ResponseTable.select)"
        )

    # ------------------------------------------------------------------ subsets
    def select(
        self, *, subjects: Iterable[str] | None = None, items: Iterable[str] | None = None
    ) -> ResponseTable:
        """The rows of the named subjects and/or items (labels re-indexed; unknown names raise)."""
        mask = np.ones(self.n_responses, dtype=bool)
        if subjects is not None:
            pos = [self.subject_position(s) for s in subjects]
            mask &= np.isin(self.subject_index, pos)
        if items is not None:
            pos = [self.item_position(i) for i in items]
            mask &= np.isin(self.item_index, pos)
        return self.rows(mask)

    def reordered(self, order: np.ndarray) -> ResponseTable:
        """The same responses with the rows in ``order`` (a permutation of the row positions);
        subjects, items and groups are unchanged."""
        order = np.asarray(order)
        if sorted(order.tolist()) != list(range(self.n_responses)):
            raise ValueError("order must be a permutation of the rows")

        def take(a):
            if a is None:
                return None
            out = np.asarray(a)[order]
            out.setflags(write=False)
            return out

        return replace(self, subject_index=take(self.subject_index),
                       item_index=take(self.item_index), response=take(self.response),
                       trials=take(self.trials), se=take(self.se), weight=take(self.weight),
                       run=take(self.run))

    def rows(self, mask: np.ndarray) -> ResponseTable:
        """The table restricted to the rows where ``mask`` is true."""
        mask = np.asarray(mask, dtype=bool)
        if not mask.any():
            raise ValueError(f"{self.source}: the selection leaves no responses")
        frame = self.to_frame().loc[mask].reset_index(drop=True)
        return replace(ResponseTable.from_frame(frame, name=self.source))


def _compact(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes int32, used positions)``: positions renumbered over the ones in use."""
    used = np.bincount(positions) > 0
    if used.all():
        return positions.astype(np.int32), np.arange(len(used))
    new = np.cumsum(used) - 1
    return new[positions].astype(np.int32), np.flatnonzero(used)


def _labels(prefix: str, n: int) -> list[str]:
    width = len(str(max(n - 1, 0)))
    return [f"{prefix}{k:0{width}d}" for k in range(n)]


def _position(index: pd.Index, name: str, kind: str) -> int:
    try:
        return int(index.get_loc(name))
    except KeyError:
        raise UnknownNameError(close_matches_message(kind, name, list(index))) from None
