"""``platinum-jax models``: the models ``fit --model`` takes, and where each comes from."""

from __future__ import annotations

import argparse

DESCRIPTION = """\
List the registered measurement models: the built-in ones and those other packages register
under the entry-point group platinum_jax.models, with where each comes from and its one-line
description. `platinum-jax fit --model NAME` fits any of them; a model of your own that no
package registers is given to --model as module:Class (a module in the current directory is
found) or path/to/file.py:Class.

Registering a model from a package (pyproject.toml):

  [project.entry-points."platinum_jax.models"]
  rosetta_floor = "mypackage.models:RosettaFloor"
"""


def _run(args: argparse.Namespace) -> int:
    from platinum_jax.cli.fit import _summary
    from platinum_jax.models import registered_models

    for name, (cls, source) in registered_models().items():
        if source == "built-in":
            where = f"platinum_jax.models:{cls.__name__}"
        else:
            where = f"{cls.__module__}:{cls.__qualname__}" if isinstance(cls, type) else source
        about = _summary(cls) if isinstance(cls, type) else ""
        origin = "built-in" if source == "built-in" else source.split(" (")[0]
        print(f"{name:<16} {origin:<30} {where}")
        if about and args.verbose:
            print(f"{'':<16} {about}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("models",
                              help="list the models `fit --model` takes (built-in and "
                              "registered) and where each comes from",
                              description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--verbose", "-v", action="store_true",
                   help="also print each model's one-line description")
    p.set_defaults(func=_run)
