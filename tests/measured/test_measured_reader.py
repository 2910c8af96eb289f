"""The reader of Haupt et al.'s per-item primitives release: tables, joins and bad input.

Expected counts and values come from the release files themselves, read with pandas/json
one-liners here, never from the reader.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from platinum_jax.importers import (
    ReleaseFileMissingError,
    ReleaseFormatError,
    read_principal_agent_release,
)
from platinum_jax.measured import welfare_from_rankings, welfare_table

RELEASE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / \
    "principal-agent-benchmarks"
KEY = ["task", "doc_id"]


@pytest.fixture(scope="module")
def release():
    if not (RELEASE / "noise.csv").exists():
        pytest.fail("the shared principal-agent release is missing: expected "
                    "shared/data/principal-agent-benchmarks beside the repository checkout")
    return read_principal_agent_release(RELEASE)


def _csv(name):
    return pd.read_csv(RELEASE / name)


def test_tables_match_the_files(release):
    for attr, name in (("noise", "noise.csv"), ("cost", "cost.csv"), ("welfare", "welfare.csv")):
        raw = _csv(name)
        frame = getattr(release, attr)
        assert frame.index.names == KEY
        assert len(frame) == len(raw)
        assert set(frame.columns) == set(raw.columns) - set(KEY)
    noise = _csv("noise.csv").set_index(KEY)
    np.testing.assert_array_equal(release.noise["noise_sigma2"].to_numpy(),
                                  noise["noise_sigma2"].to_numpy())
    for col in ("axis_pt_improving", "axis_sft_improving", "axis_rl_improving"):
        assert release.cost[col].dtype == bool
    assert len(release.concept_scores) == len(_csv("gwa_welfare_scores.csv")) == 27
    assert release.concept_scores["dropped"].dtype == bool
    assert release.concept_scores_mean.index.equals(release.concept_scores.index)
    assert release.exclusions.empty


def test_join_counts(release):
    noise, cost, welfare = (_csv(n)[KEY] for n in ("noise.csv", "cost.csv", "welfare.csv"))
    three = noise.merge(cost, on=KEY).merge(welfare, on=KEY)
    assert len(release.items()) == len(three) == 149
    assert len(release.items(("noise", "welfare"))) == len(noise.merge(welfare, on=KEY)) == 204
    assert len(release.items(("noise", "cost"))) == len(noise.merge(cost, on=KEY)) == 14908
    joined = release.items(("noise", "cost", "welfare", "margins", "topics"))
    assert joined.columns.is_unique
    assert {"noise_sigma2", "noise_subgroup", "cost_min_usd", "cost_beta_pt", "cost_rank_lo",
            "noise_rank_lo", "w_auto", "w_aug", "margin_sigma", "topic"} <= set(joined.columns)


def test_loadings_long_form(release):
    for judge, name in (("claude", "judge_loadings.jsonl"), ("openai", "judge_loadings_openai.jsonl")):
        raw = pd.read_json(RELEASE / name, lines=True)
        mine = release.loadings[release.loadings["judge"] == judge]
        assert len(mine) == raw["ranked_gwa_ids"].map(len).sum()
        first = raw.iloc[0]
        got = mine[(mine["task"] == first["lm_eval_task"]) & (mine["doc_id"] == first["doc_id"])
                   & (mine["perspective"] == first["perspective"])].sort_values("rank")
        assert got["concept_id"].tolist() == first["ranked_gwa_ids"]
        assert got["rank"].tolist() == list(range(1, len(first["ranked_gwa_ids"]) + 1))


def test_heldout_long_form(release):
    folder = RELEASE / "heldout_raters"
    family = json.loads((folder / "family_map.json").read_text())
    total = sum(len(json.loads(line)["ranked_gwa_ids"])
                for p in folder.glob("*.jsonl") for line in p.read_text().splitlines() if line)
    assert len(release.heldout) == total
    assert release.heldout["item"].nunique() == 28
    assert (release.heldout["family"] == release.heldout["item"].map(family)).all()
    assert set(release.heldout["rater"]) == {"A1", "A2", "claude3ex"}


def test_welfare_from_shipped_loadings_is_the_shipped_welfare(release):
    """The release's welfare.csv (six decimals) from the judge rankings and the GWA scores."""
    claude = release.loadings[release.loadings["judge"] == "claude"].drop(columns="judge")
    w = welfare_from_rankings(claude, release.concept_scores,
                              column={"automation": "p_auto_15", "augmentation": "p_aug_15"})
    w = w.unstack("perspective")
    shipped = _csv("welfare.csv").set_index(KEY)
    w = w.reindex(shipped.index)
    np.testing.assert_array_equal(w["automation"].round(6), shipped["w_auto"])
    np.testing.assert_array_equal(w["augmentation"].round(6), shipped["w_aug"])
    table = welfare_table(release.loadings, release.concept_scores).reindex(shipped.index)
    np.testing.assert_array_equal(table.round(6), shipped[["w_auto", "w_aug"]])
    openai = welfare_table(release.loadings, release.concept_scores, judge="openai")
    assert len(openai) == 317 and not openai.equals(table)


