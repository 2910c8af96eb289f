"""``platinum-jax stitch-bayes``: the Rosetta paper's Bayesian fit, a view over ``platinum-jax
fit --model rosetta_bayes --method nuts``.

:data:`PRESET` is what the command adds to the one runner (:mod:`platinum_jax.cli._runner`):
its options, the score-table loader it shares with ``stitch``, and its writer: the files of
``fit`` (the same posterior, the same draws for the same seed) plus the paper's tables, figures
and weights.
"""

from __future__ import annotations

import argparse
import sys

from platinum_jax._names import BAYES_LIKELIHOODS

from ._common import add_anchor_arguments, anchor_from_args, warm_start, write_fit_files
from ._runner import Preset, command_parser
from ._scores import (
    add_duplicates_argument,
    add_min_benchmarks_argument,
    add_prepare_arguments,
    load_table,
    write_dropped,
)

DESCRIPTION = """\
Fit the stitching model score = sigmoid(alpha_b (C_m - D_b)) by Bayesian inference (NumPyro
NUTS, or SVI for large tables) and write posterior summaries with 94% intervals.

Likelihoods (--likelihood):
  gaussian  score ~ N(mu, sqrt(sigma_b^2 + stderr^2)): the Bayesian twin of least squares
  beta      score ~ Beta with mean mu and precision phi_b; exact 0/1 scores are moved inwards by
            half an item (or by 0.005 when n_items is unknown) and the count is reported
  binomial  round(score * n_items) ~ Binomial(n_items, mu): large benchmarks weigh more;
            needs an n_items column
  beta_binomial
            round(score * n_items) ~ BetaBinomial with mean mu and precision phi_b: counts as
            binomial, plus a per-benchmark noise scale for items that share quirks

Outputs in --out, first those of `platinum-jax fit --model rosetta_bayes --method nuts` (the
same posterior; the same draws for the same seed):
  subjects.csv, items.csv, globals.csv   posterior means and 90% intervals per model,
                     benchmark and global parameter
  fit.json           the model, its sampler settings and the diagnostics, and each file's
                     size and checksum
  summary.csv        every parameter with mean, sd, 94% HDI, r_hat, ess_bulk, ess_tail
  posterior.nc       the ArviZ InferenceData (arviz.from_netcdf); groups posterior,
                     sample_stats, log_likelihood, posterior_predictive, observed_data,
                     constant_data (dims model, benchmark, score)
  adaptation.npz     NUTS: the warm-up's step size, mass matrix and last draws per chain
                     (what --warm-start DIR starts a refit from)
then the paper's:
  capabilities.csv   model, mean, sd, hdi_3%, hdi_97% (+ r_hat, ess_bulk, ess_tail, release_date)
  benchmarks.csv     the same for difficulty_* and slope_* per benchmark, and noise_sd_mean;
                     gaussian: noise_pooled, noise_scatter, noise_ppp (the pooled check below)
  capabilities.png   capabilities over release date with posterior intervals
  ppc.png            posterior predictive check: observed vs predicted scores
  optimal_weights.csv  with --weights-config: posterior of v* = (M + r Sigma)^-1 M w per
                     benchmark, Sigma = diag(posterior noise variance), and P(v*_b >= threshold)

DATA is a tidy CSV or an Epoch AI raw/ directory.  A directory gets the paper's reading, as in
`platinum-jax stitch`: repeated (model, benchmark) runs reduced by their max; in a CSV they are
an error unless --duplicates names a reduction.  The scale is anchored like the least-squares
fit: one benchmark's difficulty and slope (--anchor-benchmark, --anchor-difficulty,
--anchor-slope), or two models' capabilities (--anchor-models A B --anchor-capabilities CA CB).

Diagnostics cover every parameter, hyper-parameters included: divergences, R-hat > 1.01
(needs 2 or more chains), bulk or tail ESS < 400; each problem is printed as a warning that
says what to try next, given what this run used.  Known standard errors below 0.005 (a
reported 0.00) are raised to 0.005 and counted.  Computation runs in float64.

Benchmarks with fewer than --pooled-below scores (30) and no standard errors share the common
noise level.  Each such benchmark's scatter is checked against that level (noise_scatter, in
its units; noise_ppp, a posterior predictive p-value), and one whose scores scatter more than
it allows (p < 0.01) is named in a warning: its intervals are too narrow.
"""

