"""Names of the Bayesian stitching likelihoods, importable without JAX or NumPyro.

The command line builds its ``--likelihood`` choices from here, so ``platinum-jax stitch``
(which offers ``--bayes``) parses its arguments before any heavy library loads.
"""

LIKELIHOODS = ("gaussian", "beta", "binomial", "betabinomial")
COUNT_LIKELIHOODS = ("binomial", "betabinomial")  # need an n_items column
