"""Every Eval Ever 0.3.0 export: `compare` on LiveCodeBench and `analyze eci` on Epoch's data
written as records, checked against the release's JSON Schema (this interpreter, jsonschema)
and by the release's own validator (a Python >= 3.12 side environment), and read back equal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from platinum_jax.cli import main
from platinum_jax.export import (
    EveryEvalEverSource,
    ExportError,
    eee_from_accuracy,
    eee_from_eci,
    write_every_eval_ever,
)
from platinum_jax.importers import read_every_eval_ever

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"
LCB = SHARED / "item-level" / "livecodebench"
EPOCH = SHARED / "epoch-benchmark-stitching"
sys.path.insert(0, str(ROOT / "scripts"))
import eee_validator  # noqa: E402

pytestmark = pytest.mark.xdist_group("eee")

# Developers of the LiveCodeBench models whose Hugging Face style name has no org/ prefix
# (API models), by the start of the leaderboard's label: facts about who makes each family.
LCB_DEVELOPERS = {"Claude": "anthropic", "GPT": "openai", "O1": "openai", "O3": "openai",
                  "O4": "openai", "Gemini": "google", "Google": "google", "Codestral": "mistralai",
                  "Mistral": "mistralai", "Command": "cohere", "DBRX": "databricks",
                  "DeepSeek": "deepseek-ai", "Grok": "xai", "Qwen": "Qwen", "Smaug": "abacusai",
                  "StarCoder": "bigcode"}
SOURCE = dict(source_organization="LiveCodeBench", evaluator_relationship="third_party",
              eval_library="lcb_runner", retrieved="1764633600")


def _lcb_model_table(path: Path) -> Path:
    names = pd.read_csv(LCB / "models.csv").set_index("model")["model_name"]
    rows = []
    for label in pd.read_csv(LCB / "responses.csv")["model"].unique():
        name = names.get(label, label)
        row = {"model": label, "id": name}
        if "/" not in name:
            row["developer"] = next(d for k, d in LCB_DEVELOPERS.items() if label.startswith(k))
        rows.append(row)
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _run(*argv) -> None:
    assert main([str(a) for a in argv]) == 0


@pytest.fixture(scope="module")
def lcb_export(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lcb")
    _run("compare", LCB / "responses.csv", "--out", tmp / "cmp", "--no-plots",
         "--replicates", 200)
    _run("export", "eee", tmp / "cmp", "--out", tmp / "eee", "--collection", "livecodebench",
         "--source-organization", SOURCE["source_organization"], "--evaluator-relationship",
         "third_party", "--eval-library", "lcb_runner", "--retrieved", "1764633600",
         "--model-info", _lcb_model_table(tmp / "models.csv"))
    return tmp


@pytest.fixture(scope="module")
def eci_export(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("eci")
    _run("analyze", "eci", EPOCH / "scores_long.csv", "--out", tmp / "eci", "--eci-replicates", 20)
    orgs = pd.read_csv(EPOCH / "model_compute.csv")[["model", "organization"]]
    orgs.rename(columns={"organization": "developer"}).dropna().to_csv(tmp / "models.csv",
                                                                        index=False)
    _run("export", "eee", tmp / "eci", "--out", tmp / "eee", "--collection",
         "epoch-capabilities-index", "--source-organization", "Epoch AI",
         "--evaluator-relationship", "third_party", "--eval-library", "platinum-jax",
         "--retrieved", "1764633600", "--model-info", tmp / "models.csv",
         "--drop-unknown-developers")
    return tmp


def _records(root: Path) -> list[Path]:
    return sorted((root / "data").glob("*/*/*/*.json"))


def _schema_validators():
    import jsonschema
    try:
        folder = eee_validator.schema_dir()
    except subprocess.CalledProcessError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"the Every Eval Ever {eee_validator.VERSION} wheel could not be fetched "
                    f"from the package index ({exc})")
    out = {}
    for kind, name in (("aggregate", "eval.schema.json"),
                       ("instance", "instance_level_eval.schema.json")):
        schema = json.loads((folder / name).read_text())
        assert schema["version"] == "0.3.0"
        out[kind] = jsonschema.Draft7Validator(schema)
    return out


def _schema_errors(root: Path) -> list[str]:
    check = _schema_validators()
    errors = []
    for path in _records(root):
        record = json.loads(path.read_text())
        errors += [f"{path.name}: {e.message}" for e in check["aggregate"].iter_errors(record)]
        side = path.with_name(f"{path.stem}_samples.jsonl")
        if side.exists():
            for k, line in enumerate(side.read_text().splitlines()):
                errors += [f"{side.name}:{k + 1}: {e.message}"
                           for e in check["instance"].iter_errors(json.loads(line))]
    return errors


def _official(root: Path) -> list[dict]:
    try:
        program = eee_validator.validator()
    except LookupError as exc:
        pytest.skip(str(exc))
    out = subprocess.run([str(program), "validate", "--format", "json",
                          str(root / "data" / "*" / "*" / "*" / "*.json*")],
                         capture_output=True, text=True, timeout=600)
    reports = json.loads(out.stdout)
    assert out.returncode == 0, [r for r in reports if r["errors"] or r["warnings"]][:3]
    return reports


def test_compare_export_matches_the_schema_and_reads_back_equal(lcb_export):
    acc = pd.read_csv(lcb_export / "cmp" / "accuracy.csv")
    records = _records(lcb_export / "eee")
    assert len(records) == acc["subject"].nunique() == 88  # the data README: 88 models
    assert _schema_errors(lcb_export / "eee") == []
    back = read_every_eval_ever(lcb_export / "eee", level="aggregate", subject="name")
    meta = back.metadata.set_index(["task", "subject"]).sort_index()
    want = acc.set_index(["group", "subject"]).sort_index()
    assert list(meta.index) == list(want.index)
    for ours, theirs in (("aggregate", "accuracy"), ("lower", "lo"), ("upper", "hi"),
                         ("standard_error", "se"), ("confidence_level", "level"),
                         ("num_samples", "n_items")):
        np.testing.assert_array_equal(meta[ours].to_numpy(float), want[theirs].to_numpy(float))
    assert (meta["interval_method"] == want["method"]).all()
    resp = back.responses.set_index(["group", "subject"]).sort_index()
    np.testing.assert_array_equal(resp["response"], want["accuracy"])
    np.testing.assert_array_equal(resp["se"], want["se"])
    one = json.loads(records[0].read_text())
    assert one["model_info"]["additional_details"] == {"deployment_type": "unknown",
                                                       "model_availability": "unknown"}
    assert one["source_metadata"]["source_type"] == "documentation"


def test_eci_export_matches_the_schema_and_reads_back_equal(eci_export):
    eci = pd.read_csv(eci_export / "eci" / "eci.csv").set_index("model")
    summary = json.loads((eci_export / "eee" / "export.json").read_text())
    orgs = pd.read_csv(EPOCH / "model_compute.csv").dropna(subset=["organization"])
    lacking = sorted(set(eci.index) - set(orgs["model"]))
    assert sorted(summary["left_out_without_developer"]) == lacking
    assert summary["records"] == len(eci) - len(lacking)
    assert _schema_errors(eci_export / "eee") == []
    back = read_every_eval_ever(eci_export / "eee", level="aggregate", subject="name")
    meta = back.metadata.set_index("subject").sort_index()
    want = eci.loc[meta.index]
    for ours, theirs in (("aggregate", "eci"), ("lower", "lower"), ("upper", "upper")):
        np.testing.assert_array_equal(meta[ours].to_numpy(float), want[theirs].to_numpy(float))
    assert (meta["confidence_level"] == 0.9).all()
    anchors = want[want["anchor"]]
    assert sorted(anchors["eci"].round(9)) == [130.0, 150.0]


def test_the_official_validator_accepts_both_exports(lcb_export, eci_export):
    for root in (lcb_export / "eee", eci_export / "eee"):
        reports = _official(root)
        assert len(reports) == len(_records(root))
        assert all(r["valid"] and not r["warnings"] for r in reports)


def _binary_world(tmp_path: Path):
    rng = np.random.default_rng(3)
    rows = [{"subject": m, "item": f"q{i}", "group": "toy", "response": float(rng.random() < p),
             "output": f"{m} says {i}"}
            for m, p in (("acme/small", 0.3), ("acme/large", 0.8)) for i in range(12)]
    table = pd.DataFrame(rows)
    table.to_csv(tmp_path / "responses.csv", index=False)
    items = pd.DataFrame({"item": [f"q{i}" for i in range(12)],
                          "input": [f"What is {i} + {i}?" for i in range(12)],
                          "reference": [str(2 * i) for i in range(12)],
                          "choices": [json.dumps([str(2 * i), str(2 * i + 1)])
                                      for i in range(12)]})
    items.to_csv(tmp_path / "items.csv", index=False)
    return table


def lines_of(root: Path) -> list[dict]:
    side = sorted((root / "eee").rglob("*_samples.jsonl"))[0]
    return [json.loads(x) for x in side.read_text().splitlines()]


def test_instance_records_from_a_response_table_read_back_equal(tmp_path):
    table = _binary_world(tmp_path)
    _run("export", "eee", tmp_path / "responses.csv", "--out", tmp_path / "eee",
         "--collection", "toy", "--source-organization", "Acme", "--evaluator-relationship",
         "first_party", "--eval-library", "toy-harness", "--items", tmp_path / "items.csv",
         "--interaction-type", "single_turn")
    assert _schema_errors(tmp_path / "eee") == []
    record = json.loads(_records(tmp_path / "eee")[0].read_text())
    assert record["source_metadata"]["source_type"] == "evaluation_run"
    assert record["detailed_evaluation_results"]["total_rows"] == 12
    back = read_every_eval_ever(tmp_path / "eee", item="sample_id")
    got = back.responses.set_index(["subject", "item"])["response"].sort_index()
    want = table.set_index(["subject", "item"])["response"].sort_index()
    pd.testing.assert_series_equal(got, want)
    assert lines_of(tmp_path)[0]["output"]["raw"] == ["acme/large says 0"]
    lines = lines_of(tmp_path)
    assert all(x["evaluation"]["is_correct"] == (x["evaluation"]["score"] == 1.0) for x in lines)
    assert lines[0]["input"]["choices"] == ["0", "1"]
    _official(tmp_path / "eee")


def test_a_fit_exports_abilities_with_their_intervals(tmp_path):
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=30), rng.normal(size=25)
    p = 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))
    y = (rng.random(p.shape) < p).astype(float)
    pd.DataFrame([{"subject": f"lab/m{s}", "item": f"i{i}", "response": y[s, i]}
                  for s in range(30) for i in range(25)]).to_csv(tmp_path / "r.csv", index=False)
    _run("fit", tmp_path / "r.csv", "--model", "1pl", "--method", "laplace", "--out",
         tmp_path / "fit")
    _run("export", "eee", tmp_path / "fit", "--out", tmp_path / "eee", "--collection", "toy",
         "--source-organization", "Acme", "--evaluator-relationship", "third_party",
         "--eval-library", "toy-harness")
    assert _schema_errors(tmp_path / "eee") == []
    subjects = pd.read_csv(tmp_path / "fit" / "subjects.csv").set_index("subject")
    back = read_every_eval_ever(tmp_path / "eee", level="aggregate")
    meta = back.metadata.set_index("subject").loc[subjects.index]
    np.testing.assert_array_equal(meta["aggregate"], subjects["ability"])
    np.testing.assert_array_equal(meta["lower"], subjects["ability_lo"])
    np.testing.assert_array_equal(meta["standard_error"], subjects["ability_sd"])


def test_refusals_name_the_input_and_the_remedy(tmp_path):
    acc = pd.DataFrame({"group": ["g"], "subject": ["flat-model"], "accuracy": [0.5],
                        "lo": [0.4], "hi": [0.6], "se": [0.05], "method": ["wilson"],
                        "level": [0.9], "n_items": [100]})
    src = EveryEvalEverSource(collection="c", **SOURCE)
    with pytest.raises(ExportError, match=r"flat-model.*--model-info"):
        eee_from_accuracy(acc, src)
    logs, dropped = eee_from_accuracy(acc, src, drop_unknown_developers=True)
    assert logs == [] and dropped == ["flat-model"]
    with pytest.raises(ExportError, match="evaluator_relationship"):
        EveryEvalEverSource(collection="c", **{**SOURCE, "evaluator_relationship": "us"})
    with pytest.raises(ExportError, match="model_availability"):
        EveryEvalEverSource(collection="c", **SOURCE, models=pd.DataFrame(
            {"model_availability": ["open"]}, index=["x"]))
    with pytest.raises(ExportError, match="not finite"):
        eee_from_accuracy(acc.assign(accuracy=np.nan, subject="a/b"), src)
    responses = pd.DataFrame({"subject": ["a/b"], "item": ["q"], "group": ["g"],
                              "response": [0.5], "output": ["!"]})
    ok = acc.assign(subject="a/b")
    with pytest.raises(ExportError, match="--items"):
        eee_from_accuracy(ok, src, responses=responses, interaction_type="single_turn")
    items = pd.DataFrame({"item": ["q"], "input": ["?"], "reference": ["!"]})
    with pytest.raises(ExportError, match="--correct-at"):
        eee_from_accuracy(ok, src, responses=responses, items=items,
                          interaction_type="single_turn")
    logs, _ = eee_from_accuracy(ok, src, responses=responses, items=items,
                                interaction_type="single_turn", correct_at=0.5)
    assert logs[0].samples[0]["evaluation"]["is_correct"] is True
    with pytest.raises(ExportError, match="no records"):
        write_every_eval_ever([], tmp_path / "none")
    eci = pd.DataFrame({"model": ["a/b"], "eci": [np.inf], "lower": [1.0], "upper": [2.0],
                        "capability": [0.1], "n_benchmarks": [5]})
    with pytest.raises(ExportError, match="finite"):
        eee_from_eci(eci, src, level=0.9, replicates=10)


def test_export_refuses_a_directory_it_does_not_know(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    assert main(["export", "eee", str(tmp_path / "x"), "--out", str(tmp_path / "o"),
                 "--collection", "c", "--source-organization", "o",
                 "--evaluator-relationship", "other", "--eval-library", "l"]) != 0
    err = capsys.readouterr().err
    assert "not a compare" in err and "response table" in err
    assert not (tmp_path / "o").exists()
