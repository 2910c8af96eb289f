"""The Rosetta paper's score tables on the command line: the reading options and the loader
shared by the ``stitch`` and ``stitch-bayes`` presets (a tidy CSV or an Epoch AI raw/
directory)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["ECI_DEFAULT", "add_duplicates_argument", "add_min_benchmarks_argument",
           "add_prepare_arguments",
           "as_option_hints", "load_table", "resolve_prepare"]

DATA_HELP = "tidy score CSV or an Epoch raw/ directory"

# Library messages name keyword arguments; on the command line the options are meant.
_OPTION_HINTS = (
    ("pass clip=True to clip them instead", "pass --clip to clip them instead"),
    ("pass components='separate' to fit each alone", "pass --components separate to fit each alone"),
)


def as_option_hints(exc: Exception) -> Exception:
    """``exc`` with keyword-argument advice rewritten as command-line options (same type)."""
    text = str(exc)
    for api, cli in _OPTION_HINTS:
        text = text.replace(api, cli)
    if text == str(exc):
        return exc
    try:
        return type(exc)(text)
    except TypeError:
        return ValueError(text)


def add_duplicates_argument(group, subject: str = "(model, benchmark) pairs") -> None:
    """``--duplicates``: how repeated scores are combined (default by the kind of DATA)."""
    group.add_argument("--duplicates", choices=("error", "max", "mean", "first", "last"),
                       default=None,
                       help=f"repeated {subject}: fail or reduce them; default: fail for a CSV, "
                       "max (the paper's choice) for an Epoch directory, which also takes mean "
                       "or error")


def add_min_benchmarks_argument(group) -> None:
    """``--min-benchmarks``: the Epoch directory reader's filter on models (both presets)."""
    group.add_argument(
        "--min-benchmarks", type=int, default=4, metavar="K",
        help="Epoch directory: keep models scored on at least K benchmarks (default 4, as in "
        "the paper); the models left out are listed",
    )


ECI_DEFAULT = "default: epoch with --scale eci on an Epoch directory, paper otherwise"


def add_prepare_arguments(group, default: str = "default: paper") -> None:
    """``--prepare`` and ``--baselines``: which preparation of an Epoch directory is fitted;
    ``default`` ends the help of ``--prepare`` (e.g. :data:`ECI_DEFAULT`)."""
    group.add_argument(
        "--prepare", choices=("paper", "epoch"), default=None,
        help="Epoch directory: paper = the Rosetta paper's raw fractions (reproduces its "
        "tables); epoch = Epoch's Capabilities Index preparation (scores normalised by each "
        "benchmark's random baseline and ceiling and clipped to [0, 1], model versions of one "
        "release grouped, releases before 2023 dropped, supersession, at least --min-benchmarks "
        f"benchmarks, best score per group and benchmark); {default}")
    group.add_argument(
        "--baselines", metavar="FILE", default=None,
        help="--prepare epoch: your own baseline table (CSV: benchmark, baseline, ceiling, "
        "superseded_by, in_eci, source) instead of the one shipped in the package")


def resolve_prepare(args: argparse.Namespace, is_dir: bool) -> str:
    """``args.prepare`` or its default (``epoch`` for ``--scale eci`` on an Epoch directory)."""
    prepare = getattr(args, "prepare", None)
    if prepare is None:
        eci = getattr(args, "scale", "raw") == "eci" or getattr(args, "analysis", None) == "eci"
        prepare = "epoch" if eci and is_dir else "paper"
    if not is_dir and (prepare == "epoch" or getattr(args, "baselines", None)):
        raise ValueError(
            "--prepare epoch and --baselines need an Epoch raw/ directory as DATA: the "
            "preparation normalises the leaderboards' raw scores, which a tidy CSV no longer "
            "holds; pass the raw/ directory, or drop --prepare epoch for a CSV")
    if prepare == "paper" and getattr(args, "baselines", None):
        raise ValueError("--baselines applies to --prepare epoch; add --prepare epoch or drop "
                         "--baselines")
    args.prepare = prepare
    return prepare


def load_table(path: str, args: argparse.Namespace):
    """The :class:`~platinum_jax.data.ScoreTable` at ``path`` (CSV file or Epoch raw/
    directory).

    ``args.duplicates`` (None: ``"error"`` for a CSV, ``"max"`` for a directory) says how
    repeated (model, benchmark) scores are combined.  A directory takes ``max``, ``mean`` or
    ``error`` and ``args.min_benchmarks``; what the reader leaves out (models with too few
    benchmarks, release dates it cannot find) is printed, and the models it drops are kept in
    ``args.dropped_models`` for the writer to list beside its results.  Errors that advise a
    keyword argument (``clip=True``) name the command-line option (``--clip``) instead.
    """
    try:
        return _load_table(path, args)
    except ValueError as exc:
        raise as_option_hints(exc) from None


def _load_table(data: str, args: argparse.Namespace):
    import warnings

    from platinum_jax.data import ScoreTable

    path = Path(data)
    min_benchmarks = getattr(args, "min_benchmarks", 4)
    if path.is_dir():
        from platinum_jax.importers import EpochDataWarning, read_epoch_scores

        rule = args.duplicates or "max"
        if rule not in ("max", "mean", "error"):
            raise ValueError(
                f"--duplicates {rule} is for CSV files; an Epoch directory combines repeated "
                "runs by max (the paper's choice), mean, or refuses them (error)"
            )
        if min_benchmarks < 1:
            raise ValueError(f"--min-benchmarks must be at least 1, got {min_benchmarks}")
        prepare = resolve_prepare(args, True)
        if prepare == "epoch" and rule != "max":
            raise ValueError(f"--duplicates {rule} applies to --prepare paper; Epoch's "
                             "preparation keeps the best score per model group and benchmark")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", EpochDataWarning)
            if prepare == "epoch":
                from platinum_jax.importers import read_epoch_raw

                frame = read_epoch_raw(path, min_benchmarks=min_benchmarks, prepare="epoch",
                                       baselines=getattr(args, "baselines", None))
                args.model_groups = frame.attrs["model_groups"]
                args.epoch_preparation = {k: frame.attrs[k] for k in
                                          ("baselines", "clipped", "excluded_benchmarks")}
                print(f"preparation: epoch (Epoch's Capabilities Index; baselines "
                      f"{frame.attrs['baselines']})")
                table = ScoreTable.from_frame(frame, clip=args.clip,
                                              name=f"Epoch data in {path.name}/ (epoch prep)")
            else:
                table = read_epoch_scores(
                    path, clip=args.clip, duplicates=rule, min_benchmarks=min_benchmarks
                )
        for w in caught:
            if not issubclass(w.category, EpochDataWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
                continue
            print(f"note: {w.message}")
            if w.message.models:
                args.dropped_models = list(w.message.models)
        return table
    if not path.exists():
        raise FileNotFoundError(
            f"DATA {data!r} does not exist; give a tidy CSV (model, benchmark, score) "
            "or an Epoch raw/ directory"
        )
    resolve_prepare(args, False)
    return ScoreTable.from_csv(path, duplicates=args.duplicates or "error", clip=args.clip)


def write_dropped(out, args: argparse.Namespace) -> int:
    """``dropped_models.txt`` (one name a line) when the Epoch reader left models out; their
    number (0: nothing written)."""
    dropped = getattr(args, "dropped_models", None)
    if dropped:
        out.write_text("dropped_models.txt", "\n".join(dropped) + "\n")
    return len(dropped or ())
