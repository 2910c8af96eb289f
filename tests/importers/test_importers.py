"""Log readers on logs written by the real tools (tests/fixtures/make_fixtures.py wrote them).

Expected values come from the log files themselves, read here with the json module and scored
again from the raw model outputs they record (argmax of log-likelihoods, string equality),
not from the readers.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from platinum_jax._extras import MissingExtraError
from platinum_jax.importers import (
    LogFormatError,
    read_every_eval_ever,
    read_helm,
    read_inspect,
    read_lm_eval,
)

LOGS = Path(__file__).parents[1] / "fixtures" / "logs"
LM_EVAL = LOGS / "lm_eval"
INSPECT = LOGS / "inspect"


def _samples(subject: str, task: str) -> list[dict]:
    (path,) = (LM_EVAL / subject).glob(f"samples_{task}_*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _acc(rec: dict, norm: bool) -> float:
    """lm-eval's acc / acc_norm from the recorded log-likelihoods of each choice."""
    ll = np.array([float(r[0]) for r in rec["filtered_resps"]])
    if norm:  # normalised by the byte length of the continuation (" choice")
        lengths = np.array([len(" " + c) for c in rec["doc"]["choices"]], dtype=float)
        ll = ll / lengths
    return float(np.argmax(ll) == int(rec["target"]))


# ------------------------------------------------------------------ lm-evaluation-harness
def test_lm_eval_reads_every_document_of_every_run():
    logs = read_lm_eval(LM_EVAL, metric=["acc", "exact_match"])
    r = logs.responses
    assert set(r["subject"]) == {"dummy-a", "dummy-b"}
    for subject in ("dummy-a", "dummy-b"):
        mc = _samples(subject, "tiny_mc")
        got = r[(r.subject == subject) & (r.task == "tiny_mc")].set_index("item")["response"]
        want = pd.Series({f"tiny_mc/{s['doc_id']}": _acc(s, False) for s in mc})
        pd.testing.assert_series_equal(got.sort_index(), want.sort_index(), check_names=False)
        gen = _samples(subject, "tiny_gen")
        got = r[(r.subject == subject) & (r.task == "tiny_gen")].set_index("item")["response"]
        want = pd.Series({f"tiny_gen/{s['doc_id']}": float(s["filtered_resps"][0] == s["target"])
                          for s in gen})
        pd.testing.assert_series_equal(got.sort_index(), want.sort_index(), check_names=False)
    assert set(r.loc[r.task == "tiny_mc", "metric"]) == {"acc"}
    assert set(r.loc[r.task == "tiny_gen", "metric"]) == {"exact_match"}
    assert logs.missing.empty and logs.duplicate_pairs() == 0
    table = logs.table()
    assert (table.n_subjects, table.n_items, table.n_responses) == (2, 10, 20)
    assert list(table.groups) == ["tiny_gen", "tiny_mc"]


def test_lm_eval_metadata_and_aggregates_agree_with_the_results_file():
    logs = read_lm_eval(LM_EVAL, metric="acc_norm", tasks=["tiny_mc"])
    meta = logs.metadata.set_index("subject")
    for subject in ("dummy-a", "dummy-b"):
        (path,) = (LM_EVAL / subject).glob("results_*.json")
        results = json.loads(path.read_text())
        assert meta.loc[subject, "model_args"] == f"pretrained={subject}"
        assert meta.loc[subject, "num_fewshot"] == results["n-shot"]["tiny_mc"]
        assert meta.loc[subject, "aggregate"] == results["results"]["tiny_mc"]["acc_norm,none"]
        rows = logs.responses[logs.responses.subject == subject]
        assert rows["response"].mean() == pytest.approx(meta.loc[subject, "aggregate"])
        want = [_acc(s, True) for s in sorted(_samples(subject, "tiny_mc"),
                                              key=lambda s: s["doc_id"])]
        assert rows.sort_values("item")["response"].tolist() == want
        assert meta.loc[subject, "date"].timestamp() == pytest.approx(results["date"])
    assert set(logs.responses["group"]) == {"tiny_mc"}


def test_lm_eval_metric_that_a_task_lacks_is_named():
    with pytest.raises(ValueError, match=r"task 'tiny_gen' has no metric 'acc'.*exact_match"):
        read_lm_eval(LM_EVAL, metric="acc")
    with pytest.raises(ValueError, match="filter 'strict-match'"):
        read_lm_eval(LM_EVAL, filter="strict-match")


