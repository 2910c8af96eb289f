"""The LLM-judge workflow, driven end to end against the scripted local server (no network).

The scripted rubric used below (concepts Language, Problem solving, Vision):

    W = 5, 4, 2;  K = low, medium, high;  N = low, medium, low
    Q = 5*1*1 = 5,  4*(1/2)*(1/2) = 1,  2*(1/4)*1 = 0.5

    item  S (L, PS, V)   P_i = max_j S_ij Q_j        appendix rule (W>=4, K<=medium, S>=2)
    q1    3, 1, 0        max(15, 1, 0)   = 15  (L)   L certifies
    q2    1, 3, 0        max(5, 3, 0)    = 5   (L)   PS certifies
    q3    0, 1, 3        max(0, 1, 1.5)  = 1.5 (V)   no (V has W = 2)
    q4    1, 1, 0        max(5, 1, 0)    = 5   (L)   no (no S >= 2 on L or PS)
    q5    0, 2, 0        max(0, 2, 0)    = 2   (PS)  PS certifies
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import threading

import numpy as np
import pandas as pd
import pytest

from platinum_jax.judge import (
    FatalProviderError,
    JudgeConfig,
    JudgmentCache,
    Provider,
    RateLimiter,
    ReplyError,
    TransientError,
    _providers,
    aggregate_categorical,
    aggregate_ordinal,
    audit,
    load_expert_labels,
    load_items,
    make_provider,
    parse_concept_reply,
    parse_item_reply,
    quadratic_weighted_kappa,
    render_concept_prompt,
    render_item_prompt,
    run_judgments,
)
from platinum_jax.judge.testing import Reply, RubricScript, ScriptedJudgeServer
from platinum_jax.rubric import certify, load_concepts

CONCEPTS = load_concepts().subset(["Language", "Problem solving", "Vision"])
ITEMS = pd.DataFrame(
    {"text": ["Translate 'chat' from French into English.",
              "Prove that the sum of two even numbers is even.",
              "How many cats are in the photo? {IMAGE}",
              "Summarise this paragraph in one sentence.",
              "Sort these numbers in increasing order: 5 3 9."],
     "reference": ["cat", None, "3", None, "3 5 9"]},
    index=pd.Index([f"q{k}" for k in range(1, 6)], name="item_id"),
)
SCORES = pd.DataFrame({"W": [5, 4, 2], "K": ["low", "medium", "high"], "N": ["low", "medium", "low"]},
                      index=list(CONCEPTS.names))
STRENGTHS = pd.DataFrame([[3, 1, 0], [1, 3, 0], [0, 1, 3], [1, 1, 0], [0, 2, 0]],
                         index=ITEMS.index, columns=list(CONCEPTS.names))
P_HAND = [15.0, 5.0, 1.5, 5.0, 2.0]
L, PS, V = CONCEPTS.names
KEY = "sk-test-DO-NOT-LEAK-1234"

# Faults per cell, one per request to that cell (the last repeats).
FAULTS = {
    ("q1", L): ["out_of_range", "ok"],                   # re-asked once
    ("q2", PS): ["http429", "ok"],                      # backoff, then fine
    ("q3", V): ["slow", "ok"],                          # client timeout, then fine
    ("q4", L): ["fenced"],                              # a ```json block is accepted
    (None, V): ["prose", "ok"],                         # text around the JSON is rejected
    ("q5", PS): ["malformed"],                          # never valid -> recorded as failed
    ("q2", V): ["http500", "http500", "wrong_type", "ok"],
}
EXTRA_REQUESTS = 1 + 1 + 1 + 0 + 1 + 1 + 3  # per the fault list above (q5/PS: one re-ask)
N_CELLS = len(CONCEPTS) * (1 + len(ITEMS))


@pytest.fixture(autouse=True)
def _api_keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def _judge(server, provider="openai", model="scripted-judge", **kw):
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    opts = {"timeout": 1.5, "backoff_base": 0.01, "backoff_max": 0.05, "parse_retries": 1, "max_retries": 3}
    return JudgeConfig(provider, model, base_url=base, **{**opts, **kw})


def _server(faults=None, strengths=STRENGTHS, scores=SCORES):
    return ScriptedJudgeServer(RubricScript(ITEMS["text"], scores, strengths, faults, slow_delay=3.0))


# ---------------------------------------------------------------- prompts and parsing


def test_prompts_render_the_appendix_rubrics():
    c = CONCEPTS[V]
    p = render_concept_prompt(c.name, c.definition)
    assert f"- Name: {V}" in p and c.definition in p
    assert "welfare_alignment_1_to_5" in p and "Return only JSON." in p
    # The measurement-noise scale the appendix leaves out is defined, for all three levels.
    noise = p.split("Measurement noise (low/medium/high):")[1].split("Output JSON schema")[0]
    assert all(f"{lv} = " in noise for lv in ("low", "medium", "high"))
    q = render_item_prompt("Count {CONCEPT_NAME} braces", None, c.name, c.definition)
    assert "Count {CONCEPT_NAME} braces" in q  # inserted text is not substituted again
    # no reference: the placeholder text is quoted as the reference's data block
    assert "reference solution (if available):\n<<<BEGIN REFERENCE " in q
    assert "\n(none provided)\n<<<END REFERENCE " in q
    assert "measurement_strength_0_to_3" in q


GOOD_ITEM = '{"measurement_strength_0_to_3": 2, "rationale": "r"}'
GOOD_CONCEPT = ('{"welfare_alignment_1_to_5": 4, "marginal_improvement_cost": "medium", '
                '"measurement_noise": "low", "rationale": "r"}')


def test_parse_accepts_plain_and_fenced_json():
    assert parse_item_reply(GOOD_ITEM) == {"S": 2, "rationale": "r"}
    assert parse_item_reply(f"\n```json\n{GOOD_ITEM}\n```\n")["S"] == 2
    assert parse_concept_reply(GOOD_CONCEPT) == {"W": 4, "K": "medium", "N": "low", "rationale": "r"}


@pytest.mark.parametrize(
    "reply, message",
    [
        (f"Sure: {GOOD_ITEM}", "not valid JSON"),
        (f"```\n{GOOD_ITEM}\n```", "single ```json block"),
        (f"```json\n{GOOD_ITEM}\n```\nHope this helps", "single ```json block"),
        ('{"measurement_strength_0_to_3": 4, "rationale": "r"}', "out of range"),
        ('{"measurement_strength_0_to_3": 2.0, "rationale": "r"}', "must be an integer"),
        ('{"measurement_strength_0_to_3": true, "rationale": "r"}', "must be an integer"),
        ('{"measurement_strength_0_to_3": "2", "rationale": "r"}', "must be an integer"),
        ('{"measurement_strength_0_to_3": 2}', "missing"),
        ('{"measurement_strength_0_to_3": 2, "rationale": "r", "confidence": 1}', "unexpected"),
        ('{"measurement_strength_0_to_3": 2, "measurement_strength_0_to_3": 3, "rationale": "r"}', "repeats"),
        ('{"measurement_strength_0_to_3": NaN, "rationale": "r"}', "NaN"),
        ('[2]', "JSON object"),
        ("", "empty"),
    ],
)
def test_parse_rejects_everything_else(reply, message):
    with pytest.raises(ReplyError, match=message):
        parse_item_reply(reply)


def test_parse_concept_reply_checks_levels():
    with pytest.raises(ReplyError, match="out of range"):
        parse_concept_reply(GOOD_CONCEPT.replace(": 4", ": 0"))
    with pytest.raises(ReplyError, match="marginal_improvement_cost"):
        parse_concept_reply(GOOD_CONCEPT.replace('"medium"', '"Medium"'))


# ---------------------------------------------------------------- providers, limits, backoff


def test_judge_config_and_keys(monkeypatch):
    cfg = JudgeConfig.from_spec("openai:llama3.1:8b", base_url="http://127.0.0.1:1/v1")
    assert (cfg.provider, cfg.model, cfg.key_env) == ("openai", "llama3.1:8b", "OPENAI_API_KEY")
    with pytest.raises(ValueError, match="openai:MODEL or anthropic:MODEL"):
        JudgeConfig.from_spec("gpt-4o")
    with pytest.raises(ValueError, match="unknown judge provider 'mistral'"):
        JudgeConfig.from_spec("mistral:large")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY is not set"):
        make_provider(JudgeConfig("anthropic", "claude"))
    with pytest.raises(ValueError, match="MY_KEY is not set"):
        make_provider(JudgeConfig("openai", "m", api_key_env="MY_KEY"))


class _Flaky(Provider):
    def __init__(self, fails, **kw):
        super().__init__(JudgeConfig("openai", "m", max_retries=3, backoff_base=1.0, backoff_max=3.0), **kw)
        self.fails = fails

    def _request(self, messages):
        if self.fails:
            self.fails -= 1
            raise TransientError("HTTP 429")
        return "reply"


def test_backoff_is_exponential_with_full_jitter_and_bounded():
    slept = []
    p = _Flaky(3, sleep=slept.append, rng=random.Random(0))
    assert p.chat([]) == ("reply", 3)
    caps = [1.0, 2.0, 3.0]  # min(backoff_max, base * 2^k)
    assert len(slept) == 3 and all(0 <= s <= c for s, c in zip(slept, caps, strict=True))
    ref = random.Random(0)
    assert slept == [ref.uniform(0, c) for c in caps]
    with pytest.raises(TransientError, match="gave up after 4 attempt"):
        _Flaky(10, sleep=slept.append).chat([])


def test_rate_limiter_is_a_token_bucket(monkeypatch):
    clock = {"t": 0.0}
    monkeypatch.setattr(_providers.time, "monotonic", lambda: clock["t"])
    monkeypatch.setattr(_providers.time, "sleep", lambda s: clock.__setitem__("t", clock["t"] + s))
    lim = RateLimiter(rate=4.0, burst=2)
    for _ in range(10):
        lim.acquire()
    # Two tokens up front, then one every 1/4 s: eight more take 2 s.
    assert clock["t"] == pytest.approx(2.0)
    with pytest.raises(ValueError, match="positive"):
        RateLimiter(rate=0)


def test_aggregation_rules():
    assert aggregate_ordinal([3, 1, 3]) == (3.0, pytest.approx(2 / 3))
    assert aggregate_ordinal([1, 3]) == (1.0, 0.5)  # lower median stays on the scale
    assert aggregate_categorical(["low", "high"], ("low", "medium", "high")) == ("high", 0.5)
    assert aggregate_categorical(["low", "low", "medium"], ("low", "medium", "high"))[0] == "low"
    assert np.isnan(aggregate_ordinal([])[0])


# ---------------------------------------------------------------- end to end


def test_end_to_end_with_faults_cache_and_failures(tmp_path):
    cache = tmp_path / "judge.sqlite"
    with _server(FAULTS) as server:
        judge = _judge(server)
        res = run_judgments(ITEMS, CONCEPTS, judge, cache=cache, concurrency=4, progress=False)
        assert server.request_count == N_CELLS + EXTRA_REQUESTS
        assert res.stats == {"calls_made": N_CELLS, "cached": 0, "failed": 1,
                             "http_requests": N_CELLS + EXTRA_REQUESTS}
        pd.testing.assert_frame_equal(res.concept_scores[["W", "K", "N"]], SCORES.rename_axis("concept"),
                                      check_dtype=False)
        expected_S = STRENGTHS.astype(float)
        expected_S.loc["q5", PS] = np.nan
        np.testing.assert_array_equal(res.strengths.to_numpy(), expected_S.to_numpy())
        fail = res.failures
        assert len(fail) == 1
        row = fail.iloc[0]
        assert (row["item_id"], row["concept"], row["attempts"]) == ("q5", PS, 2)
        assert "not valid JSON" in row["error"] and row["raw_reply"].endswith(",")

        cert = certify(res.strengths, res.concept_scores[["W", "K", "N"]], allow_missing=True)
        np.testing.assert_allclose(cert["platinum_score"], [15.0, 5.0, 1.5, 5.0, 0.0])
        # q5's observed cells (L, V) are both 0: P = 0 is witnessed by no concept.
        assert list(cert["concept"].iloc[:4]) == [L, L, V, L] and pd.isna(cert.loc["q5", "concept"])
        assert list(cert["certified"].astype(object)) == [True, True, False, False, pd.NA]
        thr = certify(res.strengths, res.concept_scores[["W", "K", "N"]], rule="threshold",
                      threshold=6.0, allow_missing=True)
        # q5's missing S_{q5,PS} can add at most 3 * Q_PS = 3 < 6, so q5 is decided: not platinum.
        assert list(thr["certified"].astype(object)) == [True, False, False, False, False]

        # A rerun is served from the cache: not one request.
        before = server.request_count
        again = run_judgments(ITEMS, CONCEPTS, judge, cache=cache, progress=False)
        assert server.request_count == before
        assert again.stats["calls_made"] == 0 and again.stats["cached"] == N_CELLS
        pd.testing.assert_frame_equal(again.strengths, res.strengths)
        # Only the failed cell is redone on request (and fails again: the script never fixes it).
        retried = run_judgments(ITEMS, CONCEPTS, judge, cache=cache, retry_failed=True, progress=False)
        assert server.request_count == before + 2 and retried.stats["calls_made"] == 1

    # The API key never reaches the cache.
    assert KEY.encode() not in cache.read_bytes()
    with sqlite3.connect(cache) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("SELECT COUNT(*) FROM judgments").fetchone()[0] == N_CELLS


class _Interrupting:
    """Wraps a real provider and simulates Ctrl-C after ``n`` completed calls."""

    def __init__(self, inner, n):
        self.inner, self.n, self.requests = inner, n, 0

    def chat(self, messages):
        if self.n == 0:
            raise KeyboardInterrupt
        self.n -= 1
        self.requests += 1
        return self.inner.chat(messages)


def test_interrupted_run_resumes_without_losing_work(tmp_path):
    cache = tmp_path / "judge.sqlite"
    with _server() as server:
        judge = _judge(server)
        with pytest.raises(KeyboardInterrupt):
            run_judgments(ITEMS, CONCEPTS, judge, cache=cache, concurrency=1, progress=False,
                          provider_factory=lambda cfg, lim: _Interrupting(make_provider(cfg, limiter=lim), 7))
        assert server.request_count == 7
        with JudgmentCache(cache) as c:
            assert len(c) == 7  # every finished call was written before the interruption
        res = run_judgments(ITEMS, CONCEPTS, judge, cache=cache, concurrency=3, progress=False)
        assert server.request_count == N_CELLS  # resumed: only the remaining cells were asked
        assert res.stats["cached"] == 7 and res.stats["calls_made"] == N_CELLS - 7
    np.testing.assert_array_equal(res.strengths.to_numpy(), STRENGTHS.to_numpy(dtype=float))
    cert = certify(res.strengths, res.concept_scores[["W", "K", "N"]])
    np.testing.assert_allclose(cert["platinum_score"], P_HAND)
    assert list(cert["certified"]) == [True, True, False, False, True]


class _CtrlC:
    """Wraps a real provider and sends SIGINT to the main thread after ``n`` calls."""

    def __init__(self, inner, n):
        self.inner, self.n, self.requests = inner, n, 0
        self._lock = threading.Lock()

    def chat(self, messages):
        out = self.inner.chat(messages)
        with self._lock:
            self.n -= 1
            if self.n == 0:
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        return out


def test_ctrl_c_with_concurrent_workers_keeps_finished_calls(tmp_path):
    cache = tmp_path / "judge.sqlite"
    with _server() as server:
        judge = _judge(server)
        with pytest.raises(KeyboardInterrupt):
            run_judgments(ITEMS, CONCEPTS, judge, cache=cache, concurrency=3, progress=False,
                          provider_factory=lambda cfg, lim: _CtrlC(make_provider(cfg, limiter=lim), 5))
        asked = server.request_count
        with JudgmentCache(cache) as c:
            kept = len(c)
        # Calls that finish within the grace period are kept; queued ones are never sent. On a
        # busy machine a call still on the wire after the grace is dropped, never half-kept.
        assert 5 <= kept <= asked < N_CELLS
        res = run_judgments(ITEMS, CONCEPTS, judge, cache=cache, concurrency=3, progress=False)
        assert server.request_count - asked == N_CELLS - kept
    np.testing.assert_array_equal(res.strengths.to_numpy(), STRENGTHS.to_numpy(dtype=float))


def test_anthropic_provider_against_a_local_messages_endpoint(tmp_path):
    faults = {("q1", L): ["http429", "ok"], ("q3", V): ["out_of_range", "ok"]}
    with _server(faults) as server:
        res = run_judgments(ITEMS, CONCEPTS, _judge(server, provider="anthropic", model="claude-scripted"),
                            cache=tmp_path / "a.sqlite", progress=False)
        assert {e["api"] for e in server.log} == {"anthropic"}
        assert server.request_count == N_CELLS + 2
    assert set(res.records["judge"]) == {"anthropic:claude-scripted"}
    np.testing.assert_array_equal(res.strengths.to_numpy(), STRENGTHS.to_numpy(dtype=float))
    assert list(res.concept_scores["W"]) == [5, 4, 2]


def test_exhausted_retries_and_bad_requests_are_recorded_as_failures():
    faults = {("q1", L): ["http429"], ("q2", V): ["http400"]}
    with _server(faults) as server:
        res = run_judgments(ITEMS, CONCEPTS, _judge(server, max_retries=2), cache=None, progress=False)
        # q1/L: 1 + 2 retries; q2/V: a 400 is not retried.
        assert server.request_count == N_CELLS + 2
    fail = res.failures.set_index(["item_id", "concept"])
    assert set(fail.index) == {("q1", L), ("q2", V)}
    assert "gave up after 3 attempt(s)" in fail.loc[("q1", L), "error"]
    assert fail.loc[("q1", L), "attempts"] == 3
    assert "PermanentError: HTTP 400" in fail.loc[("q2", V), "error"]
    assert pd.isna(fail.loc[("q2", V), "raw_reply"])  # no reply text ever arrived


def test_transient_give_ups_are_retried_by_a_rerun_but_invalid_replies_are_not(tmp_path):
    cache = tmp_path / "judge.sqlite"
    # q1/L: two 429s use up max_retries=1, the third request succeeds; q5/PS never parses.
    faults = {("q1", L): ["http429", "http429", "ok"], ("q5", PS): ["malformed"]}
    with _server(faults) as server:
        judge = _judge(server, max_retries=1)
        first = run_judgments(ITEMS, CONCEPTS, judge, cache=cache, progress=False)
        # q1/L: 1 + 1 retry; q5/PS: 1 + 1 re-ask.
        assert server.request_count == N_CELLS + 2
        fail = first.failures.set_index(["item_id", "concept"])
        assert set(fail.index) == {("q1", L), ("q5", PS)}
        assert fail.loc[("q1", L), "error"].startswith("TransientError: gave up after 2 attempt(s)")
        assert "not valid JSON" in fail.loc[("q5", PS), "error"]
        assert first.stats["failed"] == 2 and np.isnan(first.strengths.loc["q1", L])
        with JudgmentCache(cache) as c:
            assert len(c) == N_CELLS - 1  # the transient give-up is not stored as finished

        before = server.request_count
        second = run_judgments(ITEMS, CONCEPTS, judge, cache=cache, progress=False)
        assert server.request_count == before + 1  # q1/L only, on its third request: ok
        assert second.stats["calls_made"] == 1 and second.stats["cached"] == N_CELLS - 1
        assert second.stats["failed"] == 1
        assert set(zip(second.failures["item_id"], second.failures["concept"], strict=True)) == {("q5", PS)}
        assert second.strengths.loc["q1", L] == 3.0 and np.isnan(second.strengths.loc["q5", PS])

        before = server.request_count
        third = run_judgments(ITEMS, CONCEPTS, judge, cache=cache, progress=False)
        assert server.request_count == before and third.stats["cached"] == N_CELLS

        # A cache from before this rule holds transient give-ups as failed rows: rerun those too.
        key = third.failures["key"].iloc[0]
        with JudgmentCache(cache) as c:
            legacy = c.get(key)
            legacy["error"] = "TransientError: gave up after 6 attempt(s): HTTP 429: rate limited"
            c.put(legacy)
        run_judgments(ITEMS, CONCEPTS, judge, cache=cache, progress=False)
        assert server.request_count == before + 2  # q5/PS asked again (and re-asked once)
        with JudgmentCache(cache) as c:
            assert "not valid JSON" in c.get(key)["error"]


def test_fatal_http_errors_stop_the_run(tmp_path):
    with ScriptedJudgeServer(lambda api, messages, attempt: Reply(status=401)) as server:
        with pytest.raises(FatalProviderError, match="HTTP 401"):
            run_judgments(ITEMS, CONCEPTS, _judge(server), cache=tmp_path / "c.sqlite", progress=False)


def test_samples_and_judges_are_aggregated_with_agreement(tmp_path):
    scores = SCORES.astype(object).copy()
    scores.loc[L, "W"] = [5, 4, 3]
    scores.loc[L, "K"] = ["low", "high", "high"]
    S = STRENGTHS.astype(object).copy()
    S.loc["q1", L] = [3, 1, 3]
    with _server(strengths=S, scores=scores) as server:
        res = run_judgments(ITEMS, CONCEPTS, _judge(server), samples=3, cache=None, progress=False)
        assert server.request_count == 3 * N_CELLS
    cs = res.concept_scores
    assert (cs.loc[L, "W"], cs.loc[L, "K"]) == (4, "high")  # median of {5,4,3}; majority of {low,high,high}
    assert cs.loc[L, "W_agreement"] == pytest.approx(1 / 3) and cs.loc[L, "K_agreement"] == pytest.approx(2 / 3)
    assert res.strengths.loc["q1", L] == 3 and res.strength_agreement.loc["q1", L] == pytest.approx(2 / 3)
    assert res.strength_agreement.loc["q2", PS] == 1.0

    S2 = STRENGTHS.astype(object).copy()
    S2.loc["q2", PS] = [3, 1]
    with _server(strengths=S2) as server:
        judges = [_judge(server, model="judge-a"), _judge(server, model="judge-b")]
        res = run_judgments(ITEMS, CONCEPTS, judges, cache=None, progress=False)
    assert res.strengths.loc["q2", PS] == 1 and res.strength_agreement.loc["q2", PS] == 0.5
    per_judge = {res.for_judge(j).strengths.loc["q2", PS] for j in ("openai:judge-a", "openai:judge-b")}
    assert per_judge == {1.0, 3.0}
    with pytest.raises(KeyError, match="unknown judge"):
        res.for_judge("openai:judge-c")


# ---------------------------------------------------------------- items file and audit


def test_load_items_validates_lines(tmp_path):
    good = tmp_path / "items.jsonl"
    good.write_text('{"item_id": "a", "text": "x"}\n\n{"item_id": 2, "text": "y", "reference": "z"}\n')
    df = load_items(good)
    assert list(df.index) == ["a", "2"] and df.loc["2", "reference"] == "z"
    cases = {
        '{"item_id": "a", "text": "x"}\n{"item_id": "a", "text": "y"}\n': "line 2: duplicate item_id 'a'",
        '{"item_id": "a"}\n': "line 1: missing field 'text'",
        '{"text": "x"}\n': "line 1: missing field 'item_id'",
        '{"item_id": "a", "text": "x"}\n{"item_id": "b", "text": ""}\n': "line 2: text of item 'b'",
        '{"item_id": "a", "text": "x", "answer": 1}\n': "unknown field",
        'not json\n': "line 1: not valid JSON",
    }
    for body, message in cases.items():
        good.write_text(body)
        with pytest.raises(ValueError, match=message):
            load_items(good)


def _kappa_by_loops(a, b, k):
    n = len(a)
    num = sum((x - y) ** 2 for x, y in zip(a, b, strict=True))
    den = sum((x - y) ** 2 for x in a for y in b) / n
    return 1 - num / den


def test_quadratic_weighted_kappa_closed_forms():
    # 2 categories: equals Cohen's kappa; p_o = 3/4, p_e = (2*1 + 2*3)/16 = 1/2 -> 1/2.
    assert quadratic_weighted_kappa([0, 0, 1, 1], [0, 1, 1, 1], 2) == pytest.approx(0.5)
    assert quadratic_weighted_kappa([0, 1, 2, 3], [0, 1, 2, 3], 4) == pytest.approx(1.0)
    rng = np.random.default_rng(1)
    for _ in range(5):
        a, b = rng.integers(0, 5, 30), rng.integers(0, 5, 30)
        assert quadratic_weighted_kappa(a, b, 5) == pytest.approx(_kappa_by_loops(a, b, 5))
    assert np.isnan(quadratic_weighted_kappa([1, 1], [1, 1], 3))


def test_audit_against_expert_labels(tmp_path):
    expert = tmp_path / "expert.csv"
    expert.write_text(
        "field,concept,item_id,value\n"
        f"W,{L},,5\nW,{V},,3\nK,{PS},,medium\nN,{V},,high\n"
        f"S,{L},q1,3\nS,{PS},q2,2\nS,{V},q3,0\nS,{PS},q5,2\nS,{L},q4,1\n"
    )
    with _server({("q5", PS): ["malformed"]}) as server:
        res = run_judgments(ITEMS, CONCEPTS, _judge(server), cache=None, progress=False)
    rep = audit(res, expert)
    ag = rep.agreement.loc["openai:scripted-judge"]
    # S: judged (3,3,3,1) vs expert (3,2,0,1), q5 failed; kappa by hand = 1 - (10/9)/(4/3) = 1/6.
    assert (ag.loc["S", "n_labelled"], ag.loc["S", "n_failed"]) == (5, 1)
    assert ag.loc["S", "exact_agreement"] == pytest.approx(0.5)
    assert ag.loc["S", "qw_kappa"] == pytest.approx(1 / 6)
    # W: judged (5, 2) vs expert (5, 3); kappa = 1 - (1/16)/(7/16) = 6/7.
    assert ag.loc["W", "exact_agreement"] == pytest.approx(0.5)
    assert ag.loc["W", "qw_kappa"] == pytest.approx(6 / 7)
    assert ag.loc["K", "exact_agreement"] == 1.0 and np.isnan(ag.loc["K", "qw_kappa"])
    assert ag.loc["N", "exact_agreement"] == 0.0 and ag.loc["N", "qw_kappa"] == pytest.approx(0.0)
    top = rep.review.head(5)
    assert tuple(top.iloc[0][["field", "concept", "item_id"]]) == ("S", PS, "q5") and top.iloc[0]["failed"]
    assert {(r.field, r.concept) for r in top.iloc[1:3].itertuples()} == {("N", V), ("S", V)}
    assert tuple(top.iloc[3][["field", "item_id"]]) == ("S", "q2")
    assert tuple(top.iloc[4][["field", "concept"]]) == ("W", V)

    bad = tmp_path / "bad.csv"
    bad.write_text("field,concept,item_id,value\nS,Languge,q1,3\n")
    with pytest.raises(KeyError, match="did you mean 'Language'"):
        audit(res, bad)
    bad.write_text("field,concept,item_id,value\nS,Language,q1,5\n")
    with pytest.raises(ValueError, match="row 2: S must be an integer"):
        load_expert_labels(bad)


def test_scripted_server_is_local_only():
    with _server() as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert os.environ["OPENAI_API_KEY"] == KEY
        json.dumps(server.log)  # the log is plain data
