"""``platinum-jax fit``: any measurement model, any inference method, on a long response file."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from ._common import add_anchor_arguments, list_written, warm_start, write_fit_files
from ._fit_model import FROM_FRACTIONS_MODEL, build_model, derive_responses
from ._fit_stream import (
    check_stream,
    finish_stream,
    fit_stream,
    load_stream,
    memory_route,
    write_stream,
)
from ._runner import Preset, command_parser

# What the command line adds to a model's own one-line description (its docstring's first
# paragraph); models not named here are described by their docstring alone.
MODEL_NOTES = {
    "rosetta": "the paper's L2-penalised least squares (Ho et al. 2025, "
    '"A Rosetta Stone for AI Benchmarks"); --link, --l2, anchors; point methods (its Bayesian '
    "twin is rosetta_bayes)",
    "rosetta_bayes": "known standard errors (column se, those below 0.005 raised to it) added "
    "in variance; --likelihood gaussian (default), beta, binomial or beta_binomial; methods "
    "svi and nuts; the model `stitch-bayes` samples, with the same draws for the same seed",
    "mirt": "--dims sets their number",
    "graded": "responses are whole numbers 0..K-1 (K = --categories, or the largest "
    "category + 1); from pass rates with --from-fractions none-some-all",
    "beta": "with exact 0s and 1s add --from-fractions squeeze",
    "hierarchical": "the group column gives each item's benchmark; learned spreads "
    "(non-centred)",
}

DESCRIPTION = """\
Fit a measurement model to responses of subjects (AI models) on items (questions, or whole
benchmarks) and write one row per subject and one per item.

DATA is a long CSV or Parquet file with columns subject, item, response and optionally group
(the benchmark an item belongs to), trials (attempts behind a fraction), se and weight.
model/benchmark/score are accepted as aliases (benchmark is read as the item when there is no
item column, as the group otherwise), so the Rosetta paper's scores_long.csv reads as it is.

Models (--model): listed below, from the model registry (the built-in ones and those other
packages register under the entry-point group platinum_jax.models; `platinum-jax models` says
where each comes from), or a model class of your own as module:Class (a module in the current
directory is found) or path/to/file.py:Class. The fit's files record it by that import path,
so `weights`, `score`, `subset` and `cat` find it again. IRT models fix the scale
by the ability prior theta ~ N(0, 1). Continuous scores with the IRT models: --likelihood
gaussian (any real score) or binomial (k of `trials`). Models that read the group column
(the benchmark of each item) are sized for the data's benchmarks.

Methods (--method):
  map        penalised MAP (Levenberg-Marquardt over the subject-item structure); --restarts
  laplace    MAP plus a Gaussian from the exact Hessian: _sd, _lo, _hi columns (90% intervals);
             least squares (rosetta's default) takes its noise from the residual variance
  bootstrap  --replicates refits over resampled responses: _sd and percentile intervals
  marginal   one-ability binary models: item parameters with the abilities integrated out
             (EM over a quadrature grid), abilities by EAP with an ability_sd column
  svi        variational Bayes (NumPyro, AutoNormal guide), --steps
  nuts       NUTS (NumPyro), --chains x --samples draws after --warmup; divergences, R-hat
             and ESS in fit.json

Likelihood (--likelihood): the model's default (rosetta: least squares, i.e. Gaussian with
noise 1, for the point methods and the Bayesian Rosetta model's noise per benchmark for
svi/nuts; IRT: bernoulli, or binomial when DATA has trials).

Memory: every fit estimates its peak from the table's shape before it allocates and refuses,
naming the figure and the remedy, when the machine (or $PLATINUM_JAX_MEMORY_LIMIT, e.g. 16GB;
off skips the check) has less. `--model 2pl --method marginal` on a Parquet file that only
the streamed fit can hold streams (as --stream) and says so on stderr and in fit.json.

Outputs in --out: subjects.csv, items.csv, globals.csv and fit.json (model, method,
objective, convergence and sampler diagnostics); with --diagnostics also
items_diagnostics.csv (infit, outfit, items solved by every subject or by none, information)
and item_curves.png (item characteristic curves and test information); with --save-draws
draws.npz (what `platinum-jax weights` reads). fit.json also records the size and checksum of
every other file. The outputs are staged beside --out and replace an earlier fit only once all
of them are written: a failure or Ctrl-C leaves --out as it was.

