"""Which group (benchmark) each item belongs to, for models whose mean reads it.

A model that needs an item's group declares an item entry ``Param(data="group")``: the engine
fills it with the group's position and no fitter moves it (it needs no prior); the model's
``mean`` then indexes per-group globals with it. The positions come from the table's ``group``
column or, for tables without one (simulations), from the model's own ``item_groups`` option.
These helpers check those options and size a model for a table.
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_item_groups", "count_groups"]


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
