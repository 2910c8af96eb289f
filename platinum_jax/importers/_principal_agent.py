"""Read the per-item primitives release of Haupt, Hartenstein, Reuel, Kochenderfer and Koyejo,
"Welfare, Improvability, and Noise: A Principal–Agent Theory of Optimal Benchmark Item
Aggregation" (the ``data/`` folder of their code release).

Every per-item table is indexed by ``(task, doc_id)``; the judges' and raters' GWA rankings are
long tables with one row per ranked GWA. Required files: ``noise.csv``, ``cost.csv``,
``welfare.csv``, ``gwa_welfare_scores.csv``, ``judge_loadings.jsonl``; the others
(``gwa_welfare_scores_mean.csv``, ``judge_loadings_openai.jsonl``, ``heldout_raters/``,
``item_margins.parquet``, ``item_topics.csv``) may be absent, and their attribute is then None.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from platinum_jax._welfare_ranks import welfare_bounds
from platinum_jax.importers._common import LogFormatError

__all__ = ["PrincipalAgentRelease", "ReleaseFileMissingError", "ReleaseFormatError",
           "read_principal_agent_release"]

KEY = ["task", "doc_id"]
COLUMNS = {
    "noise.csv": [*KEY, "noise_sigma_hat", "noise_sigma2", "noise_mean_phat", "noise_n_obs",
                  "subgroup"],
    "cost.csv": [*KEY, "anchor_phat", "beta_pt", "beta_sft", "beta_rl", "cost_pt_usd",
                 "cost_sft_usd", "cost_rl_usd", "cost_min_usd", "cheapest_axis",
                 "axis_pt_improving", "axis_sft_improving", "axis_rl_improving"],
    "welfare.csv": [*KEY, "dataset_family", "w_auto", "w_aug"],
    "gwa_welfare_scores.csv": ["gwa", "concept_id", "dropped", "p_auto_15", "p_aug_15"],
    "gwa_welfare_scores_mean.csv": ["gwa", "concept_id", "dropped", "p_auto_15", "p_aug_15"],
    "item_margins.parquet": KEY,
    "item_topics.csv": [*KEY, "topic"],
}
REQUIRED = ("noise.csv", "cost.csv", "welfare.csv", "gwa_welfare_scores.csv",
            "judge_loadings.jsonl")
OPTIONAL = ("gwa_welfare_scores_mean.csv", "judge_loadings_openai.jsonl", "heldout_raters",
            "item_margins.parquet", "item_topics.csv")
JUDGE_FILES = {"claude": "judge_loadings.jsonl", "openai": "judge_loadings_openai.jsonl"}
PERSPECTIVES = ("automation", "augmentation")
AXES = ("pt", "sft", "rl")
# How items() names each part's columns: a prefix unless the column already carries it.
PARTS = {"noise": ("noise", "noise_"), "cost": ("cost", "cost_"), "welfare": ("welfare", ""),
         "margins": ("margins", "margin_"), "topics": ("topics", "")}
EXCLUSION_COLUMNS = ["file", "task", "doc_id", "column", "value", "reason"]


class ReleaseFormatError(LogFormatError):
    """A release file's content breaks the format: a renamed column, a repeated item, a value
    outside its range. The message names the file, the column and the rows."""


class ReleaseFileMissingError(FileNotFoundError):
    """Files the release needs (or an optional part that was asked for) are not in the
    directory; the message lists them and the directory."""


@dataclass(frozen=True, eq=False)
class PrincipalAgentRelease:
    """The release's tables (see :func:`read_principal_agent_release`).

    Attributes:
        directory: where the files were read.
        noise: ``noise.csv`` by ``(task, doc_id)``: ``noise_sigma2`` (σ²_i), ``noise_sigma_hat``,
            ``noise_mean_phat``, ``noise_n_obs``, ``subgroup`` and the rank columns.
        cost: ``cost.csv`` by ``(task, doc_id)``: anchor p̂, slopes β per axis (PT, SFT, RL),
            dollar cost of a 0.10 lift per axis (NaN where β ≤ 0), ``cost_min_usd`` (C_i),
            ``cheapest_axis``, ``axis_*_improving`` (bool) and the rank columns.
        welfare: ``welfare.csv`` by ``(task, doc_id)``: ``dataset_family``, ``w_auto``,
            ``w_aug`` in raw units (reciprocal-rank top-5).
        concept_scores: ``gwa_welfare_scores.csv`` by ``concept_id``, all GWAs, ``dropped``.
        concept_scores_mean: ``gwa_welfare_scores_mean.csv`` (flat-mean scores) or None.
        loadings: the judges' rankings, long: ``task, doc_id, judge, perspective, rank,
            concept_id`` (``judge`` is ``claude`` or ``openai``); failed judge calls
            (``ok`` false) have no rows here and are counted in ``exclusions``.
        heldout: the held-out raters' rankings, long: ``item, rater, perspective, rank,
            concept_id, family``, or None.
        margins: ``item_margins.parquet`` by ``(task, doc_id)``, or None.
        topics: ``item_topics.csv`` by ``(task, doc_id)``, or None.
        exclusions: one row per record left out, with ``file, task, doc_id, column, value,
            reason`` (failed judge calls; bad rows when read with ``bad="exclude"``).
    """

    directory: Path
    noise: pd.DataFrame
    cost: pd.DataFrame
    welfare: pd.DataFrame
    concept_scores: pd.DataFrame
    concept_scores_mean: pd.DataFrame | None
    loadings: pd.DataFrame
    heldout: pd.DataFrame | None
    margins: pd.DataFrame | None
    topics: pd.DataFrame | None
    exclusions: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=EXCLUSION_COLUMNS))

    def items(self, require=("noise", "cost", "welfare")) -> pd.DataFrame:
        """The named parts joined on ``(task, doc_id)`` (inner join: items in all of them).

        ``require`` names parts among ``noise, cost, welfare, margins, topics``. Columns keep
        their names when they already start with the part's prefix and get it otherwise:
        ``noise_*`` (``noise_subgroup``, ``noise_rank_lo``, ...), ``cost_*`` (``cost_beta_pt``,
        ``cost_anchor_phat``, ``cost_cheapest_axis``, ...), welfare's ``dataset_family,
        w_auto, w_aug`` as they are, ``margin_*`` and ``topic``. On the authors' release:
        149 items for noise, cost and welfare; 204 for noise and welfare; 14,908 for noise
        and cost.
        """
        if isinstance(require, str):
            require = (require,)
        unknown = [p for p in require if p not in PARTS]
        if unknown or not require:
            raise ValueError(f"require names parts among {sorted(PARTS)}, got {list(require)}")
        out = None
        for part in require:
            attr, prefix = PARTS[part]
            frame = getattr(self, attr)
            if frame is None:
                raise ReleaseFileMissingError(
                    f"{self.directory}: the release has no {part} table (its file is absent); "
                    f"add it or leave {part!r} out of require")
            frame = frame.rename(columns=lambda c, p=prefix: c if c.startswith(p) else p + c)
            out = frame if out is None else out.join(frame, how="inner")
        return out


def _fail_or_exclude(frame, bad, file, column, reason, mode, excluded):
    """Rows where ``bad`` holds: an error (``mode="raise"``) or recorded exclusions.
    ``column=None`` means the row's key, ``(task, doc_id)``, is at fault."""
    bad = np.asarray(bad, dtype=bool)
    if not bad.any():
        return frame
    rows = frame[bad]
    keys = [tuple(k.item() if hasattr(k, "item") else k for k in key) for key in rows.index]
    values = [None] * len(rows) if column is None else rows[column].tolist()
    where = "(task, doc_id)" if column is None else f"column {column!r}"
    if mode == "raise":
        example = keys[0] if column is None else f"{keys[0]} = {values[0]!r}"
        raise ReleaseFormatError(
            f"{file}: {int(bad.sum())} row(s) with {reason} in {where}, e.g. {example}; fix "
            "the file or read it with bad='exclude' to leave them out (recorded in "
            ".exclusions)")
    for (task, doc_id), value in zip(keys, values, strict=True):
        excluded.append(dict(file=file, task=task, doc_id=doc_id, column=column or "doc_id",
                             value=value, reason=reason))
    return frame[~bad]


