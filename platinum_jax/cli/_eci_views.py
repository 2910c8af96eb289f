"""The ``analyze`` views on the Epoch Capabilities Index scale: eci, lag, breakpoints, penalty, baskets,
shapes.

Thin wrappers over :mod:`platinum_jax.analysis`; ``analyze.py`` registers the options and hands
the fitted model here.
"""

from __future__ import annotations

import argparse

VIEWS = ("eci", "lag", "breakpoints", "penalty", "baskets", "shapes")

HELP = """\
  eci           the Epoch Capabilities Index: capabilities mapped so that two anchor models take
                fixed values (--eci-anchors; default claude-3-5-sonnet-20240620 = 130 and
                gpt-5-2025-08-07_medium = 150), intervals from a bootstrap over scores
                (--eci-replicates, default 100; --eci-level, default 0.90), --min-benchmarks to
                show only models with enough benchmarks, and the Elo-style scale (+200 points =
                3x the odds on a benchmark of average slope); on an Epoch raw/ directory the
                scores are prepared as Epoch prepares its index (--prepare epoch, the default
                for eci: baseline-normalised, one model per release; --prepare paper for the
                paper's raw fractions)
  lag           months each model trails the frontier (--lag-method observed|trend), with a
                bootstrap interval; --lag-models picks the models reported;
                --lag-organizations adds each organisation's best model over time
  breakpoints   slope ratio of the two-piece frontier trend at every breakpoint of a grid
                (--n-breakpoints), with bootstrap intervals
  penalty       refits over a grid of penalty strengths (--l2-grid; --penalty l2 and/or
                log_slope): how capabilities, the trend per year and the forecast move
  baskets       a domain index on a benchmark subset (--basket NAMES or --basket-tag
                math|coding with --raw-dir; --basket-fresh keeps per model the benchmarks
                released after it), --basket-mode project (benchmark parameters frozen
                from the full fit) or refit; in project mode each model's subset - general
                difference with a standard error, interval and p-value from --difference-draws
                simulated refits, adjusted across models (--adjust holm|bh|none)
  shapes        trajectory shapes of the frontier (--shapes linear quadratic power logistic)
                as NumPyro regressions with the bootstrap spread of each capability as
                measurement error, ranked by PSIS-LOO (elpd differences, SEs, Pareto k);
                --shape-warmup, --shape-samples, --shape-chains set NUTS
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("ECI views (eci, lag, breakpoints, penalty, baskets, shapes)")
    g.add_argument("--eci-anchors", nargs=4, metavar=("MODEL_LO", "VALUE_LO", "MODEL_HI", "VALUE_HI"),
                   help="the two anchor models of the index and their values (default "
                        "claude-3-5-sonnet-20240620 130 gpt-5-2025-08-07_medium 150)")
    g.add_argument("--eci-replicates", type=int, default=100,
                   help="bootstrap refits for the intervals of the ECI views (default 100; 0 = none)")
    g.add_argument("--eci-level", type=float, default=0.90, help="interval level (default 0.90)")
    g.add_argument("--min-benchmarks", type=int, default=None,
                   help="eci: show only models scored on at least this many benchmarks")
    g.add_argument("--lag-method", choices=("observed", "trend"), default="observed",
                   help="lag: the frontier's first release as capable (default) or the trend line")
    g.add_argument("--lag-models", nargs="+", default=None, help="lag: models to report")
    g.add_argument("--lag-organizations", action="store_true",
                   help="lag: also each organisation's best model so far (organisations from the "
                        "compute table, --compute or model_compute.csv beside DATA)")
    g.add_argument("--n-breakpoints", type=int, default=40, help="breakpoints: grid size")
    g.add_argument("--l2-grid", type=float, nargs="+",
                   default=[1e-4, 1e-3, 0.01, 0.03, 0.1, 0.3, 1.0],
                   help="penalty: penalty strengths to refit")
    g.add_argument("--penalty", nargs="+", choices=("l2", "log_slope"), default=["l2"],
                   help="penalty: l2 (the paper's, alpha^2) and/or log_slope ((ln alpha)^2)")
    g.add_argument("--basket", nargs="+", default=None, help="baskets: benchmark names")
    g.add_argument("--basket-tag", choices=("math", "coding"), default=None,
                   help="baskets: the benchmarks flagged is_math / is_coding (needs --raw-dir)")
    g.add_argument("--basket-mode", choices=("project", "refit"), default="project",
                   help="baskets: freeze benchmark parameters (project) or refit the subset")
    g.add_argument("--basket-fresh", action="store_true",
                   help="baskets: keep, for each model, only the basket benchmarks released after "
                        "it (the uncontaminated subset; project mode; every release date needed). "
                        "With --basket and --basket-tag absent, the basket is every benchmark")
    g.add_argument("--difference-draws", type=int, default=200,
                   help="baskets: simulated refits (a wild bootstrap of the fit) for the standard "
                        "error, interval and p-value of each model's basket - full difference "
                        "(default 200; 0 = none; project mode)")
    g.add_argument("--adjust", choices=("holm", "bh", "none"), default="holm",
                   help="baskets: adjustment of the subset - general p-values across models: "
                        "holm (family-wise error, default), bh (false-discovery rate), none")
    g.add_argument("--shapes", nargs="+", choices=("linear", "quadratic", "power", "logistic"),
                   default=["linear", "quadratic", "power", "logistic"],
                   help="shapes: trajectory shapes to compare (default all four)")
    g.add_argument("--shape-warmup", type=int, default=500, help="shapes: NUTS warm-up steps")
    g.add_argument("--shape-samples", type=int, default=1000, help="shapes: NUTS draws per chain")
    g.add_argument("--shape-chains", type=int, default=4, help="shapes: NUTS chains")


def add_eci_scale_arguments(group, *, replicates_help: str | None = None) -> None:
    """``--scale raw|eci``, ``--eci-anchors``, ``--eci-level`` (and, for a point fit,
    ``--eci-replicates`` with ``replicates_help``) of the fitting commands."""
    group.add_argument("--scale", choices=("raw", "eci"), default="raw",
                       help="raw: the fit's own scale only (default); eci: also the Epoch "
                            "Capabilities Index beside it (eci, eci_lower, eci_upper in "
                            "capabilities.csv; edi, edi_lower, edi_upper, slope_eci in "
                            "benchmarks.csv); on an Epoch directory eci implies --prepare epoch "
                            "unless --prepare paper")
    group.add_argument("--eci-anchors", nargs=4,
                       metavar=("MODEL_LO", "VALUE_LO", "MODEL_HI", "VALUE_HI"),
                       help="--scale eci: the two anchor models and their values (default "
                            "claude-3-5-sonnet-20240620 130 gpt-5-2025-08-07_medium 150)")
    if replicates_help is not None:
        group.add_argument("--eci-replicates", type=int, default=100, help=replicates_help)
    group.add_argument("--eci-level", type=float, default=0.90,
                       help="--scale eci: interval level (default 0.90)")


def check_eci_scale_args(args, table) -> None:
    """The ``--scale eci`` options checked before a fit: level, replicates, anchor names."""
    if args.scale != "eci":
        return
    replicates = getattr(args, "eci_replicates", 0)
    if replicates < 0 or replicates == 1:
        raise ValueError(f"--eci-replicates must be 0 or at least 2 (got {replicates})")
    if not 0 < args.eci_level < 1:
        raise ValueError(f"--eci-level must be in (0, 1) (got {args.eci_level})")
    for name, _ in eci_anchors_from_args(args):
        table.model_position(" ".join(name.split()))


def eci_columns(res):
    """The ECI columns of an :class:`~platinum_jax.analysis.EciResult` as they join the
    capabilities and benchmarks tables, and what the run records of the map."""
    m = res.models[["eci", "lower", "upper"]].rename(
        columns={"lower": "eci_lower", "upper": "eci_upper"})
    b = res.benchmarks[["edi", "lower", "upper", "slope_eci"]].rename(
        columns={"lower": "edi_lower", "upper": "edi_upper"})
    info = {"eci_offset": res.offset, "eci_scale": res.scale,
            "eci_anchors": [list(a) for a in res.anchors], "eci_level": res.level,
            "eci_replicates": 0 if res.draws is None else len(res.draws)}
    return m, b, info


def eci_anchors_from_args(args):
    """The two (model, value) anchors of ``--eci-anchors`` (default: Epoch's)."""
    from platinum_jax.analysis import DEFAULT_ECI_ANCHORS

    # Under Epoch's preparation a model version stands for the group of its release.
    groups = getattr(args, "model_groups", None) or {}
    if args.eci_anchors is None:
        return tuple((groups.get(m, m), v) for m, v in DEFAULT_ECI_ANCHORS)
    m1, v1, m2, v2 = args.eci_anchors
    try:
        return ((groups.get(m1, m1), float(v1)), (groups.get(m2, m2), float(v2)))
    except ValueError:
        raise ValueError(f"--eci-anchors takes MODEL VALUE MODEL VALUE; got {args.eci_anchors}") from None


def run(args: argparse.Namespace, fit, table, out, save, raw_dir=None) -> int:
    """Run one view on ``fit`` (a StitchingFit; ``table`` its scores) and write to ``out``."""
    import matplotlib.pyplot as plt

    from platinum_jax import analysis as an

    if args.eci_replicates < 0:
        raise ValueError(f"--eci-replicates must be >= 0 (got {args.eci_replicates})")
    if table is None and (args.analysis not in ("lag", "breakpoints", "shapes") or args.eci_replicates):
        raise ValueError(
            f"analyze {args.analysis} needs a fit of DATA (the ECI scale, refits or a bootstrap); "
            "drop --capabilities (only lag, breakpoints and shapes with --eci-replicates 0 can "
            "reuse one)"
        )
    level, anchors = args.eci_level, eci_anchors_from_args(args)
    boot = None
    if args.eci_replicates and args.analysis != "penalty":
        from platinum_jax.stitching import bootstrap

        boot = bootstrap(fit, args.eci_replicates, seed=args.seed, level=level, progress=True)
    if args.analysis == "eci":
        res = an.eci_scale(fit, anchors=anchors, bootstrap=boot, replicates=0, level=level,
                           min_benchmarks=args.min_benchmarks)
        elo = an.elo_scale(fit, reference=(anchors[0][0], 1000.0), bootstrap=boot, level=level)
        out.write("eci.csv", res.models.to_csv)
        out.write("edi.csv", res.benchmarks.to_csv)
        out.write("eci_summary.csv", res.summary().to_csv)
        out.write("elo.csv", elo.to_csv)
        print(res.summary().to_string())
        outside = int(res.summary().loc["outside_interval", "value"])
        if outside:
            print(f"note: {outside} of {len(res.models)} estimates lie outside their own "
                  f"{100 * level:.0f}% bootstrap interval (the refits are shifted from the fit; "
                  f"{args.eci_replicates} refits): more --eci-replicates steadies the interval's "
                  "ends, not the shift")
        cols = ["eci", "lower", "upper", "n_benchmarks"]
        print(res.shown[cols].head(15).round(2).to_string())
        print(f"Elo-style scale: {elo.attrs['points_per_unit']:.1f} points per capability unit "
              f"(average slope {elo.attrs['average_slope']:.3f}; +200 points = 3x odds)")
        fig, ax = plt.subplots(figsize=(10, 6))
        an.plot_eci(res, ax=ax)
        save(fig, out, "eci.png")
    elif args.analysis == "lag":
        lag = an.frontier_lag(fit, models=args.lag_models, draws=boot, method=args.lag_method,
                              top_n=args.top_n, level=level)
        out.write("frontier_lag.csv", lag.to_csv)
        if args.lag_organizations:
            from platinum_jax.importers import read_model_compute

            path = args.compute if args.compute is not None else args.data.parent / "model_compute.csv"
            if not path.is_file():
                raise FileNotFoundError(f"--lag-organizations: compute table {path} not found; pass --compute PATH")
            orgs = read_model_compute(path)["organization"]
            by_org = an.organization_lag(fit, orgs, draws=boot, level=level)
            out.write("organization_lag.csv", by_org.to_csv)
            print(f"organisations' best models ({len(by_org)} releases; {by_org.attrs['unassigned']} "
                  "models without an organisation in the compute table): latest lag per organisation")
            latest = by_org.groupby(level=0).tail(1)[["lag_months", "lower", "upper"]]
            print(latest.round(2).to_string())
        print(lag.sort_values("release_date")[["capability", "lag_months", "lower", "upper"]]
              .tail(20).round(2).to_string())
        fig, ax = plt.subplots(figsize=(9, 5))
        an.plot_frontier_lag(lag, ax=ax)
        save(fig, out, "frontier_lag.png")
    elif args.analysis == "breakpoints":
        sweep = an.slope_ratio_sweep(fit, n_grid=args.n_breakpoints, draws=boot, top_n=args.top_n,
                                     level=level)
        out.write("slope_ratio_sweep.csv", sweep.to_csv)
        print(sweep.round(3).to_string())
        finite = sweep["ratio"].dropna()
        if len(finite):
            print(f"slope ratio over the breakpoints: {finite.min():.2f} to {finite.max():.2f}")
        fig, ax = plt.subplots(figsize=(9, 5))
        an.plot_slope_ratio(sweep, ax=ax, threshold=args.threshold)
        save(fig, out, "slope_ratio_sweep.png")
    elif args.analysis == "penalty":
        sweep = an.penalty_sweep(table, args.l2_grid, anchor=fit.anchor, penalties=args.penalty,
                                 baseline_l2=args.l2, until=args.until, top_n=args.top_n,
                                 eci_anchors=anchors)
        out.write("penalty_summary.csv", sweep.summary.to_csv, index=False)
        out.write("penalty_capabilities.csv", sweep.capabilities.to_csv)
        print(sweep.summary.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        fig, axes = plt.subplots(1, 3, figsize=(15, 4))
        an.plot_penalty_sweep(sweep, axes=axes)
        save(fig, out, "penalty_sweep.png")
    elif args.analysis == "shapes":
        res = an.compare_shapes(fit, draws=boot, shapes=args.shapes, top_n=args.top_n,
                                num_warmup=args.shape_warmup, num_samples=args.shape_samples,
                                num_chains=args.shape_chains, level=level, seed=args.seed)
        out.write("shapes_compare.csv", res.comparison.to_csv)
        out.write("shapes_pareto_k.csv", res.pareto_k.to_csv)
        out.write("shapes_curves.csv", res.curves.to_csv)
        out.write("shapes_diagnostics.csv", res.diagnostics.to_csv)
        cols = ["elpd_loo", "p_loo", "elpd_diff", "se", "dse", "weight", "max_pareto_k", "n_bad_pareto_k"]
        print(f"{len(res.data)} frontier models; measurement error "
              + ("none (no bootstrap)" if boot is None else f"from {args.eci_replicates} bootstrap refits"))
        print(res.comparison[cols].round(3).to_string())
        print(res.diagnostics.round(3).to_string())
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [3, 2]})
        an.plot_shapes(res, axes=axes)
        save(fig, out, "shapes.png")
    else:
        if args.basket is not None and args.basket_tag is not None:
            raise ValueError("baskets takes one of --basket NAMES or --basket-tag TAG, not both")
        if args.basket is None and args.basket_tag is None and not args.basket_fresh:
            raise ValueError("baskets needs --basket NAMES, --basket-tag TAG or --basket-fresh")
        names, label = args.basket, "basket"
        if args.basket_tag is not None:
            if raw_dir is None:
                raise ValueError("--basket-tag needs --raw-dir (the Epoch raw/ directory)")
            from platinum_jax.importers import read_benchmark_info

            names = an.basket_benchmarks(read_benchmark_info(raw_dir), args.basket_tag,
                                         available=fit.table.benchmarks)
            label = args.basket_tag
        if args.basket_fresh:
            label = "fresh" if args.basket_tag is None else f"fresh {label}"
        draws = args.difference_draws if args.basket_mode == "project" else 0
        if args.difference_draws < 0:
            raise ValueError(f"--difference-draws must be >= 0 (got {args.difference_draws})")
        if args.basket_mode == "refit" and args.difference_draws:
            print("refit mode: no subset - general test (the refit's benchmark parameters are "
                  "not the full fit's; use --basket-mode project for it)")
        res = an.domain_index(fit, names, mode=args.basket_mode, name=label,
                              eci_anchors=anchors, bootstrap=boot, level=level,
                              fresh=args.basket_fresh, difference_draws=draws,
                              adjust=args.adjust, seed=args.seed)
        out.write("domain_index.csv", res.models.to_csv)
        print(f"{label} basket ({args.basket_mode} mode): {len(res.benchmarks)} benchmarks: "
              f"{', '.join(res.benchmarks)}")
        print(res.models.sort_values("basket", ascending=False).head(15).round(2).to_string())
        largest = res.models.reindex(
            res.models["difference"].abs().sort_values(ascending=False).index).head(10)
        cols = ["full", "basket", "difference", "difference_sd", "difference_lower",
                "difference_upper", "p_value", "p_adjusted", "n_benchmarks"]
        print(f"largest {label} - general differences ({100 * level:.0f}% intervals, p adjusted "
              f"by {args.adjust}):")
        print(largest[cols].round(3).to_string())
        fig, axes = plt.subplots(1, 2, figsize=(13, 6))
        an.plot_domain_index(res, ax=axes)
        save(fig, out, "domain_index.png")
    return 0
