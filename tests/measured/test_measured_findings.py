"""The principal-agent paper's findings from its release: every figure the package reports is
derived here a second way, straight from the release's files with pandas, NumPy and SciPy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from platinum_jax.cli import main as cli_main
from platinum_jax.importers import read_principal_agent_release
from platinum_jax.measured import (
    concept_quadrants,
    cost_quantile_table,
    dominated_by,
    heldout_rater_check,
    noise_decomposition,
    noise_quantile_table,
    quantile_bands,
    welfare_frontier,
    welfare_robustness,
)
from platinum_jax.measured._findings_tables import format_dollars

RELEASE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / \
    "principal-agent-benchmarks"
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
H5 = 1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5


@pytest.fixture(scope="module")
def release():
    if not (RELEASE / "noise.csv").exists():
        pytest.fail("the principal-agent release is missing beside the repository checkout")
    return read_principal_agent_release(RELEASE)


def _jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _scores(name="gwa_welfare_scores.csv"):
    g = pd.read_csv(RELEASE / name)
    return g[~g["dropped"]].set_index("concept_id")


def _band_values(values: np.ndarray, q: float, k: int = 7) -> np.ndarray:
    """The k sorted values around quantile q, by the rule in the paper's tables."""
    s = np.sort(values)
    lo = min(max(0, round(q * (len(s) - 1)) - k // 2), len(s) - k)
    return s[lo:lo + k]


def _brute_front(xy) -> np.ndarray:
    on = []
    for i, (a, b) in enumerate(xy):
        on.append(not any((c >= a and d >= b and (c > a or d > b))
                          for j, (c, d) in enumerate(xy) if j != i))
    return np.array(on)


def _welfare_loop(rows, scores, k=5, uniform=False):
    """Per-item welfare summed rank by rank; dropped GWAs keep their slot and add nothing."""
    out = {}
    for r in rows:
        col = "p_auto_15" if r["perspective"] == "automation" else "p_aug_15"
        total = sum((1 / k if uniform else 1 / (n + 1)) * scores.loc[g, col]
                    for n, g in enumerate(r["ranked_gwa_ids"][:k]) if g in scores.index)
        key = (r["lm_eval_task"], r["doc_id"])
        out.setdefault(key, {})["w_auto" if col == "p_auto_15" else "w_aug"] = round(total, 9)
    return pd.DataFrame.from_dict(out, orient="index")


# ---- Tables 1, 2, 4 ------------------------------------------------------------------------

def test_cost_table_bands_ranks_and_dollars(release):
    raw = pd.read_csv(RELEASE / "cost.csv")
    table = cost_quantile_table(release.cost, release.topics)
    assert len(table) == 35 and list(pd.unique(table["quantile"])) == list(QUANTILES)
    for q in QUANTILES:
        band = table[table["quantile"] == q]
        expect = _band_values(raw["cost_min_usd"].to_numpy(), q)
        np.testing.assert_allclose(np.sort(band["cost_lift_usd"]), 0.1 * expect, rtol=1e-12)
    joined = table.merge(raw, on=["task", "doc_id"], suffixes=("", "_raw"))
    assert (joined["rank"] == joined["rank_headline"]).all()
    assert (joined["rank_lo"] == joined["rank_lo_raw"]).all()
    assert (joined["rank_hi"] == joined["rank_hi_raw"]).all()
    assert (joined["axis"] == joined["cheapest_axis"]).all()
    topics = pd.read_csv(RELEASE / "item_topics.csv")
    with_topic = table.merge(topics, on=["task", "doc_id"], suffixes=("", "_raw"))
    assert len(with_topic) == len(table) and (with_topic["topic"] == with_topic["topic_raw"]).all()
    assert format_dollars(127.57) == "$128" and format_dollars(4238.7) == "$4.2k"
    assert format_dollars(34547.8) == "$35k" and format_dollars(2.5e9) == "$2.5B"


def test_noise_table_bands(release):
    raw = pd.read_csv(RELEASE / "noise.csv")
    table = noise_quantile_table(release.noise, release.topics)
    for q in QUANTILES:
        band = table[table["quantile"] == q]
        np.testing.assert_allclose(np.sort(band["sigma_hat"]),
                                   _band_values(raw["noise_sigma_hat"].to_numpy(), q))
    joined = table.merge(raw, on=["task", "doc_id"], suffixes=("", "_raw"))
    np.testing.assert_allclose(joined["mean_phat"], joined["noise_mean_phat"])
    assert (joined["rank"] == joined["rank_headline"]).all()
    assert (joined["rank_hi"] == joined["rank_hi_raw"]).all()


def test_quantile_bands_stay_inside_the_items():
    b = quantile_bands(20, levels=(0.0, 0.5, 1.0), per_band=7)
    assert b.loc[b["quantile"] == 0.0, "position"].tolist() == list(range(7))
    assert b.loc[b["quantile"] == 1.0, "position"].tolist() == list(range(13, 20))
    assert b.loc[b["quantile"] == 0.5, "position"].tolist() == list(range(7, 14))  # centre 10
    with pytest.raises(ValueError, match="at least 7"):
        quantile_bands(5)


def test_noise_decomposition_per_family(release):
    m = pd.read_parquet(RELEASE / "item_margins.parquet")
    fam = m["task"].map(lambda t: "MMLU" if t.startswith("mmlu_") else
                        {"hellaswag": "HellaSwag", "piqa": "PIQA", "arc_challenge": "ARC-C",
                         "mathqa": "MathQA", "commonsense_qa": "CSQA"}.get(t, t))
    table = noise_decomposition(release.margins)
    assert list(table.index) == ["HellaSwag", "PIQA", "ARC-C", "MathQA", "MMLU", "CSQA"]
    for name, sub in m.groupby(fam):
        row = table.loc[name]
        won = sub[sub["phat_noise"] > 0.5]
        assert row["n"] == len(sub) and row["n_won"] == len(won)
        assert row["median_sigma_z"] == pytest.approx(np.median(sub["sigma_z"]))
        assert row["median_phat"] == pytest.approx(np.median(sub["phat_noise"]))
        assert row["median_log_ratio_won"] == pytest.approx(np.median(won["log_ratio_med"]))
        r = stats.pearsonr(np.abs(sub["log_ratio_med"] - 1), sub["sigma_z"])[0]
        assert row["r_margin_z"] == pytest.approx(r)
    # the paper's text: MMLU's margin is strongly anti-correlated with Z, HellaSwag's is not
    assert round(table.loc["MMLU", "r_margin_z"], 2) == -0.57
    assert round(table.loc["HellaSwag", "r_margin_z"], 2) == -0.08


# ---- Figure 2 ------------------------------------------------------------------------------

def test_concept_quadrants_loading_per_gwa(release):
    rows = _jsonl(RELEASE / "judge_loadings.jsonl")
    kept = _scores()
    result = concept_quadrants(release.concept_scores, release.loadings)
    assert set(result.concepts.index) == set(kept.index)
    for persp in ("automation", "augmentation"):
        mine = [r for r in rows if r["perspective"] == persp]
        for g in kept.index:
            share = np.mean([g in r["ranked_gwa_ids"][:5] for r in mine])
            assert result.concepts.loc[g, f"loading_{persp}"] == pytest.approx(share)
        slots = [g for r in mine for g in r["ranked_gwa_ids"][:5] if g in kept.index]
        for g in kept.index:
            a, u = kept.loc[g, "p_auto_15"] >= 3.5, kept.loc[g, "p_aug_15"] >= 3.5
            q = "green" if a and u else "automate" if a else "augment" if u else "low"
            assert result.concepts.loc[g, "quadrant"] == q
        quad = result.concepts["quadrant"]
        for q in ("green", "automate", "augment", "low"):
            expect = 100 * np.mean([quad[g] == q for g in slots])
            assert result.quadrants.loc[(persp, q), "slot_share_pct"] == pytest.approx(expect)
            assert result.quadrants.loc[(persp, q), "n_gwas"] == (quad == q).sum()


# ---- Figure 3 ------------------------------------------------------------------------------

def _cluster_loop(df, col, n, seed):
    """Task-cluster permutation p and bootstrap interval of the general − math mean gap, one
    replicate at a time."""
    cl = df[["task", "family"]].drop_duplicates()
    by = {t: df.loc[df["task"] == t, col].to_numpy() for t in cl["task"]}

    def gap(math_tasks, gen_tasks):
        return (np.mean(np.concatenate([by[t] for t in gen_tasks]))
                - np.mean(np.concatenate([by[t] for t in math_tasks])))

    tasks, fams = cl["task"].to_numpy(), cl["family"].to_numpy().copy()
    obs = gap(tasks[fams == "math"], tasks[fams == "general"])
    rng, hits = np.random.default_rng(seed), 0
    for _ in range(n):
        rng.shuffle(fams)
        hits += gap(tasks[fams == "math"], tasks[fams == "general"]) >= obs - 1e-12
    rng = np.random.default_rng(seed + 1)
    mt, gt = tasks[cl["family"] == "math"], tasks[cl["family"] == "general"]
    boots = [gap(rng.choice(mt, len(mt)), rng.choice(gt, len(gt))) for _ in range(n)]
    return (hits + 1) / (n + 1), np.quantile(boots, [0.025, 0.975])


def test_welfare_frontier_against_brute_force(release):
    df = pd.read_csv(RELEASE / "welfare.csv")
    for c in ("w_auto", "w_aug"):
        df[c] = 1 + 4 * (df[c] - H5) / (5 * H5 - H5)
    math = df["task"].str.fullmatch(
        r"mathqa|agieval_(sat_math|aqua_rat)|mmlu_(college|high_school|elementary)_mathematics|"
        r"mmlu_high_school_statistics|mmlu_abstract_algebra|mmlu_(college|high_school)_physics|"
        r"mmlu_econometrics|mmlu_formal_logic")
    df["family"] = np.where(math, "math", "general")
    result = welfare_frontier(release.welfare, n_resamples=300, seed=7)
    items = result.items.reset_index()
    assert (items[["task", "doc_id"]].to_numpy() == df[["task", "doc_id"]].to_numpy()).all()
    np.testing.assert_allclose(items["w_auto"], df["w_auto"])
    on = _brute_front(df[["w_auto", "w_aug"]].to_numpy())
    assert (items["on_frontier"].to_numpy() == on).all()
    h = result.headline
    assert (h["n_math"], h["n_general"]) == (math.sum(), (~math).sum())
    assert h["frontier_n"] == on.sum() and h["frontier_n_math"] == (on & math).sum()
    gen_xy = df.loc[~math, ["w_auto", "w_aug"]].to_numpy()
    dominated = [any((c >= a and d >= b and (c > a or d > b)) for c, d in gen_xy)
                 for a, b in df.loc[math, ["w_auto", "w_aug"]].to_numpy()]
    assert h["pct_math_dominated_by_general"] == pytest.approx(100 * np.mean(dominated))
    for axis in ("w_auto", "w_aug"):
        row = result.axes.loc[axis]
        gap = df.loc[~math, axis].mean() - df.loc[math, axis].mean()
        assert row["gap_general_minus_math"] == pytest.approx(gap)
        p, ci = _cluster_loop(df, axis, 300, 7)
        assert row["cluster_permutation_p"] == pytest.approx(p)
        np.testing.assert_allclose([row["gap_ci_lo"], row["gap_ci_hi"]], ci, rtol=1e-10)
        mw = stats.mannwhitneyu(df.loc[math, axis], df.loc[~math, axis], alternative="less")
        assert row["mann_whitney_p_iid"] == pytest.approx(mw.pvalue)


def test_dominance_ties_and_missing_values():
    pts = np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 0.5], [0.5, 0.5]])
    # equal points do not dominate each other; (0.5, 0.5) is dominated by all three others
    assert dominated_by(pts, pts).tolist() == [0, 0, 0, 3]
    assert dominated_by(pts[:1], pts[2:]).tolist() == [0]
    with pytest.raises(ValueError, match="finite welfare"):
        dominated_by(np.array([[np.nan, 1.0]]), pts)


