"""Evaluation data in the shape every measurement model reads: :class:`ResponseTable`; binary
leaderboards at scale, one byte per cell: :class:`CodedResponses`.

    >>> from platinum_jax.data import ResponseTable
    >>> table = ResponseTable.read("responses.csv")   # doctest: +SKIP
"""

from ._coded import CodedResponses, read_parquet_streamed
from ._responses import ResponseTable

__all__ = ["CodedResponses", "ResponseTable", "read_parquet_streamed"]
