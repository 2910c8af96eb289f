"""Simulation-based calibration (Talts et al. 2018) of the Bayesian stitching model.

Worlds shaped like the Epoch data (180 models x 40 benchmarks, about 1,300 sparse scores,
standard errors on about 30% of the benchmarks; ``--quick``: 40 x 8, 250 scores): parameters
from the prior, scores from the model, one NUTS chain per world with the package's default
mass matrix, draws thinned to about independence.  For each parameter group (capabilities,
difficulties, slopes, per-benchmark noise scales, hyper-parameters) it reports p-values of
uniform ranks and the coverage of the central 50% and 90% intervals, writes the rank
histograms to ``--plot`` (PNG) and the ranks to ``--csv``, and ends with one JSON line per
group: name, coverage_50, coverage_90, chi2_p, ks_p, world_t2_p, ks_p_one_per_world, n_ranks.

Which p-value to read: the entries of one world share its data and its scale (180
capabilities move together when the world's shift of the scale is mis-estimated), so the
pooled chi-square and KS tests, which treat every rank as independent, reject a calibrated
sampler once a group has many entries per world. ``world_t2_p`` (Hotelling's T² on each
world's rank-bin shares, the world as the unit) and ``ks_p_one_per_world`` (one random entry
per world) are the valid tests; see :func:`platinum_jax.inference.rank_uniformity`.

Also with ``--loo``: posterior-predictive calibration on the real ``scores_long.csv`` by PSIS
leave-one-out (ArviZ): the share of held-out scores inside their 50% and 90% LOO-PIT intervals,
and the Pareto-k diagnostics.  This is no timing benchmark; there is no baseline.

    python benchmarks/bench_sbc.py --worlds 100 --plot sbc_ranks.png   # target 0.95, 600 + 1,000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "epoch-benchmark-stitching"


def _write_atomic(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=path.suffix)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def plot_ranks(result, summary, path: Path, bins: int = 20) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from scipy import stats

    groups = list(summary.index)
    fig, axes = plt.subplots(1, len(groups), figsize=(3.2 * len(groups), 3.0), squeeze=False)
    for ax, group in zip(axes[0], groups, strict=True):
        part = result[result["group"] == group]
        L = int(part["n_draws"].iloc[0])
        edges = np.linspace(0, L + 1, bins + 1)
        ax.hist(part["rank"], bins=edges, color="C0", alpha=0.8)
        n = len(part)
        expect = n / bins
        lo, hi = stats.binom.ppf([0.005, 0.995], n, 1.0 / bins)  # 99% band for one bin
        ax.axhspan(lo, hi, color="0.8", zorder=0)
        ax.axhline(expect, color="k", lw=0.8)
        row = summary.loc[group]
        ax.set_title(
            f"{group} (n={n})\nworld T² p={row['world_t2_p']:.2f}, "
            f"90% cov. {row['coverage_90']:.0%}",
            fontsize=8,
        )
        ax.set_xlabel(f"rank of the truth among {L} draws", fontsize=7)
        ax.tick_params(labelsize=7)
    fig.suptitle("Simulation-based calibration of stitch-bayes (grey: 99% band per bin)", fontsize=9)
    fig.tight_layout()
    _write_atomic(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)


def loo_coverage(samples: int, chains: int) -> dict:
    """PSIS-LOO predictive intervals of every real score (leave-one-out, importance sampled)."""
    import warnings

    import arviz as az
    import numpy as np

    from platinum_jax.data import ScoreTable
    from platinum_jax.stitching import fit_stitching_bayes

    table = ScoreTable.from_csv(DATA / "scores_long.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_stitching_bayes(table, chains=chains, samples=samples)
        pit = az.loo_pit(fit.idata, y="y").values  # P(y_rep <= y_obs | all other scores)
        loo = az.loo(fit.idata, pointwise=True)
    k = np.asarray(loo.pareto_k)
    return {
        "name": "loo_pit_scores_long",
        "coverage_50": float(np.mean(np.abs(pit - 0.5) <= 0.25)),
        "coverage_90": float(np.mean(np.abs(pit - 0.5) <= 0.45)),
        "n_scores": int(len(pit)),
        "pareto_k_above_0.7": int(np.sum(k > 0.7)),
        "elpd_loo": float(loo.elpd_loo),
        "fit_diagnostics": {k: v for k, v in fit.diagnostics.items() if not k.startswith("worst")},
    }


#: the Bayesian Rosetta model's sites by kind of parameter (sigma: the likelihood's derived
#: noise scale, which run_sbc ranks by default)
GROUPS = {"capability": "capability", "difficulty": "difficulty", "slope": "slope",
          "sigma": "noise scale", "noise_log_mu": "hyper-parameter",
          "noise_log_tau": "hyper-parameter", "capability_mu": "hyper-parameter",
          "capability_tau": "hyper-parameter"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=60, help="simulated worlds (default 60)")
    parser.add_argument("--quick", action="store_true", help="small worlds (40 x 8, 250 scores)")
    parser.add_argument("--warmup", type=int, default=600)
    parser.add_argument("--target-accept", type=float, default=None,
                        help="NUTS target acceptance (default: the Bayesian Rosetta model's "
                             "own, as stitch-bayes and fit --model rosetta_bayes use)")
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--thin", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", type=Path, default=Path("sbc_ranks.png"))
    parser.add_argument("--csv", type=Path, default=None, help="write every rank here")
    parser.add_argument("--loo", action="store_true", help="also PSIS-LOO on scores_long.csv")
    args = parser.parse_args()
    if args.worlds < 2 or args.samples < args.thin or args.thin < 1:
        sys.exit("need --worlds >= 2 and --samples >= --thin >= 1")


    from platinum_jax._runtime import enable_float64

    enable_float64()
    from platinum_jax.inference import rank_uniformity, run_sbc, sbc_design
    from platinum_jax.models import RosettaBayes
    from platinum_jax.models.rosetta import BenchmarkAnchor

    design = sbc_design(40, 8, 250, seed=args.seed) if args.quick else sbc_design(seed=args.seed)
    model = RosettaBayes.with_likelihood("gaussian", anchor=BenchmarkAnchor(design.items[0]))
    print(
        f"design: {design.n_subjects} models x {design.n_items} benchmarks, "
        f"{design.n_responses} scores, {int((design.se > 0).sum())} with a stderr; "
        f"{args.worlds} worlds, {args.warmup} + {args.samples} steps, thinned by {args.thin}",
        flush=True,
    )
    target = (model.nuts_settings["target_accept"] if args.target_accept is None
              else args.target_accept)
    print(f"target acceptance {target}", flush=True)
    start = time.perf_counter()

    def progress(done, total, n_div):
        print(f"  world {done}/{total}: {n_div} divergences, "
              f"{time.perf_counter() - start:.0f} s", flush=True)

    result = run_sbc(
        model, design, args.worlds, warmup=args.warmup, samples=args.samples, thin=args.thin,
        seed=args.seed, progress=progress, mass="lowrank", target_accept=target,
        groups=GROUPS,
    )
    summary = rank_uniformity(result)
    print(summary.round(3).to_string())
    worlds_div = result.groupby("world")["divergences"].first()
    print(f"divergences: {int(worlds_div.sum())} in {int((worlds_div > 0).sum())} of "
          f"{args.worlds} worlds; {time.perf_counter() - start:.0f} s in all")
    plot_ranks(result, summary, args.plot)
    print(f"rank histograms: {args.plot}")
    if args.csv is not None:
        _write_atomic(args.csv, lambda tmp: result.to_csv(tmp, index=False))
    for group, row in summary.iterrows():
        print(json.dumps({"name": f"sbc_{group.replace(' ', '_')}",
                          "coverage_50": round(row["coverage_50"], 4),
                          "coverage_90": round(row["coverage_90"], 4),
                          "chi2_p": round(row["chi2_p"], 4), "ks_p": round(row["ks_p"], 4),
                          "world_t2_p": round(row["world_t2_p"], 4),
                          "ks_p_one_per_world": round(row["ks_p_one_per_world"], 4),
                          "n_ranks": int(row["n_ranks"])}))
    if args.loo:
        print(json.dumps(loo_coverage(samples=1000, chains=4)))


if __name__ == "__main__":
    main()
