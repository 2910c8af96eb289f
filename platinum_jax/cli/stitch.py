"""``platinum-jax stitch``: the Rosetta paper's least-squares preset of ``platinum-jax fit``.

:data:`PRESET` is what the command adds to the one runner (:mod:`platinum_jax.cli._runner`):
its options, the score-table loader (:mod:`platinum_jax.cli._scores`), the paper's fit and its
writer (capabilities, benchmarks, residuals, uncertainty, rescaling, the Epoch Capabilities
Index, figures). Its Bayesian twin is ``platinum-jax stitch-bayes``, and ``platinum-jax fit
--model rosetta`` fits the same model with the general command's files.
"""

from __future__ import annotations

import argparse
import json

from ._common import add_anchor_arguments, anchor_from_args
from ._runner import Preset, command_parser
from ._scores import (
    DATA_HELP,
    ECI_DEFAULT,
    add_duplicates_argument,
    add_min_benchmarks_argument,
    add_prepare_arguments,
    as_option_hints,
    load_table,
    write_dropped,
)

DESCRIPTION = """\
Put models and benchmarks on one scale: score(m, b) = sigmoid(alpha_b (C_m - D_b)), with a
capability C_m per model and a difficulty D_b and slope alpha_b per benchmark, fitted by the
paper's L2-regularised least squares (strength --l2) with a Levenberg-Marquardt solver in JAX.

DATA is a tidy CSV (columns model, benchmark, score in [0, 1]; optional n_items, stderr,
model_release_date, benchmark_release_date, source) or an Epoch AI raw/ directory.

The scale needs an anchor: by default one benchmark's difficulty and slope are fixed
(--anchor-benchmark, --anchor-difficulty, --anchor-slope); or give two models and their
capabilities (--anchor-models A B --anchor-capabilities CA CB).

Uncertainty (--uncertainty):
  sensitivity  the paper's (Ho et al., appendix): per parameter, the shifts down and up at
               which the unregularised squared error of that parameter's own scores (a
               model's scores for its capability, a benchmark's for its difficulty and
               slope) is 5% above its value at the fit, all else held at the fit except the
               benchmark's slope, re-fitted when its difficulty moves (lower, upper, and
               halfwidth = half their sum; not a standard deviation; inf where the loss
               never rises 5%, e.g. a model with saturated scores)
  laplace      Gaussian around the fit from the exact Hessian (sd, 95% intervals)
  bootstrap    --replicates refits on resampled scores, vmapped in chunks (sd, percentile
               intervals; replicates that fail to converge are left out, with a warning)

Outputs in --out:
  capabilities.csv  model, capability, release_date, n_scores (+ sd or halfwidth, lower, upper)
  benchmarks.csv    benchmark, difficulty, slope, release_date, n_scores (+ difficulty_ and
                    slope_ prefixed sd or halfwidth, lower, upper)
  residuals.csv     model, benchmark, score, predicted, residual
  fit.json          cost, iterations, converged, anchor, l2, sizes (+ bootstrap counts)
  capabilities.png  (with --plots) capabilities over release date with error bars, and benchmark
                    difficulties
  residuals.png     (with --plots) residuals per benchmark
  dropped_models.txt (Epoch directory) models left out by --min-benchmarks
--out must be empty, or hold an earlier stitch run and --overwrite be given; a second run into
a directory being written stops with an error. Files are written whole or not at all.
The Bayesian fit (NumPyro) is `platinum-jax stitch-bayes`; `platinum-jax fit --model rosetta`
fits this model with the general command's files.
"""