def _read_table(path: Path, name: str) -> pd.DataFrame:
    try:
        frame = pd.read_parquet(path) if name.endswith(".parquet") else pd.read_csv(path)
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise ReleaseFormatError(f"{path}: cannot be read as a table ({exc})") from None
    missing = [c for c in COLUMNS[name] if c not in frame.columns]
    if missing:
        raise ReleaseFormatError(
            f"{path}: missing column(s) {missing} (columns present: {list(frame.columns)}); "
            "the release's SCHEMA.md lists the expected names")
    return frame


def _keyed(frame: pd.DataFrame, path: Path, mode, excluded) -> pd.DataFrame:
    """Index by ``(task, doc_id)``; doc_id must be an integer and every pair unique."""
    doc = pd.to_numeric(frame["doc_id"], errors="coerce")
    if doc.isna().any() or (doc % 1 != 0).any():
        bad = frame["doc_id"][doc.isna() | (doc % 1 != 0)].iloc[0]
        raise ReleaseFormatError(f"{path}: column 'doc_id' must hold integers, found {bad!r}")
    frame = frame.assign(task=frame["task"].astype(str), doc_id=doc.astype(np.int64))
    frame = frame.set_index(KEY)
    return _fail_or_exclude(frame, frame.index.duplicated(keep=False), path.name, None,
                            "a (task, doc_id) that appears more than once", mode, excluded)