# ---- Robustness sets 1 and 2 ---------------------------------------------------------------

def test_welfare_robustness_against_scipy(release):
    claude = _jsonl(RELEASE / "judge_loadings.jsonl")
    openai = _jsonl(RELEASE / "judge_loadings_openai.jsonl")
    kept, mean = _scores(), _scores("gwa_welfare_scores_mean.csv")
    default = _welfare_loop(claude, kept)
    variants = {"k=3, recip": _welfare_loop(claude, kept, k=3),
                "k=4, recip": _welfare_loop(claude, kept, k=4),
                "k=5, uniform": _welfare_loop(claude, kept, uniform=True),
                "OpenAI, k=5, recip": _welfare_loop(openai, kept),
                "GWA mean-agg, k=5, recip": _welfare_loop(claude, mean)}
    table = welfare_robustness(release.loadings, release.concept_scores,
                               release.concept_scores_mean)
    assert list(table.index) == list(variants)
    f_def = set(default.index[_brute_front(default.to_numpy())])
    for name, var in variants.items():
        row = table.loc[name]
        both = default.merge(var, left_index=True, right_index=True, suffixes=("", "_v"))
        for axis in ("auto", "aug"):
            a, b = both[f"w_{axis}"], both[f"w_{axis}_v"]
            assert row[f"spearman_{axis}"] == pytest.approx(stats.spearmanr(a, b)[0])
            assert row[f"kendall_{axis}"] == pytest.approx(stats.kendalltau(a, b)[0])
        f_var = set(var.index[_brute_front(var.to_numpy())])
        assert (row["frontier_size_variant"], row["frontier_overlap"]) == (
            len(f_var), len(f_def & f_var))
        assert row["frontier_jaccard"] == pytest.approx(len(f_def & f_var) / len(f_def | f_var))
    # variants whose input is absent are skipped on record, not silently
    without = welfare_robustness(release.loadings[release.loadings["judge"] == "claude"],
                                 release.concept_scores, None)
    assert without.attrs["skipped"] == ["OpenAI, k=5, recip", "GWA mean-agg, k=5, recip"]


