"""The ``platinum-jax`` command line.

Every command lives in this package, one module each (``stitch``, ``stitch_bayes``, ``fit``,
``analyze``, ...), exposing ``register(subparsers)``; that function adds
an ``argparse`` parser and sets ``func`` to a callable taking the parsed namespace and returning
an exit code.  Heavy imports (JAX, NumPyro) happen inside those callables so ``--help`` is quick.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Sequence

from platinum_jax._extras import MissingExtraError

# Sub-commands in the order ``--help`` lists them: (name, module that registers it, one line).
# Only the module of the command being run is imported, so ``platinum-jax --help`` and a
# command's start-up do not pay for the others' imports (JAX, NumPyro, ArviZ: seconds).
_COMMANDS = (
    ("demo", "platinum_jax.cli.demo",
     "optimal weights and platinum items on the synthetic default world"),
    ("fit", "platinum_jax.cli.fit",
     "fit any measurement model (Rosetta, 1PL-4PL, multidimensional) by MAP, Laplace, "
     "bootstrap, SVI or NUTS"),
    ("models", "platinum_jax.cli.models",
     "list the models `fit --model` takes (built-in and registered) and where each comes from"),
    ("import", "platinum_jax.cli.import_logs",
     "read evaluation logs (lm-eval, Evalchemy, Inspect, HELM, Every Eval Ever, lighteval, "
     "tidy, Epoch) into a response table"),
    ("export", "platinum_jax.cli.export",
     "write results (compare, fit, ECI, response tables) as Every Eval Ever 0.3.0 records"),
    ("subset", "platinum_jax.cli.efficient",
     "choose K items for evaluating new models"),
    ("score", "platinum_jax.cli.efficient",
     "abilities and full-benchmark scores of new subjects from a few items, with intervals"),
    ("cat", "platinum_jax.cli.cat",
     "simulate adaptive testing with exposure control on a response table"),
    ("weights", "platinum_jax.cli.weights",
     "optimal weights and platinum items with posterior intervals, from a fit"),
    ("platinum", "platinum_jax.cli.platinum",
     "optimal weights and platinum items with intervals, from measured noise, cost and welfare"),
    ("certify", "platinum_jax.cli.certify",
     "score items with an LLM judge and certify platinum items"),
    ("compare", "platinum_jax.cli.compare",
     "is model A better than model B: accuracy intervals, paired tests, P(A > B), power"),
    ("findings", "platinum_jax.cli.findings",
     "the principal-agent paper's tables, figures and robustness checks from its release"),
    ("analyze", "platinum_jax.cli.analyze",
     "trends, forecasts, algorithmic progress, accelerations, time horizons, robustness"),
    ("sweep", "platinum_jax.cli.sweep",
     "sensitivity sweeps of v*, welfare and platinum flags over r, kappa, delta"),
    ("stitch-bayes", "platinum_jax.cli.stitch_bayes",
     "Bayesian stitching: posterior capabilities, difficulties, slopes and weights"),
    ("stitch", "platinum_jax.cli.stitch",
     "stitch benchmarks: capabilities, difficulties and slopes on one scale"),
)
_COMMAND_MODULES = tuple(dict.fromkeys(module for _, module, _ in _COMMANDS))

_DESCRIPTION = """\
platinum-jax: the science of AI benchmarks in JAX.

Two ideas, one scale:
  * optimal aggregation -- a benchmark designer publishes weights v, a lab best-responds with
    costly effort, and welfare is maximised by v* = (M + r Sigma)^-1 M w, M = A C^-1 A^T.
    Items that are welfare-aligned, cheap to improve and precisely measured are "platinum".
  * benchmark stitching -- put models and benchmarks on one scale with
    score = sigmoid(alpha_b (C_m - D_b)).

Run `platinum-jax COMMAND --help` for the details of each command.

Compiled programs are cached in ~/.cache/platinum-jax/xla (set PLATINUM_JAX_CACHE to another
directory, or to "off"), so a second run of the same analysis starts faster.
"""


def build_parser(commands: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``platinum-jax`` parser.

    ``commands`` names the sub-commands to register in full (importing their modules); the
    others get a one-line entry for ``--help`` only.  ``None`` registers every command.
    """
    parser = argparse.ArgumentParser(
        prog="platinum-jax",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from platinum_jax import __version__

    parser.add_argument("--version", action="version", version=f"platinum-jax {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = {name for name, _, _ in _COMMANDS} if commands is None else set(commands)
    full = [module for name, module, _ in _COMMANDS if name in wanted]
    registered: set[str] = set()
    for name, module, help_line in _COMMANDS:
        if module in full and module not in registered:
            importlib.import_module(module).register(sub)
            registered.add(module)
        elif module not in full:
            sub.add_parser(name, help=help_line)
    return parser


def _command_in(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` asks for: its first word that is not an option."""
    known = {name for name, _, _ in _COMMANDS}
    for word in argv:
        if not word.startswith("-"):
            return word if word in known else None
    return None


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit code.

    Called without ``argv`` (the ``platinum-jax`` program), Ctrl-C ends the process within
    seconds even inside compiled code (:mod:`platinum_jax.cli._interrupt`); called with a list
    (in-process), it raises ``KeyboardInterrupt`` inside the command as usual.  Either way the
    command's outputs in progress are discarded, one line is printed and the code is 130.
    """
    from platinum_jax.cli._interrupt import EXIT_CODE, hard_stop, interrupted_line

    real_process = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command_in(argv)
    parser = build_parser([] if command is None else [command])
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with hard_stop(args.command) if real_process else contextlib.nullcontext():
            from platinum_jax._runtime import enable_compilation_cache

            enable_compilation_cache()  # later runs of the same shapes skip compilation
            return int(args.func(args) or 0)
    except (ValueError, OSError, KeyError, MissingExtraError) as exc:
        # Input problems and missing optional extras are the user's to fix (a bad value, a
        # missing or unreadable file, a directory where a file belongs): print the message,
        # not a traceback.
        print(f"platinum-jax {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # The outputs' context managers have already put the previous results back in place.
        print(interrupted_line(args.command), file=sys.stderr)
        return EXIT_CODE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