EPILOG = """\
examples:
  platinum-jax stitch scores_long.csv --anchor-benchmark Winogrande --out fit
      the paper's setup: Winogrande fixed at D = 0, alpha = 1, L2 strength 0.1
  platinum-jax stitch raw/ --anchor-benchmark Winogrande --uncertainty bootstrap --out fit
      parse Epoch's raw/ directory and add 1000 bootstrap refits (intervals in the CSVs)
  platinum-jax stitch scores.csv --anchor-models gpt-4o claude-3-opus \\
      --anchor-capabilities 1.0 1.5 --uncertainty laplace --out fit
      two models set the scale, Laplace standard errors (keep anchor values near the
      natural scale: the L2 term pulls every capability towards 0)
  platinum-jax stitch scores_long.csv --rescale gpt-4o-2024-05-13 130 gpt-5-2025-08-07_high 150 --out fit
      the paper's fit, also reported on a scale where those two models read 130 and 150
      (like Epoch's capability index; adds *_rescaled columns, predictions unchanged)
  platinum-jax stitch scores_long.csv --scale eci --out fit
      the paper's fit with the Epoch Capabilities Index beside it (Claude 3.5 Sonnet = 130,
      GPT-5 medium = 150; 90% intervals from 100 bootstrap refits): eci, eci_lower, eci_upper
  platinum-jax stitch raw/ --scale eci --out fit
      the index as Epoch publishes it: on an Epoch directory --scale eci defaults to
      --prepare epoch (baseline-normalised scores, one model per release, 2023 on); plain
      stitch, and --prepare paper, keep the paper's raw fractions
  platinum-jax stitch scores.csv --anchor-benchmark MMLU --l2 0.01 --clip --out fit
      a weaker penalty; scores outside [0, 1] clipped instead of rejected
  platinum-jax stitch scores_long.csv --restarts 32 --out fit
      32 extra random starts solved at once; keeps the lowest of several local minima
Turn on float64 in your own scripts with platinum_jax.enable_float64(); this command does it
for you.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The anchor, fit, uncertainty and scale options of ``stitch``
    (after DATA, ``--out`` and ``--overwrite``, which are the runner's)."""
    add_anchor_arguments(p)
    f = p.add_argument_group("fit")
    f.add_argument("--l2", type=float, default=0.1, help="L2 strength lambda (default 0.1)")
    f.add_argument("--restarts", type=int, default=0,
                   help="extra jittered starts; the lowest cost wins (default 0: the paper's start)")
    add_duplicates_argument(f)
    add_min_benchmarks_argument(f)
    add_prepare_arguments(f, ECI_DEFAULT)
    f.add_argument("--clip", action="store_true",
                   help="clip scores outside [0, 1] instead of rejecting the file")
    f.add_argument("--components", choices=("error", "separate"), default="error",
                   help="disconnected model-benchmark graph: fail (default) or fit each part")
    f.add_argument("--rescale", nargs=4, metavar=("A", "SA", "B", "SB"),
                   help="also report a linear scale on which model A reads SA and model B reads SB")
    p.add_argument(
        "--plots", action="store_true",
        help="also draw capabilities.png and residuals.png (matplotlib; adds about a second "
        "to a run whose fit takes a fraction of one)",
    )
    u = p.add_argument_group("uncertainty")
    u.add_argument("--uncertainty", choices=("none", "laplace", "bootstrap", "sensitivity"),
                   default="none", help="error bars to compute (default none)")
    u.add_argument("--replicates", type=int, default=1000,
                   help="bootstrap replicates (default 1000)")
    u.add_argument("--seed", type=int, default=0,
                   help="random seed of the bootstrap resamples (default 0)")
    from ._eci_views import add_eci_scale_arguments

    add_eci_scale_arguments(
        p.add_argument_group("scale"),
        replicates_help="--scale eci: bootstrap refits for the index's intervals (default 100, "
                        "as Epoch; 0 = none); with --uncertainty bootstrap its refits are reused")


def _eci_columns(fit, args, boot, caps, bench):
    """``caps``, ``bench`` with the ECI columns of :func:`platinum_jax.analysis.eci_scale` joined."""
    from platinum_jax.analysis import eci_scale

    from ._eci_views import eci_anchors_from_args, eci_columns

    if boot is None and args.eci_replicates:
        from platinum_jax.stitching import bootstrap

        boot = bootstrap(fit, args.eci_replicates, seed=args.seed, level=args.eci_level, progress=True)
    res = eci_scale(fit, anchors=eci_anchors_from_args(args), bootstrap=boot, replicates=0,
                    level=args.eci_level)
    m, b, info = eci_columns(res)
    return caps.join(m), bench.join(b), info


def _write_fit(fit, out, args, suffix: str = "") -> dict:
    unc = boot = None
    if args.uncertainty != "none":  # the uncertainty module builds programs of its own
        from platinum_jax import stitching  # its names load lazily

        if args.uncertainty == "laplace":
            unc = stitching.laplace(fit)
        elif args.uncertainty == "sensitivity":
            unc = stitching.sensitivity(fit)
        elif args.uncertainty == "bootstrap":
            boot = stitching.bootstrap(fit, args.replicates, seed=args.seed, progress=True)
            unc = boot.summary
    caps = fit.capabilities
    bench = fit.benchmarks
    if unc is not None:
        by_kind = stitching.by_kind
        width = "halfwidth" if args.uncertainty == "sensitivity" else "sd"
        cols = [width, "lower", "upper"]
        caps = caps.join(by_kind(unc, "capability")[cols])
        diff = by_kind(unc, "difficulty")[cols].add_prefix("difficulty_")
        slope = by_kind(unc, "slope")[cols].add_prefix("slope_")
        bench = bench.join(diff).join(slope)
    if args.rescale:
        a_name, a_val, b_name, b_val = args.rescale
        try:
            a_val, b_val = float(a_val), float(b_val)
        except ValueError:
            raise ValueError(
                f"--rescale takes MODEL VALUE MODEL VALUE; got {args.rescale}"
            ) from None
        scaled = fit.rescaled((a_name, a_val), (b_name, b_val))
        caps = caps.join(scaled.xs("model", level="kind")["value"].rename("capability_rescaled"))
        sb = scaled.xs("benchmark", level="kind")
        bench = bench.join(sb["value"].rename("difficulty_rescaled"))
        bench = bench.join(sb["slope"].rename("slope_rescaled"))
    eci_info = {}
    if getattr(args, "scale", "raw") == "eci":
        caps, bench, eci_info = _eci_columns(fit, args, boot, caps, bench)
    out.write(f"capabilities{suffix}.csv", caps.to_csv)
    out.write(f"benchmarks{suffix}.csv", bench.to_csv)
    out.write(f"residuals{suffix}.csv", fit.residuals.to_csv, index=False)
    summary = fit.summary() | {"uncertainty": args.uncertainty} | eci_info
    if getattr(args, "prepare", None) == "epoch":  # the paper's outputs stay as they were
        summary["prepare"] = args.prepare
        summary |= {f"epoch_{k}": v for k, v in getattr(args, "epoch_preparation", {}).items()}
    if args.uncertainty == "bootstrap":
        summary["replicates"] = args.replicates
        summary["replicates_converged"] = unc.attrs["n_converged"]
        summary["replicates_failed"] = unc.attrs["n_failed"]
    out.write_text(f"fit{suffix}.json", json.dumps(summary, indent=2, default=str) + "\n")
    if getattr(args, "plots", False):
        _write_plots(fit, unc, out, suffix)
    return summary