The Rosetta paper's own commands, `platinum-jax stitch` and `platinum-jax stitch-bayes`, fit
--model rosetta and --model rosetta_bayes with the paper's extra files (sensitivity, the
Epoch Capabilities Index, figures, weights).
"""

_COMMAND_HELP = ("fit any measurement model (Rosetta, 1PL-4PL, multidimensional) by MAP, "
                 "Laplace, bootstrap, SVI or NUTS")

EPILOG = """\
examples:
  platinum-jax fit scores_long.csv --model rosetta --restarts 32 --out fit
      the Rosetta paper's fit (Winogrande anchored at D = 0, alpha = 1, L2 0.1)
  platinum-jax fit responses.csv --model 2pl --method laplace --out irt
      a 2PL on item-level results with 90% Laplace intervals
  platinum-jax fit responses.csv --model 2pl --likelihood binomial --method nuts --out irt
      posterior of a 2PL on pass@1 fractions with a trials column
  platinum-jax fit responses.csv --model hierarchical --diagnostics --out irt
      items within their benchmarks, with the item diagnostics and curves
  platinum-jax fit scores_long.csv --model rosetta_bayes --method nuts --out bayes
      the posterior of `platinum-jax stitch-bayes` (posterior.nc, summary.csv)
  platinum-jax fit scores_long.csv --model rosetta_bayes --method nuts --warm-start bayes \
      --seed 1 --out bayes2
      a refit from the first fit's adaptation (adaptation.npz): a fifth of the warm-up
"""


def _summary(cls) -> str:
    """The first paragraph of a model's docstring, as plain text."""
    import re

    text = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
    return re.sub(r":\w+:`~?([\w.]+)`", r"\1", text.replace("``", "")).rstrip(".")


def model_help() -> str:
    """One entry per registered model (built-in and registered by other packages): its
    docstring's summary and :data:`MODEL_NOTES`."""
    import textwrap

    from platinum_jax.models import registered_models

    lines = []
    for name, (cls, source) in registered_models().items():
        text = (_summary(cls) if isinstance(cls, type) else source) + (f"; {MODEL_NOTES[name]}" if name in MODEL_NOTES else "")
        if len(name) > 12:  # the name on a line of its own
            lines.append(f"  {name}")
        lines += textwrap.wrap(text, 93, initial_indent=" " * 15 if len(name) > 12 else
                               f"  {name:<13}", subsequent_indent=" " * 15)
    return "\n".join(lines)


