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
    d = parser.add_argument_group(
        "several processes (one job over many machines; options go before COMMAND)",
        "Under srun or mpirun with more than one task, or with JAX_COORDINATOR_ADDRESS set, "
        "each process joins JAX's distributed runtime before any computation: sweeps and "
        "sharded fits use every device of every process, and only process 0 prints results "
        "and writes --out. Without a launcher, start one command per process with:")
    d.add_argument("--coordinator", metavar="HOST:PORT",
                   help="address of process 0, where the others report (any free port)")
    d.add_argument("--num-processes", type=int, metavar="N", help="how many processes in all")
    d.add_argument("--process-id", type=int, metavar="I", help="this process's number, 0..N-1")
    d.add_argument("--distributed", choices=("auto", "on", "off"), default="auto",
                   help="auto (default): join when the options above or a launcher say so; "
                        "on: always join (JAX finds the cluster, e.g. a Kubernetes job); "
                        "off: run on this process alone")
    d.add_argument("--heartbeat", type=int, default=10, metavar="S",
                   help="seconds after which a silent process counts as dead and the others "
                        "stop with an error (default 10)")
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
    words = iter(argv)
    for word in words:
        if word in _GLOBAL_VALUED:
            next(words, None)  # its value
        elif not word.startswith("-"):
            return word if word in known else None
    return None


# The options before COMMAND that take a value (``--coordinator HOST:PORT``).
_GLOBAL_VALUED = ("--coordinator", "--num-processes", "--process-id", "--distributed",
                  "--heartbeat")


def _join_if_asked(args: argparse.Namespace) -> None:
    """Join a multi-process run when the options or a launcher ask for it (see ``--help``);
    print this process's place on stderr, and keep the others' stdout quiet."""
    from platinum_jax import _distributed

    explicit = any(getattr(args, k) is not None
                   for k in ("coordinator", "num_processes", "process_id"))
    if args.distributed == "off":
        if explicit:
            raise ValueError("--distributed off contradicts --coordinator / --num-processes / "
                             "--process-id; drop one or the other")
        return
    if args.distributed == "auto" and not explicit and _distributed.launcher_wants() is None:
        return
    if explicit and None in (args.coordinator, args.num_processes, args.process_id) \
            and _distributed.launcher_wants() is None:
        raise ValueError("--coordinator, --num-processes and --process-id go together outside "
                         "srun or mpirun: give all three on every process")
    if args.heartbeat < 1:
        raise ValueError(f"--heartbeat must be at least 1 second, got {args.heartbeat}")
    process, processes = _distributed.join(args.coordinator, args.num_processes,
                                           args.process_id, heartbeat=args.heartbeat)
    import os

    import jax

    print(f"platinum-jax {args.command}: process {process} of {processes}, "
          f"{jax.local_device_count()} of {jax.device_count()} devices here; process 0 "
          "prints the results and writes the outputs", file=sys.stderr, flush=True)
    if process != 0:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the rest of the process
        os.environ["TQDM_DISABLE"] = "1"  # one progress bar, process 0's


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
    try:  # Ctrl-C while the commands load and the arguments are read: nothing started yet
        parser = build_parser([] if command is None else [command])
        args = parser.parse_args(argv)
    except KeyboardInterrupt:
        print(f"platinum-jax {command or ''}: interrupted before the command started; nothing "
              "was read or written", file=sys.stderr)
        return EXIT_CODE
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with hard_stop(args.command) if real_process else contextlib.nullcontext():
            from platinum_jax._runtime import enable_compilation_cache

            _join_if_asked(args)  # before any array exists
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