# --- bad input, on a small copy of the release ---------------------------------------------

def _small_release(tmp_path: Path, n_welfare: int = 20) -> Path:
    out = tmp_path / "release"
    out.mkdir()
    welfare = _csv("welfare.csv").head(n_welfare)
    welfare.to_csv(out / "welfare.csv", index=False)
    keep = set(map(tuple, welfare[KEY].to_numpy()))
    noise = _csv("noise.csv")
    pd.concat([noise.head(50), noise.merge(welfare[KEY], on=KEY)]).drop_duplicates(KEY).to_csv(
        out / "noise.csv", index=False)
    _csv("cost.csv").head(50).to_csv(out / "cost.csv", index=False)
    shutil.copy(RELEASE / "gwa_welfare_scores.csv", out)
    lines = [line for line in (RELEASE / "judge_loadings.jsonl").read_text().splitlines()
             if (json.loads(line)["lm_eval_task"], json.loads(line)["doc_id"]) in keep]
    (out / "judge_loadings.jsonl").write_text("\n".join(lines) + "\n")
    return out


def test_optional_parts_absent(tmp_path):
    r = read_principal_agent_release(_small_release(tmp_path))
    assert r.margins is None and r.topics is None and r.heldout is None
    assert r.concept_scores_mean is None and set(r.loadings["judge"]) == {"claude"}
    with pytest.raises(ReleaseFileMissingError, match="margins"):
        r.items(("noise", "margins"))


def test_missing_required_files_are_listed(tmp_path):
    root = _small_release(tmp_path)
    (root / "cost.csv").unlink()
    (root / "judge_loadings.jsonl").unlink()
    with pytest.raises(ReleaseFileMissingError, match=r"cost\.csv.*judge_loadings\.jsonl"):
        read_principal_agent_release(root)


@pytest.mark.parametrize("file, column", [
    ("noise.csv", "noise_sigma2"), ("cost.csv", "cost_min_usd"), ("welfare.csv", "w_aug"),
    ("gwa_welfare_scores.csv", "p_auto_15"), ("judge_loadings.jsonl", "ranked_gwa_ids"),
])
def test_renamed_column_names_file_and_column(tmp_path, file, column):
    root = _small_release(tmp_path)
    text = (root / file).read_text()
    (root / file).write_text(text.replace(column, column + "_v2"))
    with pytest.raises(ReleaseFormatError, match=rf"{file}.*{column}"):
        read_principal_agent_release(root)