EPILOG = """\
examples:
  platinum-jax stitch-bayes scores_long.csv --anchor-benchmark Winogrande --out bayes
      4 NUTS chains x 1500 draws, Gaussian likelihood, the paper's anchor
  platinum-jax stitch-bayes scores_long.csv --likelihood beta --chains 2 --samples 500 --out beta
      a quicker Beta-likelihood run
  platinum-jax stitch-bayes raw/ --out bayes
      Epoch's raw/ directory as published (repeated runs reduced by max)
  platinum-jax stitch-bayes raw/ --scale eci --out bayes
      adds the Epoch Capabilities Index with posterior intervals (each draw mapped by its
      own anchors' capabilities; Epoch's preparation, as stitch --scale eci)
  platinum-jax stitch-bayes big.csv --method svi --samples 2000 --out svi
      variational fit (AutoNormal) for tables too large for NUTS
  platinum-jax stitch-bayes big.csv --method svi --svi-guide lowrank --out svi
      the same with correlations between parameters, for more honest intervals
  platinum-jax stitch-bayes scores_long.csv --weights-config weights.yaml --out bayes
      adds the optimal-weights posterior; weights.yaml holds, e.g.:
          r: 1.0
          w: {MMLU: 1.0, GSM8K: 1.0, GPQA diamond: 2.0}
          M: identity          # or a list (diagonal) or a matrix in the order of w
          threshold: 0.5       # optional; default: an equal share sum(w) / m
"""


def _whole_number(minimum: int):
    """An ``argparse`` type: a whole number ``>= minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a whole number >= {minimum}, got {text!r}"
            ) from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


_positive_int = _whole_number(1)
_non_negative_int = _whole_number(0)


def _acceptance(text: str) -> float:
    """A NUTS target acceptance probability: strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(
            f"is a probability and must lie strictly between 0 and 1, got {value:g}; "
            "0.8-0.99 are the useful values (higher: smaller steps, fewer divergences)"
        )
    return value


