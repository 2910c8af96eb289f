"""HELM runs: ``benchmark_output/runs/<suite>/<run>/`` with ``run_spec.json``,
``per_instance_stats.json`` and ``scenario_state.json``.

A run is one scenario evaluated by one model (``run_spec.adapter_spec.model``). Its
``per_instance_stats.json`` lists, per instance and train trial (and perturbation), statistics
``{"name": {"name": metric, "split": ...}, "count", "sum", "mean", ...}``. The item is
``task/instance_id`` where the task is the run name without its ``model=`` and
``model_deployment=`` arguments (so that the same scenario run on several models shares items);
train trials (different few-shot draws) are averaged, and count as ``trials`` when every value is
0/1. Perturbed copies of an instance (robustness runs) are left out and counted in the metadata.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from platinum_jax.importers._common import (
    ImportedResponses,
    finish,
    format_error,
    load_json,
    repeated_item_rows,
    require_field,
    score_value,
)

__all__ = ["read_helm"]

_MODEL_ARGS = ("model", "model_deployment")


def _run_dirs(paths: Iterable[str | Path]) -> list[Path]:
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            if (p / "run_spec.json").exists():
                found.append(p)
                continue
            hits = sorted(f.parent for f in p.rglob("run_spec.json"))
            if not hits:
                raise FileNotFoundError(
                    f"{p}: no HELM run below it (a run directory holds run_spec.json); point at "
                    "benchmark_output/runs/<suite>/ or at one run"
                )
            found.extend(hits)
        elif p.exists():
            raise ValueError(f"{p}: expected a HELM suite or run directory, not a file")
        else:
            raise FileNotFoundError(f"{p}: no such file or directory")
    return found


def _task(run_name: str) -> str:
    """The run name without the model arguments: ``mmlu:subject=anatomy,model=x`` ->
    ``mmlu:subject=anatomy``."""
    head, _, args = run_name.partition(":")
    kept = [a for a in args.split(",") if a and a.split("=", 1)[0] not in _MODEL_ARGS]
    return f"{head}:{','.join(kept)}" if kept else head


def read_helm(
    paths: str | Path | Iterable[str | Path],
    *,
    metric: str = "exact_match",
    split: str | None = None,
) -> ImportedResponses:
    """Read HELM run directories into item-level responses.

    Args:
        paths: suite directories (``benchmark_output/runs/<suite>``) searched for runs, or
            run directories.
        metric: the per-instance statistic (``exact_match``, ``quasi_exact_match``,
            ``f1_score``, ...); its ``mean`` is the response.
        split: keep this split only (``"test"``, ``"valid"``); None keeps the statistic's
            split whatever it is (an instance lives in one split).

    Returns:
        :class:`ImportedResponses`: subject = ``adapter_spec.model``, item = ``task/instance``,
        group = task. Instances of ``scenario_state.json`` with no statistic ``metric`` and
        statistics whose mean is not a number go to ``missing``. ``metadata`` has one row per
        run: run name, model, deployment, few-shot count (``max_train_instances``), train
        trials, adaptation method, scenario class, groups, perturbed stats left out.

    Raises:
        LogFormatError: a file that is not JSON or lacks a field (file and record named).
        ValueError: no run reports ``metric`` (the metrics they do report are listed).
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    runs = _run_dirs(paths)
    rows: list[dict] = []
    meta: list[dict] = []
    missing: list[dict] = []
    seen_metrics: set[str] = set()
    for run in runs:
        spec_path = run / "run_spec.json"
        spec = load_json(spec_path)
        name = require_field(spec, "name", spec_path, "top level", str)
        adapter = require_field(spec, "adapter_spec", spec_path, "top level", dict)
        subject = require_field(adapter, "model", spec_path, "adapter_spec", str)
        task = _task(name)
        stats_path = run / "per_instance_stats.json"
        if not stats_path.exists():
            raise format_error(run, "", "has run_spec.json but no per_instance_stats.json; "
                                        "the run did not finish (rerun helm-run for it)")
        records = load_json(stats_path)
        if not isinstance(records, list):
            raise format_error(stats_path, "top level", "should be a JSON list of instances")
        values: dict[str, list[float]] = {}
        perturbed = 0
        for k, rec in enumerate(records):
            where = f"record {k}"
            iid = require_field(rec, "instance_id", stats_path, where, str)
            if rec.get("perturbation"):
                perturbed += 1
                continue
            stats = require_field(rec, "stats", stats_path, where, list)
            item = f"{task}/{iid}"
            for j, stat in enumerate(stats):
                sname = require_field(stat, "name", stats_path, f"{where}, stat {j}", dict)
                mname = require_field(sname, "name", stats_path, f"{where}, stat {j}.name", str)
                seen_metrics.add(mname)
                if mname != metric or sname.get("perturbation"):
                    continue
                if split is not None and sname.get("split") != split:
                    continue
                value = score_value(stat.get("mean"))
                if value is None:
                    missing.append({"subject": subject, "item": item, "group": task,
                                    "file": str(stats_path), "task": task, "metric": metric,
                                    "reason": f"{where}, stat {j}: mean={stat.get('mean')!r} is "
                                              "not a finite number"})
                    continue
                values.setdefault(item, []).append(value)
        instances = _scenario_instances(run / "scenario_state.json", split)
        reported = {m["item"] for m in missing if m["file"] == str(stats_path)}
        for iid in sorted(instances, key=str):
            if f"{task}/{iid}" in values or f"{task}/{iid}" in reported:
                continue
            missing.append({"subject": subject, "item": f"{task}/{iid}", "group": task,
                            "file": str(stats_path), "task": task, "metric": metric,
                            "reason": f"instance {iid} of scenario_state.json has no "
                                      f"{metric!r} statistic"})
        rows.extend(repeated_item_rows(subject, task, metric, stats_path, values))
        meta.append({
            "subject": subject, "task": task, "file": str(run), "metric": metric,
            "run_name": name, "model_deployment": adapter.get("model_deployment"),
            "num_fewshot": adapter.get("max_train_instances"),
            "train_trials": adapter.get("num_train_trials"), "method": adapter.get("method"),
            "scenario": (spec.get("scenario_spec") or {}).get("class_name"),
            "groups": ",".join(spec.get("groups") or []),
            "n_instances": len(values), "perturbed_records_left_out": perturbed,
        })
    if not rows and seen_metrics and metric not in seen_metrics:
        raise ValueError(
            f"no HELM run in {', '.join(map(str, runs))} reports the statistic {metric!r}; they "
            f"report {', '.join(sorted(seen_metrics))}. Choose with metric=... (CLI: --metric)"
        )
    return finish(rows, meta, missing, "helm", ", ".join(map(str, runs)))


def _scenario_instances(path: Path, split: str | None) -> set[str]:
    """Unperturbed instance ids the run evaluated (empty when the file is absent)."""
    if not path.exists():
        return set()
    state = load_json(path)
    out: set[str] = set()
    for k, rs in enumerate(require_field(state, "request_states", path, "top level", list)):
        inst = require_field(rs, "instance", path, f"request_states[{k}]", dict)
        if inst.get("perturbation") or "id" not in inst:
            continue
        if split is None or inst.get("split") == split:
            out.add(str(inst["id"]))
    return out
