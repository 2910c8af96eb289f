"""``platinum-jax fit``: any measurement model, any inference method, on a long response file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from platinum_jax.cli._common import add_anchor_arguments, anchor_from_args

# Model, method and likelihood choices come from the registries (models.MODELS,
# inference.METHODS, models.likelihoods.LIKELIHOODS), read when this command's parser is built,
# so a registered model is offered here without touching this file.

# What the command line adds to a model's own one-line description (its docstring's first
# paragraph); models not named here are described by their docstring alone.
MODEL_NOTES = {
    "rosetta": "the paper's L2-penalised least squares (Ho et al. 2025, "
    '"A Rosetta Stone for AI Benchmarks"); --link, --l2, anchors. svi/nuts sample the '
    "Bayesian Rosetta model (rosetta_bayes), the model of `stitch-bayes`; fit.json says so "
    "(sampled_model)",
    "rosetta_bayes": "known standard errors (column se, those below 0.005 raised to it) added "
    "in variance; --likelihood gaussian (default), beta, binomial or beta_binomial; methods "
    "svi and nuts",
    "mirt": "--dims sets their number",
    "graded": "responses are whole numbers 0..K-1 (K = --categories, or the largest "
    "category + 1); from pass rates with --from-fractions none-some-all",
    "beta": "with exact 0s and 1s add --from-fractions squeeze",
    "hierarchical": "the group column gives each item's benchmark; learned spreads "
    "(non-centred)",
}

# Models that bring their own likelihood, and those that accept only some registered ones
# (every other model takes any --likelihood).
MODEL_LIKELIHOODS = {"graded": (), "beta": (),
                     "hierarchical": ("bernoulli", "binomial")}

DESCRIPTION = """\
Fit a measurement model to responses of subjects (AI models) on items (questions, or whole
benchmarks) and write one row per subject and one per item.

DATA is a long CSV or Parquet file with columns subject, item, response and optionally group
(the benchmark an item belongs to), trials (attempts behind a fraction), se and weight.
model/benchmark/score are accepted as aliases (benchmark is read as the item when there is no
item column, as the group otherwise), so the Rosetta paper's scores_long.csv reads as it is.

Models (--model): listed below, from the package's model registry. IRT models fix the scale
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

Outputs in --out: subjects.csv, items.csv, globals.csv and fit.json (model, method,
objective, convergence and sampler diagnostics); with --diagnostics also
items_diagnostics.csv (infit, outfit, items solved by every subject or by none, information)
and item_curves.png (item characteristic curves and test information); with --save-draws
draws.npz (what `platinum-jax weights` reads). fit.json also records the size and checksum of
every other file. The outputs are staged beside --out and replace an earlier fit only once all
of them are written: a failure or Ctrl-C leaves --out as it was.
"""

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
"""


def _summary(cls) -> str:
    """The first paragraph of a model's docstring, as plain text."""
    import re

    text = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
    return re.sub(r":\w+:`~?([\w.]+)`", r"\1", text.replace("``", "")).rstrip(".")


def model_help() -> str:
    """One entry per registered model: its docstring's summary and :data:`MODEL_NOTES`."""
    import textwrap

    from platinum_jax.models import MODELS

    lines = []
    for name, cls in MODELS.items():
        text = _summary(cls) + (f"; {MODEL_NOTES[name]}" if name in MODEL_NOTES else "")
        if len(name) > 12:  # the name on a line of its own
            lines.append(f"  {name}")
        lines += textwrap.wrap(text, 93, initial_indent=" " * 15 if len(name) > 12 else
                               f"  {name:<13}", subsequent_indent=" " * 15)
    return "\n".join(lines)