def add_bayes_arguments(p: argparse.ArgumentParser) -> None:
    """The Bayesian options. The sampler's default settings are the model's own
    (``RosettaBayes.nuts_settings``), as in ``fit --model rosetta_bayes``."""
    g = p.add_argument_group("Bayesian fit")
    g.add_argument(
        "--likelihood",
        choices=BAYES_LIKELIHOODS,
        default="gaussian",
        help="observation model (default gaussian)",
    )
    g.add_argument(
        "--method",
        choices=("nuts", "svi"),
        default="nuts",
        help="NUTS (exact MCMC, default) or SVI (variational, for large tables)",
    )
    g.add_argument("--chains", type=_positive_int, default=4, help="NUTS chains (default 4)")
    g.add_argument(
        "--samples",
        type=_positive_int,
        default=None,
        help="draws per chain after warmup (default: the model's setting, "
        "RosettaBayes.nuts_settings; SVI: draws from the guide, default 1500)",
    )
    g.add_argument("--warmup", type=_non_negative_int, default=None,
                   help="NUTS warmup steps (default: the model's setting)")
    g.add_argument(
        "--target-accept",
        type=_acceptance,
        default=None,
        help="NUTS target acceptance in (0, 1) (default: the model's setting); if divergences "
        "are reported, raise it or lengthen --warmup",
    )
    g.add_argument(
        "--mass-matrix",
        choices=("lowrank", "diagonal"),
        default=None,
        help="NUTS mass matrix, adapted from the draws and their gradients (default: the "
        "model's setting, lowrank): lowrank (a diagonal plus the few directions where the "
        "posterior is stretched or squeezed, such as the capabilities' scale against every "
        "slope) or diagonal (cheaper a step, more steps on correlated posteriors)",
    )
    g.add_argument(
        "--pooled-below",
        type=_non_negative_int,
        default=None,
        metavar="N",
        help="Gaussian likelihood: benchmarks with fewer than N scores and no standard errors "
        "share the common noise level instead of a noise scale of their own (default 30; 0 "
        "gives every benchmark its own); in a joint fit fewer scores say little about their "
        "own noise",
    )
    g.add_argument("--svi-steps", type=_positive_int, default=5000, help="SVI optimisation steps")
    g.add_argument(
        "--svi-guide",
        choices=("normal", "lowrank"),
        default="normal",
        help="SVI family: normal (AutoNormal, default) is the fastest and gives good means, "
        "but treats parameters as independent, so intervals can come out too narrow where "
        "they trade off (a benchmark's difficulty against its slope); lowrank "
        "(AutoLowRankMultivariateNormal) adds those correlations at more cost per step: use "
        "it when the intervals matter",
    )
    g.add_argument("--warm-start", metavar="DIR", default=None,
                   help="start NUTS from the adaptation (step size, mass matrix, last draws) of "
                   "an earlier stitch-bayes run on a table of the same shape, its output "
                   "directory, and warm up a fifth as long (no compiling either when the "
                   "shapes match)")
    g.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    g.add_argument(
        "--weights-config",
        metavar="FILE",
        help="YAML/JSON with r, w, M (and optional threshold): writes the posterior "
        "of the optimal benchmark weights",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``stitch-bayes`` after DATA, ``--out`` and ``--overwrite``."""
    add_anchor_arguments(p)
    add_duplicates_argument(p, "(model, benchmark) scores")
    add_min_benchmarks_argument(p)
    add_prepare_arguments(p)
    p.add_argument("--clip", action="store_true",
                   help="clip scores outside [0, 1] instead of rejecting the data")
    add_bayes_arguments(p)
    from ._eci_views import add_eci_scale_arguments

    add_eci_scale_arguments(p.add_argument_group(
        "scale (the index's intervals: each posterior draw mapped by its own anchors)"))


def _prepare(args: argparse.Namespace, table):
    """The weights config (keys, values, benchmark names) and the anchor, checked before the
    long fit and before --out is claimed."""
    import matplotlib

    matplotlib.use("Agg")
    from platinum_jax.design import load_weights_config

    _noise_options(args)  # a --pooled-below that does not apply is refused here
    from ._eci_views import check_eci_scale_args

    check_eci_scale_args(args, table)
    if args.warm_start is not None and args.method != "nuts":
        raise ValueError("--warm-start starts NUTS from an earlier NUTS run; --method svi has "
                         "no sampler to warm-start: drop it")
    weights_cfg = (load_weights_config(args.weights_config, known_benchmarks=table.benchmarks)
                   if args.weights_config else None)
    return table, anchor_from_args(args), weights_cfg, warm_start(args)


def _noise_options(args: argparse.Namespace) -> dict:
    """``pooled_below`` for the Gaussian likelihood; refused for the others, which have no
    noise scale to pool."""
    if args.pooled_below is None:
        return {}
    if args.likelihood != "gaussian":
        raise ValueError(f"--pooled-below pools the Gaussian likelihood's noise scales; "
                         f"--likelihood {args.likelihood} has none: drop --pooled-below")
    return {"pooled_below": args.pooled_below}


def _fit(args: argparse.Namespace, plan):
    import warnings

    from platinum_jax.stitching import fit_stitching_bayes

    table, anchor, weights_cfg, warm = plan
    how = args.method.upper() + (f" ({args.svi_guide} guide)" if args.method == "svi" else "")
    print(f"{table!r}: {how} with the {args.likelihood} likelihood, anchor {anchor.describe()}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = fit_stitching_bayes(
            table, anchor, likelihood=args.likelihood, method=args.method, chains=args.chains,
            samples=args.samples, warmup=args.warmup, seed=args.seed,
            target_accept=args.target_accept, svi_steps=args.svi_steps,
            svi_guide=args.svi_guide, progress_bar=sys.stderr.isatty(),
            mass=args.mass_matrix, warm_start=warm, **_noise_options(args))
    for w in caught:
        if issubclass(w.category, UserWarning) and not issubclass(w.category, FutureWarning):
            print(f"warning: {w.message}")
    return fit, weights_cfg


def _write(result, out, args: argparse.Namespace):
    """The posterior summaries, InferenceData, figures and (with --weights-config) the optimal
    weights' posterior; prints the diagnostics."""
    from platinum_jax.design import primitives_from_stitching, weights_table
    from platinum_jax.plots import plot_posterior_capabilities, plot_ppc

    fit, weights_cfg = result
    write_fit_files(out, fit.fit)  # what `fit --model rosetta_bayes` writes, then the paper's
    cols = ["mean", "sd", "hdi_3%", "hdi_97%", "r_hat", "ess_bulk", "ess_tail", "release_date"]
    caps, bench = fit.capabilities[cols], fit.benchmarks
    if args.scale == "eci":
        from platinum_jax.analysis import eci_scale

        from ._eci_views import eci_anchors_from_args, eci_columns

        res = eci_scale(fit, anchors=eci_anchors_from_args(args), level=args.eci_level)
        m, b, _ = eci_columns(res)
        caps, bench = caps.join(m), bench.join(b)
        print(f"ECI from {len(res.draws)} posterior draws, each on its own map "
              f"({100 * res.level:.0f}% intervals, median width "
              f"{float(res.summary().loc['median_interval_width', 'value']):.2f} points)")
    out.write("capabilities.csv", caps.to_csv)
    out.write("benchmarks.csv", bench.to_csv)
    out.write("capabilities.png", lambda p: plot_posterior_capabilities(fit, path=p))
    out.write("ppc.png", lambda p: plot_ppc(fit, path=p))
    d = fit.diagnostics
    compiled = (f", {d['compile_seconds']:.1f} s of it compiling"
                if d.get("compile_seconds", 0) >= 0.05 else "")
    print(f"done in {d['seconds']:.1f} s{compiled} ({d.get('chain_method', args.method)} "
          "chains)")
    if args.method == "nuts":
        rhat = (f"max R-hat {d['rhat_max']:.4f} ({d.get('worst_rhat_parameter')})"
                if d.get("chains", 0) > 1 else "R-hat n/a (1 chain)")
        print(
            f"diagnostics over every parameter, hyper-parameters included: divergences "
            f"{d['divergences']}, {rhat}, min bulk ESS {d['ess_bulk_min']:.0f} "
            f"({d.get('worst_ess_bulk_parameter')}), min tail ESS {d['ess_tail_min']:.0f} "
            f"({d.get('worst_ess_tail_parameter')})"
        )
    print(fit.capabilities[["mean", "sd", "hdi_3%", "hdi_97%"]].nlargest(5, "mean").to_string())
    if weights_cfg is not None:
        prims = primitives_from_stitching(fit, weights_cfg["w"], M=weights_cfg["M"],
                                          benchmarks=weights_cfg["benchmarks"])
        weights = weights_table(prims, weights_cfg["r"], threshold=weights_cfg["threshold"],
                                chains=fit.idata.posterior.sizes["chain"])
        out.write("optimal_weights.csv", weights.to_csv)
        print(f"optimal weights (r = {weights.attrs['r']:g}, threshold "
              f"{weights.attrs['threshold']:.3g}):")
        print(weights[["w", "mean", "hdi_3%", "hdi_97%", "p_platinum"]].to_string())
    write_dropped(out, args)
    return out.path


def _finish(result, path, args: argparse.Namespace) -> int:
    print(f"wrote {path}/")
    return 0


# The Rosetta paper's Bayesian fit: `fit --model rosetta_bayes --method nuts` plus its extras.
PRESET = Preset(
    name="stitch-bayes", model="rosetta_bayes", method="nuts",
    help="Bayesian stitching: posterior capabilities, difficulties, slopes and weights",
    description=DESCRIPTION, epilog=EPILOG, add_arguments=add_arguments,
    data_help="tidy CSV (model, benchmark, score[, n_items, stderr, dates]) or an Epoch "
    "raw-data directory",
    load=load_table, prepare=_prepare, fit=_fit, write=_write, finish=_finish)


def register(subparsers: argparse._SubParsersAction) -> None:
    command_parser(subparsers, PRESET)
