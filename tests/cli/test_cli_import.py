"""``platinum-jax import``: logs -> response file -> ``platinum-jax fit``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from platinum_jax.cli import main

LOGS = Path(__file__).parents[1] / "fixtures" / "logs"
LCB = Path(__file__).resolve().parents[3] / "shared" / "data" / "item-level" / "livecodebench"


def test_lm_eval_import_then_fit(tmp_path, capsys):
    out = tmp_path / "responses.parquet"
    argv = ["import", "lm-eval", str(LOGS / "lm_eval"), "--metric", "acc_norm",
            "--metric", "exact_match", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    for line in ("subjects: 2", "items: 10", "groups: 2", "responses: 20", "duplicates: none",
                 "per-item records without a usable score: 0"):
        assert line in printed
    frame = pd.read_parquet(out)
    # Every sample line of both runs, scored by the chosen metric, with its provenance.
    want = []
    for path in sorted((LOGS / "lm_eval").rglob("samples_*.jsonl")):
        subject, task = path.parent.name, path.name.split("_2026")[0][len("samples_"):]
        metric = "acc_norm" if task == "tiny_mc" else "exact_match"
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            want.append((subject, f"{task}/{rec['doc_id']}", task, rec[metric], metric))
    got = frame[["subject", "item", "group", "response", "metric"]].itertuples(index=False)
    assert sorted(map(tuple, got)) == sorted(want)
    meta = pd.read_csv(tmp_path / "responses.metadata.csv")
    assert sorted(meta["model_args"]) == ["pretrained=dummy-a"] * 2 + ["pretrained=dummy-b"] * 2
    assert pd.read_csv(tmp_path / "responses.missing.csv").empty
    assert main(argv) == 2  # no silent overwrite
    assert "--overwrite" in capsys.readouterr().err
    assert main(["fit", str(out), "--model", "1pl", "--out", str(tmp_path / "fit")]) == 0
    subjects = pd.read_csv(tmp_path / "fit" / "subjects.csv", index_col=0)
    assert sorted(subjects.index) == ["dummy-a", "dummy-b"]


def test_missing_items_are_in_the_summary_and_the_side_table(tmp_path, capsys):
    root = tmp_path / "logs"
    shutil.copytree(LOGS / "lm_eval" / "dummy-b", root / "dummy-b")
    (path,) = root.glob("dummy-b/samples_tiny_gen_*.jsonl")
    lines = path.read_text().splitlines()
    rec = json.loads(lines[0])
    rec["exact_match"] = None
    path.write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n")
    out = tmp_path / "r.csv"
    assert main(["import", "lm-eval", str(root), "--metric", "acc", "--metric", "exact_match",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "per-item records without a usable score: 1" in printed
    assert "tiny_gen/0: line 1: exact_match=None is not a finite number" in printed
    missing = pd.read_csv(tmp_path / "r.missing.csv")
    assert missing[["subject", "item"]].values.tolist() == [["dummy-b", "tiny_gen/0"]]
    assert len(pd.read_csv(out)) == 9
    # The only subject lost its only response on that item: the table has 9 items, and the
    # summary says which item is gone.
    assert "items: 9" in printed and "missing share: 0.0%" in printed
    assert "items with no usable response from any subject (not in the table): 1, e.g. " \
        "tiny_gen/0" in printed


def test_duplicates_must_be_resolved_and_are_reported(tmp_path, capsys):
    pytest.importorskip("inspect_ai", reason="the inspect extra is not installed")
    out = tmp_path / "r.parquet"
    argv = ["import", "inspect", str(LOGS / "inspect"), "--metric", "match", "--out", str(out)]
    assert main(argv) == 2
    assert "--duplicates" in capsys.readouterr().err and not out.exists()
    assert main([*argv, "--duplicates", "mean"]) == 0
    printed = capsys.readouterr().out
    assert "duplicates: 4 row(s) repeated a (subject, item) pair; reduced by --duplicates mean" \
        in printed
    frame = pd.read_parquet(out)
    assert (frame["n_rows"] == 2).all() and (frame["trials"] == 4).all()
    assert frame["file"].str.count(";").eq(1).all()  # both logs named


def test_malformed_input_is_named(tmp_path, capsys):
    bad = tmp_path / "results_2026-01-01T00-00-00.json"
    bad.write_text('{"results": {"t": {"acc,none": 0.5}},')
    assert main(["import", "lm-eval", str(bad), "--out", str(tmp_path / "r.parquet")]) == 2
    err = capsys.readouterr().err
    assert f"{bad} (line 1, column" in err and "is not valid JSON" in err
    csv = tmp_path / "scores.csv"
    csv.write_text("subject,item,response\nm,i,0.5\nm,j,abc\n")
    assert main(["import", "tidy", str(csv), "--out", str(tmp_path / "r.parquet")]) == 2
    err = capsys.readouterr().err
    assert "scores.csv" in err and "response value(s) are non-numeric" in err
    assert main(["import", "tidy", str(csv), "--metric", "acc",
                 "--out", str(tmp_path / "r.parquet")]) == 2
    assert "--metric does not apply to the tidy format" in capsys.readouterr().err
    assert main(["import", "tidy", str(csv), "--out", str(tmp_path / "r.txt")]) == 2
    assert ".parquet or .csv" in capsys.readouterr().err


@pytest.mark.slow
def test_livecodebench_import_then_2pl(tmp_path, capsys):
    csv = LCB / "responses.csv"
    if not csv.exists():
        pytest.fail("the shared LiveCodeBench data is missing beside the repository checkout")
    out = tmp_path / "lcb.parquet"
    assert main(["import", "tidy", str(csv), "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    raw = pd.read_csv(csv)
    n_s, n_i = raw["model"].nunique(), raw["item"].nunique()
    assert f"subjects: {n_s}" in printed and f"items: {n_i}" in printed
    assert f"groups: {raw['benchmark'].nunique()}" in printed
    assert f"responses: {len(raw)}" in printed
    share = 1 - len(raw) / (n_s * n_i)
    assert any(line.startswith(f"missing share: {share:.1%}") for line in printed)
    fit = tmp_path / "fit"
    assert main(["fit", str(out), "--model", "2pl", "--out", str(fit)]) == 0
    summary = json.loads((fit / "fit.json").read_text())
    assert summary["converged"]
    assert (summary["n_subjects"], summary["n_items"], summary["n_responses"]) == (
        n_s, n_i, len(raw))


def test_helm_import(tmp_path, capsys):
    out = tmp_path / "helm.csv"
    suite = LOGS / "helm" / "runs" / "tiny"
    assert main(["import", "helm", str(suite), "--metric", "num_prompt_tokens",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert {"subjects: 1", "items: 12", "groups: 2", "responses: 12"} <= set(printed)
    frame = pd.read_csv(out)
    assert set(frame["metric"]) == {"num_prompt_tokens"} and "trials" not in frame.columns
    assert main(["import", "helm", str(suite), "--metric", "a", "--metric", "b",
                 "--out", str(tmp_path / "x.csv")]) == 2
    assert "give one --metric" in capsys.readouterr().err


def test_every_eval_ever_import(tmp_path, capsys):
    root = LOGS / "every_eval_ever"
    out = tmp_path / "eee.csv"
    assert main(["import", "eee", str(root), "--metric", "acc", "--metric", "exact_match",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert {"subjects: 1", "items: 10", "groups: 2", "responses: 10"} <= set(printed)
    agg = tmp_path / "agg.csv"
    assert main(["import", "eee", str(root), "--level", "aggregate", "--out", str(agg)]) == 0
    assert sorted(pd.read_csv(agg)["item"]) == ["tiny_gen", "tiny_mc"]
    assert main(["import", "tidy", str(agg), "--level", "aggregate",
                 "--out", str(tmp_path / "x.csv")]) == 2
    assert "--level applies to eee" in capsys.readouterr().err


EPOCH_RAW = Path(__file__).resolve().parents[3] / "shared" / "data" / "epoch-benchmark-stitching" / "raw"


def test_epoch_import_reports_every_score_it_leaves_out(tmp_path, capsys):
    """Kept plus left out is the whole export; each left-out score says which rule, named by
    the command's own options, removed it, and the options change what is kept."""
    every, kept = tmp_path / "all.csv", tmp_path / "kept.csv"
    assert main(["import", "epoch", str(EPOCH_RAW), "--min-benchmarks", "1",
                 "--min-release-date", "none", "--out", str(every)]) == 0
    assert pd.read_csv(tmp_path / "all.missing.csv").empty
    capsys.readouterr()
    assert main(["import", "epoch", str(EPOCH_RAW), "--out", str(kept)]) == 0
    out, err = capsys.readouterr()
    assert "min_benchmarks=" not in out + err  # no library argument names
    full = pd.read_csv(every)
    ok = pd.read_csv(kept)
    gone = pd.read_csv(tmp_path / "kept.missing.csv")
    pairs = {*zip(full.subject, full.item, strict=True)}
    assert {*zip(ok.subject, ok.item, strict=True)} | {*zip(gone.subject, gone.item,
                                                          strict=True)} == pairs
    assert len(ok) + len(gone) == len(full)
    assert f"per-item records without a usable score: {len(gone)}" in out
    few = gone[gone.reason.str.contains("fewer than --min-benchmarks 4")]
    dated = gone[gone.reason.str.contains("--min-release-date")]
    assert len(few) + len(dated) == len(gone) and len(few) and len(dated)
    for n, rule in ((len(few), "fewer than --min-benchmarks 4"),):
        assert any(line.strip().startswith(f"{n} left out: model scored on {rule}")
                   for line in out.splitlines())
    # a model left out for its benchmarks has fewer than 4 among the date-passing scores
    passing = pd.concat([ok, few])
    counts = passing.groupby("subject").item.nunique()
    assert (counts[few.subject.unique()] < 4).all() and (counts[ok.subject.unique()] >= 4).all()
    # the options the messages name exist and act
    assert main(["import", "epoch", str(EPOCH_RAW), "--min-benchmarks", "1",
                 "--out", str(tmp_path / "one.csv")]) == 0
    assert len(pd.read_csv(tmp_path / "one.csv")) == len(ok) + len(few)
    assert main(["import", "tidy", str(every), "--min-benchmarks", "2",
                 "--out", str(tmp_path / "t.csv")]) == 2
    assert "apply to the epoch format" in capsys.readouterr().err