def test_heldout_rater_check(release):
    folder = RELEASE / "heldout_raters"
    family = json.loads((folder / "family_map.json").read_text())
    kept = _scores()
    quad = {g: ("green" if a >= 3 and u >= 3 else "automate" if a >= 3 else
                "augment" if u >= 3 else "low")
            for g, a, u in zip(kept.index, kept["p_auto_15"], kept["p_aug_15"], strict=True)}
    result = heldout_rater_check(release.heldout, release.concept_scores)
    for rater in ("A1", "A2", "claude3ex"):
        welfare = {}
        for persp, col in (("automation", "w_auto"), ("augmentation", "w_aug")):
            rows = _jsonl(folder / f"{rater}_{persp}.jsonl")
            slots = pd.Series([quad[g] for r in rows for g in r["ranked_gwa_ids"][:5]
                               if g in quad])
            share = 100 * slots.value_counts(normalize=True)
            got = result.loading_mass.loc[(rater, persp)]
            assert got["n_items"] == len(rows)
            for q in ("green", "automate", "augment", "low"):
                assert got[q] == pytest.approx(share.get(q, 0.0))
            score = kept["p_auto_15" if col == "w_auto" else "p_aug_15"]
            welfare[col] = {r["task_id"]: sum(score[g] / (n + 1) for n, g in
                                              enumerate(r["ranked_gwa_ids"][:5]) if g in quad)
                            for r in rows}
        w = pd.DataFrame(welfare)
        w["family"] = w.index.map(family)
        means = w.groupby("family")[["w_auto", "w_aug"]].mean()
        got = result.gaps.loc[rater]
        assert got["n_math"] == (w["family"] == "math").sum()
        assert got["gap_w_auto"] == pytest.approx(means.loc["general", "w_auto"]
                                                  - means.loc["math", "w_auto"])
        assert got["gap_w_aug"] == pytest.approx(means.loc["general", "w_aug"]
                                                 - means.loc["math", "w_aug"])
        assert got["frontier_n"] == _brute_front(w[["w_auto", "w_aug"]].to_numpy()).sum()


