"""``platinum-jax cat``: simulate computerised adaptive testing on a response table."""

from __future__ import annotations

import argparse

DESCRIPTION = """\
Simulate a computerised adaptive test for every subject of DATA (a long CSV or Parquet file:
subject, item, response[, trials]), reading each asked item's response from the table, and
write OUT/trace.csv (every step: item, response, posterior ability and its sd, score),
OUT/subjects.csv (final ability, score, items used, and
the MDAD: the smallest ability / score difference to a model measured as precisely that a
5%-level test detects with --power), OUT/items.csv (exposure per item)
and OUT/summary.json (maximum exposure, overlap between subjects' tests).

ITEMS is the items.csv written by `platinum-jax fit` (its directory holds the fit). Items are
chosen by Fisher information under the current posterior; --randomesque picks at random
among the best few; --max-exposure CAP calibrates Sympson-Hetter exposure control on the
subjects of DATA and makes CAP a hard cap on them: the subjects are tested one after another
(in an order drawn from --seed) and an item is closed once floor(CAP x subjects) of them got
it, so summary.json's max_exposure is at most CAP (a CAP those tests cannot fit under, e.g.
CAP x subjects < 1, is refused); for new test-takers CAP is a target; --group-column
names a column of ITEMS whose values are content groups to balance in proportion to their
size. The test stops at --target-se (posterior sd of the ability) or after --budget items.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("cat", help="simulate adaptive testing with exposure control on "
                              "a response table", description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", metavar="DATA", help="the subjects' responses to simulate on")
    p.add_argument("--items", required=True, metavar="ITEMS.csv",
                   help="items.csv of a directory written by `platinum-jax fit`")
    p.add_argument("--budget", type=int, required=True, help="most items per subject")
    p.add_argument("--target-se", type=float, default=0.0,
                   help="stop once the ability's posterior sd is at most this (default: budget)")
    p.add_argument("--randomesque", type=int, default=1,
                   help="choose at random among this many most informative items (default 1)")
    p.add_argument("--max-exposure", type=float, default=None,
                   help="hard cap on the share of subjects given any one item (with "
                   "Sympson-Hetter control calibrated on them)")
    p.add_argument("--group-column", default=None,
                   help="column of ITEMS holding each item's content group (balanced)")
    p.add_argument("--dispersion", type=float, default=1.0,
                   help="over-dispersion factor phi of the likelihood (default 1)")
    p.add_argument("--power", type=float, default=0.8,
                   help="power of the MDAD at level 0.05 (default 0.8)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", required=True, help="output directory (created if missing)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the files an earlier run of this command wrote in --out")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    import pandas as pd

    from platinum_jax._runtime import enable_float64

    enable_float64()
    from platinum_jax._outputs import output_directory
    from platinum_jax.data import ResponseTable
    from platinum_jax.efficient import (
        AdaptiveTest,
        irt_mdad_subjects,
        item_bank,
        load_fit,
        simulate_adaptive,
        sympson_hetter,
    )

    items_path = Path(args.items)
    if not items_path.is_file():
        raise ValueError(f"--items {items_path} is not a file; give the items.csv that "
                         "`platinum-jax fit` wrote")
    groups = None
    if args.group_column is not None:
        meta = pd.read_csv(items_path, index_col=0)
        if args.group_column not in meta.columns:
            raise ValueError(f"--group-column {args.group_column!r} is not a column of "
                             f"{items_path} (columns: {list(meta.columns)})")
        groups = meta[args.group_column]
        groups.index = groups.index.astype(str)
        if groups.isna().any():
            raise ValueError(f"--group-column {args.group_column!r} is empty for "
                             f"{int(groups.isna().sum())} item(s); give every item a group")
    bank = item_bank(load_fit(items_path.parent), dispersion=args.dispersion)
    responses = ResponseTable.read(args.data)
    cat = AdaptiveTest(bank, budget=args.budget, target_se=args.target_se,
                       randomesque=args.randomesque, groups=groups)
    if args.max_exposure is not None:
        try:
            cat = sympson_hetter(cat, responses, cap=args.max_exposure, seed=args.seed)
        except ValueError as exc:
            raise ValueError(f"--max-exposure {args.max_exposure}: {exc}") from None
    result = simulate_adaptive(cat, responses, seed=args.seed + 1)
    realised = float(result.items.exposure.max())
    if args.max_exposure is not None and realised > args.max_exposure:  # the cap's guarantee
        raise ValueError(f"--max-exposure {args.max_exposure} was not met (max exposure "
                         f"{realised:.4g}); this is a bug, please report it")
    subjects = result.subjects.join(irt_mdad_subjects(bank, result, power=args.power))
    summary = {"subjects": len(subjects), "items": bank.n_items,
               "mean_items_used": float(subjects.n_items.mean()),
               "max_exposure": realised, "closed_items": int(result.items.closed.sum()),
               "overlap": result.overlap,
               "median_mdad_ability": float(subjects.mdad_ability.median()),
               "median_mdad_score": float(subjects.mdad_score.median()), "budget": args.budget, "target_se": args.target_se,
               "randomesque": args.randomesque, "max_exposure_cap": args.max_exposure}
    with output_directory(args.out, "cat", overwrite=args.overwrite) as out:
        out.write_text("trace.csv", result.trace.to_csv(index=False))
        out.write_text("subjects.csv", subjects.to_csv())
        out.write_text("items.csv", result.items.to_csv())
        path = out.write_text("summary.json", json.dumps(summary, indent=2))
    print(f"adaptive tests of {len(subjects)} subjects: {summary['mean_items_used']:.1f} of "
          f"{bank.n_items} items on average, max exposure {summary['max_exposure']:.3f}, "
          f"overlap {result.overlap:.3f}; wrote {path.parent}")
    return 0
