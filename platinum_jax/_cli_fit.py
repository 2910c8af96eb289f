"""``platinum-jax fit``: any measurement model, any inference method, on a long response file."""

from __future__ import annotations

import argparse
import sys

from platinum_jax._cli_common import add_anchor_arguments, anchor_from_args

MODEL_NAMES = ("rosetta", "1pl", "2pl", "3pl", "4pl", "mirt")
METHOD_NAMES = ("map", "laplace", "bootstrap", "marginal", "svi", "nuts")
LIKELIHOOD_NAMES = ("bernoulli", "binomial", "gaussian", "beta", "beta_binomial")

DESCRIPTION = """\
Fit a measurement model to responses of subjects (AI models) on items (questions, or whole
benchmarks) and write one row per subject and one per item.

DATA is a long CSV or Parquet file with columns subject, item, response and optionally group
(the benchmark an item belongs to), trials (attempts behind a fraction), se and weight.
model/benchmark/score are accepted as aliases (benchmark is read as the item when there is no
item column, as the group otherwise), so the Rosetta paper's scores_long.csv reads as it is.

Models (--model):
  rosetta  score = f(alpha_b (C_m - D_b)), benchmarks as items, the paper's L2-penalised least
           squares (Ho et al. 2025, "A Rosetta Stone for AI Benchmarks"); --link, --l2, anchors
  1pl      P = sigmoid(a (theta - b_i)), one discrimination for all items
  2pl      P = sigmoid(a_i (theta - b_i))
  3pl      adds a lower asymptote c_i (guessing, chance score)
  4pl      adds an upper asymptote d_i
  mirt     P = sigmoid(a_i . theta_s - d_i) with --dims abilities per subject
  IRT models fix the scale by the ability prior theta ~ N(0, 1).

Methods (--method):
  map        penalised MAP (Levenberg-Marquardt over the subject-item structure); --restarts
  laplace    MAP plus a Gaussian from the exact Hessian: _sd, _lo, _hi columns (90% intervals)
  bootstrap  --replicates refits over resampled responses: _sd and percentile intervals
  marginal   one-ability binary models: item parameters with the abilities integrated out
             (Gauss-Hermite EM), abilities by EAP with an ability_sd column
  svi        variational Bayes (NumPyro, AutoNormal guide), --steps
  nuts       NUTS (NumPyro), --chains x --samples draws after --warmup; divergences, R-hat
             and ESS in fit.json

Likelihood (--likelihood): the model's default (rosetta: least squares, i.e. Gaussian with
noise 1 for map, free noise for svi/nuts; IRT: bernoulli, or binomial when DATA has trials).

Outputs in --out: subjects.csv, items.csv, globals.csv and fit.json (model, method,
objective, convergence and sampler diagnostics). Each file is written whole or not at all.
"""

EPILOG = """\
examples:
  platinum-jax fit scores_long.csv --model rosetta --restarts 32 --out fit
      the Rosetta paper's fit (Winogrande anchored at D = 0, alpha = 1, L2 0.1)
  platinum-jax fit responses.csv --model 2pl --method laplace --out irt
      a 2PL on item-level results with 90% Laplace intervals
  platinum-jax fit responses.csv --model 2pl --likelihood binomial --method nuts --out irt
      posterior of a 2PL on pass@1 fractions with a trials column
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "fit",
        help="fit any measurement model (Rosetta, 1PL-4PL, multidimensional) by MAP, Laplace, "
        "bootstrap, SVI or NUTS",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("data", metavar="DATA", help="long CSV or Parquet of responses")
    p.add_argument("--out", required=True, help="output directory (created if missing)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the files an earlier `fit` wrote in --out (other files are "
                   "never deleted)")
    p.add_argument("--model", choices=MODEL_NAMES, default="2pl", help="model (default 2pl)")
    p.add_argument("--method", choices=METHOD_NAMES, default="map", help="method (default map)")
    p.add_argument("--likelihood", choices=LIKELIHOOD_NAMES, default=None,
                   help="response distribution (default: the model's; see above)")
    p.add_argument("--duplicates", choices=("error", "mean", "max", "min", "first", "last"),
                   default="error", help="repeated (subject, item) pairs: fail (default) or reduce")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
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
    p.set_defaults(func=run)


def build_model(args, table):
    from platinum_jax.models import make_model
    from platinum_jax.models.likelihoods import Gaussian

    lik = args.likelihood
    options = {}
    if args.model == "rosetta":
        options = {"link": args.link, "l2": args.l2, "anchor": anchor_from_args(args)}
        if lik is None and args.method in ("svi", "nuts"):
            options["likelihood"] = Gaussian()  # free noise: the least-squares noise 1 is a device
    elif lik is None and table.trials is not None:
        lik = "binomial"
    if args.model == "mirt":
        options["dims"] = args.dims
    return make_model(args.model, likelihood=lik, **options)


def _check(args) -> None:
    for name in ("restarts",):
        if getattr(args, name) < 0:
            raise ValueError(f"--{name} must be >= 0 (got {getattr(args, name)})")
    for name in ("replicates", "chains", "warmup", "samples", "steps"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name} must be >= 1 (got {getattr(args, name)})")
    if not 0 < args.target_accept < 1:
        raise ValueError(f"--target-accept must lie strictly between 0 and 1 "
                         f"(got {args.target_accept})")


def run(args: argparse.Namespace) -> int:
    _check(args)
    import jax

    jax.config.update("jax_enable_x64", True)
    if args.method == "nuts" and args.chains > 1:
        from platinum_jax.stitching.bayes import use_cpu_devices_for_chains

        use_cpu_devices_for_chains(args.chains)  # before JAX starts its backend
    from platinum_jax.data import ResponseTable
    from platinum_jax.inference import fit

    table = ResponseTable.read(args.data, duplicates=args.duplicates)
    print(f"read {table}")
    model = build_model(args, table)
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
        result = fit(model, table, method=args.method, **options)
        written = [out.write_text(name, text) for name, text in result.files().items()]
    s = result.summary()
    print(f"model {args.model} ({s['model']['likelihood']}), method {args.method}: "
          f"objective {s['objective']:.6g}, converged {s['converged']}")
    for k, v in s["diagnostics"].items():
        if not isinstance(v, list):
            print(f"  {k}: {v}")
    for path in written:
        print(f"wrote {path}")
    if not result.converged:
        print("platinum-jax fit: the fit did not converge (see fit.json); its numbers are "
              "written but should not be trusted", file=sys.stderr)
        return 1
    return 0
