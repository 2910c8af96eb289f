"""Which group (benchmark) each item belongs to, for models whose mean reads it.

A model that needs an item's group declares an item parameter holding the group's position
and fixes it for every item in its identification (so no fitter moves it and it needs no
prior); its ``mean`` then indexes per-group globals with it. The positions come from the
table's ``group`` column or, for tables without one (simulations), from the model's own
``item_groups`` option.
"""

from __future__ import annotations

import numpy as np

from ._protocol import Fixed

__all__ = ["check_item_groups", "count_groups", "fixed_item_groups"]


def check_item_groups(groups: int, item_groups) -> None:
    """Validate a model's ``groups`` and ``item_groups`` options (in ``__check_init__``)."""
    if int(groups) < 1:
        raise ValueError(f"groups must be >= 1 (got {groups})")
    if item_groups is not None:
        g = np.asarray(item_groups)
        if g.size and (g.min() < 0 or g.max() >= int(groups)):
            raise ValueError(f"item_groups must lie in 0..{int(groups) - 1} (got "
                             f"{g.min()}..{g.max()})")


def count_groups(table, model_name: str) -> int:
    """The number of groups of ``table`` (its ``group`` column), or a clear error."""
    if table.groups is None:
        raise ValueError(
            f"{table.source}: the {model_name} model needs to know which benchmark each item "
            "belongs to: add a group column (or a benchmark column beside item)"
        )
    return len(table.groups)


def fixed_item_groups(table, groups: int, item_groups, model_name: str,
                      builder: str) -> Fixed:
    """The group position of every item, fixed: ``Fixed`` of shape ``(n_items,)``.

    ``builder`` names the constructor that sizes the model for a table (for the error when
    the table's groups and the model's disagree)."""
    if table.groups is not None:
        if len(table.groups) != int(groups):
            raise ValueError(
                f"{table.source} has {len(table.groups)} groups (benchmarks) but the "
                f"{model_name} model was built for {groups}; build it with {builder}"
            )
        where = np.asarray(table.item_group)
    elif item_groups is not None:
        where = np.asarray(item_groups)
        if len(where) != table.n_items:
            raise ValueError(f"item_groups names {len(where)} items but {table.source} has "
                             f"{table.n_items}")
    else:
        raise ValueError(
            f"{table.source} has no group column and the model no item_groups: the "
            f"{model_name} model needs the benchmark of every item"
        )
    return Fixed(np.ones(table.n_items, bool), where.astype(np.float64))
