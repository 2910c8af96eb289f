"""How measurable each item is: the signal it carries about the ability, beside its platinum
status, so a benchmark designer sees which items are worth keeping."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._bank import ItemBank
from ._select import population_weights

__all__ = ["item_measurability"]


def item_measurability(bank: ItemBank, platinum: pd.Series | None = None) -> pd.DataFrame:
    """One row per item of ``bank``:

    * ``information``: Fisher information about the ability averaged over the population
      (normal at the fitted abilities' mean and sd), ``sum_g w_g I_i(theta_g)``;
    * the item's fitted parameters (difficulty, discrimination, ... as the model names them);
    * ``share_never`` / ``share_always``: share of the fit's responses on the item that are 0 /
      that are 1 (full marks), and ``saturation``, the larger of the two: 1 for an item every
      model fails or every model solves, which tells no two models apart;
    * ``platinum`` when given: the item's platinum status (a Series indexed by item; items it
      does not list get NaN, and labels that are not items of the fit raise).
    """
    info = np.asarray(population_weights(bank) @ bank.information())
    t = bank.fit.table
    count = np.bincount(t.item_index, minlength=t.n_items)
    never = np.bincount(t.item_index, weights=t.response == 0, minlength=t.n_items) / count
    always = np.bincount(t.item_index, weights=t.response == 1, minlength=t.n_items) / count
    params = bank.fit.items.drop(columns=["n_responses", "group"], errors="ignore")
    out = pd.DataFrame({"information": info}, index=bank.items).join(params)
    out["n_responses"] = count
    out["share_never"], out["share_always"] = never, always
    out["saturation"] = np.maximum(never, always)
    if bank.fit.diagnostics.get("placeholder_table"):
        out[["n_responses", "share_never", "share_always", "saturation"]] = np.nan
    if platinum is not None:
        unknown = pd.Index(platinum.index).difference(bank.items)
        if len(unknown):
            raise ValueError(f"platinum names {len(unknown)} item(s) the fit does not have, "
                             f"e.g. {list(unknown[:5])}")
        out["platinum"] = platinum.reindex(out.index)
    return out