def _numbers(frame, path, columns):
    for c in columns:
        values = pd.to_numeric(frame[c], errors="coerce")
        if (values.isna() & frame[c].notna()).any():
            bad = frame[c][values.isna() & frame[c].notna()].iloc[0]
            raise ReleaseFormatError(f"{path}: column {c!r} must be numeric, found {bad!r}")
        frame[c] = values.astype(float)
    return frame


def _bools(frame, path, columns):
    for c in columns:
        text = frame[c].astype(str).str.strip().str.lower()
        ok = text.isin(["true", "false", "1", "0", "1.0", "0.0"])
        if not ok.all():
            raise ReleaseFormatError(f"{path}: column {c!r} must be true/false, found "
                                     f"{frame[c][~ok].iloc[0]!r}")
        frame[c] = text.isin(["true", "1", "1.0"])
    return frame


def _read_noise(path, mode, excluded):
    frame = _numbers(_keyed(_read_table(path, "noise.csv"), path, mode, excluded), path,
                     ["noise_sigma_hat", "noise_sigma2", "noise_mean_phat", "noise_n_obs"])
    s2 = frame["noise_sigma2"]
    # A variance of a probability lies in (0, 1/4]; zero or NaN noise cannot weight an item.
    frame = _fail_or_exclude(frame, ~((s2 > 0) & (s2 <= 0.25)), path.name, "noise_sigma2",
                             "a noise variance that is missing, not positive or above 1/4",
                             mode, excluded)
    n_obs = frame["noise_n_obs"]
    if not ((n_obs >= 2) & (n_obs % 1 == 0)).all():
        raise ReleaseFormatError(f"{path}: column 'noise_n_obs' must hold integers >= 2, found "
                                 f"{n_obs[~((n_obs >= 2) & (n_obs % 1 == 0))].iloc[0]!r}")
    frame["noise_n_obs"] = n_obs.astype(np.int64)
    p = frame["noise_mean_phat"]
    return _fail_or_exclude(frame, ~p.between(0, 1), path.name, "noise_mean_phat",
                            "a mean correct probability outside [0, 1]", mode, excluded)


def _read_cost(path, mode, excluded):
    frame = _keyed(_read_table(path, "cost.csv"), path, mode, excluded)
    frame = _numbers(frame, path, ["anchor_phat", *(f"beta_{a}" for a in AXES),
                                   *(f"cost_{a}_usd" for a in AXES), "cost_min_usd"])
    frame = _bools(frame, path, [f"axis_{a}_improving" for a in AXES])
    frame = _fail_or_exclude(frame, ~frame["anchor_phat"].between(0, 1), path.name,
                             "anchor_phat", "an anchor probability outside [0, 1]", mode,
                             excluded)
    c = frame["cost_min_usd"]
    frame = _fail_or_exclude(frame, ~((c > 0) & np.isfinite(c)), path.name, "cost_min_usd",
                             "a cost that is missing, not positive or infinite", mode, excluded)
    for a in AXES:
        cost, up = frame[f"cost_{a}_usd"], frame[f"axis_{a}_improving"]
        wrong = (up & ~(cost > 0)) | (~up & cost.notna())
        frame = _fail_or_exclude(frame, wrong, path.name, f"cost_{a}_usd",
                                 f"a cost that disagrees with axis_{a}_improving (an improving "
                                 "axis needs a positive cost, another none)", mode, excluded)
    return frame


def _read_welfare(path, mode, excluded):
    frame = _numbers(_keyed(_read_table(path, "welfare.csv"), path, mode, excluded), path,
                     ["w_auto", "w_aug"])
    _, hi = welfare_bounds(5, "reciprocal")
    for c in ("w_auto", "w_aug"):
        frame = _fail_or_exclude(frame, ~frame[c].between(0, hi), path.name, c,
                                 f"a welfare outside its bounds [0, 5·H_5 = {hi:.4f}] (or "
                                 "missing)", mode, excluded)
    return frame


