"""Evaluation data in the shape every measurement model reads: :class:`ResponseTable`.

    >>> from platinum_jax.data import ResponseTable
    >>> table = ResponseTable.read("responses.csv")   # doctest: +SKIP
"""

from ._responses import ResponseTable

__all__ = ["ResponseTable"]
