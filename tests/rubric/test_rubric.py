"""The platinum rubric: concept sets, Q_j, P_i (eq. 4), certification, reweighting, rankings."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from platinum_jax.rubric import (
    RubricModelMap,
    ScoreMaps,
    certify,
    item_weights,
    load_concepts,
    model_weights,
    platinum_scores,
    quality_factors,
    ranking_change,
    rubric_primitives,
    validate_concept_scores,
    validate_strengths,
)

OECD = [
    "Language", "Social interaction", "Problem solving", "Creativity",
    "Metacognition and critical thinking", "Knowledge, learning and memory", "Vision",
    "Manipulation", "Robotic intelligence",
]


def _names(col):
    """A concept column as a list, with any missing marker (None, NaN, NA) read as None."""
    return [None if pd.isna(c) else c for c in col]


def _concepts(W, K, N, names=None):
    names = names or [f"c{j}" for j in range(len(W))]
    return pd.DataFrame({"W": W, "K": K, "N": N}, index=names)


# ---------------------------------------------------------------- concept sets


def test_default_concept_set_is_the_oecd_indicators():
    cs = load_concepts()
    assert list(cs.names) == OECD
    assert all(len(c.definition.split()) >= 8 for c in cs)
    assert cs.to_frame().index.name == "concept"
    with pytest.raises(KeyError, match="did you mean 'Language'"):
        cs["Langage"]


def test_user_concept_sets_from_yaml_json_csv(tmp_path):
    recs = [{"name": "Coding", "definition": "Writing correct programs."},
            {"name": "Safety", "definition": "Refusing harmful requests."}]
    (tmp_path / "c.json").write_text(json.dumps(recs))
    (tmp_path / "c.yaml").write_text("concepts:\n" + "".join(
        f"  - name: {r['name']}\n    definition: {r['definition']}\n" for r in recs))
    pd.DataFrame(recs).to_csv(tmp_path / "c.csv", index=False)
    for ext in ("json", "yaml", "csv"):
        cs = load_concepts(tmp_path / f"c.{ext}")
        assert cs.names == ("Coding", "Safety")
        assert cs["Safety"].definition == "Refusing harmful requests."


@pytest.mark.parametrize(
    "records, message",
    [
        ([{"name": "A", "definition": "x"}, {"name": "A", "definition": "y"}], "duplicate concept name 'A'"),
        ([{"name": "A", "definition": "  "}], "empty definition"),
        ([{"name": "", "definition": "x"}], "name is empty"),
        ([{"name": "A"}], "missing field"),
        ([], "empty"),
    ],
)
def test_bad_concept_sets_are_rejected(tmp_path, records, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(records))
    with pytest.raises(ValueError, match=message):
        load_concepts(path)


def test_concept_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither a built-in set"):
        load_concepts(tmp_path / "nope.yaml")
    (tmp_path / "c.txt").write_text("x")
    with pytest.raises(ValueError, match="unsupported extension"):
        load_concepts(tmp_path / "c.txt")
    (tmp_path / "c.csv").write_text("title,text\nA,b\n")
    with pytest.raises(ValueError, match="'name' and 'definition'"):
        load_concepts(tmp_path / "c.csv")


# ---------------------------------------------------------------- validation and maps


@pytest.mark.parametrize(
    "W, K, N, message",
    [
        (6, "low", "low", r"W \(welfare alignment\) must be an integer in \[1, 2, 3, 4, 5\]"),
        (0, "low", "low", "W"),
        (True, "low", "low", "boolean"),
        (3.5, "low", "low", "got 3.5"),
        (3, "Low", "low", "write it as 'low'"),
        (3, "cheap", "low", "K"),
        (3, "low", "very high", "N"),
        (np.nan, "low", "low", "all required"),
    ],
)
def test_concept_scores_reject_off_scale_values(W, K, N, message):
    with pytest.raises(ValueError, match=message):
        validate_concept_scores(_concepts([W], [K], [N]))


@pytest.mark.parametrize("bad", [4, -1, 1.5, "2", True])
def test_strengths_reject_off_scale_values(bad):
    S = pd.DataFrame([[0, bad]], index=["i"], columns=["a", "b"], dtype=object)
    with pytest.raises(ValueError, match=r"S\[item 'i', concept 'b'\]"):
        validate_strengths(S)


def test_missing_strength_needs_allow_missing():
    S = pd.DataFrame([[0, np.nan]], index=["i"], columns=["a", "b"])
    with pytest.raises(ValueError, match="missing"):
        validate_strengths(S)
    assert np.isnan(validate_strengths(S, allow_missing=True).loc["i", "b"])


def test_score_maps_defaults_and_validation():
    m = ScoreMaps()
    assert [m.gamma[w] for w in range(1, 6)] == [1, 2, 3, 4, 5]
    assert [m.eta[k] for k in ("low", "medium", "high")] == [1, 0.5, 0.25]
    assert [m.pi[k] for k in ("low", "medium", "high")] == [1, 0.5, 0.25]
    assert m.q_max == 5.0
    sq = ScoreMaps(gamma=lambda w: w**2)
    assert sq.gamma[3] == 9.0
    with pytest.raises(ValueError, match="non-increasing"):
        ScoreMaps(eta={"low": 0.25, "medium": 0.5, "high": 1.0})
    with pytest.raises(ValueError, match="non-decreasing"):
        ScoreMaps(gamma={1: 5, 2: 4, 3: 3, 4: 2, 5: 1})
    with pytest.raises(ValueError, match="no value for level"):
        ScoreMaps(pi={"low": 1.0, "high": 0.1})
    with pytest.raises(ValueError, match="positive"):
        ScoreMaps(pi={"low": 1.0, "medium": 0.0, "high": 0.0})


def test_quality_factors_by_hand():
    cs = _concepts([5, 4, 2, 1], ["low", "medium", "high", "low"], ["low", "high", "medium", "medium"])
    # 5*1*1, 4*(1/2)*(1/4), 2*(1/4)*(1/2), 1*1*(1/2)
    np.testing.assert_allclose(quality_factors(cs).to_numpy(), [5.0, 0.5, 0.25, 0.5])
    custom = ScoreMaps(gamma=lambda w: 2.0 ** (w - 1), eta={"low": 1, "medium": 0.3, "high": 0.1})
    np.testing.assert_allclose(quality_factors(cs, custom).to_numpy(), [16.0, 8 * 0.3 * 0.25, 2 * 0.1 * 0.5, 0.5])


# ---------------------------------------------------------------- P_i and certification


def test_platinum_scores_match_numpy_on_random_rubrics():
    rng = np.random.default_rng(0)
    J, m = 6, 40
    levels = ["low", "medium", "high"]
    W = rng.integers(1, 6, J)
    K = [levels[k] for k in rng.integers(0, 3, J)]
    N = [levels[k] for k in rng.integers(0, 3, J)]
    cs = _concepts(list(W), K, N)
    S = pd.DataFrame(rng.integers(0, 4, (m, J)), index=[f"i{k}" for k in range(m)], columns=cs.index)
    # Independent reference: tabulate the paper's maps directly.
    frac = {"low": 1.0, "medium": 0.5, "high": 0.25}
    q = np.array([W[j] * frac[K[j]] * frac[N[j]] for j in range(J)])
    prod = S.to_numpy() * q
    out = platinum_scores(S, quality_factors(cs))
    np.testing.assert_allclose(out["platinum_score"].to_numpy(), prod.max(axis=1))
    # Every q_j > 0, so a row has P_i = 0 exactly when it is all zeros; it names no concept.
    assert _names(out["concept"]) == [cs.index[r.argmax()] if r.max() > 0 else None for r in prod]
    assert out["complete"].all()


def test_items_with_zero_platinum_score_name_no_concept():
    names = ["lang", "code"]
    cs = _concepts([5, 2], ["low", "high"], ["low", "low"], names)  # Q = [5, 2 * 1/4 * 1] = [5, 0.5]
    S = pd.DataFrame([[0, 0], [0, 1], [0, np.nan], [np.nan, np.nan], [1, 3]],
                     index=["blank", "weak", "blank_open", "unseen", "tie"], columns=names)
    out = platinum_scores(S, quality_factors(cs), allow_missing=True)
    # blank: max(0, 0) = 0; weak: max(0, 0.5) = 0.5 on code; blank_open: the observed 0 only;
    # unseen: nothing observed; tie: max(1*5, 3*0.5) = 5 on lang.
    np.testing.assert_allclose(out["platinum_score"], [0.0, 0.5, 0.0, np.nan, 5.0])
    assert _names(out["concept"]) == [None, "code", None, None, "lang"]
    cert = certify(S, cs, allow_missing=True)
    assert _names(cert["concept"]) == [None, "code", None, None, "lang"]
    # blank: "lang" (W=5, K=low) is observed at S=0 < 2 and "code" has K=high -> decided False.
    assert cert.loc["blank", "certified"] == False  # noqa: E712
    assert pd.isna(cert.loc["blank", "certifying_concept"])


def test_certify_appendix_rule_by_hand():
    names = ["lang", "code", "vision"]
    cs = _concepts([5, 4, 3], ["high", "medium", "low"], ["low", "low", "low"], names)
    S = pd.DataFrame([[3, 0, 3], [0, 2, 0], [0, 1, 3], [2, 0, 0]],
                     index=["a", "b", "c", "d"], columns=names)
    out = certify(S, cs)
    # Good concepts (W >= 4 and K in {low, medium}): only "code" ("lang" costs high, "vision" has W = 3).
    assert list(out["certified"]) == [False, True, False, False]
    assert out.loc["b", "certifying_concept"] == "code"
    # Q = [5/4, 2, 3]: P_a = max(3.75, 0, 9) = 9 (vision), P_b = 4, P_c = max(0, 2, 9) = 9, P_d = 2.5
    np.testing.assert_allclose(out["platinum_score"], [9.0, 4.0, 9.0, 2.5])
    assert list(out["concept"]) == ["vision", "code", "vision", "lang"]
    thr = certify(S, cs, rule="threshold", threshold=4.0)
    assert list(thr["certified"]) == [True, True, True, False]
    with pytest.raises(ValueError, match="finite threshold"):
        certify(S, cs, rule="threshold")
    with pytest.raises(ValueError, match="unknown certification rule"):
        certify(S, cs, rule="gold")


def test_certify_with_missing_judgments_never_guesses():
    names = ["good", "bad"]
    cs = _concepts([5, 2], ["low", "high"], ["low", "high"], names)  # Q = [5, 0.125]
    S = pd.DataFrame([[3, np.nan], [np.nan, 3], [0, np.nan], [np.nan, 0]],
                     index=["witnessed", "open", "closed", "none"], columns=names)
    with pytest.raises(ValueError, match="missing"):
        certify(S, cs)
    out = certify(S, cs, allow_missing=True)
    # witnessed: observed witness; open/none: the missing "good" cell could witness -> <NA>;
    # closed: only the "bad" concept is missing, which cannot certify under the appendix rule.
    assert out.loc["witnessed", "certified"] == True  # noqa: E712
    assert out.loc["open", "certified"] is pd.NA
    assert out.loc["none", "certified"] is pd.NA
    assert out.loc["closed", "certified"] == False  # noqa: E712
    assert not out["complete"].any()
    thr = certify(S, cs, rule="threshold", threshold=1.0, allow_missing=True)
    # "closed": missing "bad" cell is at most 3 * 0.125 < 1, so the verdict is already False.
    assert thr.loc["closed", "certified"] == False  # noqa: E712
    assert thr.loc["open", "certified"] is pd.NA
    np.testing.assert_allclose(thr.loc["open", "platinum_score"], 3 * 0.125)


def test_unknown_concepts_in_strengths_suggest_close_matches():
    cs = _concepts([5], ["low"], ["low"], ["Language"])
    S = pd.DataFrame([[1]], index=["i"], columns=["Langauge"])
    with pytest.raises(KeyError, match="did you mean 'Language'"):
        certify(S, cs)


# ---------------------------------------------------------------- weights


def test_item_weights_normalise_platinum_scores():
    P = pd.Series([4.0, 0.0, 1.0], index=["a", "b", "c"])
    np.testing.assert_allclose(item_weights(P).to_numpy(), [0.8, 0.0, 0.2])
    with pytest.raises(ValueError, match="all platinum scores are zero"):
        item_weights(P * 0)
    with pytest.raises(ValueError, match=r"missing for item\(s\) \['b'\]"):
        item_weights(pd.Series([1.0, np.nan], index=["a", "b"]))


def test_rubric_primitives_and_model_weights_match_numpy():
    names = ["good", "costly", "noisy"]
    cs = _concepts([5, 5, 2], ["low", "high", "medium"], ["low", "low", "high"], names)
    S = pd.DataFrame([[3, 0, 0], [0, 3, 0], [0, 0, 3], [2, 1, 1], [1, 0, 2]],
                     index=list("abcde"), columns=names)
    L = S.to_numpy() / 3.0
    lam, sig, a = np.array([1.0, 0.25, 0.5]), np.array([0.25, 0.25, 1.0]), np.array([1.0, 1.0, 0.4])
    M = L @ np.diag(lam) @ L.T
    Sigma = L @ np.diag(sig) @ L.T + np.eye(5)
    w = L @ a / np.linalg.norm(L @ a)
    prim = rubric_primitives(S, cs)
    np.testing.assert_allclose(prim.M, M, atol=1e-14)
    np.testing.assert_allclose(prim.Sigma, Sigma, atol=1e-14)
    np.testing.assert_allclose(prim.w, w, atol=1e-14)
    v = model_weights(S, cs)
    np.testing.assert_allclose(v.to_numpy(), np.linalg.solve(M + Sigma, M @ w), atol=1e-10)
    # Comparative statics: same welfare, lower cost wins; the noisy low-welfare item is last.
    assert v["a"] > v["b"] > 0 and v["c"] < v["a"]
    v2 = model_weights(S, cs, RubricModelMap(r=10.0))
    np.testing.assert_allclose(v2.to_numpy(), np.linalg.solve(M + 10 * Sigma, M @ w), atol=1e-10)
    with pytest.raises(ValueError, match="sigma_perp"):
        RubricModelMap(sigma_perp=0.0)


# ---------------------------------------------------------------- rankings


def _kendall_tau_b_by_pairs(x, y):
    conc = disc = tx = ty = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            tx += 1
        elif dy == 0:
            ty += 1
        elif dx == dy:
            conc += 1
        else:
            disc += 1
    return (conc - disc) / np.sqrt((conc + disc + tx) * (conc + disc + ty))


def test_ranking_change_against_pair_counting():
    rng = np.random.default_rng(3)
    items = [f"i{k}" for k in range(12)]
    res = pd.DataFrame(rng.uniform(size=(7, 12)), index=[f"m{k}" for k in range(7)], columns=items)
    v = pd.Series(rng.uniform(size=12) ** 3, index=items)
    rc = ranking_change(res, {"rubric": v})
    y = res.to_numpy()
    np.testing.assert_allclose(rc.scores["uniform"], y.mean(axis=1))
    np.testing.assert_allclose(rc.scores["rubric"], y @ v.to_numpy() / v.sum())
    tau = _kendall_tau_b_by_pairs(y.mean(axis=1), y @ v.to_numpy())
    np.testing.assert_allclose(rc.kendall.loc["rubric", "kendall_tau"], tau)
    assert rc.ranks["uniform"].min() == 1
    same = ranking_change(res, pd.Series(1.0, index=items))
    assert same.kendall.loc["reweighted", "kendall_tau"] == pytest.approx(1.0)
    assert same.kendall.loc["reweighted", "models_moved"] == 0


def test_ranking_change_rejects_bad_results():
    items = ["a", "b"]
    v = pd.Series([1.0, 1.0], index=items)
    with pytest.raises(ValueError, match="divide by 100"):
        ranking_change(pd.DataFrame([[50.0, 70.0]], index=["m"], columns=items), v)
    with pytest.raises(ValueError, match="model 'm', item 'b'"):
        ranking_change(pd.DataFrame([[0.5, np.nan]], index=["m"], columns=items), v)
    with pytest.raises(KeyError, match="did you mean 'a'"):
        ranking_change(pd.DataFrame([[0.5, 0.2]], index=["m"], columns=items), pd.Series([1.0, 1.0, 1.0], index=["a", "b", "aa"]))
