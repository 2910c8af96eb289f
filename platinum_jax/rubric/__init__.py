"""The platinum rubric (Haupt et al., section 4): concepts, rubric scores, certification, reweighting.

Per concept j: welfare alignment W_j in 1..5, improvement cost K_j and measurement noise N_j in
{low, medium, high}; per item i and concept j: measurement strength S_ij in 0..3.  The quality
factor Q_j = gamma(W_j) eta(K_j) pi(N_j) and the platinum score P_i = max_j S_ij Q_j (eq. 4)
decide which items to certify and upweight.
"""

from ._concepts import Concept, ConceptSet, load_concepts
from ._reweight import (
    RankingChange,
    RubricModelMap,
    RubricPrimitives,
    item_weights,
    model_weights,
    ranking_change,
    rubric_primitives,
    validate_results,
)
from ._scores import (
    COST_LEVELS,
    NOISE_LEVELS,
    STRENGTH_LEVELS,
    WELFARE_LEVELS,
    ScoreMaps,
    certify,
    platinum_scores,
    quality_factors,
    validate_concept_scores,
    validate_strengths,
)

__all__ = [
    "COST_LEVELS",
    "NOISE_LEVELS",
    "STRENGTH_LEVELS",
    "WELFARE_LEVELS",
    "Concept",
    "ConceptSet",
    "RankingChange",
    "RubricModelMap",
    "RubricPrimitives",
    "ScoreMaps",
    "certify",
    "item_weights",
    "load_concepts",
    "model_weights",
    "platinum_scores",
    "quality_factors",
    "ranking_change",
    "rubric_primitives",
    "validate_concept_scores",
    "validate_strengths",
    "validate_results",
]
