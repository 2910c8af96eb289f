"""Bayesian stitching: our NumPyro NUTS against the same model and priors written in PyMC.

Both samplers fit the Gaussian-likelihood stitching model (Winogrande anchor, the default
:class:`Priors`, the same standardised parameterisation) to the Epoch ``scores_long.csv``.
Reported per sampler: the sampler's wall time (compilation included: ``ours_s`` is the NUTS
run inside ``fit_stitching_bayes``, ``baseline_s`` is ``pm.sample``), the minimum bulk ESS over
all free capabilities, difficulties and slopes, and min-ESS per second on those times.
``ours_total_s`` is the whole ``fit_stitching_bayes`` call, which also computes the posterior
predictive, the pointwise log likelihood and the summaries.  PyMC keeps compiled C code in a
disk cache, so its first run in a fresh environment is slower than later ones; ours keeps
compiled XLA programs on disk the same way (``enable_compilation_cache``, as the CLI does;
``--no-cache`` turns it off, and the first run after any change compiles afresh).  Ours also reports the checks
of the real-data target: divergences, max R-hat, min bulk ESS and the Spearman correlation of
posterior-mean capabilities with the MAP fit.

    python benchmarks/bench_bayes.py            # 4 chains x 1500 draws after 1000 warmup
    python benchmarks/bench_bayes.py --quick    # 2 chains x 200 draws after 200 warmup
    python benchmarks/bench_bayes.py --skip-pymc --chain-method sequential

Both use two processor cores: ours runs the chains side by side on one JAX host device each
(``use_cpu_devices_for_chains``), PyMC in two worker processes.  Both get the same warmup
length and target acceptance; each keeps its own default mass-matrix adaptation (ours: full
dense; PyMC: diagonal).  Ours gives every benchmark its own noise scale here
(``pooled_below=0``), as the PyMC model does.  The PyMC model is
written out like ``RosettaBayes`` (``platinum_jax.models.rosetta``): standardised
capabilities, intercept-form difficulties, the scale derived from the anchor benchmark, centred
log noise scales.

PyMC is in the ``bench`` extra (``pip install -e ".[bench]"``).  The last lines are JSON, one
per case: name, ours_s, baseline_s, ratio (= baseline_s / ours_s), max_abs_diff (largest gap
between the two posterior-mean capabilities) and the ESS figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

DATA = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "data"
    / "epoch-benchmark-stitching"
    / "scores_long.csv"
)


def _min_ess(idata, names=("capability", "difficulty", "slope")):
    import arviz as az

    post = idata.posterior
    ess = az.ess(post[list(names)], method="bulk")
    sd = post[list(names)].std(("chain", "draw"))
    vals = [ess[n].values[sd[n].values > 0] for n in names]  # anchored entries are constant
    return float(np.min(np.concatenate(vals)))


def run_ours(table, args):
    from platinum_jax.stitching import fit_stitching_bayes

    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = fit_stitching_bayes(
            table,
            chains=args.chains,
            samples=args.samples,
            warmup=args.warmup,
            seed=args.seed,
            chain_method=args.chain_method,
            target_accept=args.target_accept,
            pooled_below=0,  # every benchmark its own noise scale, as in the PyMC model
        )
    wall = time.perf_counter() - start
    for w in caught:
        if "SamplingWarning" in type(w.message).__name__:
            print(f"  ours: {w.message}", file=sys.stderr)
    return fit, wall


def run_pymc(table, args):
    try:
        import pymc as pm
        import pytensor.tensor as pt
    except ImportError as exc:  # the bench extra is optional
        raise SystemExit(
            "bench_bayes.py needs PyMC for the baseline: pip install -e '.[bench]' "
            f"(or pip install pymc), or pass --skip-pymc ({exc})"
        ) from exc
    from platinum_jax.models.rosetta import BenchmarkAnchor, ParameterLayout, Priors

    pr = Priors()
    layout = ParameterLayout.from_table(table, BenchmarkAnchor())
    free_c, free_d, free_s = layout.free_positions()
    mi = np.asarray(table.model_index)
    bi = np.asarray(table.benchmark_index)
    y = np.asarray(table.scores)
    se = table.data["stderr"].to_numpy(dtype=float, na_value=np.nan)
    se2 = np.nan_to_num(np.where(se < 0.005, 0.005, se)) ** 2  # our model's stderr floor
    k = layout.fixed_difficulty[0]
    alpha_a, d_a = layout.fixed_slope_values[0], layout.fixed_difficulty_values[0]
    # zbar_b = W @ z: mean standardised capability of the models scored on benchmark b
    counts = np.zeros((layout.n_benchmarks, layout.n_models))
    np.add.at(counts, (bi, mi), 1.0)
    W = counts / counts.sum(1, keepdims=True)

    def fill(n, free_idx, free_vals, fixed_idx, fixed_vals):
        out = pt.zeros(n)
        out = pt.set_subtensor(out[free_idx], free_vals)
        if fixed_idx:
            out = pt.set_subtensor(out[list(fixed_idx)], np.asarray(fixed_vals))
        return out

    with pm.Model():
        # The same standardised, intercept-form model as RosettaBayes (benchmark anchor).
        z_c = pm.ZeroSumNormal("capability_z", sigma=1.0, shape=layout.n_free_capability)
        beta = pm.Normal("intercept", pr.intercept_loc, pr.intercept_scale,
                         shape=layout.n_free_difficulty)
        z_s = pm.Normal("slope_z", 0.0, 1.0, shape=layout.n_free_slope)
        beta_a = pm.Normal("anchor_intercept", pr.intercept_loc, pr.intercept_scale)
        v_a = pm.Normal("anchor_slope_z", 0.0, 1.0)
        tau_c = pt.exp(pr.log_slope_loc + pr.log_slope_scale * v_a) / alpha_a
        z_bar = pt.dot(W, z_c)
        mu_c = d_a - tau_c * z_bar[k] + beta_a / alpha_a
        pm.Deterministic("capability_tau", tau_c)
        pm.Deterministic("capability_mu", mu_c)
        cap = fill(layout.n_models, free_c, mu_c + tau_c * z_c, (), ())
        slope = fill(
            layout.n_benchmarks,
            free_s,
            pt.exp(pr.log_slope_loc + pr.log_slope_scale * z_s) / tau_c,
            layout.fixed_slope,
            layout.fixed_slope_values,
        )
        std_slope = (slope * tau_c)[free_d]
        diff = fill(
            layout.n_benchmarks,
            free_d,
            mu_c + tau_c * (z_bar[free_d] - beta / std_slope),
            layout.fixed_difficulty,
            layout.fixed_difficulty_values,
        )
        pm.Deterministic("capability", cap)
        pm.Deterministic("difficulty", diff)
        pm.Deterministic("slope", slope)
        nu = pm.Normal("noise_log_mu", pr.log_noise_loc, pr.log_noise_loc_scale)
        spread = pm.LogNormal("noise_log_tau", np.log(pr.log_noise_spread), pr.log_noise_spread_sd)
        log_sigma = pm.Normal("noise_log_sigma", nu, spread, shape=layout.n_benchmarks)
        sigma = pt.exp(log_sigma)
        mean = pm.math.sigmoid(slope[bi] * (cap[mi] - diff[bi]))
        pm.Normal("y", mean, pt.sqrt(sigma[bi] ** 2 + se2), observed=y)
        start = time.perf_counter()
        idata = pm.sample(
            draws=args.samples,
            tune=args.warmup,
            chains=args.chains,
            cores=min(args.chains, 2),
            target_accept=args.target_accept,
            random_seed=args.seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
        wall = time.perf_counter() - start
    return idata, wall


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="2 chains x 200 draws after 200 warmup")
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--samples", type=int, default=1500)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--chain-method", default="auto", help="auto | vectorized | sequential | parallel"
    )
    p.add_argument("--target-accept", type=float, default=0.99, help="NUTS target acceptance")
    p.add_argument("--skip-pymc", action="store_true", help="time our sampler only")
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="compile from scratch (by default both sides keep compiled code on disk)",
    )
    args = p.parse_args(argv)
    if args.quick:
        args.chains, args.samples, args.warmup = 2, 200, 200


    from platinum_jax._runtime import enable_float64

    enable_float64()
    if args.chain_method in ("auto", "parallel"):
        from platinum_jax.inference import use_cpu_devices_for_chains

        # One host device per chain, as the CLI does: the chains run side by side on the cores.
        use_cpu_devices_for_chains(args.chains)
    if not args.no_cache:
        from platinum_jax import enable_compilation_cache

        enable_compilation_cache()  # as the CLI does; PyMC's compiled C code is cached too
    from scipy.stats import spearmanr

    from platinum_jax.data import ScoreTable
    from platinum_jax.stitching import fit_stitching

    if not DATA.exists():
        raise SystemExit(f"the Epoch data is missing: expected {DATA.name} in ../shared/data/")
    table = ScoreTable.from_csv(DATA)
    if not args.skip_pymc:
        try:
            import pymc  # noqa: F401
        except ImportError as exc:
            raise SystemExit(
                "bench_bayes.py needs PyMC for the baseline: pip install -e '.[bench]' "
                f"(or pip install pymc), or pass --skip-pymc ({exc})"
            ) from exc
    print(
        f"{table!r}; {args.chains} chains x {args.samples} draws after {args.warmup} warmup",
        file=sys.stderr,
    )
    fit, ours_s = run_ours(table, args)
    map_fit = fit_stitching(table)
    rho = spearmanr(
        fit.capabilities["mean"].reindex(map_fit.capabilities.index),
        map_fit.capabilities["capability"],
    ).statistic
    ours_ess = _min_ess(fit.idata)
    d = fit.diagnostics
    # Like for like with pm.sample: the sampler's wall time, compilation included.  The full call
    # also builds the InferenceData with posterior predictive, log likelihood and summaries.
    ours_sampling_s = float(d["seconds"])
    record = {
        "name": f"stitch_nuts_gaussian_{args.chains}x{args.samples}",
        "ours_s": round(ours_sampling_s, 2),
        "ours_total_s": round(ours_s, 2),
        "ours_min_ess_bulk": round(ours_ess, 1),
        "ours_ess_per_s": round(ours_ess / ours_sampling_s, 2),
        "divergences": d["divergences"],
        "max_r_hat": round(d["rhat_max"], 4),
        "spearman_vs_map": round(float(rho), 4),
        "chain_method": fit.diagnostics.get("chain_method"),
        "compile_cache": not args.no_cache,
    }
    if args.skip_pymc:
        record.update(baseline_s=None, ratio=None, max_abs_diff=None)
    else:
        idata_pm, base_s = run_pymc(table, args)
        base_ess = _min_ess(idata_pm)
        ours_c = fit.idata.posterior["capability"].mean(("chain", "draw")).values
        base_c = idata_pm.posterior["capability"].mean(("chain", "draw")).values
        record.update(
            baseline_s=round(base_s, 2),
            ratio=round(base_s / ours_sampling_s, 3),
            max_abs_diff=float(np.max(np.abs(ours_c - base_c))),
            baseline_sampling_only_s=round(
                float(idata_pm.sample_stats.attrs.get("sampling_time", np.nan)), 2
            ),
            baseline_min_ess_bulk=round(base_ess, 1),
            baseline_ess_per_s=round(base_ess / base_s, 2),
            ess_per_s_ratio=round((ours_ess / ours_sampling_s) / (base_ess / base_s), 3),
        )
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
