"""Evaluation data in the shape every measurement model reads: :class:`ResponseTable`; binary
leaderboards at scale, one byte per cell: :class:`CodedResponses`; benchmark scores in [0, 1],
one per (model, benchmark): :class:`ScoreTable`.

    >>> from platinum_jax.data import ResponseTable
    >>> table = ResponseTable.read("responses.csv")   # doctest: +SKIP
"""

from ._coded import CodedResponses, read_parquet_streamed
from ._responses import ResponseTable
from ._scores import ScoreTable

__all__ = ["CodedResponses", "ResponseTable", "ScoreTable", "read_parquet_streamed"]
