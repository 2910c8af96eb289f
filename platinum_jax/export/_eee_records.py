"""Every Eval Ever 0.3.0 records built from this package's results.

An Every Eval Ever (EEE) datastore holds one aggregate record per evaluation run and model at
``data/<collection>/<developer>/<model>/<uuid>.json``, with an optional instance-level
sidecar ``<uuid>_samples.jsonl`` beside it. This module builds those records as plain
dictionaries (:class:`EveryEvalEverLog`); :mod:`._eee_write` puts them on disk.

What a record says comes from the data or from :class:`EveryEvalEverSource`, never from a
guess: the organisation that provides the data, who ran the evaluation, the library, the model
identities. The two model fields the 0.3.0 schema added (``deployment_type`` and
``model_availability``) take the schema's own value ``"unknown"`` unless the model table
states them.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["SCHEMA_VERSION", "EveryEvalEverLog", "EveryEvalEverSource", "model_directory"]

SCHEMA_VERSION = "0.3.0"
RELATIONSHIPS = ("first_party", "third_party", "collaborative", "other")
DEPLOYMENT_TYPES = ("self_deployed", "externally_managed", "unknown")
AVAILABILITY = ("open_weights", "closed_weights", "unknown")
MODEL_COLUMNS = ("id", "name", "developer", "deployment_type", "model_availability",
                 "inference_platform")
_BAD_CHARS = re.compile(r'[<>"\\|?*\x00-\x1f]')
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
             *(f"LPT{i}" for i in range(1, 10))}


class ExportError(ValueError):
    """A record cannot be written as the schema requires; the message names the field, the
    models or rows concerned and what to pass."""


def _component(value: str, what: str) -> str:
    """One portable folder name of the datastore path (colons become underscores)."""
    value = value.strip().replace(":", "_")
    if (not value or value in (".", "..", "data") or value.lower() == "unknown"
            or _BAD_CHARS.search(value) or value.endswith((".", " "))
            or value.split(".", 1)[0].upper() in _RESERVED):
        raise ExportError(f"{what} {value!r} cannot be a datastore folder name (empty, "
                          "'unknown', 'data', a reserved or non-portable name); give another "
                          "spelling in the model table")
    return value


def model_directory(model_id: str, developer: str | None) -> tuple[str, str]:
    """The ``(developer, model)`` folders of a model: the id's prefix and the rest with ``/``
    flattened to ``_`` when the id has one, else the stated developer and the id."""
    parts = model_id.strip().split("/")
    if len(parts) >= 2 and all(parts):
        rest = "_".join(_component(p, "model name part") for p in parts[1:])
        return _component(parts[0], "developer"), rest
    if developer is None or not str(developer).strip():
        raise ExportError(f"model {model_id!r} has a flat id and no developer")
    return _component(str(developer), "developer"), _component(model_id, "model id")


def _finite(x) -> bool:
    return isinstance(x, int | float | np.floating | np.integer) and math.isfinite(float(x))


def _bound(x: float) -> float | str:
    """A metric bound in strict JSON: the schema spells infinities as strings."""
    return ("Infinity" if x > 0 else "-Infinity") if math.isinf(x) else float(x)


@dataclass(frozen=True)
class EveryEvalEverSource:
    """What an export states about where the results come from.

    Attributes:
        collection: the datastore collection (benchmark or leaderboard) folder, e.g.
            ``"livecodebench"``.
        source_organization: the organisation that provides the data (``source_metadata``).
        evaluator_relationship: who ran the evaluation relative to the model's developer:
            ``first_party``, ``third_party``, ``collaborative`` or ``other``.
        eval_library: the library or harness that produced the per-item results.
        eval_library_version: its version (the schema's ``"unknown"`` when not known).
        source_name: a title for the source (a leaderboard, a paper); optional.
        dataset_urls: where the evaluation data can be found; with none and no
            ``hf_repo`` each result's ``source_data`` is the ``other`` kind, named by its
            evaluation.
        hf_repo: a Hugging Face dataset holding the evaluation data.
        models: the model table, indexed by the model label the results use, with any of the
            columns ``id`` (Hugging Face style id, default the label), ``name`` (default the
            label), ``developer`` (needed when the id has no ``org/`` prefix),
            ``deployment_type``, ``model_availability`` and ``inference_platform``.
        retrieved: the record's creation time in Unix seconds (default: now).
    """

    collection: str
    source_organization: str
    evaluator_relationship: str
    eval_library: str
    eval_library_version: str = "unknown"
    source_name: str | None = None
    dataset_urls: tuple[str, ...] = ()
    hf_repo: str | None = None
    models: pd.DataFrame | None = None
    retrieved: str | None = None

    def __post_init__(self):
        for name in ("collection", "source_organization", "eval_library",
                     "eval_library_version"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ExportError(f"{name} must be a non-empty string (got {value!r})")
        _component(self.collection, "collection")
        if self.evaluator_relationship not in RELATIONSHIPS:
            raise ExportError(f"evaluator_relationship {self.evaluator_relationship!r}: choose "
                              f"one of {', '.join(RELATIONSHIPS)}")
        if self.models is not None:
            extra = [c for c in self.models.columns if c not in MODEL_COLUMNS]
            if extra:
                raise ExportError(f"the model table has columns {extra} that a record cannot "
                                  f"hold; it takes {', '.join(MODEL_COLUMNS)}")
            if self.models.index.has_duplicates:
                dup = self.models.index[self.models.index.duplicated()].unique().tolist()
                raise ExportError(f"the model table lists {dup[:5]} more than once")
            for col, allowed in (("deployment_type", DEPLOYMENT_TYPES),
                                 ("model_availability", AVAILABILITY)):
                if col in self.models.columns:
                    bad = self.models[col].dropna()
                    bad = bad[~bad.isin(allowed)]
                    if len(bad):
                        raise ExportError(f"model table column {col}: {bad.iloc[0]!r} (model "
                                          f"{bad.index[0]!r}); use one of {', '.join(allowed)}")
        if self.retrieved is not None:
            try:
                float(self.retrieved)
            except ValueError:
                raise ExportError(f"retrieved={self.retrieved!r}: give Unix seconds, e.g. "
                                  f"{int(time.time())}") from None

    def stamp(self) -> str:
        return self.retrieved if self.retrieved is not None else f"{time.time():.3f}"

    def model_info(self, label: str) -> dict:
        row: Mapping = {}
        if self.models is not None and label in self.models.index:
            row = {k: v for k, v in self.models.loc[label].items() if not pd.isna(v)}
        info = {"name": str(row.get("name", label)), "id": str(row.get("id", label))}
        if "developer" in row:
            info["developer"] = str(row["developer"])
        if "inference_platform" in row:
            info["inference_platform"] = str(row["inference_platform"])
        info["additional_details"] = {
            "deployment_type": str(row.get("deployment_type", "unknown")),
            "model_availability": str(row.get("model_availability", "unknown")),
        }
        return info

    def source_data(self, evaluation: str) -> dict:
        if self.hf_repo:
            return {"dataset_name": evaluation, "source_type": "hf_dataset",
                    "hf_repo": self.hf_repo}
        if self.dataset_urls:
            return {"dataset_name": evaluation, "source_type": "url",
                    "url": list(self.dataset_urls)}
        return {"dataset_name": evaluation, "source_type": "other"}


@dataclass(frozen=True, eq=False)
class EveryEvalEverLog:
    """One aggregate record (``aggregate``, the JSON object) and its instance-level lines
    (``samples``, or None), to be written at ``data/<collection>/<developer>/<model>/``."""

    aggregate: dict
    samples: list[dict] | None = None
    folders: tuple[str, str, str] = ("", "", "")
    label: str = ""

    @property
    def uuid(self) -> str:
        """A version-4 UUID drawn from the evaluation id: the same record, the same name."""
        digest = hashlib.sha256(self.aggregate["evaluation_id"].encode()).digest()
        return str(uuid.UUID(bytes=digest[:16], version=4))

    @property
    def path(self) -> str:
        """The record's datastore path, ``data/<collection>/<developer>/<model>/<uuid>.json``."""
        return "/".join(("data", *self.folders, f"{self.uuid}.json"))


def build_logs(
    results: Mapping[str, Sequence[dict]],
    source: EveryEvalEverSource,
    *,
    source_type: str,
    samples: Mapping[str, list[dict]] | None = None,
    drop_unknown_developers: bool = False,
) -> tuple[list[EveryEvalEverLog], list[str]]:
    """One log per model label from its ``evaluation_results`` entries; returns the logs and
    the labels left out for want of a developer (only with ``drop_unknown_developers``)."""
    stamp = source.stamp()
    logs, dropped, flat = [], [], []
    ids = pd.Series({label: source.model_info(label)["id"] for label in results}, dtype=object)
    shared = set(ids[ids.duplicated(keep=False)].index)
    for label, entries in results.items():
        info = source.model_info(label)
        try:
            developer, model = model_directory(info["id"], info.get("developer"))
        except ExportError as exc:
            if "flat id and no developer" not in str(exc):
                raise ExportError(f"model {label!r}: {exc}") from None
            (dropped if drop_unknown_developers else flat).append(label)
            continue
        evaluation_id = f"{source.collection}/{info['id']}/{stamp}"
        if label in shared:  # runs of one model under several labels: one record each
            evaluation_id += f"/{label}"
        record = {
            "schema_version": SCHEMA_VERSION,
            "evaluation_id": evaluation_id,
            "retrieved_timestamp": stamp,
            "source_metadata": {
                **({"source_name": source.source_name} if source.source_name else {}),
                "source_type": source_type,
                "source_organization_name": source.source_organization,
                "evaluator_relationship": source.evaluator_relationship,
            },
            "model_info": info,
            "eval_library": {"name": source.eval_library,
                             "version": source.eval_library_version,
                             "additional_details": {"exported_by": _exporter()}},
            "evaluation_results": list(entries),
        }
        lines = None if samples is None else samples.get(label)
        if lines:
            lines = [{"schema_version": SCHEMA_VERSION, "evaluation_id": evaluation_id,
                      "model_id": info["id"], **line} for line in lines]
        logs.append(EveryEvalEverLog(record, lines, (source.collection, developer, model),
                                     label))
    if flat:
        raise ExportError(
            f"{len(flat)} model(s) have an id without an 'org/' prefix and no developer, e.g. "
            f"{flat[:5]}; the datastore files records by developer. Give a model table with a "
            "developer (or an org/model id) for each (CLI: --model-info CSV), or leave them out "
            "by name (CLI: --drop-unknown-developers)")
    return logs, dropped


def _exporter() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"platinum-jax {version('platinum-jax')}"
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        return "platinum-jax"


def strings(mapping: Mapping) -> dict[str, str]:
    """``additional_details`` / ``details`` objects hold strings only; None entries left out."""
    out = {}
    for k, v in mapping.items():
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        out[str(k)] = repr(float(v)) if isinstance(v, float | np.floating) else str(v)
    return out


def score_details(score: float, *, lower=None, upper=None, level=None, interval_method=None,
                  se=None, se_method=None, n=None, replicates=None, details=None) -> dict:
    """``score_details`` with the uncertainty fields the numbers support (NaN ones omitted)."""
    if not _finite(score):
        raise ExportError(f"score {score!r} is not a finite number")
    out: dict = {"score": float(score)}
    unc: dict = {}
    if _finite(se):
        unc["standard_error"] = {"value": float(se), **({"method": se_method} if se_method
                                                       else {})}
    if _finite(lower) and _finite(upper):
        ci = {"lower": float(lower), "upper": float(upper)}
        if _finite(level):
            ci["confidence_level"] = float(level)
        if interval_method:
            ci["method"] = str(interval_method)
        unc["confidence_interval"] = ci
    if _finite(n):
        unc["num_samples"] = int(n)
    if _finite(replicates) and int(replicates) > 0:
        unc["num_bootstrap_samples"] = int(replicates)
    if unc:
        out["uncertainty"] = unc
    if details:
        out["details"] = strings(details)
    return out


def metric_config(metric_id: str, name: str, description: str, *, low: float, high: float,
                  unit: str) -> dict:
    return {"evaluation_description": description, "metric_id": metric_id,
            "metric_name": name, "metric_kind": metric_id, "metric_unit": unit,
            "lower_is_better": False, "score_type": "continuous",
            "min_score": _bound(low), "max_score": _bound(high)}
