"""``platinum-jax analyze``: the Rosetta Stone analyses on a tidy scores CSV."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._eci_views import HELP as _VIEWS_HELP
from ._eci_views import VIEWS as _VIEWS
from ._eci_views import add_arguments as _add_view_arguments

DESCRIPTION = """\
Fit the stitching model sigmoid(alpha_b (C_m - D_b)) to a tidy scores CSV (columns model,
benchmark, score, model_release_date, ...; e.g. the Epoch scores_long.csv) and run one of the
analyses on the capability scale, writing CSVs and PNGs to --out:

  trends        frontier models (top at release), a linear trend with t-intervals, and a
                forecast to --until with confidence and prediction bands
  progress      C = k ln F + b: k is the size-weighted mean of the OLS slopes within the
                paper's single-release families (LLaMA, LLaMA 2, LLaMA 3.1), then Delta b per
                year from b = C - k ln F of every non-distilled model with compute, and the
                compute-reduction factor exp(Delta b / k), all with bootstrap intervals;
                --progress-method organization gives the organisation fixed-effects variant;
                needs training compute (--compute) and the distilled-model list (--raw-dir)
  acceleration  one-breakpoint piecewise-linear fit of the frontier (slope ratio >= --threshold
                flags an acceleration); --simulate adds the synthetic-world detection study,
                by default with the paper's protocol (a check at every model release after the
                acceleration to the end of the world, running-maximum frontier, two segment
                fits with R^2 >= 0.6; false positives on 750 worlds without acceleration, noise
                1x, 2x and 4x, stated with their binomial standard error); --protocol
                monthly_hinge runs the earlier monthly-hinge variant
  horizons      log METR 50% time horizon against capability (needs --raw-dir); R^2 on the
                full sample and on both parts of the paper's split (Epoch's code fits the
                line to a random 60% of the matched models, seed 42, and the paper's 0.85
                is the R^2 on that 60%)
  robustness    refits with other anchors (--anchors) and with each benchmark left out

Side inputs are looked up next to DATA when not given: --compute defaults to
DATA's folder/model_compute.csv and --raw-dir to DATA's folder/raw; the path used is printed,
and a missing file is an error naming the option to pass.
"""

EPILOG = """\
examples:
  platinum-jax analyze trends scores_long.csv --out results/trends --until 2028-10-01
  platinum-jax analyze trends scores_long.csv --out results/trends --bootstrap 200
  platinum-jax analyze progress scores_long.csv --out results/progress --n-boot 2000
  platinum-jax analyze acceleration scores_long.csv --out results/accel --simulate --quick
  platinum-jax analyze horizons scores_long.csv --out results/horizons --raw-dir data/raw
  platinum-jax analyze acceleration scores_long.csv --out results/accel \
      --capabilities results/trends/capabilities.csv     # reuse a fit, skip refitting
  platinum-jax analyze robustness scores_long.csv --out results/robust --anchors MMLU HellaSwag
  platinum-jax analyze baskets scores_long.csv --out results/math --basket-tag math \
      --raw-dir data/raw --difference-draws 400    # who is better on math than overall?
