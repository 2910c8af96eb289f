"""platinum_jax.compare: intervals, paired tests, power and the command, against SciPy and
synthetic truths (every expected number derived here, independently of the package)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from platinum_jax import compare as cmp
from platinum_jax.cli import main


def _binary_frame(y: np.ndarray, subjects=None, cluster=None) -> pd.DataFrame:
    """Long frame from a dense ``y[S, N]`` 0/1 grid."""
    S, N = y.shape
    subjects = subjects or [f"m{s:03d}" for s in range(S)]
    df = pd.DataFrame({"subject": np.repeat(subjects, N), "item": np.tile(
        [f"q{i:04d}" for i in range(N)], S), "response": y.ravel().astype(float)})
    if cluster is not None:
        df["cluster"] = np.tile([f"c{c}" for c in cluster], S)
    return df


# ---------------------------------------------------------------------- intervals vs SciPy
@pytest.mark.parametrize("k,n", [(0, 10), (1, 10), (3, 10), (10, 10), (7, 30), (49, 100)])
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_wilson_and_clopper_pearson_match_scipy(k, n, level):
    r = stats.binomtest(k, n)
    w = r.proportion_ci(level, method="wilson")
    e = r.proportion_ci(level, method="exact")
    assert np.allclose(cmp.wilson_interval(k, n, level), (w.low, w.high), atol=1e-12)
    assert np.allclose(cmp.clopper_pearson_interval(k, n, level), (e.low, e.high), atol=1e-10)


def test_beta_intervals_are_posterior_quantiles():
    k, n = np.array([0, 2, 9, 10]), 10
    lo, hi = cmp.beta_interval(k, n, 0.9, prior="uniform")
    assert np.allclose(lo, stats.beta.ppf(0.05, k + 1, n - k + 1))
    assert np.allclose(hi, stats.beta.ppf(0.95, k + 1, n - k + 1))
    lo, hi = cmp.beta_interval(k, n, 0.9, prior="jeffreys")
    assert lo[0] == 0.0 and hi[-1] == 1.0  # the boundary rule
    assert np.allclose(lo[1:], stats.beta.ppf(0.05, k[1:] + 0.5, n - k[1:] + 0.5))
    assert np.allclose(hi[:-1], stats.beta.ppf(0.95, k[:-1] + 0.5, n - k[:-1] + 0.5))


def test_intervals_tests_and_adjustments_match_statsmodels():
    sm_prop = pytest.importorskip("statsmodels.stats.proportion")
    sm_multi = pytest.importorskip("statsmodels.stats.multitest")
    sm_tables = pytest.importorskip("statsmodels.stats.contingency_tables")
    k, n = np.array([0, 1, 4, 9, 17, 30]), 30
    for ours, method in ((cmp.wilson_interval, "wilson"),
                         (cmp.clopper_pearson_interval, "beta")):
        lo, hi = sm_prop.proportion_confint(k, n, alpha=0.1, method=method)
        assert np.allclose(ours(k, n, 0.9), (lo, hi), atol=1e-10)
    lo, hi = sm_prop.proportion_confint(k, n, alpha=0.1, method="jeffreys")
    ours_lo, ours_hi = cmp.beta_interval(k, n, 0.9)
    assert np.allclose(ours_lo[1:], lo[1:]) and np.allclose(ours_hi[:-1], hi[:-1])
    p = np.random.default_rng(12).uniform(0, 0.3, 40)
    assert np.allclose(cmp.adjust_bh(p), sm_multi.multipletests(p, method="fdr_bh")[1])
    assert np.allclose(cmp.adjust_holm(p), sm_multi.multipletests(p, method="holm")[1])
    for b, c in ((7, 3), (20, 9), (40, 25)):
        exact = b + c < 50
        ref = sm_tables.mcnemar([[5, b], [c, 11]], exact=exact, correction=False).pvalue
        assert cmp.mcnemar(b, c) == pytest.approx(ref)


def test_accuracy_independent_binary_uses_counts_and_clt_is_the_textbook_one():
    rng = np.random.default_rng(1)
    y = (rng.random((3, 40)) < [[0.1], [0.5], [0.95]]).astype(float)
    df = _binary_frame(y)
    acc = cmp.accuracy(df, method="jeffreys").xs("(all)", level="group")
    k = y.sum(1)
    assert (acc["basis"] == "counts").all()
    assert np.allclose(acc["lo"], np.where(k > 0, stats.beta.ppf(0.05, k + .5, 40 - k + .5), 0))
    assert np.allclose(acc["hi"], np.where(k < 40, stats.beta.ppf(0.95, k + .5, 40 - k + .5), 1))
    clt = cmp.accuracy(df, method="clt").xs("(all)", level="group")
    se = y.std(1, ddof=1) / np.sqrt(40)
    assert np.allclose(clt["hi"] - clt["accuracy"], stats.norm.ppf(0.95) * se)


def test_default_is_the_modified_jeffreys_interval():
    n = 25
    y = (np.arange(n)[None, :] < np.array([0, 1, 12, 24, 25])[:, None]).astype(float)
    acc = cmp.accuracy(_binary_frame(y)).xs("(all)", level="group")
    assert (acc["method"] == "jeffreys-modified").all()
    exact0 = stats.binomtest(0, n).proportion_ci(0.9, method="exact").high  # 1 - 0.05^(1/n)
    assert acc["hi"].iat[0] == pytest.approx(exact0) and acc["lo"].iat[0] == 0
    assert acc["lo"].iat[1] == 0 and acc["hi"].iat[1] == pytest.approx(
        stats.beta.ppf(0.95, 1.5, n - 0.5))
    assert acc["lo"].iat[2] == pytest.approx(stats.beta.ppf(0.05, 12.5, 13.5))
    assert acc["hi"].iat[3] == 1 and acc["lo"].iat[4] == pytest.approx(1 - exact0)


def test_clustered_variance_is_the_cluster_robust_one():
    rng = np.random.default_rng(2)
    N, G = 60, 12
    cluster = np.repeat(np.arange(G), N // G)
    y = (rng.random((2, N)) < 0.4 + 0.3 * rng.standard_normal(G)[cluster].clip(-1, 1)).astype(float)
    acc = cmp.accuracy(_binary_frame(y, cluster=cluster), method="clustered").xs(
        "(all)", level="group")
    for s in range(2):
        e = pd.Series(y[s] - y[s].mean()).groupby(cluster).sum()
        v = G / (G - 1) * (e ** 2).sum() / N ** 2
        assert acc["se"].iat[s] == pytest.approx(np.sqrt(v))
        assert acc["n_clusters"].iat[s] == G


def test_repeated_samples_split_the_variance_near_the_truth():
    rng = np.random.default_rng(3)
    N, K = 3000, 5
    p_item = rng.beta(2, 3, N)
    runs = (rng.random((N, K)) < p_item[:, None]).astype(float)
    df = pd.DataFrame({"subject": "a", "item": np.repeat(np.arange(N), K).astype(str),
                       "run": np.tile(np.arange(K), N), "response": runs.ravel()})
    acc = cmp.accuracy(df).iloc[0]
    within_true = np.mean(p_item * (1 - p_item)) / K / N  # Var(mean of K samples), per item
    between_true = np.var(p_item) / N
    assert acc["var_within"] == pytest.approx(within_true, rel=0.1)
    assert acc["var_between"] == pytest.approx(between_true, rel=0.2)
    assert acc["n_items"] == N and acc["n_samples"] == N * K
    # trials: the same runs given as shares of K samples give the same accuracy and split
    shares = pd.DataFrame({"subject": "a", "item": np.arange(N).astype(str),
                           "response": runs.mean(1), "trials": K})
    acc2 = cmp.accuracy(shares).iloc[0]
    assert acc2["var_within"] == pytest.approx(acc["var_within"])
    assert acc2["accuracy"] == pytest.approx(runs.mean())


# ---------------------------------------------------------------------- coverage (synthetic)
def _tolerance(c: float, reps: int, sds: float = 3.5) -> float:
    # The simulated coverage is a binomial share of reps independent data sets.
    return sds * np.sqrt(c * (1 - c) / reps)


def test_default_interval_covers_as_its_exact_binomial_coverage_says():
    reps, N, p = 600, 50, 0.3
    rng = np.random.default_rng(4)
    y = (rng.random((reps, N)) < p).astype(float)  # each subject is one simulated data set
    acc = cmp.accuracy(_binary_frame(y)).xs("(all)", level="group")
    covered = ((acc["lo"] <= p) & (p <= acc["hi"])).mean()
    x = np.arange(N + 1)
    lo = np.where(x > 1, stats.beta.ppf(0.05, x + .5, N - x + .5), 0)
    hi = np.where(x < N - 1, stats.beta.ppf(0.95, x + .5, N - x + .5), 1)
    hi[0], lo[N] = 1 - 0.05 ** (1 / N), 0.05 ** (1 / N)
    exact = stats.binom.pmf(x, N, p)[(lo <= p) & (p <= hi)].sum()
    assert abs(exact - 0.9) < 0.03
    assert abs(covered - exact) < _tolerance(exact, reps)


def test_default_interval_covers_under_clustering_where_clt_ignoring_clusters_does_not():
    reps, G, m, p = 500, 40, 5, 0.5
    rng = np.random.default_rng(5)
    cluster = np.repeat(np.arange(G), m)
    logit = rng.normal(0, 1.5, (reps, G))[:, cluster]  # a passage effect shared by its items
    prob = 1 / (1 + np.exp(-logit))  # symmetric around 0.5: true accuracy exactly 0.5
    y = (rng.random(prob.shape) < prob).astype(float)
    acc = cmp.accuracy(_binary_frame(y, cluster=cluster)).xs("(all)", level="group")
    covered = ((acc["lo"] <= p) & (p <= acc["hi"])).mean()
    # 0.9 less a small-G allowance (cluster-robust variances run low with 40 clusters)
    assert covered > 0.9 - 0.03 - _tolerance(0.9, reps)
    naive = cmp.accuracy(_binary_frame(y), method="clt").xs("(all)", level="group")
    assert ((naive["lo"] <= p) & (p <= naive["hi"])).mean() < 0.85


# ---------------------------------------------------------------------- paired comparisons
def test_mcnemar_and_posterior_against_scipy_and_monte_carlo():
    y = np.zeros((2, 40))
    y[0, :12] = 1  # A only: 7 (items 5..11); both: 5 (items 0..4)
    y[1, :5] = 1
    y[1, 12:15] = 1  # B only: 3
    row = cmp.compare_pairs(_binary_frame(y, ["A", "B"])).iloc[0]
    assert (row["b_only_a"], row["c_only_b"]) == (7, 3)
    assert row["test"] == "mcnemar" and row["design"] == "paired"
    assert row["p_value"] == pytest.approx(stats.binomtest(7, 10, 0.5).pvalue)
    draws = np.random.default_rng(0).dirichlet([5.5, 7.5, 3.5, 25.5], 200_000)
    assert row["p_a_better"] == pytest.approx((draws[:, 1] > draws[:, 2]).mean(), abs=0.005)
    d = y[0] - y[1]
    assert row["diff"] == pytest.approx(d.mean())
    assert row["se"] == pytest.approx(d.std(ddof=1) / np.sqrt(40))
    assert row["p_paired_t"] == pytest.approx(stats.ttest_rel(y[0], y[1]).pvalue)
    big = cmp.mcnemar(60, 35)  # asymptotic branch
    assert big == pytest.approx(stats.chi2.sf(25 ** 2 / 95, 1))


def test_clustered_paired_test_uses_cluster_sums_and_g_minus_one_df():
    rng = np.random.default_rng(13)
    N, G = 48, 8
    cluster = np.repeat(np.arange(G), N // G)
    base = rng.uniform(0.1, 0.9, G)[cluster]
    y = (rng.random((2, N)) < np.stack([base, base - 0.1])).astype(float)
    row = cmp.compare_pairs(_binary_frame(y, ["A", "B"], cluster=cluster)).iloc[0]
    d = y[0] - y[1]
    e = pd.Series(d - d.mean()).groupby(cluster).sum()
    se = np.sqrt(G / (G - 1) * (e ** 2).sum()) / N
    assert row["test"] == "paired-t (clustered)"
    assert row["se"] == pytest.approx(se)
    assert row["p_value"] == pytest.approx(2 * stats.t.sf(abs(d.mean()) / se, G - 1))


def test_bh_and_holm_match_their_definitions():
    p = np.random.default_rng(6).uniform(0, 0.2, 25)
    m = p.size
    bh = [min(min(p[j] * m / (np.sum(p <= p[j])) for j in range(m) if p[j] >= p[i]), 1)
          for i in range(m)]
    order = np.argsort(p)
    holm = np.empty(m)
    for r, i in enumerate(order):
        holm[i] = min(1, max((m - q) * p[order[q]] for q in range(r + 1)))
    assert np.allclose(cmp.adjust_bh(p), bh)
    assert np.allclose(cmp.adjust_holm(p), holm)


def test_paired_test_false_positive_rate_on_null_pairs():
    reps, N = 400, 120
    rng = np.random.default_rng(7)
    p_item = rng.beta(0.7, 0.7, (reps, N))  # shared item difficulty: strongly correlated pairs
    a = (rng.random((reps, N)) < p_item).astype(float)
    b = (rng.random((reps, N)) < p_item).astype(float)
    frames = []
    for r in range(reps):  # one benchmark (group) per null pair
        f = _binary_frame(np.stack([a[r], b[r]]), ["A", "B"])
        f["item"] = f"g{r}/" + f["item"]
        f["group"] = f"g{r:03d}"
        frames.append(f)
    pairs = cmp.compare_pairs(pd.concat(frames), replicates=200)
    tol = _tolerance(0.05, reps)
    assert abs((pairs["p_paired_t"] < 0.05).mean() - 0.05) < tol
    assert (pairs["p_mcnemar"] < 0.05).mean() < 0.05 + tol  # exact McNemar: conservative
    assert (pairs["p_bh"] < 0.05).mean() < 0.05 + tol


def test_unpaired_only_when_items_differ_and_it_says_so():
    y = np.random.default_rng(8).integers(0, 2, (2, 30)).astype(float)
    df = _binary_frame(y, ["A", "B"])
    df.loc[df.subject == "B", "item"] = "other-" + df.loc[df.subject == "B", "item"]
    with pytest.raises(cmp.NoSharedItemsError, match="unpaired=True"):
        cmp.compare_pairs(df)
    row = cmp.compare_pairs(df, unpaired=True).iloc[0]
    assert row["design"] == "unpaired" and row["test"] == "welch-z"
    se = np.sqrt(y[0].var(ddof=1) / 30 + y[1].var(ddof=1) / 30)
    assert row["se"] == pytest.approx(se)
    assert row["p_value"] == pytest.approx(2 * stats.norm.sf(abs(y[0].mean() - y[1].mean()) / se))


# ---------------------------------------------------------------------- power
def test_mde_gives_the_stated_power_in_simulation():
    n, pa, rho = 200, 0.6, 0.5
    mde = float(cmp.minimum_detectable_effect(n, pa, pa, rho))
    assert int(cmp.items_needed(mde, pa, pa, rho)) in (n, n + 1)
    # Simulate correlated 0/1 pairs with accuracies pa and pa - mde via a shared latent normal.
    rng = np.random.default_rng(9)
    reps = 600
    pb = pa - mde
    # The latent correlation giving item-score correlation rho is found by bisection.
    def phi_corr(r):
        cov = [[1, r], [r, 1]]
        p11 = stats.multivariate_normal(cov=cov).cdf([stats.norm.ppf(pa), stats.norm.ppf(pb)])
        return (p11 - pa * pb) / np.sqrt(pa * (1 - pa) * pb * (1 - pb))
    lo, hi = 0.0, 0.99
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if phi_corr(mid) < rho else (lo, mid)
    z = rng.multivariate_normal([0, 0], [[1, lo], [lo, 1]], (reps, n))
    a = (z[..., 0] < stats.norm.ppf(pa)).astype(float)
    b = (z[..., 1] < stats.norm.ppf(pb)).astype(float)
    d = a - b
    t = d.mean(1) / (d.std(1, ddof=1) / np.sqrt(n))
    power = (np.abs(t) > stats.norm.ppf(0.975)).mean()
    assert abs(power - 0.8) < _tolerance(0.8, reps) + 0.02


def test_mdad_from_data_uses_the_observed_difference_sd():
    rng = np.random.default_rng(10)
    y = rng.integers(0, 2, (3, 50)).astype(float)
    out = cmp.mdad(_binary_frame(y, ["A", "B", "C"]))
    row = out.loc[("(all)", "A", "C")]
    sd = (y[0] - y[2]).std(ddof=1)
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert row["sd_diff"] == pytest.approx(sd)
    assert row["mde"] == pytest.approx(z * sd / np.sqrt(50))
    assert row["rho"] == pytest.approx(np.corrcoef(y[0], y[2])[0, 1])


def test_mdad_follows_the_models_order_and_flags_flat_pairs():
    """The pairs of ``models`` in the order given (compare_pairs' orientation); a pair with no
    spread in its differences has no MDE; pairs without shared items get the unpaired one."""
    rng = np.random.default_rng(11)
    y = rng.integers(0, 2, (3, 40)).astype(float)
    y[2] = y[0]  # C answers as A, item by item
    frame = _binary_frame(y, ["A", "B", "C"])
    out = cmp.mdad(frame, models=["C", "B", "A"])
    pairs = cmp.compare_pairs(frame, models=["C", "B", "A"], replicates=200)
    assert list(out.index) == list(pairs.index) == [
        ("(all)", "C", "B"), ("(all)", "C", "A"), ("(all)", "B", "A")]
    row = out.loc[("(all)", "C", "B")]
    assert row["observed_diff"] == pytest.approx(y[2].mean() - y[1].mean())
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert row["mde"] == pytest.approx(z * (y[2] - y[1]).std(ddof=1) / np.sqrt(40))
    flat = out.loc[("(all)", "C", "A")]
    assert flat["sd_diff"] == 0 and np.isnan(flat["mde"]) and not flat["detectable"]
    # Two models on disjoint halves of the items: refused paired, unpaired on their own items.
    half = _binary_frame(y[:2], ["A", "B"])
    half = half[(half.subject == "A") == (half.item < "q0020")]
    with pytest.raises(cmp.CompareInputError, match="shares two or more items; pass unpaired"):
        cmp.mdad(half)
    un = cmp.mdad(half, unpaired=True).loc[("(all)", "A", "B")]
    a, b = y[0, :20], y[1, 20:]
    se = np.sqrt(a.var(ddof=1) / 20 + b.var(ddof=1) / 20)
    assert un["design"] == "unpaired" and un["n_shared"] == 0
    assert un["mde"] == pytest.approx(z * se)
    assert un["observed_diff"] == pytest.approx(a.mean() - b.mean())


# ---------------------------------------------------------------------- bad input
def test_bad_input_gets_named_errors():
    one = _binary_frame(np.ones((1, 5)), ["A"])
    with pytest.raises(cmp.TooFewModelsError, match="at least two"):
        cmp.compare_pairs(one)
    with pytest.raises(cmp.SingleClusterError, match="single cluster"):
        cmp.accuracy(_binary_frame(np.ones((2, 5)), cluster=[0] * 5))
    frac = _binary_frame(np.full((2, 5), 0.5))
    frac.loc[0, "response"] = 2.0
    with pytest.raises(cmp.CompareInputError, match=r"must lie in \[0, 1\]"):
        cmp.accuracy(frac)
    with pytest.raises(cmp.NonBinaryScoresError):
        cmp.mcnemar(1.5, 2)
    with pytest.raises(cmp.NonBinaryScoresError, match="successes"):
        cmp.accuracy(_binary_frame(np.full((2, 5), 0.55)), trials=10)
    dup = pd.concat([one, one])
    with pytest.raises(cmp.CompareInputError, match="run column"):
        cmp.accuracy(dup)
    with pytest.raises(cmp.CompareInputError, match="cluster column"):
        cmp.accuracy(one, method="clustered")


def test_response_table_input_and_command(tmp_path, capsys):
    from platinum_jax.data import ResponseTable

    rng = np.random.default_rng(11)
    y = (rng.random((4, 60)) < [[0.2], [0.4], [0.6], [0.8]]).astype(float)
    df = _binary_frame(y, ["w", "x", "y", "z"])
    df["benchmark"] = np.where(df["item"] < "q0030", "b1", "b2")
    table = ResponseTable.from_frame(df)
    assert np.allclose(cmp.accuracy(table).xs("b1", level="group")["accuracy"], y[:, :30].mean(1))
    path = tmp_path / "r.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "out"
    assert main(["compare", str(path), "--out", str(out), "--replicates", "200"]) == 0
    pairs = pd.read_csv(out / "pairs.csv")
    assert len(pairs) == 2 * 6 and set(pairs["design"]) == {"paired"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interval"] == "jeffreys-modified" and (out / "p_better_b1.png").exists()
    chosen = [f"q{i:04d}" for i in range(0, 60, 3)]  # 20 items
    pd.DataFrame({"item": chosen, "weight": 1 / 20}).to_csv(tmp_path / "subset.csv", index=False)
    out2 = tmp_path / "out2"
    assert main(["compare", str(path), "--out", str(out2), "--replicates", "200", "--no-plots",
                 "--subset", str(tmp_path / "subset.csv")]) == 0
    power = pd.read_csv(out2 / "power.csv").set_index(["group", "a", "b"])
    cols = [int(c[1:]) for c in chosen if int(c[1:]) < 30]  # the subset's items in b1
    d = y[0, cols] - y[3, cols]
    assert power.loc[("b1", "w", "z"), "n_shared"] == len(cols)
    assert power.loc[("b1", "w", "z"), "sd_diff"] == pytest.approx(d.std(ddof=1))
    # --models in another order than the table's: power.csv holds the same pairs as pairs.csv.
    out3 = tmp_path / "out3"
    assert main(["compare", str(path), "--out", str(out3), "--replicates", "200", "--no-plots",
                 "--models", "z", "w"]) == 0
    power = pd.read_csv(out3 / "power.csv").set_index(["group", "a", "b"])
    assert list(power.index) == list(pd.read_csv(out3 / "pairs.csv").set_index(
        ["group", "a", "b"]).index) == [("b1", "z", "w"), ("b2", "z", "w")]
    bad = tmp_path / "one.csv"
    df[df.subject == "w"].to_csv(bad, index=False)
    assert main(["compare", str(bad), "--out", str(tmp_path / "none")]) == 2
    assert not (tmp_path / "none").exists()
    assert "at least two" in capsys.readouterr().err


def test_percentages_get_the_message_fit_gives():
    # The same support check as fit/score/subset: 0/100 answers are named as percentages, and
    # counts beside a trials column are told to divide by the trials.
    df = pd.DataFrame({"subject": ["a", "a", "b", "b"], "item": ["1", "2", "1", "2"],
                       "response": [0, 100, 100, 0]})
    with pytest.raises(cmp.CompareInputError, match=r"percentages; divide by 100"):
        cmp.as_compare_data(df, name="pct.csv")
    df = df.assign(response=[0, 3, 2, 1], trials=[4, 4, 4, 4])
    with pytest.raises(cmp.CompareInputError, match=r"divide each response by its trials"):
        cmp.as_compare_data(df, name="counts.csv")