# ---- the command ---------------------------------------------------------------------------

EXPECTED_FILES = {
    "table1_cost_quantiles.csv", "table2_noise_quantiles.csv", "table4_noise_decomposition.csv",
    "figure2_gwa_quadrants.csv", "figure2_quadrant_loading.csv", "figure3_welfare_items.csv",
    "figure3_family_gap.csv", "robustness_set1.csv", "robustness_set2_loading_mass.csv",
    "robustness_set2_gaps.csv", "summary.json", "table1_cost_quantiles.png",
    "table2_noise_quantiles.png", "table4_noise_decomposition.png", "figure2_gwa_quadrants.png",
    "figure3_pareto_frontier.png", "robustness_set1.png", "robustness_set2.png"}


def test_cli_writes_every_artifact(tmp_path, capsys):
    out = tmp_path / "findings"
    assert cli_main(["findings", str(RELEASE), "--out", str(out), "--resamples", "100"]) == 0
    names = {p.name for p in out.iterdir() if not p.name.startswith(".platinum-jax")}
    assert names == EXPECTED_FILES
    summary = json.loads((out / "summary.json").read_text())
    assert summary["items"]["noise_cost_welfare"] == 149
    assert summary["figure3"]["welfare_recomputed_max_abs_diff"] < 1e-6  # welfare.csv: 6 d.p.
    t4 = pd.read_csv(out / "table4_noise_decomposition.csv", index_col="family")
    assert t4.loc["MMLU", "n"] == (pd.read_parquet(RELEASE / "item_margins.parquet")["task"]
                                   .str.startswith("mmlu_").sum())
    assert "Figure 3: frontier" in capsys.readouterr().out