def _copy_run(tmp_path: Path) -> Path:
    dest = tmp_path / "lm_eval"
    shutil.copytree(LM_EVAL / "dummy-a", dest / "dummy-a")
    return dest


def test_lm_eval_missing_per_item_values_are_reported(tmp_path):
    root = _copy_run(tmp_path)
    (path,) = (root / "dummy-a").glob("samples_tiny_mc_*.jsonl")
    lines = path.read_text().splitlines()
    rec = json.loads(lines[2])
    del rec["acc"]  # one document without the metric
    lines[2] = json.dumps(rec)
    path.write_text("\n".join(lines[:-1]) + "\n")  # and the last document gone
    logs = read_lm_eval(root, metric=["acc", "exact_match"])
    assert len(logs.responses) == 10 - 2
    miss = logs.missing.set_index("item")
    assert miss.loc["tiny_mc/2", "reason"] == "line 3: no field 'acc'"
    assert "1 of 6 documents have no line" in miss.loc["tiny_mc/*", "reason"]
    (gen,) = (root / "dummy-a").glob("samples_tiny_gen_*.jsonl")
    gen.unlink()
    logs = read_lm_eval(root, metric=["acc", "exact_match"])
    assert "--log_samples" in logs.missing.set_index("item").loc["tiny_gen/*", "reason"]


def test_lm_eval_malformed_files_name_the_file_line_and_field(tmp_path):
    root = _copy_run(tmp_path)
    (path,) = (root / "dummy-a").glob("samples_tiny_gen_*.jsonl")
    lines = path.read_text().splitlines()
    lines[1] = lines[1][:40]  # a truncated line
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(LogFormatError, match=rf"{path.name} \(line 2\): is not valid JSON"):
        read_lm_eval(root, metric=["acc", "exact_match"])
    lines[1] = json.dumps({"filter": "none", "exact_match": 1.0})
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(LogFormatError, match=r"line 2.*no field 'doc_id'"):
        read_lm_eval(root, metric=["acc", "exact_match"])
    (res,) = (root / "dummy-a").glob("results_*.json")
    res.write_text(json.dumps({"config": {"model": "dummy"}}))
    with pytest.raises(LogFormatError, match=rf"{res.name} \(top level\): has no field 'results'"):
        read_lm_eval(root)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="empty: no results_"):
        read_lm_eval(tmp_path / "empty")


# ------------------------------------------------------------------ Inspect
def _inspect_json() -> tuple[Path, dict]:
    (path,) = INSPECT.glob("*.json")
    return path, json.loads(path.read_text())


def _needs_inspect():
    pytest.importorskip("inspect_ai", reason="the inspect extra is not installed")


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_inspect_epochs_become_trials(suffix):
    _needs_inspect()
    (path,) = INSPECT.glob(f"*{suffix}")
    _, raw = _inspect_json()  # both logs come from the same scripted run
    letters = {"C": 1.0, "I": 0.0}
    by_item: dict[str, list[float]] = {}
    for s in raw["samples"]:
        by_item.setdefault(f"arith/{s['id']}", []).append(letters[s["scores"]["match"]["value"]])
    logs = read_inspect(path, scorer="match")
    got = logs.responses.set_index("item")
    assert set(got["subject"]) == {raw["eval"]["model"]}
    for item, vals in by_item.items():
        assert got.loc[item, "response"] == pytest.approx(np.mean(vals))
        assert got.loc[item, "trials"] == len(vals) == raw["eval"]["config"]["epochs"]
    assert logs.metadata.loc[0, "epochs"] == 2 and logs.metadata.loc[0, "status"] == "success"
    assert logs.missing.empty


def test_inspect_two_logs_of_one_run_are_duplicates_pooled_by_mean():
    _needs_inspect()
    logs = read_inspect(INSPECT, scorer="includes")
    assert logs.duplicate_pairs() == 4
    with pytest.raises(ValueError, match="repeat a"):
        logs.table()
    table = logs.table(duplicates="mean")
    frame = table.to_frame().set_index("item")
    raw = logs.responses.assign(s=lambda d: d.response * d.trials).groupby("item")
    want = raw["s"].sum() / raw["trials"].sum()
    np.testing.assert_allclose(frame["response"], want.loc[frame.index])
    assert (frame["trials"] == 4).all()


