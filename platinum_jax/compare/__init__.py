"""Is model A better than model B, and how sure?  Intervals, paired tests, power, pictures.

    >>> from platinum_jax import compare
    >>> acc = compare.accuracy("responses.csv")            # doctest: +SKIP
    >>> pairs = compare.compare_pairs("responses.csv")     # doctest: +SKIP

Works on any response table (subject/model, item, response/score; optional group/benchmark,
cluster, run, trials columns) or a :class:`~platinum_jax.data.ResponseTable`.
"""

from ._data import (
    CompareData,
    CompareInputError,
    NonBinaryScoresError,
    NoSharedItemsError,
    SingleClusterError,
    TooFewModelsError,
    as_compare_data,
)
from ._intervals import (
    METHODS,
    accuracy,
    beta_interval,
    clopper_pearson_interval,
    wilson_interval,
)
from ._paired import adjust_bh, adjust_holm, compare_pairs, mcnemar, p_better_matrix
from ._plots import forest_plot, p_better_heatmap
from ._power import items_needed, mdad, minimum_detectable_effect

__all__ = [
    "CompareData",
    "CompareInputError",
    "NonBinaryScoresError",
    "NoSharedItemsError",
    "SingleClusterError",
    "TooFewModelsError",
    "as_compare_data",
    "METHODS",
    "accuracy",
    "beta_interval",
    "clopper_pearson_interval",
    "wilson_interval",
    "adjust_bh",
    "adjust_holm",
    "compare_pairs",
    "mcnemar",
    "p_better_matrix",
    "forest_plot",
    "p_better_heatmap",
    "items_needed",
    "mdad",
    "minimum_detectable_effect",
]
