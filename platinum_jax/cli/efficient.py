"""``platinum-jax subset`` and ``platinum-jax score``: efficient evaluation from a fit."""

from __future__ import annotations

import argparse

SUBSET_DESCRIPTION = """\
Choose K items of a fitted item model (a directory written by `platinum-jax fit`) to evaluate
new AI models on, and write them to OUT/subset.csv (item, weight, group).

Methods (--method):
  fisher      greedy maximum expected information about the ability over the fitted models'
              ability distribution (spreads the items over the ability range)
  anchor      anchor points: k-means of the items' response patterns, the item nearest each
              centre, weighted by its cluster's share (needs --data)
  stratified  random within bins of the items' mean response (needs --data)
  random      uniform at random
The weights sum to 1: sum(weight * response) is the method's plain estimate of the score;
`platinum-jax score` gives the item-model estimate with intervals.

Items are screened first (negative or near-zero discrimination; with --data also items solved
by all or none, a negative item-rest correlation, infit/outfit above 2): the flagged ones are
never chosen and are listed with their reason in OUT/screened.csv (--no-screen keeps them).
"""

SCORE_DESCRIPTION = """\
Estimate the ability and the full-benchmark score (mean response over every item of the fit)
of new subjects from their responses on any items of the fit, with intervals, and write
OUT/scores.csv. RESPONSES is a long CSV or Parquet file (subject, item, response[, trials]).

By default (--estimator combined) the score is the combined estimate (`combined_scores`): the
item model's prediction plus the observed residuals, shrunk by an empirical-Bayes weight, for
any design. Its bias spread and its interval (--interval, 90% by default) are calibrated on
the fit's own models (--data, the responses the fit was made from), held out the way new
models differ from them: the models that answered every item are split into --folds folds,
each group of models kept in one fold, the item model is refitted without each fold, and the
fold's models are scored by the same procedure replayed: the subset's method and size
(--subset) or, without it, an adaptive test as long as the median test of the subjects that
left items unseen. The groups:
  --groups CSV          subject,group (e.g. families or release periods)
  a column of --data    family or base_model (whole families together), else release_date or
                        date (the models in --folds blocks of release dates, so that the
                        newest fold is scored by a bank of older models)
  --groups random       models at random: intervals that hold for models like the fit's,
                        not for new families or later releases
With none of these the run stops and says so. The interval is split-conformal, studentised or
one width for all, whichever covers the left-out folds better; OUT/calibration.json records
the grouping, the choice and the calibration's own coverage on each left-out fold. A subject
that answered every item has its exact score (its mean response), an interval of width 0.

--estimator item-model gives the ability posterior's interval (exact on a grid, items held at
the fit, variance scaled by Pearson's dispersion from --data or by --dispersion): it holds when
the item model is right about the new subjects, which new model families often break, and it
is not calibrated on anything. --estimator assisted with --subset (drawn by --method random or
stratified) gives the model-assisted estimate: the item model's prediction over every item
plus the design-weighted mean residual of the drawn items, with a design-based interval
(finite-population corrected); every subject must have answered every item of the subset.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("subset", help="choose K items for evaluating new models",
                              description=SUBSET_DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("fit_dir", metavar="FIT_DIR", help="directory written by `platinum-jax fit`")
    p.add_argument("--k", type=int, required=True, help="number of items")
    p.add_argument("--method", choices=("fisher", "anchor", "stratified", "random"),
                   default="fisher", help="selection method (default fisher)")
    p.add_argument("--data", help="the responses the fit was made from (anchor, stratified)")
    p.add_argument("--strata", type=int, default=10, help="bins of --method stratified")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--no-screen", action="store_true",
                   help="do not exclude the items that item screening flags")
    _common(p)
    p.set_defaults(func=run_subset)

    s = subparsers.add_parser("score", help="abilities and full-benchmark scores of new "
                              "subjects from a few items, with intervals",
                              description=SCORE_DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("fit_dir", metavar="FIT_DIR", help="directory written by `platinum-jax fit`")
    s.add_argument("responses", metavar="RESPONSES", help="the new subjects' responses")
    s.add_argument("--data", help="the responses the fit was made from: the calibration "
                        "models of the default estimator, and Pearson's dispersion")
    s.add_argument("--dispersion", type=float, default=None,
                   help="over-dispersion factor phi (default: Pearson's from --data)")
    s.add_argument("--interval", type=float, default=0.9, help="interval probability (0.9)")
    s.add_argument("--seed", type=int, default=0, help="random seed of the draws (default 0)")
    s.add_argument("--estimator", choices=ESTIMATORS, default="combined",
                   help="combined (default: calibrated on the fit's models, needs --data), "
                        "item-model (the model's own interval, uncalibrated) or assisted "
                        "(design-based, needs a random or stratified --subset)")
    s.add_argument("--subset", help="subset.csv of `platinum-jax subset`: the design to "
                                    "calibrate (combined) or to weigh the residuals by "
                                    "(assisted)")
    s.add_argument("--folds", type=int, default=None,
                   help=f"calibration folds of the combined estimate (default {FOLDS})")
    s.add_argument("--groups", help="the calibration folds' groups: a CSV of subject,group, "
                                    "or 'random' (default: the family, base_model, "
                                    "release_date or date column of --data)")
    s.add_argument("--repeats", type=int, default=None,
                   help=f"draws per fold of a random design in the calibration (default "
                        f"{REPEATS})")
    s.add_argument("--scale", choices=("raw", "eci"), default="raw",
                   help="eci: also each new model's ability on the Epoch Capabilities Index "
                        "(eci, eci_sd, eci_lo, eci_hi), by the map that sends the fit's two "
                        "anchor models to their values; a fit of the Rosetta model only. The "
                        "interval holds the benchmarks and anchors at the fit (no refit)")
    s.add_argument("--eci-anchors", nargs=4, metavar=("MODEL_LO", "VALUE_LO", "MODEL_HI", "VALUE_HI"),
                   help="--scale eci: the fit's two anchor models and their values (default "
                        "claude-3-5-sonnet-20240620 130 gpt-5-2025-08-07_medium 150)")
    _common(s)
    s.set_defaults(func=run_score)


ESTIMATORS = ("combined", "item-model", "assisted")
# The calibration's defaults: folds (also the number of release-date blocks) and draws a fold.
FOLDS, REPEATS = 5, 3
# Columns of --data that name how the fit's models differ from new ones, in order of use:
# lineage first (a new family is the larger departure), then release time.
FAMILY_COLUMNS = ("family", "base_model")
DATE_COLUMNS = ("release_date", "date")


def _eci_map(args):
    """``(a, b)`` of ``eci = a + b ability`` from the fit's two anchor models (``--scale eci``),
    checked before anything is scored."""
    import pandas as pd

    from platinum_jax._names import UnknownNameError, close_matches_message

    from ._eci_views import eci_anchors_from_args

    subjects = pd.read_csv(f"{args.fit_dir}/subjects.csv", index_col=0)
    if "capability" not in subjects.columns:
        raise ValueError(f"--scale eci maps the Rosetta model's capabilities; {args.fit_dir} is a "
                         "fit of another model (fit --model rosetta makes one)")
    (m_lo, v_lo), (m_hi, v_hi) = eci_anchors_from_args(args)
    for m in (m_lo, m_hi):
        if m not in subjects.index:
            raise UnknownNameError(close_matches_message("model", m, list(subjects.index))
                                   + "; name the fit's anchor models with --eci-anchors")
    c_lo, c_hi = float(subjects.loc[m_lo, "capability"]), float(subjects.loc[m_hi, "capability"])
    if c_hi <= c_lo:
        raise ValueError(f"--eci-anchors: {m_lo!r} = {v_lo:g} is more capable than {m_hi!r} = "
                         f"{v_hi:g} in the fit; give the higher value to the stronger model")
    b = (v_hi - v_lo) / (c_hi - c_lo)
    return v_lo - b * c_lo, b


def _on_eci_scale(scores, a: float, b: float):
    """``scores`` with the ability and its interval on the ECI scale."""
    if "ability" not in scores.columns:
        raise ValueError("--scale eci maps the ability posterior, which the design-based "
                         "estimate (--subset without --combined) does not give; drop --subset")
    return scores.assign(eci=a + b * scores["ability"], eci_sd=b * scores["ability_sd"],
                         eci_lo=a + b * scores["ability_lo"], eci_hi=a + b * scores["ability_hi"])


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="output directory (created if missing)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the files an earlier run of this command wrote in --out")


def _bank(args, dispersion):

    from platinum_jax._runtime import enable_float64

    enable_float64()
    from platinum_jax.cli._common import note_unconverged
    from platinum_jax.efficient import item_bank, load_fit

    fit = load_fit(args.fit_dir, args.data)  # with --data, its responses are checked as fit's
    note_unconverged(args.fit_dir, args.command)
    return item_bank(fit, dispersion=dispersion)


def _read_subset(path: str, probability: bool = True):
    """subset.csv of `platinum-jax subset`, refused unless its method drew a probability
    sample (the design-based interval holds only for those) when ``probability``."""
    import pandas as pd

    from platinum_jax.efficient import PROBABILITY_SAMPLES

    try:
        subset = pd.read_csv(path, index_col="item")
    except (FileNotFoundError, ValueError) as err:
        raise ValueError(f"--subset {path}: cannot read a subset.csv with columns "
                         f"item, weight, group, method ({err})") from err
    if "method" not in subset.columns:
        raise ValueError(f"--subset {path} does not record how its items were chosen (no "
                         "method column); the design-based interval needs a random sample: "
                         "rerun `platinum-jax subset --method random` (or stratified), which "
                         "records it")
    methods = sorted(set(subset["method"].astype(str)))
    if not probability:
        from platinum_jax.efficient import SELECTION_METHODS

        if len(methods) != 1 or methods[0] not in SELECTION_METHODS:
            raise ValueError(f"--subset {path} records method {', '.join(methods)}; give a "
                             "subset.csv of one `platinum-jax subset` run (methods "
                             f"{', '.join(SELECTION_METHODS)})")
        return subset
    if any(m not in PROBABILITY_SAMPLES for m in methods):
        raise ValueError(f"--subset {path} was chosen by --method {', '.join(methods)}, not a "
                         "probability sample, so no design-based interval holds for it; score "
                         "without --subset (the item-model estimate), or draw the subset with "
                         f"`platinum-jax subset --method {' or '.join(PROBABILITY_SAMPLES)}`")
    return subset


def run_subset(args: argparse.Namespace) -> int:
    if args.k < 1:
        raise ValueError(f"--k must be >= 1 (got {args.k})")
    if args.method in ("anchor", "stratified") and not args.data:
        raise ValueError(f"--method {args.method} needs --data, the responses the fit was made "
                         "from (it uses the observed response patterns)")
    from platinum_jax._outputs import output_directory
    from platinum_jax.efficient import irt_mdad, screen_items, select_items

    bank = _bank(args, 1.0)
    screened = None if args.no_screen else screen_items(bank)
    flagged = [] if screened is None else screened.index[screened.flagged]
    chosen = select_items(bank, args.k, args.method, seed=args.seed, strata=args.strata,
                          exclude=flagged)
    with output_directory(args.out, "subset", overwrite=args.overwrite) as out:
        path = out.write_text("subset.csv", chosen.to_csv())
        if screened is not None:
            out.write_text("screened.csv", screened[screened.flagged].to_csv())
    print(f"chose {len(chosen)} of {bank.n_items} items by {args.method}"
          + ("" if screened is None else f" after screening out {len(flagged)} (screened.csv)")
          + f"; wrote {path}")
    m = irt_mdad(bank, chosen.index).iloc[0]
    print(f"MDAD (5% level, 80% power) at the fitted models' mean ability: "
          f"{m.mdad_ability:.3g} ability units, {m.mdad_score:.3g} in score")
    return 0


def run_score(args: argparse.Namespace) -> int:
    if not 0 < args.interval < 1:
        raise ValueError(f"--interval must lie strictly between 0 and 1 (got {args.interval})")
    from platinum_jax._outputs import output_directory
    from platinum_jax.data import ResponseTable
    from platinum_jax.efficient import assisted_scores, estimate_scores

    combined = args.estimator == "combined"
    given = [f"--{n}" for n in ("folds", "groups", "repeats") if getattr(args, n) is not None]
    if given and not combined:
        raise ValueError(f"{', '.join(given)} calibrate the combined estimate; drop them or "
                         f"drop --estimator {args.estimator}")
    if combined and not args.data:
        raise ValueError("the default estimator (combined) calibrates its interval on the fit's "
                         "own models: give --data, the responses the fit was made from. "
                         "Without them, --estimator item-model --dispersion PHI gives the item "
                         "model's own interval, which nothing calibrates")
    if args.dispersion is None and not args.data:
        raise ValueError("give --data (the responses the fit was made from, for Pearson's "
                         "dispersion) or --dispersion (1 takes the likelihood at its word)")
    if args.estimator == "assisted" and not args.subset:
        raise ValueError("--estimator assisted weighs the residuals of a drawn subset: give "
                         "--subset (a subset.csv of `platinum-jax subset --method random` or "
                         "stratified)")
    if args.estimator == "item-model" and args.subset:
        raise ValueError("--estimator item-model scores from every answered item; --subset "
                         "applies to combined and assisted: drop it or choose one of those")
    subset = (_read_subset(args.subset, probability=not combined) if args.subset
              else None)
    dispersion = "pearson" if args.dispersion is None else args.dispersion
    eci_map = _eci_map(args) if args.scale == "eci" else None
    if args.scale != "eci" and args.eci_anchors is not None:
        raise ValueError("--eci-anchors applies to --scale eci; add --scale eci or drop it")
    groups = _calibration_groups(args) if combined else None
    bank = _bank(args, dispersion)
    responses = ResponseTable.read(args.responses)
    calibration = None
    if combined:
        scores, calibration = _combined(args, bank, responses, subset, dispersion, groups)
    elif subset is not None:
        scores = assisted_scores(bank, responses, subset, interval=args.interval)
    else:
        scores = estimate_scores(bank, responses, interval=args.interval, seed=args.seed)
    if "ability" in scores.columns:
        # What each subject's items can tell apart: the MDAD against a second model measured
        # as precisely, at the subject's ability (irt_mdad_subjects).
        from platinum_jax.efficient import irt_mdad_subjects

        frame = responses.to_frame()
        given = frame[frame["item"].isin(bank.items)][["subject", "item"]].astype(str)
        mdad = irt_mdad_subjects(bank, given, ability=scores["ability"])
        scores = scores.join(mdad[["mdad_ability", "mdad_score"]])
    if eci_map is not None:
        if "ability" in scores.columns and "ability_sd" not in scores.columns:
            # the combined estimate corrects the score, not the ability: the index maps the
            # ability posterior of the items each subject answered
            post = estimate_scores(bank, responses, interval=args.interval, seed=args.seed)
            scores = scores.join(post[["ability_sd", "ability_lo", "ability_hi"]])
        scores = _on_eci_scale(scores, *eci_map)
    with output_directory(args.out, "score", overwrite=args.overwrite) as out:
        path = out.write_text("scores.csv", scores.to_csv())
        if calibration is not None:
            import json

            out.write_text("calibration.json", json.dumps(calibration, indent=1))
    print(f"scored {len(scores)} subjects on {bank.n_items} items (dispersion "
          f"{bank.dispersion:.3g}); wrote {path}")
    if calibration is not None and "note" in calibration:
        print(f"combined estimate: {calibration['note']} (calibration.json)")
    elif calibration is not None:
        print(f"combined estimate calibrated on {calibration['calibration_models']} models in "
              f"{calibration['folds']} folds grouped {calibration['grouping']} "
              f"({calibration['method']}, k = {calibration['k']}): bias_sd "
              f"{calibration['bias_sd']:.4g}, {calibration['form']} interval covering "
              f"{calibration['calibration_coverage']:.0%} of the left-out folds' models at "
              f"{args.interval:.0%} (calibration.json)")
    elif args.estimator == "item-model":
        print("item-model intervals: the model's own, not calibrated on held-out models (the "
              "default estimator, combined, is)")
    return 0


def _calibration_groups(args):
    """``(groups, how)``: each of the fit's models' calibration group (None: random folds) and
    how they were formed, from ``--groups`` or a column of ``--data``; refused when neither
    names one and ``--groups random`` was not given. Read before any refit, so that a run
    without them stops at once."""
    import pandas as pd

    from platinum_jax.data import ResponseTable

    if args.groups == "random":
        return None, "at random (--groups random)"
    if args.groups:
        try:
            g = pd.read_csv(args.groups, dtype=str)
            groups = g.set_index("subject")["group"]
        except (FileNotFoundError, KeyError, ValueError) as err:
            raise ValueError(f"--groups {args.groups}: cannot read a CSV with columns subject, "
                             f"group ({err})") from err
        if groups.isna().any() or groups.index.duplicated().any():
            raise ValueError(f"--groups {args.groups}: give every subject one group (empty or "
                             "repeated subjects found)")
        return groups, f"by {args.groups}"
    path = args.data
    raw = (pd.read_parquet(path) if str(path).lower().endswith((".parquet", ".pq"))
           else pd.read_csv(path))
    names = ResponseTable.checked_frame(raw, name=f"--data {path}")["subject"].to_numpy()
    for col in FAMILY_COLUMNS + DATE_COLUMNS:
        if col not in raw.columns:
            continue
        values = raw[col]
        if col in DATE_COLUMNS:
            values = pd.to_datetime(values, errors="coerce", format="mixed")
        if values.isna().any():
            i = int(values.isna().to_numpy().argmax())
            raise ValueError(f"--data {path}, column {col}: row {i + 2} has no "
                             f"{'readable date' if col in DATE_COLUMNS else 'value'} "
                             f"({raw[col].iat[i]!r}); fill it, or pass --groups")
        per = pd.Series(values.to_numpy(), index=names)
        clash = per.groupby(level=0).nunique() > 1
        if clash.any():
            raise ValueError(f"--data {path}, column {col}: subject {clash.index[clash][0]!r} "
                             f"has more than one {col}; give each subject one, or pass "
                             "--groups")
        per = per[~per.index.duplicated()]
        if col in FAMILY_COLUMNS:
            return per.astype(str), f"by {col} (column of --data)"
        folds = FOLDS if args.folds is None else args.folds
        order = per.sort_values(kind="stable").index
        blocks = pd.Series((pd.RangeIndex(len(order)) * folds // len(order)).astype(str),
                           index=order)
        return blocks, f"by {col} (column of --data: {folds} blocks of release dates)"
    raise ValueError(
        f"--data {path} names no family, base_model, release_date or date column, and no "
        "--groups was given: the calibration cannot hold the fit's models out the way new "
        "models differ from them. Add such a column, pass --groups CSV (subject,group), or "
        "--groups random for folds at random (intervals that hold for models like the fit's)")


def _combined(args, bank, responses, subset, dispersion, grouping):
    """``combined_scores`` calibrated by ``fit_bias_sd`` on cross-fitted banks of the fit's
    models, replaying the subset's method (or an adaptive test of the median length)."""
    import numpy as np

    from platinum_jax.efficient import combined_scores, cross_fitted_banks, fit_bias_sd

    folds = FOLDS if args.folds is None else args.folds
    repeats = REPEATS if args.repeats is None else args.repeats
    if subset is not None:
        method, k = str(subset["method"].iloc[0]), len(subset)
        partial = k < bank.n_items  # every subject answers the subset's items, no others
    else:
        frame = responses.to_frame()
        counts = frame[frame["item"].isin(bank.items)].groupby("subject").size()
        # The calibration sizes the intervals of the subjects that left items unseen (a
        # subject that answered every item has its exact score), replaying their median test.
        unseen = counts[counts < bank.n_items]
        partial = len(unseen) > 0
        method, k = "cat", int(np.median(unseen if partial else counts)) if len(counts) else 0
        if k < 2:
            raise ValueError(f"{args.responses}: the median subject answered {k} item(s) of "
                             "the fit; the combined estimate needs at least 2")
    if not partial:
        scores = combined_scores(bank, responses, subset, bias_sd=0.0, interval=args.interval)
        return scores, dict(method=method, k=k, interval=args.interval, calibration_models=0,
                            note=f"every subject answered all {bank.n_items} items, so each "
                            "score is its mean response, exactly: the intervals have width 0 "
                            "and no calibration was run")
    groups, how = grouping
    banks = cross_fitted_banks(bank.fit.model, bank.fit.table, folds=folds,
                               dispersion=dispersion, groups=groups, seed=args.seed)
    cal = fit_bias_sd(banks, k, method=method, repeats=repeats, interval=args.interval,
                      seed=args.seed)
    scores = combined_scores(bank, responses, subset, interval=args.interval, **cal.options)
    info = dict(method=method, k=k, folds=folds, repeats=repeats, interval=args.interval,
                grouping=how,
                calibration_models=int(sum(t.subject.nunique() for _, t in banks)),
                calibration_coverage=float(cal.coverage),
                bias_sd=cal.bias_sd, form=cal.form, scale=cal.scale,
                fixed_sd=None if cal.form == "studentised" else cal.fixed_sd,
                fold_coverage=None if cal.fold_coverage is None
                else {str(f): {c: float(v) for c, v in row.items()}
                      for f, row in cal.fold_coverage.iterrows()})
    return scores, info