def register(subparsers: argparse._SubParsersAction) -> None:
    from platinum_jax.inference import METHODS
    from platinum_jax.models import MODELS
    from platinum_jax.models.likelihoods import LIKELIHOODS

    head, tail = DESCRIPTION.split("Methods (--method):")
    p = subparsers.add_parser(
        "fit",
        help="fit any measurement model (Rosetta, 1PL-4PL, multidimensional) by MAP, Laplace, "
        "bootstrap, SVI or NUTS",
        description=f"{head}{model_help()}\n\nMethods (--method):{tail}",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("data", metavar="DATA", help="long CSV or Parquet of responses")
    p.add_argument("--out", required=True, help="output directory (created if missing)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the files an earlier `fit` wrote in --out (other files are "
                   "never deleted)")
    p.add_argument("--model", choices=tuple(MODELS), default="2pl", help="model (default 2pl)")
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
    b.add_argument("--warmup", type=int, default=500, help="NUTS warm-up steps (default 500)")
    b.add_argument("--samples", type=int, default=500, help="NUTS draws per chain (default 500)")
    b.add_argument("--target-accept", type=float, default=0.9,
                   help="NUTS target acceptance in (0, 1) (default 0.9)")
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
    p.add_argument("--diagnostics", action="store_true",
                   help="also write items_diagnostics.csv and item_curves.png")
    p.set_defaults(func=run)


_FROM_FRACTIONS_MODEL = {"none-some-all": "graded", "squeeze": "beta"}

# Written to fit.json and printed, so that no one mistakes which Rosetta model was sampled.
SAMPLED_ROSETTA = (
    "the Bayesian Rosetta model (rosetta_bayes): a noise per benchmark, known standard errors, "
    "standardised coordinates; the model `platinum-jax stitch-bayes` samples")


def bayesian_rosetta(model: str, method: str) -> bool:
    """Whether ``--model model --method method`` samples the Bayesian Rosetta model."""
    return model == "rosetta_bayes" or (model == "rosetta" and method in ("svi", "nuts"))


def sampled_model_note(model: str, method: str) -> str | None:
    """What ``fit.json`` says about the model a Bayesian method samples, where it could be
    mistaken for another."""
    return SAMPLED_ROSETTA if bayesian_rosetta(model, method) else None


def derive_responses(table, how: str):
    """The table with responses derived from fractions in [0, 1] (see ``--from-fractions``),
    and a sentence saying what was done."""
    import dataclasses

    import numpy as np

    y = np.asarray(table.response, np.float64)
    if y.min() < 0 or y.max() > 1:
        raise ValueError(f"{table.source}: --from-fractions {how} needs responses in [0, 1], "
                         f"but they range over [{y.min():g}, {y.max():g}]; divide "
                         "percentages by 100 first")
    if how == "none-some-all":
        new = np.where(y == 0, 0.0, np.where(y == 1, 2.0, 1.0))
        counts = np.bincount(new.astype(int), minlength=3)
        note = (f"responses derived from fractions: 0 = none ({counts[0]}), 1 = some "
                f"({counts[1]}), 2 = all ({counts[2]})")
    else:
        n = len(y)
        new = (y * (n - 1) + 0.5) / n
        note = (f"responses squeezed into (0, 1): (y (n - 1) + 0.5) / n with n = {n}; "
                f"{int(np.sum((y == 0) | (y == 1)))} exact 0s and 1s moved to "
                f"{new.min():.3g} and {new.max():.6g}")
    return dataclasses.replace(table, response=new), note


def build_model(args, table):
    """The model ``--model`` names, built for ``table`` by its ``from_table`` with the options
    of the command line that it has fields for (``--link``, ``--l2`` and the anchor, ``--dims``,
    ``--categories``) and the likelihood ``--likelihood`` names. ``--model rosetta`` with svi or
    nuts, and ``--model rosetta_bayes``, build the Bayesian Rosetta model of ``stitch-bayes``."""
    import dataclasses

    if bayesian_rosetta(args.model, args.method):
        from platinum_jax.models.rosetta_bayes import RosettaBayes

        if args.link != "sigmoid":
            raise ValueError(f"the Bayesian Rosetta model has the sigmoid link; --link "
                             f"{args.link} is for the point methods of --model rosetta")
        return RosettaBayes.with_likelihood(
            "gaussian" if args.likelihood is None else args.likelihood,
            anchor=anchor_from_args(args))

    from platinum_jax._names import likelihood_name
    from platinum_jax.models import MODELS
    from platinum_jax.models.likelihoods import LIKELIHOODS

    cls = MODELS[args.model]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    lik = args.likelihood
    allowed = MODEL_LIKELIHOODS.get(args.model)
    if lik is not None and allowed is not None and likelihood_name(lik) not in allowed:
        own = ("brings its own likelihood" if not allowed else
               f"takes --likelihood {' or '.join(allowed)}")
        raise ValueError(f"--model {args.model} {own}; --likelihood {lik} does not apply to it")
    options = {}
    candidates = {"link": lambda: args.link, "l2": lambda: args.l2,
                  "anchor": lambda: anchor_from_args(args), "dims": lambda: args.dims,
                  "categories": lambda: _categories(args, table)}
    for name, value in candidates.items():
        if name in fields:
            options[name] = value()
    default = fields["likelihood"].default if "likelihood" in fields else None
    if lik is not None:
        options["likelihood"] = LIKELIHOODS[likelihood_name(lik)]()
    elif (table.trials is not None and getattr(default, "name", None) == "bernoulli"
          and allowed != ()):
        options["likelihood"] = LIKELIHOODS["binomial"]()  # k of `trials` successes
    return cls.from_table(table, **options)


def _categories(args, table) -> int:
    import numpy as np

    y = table.response
    if not np.all(y == np.round(y)) or y.min() < 0:
        raise ValueError(
            f"{table.source}: --model graded needs ordered categories 0, 1, ..., K-1 (whole "
            f"numbers) as responses, but they range over [{y.min():g}, {y.max():g}] with "
            "fractions; add --from-fractions none-some-all for 0 = none, 1 = some, 2 = all, or "
            "derive a category column yourself (e.g. the number of passing samples), or fit "
            "fractions with another model and --likelihood binomial"
        )
    if args.categories is not None:
        return args.categories
    k = int(y.max()) + 1
    if k < 2:
        raise ValueError(f"{table.source}: every response is category 0; nothing to fit")
    return k


def _check(args) -> None:
    if args.model == "rosetta_bayes" and args.method not in ("svi", "nuts"):
        raise ValueError(f"--model rosetta_bayes is sampled (--method nuts or svi); for "
                         f"--method {args.method} use --model rosetta (least squares)")
    for name in ("restarts",):
        if getattr(args, name) < 0:
            raise ValueError(f"--{name} must be >= 0 (got {getattr(args, name)})")
    if args.from_fractions is not None and args.model != _FROM_FRACTIONS_MODEL[
            args.from_fractions]:
        raise ValueError(f"--from-fractions {args.from_fractions} is for --model "
                         f"{_FROM_FRACTIONS_MODEL[args.from_fractions]} (got --model "
                         f"{args.model}); other models read fractions as they are, e.g. with "
                         "--likelihood binomial and a trials column")
    if args.categories is not None and args.categories < 2:
        raise ValueError(f"--categories must be >= 2 (got {args.categories})")
    for name in ("replicates", "chains", "warmup", "samples", "steps"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name} must be >= 1 (got {getattr(args, name)})")
    if args.noise_per_item and args.method not in ("map", "laplace"):
        raise ValueError(f"--noise-per-item works with --method map or laplace (got "
                         f"{args.method})")
    if not 0 < args.target_accept < 1:
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


def _run_stream(args) -> int:
    """``--stream``: the streamed 2PL (:func:`platinum_jax.inference.fit_streamed_2pl`)."""
    if args.model != "2pl" or args.method != "marginal":
        raise ValueError(f"--stream fits --model 2pl --method marginal (got --model "
                         f"{args.model} --method {args.method})")
    other = [flag for flag, on in (("--diagnostics", args.diagnostics),
                                    ("--save-draws", args.save_draws),
                                    ("--noise-per-item", args.noise_per_item),
                                    ("--from-fractions", args.from_fractions is not None),
                                    ("--likelihood", args.likelihood is not None)) if on]
    if other:
        raise ValueError(f"--stream does not take {', '.join(other)}; drop them or fit "
                         "without --stream")
    if Path(args.data).suffix.lower() not in (".parquet", ".pq"):
        raise ValueError(f"--stream reads a Parquet file (got {args.data}); write one with "
                         "`platinum-jax import tidy ... --out responses.parquet`")
    from platinum_jax.data import read_parquet_streamed
    from platinum_jax.inference import fit_streamed_2pl

    responses = read_parquet_streamed(args.data)
    print(f"read {responses}")
    result = fit_streamed_2pl(responses)
    written = result.write(args.out, overwrite=args.overwrite)
    print(f"model 2pl (bernoulli), method marginal (streamed): marginal log-likelihood "
          f"{result.diagnostics['marginal_log_lik']:.6g}, converged {result.converged}, "
          f"{result.diagnostics['iterations']} EM steps")
    return _written(written, result.converged)


def _written(written, converged: bool) -> int:
    """List the files written; exit status 1 (with a line on stderr) when the fit did not
    converge."""
    for path in written:
        print(f"wrote {path}")
    if not converged:
        print("platinum-jax fit: the fit did not converge (see fit.json); its numbers are "
              "written but should not be trusted", file=sys.stderr)
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    _check(args)

    from platinum_jax._runtime import enable_float64

    enable_float64()
    if args.stream:
        return _run_stream(args)
    if args.method == "nuts" and args.chains > 1:
        from platinum_jax.inference import use_cpu_devices_for_chains

        use_cpu_devices_for_chains(args.chains)  # before JAX starts its backend
    from platinum_jax.data import ResponseTable
    from platinum_jax.inference import fit

    table = ResponseTable.read(args.data, duplicates=args.duplicates)
    print(f"read {table}")
    derived = None
    if args.from_fractions is not None:
        table, derived = derive_responses(table, args.from_fractions)
        print(derived)
    model = build_model(args, table)
    if bayesian_rosetta(args.model, args.method):
        from platinum_jax.models.rosetta_bayes import STDERR_FLOOR, floor_se

        table, n_floored = floor_se(table)  # as stitch-bayes does
        if n_floored:
            print(f"note: {n_floored} standard error(s) below {STDERR_FLOOR:g} raised to it",
                  file=sys.stderr)
    from platinum_jax.models import check_responses, response_notes

    check_responses(model, table)  # before the output directory is claimed
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
                       target_accept=args.target_accept, progress_bar=sys.stderr.isatty())
    if args.method == "svi":
        options.update(steps=args.steps)
    from platinum_jax._outputs import output_directory

    with output_directory(args.out, "fit", overwrite=args.overwrite) as out:
        if args.noise_per_item:
            from platinum_jax.design import fit_heteroscedastic

            result = fit_heteroscedastic(model, table, method=args.method, **options)
            refits = result.diagnostics["noise_per_item_refits"]
            print(f"noise per item: weights settled after {refits} refit(s)"
                  if result.diagnostics["noise_per_item_settled"] else
                  f"noise per item: weights still moving after {refits} refits")
        else:
            result = fit(model, table, method=args.method, **options)
        if derived is not None:
            result.diagnostics["responses_derived"] = derived
        if notes:
            result.diagnostics["notes"] = notes
        note = sampled_model_note(args.model, args.method)
        if note is not None:
            result.diagnostics["sampled_model"] = note
        from platinum_jax.inference import DRAWS_FILE, draws_bytes, with_integrity

        files = dict(result.files())
        if args.save_draws:
            files[DRAWS_FILE] = draws_bytes(result)
        written = [out.write(name, Path.write_bytes if isinstance(content, bytes) else
                             Path.write_text, content)
                   for name, content in with_integrity(files).items()]  # fit.json records the rest
        if args.diagnostics:
            written += _write_diagnostics(result, out)
    s = result.summary()
    print(f"model {args.model} ({s['model']['likelihood']}), method {args.method}: "
          f"objective {s['objective']:.6g}, converged {s['converged']}")
    for k, v in s["diagnostics"].items():
        if not isinstance(v, list):
            print(f"  {k}: {v}")
    return _written(written, result.converged)