def _release_without(tmp_path: Path, *missing: str) -> Path:
    """The release's files linked into a fresh directory, less ``missing``."""
    d = tmp_path / "release"
    d.mkdir()
    for p in RELEASE.iterdir():
        if p.name not in missing:
            (d / p.name).symlink_to(p)
    return d


def test_cli_missing_required_file_fails_cleanly(tmp_path, capsys):
    out = tmp_path / "out"
    code = cli_main(["findings", str(_release_without(tmp_path, "noise.csv")), "--out", str(out)])
    assert code != 0
    assert "noise.csv" in capsys.readouterr().err
    assert not out.exists()


def test_cli_missing_optional_file_named_or_skipped(tmp_path, capsys):
    src = _release_without(tmp_path, "item_margins.parquet", "item_topics.csv",
                           "heldout_raters", "judge_loadings_openai.jsonl")
    out = tmp_path / "out"
    assert cli_main(["findings", str(src), "--out", str(out), "--resamples", "100"]) != 0
    err = capsys.readouterr().err
    assert "table4 needs item_margins.parquet" in err and "item_topics.csv" in err
    assert not out.exists()
    assert cli_main(["findings", str(src), "--out", str(out), "--resamples", "100",
                     "--allow-missing"]) == 0
    skipped = json.loads((out / "summary.json").read_text())["skipped"]
    assert set(skipped) == {"table1", "table2", "table4", "robustness_set1", "robustness_set2"}
    assert {p.name for p in out.glob("*.png")} == {"figure2_gwa_quadrants.png",
                                                   "figure3_pareto_frontier.png"}
    assert "Skipped table4: missing item_margins.parquet" in capsys.readouterr().out


