"""The ``platinum-jax`` command line.

Each sub-command lives in its own module exposing ``register(subparsers)``; that function adds
an ``argparse`` parser and sets ``func`` to a callable taking the parsed namespace and returning
an exit code.  Heavy imports (JAX, NumPyro) happen inside those callables so ``--help`` is quick.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from platinum_jax._extras import MissingExtraError

# Modules that contribute sub-commands, in the order ``--help`` lists them.
_COMMAND_MODULES = (
    "platinum_jax._cli_demo",
    "platinum_jax._cli_fit",
    "platinum_jax._cli_efficient",
    "platinum_jax._cli_certify",
    "platinum_jax.analysis._cli",
    "platinum_jax.sweeps._cli",
    "platinum_jax.stitching._bayes_cli",
    "platinum_jax.stitching._cli",
)

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="platinum-jax",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from platinum_jax import __version__

    parser.add_argument("--version", action="version", version=f"platinum-jax {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        from platinum_jax._runtime import enable_compilation_cache

        enable_compilation_cache()  # later runs of the same shapes skip compilation
        return int(args.func(args) or 0)
    except (ValueError, OSError, KeyError, MissingExtraError) as exc:
        # Input problems and missing optional extras are the user's to fix (a bad value, a
        # missing or unreadable file, a directory where a file belongs): print the message,
        # not a traceback.
        print(f"platinum-jax {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
