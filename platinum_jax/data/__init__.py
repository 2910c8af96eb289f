"""Evaluation data in the shape every measurement model reads: :class:`ResponseTable`; binary
leaderboards at scale, one byte per cell: :class:`CodedResponses`; benchmark scores in [0, 1],
one per (model, benchmark): :class:`ScoreTable`. A name a table does not hold raises
:class:`UnknownNameError` (a ``KeyError`` that lists the close matches).

    >>> from platinum_jax.data import ResponseTable
    >>> table = ResponseTable.read("responses.csv")   # doctest: +SKIP
"""

from platinum_jax._names import UnknownNameError

from ._coded import CodedResponses, read_parquet_streamed
from ._responses import ResponseTable
from ._scores import ScoreTable

__all__ = ["CodedResponses", "ResponseTable", "ScoreTable", "UnknownNameError",
           "read_parquet_streamed"]