def test_inspect_scorer_must_be_chosen_among_several():
    _needs_inspect()
    with pytest.raises(ValueError, match="2 scorers .*includes, match.*scorer="):
        read_inspect(INSPECT)
    with pytest.raises(ValueError, match="no scorer 'f1'"):
        read_inspect(INSPECT, scorer="f1")


def test_inspect_missing_scores_are_reported_and_bad_logs_named(tmp_path):
    _needs_inspect()
    path, raw = _inspect_json()
    raw["samples"][0]["scores"].pop("match")
    raw["samples"][1]["scores"]["match"]["value"] = "maybe"
    edited = tmp_path / path.name
    edited.write_text(json.dumps(raw))
    logs = read_inspect(edited, scorer="match")
    s0, s1 = raw["samples"][0], raw["samples"][1]
    reasons = logs.missing["reason"].tolist()
    assert reasons == [
        f"sample {s0['id']!r} epoch {s0['epoch']}: no score from scorer 'match'",
        f"sample {s1['id']!r} epoch {s1['epoch']}: score value 'maybe' is neither a number nor "
        "one of C/I/P/N",
    ]
    # The item keeps its other epoch: one trial, not two.
    got = logs.responses.set_index("item")
    assert got.loc[f"arith/{s0['id']}", "trials"] == 1
    bad = tmp_path / "broken.json"
    bad.write_text('{"version": 2, "status": "success", "eval": {"task": 3}')
    with pytest.raises(LogFormatError, match="broken.json: Inspect cannot read this log"):
        read_inspect(bad, scorer="match")