def test_lm_eval_aggregate_level_import(tmp_path, capsys):
    """--level aggregate reads lm-eval < 0.4 and Evalchemy results: one score per run and task,
    the logged standard error as se."""
    out = tmp_path / "agg.csv"
    assert main(["import", "lm-eval", str(LOGS / "lm_eval_v03"), "--level", "aggregate",
                 "--metric", "acc", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert {"subjects: 2", "items: 2", "responses: 4"} <= set(printed)
    frame = pd.read_csv(out).set_index(["subject", "item"])
    for path in sorted((LOGS / "lm_eval_v03").glob("*/*.json")):
        if path.name.endswith("_write_out_info.json"):
            continue
        results = json.loads(path.read_text())
        subject = f"{results['config']['model']}:{results['config']['model_args']}"
        for task, entry in results["results"].items():
            assert frame.loc[(subject, task), "response"] == pytest.approx(entry["acc"])
            assert frame.loc[(subject, task), "se"] == pytest.approx(entry["acc_stderr"])
    assert main(["import", "lm-eval", str(LOGS / "evalchemy"), "--metric", "accuracy",
                 "--metric", "acc", "--out", str(tmp_path / "e.csv")]) == 2
    assert "Evalchemy writes no per-document scores" in capsys.readouterr().err
    assert main(["import", "lm-eval", str(LOGS / "evalchemy"), "--level", "aggregate",
                 "--metric", "accuracy", "--metric", "acc", "--out", str(tmp_path / "e.csv")]) == 0
    assert set(pd.read_csv(tmp_path / "e.csv")["metric"]) == {"accuracy", "acc"}


def test_lighteval_import(tmp_path, capsys):
    stamp = "2025-06-01T10-20-30.123456"
    folder = tmp_path / "out" / "details" / "org" / "tiny" / stamp
    folder.mkdir(parents=True)
    values = {"lighteval|arc:easy|0": [1.0, 0.0, None], "lighteval|gsm8k|0": [0.0, 1.0, 1.0]}
    for task, vals in values.items():
        rows = [{"doc": {"query": f"q{k}", "id": str(k)}, "model_response": {"text": ["a"]},
                 "metric": {"acc": v}} for k, v in enumerate(vals)]
        pd.DataFrame(rows).to_parquet(folder / f"details_{task}_{stamp}.parquet")
    out = tmp_path / "lt.csv"
    assert main(["import", "lighteval", str(tmp_path / "out"), "--metric", "acc",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "subjects: 1" in printed and "responses: 5" in printed
    assert "per-item records without a usable score: 1" in printed
    frame = pd.read_csv(out)
    assert set(frame["subject"]) == {"org/tiny"} and set(frame["metric"]) == {"acc"}
    assert sorted(frame["response"]) == sorted(v for vs in values.values() for v in vs
                                               if v is not None)
    missing = pd.read_csv(tmp_path / "lt.missing.csv")
    assert missing["item"].tolist() == ["lighteval|arc:easy|0/2"]
    assert main(["import", "lighteval", str(folder), "--metric", "acc", "--metric", "em",
                 "--out", str(tmp_path / "x.csv")]) == 2
    assert "lighteval: give one --metric" in capsys.readouterr().err
    assert main(["import", "lighteval", str(folder), "--level", "aggregate",
                 "--out", str(tmp_path / "x.csv")]) == 2
    assert "--level applies to eee and lm-eval logs, not to lighteval" in capsys.readouterr().err
