"""Every Eval Ever records from accuracy tables, response tables, IRT fits and the ECI."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from platinum_jax.export._eee_records import (
    EveryEvalEverLog,
    EveryEvalEverSource,
    ExportError,
    build_logs,
    metric_config,
    score_details,
)

__all__ = ["eee_from_accuracy", "eee_from_eci", "eee_from_fit"]

INTERACTIONS = ("single_turn",)  # multi-turn transcripts are not held by a response table
_ACCURACY_COLUMNS = ("group", "subject", "accuracy", "lo", "hi", "se", "method", "level",
                     "n_items")


def _columns(frame: pd.DataFrame, need: Sequence[str], what: str) -> pd.DataFrame:
    frame = frame.reset_index() if any(n in (frame.index.names or []) for n in need) else frame
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise ExportError(f"{what} lacks the column(s) {missing} (found {list(frame.columns)})")
    return frame


def eee_from_accuracy(
    accuracy: pd.DataFrame,
    source: EveryEvalEverSource,
    *,
    responses: pd.DataFrame | None = None,
    items: pd.DataFrame | None = None,
    interaction_type: str | None = None,
    correct_at: float | None = None,
    drop_unknown_developers: bool = False,
) -> tuple[list[EveryEvalEverLog], list[str]]:
    """Records of per-model, per-benchmark accuracy with its interval, e.g. the
    ``accuracy.csv`` of ``platinum-jax compare`` or :func:`platinum_jax.compare.accuracy`.

    One aggregate record per model; one ``evaluation_results`` entry per benchmark (group):
    the accuracy as the score, its interval as ``confidence_interval`` (level and method
    named), its standard error and the number of items. With ``responses`` (long: subject,
    item, group, response) and ``items`` (item, input, reference, optionally choices: the
    text the schema requires of every instance) each record gets its instance-level lines.

    Args:
        accuracy: columns (or index) group, subject, accuracy, lo, hi, se, method, level,
            n_items; optional basis, n_eff.
        source: where the results come from.
        responses: per-item responses for the instance-level records, with the model's
            answer in an ``output`` column.
        items: the item text, one row per item of ``responses``.
        interaction_type: ``single_turn`` (needed with ``responses``; multi-turn and agentic
            records need transcripts that a response table does not hold).
        correct_at: the score from which an item counts as correct (``is_correct``); needed
            when a response is not 0 or 1.
        drop_unknown_developers: leave out models with a flat id and no developer (returned)
            instead of failing.

    Returns:
        The records and the model labels left out.
    """
    acc = _columns(accuracy, _ACCURACY_COLUMNS, "the accuracy table")
    if not np.isfinite(acc["accuracy"].to_numpy(float)).all():
        bad = acc.loc[~np.isfinite(acc["accuracy"].to_numpy(float)), ["group", "subject"]]
        raise ExportError(f"accuracy is not finite for {bad.head(3).values.tolist()}")
    results: dict[str, list[dict]] = {}
    for row in acc.itertuples(index=False):
        group, subject = str(row.group), str(row.subject)
        basis = getattr(row, "basis", None)
        results.setdefault(subject, []).append({
            "evaluation_result_id": f"{group}/accuracy",
            "evaluation_name": group,
            "source_data": source.source_data(group),
            "metric_config": metric_config(
                "accuracy", "Accuracy", f"mean item score on {group} (1 = correct)",
                low=0.0, high=1.0, unit="proportion"),
            "score_details": score_details(
                row.accuracy, lower=row.lo, upper=row.hi, level=row.level,
                interval_method=row.method, se=row.se,
                se_method=None if basis is None or pd.isna(basis) else str(basis),
                n=row.n_items, details={"n_items": int(row.n_items),
                                        "n_eff": getattr(row, "n_eff", None)}),
        })
    samples = None
    if responses is not None:
        samples = _instance_lines(responses, items, interaction_type, correct_at)
        unknown = sorted(set(samples) - set(results))
        if unknown:
            raise ExportError(f"responses name models the accuracy table lacks: {unknown[:5]}")
    source_type = "evaluation_run" if samples else "documentation"
    return build_logs(results, source, source_type=source_type, samples=samples,
                      drop_unknown_developers=drop_unknown_developers)


def _instance_lines(responses, items, interaction_type, correct_at) -> dict[str, list[dict]]:
    if interaction_type not in INTERACTIONS:
        raise ExportError(f"instance-level records need interaction_type='single_turn' (got "
                          f"{interaction_type!r}; CLI: --interaction-type): the schema's "
                          "multi_turn and agentic records need message transcripts, which a "
                          "response table does not hold")
    resp = _columns(responses, ("subject", "item", "group", "response", "output"),
                    "the responses (instance records need each model's output text, an "
                    "output column)")
    if items is None:
        raise ExportError("instance-level records need each item's input and reference text, "
                          "which a response table does not hold: pass items with columns "
                          "item, input, reference (CLI: --items CSV), or export the aggregate "
                          "records alone")
    text = _columns(items, ("item", "input", "reference"), "the item table")
    if text["item"].duplicated().any():
        twice = text.loc[text["item"].duplicated(), "item"].iloc[0]
        raise ExportError(f"the item table lists {twice!r} twice")
    text = text.set_index(text["item"].astype(str))
    lacking = sorted(set(resp["item"].astype(str)) - set(text.index))
    if lacking:
        raise ExportError(f"{len(lacking)} item(s) of the responses have no row in the item "
                          f"table, e.g. {lacking[:3]}")
    values = resp["response"].to_numpy(float)
    if not np.isfinite(values).all():
        raise ExportError("the responses hold NaN or infinite scores")
    binary = bool(np.isin(values, (0.0, 1.0)).all())
    if correct_at is None and not binary:
        raise ExportError("is_correct is required for every instance and the responses are "
                          "not all 0 or 1; say from which score an item counts as correct "
                          "(correct_at=, CLI: --correct-at)")
    threshold = 1.0 if correct_at is None else float(correct_at)
    out: dict[str, list[dict]] = {}
    for row in resp.itertuples(index=False):
        t = text.loc[str(row.item)]
        reference = t["reference"]
        reference = [str(r) for r in reference] if isinstance(reference, list | tuple) else \
            [str(reference)]
        line = {
            "evaluation_name": str(row.group),
            "evaluation_result_id": f"{row.group}/accuracy",
            "sample_id": str(row.item),
            "interaction_type": interaction_type,
            "input": {"raw": str(t["input"]), "reference": reference},
            "output": {"raw": [str(row.output)]},
            "answer_attribution": [],
            "evaluation": {"score": float(row.response),
                           "is_correct": bool(float(row.response) >= threshold)},
        }
        if "choices" in t.index and isinstance(t["choices"], list | tuple):
            line["input"]["choices"] = [str(c) for c in t["choices"]]
        out.setdefault(str(row.subject), []).append(line)
    return out


def eee_from_eci(
    eci: pd.DataFrame,
    source: EveryEvalEverSource,
    *,
    level: float | None,
    replicates: int,
    anchors: Sequence[tuple[str, float]] | None = None,
    drop_unknown_developers: bool = False,
) -> tuple[list[EveryEvalEverLog], list[str]]:
    """Records of the Epoch Capabilities Index per model (the ``eci.csv`` of ``analyze eci``
    or :attr:`platinum_jax.analysis.EciResult.models`): the index as the score (unbounded,
    higher is better), its bootstrap interval, the raw capability and benchmark count as
    details."""
    frame = _columns(eci, ("model", "eci", "lower", "upper", "capability", "n_benchmarks"),
                     "the ECI table")
    how = (f"percentile interval of {replicates} bootstrap refits, each mapped to the ECI "
           "scale by the anchors" if replicates else None)
    anchor_text = "; ".join(f"{m} = {v:g}" for m, v in anchors) if anchors else None
    results = {}
    for row in frame.itertuples(index=False):
        details = {"capability": float(row.capability), "n_benchmarks": int(row.n_benchmarks)}
        for col in ("anchor", "shown", "release_date"):
            if hasattr(row, col):
                details[col] = getattr(row, col)
        results[str(row.model)] = [{
            "evaluation_result_id": "eci",
            "evaluation_name": "Epoch Capabilities Index",
            "source_data": source.source_data("Epoch Capabilities Index"),
            "metric_config": metric_config(
                "eci", "ECI", "Epoch Capabilities Index: capabilities from the "
                "benchmark-stitching fit of Ho et al. 2025, mapped linearly so that the anchors "
                "take their values" + (f" ({anchor_text})" if anchor_text else ""),
                low=-np.inf, high=np.inf, unit="points"),
            "score_details": score_details(row.eci, lower=row.lower, upper=row.upper,
                                           level=level, interval_method=how,
                                           replicates=replicates, details=details),
        }]
    return build_logs(results, source, source_type="documentation",
                      drop_unknown_developers=drop_unknown_developers)


def eee_from_fit(
    subjects: pd.DataFrame,
    source: EveryEvalEverSource,
    *,
    model: str,
    method: str,
    level: float | None,
    drop_unknown_developers: bool = False,
) -> tuple[list[EveryEvalEverLog], list[str]]:
    """Records of a fit's per-subject parameters (the ``subjects.csv`` of ``platinum-jax
    fit``): one result per parameter column (an ability, a capability), with its interval
    (``_lo`` / ``_hi``) and sd (``_sd``) where the fit has them."""
    frame = _columns(subjects, ("subject",), "the subjects table")
    params = [c for c in frame.columns if c not in ("subject", "n_responses")
              and not c.endswith(("_sd", "_lo", "_hi"))
              and pd.api.types.is_numeric_dtype(frame[c])]
    if not params:
        raise ExportError(f"the subjects table has no parameter column (found "
                          f"{list(frame.columns)})")
    results = {}
    for _, row in frame.iterrows():
        entries = []
        for p in params:
            entries.append({
                "evaluation_result_id": p,
                "evaluation_name": f"{source.collection} {p}",
                "source_data": source.source_data(source.collection),
                "metric_config": metric_config(
                    p, p, f"{p} of each model under the {model} model fitted by {method} to "
                    f"the item-level results (platinum-jax fit); higher is more able",
                    low=-np.inf, high=np.inf, unit="logit"),
                "score_details": score_details(
                    row[p], lower=row.get(f"{p}_lo"), upper=row.get(f"{p}_hi"), level=level,
                    interval_method=f"{method} posterior interval" if f"{p}_lo" in row
                    else None, se=row.get(f"{p}_sd"), se_method=f"{method} posterior sd",
                    n=row.get("n_responses")),
            })
        results[str(row["subject"])] = entries
    return build_logs(results, source, source_type="documentation",
                      drop_unknown_developers=drop_unknown_developers)