def test_inspect_is_optional(monkeypatch):
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    with pytest.raises(MissingExtraError, match=r"platinum-jax\[inspect\]"):
        read_inspect(INSPECT)
    code = ("import sys, platinum_jax, platinum_jax.importers, platinum_jax.cli; "
            "platinum_jax.cli.build_parser(); print('inspect_ai' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------ HELM
HELM = LOGS / "helm" / "runs" / "tiny"


def _helm_stats(run: Path, metric: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for rec in json.loads((run / "per_instance_stats.json").read_text()):
        for stat in rec["stats"]:
            if stat["name"]["name"] == metric:
                out.setdefault(rec["instance_id"], []).append(stat["mean"])
    return out


@pytest.mark.parametrize("metric", ["exact_match", "num_prompt_tokens"])
def test_helm_reads_each_instance_of_each_run(metric):
    logs = read_helm(HELM, metric=metric)
    r = logs.responses
    runs = sorted(p for p in HELM.iterdir() if p.is_dir())
    assert len(runs) == 2 and len(logs.metadata) == 2
    for run in runs:
        spec = json.loads((run / "run_spec.json").read_text())
        task = spec["name"].split(":")[0]
        got = r[r.group == task].set_index("item")["response"]
        want = {f"{task}/{i}": float(np.mean(v)) for i, v in _helm_stats(run, metric).items()}
        assert got.to_dict() == want and len(want) == 6
        assert set(r.loc[r.group == task, "subject"]) == {spec["adapter_spec"]["model"]}
        meta = logs.metadata.set_index("task").loc[task]
        assert meta["num_fewshot"] == spec["adapter_spec"]["max_train_instances"]
        assert meta["run_name"] == spec["name"]
    # 0/1 exact matches carry their train trials; token counts do not.
    assert ("trials" in r.columns) == (metric == "exact_match")
    assert logs.missing.empty


def test_helm_missing_statistics_are_reported(tmp_path):
    run = next(p for p in HELM.iterdir() if p.name.startswith("simple_mcqa"))
    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    records = json.loads((copy / "per_instance_stats.json").read_text())
    lost = records[0]["instance_id"]
    records[0]["stats"] = [s for s in records[0]["stats"] if s["name"]["name"] != "exact_match"]
    (copy / "per_instance_stats.json").write_text(json.dumps(records))
    logs = read_helm(copy)
    assert len(logs.responses) == 5
    assert logs.missing[["item", "reason"]].values.tolist() == [
        [f"simple_mcqa/{lost}",
         f"instance {lost} of scenario_state.json has no 'exact_match' statistic"]]
    with pytest.raises(ValueError, match=r"statistic 'f1'.*they report .*exact_match"):
        read_helm(copy, metric="f1")


def test_helm_malformed_runs_are_named(tmp_path):
    run = next(p for p in HELM.iterdir() if p.name.startswith("simple_mcqa"))
    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    spec = json.loads((copy / "run_spec.json").read_text())
    del spec["adapter_spec"]["model"]
    (copy / "run_spec.json").write_text(json.dumps(spec))
    with pytest.raises(LogFormatError, match=r"run_spec.json \(adapter_spec\): has no field "
                                             r"'model'"):
        read_helm(copy)
    shutil.copy(run / "run_spec.json", copy / "run_spec.json")
    text = (copy / "per_instance_stats.json").read_text()
    (copy / "per_instance_stats.json").write_text(text[: len(text) // 2])
    with pytest.raises(LogFormatError, match=r"per_instance_stats.json \(line \d+, column \d+\): "
                                             "is not valid JSON"):
        read_helm(copy)
    (copy / "per_instance_stats.json").unlink()
    with pytest.raises(LogFormatError, match="no per_instance_stats.json"):
        read_helm(copy)


# ------------------------------------------------------------------ Every Eval Ever
EEE = LOGS / "every_eval_ever"


def _eee_lines(task: str) -> list[dict]:
    (path,) = (EEE / task).rglob("*_samples.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_eval_ever_instances_match_the_harness_metrics():
    logs = read_every_eval_ever(EEE, metric=["acc_norm", "exact_match"])
    got = logs.responses.set_index("item")
    for task, metric in (("tiny_mc", "acc_norm"), ("tiny_gen", "exact_match")):
        lines = [r for r in _eee_lines(task) if r["evaluation_result_id"] == metric]
        for rec in lines:
            # the harness's own per-document metrics, kept by the converter in the metadata
            raw = json.loads(rec["metadata"]["lm_eval_metrics"])[metric]
            assert got.loc[f"{task}/{rec['sample_id']}", "response"] == raw
        (agg,) = (EEE / task).rglob("*-*.json")
        log = json.loads(agg.read_text())
        want = next(r["score_details"]["score"] for r in log["evaluation_results"]
                    if r["evaluation_result_id"] == metric)
        rows = got[got.group == task]
        assert len(rows) == len(lines) and rows["response"].mean() == pytest.approx(want)
        assert set(rows["subject"]) == {log["model_info"]["id"]}
    meta = logs.metadata.set_index("task")
    assert meta.loc["tiny_mc", "source_name"] == "lm-evaluation-harness"
    assert logs.missing.empty
    with pytest.raises(ValueError, match=r"evaluation 'tiny_gen' has no metric 'acc_norm'.*"
                                         "exact_match"):
        read_every_eval_ever(EEE, metric="acc_norm")


def test_every_eval_ever_aggregate_level():
    logs = read_every_eval_ever(EEE, level="aggregate")
    got = logs.responses.set_index("item")
    for task in ("tiny_mc", "tiny_gen"):
        (agg,) = (EEE / task).rglob("*-*.json")
        first = json.loads(agg.read_text())["evaluation_results"][0]
        assert got.loc[task, "response"] == first["score_details"]["score"]
        se = first["score_details"]["uncertainty"]["standard_error"]["value"]
        assert got.loc[task, "se"] == se


def test_every_eval_ever_missing_scores_checksums_and_sidecars(tmp_path):
    root = tmp_path / "eee"
    shutil.copytree(EEE, root)
    (side,) = (root / "tiny_gen").rglob("*_samples.jsonl")
    agg = side.with_name(side.name.replace("_samples.jsonl", ".json"))
    lines = side.read_text().splitlines()
    rec = json.loads(lines[1])
    rec["evaluation"]["score"] = None
    lines[1] = json.dumps(rec)
    side.write_text("\n".join(lines) + "\n")
    with pytest.raises(LogFormatError, match=f"{side.name}.*does not match the sha256 checksum"):
        read_every_eval_ever(root)
    log = json.loads(agg.read_text())
    log["detailed_evaluation_results"]["checksum"] = hashlib.sha256(side.read_bytes()).hexdigest()
    agg.write_text(json.dumps(log))
    logs = read_every_eval_ever(root)
    assert logs.missing[["item", "reason"]].values.tolist() == [
        [f"tiny_gen/{rec['sample_id']}", "line 2: evaluation.score=None is not a number"]]
    side.unlink()
    logs = read_every_eval_ever(root)
    assert "sidecar" in logs.missing.set_index("item").loc["tiny_gen/*", "reason"]
    del log["model_info"]
    agg.write_text(json.dumps(log))
    with pytest.raises(LogFormatError, match=rf"{agg.name} \(top level\): has no field "
                                             "'model_info'"):
        read_every_eval_ever(root)
