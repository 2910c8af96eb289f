"""``platinum-jax certify`` end to end against the scripted local server (no network).

Uses the scripted rubric of ``tests/judge/test_judge.py``: Q = (5, 1, 0.5) and P = (15, 5, 1.5, 5, 2).
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pandas as pd
import pytest
from test_judge import CONCEPTS, ITEMS, N_CELLS, P_HAND, SCORES, STRENGTHS

from platinum_jax.cli import main
from platinum_jax.judge.testing import RubricScript, ScriptedJudgeServer

PS = "Problem solving"


@pytest.fixture()
def items_file(tmp_path):
    path = tmp_path / "items.jsonl"
    with path.open("w") as fh:
        for iid, row in ITEMS.iterrows():
            rec = {"item_id": iid, "text": row["text"]}
            if isinstance(row["reference"], str):
                rec["reference"] = row["reference"]
            fh.write(json.dumps(rec) + "\n")
    return path


@pytest.fixture()
def concepts_file(tmp_path):
    path = tmp_path / "concepts.csv"
    CONCEPTS.to_frame().reset_index().rename(columns={"concept": "name"}).to_csv(path, index=False)
    return path


def _args(items_file, concepts_file, server, out, *extra):
    return ["certify", str(items_file), "--concepts", str(concepts_file), "--judge", "openai:scripted",
            "--base-url", server.openai_base_url, "--out", str(out), "--timeout", "5",
            "--parse-retries", "1", "--no-progress", *extra]


def test_certify_cli_writes_tables_weights_and_report(tmp_path, items_file, concepts_file, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    out = tmp_path / "cert"
    script = RubricScript(ITEMS["text"], SCORES, STRENGTHS)
    with ScriptedJudgeServer(script) as server:
        assert main(_args(items_file, concepts_file, server, out)) == 0
        assert server.request_count == N_CELLS
        assert main(_args(items_file, concepts_file, server, out)) == 2  # DIR is not empty
        assert main(_args(items_file, concepts_file, server, out, "--overwrite")) == 0
        assert server.request_count == N_CELLS  # the rerun is served from DIR/judgments.sqlite
    msg = capsys.readouterr().out
    assert "3 of 5 items certified platinum" in msg and f"cached {N_CELLS}" in msg

    items = pd.read_csv(out / "items.csv", index_col="item_id")
    np.testing.assert_allclose(items["platinum_score"], P_HAND)
    assert list(items["certified"]) == [True, True, False, False, True]
    assert list(items["concept"]) == ["Language", "Language", "Vision", "Language", PS]
    np.testing.assert_array_equal(items[[f"S_{c}" for c in CONCEPTS.names]].to_numpy(), STRENGTHS.to_numpy())
    concepts = pd.read_csv(out / "concepts.csv", index_col="concept")
    np.testing.assert_allclose(concepts["Q"], [5.0, 1.0, 0.5])
    assert list(concepts["K"]) == ["low", "medium", "high"]
    w = pd.read_csv(out / "weights.csv", index_col="item_id")
    np.testing.assert_allclose(w["rubric_weight"], np.array(P_HAND) / sum(P_HAND))
    np.testing.assert_allclose(w["uniform_weight"], 0.2)
    # Model route, rebuilt with NumPy from the documented mapping.
    Lmat = STRENGTHS.to_numpy() / 3.0
    M = Lmat @ np.diag([1.0, 0.5, 0.25]) @ Lmat.T
    Sigma = Lmat @ np.diag([0.25, 0.5, 0.25]) @ Lmat.T + np.eye(5)
    wv = Lmat @ np.array([1.0, 0.8, 0.4])
    np.testing.assert_allclose(w["model_weight"], np.linalg.solve(M + Sigma, M @ wv / np.linalg.norm(wv)), atol=1e-10)
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "3</b> certified platinum" in html
    assert not (out / "rankings.csv").exists()
    assert len(pd.read_csv(out / "judgments.csv")) == N_CELLS


def test_certify_cli_threshold_failures_and_expert_audit(tmp_path, items_file, concepts_file, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    out = tmp_path / "cert"
    expert = tmp_path / "expert.csv"
    expert.write_text("field,concept,item_id,value\nS,Language,q1,3\nS,Vision,q3,0\nW,Language,,5\n")
    script = RubricScript(ITEMS["text"], SCORES, STRENGTHS, faults={("q5", PS): ["malformed"]})
    with ScriptedJudgeServer(script) as server:
        rc = main(_args(items_file, concepts_file, server, out, "--threshold", "6", "--expert", str(expert)))
    assert rc == 3  # a failed call: the outputs are written but incomplete
    err = capsys.readouterr().err
    assert "weights not computed" in err and "--retry-failed" in err
    items = pd.read_csv(out / "items.csv", index_col="item_id")
    assert list(items["certified"]) == [True, False, False, False, False]
    assert not items.loc["q5", "complete"] and pd.isna(items.loc["q5", f"S_{PS}"])
    # q5's observed strengths (L, V) are both 0, so P = 0 and the concept cell is left empty.
    assert items.loc["q5", "platinum_score"] == 0.0 and pd.isna(items.loc["q5", "concept"])
    audit = pd.read_csv(out / "audit.csv", index_col=["judge", "field"])
    assert audit.loc[("openai:scripted", "S"), "exact_agreement"] == 0.5
    review = pd.read_csv(out / "review.csv")
    assert (review.iloc[0]["field"], review.iloc[0]["item_id"]) == ("S", "q5")
    assert "not valid JSON" in (out / "report.html").read_text()


def test_certify_cli_never_writes_or_prints_the_api_key(tmp_path, items_file, concepts_file, monkeypatch,
                                                       capsys, caplog):
    sentinel = "sk-SENTINEL-must-not-leak-7f3a9c"
    monkeypatch.setenv("OPENAI_API_KEY", sentinel)
    caplog.set_level(logging.DEBUG)  # the clients' own debug logging is caught too
    out = tmp_path / "cert"
    # Failures put error texts and raw replies into judgments.csv and report.html.
    faults = {("q5", PS): ["malformed"], ("q2", "Vision"): ["http400"], ("q1", "Vision"): ["http500"]}
    with ScriptedJudgeServer(RubricScript(ITEMS["text"], SCORES, STRENGTHS, faults)) as server:
        assert main(_args(items_file, concepts_file, server, out, "--max-retries", "1")) == 3
    captured = capsys.readouterr()
    judgments = (out / "judgments.csv").read_text()
    assert "HTTP 400" in judgments and "HTTP 500" in judgments and "not valid JSON" in judgments
    files = [f for f in out.rglob("*") if f.is_file()]
    assert {"items.csv", "judgments.csv", "report.html", "judgments.sqlite"} <= {f.name for f in files}
    for text in (captured.out, captured.err, caplog.text):
        assert sentinel not in text
    for f in files:
        assert sentinel.encode() not in f.read_bytes(), f.name


def test_certify_cli_sends_base_url_to_openai_judges_only(tmp_path, items_file, concepts_file, monkeypatch,
                                                          capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "local")
    out = tmp_path / "cert"
    with ScriptedJudgeServer(RubricScript(ITEMS["text"], SCORES, STRENGTHS)) as local, \
            ScriptedJudgeServer(RubricScript(ITEMS["text"], SCORES, STRENGTHS)) as hosted:
        # Stands in for the Anthropic API: the anthropic client reads ANTHROPIC_BASE_URL.
        monkeypatch.setenv("ANTHROPIC_BASE_URL", hosted.anthropic_base_url)
        args = _args(items_file, concepts_file, local, out, "--judge", "anthropic:claude-scripted",
                     "--samples", "2")
        assert main(args) == 0
        assert {e["api"] for e in local.log} == {"openai"} and local.request_count == 2 * N_CELLS
        assert {e["api"] for e in hosted.log} == {"anthropic"} and hosted.request_count == 2 * N_CELLS
    err = capsys.readouterr().err
    assert "--samples 2 at temperature 0" in err  # the sampling caveat is said, not silently fixed
    judges = set(pd.read_csv(out / "judgments.csv")["judge"])
    assert judges == {"openai:scripted", "anthropic:claude-scripted"}
    np.testing.assert_allclose(pd.read_csv(out / "items.csv", index_col="item_id")["platinum_score"], P_HAND)


def test_certify_cli_reports_input_errors(tmp_path, items_file, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rc = main(["certify", str(items_file), "--judge", "openai:gpt-4o-mini", "--out", str(tmp_path / "o"), "--no-progress"])
    assert rc == 2 and "OPENAI_API_KEY is not set" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item_id": "a", "text": "x"}\n{"item_id": "a", "text": "y"}\n')
    assert main(["certify", str(bad), "--judge", "openai:m", "--out", str(tmp_path / "o")]) == 2
    assert "bad.jsonl line 2: duplicate item_id 'a'" in capsys.readouterr().err
    assert main(["certify", str(items_file), "--judge", "gpt4", "--out", str(tmp_path / "o")]) == 2
    assert "openai:MODEL or anthropic:MODEL" in capsys.readouterr().err
    assert main(["certify", str(items_file), "--judge", "openai:m", "--concepts", "oced",
                 "--out", str(tmp_path / "o")]) == 2
    assert "neither a built-in set" in capsys.readouterr().err


def test_certify_cli_compares_rankings(tmp_path, items_file, concepts_file, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    out = tmp_path / "cert"
    # Model A is best on average, model B on the heavily weighted q1 (P = 15).
    results = pd.DataFrame([[0.2, 0.9, 0.9, 0.9, 0.9], [1.0, 0.5, 0.5, 0.5, 0.5], [0.1, 0.1, 0.2, 0.1, 0.1]],
                           index=["A", "B", "C"], columns=ITEMS.index)
    results.to_csv(tmp_path / "results.csv")
    with ScriptedJudgeServer(RubricScript(ITEMS["text"], SCORES, STRENGTHS)) as server:
        assert main(_args(items_file, concepts_file, server, out, "--results", str(tmp_path / "results.csv"))) == 0
    ranks = pd.read_csv(out / "rankings.csv", index_col="model")
    v = np.array(P_HAND) / sum(P_HAND)
    np.testing.assert_allclose(ranks["rubric"], results.to_numpy() @ v)
    # uniform: A (0.74) > B (0.6) > C; rubric: B > A > C -> one discordant pair of three, tau = 1/3.
    assert list(ranks["uniform_rank"]) == [1, 2, 3] and list(ranks["rubric_rank"]) == [2, 1, 3]
    assert "rubric: Kendall tau 0.333, 2 model(s) moved" in capsys.readouterr().err
    bad = results * 100
    bad.to_csv(tmp_path / "results.csv")
    assert main(_args(items_file, concepts_file, server, out, "--results", str(tmp_path / "results.csv"))) == 2
    assert "divide by 100" in capsys.readouterr().err
