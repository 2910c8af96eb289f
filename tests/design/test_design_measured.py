"""Primitives, draws and platinum items from the measured per-item noise, cost and welfare.

Every expected number is recomputed here with NumPy/SciPy/pandas from the release's files: the
closed form of v* for diagonal primitives, the scaled inverse-chi^2 moments, the costs at the
bootstrap rank interval, Definition 1 on the generalised eigenbasis (scipy.linalg.eigh).
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pandas as pd
import pytest
import scipy.linalg

from platinum_jax.cli import main
from platinum_jax.design import (
    gwa_loadings,
    measured_draws,
    measured_items,
    platinum_from_release,
    primitives_from_measurements,
    task_average_weights,
    welfare_variants,
)
from platinum_jax.importers import read_principal_agent_release

RELEASE = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / \
    "principal-agent-benchmarks"
pytestmark = pytest.mark.skipif(not RELEASE.is_dir(), reason="the release data is not present")
KEY = ["task", "doc_id"]


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


@pytest.fixture(scope="module")
def release():
    return read_principal_agent_release(RELEASE)


def _small_release(root: Path, n_all=8, n_noise=3, n_none=3) -> Path:
    """A release directory with a few welfare items: ``n_all`` with noise and cost, ``n_noise``
    with noise only, ``n_none`` with neither (noise and cost tables kept whole, so the cost
    ranks keep their meaning)."""
    root.mkdir(parents=True, exist_ok=True)
    noise = pd.read_csv(RELEASE / "noise.csv")
    cost = pd.read_csv(RELEASE / "cost.csv")
    welfare = pd.read_csv(RELEASE / "welfare.csv")
    keys = lambda f: pd.MultiIndex.from_frame(f[KEY])  # noqa: E731
    has_n, has_c = keys(welfare).isin(keys(noise)), keys(welfare).isin(keys(cost))
    pick = pd.concat([welfare[has_n & has_c].iloc[:n_all], welfare[has_n & ~has_c].iloc[:n_noise],
                      welfare[~has_n].iloc[:n_none]])
    pick.to_csv(root / "welfare.csv", index=False)
    noise.to_csv(root / "noise.csv", index=False)
    cost.to_csv(root / "cost.csv", index=False)
    for name in ("gwa_welfare_scores.csv", "gwa_welfare_scores_mean.csv"):
        (root / name).write_text((RELEASE / name).read_text())
    wanted = set(map(tuple, pick[KEY].to_numpy()))
    for name in ("judge_loadings.jsonl", "judge_loadings_openai.jsonl"):
        lines = [line for line in (RELEASE / name).read_text().splitlines()
                 if (json.loads(line)["lm_eval_task"], json.loads(line)["doc_id"]) in wanted]
        (root / name).write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = _small_release(tmp_path_factory.mktemp("release") / "data")
    return root, read_principal_agent_release(root)


def test_item_view_primitives_match_the_closed_form(release):
    items = measured_items(release, view="items").iloc[:12]
    r = 3e-3
    prims = primitives_from_measurements(items, r)
    c, s2, w = (items[k].to_numpy() for k in ("cost", "sigma2", "w"))
    M = np.diag(1 / c)
    expected = np.linalg.solve(M + r * np.diag(s2), M @ w)
    np.testing.assert_allclose(np.asarray(prims.optimal_weights()), expected, rtol=1e-10)
    np.testing.assert_allclose(expected, w / (1 + r * c * s2), rtol=1e-12)


def test_item_view_is_the_items_with_all_three(release):
    items = measured_items(release, view="items")
    n, c, w = (pd.read_csv(RELEASE / f) for f in ("noise.csv", "cost.csv", "welfare.csv"))
    joined = w.merge(n, on=KEY).merge(c, on=KEY)
    assert len(items) == len(joined) == 149
    got = items["sigma2"].sort_index()
    want = joined.set_index(KEY)["noise_sigma2"].sort_index()
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy())
    assert not items["noise_imputed"].any() and not items["cost_imputed"].any()


def test_concept_view_imputes_from_the_family_median_and_counts(release):
    items = measured_items(release, view="concepts")
    w = pd.read_csv(RELEASE / "welfare.csv")
    n = pd.read_csv(RELEASE / "noise.csv")
    with_noise = w.merge(n, on=KEY)
    assert len(items) == len(w) == 317
    assert items["noise_imputed"].sum() == len(w) - len(with_noise)
    medians = with_noise.groupby("dataset_family")["noise_sigma2"].median()
    imputed = items[items["noise_imputed"]]
    np.testing.assert_allclose(imputed["sigma2"], imputed["family"].map(medians))


def test_concept_view_primitives_match_numpy(release):
    items = measured_items(release, view="concepts").iloc[:20]
    ranked = release.loadings[(release.loadings["judge"] == "claude")
                              & (release.loadings["perspective"] == "automation")]
    concepts = sorted(set(ranked["concept_id"]))
    L = gwa_loadings(ranked, items.index, concepts)
    # reciprocal weights of the top 5, by hand, row-normalised
    by_hand = np.zeros((len(items), len(concepts)))
    for i, key in enumerate(items.index):
        rows = ranked.set_index(KEY).loc[[key]]
        for _, row in rows[rows["rank"] <= 5].iterrows():
            by_hand[i, concepts.index(row["concept_id"])] = 1 / row["rank"]
    by_hand /= np.linalg.norm(by_hand, axis=1, keepdims=True)
    np.testing.assert_allclose(L.to_numpy(), by_hand)
    r = 2e-3
    prims = primitives_from_measurements(items, r, loadings=L)
    c, s2, w = (items[k].to_numpy() for k in ("cost", "sigma2", "w"))
    A = by_hand / np.sqrt(c)[:, None]
    M = A @ A.T
    np.testing.assert_allclose(np.diag(M), 1 / c, rtol=1e-12)
    expected = np.linalg.solve(M + r * np.diag(s2), M @ w)
    np.testing.assert_allclose(np.asarray(prims.optimal_weights()), expected, rtol=1e-8)


def test_headline_welfare_variant_is_the_shipped_welfare(release):
    items = measured_items(release, view="concepts")
    wv = welfare_variants(release, items.index)
    assert wv.shape[1] == 2 * 3 * 2 * 2
    np.testing.assert_allclose(wv[("claude", 5, "reciprocal", "fraction")], items["w"],
                               atol=1e-5)


def test_noise_and_cost_draws_have_their_sampling_distributions(small):
    _, rel = small
    D = 20000
    prims, items, labels = measured_draws(rel, view="items", n_draws=D, seed=3)
    nu = 70.0
    s2 = items["sigma2"].to_numpy()
    mean = nu * s2 / (nu - 2)
    var = 2 * nu**2 * s2**2 / ((nu - 2) ** 2 * (nu - 4))
    np.testing.assert_allclose(prims.d.mean(axis=0), mean, rtol=0.01)
    np.testing.assert_allclose(prims.d.var(axis=0), var, rtol=0.1)
    # cost = 1 / A_ii^2; its central 95% interval is the cost at the bootstrap rank interval
    cost = 1 / np.diagonal(prims.A, axis1=1, axis2=2) ** 2
    table = pd.read_csv(RELEASE / "cost.csv")
    ranked = np.sort(table["cost_min_usd"].to_numpy())
    bounds = table.set_index(KEY).loc[items.index, ["rank_lo", "rank_hi"]].to_numpy(int)
    lo, hi = ranked[bounds[:, 0] - 1], ranked[bounds[:, 1] - 1]
    np.testing.assert_allclose(np.quantile(np.log(cost), 0.025, axis=0), np.log(lo), atol=0.05)
    np.testing.assert_allclose(np.quantile(np.log(cost), 0.975, axis=0), np.log(hi), atol=0.05)
    # every welfare variant is drawn, about equally often
    counts = pd.Series(labels).value_counts()
    assert len(counts) == 24 and counts.min() > 0.8 * D / 24


def test_p_platinum_and_gains_equal_numpy_on_the_same_draws(small):
    _, rel = small
    D, r, seed = 300, 4e-3, 5
    res = platinum_from_release(rel, view="items", n_draws=D, seed=seed, r=r, r_factors=(1,))
    prims, items, _ = measured_draws(rel, view="items", n_draws=D, seed=seed)
    c = 1 / np.diagonal(prims.A, axis1=1, axis2=2) ** 2
    s2, w = prims.d, prims.w
    m = w.shape[1]
    tau = 1 / np.sqrt(m)
    # diagonal M and Sigma: every item is its own concept, cos(theta_ii) = 1
    cos_phi = w / np.linalg.norm(w, axis=1, keepdims=True)
    ratio = 1 / (r * c * s2)
    flags = (cos_phi >= tau) & (ratio >= 1.0)
    assert 0 < flags.mean() < 1  # both outcomes occur, so the comparison can fail
    np.testing.assert_allclose(res.items["p_platinum"].to_numpy(), flags.mean(axis=0))
    v = w / (1 + r * c * s2)
    np.testing.assert_allclose(res.items["mean"].to_numpy(), v.mean(axis=0), rtol=1e-9)

    def welfare(u):
        return ((w * u - 0.5 * u**2) / c - 0.5 * r * s2 * u**2).sum(axis=1)

    def best_scaled(u):
        return 0.5 * ((w * u / c).sum(axis=1)) ** 2 / ((u**2 / c + r * s2 * u**2).sum(axis=1))

    W = welfare(v)
    gain_u = (W - best_scaled(np.full((D, m), 1 / m))) / W
    cur = task_average_weights(items)
    assert cur.sum() == pytest.approx(1.0)
    gain_c = (W - best_scaled(np.broadcast_to(cur, (D, m)))) / W
    np.testing.assert_allclose(res.posterior.gain_draws["over_uniform"], gain_u, rtol=1e-8)
    np.testing.assert_allclose(res.posterior.gain_draws["over_current"], gain_c, rtol=1e-8)
    g = res.summary["welfare_gain_over_uniform"]
    assert g["lo"] == pytest.approx(np.quantile(gain_u, 0.05))
    assert g["hi"] == pytest.approx(np.quantile(gain_u, 0.95))


def test_concept_view_platinum_equals_definition_1_by_scipy(small):
    _, rel = small
    D, r, seed = 12, 4e-3, 7
    res = platinum_from_release(rel, view="concepts", n_draws=D, seed=seed, r=r, r_factors=(1,))
    prims, items, _ = measured_draws(rel, view="concepts", n_draws=D, seed=seed)
    assert items["noise_imputed"].sum() == 3 and items["cost_imputed"].sum() == 6
    assert res.items["top_gwa"].isin(prims.abilities).all()
    m = len(items)
    tau = 1 / np.sqrt(m)
    flags = np.zeros((D, m), bool)
    for d in range(D):
        M = prims.A[d] @ prims.A[d].T
        Sigma = np.diag(prims.d[d])
        w = prims.w[d]
        lam, Q = scipy.linalg.eigh(M, Sigma)  # M q = lam Sigma q, Q^T Sigma Q = I
        for j in range(m):
            q = Q[:, j]
            if lam[j] <= 1e-10 * lam.max():
                continue
            if q @ Sigma @ w < 0:
                q = -q
            cos_theta = q / np.linalg.norm(q)
            omega = np.linalg.norm(q) * (q @ Sigma @ w) / np.linalg.norm(w)
            if omega >= tau and lam[j] / r >= 1.0:
                flags[d] |= cos_theta >= tau
    assert 0 < flags.mean() < 1
    np.testing.assert_allclose(res.items["p_platinum"].to_numpy(), flags.mean(axis=0))


def test_cli_end_to_end(small, tmp_path, capsys):
    root, _ = small
    out = tmp_path / "out"
    assert main(["platinum", str(root), "--out", str(out), "--draws", "20"]) == 0
    names = {p.name for p in out.iterdir() if not p.name.startswith(".")}
    assert names == {"weights.csv", "platinum.csv", "sweep.csv", "summary.json", "weights.png",
                     "platinum.png", "gain.png", "sweep.png"}
    weights = pd.read_csv(out / "weights.csv")
    assert len(weights) == 8 and {"mean", "lo", "hi", "p_platinum"} <= set(weights.columns)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_draws"] == 20 and summary["view"] == "items"
    assert len(pd.read_csv(out / "sweep.csv")) == 9
    assert "platinum items:" in capsys.readouterr().out


def test_cli_rejects_negative_cost_and_missing_file(small, tmp_path, capsys):
    root, _ = small
    bad = _small_release(tmp_path / "bad")
    cost = pd.read_csv(bad / "cost.csv")
    cost.loc[0, "cost_min_usd"] = -5.0
    cost.to_csv(bad / "cost.csv", index=False)
    out = tmp_path / "out"
    assert main(["platinum", str(bad), "--out", str(out)]) == 2
    assert "cost_min_usd" in capsys.readouterr().err
    assert not out.exists()
    (bad / "noise.csv").unlink()
    assert main(["platinum", str(bad), "--out", str(out)]) == 2
    assert "noise.csv" in capsys.readouterr().err
    assert not out.exists()
    assert main(["platinum", str(root), "--out", str(out), "--r", "-1"]) == 2
    assert "--r" in capsys.readouterr().err and not out.exists()


def test_measured_items_names_bad_measurements(release):
    import dataclasses

    cost = release.cost.copy()
    cost.iloc[0, cost.columns.get_loc("rank_hi")] = len(cost) + 10
    with pytest.raises(ValueError, match="rank_lo and rank_hi must be ranks"):
        measured_items(dataclasses.replace(release, cost=cost))
    items = measured_items(release, view="items")
    noise = release.noise.copy()
    noise.loc[items.index[0], "noise_sigma2"] = 0.0
    with pytest.raises(ValueError, match="noise_sigma2.*positive variance"):
        measured_items(dataclasses.replace(release, noise=noise))
    with pytest.raises(ValueError, match="view must be one of"):
        measured_items(release, view="gwas")


def test_cli_concept_view_with_the_headline_welfare(small, tmp_path):
    root, rel = small
    out = tmp_path / "gwa"
    assert main(["platinum", str(root), "--out", str(out), "--draws", "10", "--view", "concepts",
                 "--welfare", "aug", "--welfare-variants", "headline"]) == 0
    weights = pd.read_csv(out / "weights.csv").set_index(KEY)
    assert len(weights) == len(rel.welfare) == 14
    assert weights["noise_imputed"].sum() == 3 and weights["cost_imputed"].sum() == 6
    # the headline variant only: w is the shipped w_aug in every draw
    shipped = pd.read_csv(root / "welfare.csv").set_index(KEY)["w_aug"]
    np.testing.assert_allclose(weights["w"], shipped.reindex(weights.index), atol=1e-6)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_items_cost_imputed"] == 6
    assert summary["welfare_variant_draws"] == {"claude/5/reciprocal/fraction": 10}


@pytest.mark.parametrize("variants", ["all", "headline"])
def test_a_welfare_table_the_rankings_do_not_give_is_refused(tmp_path, variants, capsys):
    """The decisions are drawn from welfare recomputed from the judges' rankings, so a
    welfare.csv that disagrees with them (every w_auto set to 0, within its bounds) is refused
    rather than listed beside weights it did not make."""
    root = _small_release(tmp_path / "data")
    welfare = pd.read_csv(root / "welfare.csv")
    welfare["w_auto"] = 0.0
    welfare.to_csv(root / "welfare.csv", index=False)
    rel = read_principal_agent_release(root)
    with pytest.raises(ValueError, match="welfare.csv's w_auto and the welfare recomputed"):
        measured_draws(rel, view="items", n_draws=4, variants=variants)
    out = tmp_path / "plat"
    assert main(["platinum", str(root), "--welfare-variants", variants, "--draws", "4",
                 "--out", str(out)]) == 2
    assert "restore welfare.csv" in capsys.readouterr().err and not out.exists()


def test_a_cost_its_ranks_do_not_give_is_refused(tmp_path, small):
    root = _small_release(tmp_path / "data")
    cost = pd.read_csv(root / "cost.csv")
    items = measured_items(small[1], view="items")
    task, doc = items.index[0]
    row = (cost["task"] == task) & (cost["doc_id"] == doc)
    assert row.sum() == 1
    cost.loc[row, "cost_min_usd"] = 1e30  # its rank_headline unchanged
    cost.to_csv(root / "cost.csv", index=False)
    rel = read_principal_agent_release(root)
    with pytest.raises(ValueError, match="ranks 14908, rank_headline"):
        measured_draws(rel, view="items", n_draws=4)
    # the shipped costs agree with their ranks to one (ties), and their welfare to rounding
    res = platinum_from_release(small[1], view="items", n_draws=4, r_factors=(1,))
    assert "rank_headline" in res.summary["columns"]["cost"]