def _read_scores(path, name):
    frame = _bools(_numbers(_read_table(path, name), path, ["p_auto_15", "p_aug_15"]), path,
                   ["dropped"])
    if frame["concept_id"].duplicated().any():
        dup = frame["concept_id"][frame["concept_id"].duplicated()].iloc[0]
        raise ReleaseFormatError(f"{path}: concept_id {dup!r} appears more than once")
    kept = frame[~frame["dropped"]]
    for c in ("p_auto_15", "p_aug_15"):
        if not kept[c].between(1, 5).all():
            bad = kept.loc[~kept[c].between(1, 5), "concept_id"].iloc[0]
            raise ReleaseFormatError(f"{path}: column {c!r} of kept GWA {bad!r} is outside "
                                     "[1, 5] or missing (mark the GWA dropped if it has no "
                                     "score)")
    return frame.set_index("concept_id")


def _jsonl(path: Path) -> list[tuple[int, dict]]:
    records = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ReleaseFormatError(f"{path} (line {n}): not valid JSON: {exc.msg}") from None
        if not isinstance(rec, dict):
            raise ReleaseFormatError(f"{path} (line {n}): expected a JSON object")
        records.append((n, rec))
    return records


def _field(rec, key, path, n):
    if key not in rec:
        raise ReleaseFormatError(f"{path} (line {n}): missing field {key!r} (fields present: "
                                 f"{sorted(rec)})")
    return rec[key]


def _ranking(value, path, n):
    if not isinstance(value, list) or not all(isinstance(g, str) for g in value):
        raise ReleaseFormatError(f"{path} (line {n}): field 'ranked_gwa_ids' must be a list "
                                 "of GWA ids")
    if len(set(value)) != len(value):
        raise ReleaseFormatError(f"{path} (line {n}): 'ranked_gwa_ids' repeats a GWA")
    return value


def _check_perspective(value, path, n):
    if value not in PERSPECTIVES:
        raise ReleaseFormatError(f"{path} (line {n}): field 'perspective' must be one of "
                                 f"{PERSPECTIVES}, found {value!r}")
    return value


def _read_loadings(path, judge, excluded):
    rows, seen = [], set()
    for n, rec in _jsonl(path):
        task = str(_field(rec, "lm_eval_task", path, n))
        doc = _field(rec, "doc_id", path, n)
        if isinstance(doc, bool) or not isinstance(doc, int):
            raise ReleaseFormatError(f"{path} (line {n}): field 'doc_id' must be an integer")
        persp = _check_perspective(_field(rec, "perspective", path, n), path, n)
        if (task, doc, persp) in seen:
            raise ReleaseFormatError(f"{path} (line {n}): ({task!r}, {doc}, {persp!r}) was "
                                     "ranked before in this file")
        seen.add((task, doc, persp))
        if _field(rec, "ok", path, n) is not True:
            excluded.append(dict(file=path.name, task=task, doc_id=doc, column="ok",
                                 value=rec["ok"], reason=f"failed {judge} judge call "
                                 f"({persp}): no ranking"))
            continue
        for k, g in enumerate(_ranking(_field(rec, "ranked_gwa_ids", path, n), path, n), 1):
            rows.append((task, doc, judge, persp, k, g))
    return rows


def _json(path: Path):
    if not path.is_file():
        raise ReleaseFileMissingError(f"{path.parent}: missing {path.name}, which the held-out "
                                      "raters' rankings need")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ReleaseFormatError(f"{path} (line {exc.lineno}): not valid JSON: {exc.msg}") \
            from None


def _read_heldout(folder: Path) -> pd.DataFrame:
    items = _json(folder / "heldout_28_items.json")
    family = _json(folder / "family_map.json")
    if not isinstance(items, list) or not isinstance(family, dict):
        raise ReleaseFormatError(f"{folder}: heldout_28_items.json must be a list of item ids "
                                 "and family_map.json an object item id -> family")
    rows = []
    for path in sorted(folder.glob("*.jsonl")):
        records = _jsonl(path)
        if not records:
            raise ReleaseFormatError(
                f"{path}: holds no rankings; each rater x perspective file lists the rater's "
                "ranking of every held-out item, one JSON object a line: restore the file "
                "from the release, or move heldout_raters/ away (with --allow-missing, "
                "robustness set 2 is then skipped)")
        for n, rec in records:
            item = str(_field(rec, "task_id", path, n))
            if item not in family:
                raise ReleaseFormatError(f"{path} (line {n}): item {item!r} has no family in "
                                         "family_map.json")
            persp = _check_perspective(_field(rec, "perspective", path, n), path, n)
            rater = str(_field(rec, "rater", path, n))
            for k, g in enumerate(_ranking(_field(rec, "ranked_gwa_ids", path, n), path, n), 1):
                rows.append((item, rater, persp, k, g, family[item]))
    frame = pd.DataFrame(rows, columns=["item", "rater", "perspective", "rank", "concept_id",
                                        "family"])
    unlisted = sorted(set(frame["item"]) - set(map(str, items)))
    if unlisted:
        raise ReleaseFormatError(f"{folder}: raters rank items not in heldout_28_items.json: "
                                 f"{unlisted[:5]}")
    return frame