def test_cli_failure_after_reading_writes_nothing(tmp_path, capsys):
    src = _release_without(tmp_path, "item_margins.parquet")
    m = pd.read_parquet(RELEASE / "item_margins.parquet").drop(columns="sigma_z")
    m.to_parquet(src / "item_margins.parquet")
    out = tmp_path / "out"
    assert cli_main(["findings", str(src), "--out", str(out), "--resamples", "100"]) != 0
    assert "sigma_z" in capsys.readouterr().err
    assert not out.exists()


def _release_with_heldout(tmp_path: Path) -> tuple[Path, Path]:
    """The release linked into a fresh directory with a copy of heldout_raters/ to edit."""
    import shutil

    src = _release_without(tmp_path, "heldout_raters")
    shutil.copytree(RELEASE / "heldout_raters", src / "heldout_raters")
    return src, src / "heldout_raters"


def test_cli_an_empty_rater_file_is_named(tmp_path, release, capsys):
    src, folder = _release_with_heldout(tmp_path)
    (folder / "A1_automation.jsonl").write_text("")
    out = tmp_path / "out"
    assert cli_main(["findings", str(src), "--out", str(out), "--resamples", "100"]) == 2
    err = capsys.readouterr().err
    assert "A1_automation.jsonl: holds no rankings" in err and "Traceback" not in err
    assert not out.exists()
    # without the file at all, the rater lacks a perspective, named by the check itself
    rows = release.heldout
    lacking = rows[~((rows["rater"] == "A1") & (rows["perspective"] == "automation"))]
    with pytest.raises(ValueError, match=r"rater 'A1' has no automation rankings"):
        heldout_rater_check(lacking, release.concept_scores)


