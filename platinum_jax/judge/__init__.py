"""LLM-as-judge certification workflow for the platinum rubric.

From Haupt, Reuel, Kochenderfer and Koyejo, "Optimal Aggregation Mechanisms for AI Benchmarking
and Platinum Benchmarks", appendix A.

Render the two appendix prompts, call an OpenAI-compatible or Anthropic model with rate
limiting, backoff and an on-disk SQLite cache, parse replies strictly, aggregate several samples
or judges per cell, and audit the result against expert labels.  ``platinum_jax.judge.testing``
holds a scripted local server for offline tests and demos.
"""

from ._audit import AuditReport, audit, load_expert_labels, quadratic_weighted_kappa
from ._cache import CacheCorruptError, JudgmentCache, set_aside
from ._prompts import (
    ReplyError,
    parse_concept_reply,
    parse_item_reply,
    render_concept_prompt,
    render_item_prompt,
)
from ._providers import (
    AnthropicProvider,
    FatalProviderError,
    JudgeConfig,
    OpenAIChatProvider,
    PermanentError,
    Provider,
    RateLimiter,
    TransientError,
    make_provider,
    redact,
)
from ._report import certification_figure, write_report
from ._runner import Judgments, aggregate_categorical, aggregate_ordinal, load_items, run_judgments

__all__ = [
    "AnthropicProvider",
    "AuditReport",
    "CacheCorruptError",
    "FatalProviderError",
    "JudgeConfig",
    "JudgmentCache",
    "Judgments",
    "OpenAIChatProvider",
    "PermanentError",
    "Provider",
    "RateLimiter",
    "ReplyError",
    "TransientError",
    "aggregate_categorical",
    "aggregate_ordinal",
    "audit",
    "certification_figure",
    "load_expert_labels",
    "load_items",
    "make_provider",
    "parse_concept_reply",
    "parse_item_reply",
    "quadratic_weighted_kappa",
    "redact",
    "render_concept_prompt",
    "render_item_prompt",
    "run_judgments",
    "write_report",
    "set_aside",
]