def read_principal_agent_release(directory, *, bad: str = "raise") -> PrincipalAgentRelease:
    """Read the authors' per-item primitives release (or a directory in the same format).

    Args:
        directory: the release's ``data/`` folder.
        bad: ``"raise"`` (default): a repeated ``(task, doc_id)``, a noise variance or cost that
            is missing or not positive, a welfare outside ``[0, 5·H_5]`` is a
            :class:`ReleaseFormatError`; ``"exclude"``: such rows are left out and recorded in
            ``.exclusions`` (file, item, column, value, reason).

    Raises:
        ReleaseFileMissingError: a required file is absent (all are listed).
        ReleaseFormatError: a file lacks a column (named with the file), a ranking names a GWA
            the scores do not list, welfare items and judge rankings disagree, or a bad row
            under ``bad="raise"``.
    """
    if bad not in ("raise", "exclude"):
        raise ValueError(f"bad must be 'raise' or 'exclude', got {bad!r}")
    root = Path(directory)
    if not root.is_dir():
        raise ReleaseFileMissingError(f"{root}: no such directory (the release's data/ folder)")
    missing = [name for name in REQUIRED if not (root / name).is_file()]
    if missing:
        raise ReleaseFileMissingError(f"{root}: missing required file(s) {missing}; the "
                                      f"release needs {list(REQUIRED)}")
    excluded: list[dict] = []
    noise = _read_noise(root / "noise.csv", bad, excluded)
    cost = _read_cost(root / "cost.csv", bad, excluded)
    welfare = _read_welfare(root / "welfare.csv", bad, excluded)
    scores = _read_scores(root / "gwa_welfare_scores.csv", "gwa_welfare_scores.csv")
    scores_mean = None
    if (root / "gwa_welfare_scores_mean.csv").is_file():
        scores_mean = _read_scores(root / "gwa_welfare_scores_mean.csv",
                                   "gwa_welfare_scores_mean.csv")
    rows = []
    for judge, name in JUDGE_FILES.items():
        if (root / name).is_file():
            rows += _read_loadings(root / name, judge, excluded)
    loadings = pd.DataFrame(rows, columns=[*KEY, "judge", "perspective", "rank", "concept_id"])
    heldout = None
    if (root / "heldout_raters").is_dir():
        heldout = _read_heldout(root / "heldout_raters")
    for name, frame in (("judge rankings", loadings), ("heldout_raters", heldout)):
        if frame is not None:
            unknown = sorted(set(frame["concept_id"]) - set(scores.index))
            if unknown:
                raise ReleaseFormatError(f"{root}: {name} name GWAs that "
                                         f"gwa_welfare_scores.csv does not list: {unknown[:5]}")
    judged = set(map(tuple, loadings.loc[loadings["judge"] == "claude", KEY].to_numpy()))
    failed = {(e["task"], e["doc_id"]) for e in excluded if e["column"] == "ok"}
    stray = sorted(set(welfare.index) - judged - failed)
    if stray:
        raise ReleaseFormatError(f"{root / 'welfare.csv'}: {len(stray)} item(s) have no ranking "
                                 f"in judge_loadings.jsonl, e.g. {stray[0]}")
    margins = topics = None
    if (root / "item_margins.parquet").is_file():
        margins = _keyed(_read_table(root / "item_margins.parquet", "item_margins.parquet"),
                         root / "item_margins.parquet", bad, excluded)
    if (root / "item_topics.csv").is_file():
        topics = _keyed(_read_table(root / "item_topics.csv", "item_topics.csv"),
                        root / "item_topics.csv", bad, excluded)
    return PrincipalAgentRelease(
        directory=root, noise=noise, cost=cost, welfare=welfare, concept_scores=scores,
        concept_scores_mean=scores_mean, loadings=loadings, heldout=heldout, margins=margins,
        topics=topics, exclusions=pd.DataFrame(excluded, columns=EXCLUSION_COLUMNS))
