"""Names of the Bayesian stitching likelihoods, importable without JAX or NumPyro.

The command line builds its ``--likelihood`` choices from here, so ``platinum-jax stitch``
(which offers ``--bayes``) parses its arguments before any heavy library loads. The names are
those of the likelihood registry (``beta_binomial``); the older spelling ``betabinomial`` is
still accepted, with a ``DeprecationWarning``.
"""

from platinum_jax._names import DEPRECATED_LIKELIHOOD_NAMES, likelihood_name

LIKELIHOODS = ("gaussian", "beta", "binomial", "beta_binomial")
COUNT_LIKELIHOODS = ("binomial", "beta_binomial")  # need an n_items column
#: what ``--likelihood`` accepts: the names above and their deprecated spellings
ACCEPTED_NAMES = LIKELIHOODS + tuple(k for k, v in DEPRECATED_LIKELIHOOD_NAMES.items()
                                     if v in LIKELIHOODS)


def check_likelihood(name: str) -> str:
    """``name`` as one of :data:`LIKELIHOODS` (a deprecated spelling renamed, with a
    ``DeprecationWarning``), or a ``ValueError`` listing them."""
    name = likelihood_name(name)
    if name not in LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {LIKELIHOODS}, got {name!r}")
    return name
