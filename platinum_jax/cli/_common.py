"""Command-line pieces shared by several commands (kept light: no JAX at import)."""

from __future__ import annotations

import argparse

__all__ = ["add_anchor_arguments", "anchor_from_args", "list_written", "note_unconverged",
           "write_fit_files"]


def add_anchor_arguments(p: argparse.ArgumentParser) -> None:
    """The Rosetta anchor options, read back by :func:`anchor_from_args` (``stitch``,
    ``stitch-bayes``, ``fit --model rosetta``)."""
    a = p.add_argument_group("anchor (fixes the Rosetta scale)")
    a.add_argument("--anchor-benchmark", default="Winogrande",
                   help="benchmark whose difficulty and slope are fixed (default Winogrande)")
    a.add_argument("--anchor-difficulty", type=float, default=0.0,
                   help="its difficulty D (default 0)")
    a.add_argument("--anchor-slope", type=float, default=1.0, help="its slope alpha (default 1)")
    a.add_argument("--anchor-models", nargs=2, metavar=("A", "B"),
                   help="anchor two models instead of a benchmark")
    a.add_argument("--anchor-capabilities", nargs=2, type=float, metavar=("CA", "CB"),
                   help="capabilities of the two --anchor-models")


def anchor_from_args(args: argparse.Namespace):
    """A ``ModelAnchor`` when ``--anchor-models`` is given, else a ``BenchmarkAnchor``."""
    from platinum_jax.models.rosetta import BenchmarkAnchor, ModelAnchor

    if args.anchor_models or args.anchor_capabilities:
        if not (args.anchor_models and args.anchor_capabilities):
            raise ValueError(
                "--anchor-models and --anchor-capabilities go together: name two models and "
                "give their two capabilities"
            )
        return ModelAnchor(tuple(args.anchor_models), tuple(args.anchor_capabilities))
    return BenchmarkAnchor(args.anchor_benchmark, args.anchor_difficulty, args.anchor_slope)


def note_unconverged(fit_dir, command: str) -> None:
    """Say so (stderr) when the fit in ``fit_dir`` did not converge, before its numbers are
    used (``subset``, ``score``, ``weights``); a damaged fit.json is its readers' to refuse."""
    import json
    import sys
    from pathlib import Path

    path = Path(fit_dir) / "fit.json"
    try:
        converged = json.loads(path.read_text()).get("converged", True)
    except (OSError, ValueError, AttributeError):
        return
    if converged is False:
        print(f"note: platinum-jax {command}: {path} records a fit that did not converge; "
              "these results rest on its unconverged numbers (refit, e.g. with --restarts)",
              file=sys.stderr)


def comma_numbers(text: str, option: str) -> list[float]:
    """The numbers of a comma-separated option value (``--r-factors 0.5,1,2``); a named error
    for anything else or nothing."""
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{option} must be comma-separated numbers, got {text!r}") from None
    if not values:
        raise ValueError(f"{option} is empty; give comma-separated numbers")
    return values


def list_written(written, converged: bool, command: str = "fit") -> int:
    """Print the files written; exit status 1 (with a line on stderr) when the fit did not
    converge."""
    import sys

    for path in written:
        print(f"wrote {path}")
    if not converged:
        print(f"platinum-jax {command}: the fit did not converge (see fit.json); its numbers are "
              "written but should not be trusted", file=sys.stderr)
        return 1
    return 0


def write_fit_files(out, result, *, draws: bool = False) -> list:
    """The files of an engine fit (:meth:`platinum_jax.inference.Fit.files`: ``subjects.csv``,
    ``items.csv``, ``globals.csv``, ``fit.json``; a Bayesian fit's ``summary.csv`` and
    ``posterior.nc``; ``draws.npz`` with ``draws``), ``fit.json`` recording each other file's
    size and checksum, written through ``out``; the paths written."""
    from pathlib import Path

    return [out.write(name, Path.write_bytes if isinstance(content, bytes) else
                      Path.write_text, content)
            for name, content in result.files(draws=draws).items()]


def warm_start(args: argparse.Namespace):
    """The adaptation ``--warm-start DIR`` names (None without the option), read before any
    output is written: a missing or damaged file is an error naming it."""
    if getattr(args, "warm_start", None) is None:
        return None
    from platinum_jax.inference import read_adaptation

    return read_adaptation(args.warm_start)