def _write_plots(fit, unc, out, suffix: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from platinum_jax.plots import plot_capabilities, plot_residuals

    ax = plot_capabilities(fit, unc)
    ax.figure.tight_layout()
    out.write(f"capabilities{suffix}.png", ax.figure.savefig, dpi=120)
    plt.close(ax.figure)
    ax = plot_residuals(fit)
    ax.figure.tight_layout()
    out.write(f"residuals{suffix}.png", ax.figure.savefig, dpi=120)
    plt.close(ax.figure)


def _prepare(args: argparse.Namespace, table):
    """The options and names checked before --out is touched, so a typo changes nothing there."""
    if args.l2 < 0:
        raise ValueError(f"--l2 must be >= 0 (got {args.l2})")
    if args.replicates < 2:
        raise ValueError(f"--replicates must be at least 2 (got {args.replicates})")
    anchor = anchor_from_args(args)
    for name in getattr(anchor, "models", ()):
        table.model_position(name)
    if hasattr(anchor, "benchmark"):
        table.benchmark_position(anchor.benchmark)
    from ._eci_views import check_eci_scale_args

    check_eci_scale_args(args, table)
    return table, anchor


def _fit(args: argparse.Namespace, plan) -> list:
    """The paper's least-squares fit (:func:`platinum_jax.stitching.fit_stitching`), one per
    connected part of the data with ``--components separate``."""
    from platinum_jax.stitching import fit_stitching

    table, anchor = plan
    print(f"{table!r}; anchor {anchor.describe()}; l2 = {args.l2:g}")
    try:
        fits = fit_stitching(table, anchor, args.l2, components=args.components,
                             restarts=args.restarts)
    except ValueError as exc:
        raise as_option_hints(exc) from None
    return fits if isinstance(fits, list) else [fits]


def _write(fits: list, out, args: argparse.Namespace):
    for k, fit in enumerate(fits):
        suffix = "" if len(fits) == 1 else f"_component{k + 1}"
        summary = _write_fit(fit, out, args, suffix)
        print(f"fit{suffix}: cost {summary['cost']:.6f} after {summary['iterations']} "
              f"iterations (converged: {summary['converged']})")
        top = fit.capabilities["capability"].nlargest(5)
        print("  top capabilities: " + ", ".join(f"{m} {c:.2f}" for m, c in top.items()))
    dropped = write_dropped(out, args)
    if dropped:  # the whole list, one name a line, beside the results
        print(f"      all {dropped} dropped models listed in dropped_models.txt")
    return out.path


def _finish(fits: list, path, args: argparse.Namespace) -> int:
    figures = " and figures" if args.plots else " (add --plots for figures)"
    print(f"wrote capabilities.csv, benchmarks.csv, residuals.csv, fit.json{figures} to {path}/")
    return 0


# The Rosetta paper's least-squares fit as a command of the one runner.
PRESET = Preset(
    name="stitch", model="rosetta", method="map",
    help="stitch benchmarks: capabilities, difficulties and slopes on one scale",
    description=DESCRIPTION, epilog=EPILOG, add_arguments=add_arguments, data_help=DATA_HELP,
    out_help="output directory (created if missing; must be empty unless --overwrite)",
    overwrite_help="replace the outputs of an earlier stitch run in --out (files this command "
    "did not write are never removed)",
    load=load_table, prepare=_prepare, fit=_fit, write=_write, finish=_finish)


def register(subparsers: argparse._SubParsersAction) -> None:
    command_parser(subparsers, PRESET)
