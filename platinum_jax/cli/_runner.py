"""The one runner behind ``fit``, ``stitch`` and ``stitch-bayes``.

A command that fits a model is a :class:`Preset`: its options, how it reads DATA, what it checks
before the output directory is claimed, how it fits, what it writes and what it prints at the
end. :func:`run` does the rest once for all of them, in this order:

1. the preset's argument checks (no data read yet);
2. float64 (fits, Hessians and posteriors in double precision);
3. one CPU device per NUTS chain where the preset samples, before JAX starts its back-end;
4. DATA read by the preset's loader, and everything that can fail on it checked before ``--out``
   is touched (names, options, the model built for the table);
5. the fit and the files written inside :func:`platinum_jax._outputs.output_directory`: staged
   beside ``--out`` and swapped in whole at the end, so a failure or Ctrl-C leaves ``--out`` as
   it was (``platinum_jax.cli`` turns Ctrl-C into one line and exit status 130 for every
   command); ``--overwrite`` replaces only what an earlier run of the same preset wrote;
6. the preset's closing lines and exit status.

``platinum-jax stitch`` and ``platinum-jax stitch-bayes`` are the Rosetta paper's commands
(:data:`platinum_jax.cli.stitch.PRESET`, :data:`platinum_jax.cli.stitch_bayes.PRESET`), views
over the same models ``platinum-jax fit --model rosetta`` and ``--model rosetta_bayes`` fit.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Preset", "add_output_arguments", "command_parser", "run"]


def _nothing(*_args) -> None:
    return None


def _exit_zero(*_args) -> int:
    return 0


@dataclass(frozen=True)
class Preset:
    """One fitting command, run by :func:`run`.

    ``name`` is the command (``fit``, ``stitch``, ``stitch-bayes``) and the owner recorded in the
    output directory's manifest, so that ``--overwrite`` replaces the results of the same preset
    whichever command line wrote them. ``model`` and ``method`` name the registered model and
    the method it fits by default (None where ``--model``/``--method`` choose). The hooks, each
    given the parsed ``args``:

    * ``add_arguments(parser)``: the preset's options (DATA, ``--out`` and ``--overwrite`` are
      the runner's, :func:`add_output_arguments`);
    * ``check(args)``: argument checks that need no data;
    * ``load(path, args) -> table``: DATA read and printed;
    * ``prepare(args, table) -> plan``: what can fail on the data, checked before ``--out`` is
      claimed (model built, names looked up); the plan is what ``fit`` needs;
    * ``fit(args, plan) -> result``;
    * ``write(result, out, args) -> written``: files through ``out``
      (:class:`platinum_jax._outputs.OutputDir`), whose return goes to ``finish``;
    * ``finish(result, written, args) -> int``: lines printed once the files are in place, and
      the exit status;
    * ``choose(args) -> Preset``: the preset that actually runs (``fit --stream`` runs the
      streamed one); None: this one.
    """

    name: str
    help: str
    description: str
    epilog: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    load: Callable[[str, argparse.Namespace], Any]
    prepare: Callable[[argparse.Namespace, Any], Any]
    fit: Callable[[argparse.Namespace, Any], Any]
    write: Callable[[Any, Any, argparse.Namespace], Any]
    model: str | None = None
    method: str | None = None
    data_help: str = "data file"
    out_help: str = "output directory (created if missing)"
    overwrite_help: str = ("replace the files an earlier run of this command wrote in --out "
                           "(other files are never deleted)")
    check: Callable[[argparse.Namespace], None] = _nothing
    finish: Callable[[Any, Any, argparse.Namespace], int] = _exit_zero
    choose: Callable[[argparse.Namespace], Preset] | None = None


def add_output_arguments(p: argparse.ArgumentParser, preset: Preset) -> None:
    """DATA, ``--out`` and ``--overwrite``: the runner's own arguments."""
    p.add_argument("data", metavar="DATA", help=preset.data_help)
    p.add_argument("--out", required=True, help=preset.out_help)
    p.add_argument("--overwrite", action="store_true", help=preset.overwrite_help)


def command_parser(subparsers: argparse._SubParsersAction, preset: Preset,
                   name: str | None = None, add_first: Callable | None = None
                   ) -> argparse.ArgumentParser:
    """A parser for ``preset`` named ``name`` (default the preset's), whose ``func`` runs it;
    ``add_first(parser)`` adds arguments before the preset's own."""
    p = subparsers.add_parser(
        name or preset.name, help=preset.help, description=preset.description,
        epilog=preset.epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_output_arguments(p, preset)
    if add_first is not None:
        add_first(p)
    preset.add_arguments(p)
    p.set_defaults(func=lambda args: run(preset, args))
    return p


def run(preset: Preset, args: argparse.Namespace) -> int:
    """Run ``preset`` on the parsed ``args`` (see the module's docstring); the exit status."""
    if preset.choose is not None:
        preset = preset.choose(args)
    preset.check(args)

    from platinum_jax._runtime import enable_float64

    enable_float64()  # fits, Hessians and posteriors in double precision
    table = preset.load(args.data, args)
    plan = preset.prepare(args, table)  # what can fail on the data fails before --out is claimed
    from platinum_jax._outputs import output_directory

    with output_directory(args.out, preset.name, overwrite=args.overwrite) as out:
        result = preset.fit(args, plan)
        written = preset.write(result, out, args)
    return int(preset.finish(result, written, args) or 0)
