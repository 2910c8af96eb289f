"""Older and neighbouring harness formats: lm-evaluation-harness before v0.4 (results with
``acc`` / ``acc_stderr``, ``--write_out`` files), aggregate-level lm-eval (v0.4 too), Evalchemy
(``<metric>_avg`` / ``<metric>_std_err``) and lighteval details files.

The fixtures in tests/fixtures/logs/{lm_eval_v03,evalchemy,lighteval}/ were written by hand in
the tools' formats; lighteval's Parquet details are written here (into tmp_path) from the
records below. Every expected number is read from the fixture files with the json module.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from platinum_jax.importers import LogFormatError, read_lighteval, read_lm_eval

LOGS = Path(__file__).parents[1] / "fixtures" / "logs"
V03 = LOGS / "lm_eval_v03"
EVALCHEMY = LOGS / "evalchemy"
LIGHTEVAL_RESULTS = LOGS / "lighteval" / "results_2025-06-01T10-20-30.123456.json"
STAMP = "2025-06-01T10-20-30.123456"
MODEL = "HuggingFaceTB/SmolLM2-135M"


def _v03(model: str) -> tuple[Path, dict]:
    (path,) = [p for p in (V03 / model).glob("*.json") if not p.name.endswith("_info.json")]
    return path, json.loads(path.read_text())


def _subject(results: dict) -> str:
    return f"{results['config']['model']}:{results['config']['model_args']}"


# ------------------------------------------------------------------ lm-eval before v0.4
def test_pre_v04_aggregates_with_their_standard_errors():
    logs = read_lm_eval(V03, metric="acc", level="aggregate")
    got = logs.responses.set_index(["subject", "item"])
    assert len(got) == 4 and set(logs.responses["metric"]) == {"acc"}
    for model in ("pythia-70m", "pythia-160m"):
        _, results = _v03(model)
        for task, entry in results["results"].items():
            row = got.loc[(_subject(results), task)]
            assert row["response"] == entry["acc"] and row["se"] == entry["acc_stderr"]
            assert row["group"] == task
    meta = logs.metadata.set_index(["subject", "task"])
    _, results = _v03("pythia-70m")
    info = meta.loc[(_subject(results), "arc_easy")]
    assert info["model_args"] == results["config"]["model_args"]
    assert info["num_fewshot"] == results["config"]["num_fewshot"]
    assert info["task_version"] == results["versions"]["arc_easy"]
    # the default takes each task's first metric; a standard error is never a metric
    first = read_lm_eval(V03, level="aggregate").responses
    assert set(first["metric"]) == {"acc", "ppl"}
    assert not first["metric"].str.contains("stderr").any()
    with pytest.raises(ValueError, match=r"task 'arc_easy' has no metric 'acc_stderr'; it "
                                         r"reports acc, acc_norm\. Choose"):
        read_lm_eval(V03, metric="acc_stderr", level="aggregate")


def test_pre_v04_write_out_files_give_instances():
    logs = read_lm_eval(V03, metric="acc")
    r = logs.responses
    for model in ("pythia-70m", "pythia-160m"):
        path, results = _v03(model)
        subject = _subject(results)
        for out in sorted((V03 / model).glob("*_write_out_info.json")):
            task = out.name[: -len("_write_out_info.json")]
            records = json.loads(out.read_text())
            got = r[(r.subject == subject) & (r.task == task)].set_index("item")["response"]
            want = {f"{task}/{rec['doc_id']}": float(rec["acc"]) for rec in records}
            assert got.to_dict() == want
            # the aggregate in the results file is the mean of the documents' values
            assert got.mean() == pytest.approx(results["results"][task]["acc"])
            mine = r[(r.subject == subject) & r.item.isin(want)]
            assert set(mine["file"]) == {str(out)}
    # pythia-160m has no write_out file for lambada_openai: reported, not dropped
    _, results = _v03("pythia-160m")
    (miss,) = logs.missing.itertuples()
    assert (miss.subject, miss.item) == (_subject(results), "lambada_openai/*")
    assert "lambada_openai_write_out_info.json" in miss.reason and "--write_out" in miss.reason
    table = logs.table()
    assert (table.n_subjects, table.n_items) == (2, 7)


def test_write_out_values_that_are_not_numbers_are_missing(tmp_path):
    root = tmp_path / "v03"
    shutil.copytree(V03 / "pythia-70m", root)
    out = root / "arc_easy_write_out_info.json"
    records = json.loads(out.read_text())
    records[1]["acc"] = "(0.5, 3)"
    records[2]["acc"] = True  # a write_out written by a newer json dump
    del records[3]["acc"]
    out.write_text(json.dumps(records))
    logs = read_lm_eval(root, metric="acc", tasks=["arc_easy"])
    miss = logs.missing.set_index("item")["reason"]
    assert miss.to_dict() == {"arc_easy/1": "record 1: acc='(0.5, 3)' is not a number",
                              "arc_easy/3": "record 3: no field 'acc'"}
    got = logs.responses.set_index("item")["response"].to_dict()
    assert got == {"arc_easy/0": float(records[0]["acc"]), "arc_easy/2": 1.0}


def test_v04_aggregate_level():
    root = LOGS / "lm_eval"
    logs = read_lm_eval(root, metric=["acc_norm", "exact_match"], level="aggregate")
    got = logs.responses.set_index(["subject", "item"])
    assert len(got) == 4
    for path in sorted(root.rglob("results_*.json")):
        results = json.loads(path.read_text())
        for task, entry in results["results"].items():
            m = "acc_norm" if task == "tiny_mc" else "exact_match"
            row = got.loc[(results["model_name"], task)]
            assert row["response"] == entry[f"{m},none"]
            assert row["se"] == entry[f"{m}_stderr,none"]
            assert row["metric"] == m
    assert logs.missing.empty


def test_lighteval_results_files_read_at_aggregate_level():
    """lighteval's (and the Open LLM Leaderboard v1's) results JSON has the pre-v0.4 shape; its
    "all" entry, the mean over tasks, is not a task."""
    logs = read_lm_eval(LIGHTEVAL_RESULTS, level="aggregate")
    results = json.loads(LIGHTEVAL_RESULTS.read_text())
    got = logs.responses.set_index("item")
    assert set(got.index) == set(results["results"]) - {"all"}
    assert set(logs.responses["subject"]) == {results["config_general"]["model_name"]}
    for task in got.index:
        entry = results["results"][task]
        metric = got.loc[task, "metric"]
        assert got.loc[task, "response"] == entry[metric]
        assert got.loc[task, "se"] == entry[f"{metric}_stderr"]


# ------------------------------------------------------------------ Evalchemy
def _evalchemy() -> dict[str, dict]:
    return {json.loads(p.read_text())["model_name"]: json.loads(p.read_text())
            for p in sorted(EVALCHEMY.rglob("results_*.json"))}


def test_evalchemy_avg_and_std_err_are_score_and_standard_error():
    logs = read_lm_eval(EVALCHEMY, level="aggregate", metric="accuracy",
                        tasks=["AIME24", "GPQADiamond"])
    got = logs.responses.set_index(["subject", "item"])
    assert set(logs.responses["metric"]) == {"accuracy"} and len(got) == 4
    for model, results in _evalchemy().items():
        for task in ("AIME24", "GPQADiamond"):
            entry = results["results"][task]
            row = got.loc[(model, task)]
            assert row["response"] == entry["accuracy_avg"]
            assert row["se"] == entry["accuracy_std_err"]
            # the mean of the repeated runs' accuracies, as the log's run_stats record them
            runs = [s["accuracy"] for s in entry["run_stats"]]
            assert row["response"] == pytest.approx(sum(runs) / len(runs))
    # default: the first metric with a standard error (accuracy, not solved_avg's "solved")
    first = read_lm_eval(EVALCHEMY, level="aggregate", tasks=["AIME24"]).responses
    assert set(first["metric"]) == {"accuracy"}


def test_evalchemy_mixed_entries_and_no_instances():
    logs = read_lm_eval(EVALCHEMY, level="aggregate", metric=["accuracy", "acc"])
    got = logs.responses.set_index(["subject", "item"])["response"]
    runs = _evalchemy()
    qwen, thinker = "Qwen/Qwen2.5-0.5B-Instruct", "open-thoughts/OpenThinker-7B"
    assert got[(qwen, "MATH500")] == runs[qwen]["results"]["MATH500"]["accuracy"]  # one run
    # lm-eval 0.4 tasks that Evalchemy ran and merged into the same file
    assert got[(thinker, "hellaswag")] == runs[thinker]["results"]["hellaswag"]["acc,none"]
    assert "se" not in logs.responses.columns  # MATH500 has no standard error
    with pytest.raises(ValueError, match=r"task 'AIME24' has no metric 'accuracy_std_err'; it "
                                         r"reports solved, accuracy\."):
        read_lm_eval(EVALCHEMY, level="aggregate", metric="accuracy_std_err")
    with pytest.raises(LogFormatError, match="Evalchemy writes no per-document scores; read "
                                             "level='aggregate'"):
        read_lm_eval(EVALCHEMY, metric=["accuracy", "acc"])


# ------------------------------------------------------------------ no known shape
def test_a_log_of_no_known_shape_names_the_keys_looked_for(tmp_path):
    odd = tmp_path / "results_2025-01-01T00-00-00.json"
    odd.write_text(json.dumps({"results": {"t": {"score": "high", "acc_stderr": 0.1}},
                               "config": {"model": "m"}}))
    with pytest.raises(LogFormatError, match=r"results_2025.*\(results\.t\): has no metric: "
                                             r"looked for 'metric,filter' keys.*'<metric>_avg'"):
        read_lm_eval(odd, level="aggregate")
    other = tmp_path / "scores.json"
    other.write_text(json.dumps({"scores": {"t": 0.5}}))
    with pytest.raises(LogFormatError, match=r"scores\.json \(top level\): has no field "
                                             r"'results'"):
        read_lm_eval(other)
    # in a directory, JSON files that are not results are not logs
    with pytest.raises(FileNotFoundError, match="no results_"):
        read_lm_eval(_only(tmp_path, other))
    with pytest.raises(ValueError, match="level='everything'"):
        read_lm_eval(V03, level="everything")


def _only(tmp_path: Path, file: Path) -> Path:
    folder = tmp_path / "only"
    folder.mkdir()
    shutil.copy(file, folder / file.name)
    return folder


# ------------------------------------------------------------------ lighteval details
def _new_rows(task: str, values: list) -> list[dict]:
    """lighteval >= 0.11 rows: doc, model_response, metric."""
    rows = []
    for k, v in enumerate(values):
        rows.append({
            "doc": {"query": f"Question {k}?", "choices": ["yes", "no"], "gold_index": k % 2,
                    "id": str(k), "task_name": task, "instruction": ""},
            "model_response": {"input": f"Question {k}?", "text": [""],
                               "logprobs": [-0.5 - k, -1.25], "input_tokens": [1, 2, 3],
                               "truncated_tokens_count": 0, "padded_tokens_count": 0},
            "metric": {"acc": v},
        })
    return rows


def _old_rows(values: list) -> list[dict]:
    """lighteval <= 0.10 rows: example, predictions, gold, metrics (columns sorted)."""
    return [{"choices": [], "cont_tokens": [[5, 6]], "example": f"Q: {k} + {k} = ?\nA:",
             "full_prompt": f"Q: {k} + {k} = ?\nA:", "gold": [str(2 * k)], "gold_index": [0],
             "input_tokens": [[1, 2]], "instruction": "", "metrics": {"em": v},
             "num_asked_few_shots": 0, "num_effective_few_shots": 0, "padded": [0],
             "predictions": [str(2 * k) if v else "7"], "truncated": [0]}
            for k, v in enumerate(values)]


def _run(root: Path, model: str, files: dict[str, list[dict]], suffix=".parquet",
         results: bool = True) -> Path:
    """``root`` as a lighteval --output-dir of one run of ``model``."""
    folder = root / "details" / model / STAMP
    folder.mkdir(parents=True)
    for task, rows in files.items():
        path = folder / f"details_{task}_{STAMP}{suffix}"
        if suffix == ".parquet":
            pd.DataFrame(rows).to_parquet(path)
        else:
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    if results:
        (root / "results" / model).mkdir(parents=True)
        shutil.copy(LIGHTEVAL_RESULTS, root / "results" / model / LIGHTEVAL_RESULTS.name)
    return root


ARC, GSM = "lighteval|arc:easy|0", "lighteval|gsm8k|0"
ACC, EM = [1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]


def test_lighteval_details_parquet_both_layouts(tmp_path):
    root = _run(tmp_path / "out", MODEL, {ARC: _new_rows(ARC, ACC), GSM: _old_rows(EM)})
    logs = read_lighteval(root, metric=["acc", "em"])
    r = logs.responses
    assert set(r["subject"]) == {MODEL}  # config_general.model_name of the results file
    assert r.set_index("item")["response"].to_dict() == {
        **{f"{ARC}/{k}": v for k, v in enumerate(ACC)},
        **{f"{GSM}/{k}": v for k, v in enumerate(EM)}}
    assert set(r["group"]) == {ARC, GSM} and logs.missing.empty
    meta = logs.metadata.set_index("task")
    results = json.loads(LIGHTEVAL_RESULTS.read_text())["results"]
    assert meta.loc[ARC, "layout"] == "doc/model_response/metric"
    assert meta.loc[GSM, "layout"] == "example/predictions/metrics"
    for task, metric in ((ARC, "acc"), (GSM, "em")):
        assert meta.loc[task, "aggregate"] == results[task][metric]
        assert meta.loc[task, "stderr"] == results[task][f"{metric}_stderr"]
        rows = r[r.task == task]
        assert rows["response"].mean() == pytest.approx(results[task][metric])
    with pytest.raises(ValueError, match=r"task 'lighteval\|gsm8k\|0' has no metric 'acc'; its "
                                         r"details report em\. Choose with metric="):
        read_lighteval(root, metric="acc")


def test_lighteval_jsonl_subject_from_the_path_and_missing_rows(tmp_path):
    values = [1.0, None, math.nan, 0.0]
    root = _run(tmp_path / "out", "org/tiny", {ARC: _new_rows(ARC, values)}, suffix=".jsonl",
                results=False)
    logs = read_lighteval(root)
    assert set(logs.responses["subject"]) == {"org/tiny"}  # no results file: the folder
    assert logs.responses.set_index("item")["response"].to_dict() == {f"{ARC}/0": 1.0,
                                                                       f"{ARC}/3": 0.0}
    assert logs.missing.set_index("item")["reason"].to_dict() == {
        f"{ARC}/1": "row 1: acc=None is not a finite number",
        f"{ARC}/2": "row 2: acc=nan is not a finite number"}


def test_lighteval_rows_per_sampling_method_and_stringified_metrics(tmp_path):
    rows = _new_rows(ARC, [1.0, 0.0])
    extra = json.loads(json.dumps(rows[0]))  # doc 0 again, scored by another sampling method
    extra["metric"] = {"acc": None, "f1": 0.5}
    rows[0]["metric"]["f1"] = None
    rows[1]["metric"]["f1"] = None
    old = [{**r, "metrics": str(r["metrics"])} for r in _old_rows(EM)]  # str() fallback
    root = _run(tmp_path / "out", MODEL, {ARC: [*rows, extra], GSM: old})
    logs = read_lighteval(root, metric=["acc", "em"])
    got = logs.responses.set_index("item")["response"].to_dict()
    assert got == {f"{ARC}/0": 1.0, f"{ARC}/1": 0.0,
                   **{f"{GSM}/{k}": v for k, v in enumerate(EM)}}
    assert logs.missing.empty and logs.duplicate_pairs() == 0
    f1 = read_lighteval(root / "details" / MODEL / STAMP / f"details_{ARC}_{STAMP}.parquet",
                        metric="f1")
    assert f1.responses.set_index("item")["response"].to_dict() == {f"{ARC}/0": 0.5}
    assert f1.missing.set_index("item")["reason"].to_dict() == {
        f"{ARC}/1": "row 1: f1=None is not a finite number"}


def test_lighteval_malformed_files_are_named(tmp_path):
    folder = tmp_path / "details" / "m" / STAMP
    folder.mkdir(parents=True)
    bad = folder / f"details_t|0_{STAMP}.parquet"
    pd.DataFrame({"example": ["q"], "predictions": [["a"]]}).to_parquet(bad)
    with pytest.raises(LogFormatError, match=r"\(row 0\): has no field 'metric' \(lighteval "
                                             r">= 0\.11\) or 'metrics'"):
        read_lighteval(tmp_path)
    bad.write_bytes(b"not parquet")
    with pytest.raises(LogFormatError, match="is not a readable Parquet file"):
        read_lighteval(bad)
    with pytest.raises(FileNotFoundError, match="no lighteval details_"):
        read_lighteval(_only(tmp_path, LIGHTEVAL_RESULTS))