def test_cli_all_general_raters_report_what_cannot_be_computed(tmp_path, capsys):
    src, folder = _release_with_heldout(tmp_path)
    family = json.loads((folder / "family_map.json").read_text())
    (folder / "family_map.json").write_text(json.dumps({k: "general" for k in family}))
    out = tmp_path / "out"
    assert cli_main(["findings", str(src), "--out", str(out), "--resamples", "100"]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    gaps = pd.read_csv(out / "robustness_set2_gaps.csv", index_col="rater")
    kept = _scores()
    for rater in ("A1", "A2", "claude3ex"):
        # every item general: its welfare per axis, straight from the rater's files
        welfare = {}
        for persp, col in (("automation", "p_auto_15"), ("augmentation", "p_aug_15")):
            for r in _jsonl(folder / f"{rater}_{persp}.jsonl"):
                top = [g for g in r["ranked_gwa_ids"][:5] if g in kept.index]
                if top:
                    w = sum(kept.loc[g, col] / (n + 1)
                            for n, g in enumerate(r["ranked_gwa_ids"][:5]) if g in kept.index)
                    welfare.setdefault(r["task_id"], {})[col] = w
        w = pd.DataFrame.from_dict(welfare, orient="index").dropna()
        row = gaps.loc[rater]
        assert (row["n_math"], row["n_general"]) == (0, len(w))
        assert row["general_mean_w_auto"] == pytest.approx(w["p_auto_15"].mean())
        assert row["general_mean_w_aug"] == pytest.approx(w["p_aug_15"].mean())
        assert row["frontier_n"] == _brute_front(w[["p_auto_15", "p_aug_15"]].to_numpy()).sum()
        assert np.isnan([row["gap_w_auto"], row["gap_w_aug"], row["pct_math_dominated"]]).all()
        assert summary["robustness_set2"][rater]["gap_w_auto"] is None
        note = (f"robustness set 2, rater {rater}: no math items among the held-out items, so "
                "its math-general welfare gaps and % of math items dominated cannot be computed")
        assert note in summary["notes"] and f"Note: {note}" in printed
        assert f"{rater:10s} n/a / n/a, n/a%" in printed


@pytest.mark.parametrize(("column", "value", "says"), [
    ("sigma_z", np.inf, "column 'sigma_z' holds Z = sigma / sqrt"),
    ("sigma", -0.05, "column 'sigma' holds an across-seed noise standard deviation"),
    ("phat_noise", 1.5, "column 'phat_noise' holds a probability"),
    ("log_ratio_med", np.nan, "column 'log_ratio_med' holds a finite"),
])
def test_cli_impossible_margins_are_named(tmp_path, capsys, column, value, says):
    src = _release_without(tmp_path, "item_margins.parquet")
    m = pd.read_parquet(RELEASE / "item_margins.parquet")
    m.loc[3, column] = value
    m.to_parquet(src / "item_margins.parquet")
    out = tmp_path / "out"
    assert cli_main(["findings", str(src), "--out", str(out), "--resamples", "100"]) == 2
    err = capsys.readouterr().err
    assert says in err and "item_margins.parquet" in err and "Traceback" not in err
    assert f"1 row(s) do not (e.g. ({m.loc[3, 'task']!r}, {m.loc[3, 'doc_id']})" in err
    assert not out.exists()
    with pytest.raises(ValueError, match=f"column '{column}'"):
        noise_decomposition(m.set_index(["task", "doc_id"]))


def test_cli_refuses_too_few_resamples_for_an_interval(tmp_path, capsys):
    """With one replicate the 'interval' is that replicate, which excluded the estimate; the
    fewest allowed is 5 / alpha (2.5 replicates beyond each end of the interval)."""
    from platinum_jax.cli.findings import MIN_RESAMPLES
    from platinum_jax.measured._findings_welfare import min_resamples

    assert (min_resamples(0.05), min_resamples(0.1), min_resamples(0.01)) == (100, 50, 500)
    assert MIN_RESAMPLES == min_resamples(0.05)  # the command's floor is the library's
    for n in ("1", "99"):
        out = tmp_path / f"out{n}"
        assert cli_main(["findings", str(RELEASE), "--out", str(out), "--resamples", n]) == 2
        err = capsys.readouterr().err
        assert f"--resamples {n}:" in err and "at least 100 replicates" in err
        assert not out.exists()
    welfare = read_principal_agent_release(RELEASE).welfare
    with pytest.raises(ValueError, match="at least 100"):
        welfare_frontier(welfare, n_resamples=99)
    with pytest.raises(ValueError, match="at least 200"):
        welfare_frontier(welfare, n_resamples=100, alpha=0.025)
    fewest = welfare_frontier(welfare, n_resamples=100, seed=42).axes
    assert (fewest["gap_ci_lo"] <= fewest["gap_general_minus_math"]).all()
    assert (fewest["gap_general_minus_math"] <= fewest["gap_ci_hi"]).all()


def test_heldout_items_without_welfare_are_counted_not_dropped(release):
    """An item one rater ranked from one perspective only has no welfare on the other axis:
    it leaves that rater's comparison on record (count and name), and the rest are compared
    as they would be without it."""
    rows = release.heldout
    item = sorted(rows.loc[rows["rater"] == "A1", "item"].unique())[0]
    one_sided = rows[~((rows["rater"] == "A1") & (rows["item"] == item)
                       & (rows["perspective"] == "augmentation"))]
    got = heldout_rater_check(one_sided, release.concept_scores).gaps
    assert got.loc["A1", "n_without_welfare"] == 1
    assert got.loc["A1", "items_without_welfare"] == str(item)
    assert (got.drop(index="A1")["n_without_welfare"] == 0).all()
    # the same as a check on the rankings without that item at all
    without = rows[~((rows["rater"] == "A1") & (rows["item"] == item))]
    ref = heldout_rater_check(without, release.concept_scores).gaps
    for col in ("n_math", "n_general", "gap_w_auto", "gap_w_aug", "frontier_n"):
        assert got.loc["A1", col] == pytest.approx(ref.loc["A1", col]), col
    assert ref.loc["A1", "n_without_welfare"] == 0