@pytest.mark.parametrize("file, column, value, n_bad", [
    ("noise.csv", "noise_sigma2", -0.01, 3),
    ("noise.csv", "noise_sigma2", 0.0, 2),
    ("noise.csv", "noise_sigma2", np.nan, 1),
    ("cost.csv", "cost_min_usd", 0.0, 2),
    ("welfare.csv", "w_auto", 12.0, 2),   # above 5·H_5 = 11.42
    ("welfare.csv", "w_aug", -0.5, 1),
])
def test_bad_values_raise_or_are_counted(tmp_path, file, column, value, n_bad):
    root = _small_release(tmp_path)
    frame = pd.read_csv(root / file)
    frame.loc[frame.index[:n_bad], column] = value
    frame.to_csv(root / file, index=False)
    with pytest.raises(ReleaseFormatError, match=rf"{file}: {n_bad} row\(s\).*{column}"):
        read_principal_agent_release(root)
    if file == "welfare.csv":
        return  # an excluded welfare item still has judge rankings; checked below
    r = read_principal_agent_release(root, bad="exclude")
    ex = r.exclusions[(r.exclusions["file"] == file) & (r.exclusions["column"] == column)]
    assert len(ex) == n_bad
    table = {"noise.csv": r.noise, "cost.csv": r.cost}[file]
    assert len(table) == len(frame) - n_bad
    bad_keys = set(map(tuple, frame.head(n_bad)[KEY].to_numpy()))
    assert not bad_keys & set(table.index)


def test_welfare_exclusion_is_recorded(tmp_path):
    root = _small_release(tmp_path)
    frame = pd.read_csv(root / "welfare.csv")
    frame.loc[frame.index[:2], "w_auto"] = 12.0
    frame.to_csv(root / "welfare.csv", index=False)
    r = read_principal_agent_release(root, bad="exclude")
    assert len(r.welfare) == len(frame) - 2
    assert (r.exclusions["column"] == "w_auto").sum() == 2


def test_duplicated_item(tmp_path):
    root = _small_release(tmp_path)
    cost = pd.read_csv(root / "cost.csv")
    pd.concat([cost, cost.head(1)]).to_csv(root / "cost.csv", index=False)
    with pytest.raises(ReleaseFormatError, match=r"cost\.csv: 2 row\(s\).*more than once"):
        read_principal_agent_release(root)
    r = read_principal_agent_release(root, bad="exclude")
    assert len(r.cost) == len(cost) - 1 and len(r.exclusions) == 2
    first = (cost.iloc[0]["task"], int(cost.iloc[0]["doc_id"]))
    assert set(zip(r.exclusions["task"], r.exclusions["doc_id"], strict=True)) == {first}
    assert first not in r.cost.index


def test_heldout_folder_without_its_family_map(tmp_path):
    root = _small_release(tmp_path)
    shutil.copytree(RELEASE / "heldout_raters", root / "heldout_raters")
    (root / "heldout_raters" / "family_map.json").unlink()
    with pytest.raises(ReleaseFileMissingError, match="family_map.json"):
        read_principal_agent_release(root)


def test_failed_judge_call_is_counted_not_dropped_silently(tmp_path):
    root = _small_release(tmp_path)
    lines = (root / "judge_loadings.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["ok"] = False
    lines[0] = json.dumps(rec)
    (root / "judge_loadings.jsonl").write_text("\n".join(lines) + "\n")
    r = read_principal_agent_release(root)
    assert len(r.exclusions) == 1
    assert r.exclusions.iloc[0]["column"] == "ok"
    assert len(r.loadings) == sum(len(json.loads(x)["ranked_gwa_ids"]) for x in lines) \
        - len(rec["ranked_gwa_ids"])


def test_items_that_do_not_join(tmp_path):
    root = _small_release(tmp_path)
    lines = (root / "judge_loadings.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    kept = [x for x in lines if (json.loads(x)["lm_eval_task"], json.loads(x)["doc_id"])
            != (first["lm_eval_task"], first["doc_id"])]
    (root / "judge_loadings.jsonl").write_text("\n".join(kept) + "\n")
    with pytest.raises(ReleaseFormatError, match=r"welfare\.csv: 1 item\(s\) have no ranking"):
        read_principal_agent_release(root)


def test_unknown_gwa_in_rankings(tmp_path):
    root = _small_release(tmp_path)
    text = (root / "judge_loadings.jsonl").read_text()
    (root / "judge_loadings.jsonl").write_text(text.replace('"analyzing_data"',
                                                            '"analysing_data"', 1))
    with pytest.raises(ReleaseFormatError, match="analysing_data"):
        read_principal_agent_release(root)