"""

_ANALYSES = ("trends", "progress", "acceleration", "horizons", "robustness", *_VIEWS)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "analyze",
        help="trends, forecasts, algorithmic progress, accelerations, time horizons, robustness",
        description=DESCRIPTION + _VIEWS_HELP,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("analysis", choices=_ANALYSES, help="which analysis to run")
    p.add_argument("data", type=Path, help="tidy scores CSV (model, benchmark, score, dates) or "
                   "an Epoch raw/ directory (read as stitch reads it)")
    from ._scores import add_prepare_arguments

    add_prepare_arguments(p, "default: epoch for the eci view of an Epoch directory, paper "
                          "otherwise")
    p.add_argument("--out", type=Path, required=True,
                   help="output directory (created; must be empty unless --overwrite)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the outputs of an earlier analyze run in --out")
    p.add_argument("--anchor", default="Winogrande", help="anchor benchmark (D = 0, alpha = 1)")
    p.add_argument("--l2", type=float, default=0.1, help="L2 strength of the fit (paper: 0.1)")
    p.add_argument("--top-n", type=int, default=1, help="frontier = top N at release (default 1)")
    p.add_argument("--level", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--until", default="2028-10-01", help="trends: forecast horizon date")
    p.add_argument("--bootstrap", type=int, default=0, metavar="R",
                   help="trends: also propagate a stitching bootstrap of R refits into the "
                        "forecast (draw_* columns); 0 = regression uncertainty only")
    p.add_argument("--compute", type=Path, help="progress: model_compute.csv (FLOP per model)")
    p.add_argument("--raw-dir", type=Path, help="progress/horizons: Epoch raw/ directory")
    p.add_argument("--keep-distilled", action="store_true",
                   help="progress: keep models listed as distilled (excluded by default)")
    p.add_argument("--n-boot", type=int, default=1000, help="progress: bootstrap replicates")
    p.add_argument("--progress-method", choices=("families", "organization"), default="families",
                   help="progress: k from the paper's single-release families (default) or from "
                        "organisation fixed effects with a frontier-only Delta b (a variant)")
    p.add_argument("--threshold", type=float, default=2.0, help="acceleration: slope ratio flag")
    p.add_argument("--simulate", action="store_true", help="acceleration: run the detection study")
    p.add_argument("--replicates", type=int, default=20, help="acceleration: worlds per cell")
    p.add_argument("--noise", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0],
                   help="acceleration: noise levels (x baseline)")
    p.add_argument("--factors", type=float, nargs="+", default=[1.0, 2.0, 4.0],
                   help="acceleration: acceleration factors (1 = none)")
    p.add_argument("--protocol", choices=("paper", "monthly_hinge"), default="paper",
                   help="acceleration: detection-study protocol (default: the paper's)")
    p.add_argument("--max-wait", type=float, default=None,
                   help="acceleration, paper protocol: years after the acceleration searched "
                        "release by release (default: to the end of the simulated world, 3 "
                        "years, as the paper; a shorter search is faster and changes only "
                        "the worlds not detected within it)")
    p.add_argument("--fp-replicates", type=int, default=None,
                   help="acceleration, paper protocol: worlds without acceleration per noise "
                        "level (1x, 2x, 4x) and observation window (default 50, the paper's "
                        "sweep: 750 worlds)")
    p.add_argument("--quick", action="store_true",
                   help="acceleration: 3 replicates, noise 1 and 4, factors 1 and 2 (false "
                        "positives: 3 worlds per cell at noise 1 and 4)")
    p.add_argument("--anchors", nargs="+", default=["MMLU", "HellaSwag"],
                   help="robustness: alternative anchor benchmarks")
    p.add_argument("--leave-out", nargs="*", default=None,
                   help="robustness: benchmarks to leave out (default: every non-anchor one)")
    p.add_argument("--capabilities", type=Path,
                   help="reuse capabilities from an earlier run (its capabilities.csv: model, "
                        "capability, release_date) instead of refitting DATA; not for robustness")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    _add_view_arguments(p)
    p.set_defaults(func=run)


def _side_file(given: Path | None, data: Path, name: str, option: str, what: str) -> Path:
    path = given if given is not None else data.parent / name
    if not path.exists():
        raise FileNotFoundError(
            f"{what} not found at {path}" + ("" if given else f" (looked beside {data.name})")
            + f"; pass {option} PATH"
        )
    print(f"{what}: {path}" + ("" if given else f" (found beside {data.name})"))
    return path


def _read_data(args: argparse.Namespace):
    """DATA as a score table: a tidy CSV, or an Epoch directory read as ``stitch`` reads it
    (at least 4 benchmarks per model, repeated runs by max; the notes it prints say what it
    drops).  Epoch's preparation leaves its version -> group map on ``args`` for the anchors."""
    from ._scores import load_table, resolve_prepare

    if not args.data.is_dir():
        from platinum_jax.data import ScoreTable

        resolve_prepare(args, False)
        return ScoreTable.from_csv(args.data)
    reading = argparse.Namespace(duplicates=None, clip=False, min_benchmarks=4,
                                 prepare=args.prepare, baselines=args.baselines,
                                 analysis=args.analysis)
    table = load_table(str(args.data), reading)
    args.prepare, args.model_groups = reading.prepare, getattr(reading, "model_groups", None)
    return table


