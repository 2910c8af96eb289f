"""The Bayesian Rosetta model sampled by ours, by nutpie and by PyMC's own NUTS, side by side.

One model: :class:`~platinum_jax.models.RosettaBayes` with its defaults (Winogrande anchor, the
default :class:`~platinum_jax.models.rosetta.Priors`, the Gaussian noise pooled below 30 scores
and centred from 30, known standard errors floored at 0.005), on Epoch's ``scores_long.csv`` and
on its ``raw/`` directory. The peers sample the same model written in PyMC from the arrays our
data preparation produces (the same rows, standard errors, pooled, centred and non-centred
benchmarks; the capabilities in our polar coordinates: z = |z| u / |u| with the length of u on
a thin shell), and the check is that the posteriors agree: every posterior mean of C_m, D_b and
alpha_b within 0.1 posterior sd of ours, and every sd within 10%.

Per run: wall and CPU seconds (the process and its children, compilation included: ours the
whole ``fit_stitching_bayes``, with the posterior predictive, the pointwise log likelihood and
the summary, and apart the sampler alone, its set-up, compiling and chains; nutpie its
compilation and ``nutpie.sample``; PyMC ``pm.sample``),
min bulk and tail ESS over every variable of the posterior that varies, max R-hat, divergences,
leapfrog steps a draw and min-ESS per CPU-second. Ours runs first with its defaults and then a
warm-started refit (the adapted step size and mass matrix of the first fit, a fifth of the
warm-up). nutpie: its defaults, its gradient-based diagonal with 1,000 + 3,000 draws, and its
low-rank mass matrix at target 0.9 with 1,000 + 1,500 draws (the settings tried when the
comparison was set up). The peers are the ``bench`` extra (``pip install -e '.[bench]'``):
PyMC and nutpie 0.16.8.

Our fits compile into the package's program cache (:func:`platinum_jax.enable_compilation_cache`),
so a second run of the same shapes loads its programs: ``compile_s`` in our lines says which
happened. For a run with our programs compiled afresh, point ``PLATINUM_JAX_CACHE`` at an empty
directory (``docs/benchmarks.md`` records both).

    python benchmarks/bench_bayes.py                     # scores_long.csv and raw/, every peer
    python benchmarks/bench_bayes.py --quick             # scores_long.csv, short runs
    python benchmarks/bench_bayes.py --tables csv --skip pymc

The last lines are JSON, one per (table, peer): name, ours_s, baseline_s (CPU seconds), ratio
(our min-ESS per CPU-second over the peer's), max_abs_diff (largest gap between the posterior
means of C_m, D_b and alpha_b, in posterior sds of ours) and the figures above.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "epoch-benchmark-stitching"
NAMED = ("capability", "difficulty", "slope")


def _cpu() -> float:
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class Clock:
    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), _cpu()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, _cpu() - self.cpu


def _stats(idata, wall: float, cpu: float) -> dict:
    """Convergence over every variable that varies, and the cost."""
    import arviz as az

    post = idata.posterior
    names = [v for v in post.data_vars if post[v].ndim >= 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sd = post[names].std(("chain", "draw"))
        vary = {v: sd[v].values.reshape(-1) > 1e-12 for v in names}
        bulk = az.ess(post[names], method="bulk")
        tail = az.ess(post[names], method="tail")
        rhat = az.rhat(post[names])

    def worst(ds, fn):
        return fn(np.concatenate([np.asarray(ds[v].values).reshape(-1)[vary[v]] for v in names
                                  if vary[v].any()]))

    ss = idata.sample_stats
    steps = ss["n_steps"] if "n_steps" in ss else ss.get("tree_size", ss.get("n_steps"))
    div = ss["diverging"] if "diverging" in ss else ss["divergences"]
    ess_bulk, ess_tail = worst(bulk, np.min), worst(tail, np.min)
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "ess_bulk_min": round(float(ess_bulk), 1), "ess_tail_min": round(float(ess_tail), 1),
            "rhat_max": round(float(worst(rhat, np.max)), 4),
            "divergences": int(np.asarray(div.values).sum()),
            "steps_per_draw": round(float(np.asarray(steps.values).mean()), 1),
            "min_ess_per_cpu_s": round(float(min(ess_bulk, ess_tail)) / cpu, 2)}


def _agreement(ours, theirs) -> dict:
    """Posterior means of C, D, alpha against ours in units of our posterior sd, and the sds'
    ratio. ``agree``: every mean within 0.1 sd, and every sd within 10% or, where the two
    runs' estimates of it are themselves that uncertain, within 4 of their combined Monte Carlo
    standard errors (sd / sqrt(2 ESS), the normal approximation: a heavy-tailed coordinate's sd
    from about 1,000 effective draws varies by more than 10% between two runs of one
    sampler)."""
    import arviz as az

    gaps, ratios, ok_sd = [], [], []
    for v in NAMED:
        a, b = ours.posterior[v], theirs.posterior[v]
        sd_a = a.std(("chain", "draw")).values.reshape(-1)
        sd_b = b.std(("chain", "draw")).values.reshape(-1)
        free = sd_a > 1e-12
        mean_gap = np.abs(a.mean(("chain", "draw")).values.reshape(-1)
                          - b.mean(("chain", "draw")).values.reshape(-1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ess_a = np.asarray(az.ess(ours.posterior[[v]], method="bulk")[v]).reshape(-1)
            ess_b = np.asarray(az.ess(theirs.posterior[[v]], method="bulk")[v]).reshape(-1)
        # the Monte Carlo standard error of an sd from n effective draws, about sd / sqrt(2 n)
        se_a, se_b = sd_a / np.sqrt(2 * ess_a), sd_b / np.sqrt(2 * ess_b)
        close = (np.abs(sd_b / np.where(free, sd_a, 1.0) - 1) <= 0.1) | \
            (np.abs(sd_a - sd_b) <= 4 * np.hypot(se_a, se_b))
        gaps.append(mean_gap[free] / sd_a[free])
        ratios.append(sd_b[free] / sd_a[free])
        ok_sd.append(close[free])
    gaps, ratios, ok_sd = np.concatenate(gaps), np.concatenate(ratios), np.concatenate(ok_sd)
    return {"max_abs_diff": round(float(gaps.max()), 3),
            "sd_ratio_min": round(float(ratios.min()), 3),
            "sd_ratio_max": round(float(ratios.max()), 3),
            "agree": bool(gaps.max() <= 0.1 and ok_sd.all())}


def run_ours(table, args, *, warm_start=None, warmup=None):
    from platinum_jax.stitching import fit_stitching_bayes

    with Clock() as c, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_stitching_bayes(table, seed=args.seed, warm_start=warm_start, warmup=warmup,
                                  **({"samples": args.samples} if args.samples else {}))
    out = _stats(fit.idata, c.wall, c.cpu)
    d = fit.diagnostics
    sampler = float(d.get("sampler_cpu_seconds", np.nan))
    out.update(sampler_cpu_s=round(sampler, 1),
               sampler_min_ess_per_cpu_s=round(min(out["ess_bulk_min"], out["ess_tail_min"])
                                               / sampler, 2),
               compile_s=round(float(d.get("compile_seconds", np.nan)), 1),
               warmup=int(d["warmup"]), samples=int(d["samples"]), chains=int(d["chains"]))
    return fit, out


def pymc_model(table):
    """The Bayesian Rosetta model in PyMC, on the arrays of our data preparation."""
    import pymc as pm
    import pytensor.tensor as pt

    from platinum_jax.models.rosetta import Priors
    from platinum_jax.models.rosetta._pooled import pooled_noise_masks
    from platinum_jax.stitching import stitching_problem

    problem, _ = stitching_problem(table)
    rep = problem.model.reparameterise(problem.table)
    t = problem.table
    pr = Priors()
    masks = pooled_noise_masks(t, 30, 30)
    pooled, centred = np.asarray(masks["pooled"]), np.asarray(masks["centred"])
    offset = ~pooled & ~centred
    mi, bi, y = np.asarray(t.subject_index), np.asarray(t.item_index), np.asarray(t.response)
    se2 = np.zeros_like(y) if t.se is None else np.asarray(t.se) ** 2
    free_c, free_d, free_s = (np.asarray(x) for x in (rep.free_capability, rep.free_difficulty,
                                                      rep.free_slope))
    k = rep.anchor_benchmark
    alpha_a, d_a = float(rep.fixed_slope[k]), float(rep.fixed_difficulty[k])
    counts = np.zeros((t.n_items, t.n_subjects))
    np.add.at(counts, (bi, mi), 1.0)
    W = counts / counts.sum(1, keepdims=True)  # zbar_b = W z: mean z of b's models

    from scipy.special import gammaln

    from platinum_jax.models.rosetta._zero_sum_shell import SHELL_SHARPNESS

    d = len(free_c) - 1  # the zero-sum subspace's dimension
    k_shell, s_shell = SHELL_SHARPNESS * d, 1.0 / np.sqrt(SHELL_SHARPNESS)

    def log_chi(rho, k, scale):
        x = rho / scale
        return ((k - 1) * pt.log(x) - 0.5 * x**2 - (0.5 * k - 1) * np.log(2.0) - gammaln(0.5 * k)
                - np.log(scale))

    with pm.Model() as model:
        # Our coordinates: z = sqrt(r2) u / |u|, u of uniform direction on the zero-sum subspace
        # with |u| ~ chi_K / sqrt(25) (a zero-sum normal, its length law replaced), r2 = |z|^2
        # ~ chi^2(d): z is zero-sum normal, as ours.
        u = pm.ZeroSumNormal("capability_u", sigma=1.0, shape=len(free_c))
        rho = pt.sqrt(pt.sum(u**2))
        pm.Potential("capability_u_shell", log_chi(rho, k_shell, s_shell) - log_chi(rho, d, 1.0))
        r2 = pm.Gamma("capability_r2", alpha=0.5 * d, beta=0.5)
        z_c = pm.Deterministic("capability_z", pt.sqrt(r2) * u / rho)
        beta = pm.Normal("intercept", pr.intercept_loc, pr.intercept_scale, shape=len(free_d))
        z_s = pm.Normal("slope_z", 0.0, 1.0, shape=len(free_s))
        beta_a = pm.Normal("anchor_intercept", pr.intercept_loc, pr.intercept_scale)
        v_a = pm.Normal("anchor_slope_z", 0.0, 1.0)
        tau_c = pt.exp(pr.log_slope_loc + pr.log_slope_scale * v_a) / alpha_a
        z_bar = pt.dot(W, z_c)
        mu_c = d_a - tau_c * z_bar[k] + beta_a / alpha_a
        cap = pt.set_subtensor(pt.zeros(t.n_subjects)[free_c], mu_c + tau_c * z_c)
        slope = pt.set_subtensor(pt.as_tensor(np.asarray(rep.fixed_slope, float))[free_s],
                                 pt.exp(pr.log_slope_loc + pr.log_slope_scale * z_s) / tau_c)
        diff = pt.set_subtensor(pt.as_tensor(np.asarray(rep.fixed_difficulty, float))[free_d],
                                mu_c + tau_c * (z_bar[free_d] - beta / (slope * tau_c)[free_d]))
        pm.Deterministic("capability", cap)
        pm.Deterministic("difficulty", diff)
        pm.Deterministic("slope", slope)
        nu = pm.Normal("noise_log_mu", pr.log_noise_loc, pr.log_noise_loc_scale)
        log_s = pm.Normal("noise_log_spread", float(np.log(pr.log_noise_spread)),
                          pr.log_noise_spread_sd)
        log_sigma = pt.zeros(t.n_items) + nu  # pooled: the common level
        if centred.any():
            x = pm.Normal("noise_centred", nu, pt.exp(log_s), shape=int(centred.sum()))
            log_sigma = pt.set_subtensor(log_sigma[np.flatnonzero(centred)], x)
        if offset.any():
            n = pm.Normal("noise_offset", 0.0, 1.0, shape=int(offset.sum()))
            log_sigma = pt.set_subtensor(log_sigma[np.flatnonzero(offset)], nu + pt.exp(log_s) * n)
        mean = pm.math.sigmoid(slope[bi] * (cap[mi] - diff[bi]))
        pm.Normal("y", mean, pt.sqrt(pt.exp(2 * log_sigma)[bi] + se2), observed=y)
    return model, problem


def run_nutpie(model, problem, setting: dict, args):
    import nutpie

    with Clock() as c:
        compiled = nutpie.compile_pymc_model(model)
        idata = nutpie.sample(compiled, chains=4, cores=2, seed=args.seed, progress_bar=False,
                              **setting)
    return idata, c  # entries in our order: the table's models and benchmarks


def run_pymc_nuts(model, problem, args):
    import pymc as pm

    with Clock() as c, model:
        idata = pm.sample(chains=4, cores=2, random_seed=args.seed, progressbar=False,
                          compute_convergence_checks=False)
    return idata, c  # entries in our order: the table's models and benchmarks


NUTPIE_SETTINGS = {
    "nutpie_defaults": {},
    "nutpie_diagonal_1000_3000": {"tune": 1000, "draws": 3000},
    "nutpie_lowrank_0.9_1000_1500": {"tune": 1000, "draws": 1500, "target_accept": 0.9,
                                     "low_rank_modified_mass_matrix": True},
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tables", nargs="+", choices=("csv", "raw"), default=["csv", "raw"])
    p.add_argument("--skip", nargs="*", choices=("nutpie", "pymc"), default=[])
    p.add_argument("--quick", action="store_true",
                   help="scores_long.csv only, 500 draws a chain, nutpie's diagonal only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=None, help="our draws a chain (default ours)")
    args = p.parse_args(argv)
    if args.quick:
        args.tables, args.samples = ["csv"], 500

    from platinum_jax import enable_compilation_cache, enable_float64

    enable_float64()
    enable_compilation_cache()
    from platinum_jax.data import ScoreTable
    from platinum_jax.importers import EpochDataWarning, read_epoch_scores

    load = {"csv": lambda: ScoreTable.from_csv(SHARED / "scores_long.csv"),
            "raw": lambda: read_epoch_scores(SHARED / "raw")}
    lines = []
    for name in args.tables:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", (EpochDataWarning, UserWarning))
            table = load[name]()
        fit, ours = run_ours(table, args)
        print(f"{name}: ours {json.dumps(ours)}", file=sys.stderr)
        warm_fit, warm = run_ours(table, args, warm_start=fit.fit,
                                  warmup=max(int(fit.diagnostics["warmup"]) // 5, 1))
        warm.update(_agreement(fit.idata, warm_fit.idata))
        print(f"{name}: ours, warm start {json.dumps(warm)}", file=sys.stderr)
        lines.append({"name": f"bayes_{name}_warm_start", "ours_s": ours["cpu_s"],
                      "baseline_s": warm["cpu_s"], "ratio": round(ours["min_ess_per_cpu_s"] /
                                                                  warm["min_ess_per_cpu_s"], 3),
                      "max_abs_diff": warm["max_abs_diff"], "ours": ours, "warm": warm})
        peers = []
        if "nutpie" not in args.skip or "pymc" not in args.skip:
            model, problem = pymc_model(table)
        if "nutpie" not in args.skip:
            settings = ({"nutpie_diagonal_1000_3000": NUTPIE_SETTINGS["nutpie_diagonal_1000_3000"]}
                        if args.quick else NUTPIE_SETTINGS)
            for label, setting in settings.items():
                idata, c = run_nutpie(model, problem, setting, args)
                peers.append((label, idata, c))
        if "pymc" not in args.skip and not args.quick:
            idata, c = run_pymc_nuts(model, problem, args)
            peers.append(("pymc_nuts_defaults", idata, c))
        for label, idata, c in peers:
            theirs = _stats(idata, c.wall, c.cpu)
            theirs.update(_agreement(fit.idata, idata))
            theirs["passes"] = bool(theirs["divergences"] == 0 and theirs["rhat_max"] <= 1.01
                                    and min(theirs["ess_bulk_min"], theirs["ess_tail_min"]) >= 400)
            print(f"{name}: {label} {json.dumps(theirs)}", file=sys.stderr)
            lines.append({"name": f"bayes_{name}_vs_{label}", "ours_s": ours["cpu_s"],
                          "baseline_s": theirs["cpu_s"],
                          "ratio": round(ours["min_ess_per_cpu_s"]
                                         / max(theirs["min_ess_per_cpu_s"], 1e-9), 3),
                          # ours counting the sampler alone (set-up, compiling, chains), as
                          # the peer's figure counts its compiling and sampling
                          "ratio_sampler": round(ours["sampler_min_ess_per_cpu_s"]
                                                 / max(theirs["min_ess_per_cpu_s"], 1e-9), 3),
                          "max_abs_diff": theirs["max_abs_diff"], "ours": ours,
                          "baseline": theirs})
    for line in lines:
        print(json.dumps(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
