"""The model ``platinum-jax fit`` builds from its options, and the responses it derives.

Model, method and likelihood choices come from the registries (``models.MODELS``,
``inference.METHODS``, ``models.LIKELIHOODS``), read when the parser is built, so a
registered model is offered without touching the command line.
"""

from __future__ import annotations

from ._common import anchor_from_args

__all__ = ["MODEL_LIKELIHOODS", "build_model", "derive_responses"]

# Models that bring their own likelihood, and those that accept only some registered ones
# (every other model takes any --likelihood).
MODEL_LIKELIHOODS = {"graded": (), "beta": (),
                     "hierarchical": ("bernoulli", "binomial")}
FROM_FRACTIONS_MODEL = {"none-some-all": "graded", "squeeze": "beta"}

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
    ``--categories``) and the likelihood ``--likelihood`` names; ``--model rosetta_bayes`` is the
    Bayesian Rosetta model of ``stitch-bayes``, its likelihood by name."""
    import dataclasses

    if args.model == "rosetta_bayes":
        from platinum_jax.models.rosetta import RosettaBayes

        if args.link != "sigmoid":
            raise ValueError(f"the Bayesian Rosetta model has the sigmoid link; --link "
                             f"{args.link} is for the point methods of --model rosetta")
        return RosettaBayes.with_likelihood(
            "gaussian" if args.likelihood is None else args.likelihood,
            anchor=anchor_from_args(args))

    from platinum_jax.models import LIKELIHOODS, model_class

    cls = model_class(args.model)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    lik = args.likelihood
    allowed = MODEL_LIKELIHOODS.get(args.model)
    if lik is not None and allowed is not None and lik not in allowed:
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
        options["likelihood"] = LIKELIHOODS[lik]()
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