def register(subparsers: argparse._SubParsersAction) -> None:
    head, tail = DESCRIPTION.split("Methods (--method):")  # the models from their registry
    command_parser(subparsers, dataclasses.replace(
        PRESET, description=f"{head}{model_help()}\n\nMethods (--method):{tail}"))


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``fit`` after DATA, ``--out`` and ``--overwrite``."""
    from platinum_jax.inference import METHODS
    from platinum_jax.models import LIKELIHOODS

    p.add_argument("--model", default="2pl", metavar="MODEL",
                   help="a registered model (listed above; `platinum-jax models` lists them and "
                   "where they come from) or one of your own as module:Class or "
                   "path/to/file.py:Class (default 2pl)")
    p.add_argument("--method", choices=METHODS, default="map", help="method (default map)")
    p.add_argument("--likelihood", choices=tuple(LIKELIHOODS), default=None,
                   help="response distribution (default: the model's; see above)")
    p.add_argument("--duplicates", choices=("error", "mean", "max", "min", "first", "last"),
                   default="error", help="repeated (subject, item) pairs: fail (default) or reduce")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--noise-per-item", action="store_true",
                   help="Gaussian likelihood only: one noise variance per item (benchmark), "
                   "estimated by iterated weighted least squares, so that the Laplace draws "
                   "carry each item's own noise (methods map and laplace)")
    p.add_argument("--save-draws", action="store_true",
                   help="also write draws.npz (model, responses, point estimate and draws), "
                   "what `platinum-jax weights` reads")
    m = p.add_argument_group("point fits")
    m.add_argument("--restarts", type=int, default=0, help="extra jittered starts (default 0)")
    m.add_argument("--replicates", type=int, default=200,
                   help="bootstrap replicates (default 200)")
    b = p.add_argument_group("Bayesian fits")
    b.add_argument("--chains", type=int, default=4, help="NUTS chains (default 4)")
    b.add_argument("--warmup", type=int, default=None,
                   help="NUTS warm-up steps (default: the model's own setting, else 500)")
    b.add_argument("--samples", type=int, default=None,
                   help="NUTS draws per chain (default: the model's own setting, else 1000)")
    b.add_argument("--target-accept", type=float, default=None,
                   help="NUTS target acceptance in (0, 1) (default: the model's own setting, "
                        "else 0.9)")
    b.add_argument("--max-tree-depth", type=int, default=None,
                   help="NUTS takes at most 2^depth - 1 leapfrog steps per draw (default: the "
                        "model's own setting, else 10); lower it to bound the time of a badly "
                        "scaled posterior")
    b.add_argument("--warm-start", metavar="DIR", default=None,
                   help="NUTS: start from the adaptation (step size, mass matrix, last draws) "
                        "of an earlier NUTS fit of this model on data of the same shape, its "
                        "output directory, and warm up a fifth as long")
    b.add_argument("--steps", type=int, default=3000, help="SVI steps (default 3000)")
    r = p.add_argument_group("Rosetta model")
    r.add_argument("--link", choices=("sigmoid", "clipped_linear"), default="sigmoid",
                   help="link f (default sigmoid)")
    r.add_argument("--l2", type=float, default=0.1, help="L2 strength lambda (default 0.1)")
    add_anchor_arguments(p)
    p.add_argument("--dims", type=int, default=2, help="abilities of the mirt model (default 2)")
    p.add_argument("--categories", type=int, default=None,
                   help="ordered categories K of the graded model (default: largest response + 1)")
    p.add_argument("--from-fractions", choices=("none-some-all", "squeeze"), default=None,
                   help="derive the responses a model needs from fractions in [0, 1] (the "
                        "file is not changed; fit.json records it): none-some-all gives the "
                        "graded model three categories, 0 = score 0, 2 = score 1, 1 = anything "
                        "between; squeeze maps y to (y (n - 1) + 0.5) / n, n the number of "
                        "responses (Smithson and Verkuilen 2006), for the beta model")
    p.add_argument("--stream", action="store_true",
                   help="leaderboard scale (2pl, marginal, binary responses in a Parquet "
                        "file): read the file in record batches into one byte per cell and "
                        "fit block by block (memory: the cells, not a frame of the rows)")
    p.add_argument("--em", choices=("scale", "squarem"), default=None,
                   help="with --stream, how the EM reaches its fixed point (the estimates "
                        "are the same to the tolerance): scale (default) follows each EM "
                        "step with a Newton step along the abilities' common location and "
                        "scale, the direction plain EM creeps along when subjects answer "
                        "hundreds or thousands of items (5 to 10 passes over the data where "
                        "plain EM takes 20 to 100); squarem is plain EM with SQUAREM "
                        "extrapolation, as --method marginal without --stream: the "
                        "reference, to check a scale fit against or when its steps are "
                        "replaced often (fit.json: diagnostics steps_replaced)")
    p.add_argument("--diagnostics", action="store_true",
                   help="also write items_diagnostics.csv and item_curves.png")




def _check(args) -> None:
    if args.warm_start is not None and args.method != "nuts":
        raise ValueError(f"--warm-start starts NUTS from an earlier NUTS fit; --method "
                         f"{args.method} has no sampler to warm-start: drop it or use --method "
                         "nuts")
    if args.em is not None and not args.stream:
        raise ValueError(f"--em {args.em} chooses the EM of --stream fits; add --stream "
                         "(--model 2pl --method marginal) or drop --em")
    if args.model == "rosetta_bayes" and args.method not in ("svi", "nuts"):
        raise ValueError(f"--model rosetta_bayes is sampled (--method nuts or svi); for "
                         f"--method {args.method} use --model rosetta (least squares)")
    if args.model == "rosetta" and args.method in ("svi", "nuts"):
        raise ValueError(f"--model rosetta is the paper's least-squares model, which has no "
                         f"posterior to sample; for --method {args.method} use --model "
                         "rosetta_bayes (the Bayesian Rosetta model of `stitch-bayes`: a noise "
                         "per benchmark and priors)")
    for name in ("restarts",):
        if getattr(args, name) < 0:
            raise ValueError(f"--{name} must be >= 0 (got {getattr(args, name)})")
    if args.from_fractions is not None and args.model != FROM_FRACTIONS_MODEL[
            args.from_fractions]:
        raise ValueError(f"--from-fractions {args.from_fractions} is for --model "
                         f"{FROM_FRACTIONS_MODEL[args.from_fractions]} (got --model "
                         f"{args.model}); other models read fractions as they are, e.g. with "
                         "--likelihood binomial and a trials column")
    if args.categories is not None and args.categories < 2:
        raise ValueError(f"--categories must be >= 2 (got {args.categories})")
    for name in ("replicates", "chains", "warmup", "samples", "steps", "max_tree_depth"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1 (got {getattr(args, name)})")
    if args.noise_per_item and args.method not in ("map", "laplace"):
        raise ValueError(f"--noise-per-item works with --method map or laplace (got "
                         f"{args.method})")
    if args.target_accept is not None and not 0 < args.target_accept < 1:
        raise ValueError(f"--target-accept must lie strictly between 0 and 1 "
                         f"(got {args.target_accept})")


def _write_diagnostics(result, out) -> list:
    from platinum_jax.models.diagnostics import item_diagnostics, plot_item_curves

    diag = item_diagnostics(result)
    paths = [out.write("items_diagnostics.csv", diag.to_csv)]
    print(f"items: {int(diag['solved_by_all'].fillna(False).sum())} solved by every subject, "
          f"{int(diag['solved_by_none'].fillna(False).sum())} by none; "
          f"{int((diag['outfit'] > 1.3).sum())} with outfit > 1.3")
    if "max_information" in diag.columns:  # curves need one ability per subject
        paths.append(out.write("item_curves.png", lambda p: plot_item_curves(result, p)))
    else:
        print("item_curves.png not written: the model has more than one ability per subject")
    return paths


def _load(path: str, args):
    from platinum_jax.data import ResponseTable

    table = ResponseTable.read(path, duplicates=args.duplicates)
    print(f"read {table}")
    return table


def _prepare(args, table) -> dict:
    """The responses derived, the model built and the responses checked against it, before
    --out is claimed; the method's options."""
    derived = None
    if args.from_fractions is not None:
        table, derived = derive_responses(table, args.from_fractions)
        print(derived)
    model = build_model(args, table)
    if args.model == "rosetta_bayes":
        from platinum_jax.models.rosetta import STDERR_FLOOR, floor_se

        table, n_floored = floor_se(table)  # as stitch-bayes does
        if n_floored:
            print(f"note: {n_floored} standard error(s) below {STDERR_FLOOR:g} raised to it",
                  file=sys.stderr)
    from platinum_jax.models import check_responses, response_notes

    check_responses(model, table)
    notes = response_notes(model, table)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    options = {} if args.method == "marginal" else {"seed": args.seed}
    if args.method in ("map", "laplace", "bootstrap"):
        options["restarts"] = args.restarts
    if args.method == "bootstrap":
        options["replicates"] = args.replicates
    if args.method == "nuts":
        options.update(chains=args.chains, warmup=args.warmup, samples=args.samples,
                       target_accept=args.target_accept, max_tree_depth=args.max_tree_depth,
                       progress_bar=sys.stderr.isatty(), warm_start=warm_start(args))
    if args.method == "svi":
        options.update(steps=args.steps)
    return {"model": model, "table": table, "derived": derived, "notes": notes,
            "options": options}


