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

The ability posterior is computed exactly on a grid with the items held at the fit; the score
adds the observed responses to the predicted rest (with the finite-item term). Real responses
usually vary more than the likelihood says: with --data (the fit's responses) the variance is
scaled by Pearson's dispersion, or give --dispersion (1 = the likelihood taken at its word).

With --subset (the subset.csv of `platinum-jax subset`, drawn by --method random or
stratified) the score is the model-assisted estimate instead: the item model's prediction over
every item plus the design-weighted mean residual of the drawn items, with a design-based
interval (finite-population corrected). It stays unbiased when the item model is wrong about a
new subject; every subject must have answered every item of the subset.
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
    s.add_argument("--data", help="the responses the fit was made from (Pearson's dispersion)")
    s.add_argument("--dispersion", type=float, default=None,
                   help="over-dispersion factor phi (default: Pearson's from --data)")
    s.add_argument("--interval", type=float, default=0.9, help="interval probability (0.9)")
    s.add_argument("--seed", type=int, default=0, help="random seed of the draws (default 0)")
    s.add_argument("--subset", help="subset.csv of `platinum-jax subset` (random or stratified): "
                                    "score with the model-assisted estimate")
    _common(s)
    s.set_defaults(func=run_score)


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


def _read_subset(path: str):
    """subset.csv of `platinum-jax subset`, refused unless its method drew a probability
    sample (the design-based interval holds only for those)."""
    import pandas as pd

    from platinum_jax.efficient._assisted import PROBABILITY_SAMPLES

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
    if args.dispersion is None and not args.data:
        raise ValueError("give --data (the responses the fit was made from, for Pearson's "
                         "dispersion) or --dispersion (1 takes the likelihood at its word)")
    from platinum_jax._outputs import output_directory
    from platinum_jax.data import ResponseTable
    from platinum_jax.efficient import assisted_scores, estimate_scores
    from platinum_jax.models import check_responses

    subset = _read_subset(args.subset) if args.subset else None
    bank = _bank(args, "pearson" if args.dispersion is None else args.dispersion)
    responses = ResponseTable.read(args.responses)
    check_responses(bank.fit.model, responses)  # the same check as `fit` makes
    if subset is not None:
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
    with output_directory(args.out, "score", overwrite=args.overwrite) as out:
        path = out.write_text("scores.csv", scores.to_csv())
    print(f"scored {len(scores)} subjects on {bank.n_items} items (dispersion "
          f"{bank.dispersion:.3g}); wrote {path}")
    return 0
