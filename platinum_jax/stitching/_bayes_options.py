"""The Bayesian likelihood names, now in :mod:`platinum_jax._names` (kept for old imports)."""

from platinum_jax._names import BAYES_LIKELIHOOD_CHOICES as ACCEPTED_NAMES  # noqa: F401
from platinum_jax._names import BAYES_LIKELIHOODS as LIKELIHOODS  # noqa: F401
from platinum_jax._names import COUNT_LIKELIHOODS  # noqa: F401
from platinum_jax._names import check_bayes_likelihood as check_likelihood  # noqa: F401