def _fit(args, plan):
    from platinum_jax.inference import fit

    model, table, options = plan["model"], plan["table"], plan["options"]
    if args.noise_per_item:
        from platinum_jax.design import fit_heteroscedastic

        result = fit_heteroscedastic(model, table, method=args.method, **options)
        refits = result.diagnostics["noise_per_item_refits"]
        print(f"noise per item: weights settled after {refits} refit(s)"
              if result.diagnostics["noise_per_item_settled"] else
              f"noise per item: weights still moving after {refits} refits")
    else:
        result = fit(model, table, method=args.method, **options)
    if plan["derived"] is not None:
        result.diagnostics["responses_derived"] = plan["derived"]
    if plan["notes"]:
        result.diagnostics["notes"] = plan["notes"]
    return result


def _write(result, out, args) -> list:
    """subjects.csv, items.csv, globals.csv and fit.json (which records the size and checksum
    of every other file), draws.npz with --save-draws, the item diagnostics with
    --diagnostics."""
    written = write_fit_files(out, result, draws=args.save_draws)
    if args.diagnostics:
        written += _write_diagnostics(result, out)
    return written


def _finish(result, written, args) -> int:
    s = result.summary()
    print(f"model {args.model} ({s['model']['likelihood']}), method {args.method}: "
          f"objective {s['objective']:.6g}, converged {s['converged']}")
    for k, v in s["diagnostics"].items():
        if not isinstance(v, list):
            print(f"  {k}: {v}")
    return list_written(written, result.converged)


def _choose(args):
    if args.stream:
        return _STREAM
    args.memory_route = memory_route(args)
    if args.memory_route is None:
        return PRESET
    print(f"note: {args.memory_route}", file=sys.stderr)
    return _STREAM


PRESET = Preset(
    name="fit", help=_COMMAND_HELP, description=DESCRIPTION, epilog=EPILOG,
    add_arguments=add_arguments, data_help="long CSV or Parquet of responses",
    overwrite_help="replace the files an earlier `fit` wrote in --out (other files are never "
    "deleted)",
    check=_check, load=_load, prepare=_prepare, fit=_fit, write=_write,
    finish=_finish, choose=_choose)
# --stream: the leaderboard-scale 2PL, its responses one byte per cell (no response table).
_STREAM = dataclasses.replace(
    PRESET, model="2pl", method="marginal", check=lambda args: (_check(args), check_stream(args)),
    load=load_stream, prepare=lambda args, responses: responses, fit=fit_stream,
    write=write_stream, finish=finish_stream, choose=None)
