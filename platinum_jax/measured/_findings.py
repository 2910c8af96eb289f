"""Every artifact of Haupt, Hartenstein, Reuel, Kochenderfer and Koyejo, "Welfare,
Improvability, and Noise: A Principal–Agent Theory of Optimal Benchmark Item Aggregation", from
their release in one call: :func:`compute_findings` returns the tables, :func:`reproduce_findings`
also writes them (CSV), their figures (PNG) and ``summary.json`` into a directory.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from platinum_jax.measured._findings_tables import (
    cost_quantile_table,
    noise_decomposition,
    noise_quantile_table,
)
from platinum_jax.measured._findings_welfare import (
    concept_quadrants,
    heldout_rater_check,
    welfare_frontier,
    welfare_robustness,
)
from platinum_jax.measured._welfare import welfare_table

__all__ = ["Findings", "compute_findings", "reproduce_findings", "ARTIFACTS"]

# artifact -> (release attributes it needs, the file each comes from)
ARTIFACTS = {
    "table1": {"cost": "cost.csv", "topics": "item_topics.csv"},
    "table2": {"noise": "noise.csv", "topics": "item_topics.csv"},
    "table4": {"margins": "item_margins.parquet"},
    "figure2": {"concept_scores": "gwa_welfare_scores.csv", "loadings": "judge_loadings.jsonl"},
    "figure3": {"welfare": "welfare.csv"},
    "robustness_set1": {"concept_scores_mean": "gwa_welfare_scores_mean.csv",
                        "openai": "judge_loadings_openai.jsonl"},
    "robustness_set2": {"heldout": "heldout_raters/"},
}


@dataclass(frozen=True)
class Findings:
    """The reproduced artifacts. ``tables``: file stem -> labelled frame (``table1_cost_
    quantiles``, ``figure3_family_gap``, ...); ``results``: artifact -> the finding function's
    result (for the plots); ``summary``: the headline figures, JSON-ready; ``skipped``:
    artifact -> why it was not made."""

    tables: dict[str, pd.DataFrame]
    results: dict[str, object]
    summary: dict
    skipped: dict[str, str] = field(default_factory=dict)


def _absent(release, artifact) -> list[str]:
    def missing(attr):
        if attr == "openai":  # the second judge's rankings sit in release.loadings
            return not (release.loadings["judge"] == "openai").any()
        return getattr(release, attr) is None

    return [f for attr, f in ARTIFACTS[artifact].items() if missing(attr)]


def _json_ready(value):
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def compute_findings(release, *, allow_missing: bool = False, n_resamples: int = 10_000,
                     seed: int = 42) -> Findings:
    """All artifacts from a :class:`~platinum_jax.importers.PrincipalAgentRelease` (or its
    directory).

    Args:
        release: the release, or the path of its ``data/`` folder.
        allow_missing: an artifact whose optional input file is absent is an error naming the
            file (default) or, when True, skipped and listed in ``Findings.skipped``.
        n_resamples, seed: Figure 3's cluster bootstrap and permutation (the paper: 10,000,
            seed 42; at least 100, :func:`~platinum_jax.measured.welfare_frontier`).
    """
    if isinstance(release, str | os.PathLike):
        from platinum_jax.importers import read_principal_agent_release

        release = read_principal_agent_release(release)
    skipped = {a: f"missing {', '.join(_absent(release, a))}" for a in ARTIFACTS
               if _absent(release, a)}
    if skipped and not allow_missing:
        lines = "; ".join(f"{a} needs {why[len('missing '):]}" for a, why in skipped.items())
        raise FileNotFoundError(f"{release.directory}: {lines}. Add the file(s) to the release "
                                "directory, or pass allow_missing=True (--allow-missing) to "
                                "skip those artifacts")
    tables, results, summary = {}, {}, {}
    summary["items"] = {"noise": len(release.noise), "cost": len(release.cost),
                        "welfare": len(release.welfare),
                        "noise_cost_welfare": len(release.items())}
    summary["exclusions_on_reading"] = len(release.exclusions)
    if "table1" not in skipped:
        t1 = tables["table1_cost_quantiles"] = cost_quantile_table(release.cost, release.topics)
        summary["table1"] = {f"{q:.0%}": float(t1.loc[t1["quantile"] == q, "cost_lift_usd"]
                                                .median()) for q in pd.unique(t1["quantile"])}
    if "table2" not in skipped:
        t2 = tables["table2_noise_quantiles"] = noise_quantile_table(release.noise,
                                                                     release.topics)
        summary["table2"] = {f"{q:.0%}": float(t2.loc[t2["quantile"] == q, "sigma_hat"]
                                                .median()) for q in pd.unique(t2["quantile"])}
    notes = []  # what could not be computed from legitimate input, and why
    if "table4" not in skipped:
        t4 = tables["table4_noise_decomposition"] = noise_decomposition(release.margins)
        summary["table4"] = t4.round(3).to_dict(orient="index")
        for fam, row in t4.iterrows():
            if row["n_won"] == 0:
                notes.append(f"table4 {fam}: no item with p-hat > 0.5, so no median "
                             "gold/runner-up ratio of won items")
            if np.isnan(row["r_margin_z"]):
                notes.append(f"table4 {fam}: {int(row['n'])} items, too few for the margin-Z "
                             "correlation (30 or more)")
    if "figure2" not in skipped:
        cq = results["figure2"] = concept_quadrants(release.concept_scores, release.loadings)
        tables["figure2_gwa_quadrants"] = cq.concepts
        tables["figure2_quadrant_loading"] = cq.quadrants
        summary["figure2"] = {
            f"{p}_{q}_slot_share_pct": round(float(v), 2)
            for (p, q), v in cq.quadrants["slot_share_pct"].items()}
    if "figure3" not in skipped:
        wf = results["figure3"] = welfare_frontier(release.welfare, n_resamples=n_resamples,
                                                   seed=seed)
        tables["figure3_welfare_items"] = wf.items
        tables["figure3_family_gap"] = wf.axes
        summary["figure3"] = {**wf.headline, **{
            f"{axis}_{k}": float(wf.axes.loc[axis, k]) for axis in wf.axes.index
            for k in ("gap_general_minus_math", "gap_ci_lo", "gap_ci_hi",
                      "cluster_permutation_p")}}
        # The headline welfare recomputed from the judge's rankings, against welfare.csv.
        again = welfare_table(release.loadings, release.concept_scores)
        diff = (release.welfare[["w_auto", "w_aug"]] - again.reindex(release.welfare.index))
        summary["figure3"]["welfare_recomputed_max_abs_diff"] = float(diff.abs().max().max())
    if "robustness_set1" not in skipped:
        rs = tables["robustness_set1"] = welfare_robustness(
            release.loadings, release.concept_scores, release.concept_scores_mean)
        summary["robustness_set1"] = rs.round(3).to_dict(orient="index")
        if rs.attrs.get("skipped"):
            skipped["robustness_set1 variants"] = ", ".join(rs.attrs["skipped"])
        if rs.attrs.get("items_without_welfare"):  # left out of that variant's comparison
            summary["robustness_set1_items_without_welfare"] = rs.attrs["items_without_welfare"]
    if "robustness_set2" not in skipped:
        hc = results["robustness_set2"] = heldout_rater_check(release.heldout,
                                                              release.concept_scores)
        tables["robustness_set2_loading_mass"] = hc.loading_mass
        tables["robustness_set2_gaps"] = hc.gaps
        summary["robustness_set2"] = hc.gaps[["gap_w_auto", "gap_w_aug", "frontier_n_math",
                                              "pct_math_dominated"]].round(3).to_dict("index")
        without = hc.gaps.loc[hc.gaps["n_without_welfare"] > 0, "items_without_welfare"]
        if len(without):  # left out of that rater's comparison, on record
            summary["robustness_set2_items_without_welfare"] = without.to_dict()
        for rater, row in hc.gaps.iterrows():
            if row["n_without_welfare"]:
                notes.append(f"robustness set 2, rater {rater}: {row['n_without_welfare']} "
                             "item(s) have no welfare on both axes (ranked from one "
                             "perspective only, or on dropped concepts only) and are left out "
                             f"of its comparison: {row['items_without_welfare']}")
            none = [f for f in ("math", "general") if row[f"n_{f}"] == 0]
            if none:
                notes.append(f"robustness set 2, rater {rater}: no {' and no '.join(none)} "
                             "items among the held-out items, so its math-general welfare "
                             "gaps and % of math items dominated cannot be computed")
    summary["settings"] = {"n_resamples": n_resamples, "seed": seed}
    summary["skipped"] = skipped
    summary["notes"] = notes
    return Findings(tables, results, _json_ready(summary), skipped)


def _figures(findings: Findings) -> dict[str, bytes]:
    """Every PNG rendered in memory, so that a failing figure writes nothing."""
    from platinum_jax.measured import _findings_plots as fp

    todo = {}
    t = findings.tables
    if "table1_cost_quantiles" in t:
        todo["table1_cost_quantiles.png"] = lambda f: fp.plot_quantile_bands(
            t["table1_cost_quantiles"], f, value="cost_lift_usd",
            value_label="dollars for a 0.10 lift of p̂ (cheapest axis)",
            title="Table 1: cost-ranking quantile bands")
    if "table2_noise_quantiles" in t:
        todo["table2_noise_quantiles.png"] = lambda f: fp.plot_quantile_bands(
            t["table2_noise_quantiles"], f, value="sigma_hat", value_label="σ̂ (across seeds)",
            title="Table 2: noise-ranking quantile bands")
    if "table4_noise_decomposition" in t:
        todo["table4_noise_decomposition.png"] = lambda f: fp.plot_noise_decomposition(
            t["table4_noise_decomposition"], f)
    r = findings.results
    if "figure2" in r:
        todo["figure2_gwa_quadrants.png"] = lambda f: fp.plot_concept_quadrants(r["figure2"], f)
    if "figure3" in r:
        todo["figure3_pareto_frontier.png"] = lambda f: fp.plot_welfare_frontier(r["figure3"], f)
    if "robustness_set1" in t and len(t["robustness_set1"]):
        todo["robustness_set1.png"] = lambda f: fp.plot_welfare_robustness(
            t["robustness_set1"], f)
    if "robustness_set2" in r:
        todo["robustness_set2.png"] = lambda f: fp.plot_heldout_check(r["robustness_set2"], f)
    out = {}
    for name, draw in todo.items():
        buf = io.BytesIO()
        draw(buf)
        out[name] = buf.getvalue()
    return out


def reproduce_findings(release, out_dir, *, overwrite: bool = False, allow_missing: bool = False,
                       n_resamples: int = 10_000, seed: int = 42) -> Findings:
    """:func:`compute_findings`, then write each table as ``<name>.csv``, each figure as PNG
    and ``summary.json`` into ``out_dir``.

    Everything is computed and rendered before the directory is touched, and each file is
    written under a temporary name and renamed into place, so a failed run leaves no partial
    result. ``out_dir`` must be empty unless ``overwrite`` replaces an earlier run's files.
    """
    from platinum_jax._outputs import output_directory

    findings = compute_findings(release, allow_missing=allow_missing, n_resamples=n_resamples,
                                seed=seed)
    pngs = _figures(findings)
    csvs = {f"{name}.csv": frame.to_csv(index=not isinstance(frame.index, pd.RangeIndex))
            for name, frame in findings.tables.items()}
    with output_directory(out_dir, "findings", overwrite=overwrite) as out:
        for name, text in csvs.items():
            out.write_text(name, text)
        for name, data in pngs.items():
            out.write(name, lambda p, d=data: Path(p).write_bytes(d))
        out.write_text("summary.json", json.dumps(findings.summary, indent=2) + "\n")
    return findings