def _save(fig, out, name: str) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path = out.write(name, fig.savefig, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")


def run(args: argparse.Namespace) -> int:
    import contextlib

    with contextlib.ExitStack() as outputs:  # holds the output directory's lock until the end
        return _run(args, outputs)


def _run(args: argparse.Namespace, outputs) -> int:

    from platinum_jax._runtime import enable_float64

    enable_float64()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from platinum_jax import analysis as an
    from platinum_jax.models.rosetta import BenchmarkAnchor
    from platinum_jax.stitching import fit_stitching

    if args.data.is_dir() and not (args.data / "benchmarks_runs.csv").is_file():
        raise IsADirectoryError(
            f"DATA {args.data} is a directory but not an Epoch raw/ directory (no "
            "benchmarks_runs.csv in it); analyze reads a tidy scores CSV (model, benchmark, "
            "score: e.g. the Rosetta paper's scores_long.csv) or an Epoch raw/ directory")
    if not args.data.exists():
        raise FileNotFoundError(f"scores file {args.data} does not exist; pass a tidy scores CSV")
    out = args.out
    # side inputs are resolved before the (slow) fit so a missing file fails at once
    compute_path = raw_dir = None
    if args.analysis == "progress":
        compute_path = _side_file(args.compute, args.data, "model_compute.csv", "--compute",
                                  "compute table")
    if args.analysis == "horizons" or (args.analysis == "progress" and not args.keep_distilled) \
            or (args.analysis == "baskets" and args.basket_tag is not None):
        raw_dir = (args.data if args.data.is_dir() and args.raw_dir is None else
                   _side_file(args.raw_dir, args.data, "raw", "--raw-dir", "Epoch raw directory"))
    from platinum_jax._outputs import output_directory

    out = outputs.enter_context(output_directory(args.out, "analyze", overwrite=args.overwrite))
    pd.set_option("display.width", 160)
    if args.capabilities is not None:
        if args.analysis == "robustness":
            raise ValueError("--capabilities cannot be used with robustness, which refits DATA")
        if not args.capabilities.is_file():
            raise FileNotFoundError(f"--capabilities file {args.capabilities} does not exist")
        fit = an.as_capabilities(pd.read_csv(args.capabilities), name=str(args.capabilities))
        print(f"capabilities: {args.capabilities} ({len(fit)} models; no refit)")
    else:
        table = _read_data(args)
        fit = fit_stitching(table, BenchmarkAnchor(args.anchor), args.l2)
        print(f"stitching fit: {table.n_models} models, {table.n_benchmarks} benchmarks, "
              f"cost {fit.cost:.4f}, converged {fit.converged}")
        out.write("capabilities.csv", fit.capabilities.to_csv)

    if args.analysis in _VIEWS:
        from ._eci_views import run as run_view

        return run_view(args, fit, None if args.capabilities is not None else table, out, _save,
                        raw_dir=raw_dir)
    if args.analysis == "trends":
        trend = an.fit_frontier_trend(fit, top_n=args.top_n)
        draws = None
        if args.bootstrap:
            if args.capabilities is not None:
                raise ValueError("--bootstrap needs a fit of DATA; drop --capabilities")
            from platinum_jax.stitching import bootstrap

            draws = bootstrap(fit, args.bootstrap, seed=args.seed, level=args.level, progress=True)
        fc = an.forecast_capability(trend, until=args.until, level=args.level,
                                    capability_draws=draws)
        out.write("frontier.csv", trend.models.to_csv)
        out.write("trend_summary.csv", trend.summary(args.level).to_csv)
        out.write("forecast.csv", fc.to_csv)
        print(trend.summary(args.level).to_string())
        last = fc.iloc[-1]
        day = fc.index[-1]
        print(f"forecast for {day.day} {day:%B %Y} ({day.date()}): {last['capability']:.2f} "
              f"(CI {last['ci_low']:.2f}-{last['ci_high']:.2f}, PI {last['pi_low']:.2f}-"
              f"{last['pi_high']:.2f}); paper: {an.PAPER_TREND_REFERENCE['forecast_capability']} "
              "for October 2028 (no day given)")
        fig, ax = plt.subplots(figsize=(9, 5))
        an.plot_trend(trend, fc, ax=ax)
        _save(fig, out, "trend.png")
    elif args.analysis == "progress":
        from platinum_jax.importers import read_distilled_models, read_model_compute

        compute = read_model_compute(compute_path)
        distilled = None if args.keep_distilled else read_distilled_models(raw_dir)
        res = an.fit_algorithmic_progress(fit, compute, distilled=distilled,
                                          method=args.progress_method, top_n=args.top_n,
                                          n_boot=args.n_boot, level=args.level, seed=args.seed)
        out.write("progress_models.csv", res.models.to_csv)
        out.write("progress_summary.csv", res.summary().to_csv)
        out.write("progress_bootstrap.csv", res.bootstrap.to_csv)
        out.write("progress_excluded.csv", res.excluded.to_csv, index=False)
        print(f"algorithmic progress ({args.progress_method} method):")
        print(res.summary().to_string())
        if len(res.family_slopes):
            print(res.family_slopes.to_string())
        fig, ax = plt.subplots(figsize=(9, 5))
        an.plot_progress(res, ax=ax)
        _save(fig, out, "progress.png")
    elif args.analysis == "acceleration":
        bp = an.detect_acceleration(fit, threshold=args.threshold, top_n=args.top_n)
        out.write("breakpoint.csv", bp.summary().to_csv, index=False)
        out.write("breakpoint_grid.csv", bp.grid.to_csv, index=False)
        print(bp.summary().T.to_string())
        fig, ax = plt.subplots(figsize=(9, 5))
        an.plot_acceleration(bp, ax=ax)
        _save(fig, out, "breakpoint.png")
        if args.simulate:
            reps, noise, factors = args.replicates, args.noise, args.factors
            if args.quick:
                reps, noise, factors = 3, [1.0, 4.0], [1.0, 2.0]
            config = None
            if args.protocol == "paper":
                fp = {} if args.fp_replicates is None else {"fp_replicates": args.fp_replicates}
                if args.quick:
                    fp = {"fp_replicates": 3, "fp_noise_levels": (1.0, 4.0)}
                config = an.PaperWorldConfig(max_wait=args.max_wait, **fp)
            study = an.simulate_detection(
                config, protocol=args.protocol, factors=factors, noise_levels=noise,
                n_replicates=reps, threshold=args.threshold, seed=args.seed,
            )
            print(f"detection study ({args.protocol} protocol)")
            out.write("detection_runs.csv", study.runs.to_csv, index=False)
            if study.false_positive_runs is not None:
                out.write("false_positive_runs.csv", study.false_positive_runs.to_csv,
                          index=False)
            out.write("detection_summary.csv", study.summary.to_csv, index=False)
            out.write("detection_vs_paper.csv", study.paper_comparison().to_csv)
            print(study.summary.to_string())
            cmp = study.paper_comparison()
            print(cmp.to_string())
            lat, fpr = (cmp.loc["median_latency_months_2x_at_1x_noise"],
                        cmp.loc["mean_false_positive_rate"])
            span = (f"95% interval {lat['low']:.2f}-{lat['high']:.2f}" if pd.notna(lat["low"])
                    else "too few worlds for a 95% interval")
            print(f"detection of a 2x acceleration at 1x noise: median {lat['value']:.2f} months "
                  f"over {int(lat['n_worlds'])} detected worlds ({span}; paper 2-3 months); "
                  "false positives "
                  f"{100 * fpr['value']:.1f}% +- {100 * fpr['se']:.1f}% (binomial SE) over "
                  f"{int(fpr['n_worlds'])} worlds without acceleration (paper: about 38%)")
            fig, axes = plt.subplots(1, 2, figsize=(11, 4))
            an.plot_detection_study(study, axes=axes)
            _save(fig, out, "detection.png")
    elif args.analysis == "horizons":
        from platinum_jax.importers import read_metr_horizons

        hz = an.fit_time_horizons(fit, read_metr_horizons(raw_dir))
        out.write("horizon_data.csv", hz.data.to_csv)
        out.write("horizon_summary.csv", hz.summary(args.level).to_csv)
        grid = hz.predict(pd.Series(range(0, 9)) * 0.5, level=args.level)
        out.write("horizon_mapping.csv", grid.to_csv)
        print(hz.summary(args.level).to_string())
        n_train = int((hz.data["paper_split"] == "train").sum())
        print(f"time-horizon R^2: {hz.r2:.3f} on the full sample ({len(hz.data)} models); "
              f"{hz.split_r2_train:.3f} on the training part ({n_train} models) and "
              f"{hz.split_r2_test:.3f} on the held-out part of the paper's split (a shuffle of "
              f"the METR rows with test share 0.4 and seed 42, as in Epoch's code); paper: "
              f"{an.PAPER_HORIZON_REFERENCE['r2']} on its training part")
        if len(hz.unmatched):
            print(f"{len(hz.unmatched)} METR model(s) have no capability in DATA: "
                  f"{', '.join(hz.unmatched['model'])}")
        fig, ax = plt.subplots(figsize=(8, 5))
        an.plot_horizons(hz, ax=ax)
        _save(fig, out, "horizons.png")
    else:
        anchors = an.anchor_robustness(table, args.anchors, baseline=fit, l2=args.l2,
                                       progress=True)
        loo = an.leave_benchmarks_out(table, args.leave_out, baseline=fit, l2=args.l2)
        out.write("anchor_robustness.csv", anchors.summary.to_csv)
        out.write("anchor_capabilities.csv", anchors.capabilities.to_csv)
        out.write("leave_out_robustness.csv", loo.summary.to_csv)
        print(anchors.summary.to_string())
        print(loo.summary[["spearman", "kendall", "mean_abs_shift"]].describe().to_string())
        fig, axes = plt.subplots(1, 2, figsize=(12, 5))
        an.plot_robustness(anchors, ax=axes[0])
        an.plot_robustness(loo, ax=axes[1])
        _save(fig, out, "robustness.png")
    return 0
