"""ResponseTable.from_arrays: the vectorised path gives the table from_frame gives."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from platinum_jax.data import ResponseTable


def _same(a: ResponseTable, b: ResponseTable):
    assert list(a.subjects) == list(b.subjects) and list(a.items) == list(b.items)
    assert a.subjects.dtype == b.subjects.dtype and a.items.dtype == b.items.dtype
    np.testing.assert_array_equal(a.subject_index, b.subject_index)
    np.testing.assert_array_equal(a.item_index, b.item_index)
    np.testing.assert_array_equal(a.response, b.response)


def test_matches_from_frame_with_unused_positions():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 30, 200)
    i = rng.integers(0, 12, 200)
    keep = ~pd.DataFrame({"s": s, "i": i}).duplicated().to_numpy()
    s, i = s[keep], i[keep]
    s[s == 7] = 8  # position 7 unused: dropped and the rest renumbered
    keep = ~pd.DataFrame({"s": s, "i": i}).duplicated().to_numpy()
    s, i = s[keep], i[keep]
    y = rng.random(len(s))
    fast = ResponseTable.from_arrays(s, i, y)
    width_s, width_i = len(str(s.max())), len(str(i.max()))
    frame = pd.DataFrame({"subject": [f"s{k:0{width_s}d}" for k in s],
                          "item": [f"i{k:0{width_i}d}" for k in i], "response": y})
    _same(fast, ResponseTable.from_frame(frame))
    assert "s07" not in fast.subjects


def test_given_labels_and_trials():
    t = ResponseTable.from_arrays([0, 1, 1], [1, 0, 1], [0.5, 1.0, 0.0], subjects=["a", "b"],
                                  items=["x", "y"], trials=[2, 1, 3])
    assert list(t.subjects) == ["a", "b"] and list(t.items) == ["x", "y"]
    np.testing.assert_array_equal(t.trials, [2.0, 1.0, 3.0])


@pytest.mark.parametrize("kwargs,match", [
    ({"subject_index": [0, 0], "item_index": [1, 1], "response": [1.0, 0.0]}, "repeat"),
    ({"subject_index": [0, -1], "item_index": [0, 1], "response": [1.0, 0.0]}, "negative"),
    ({"subject_index": [0, 1], "item_index": [0, 1], "response": [1.0, np.nan]}, "NaN"),
    ({"subject_index": [0, 1], "item_index": [0], "response": [1.0, 0.0]}, "one length"),
    ({"subject_index": [0, 1], "item_index": [0, 1], "response": [1.0, 0.0],
      "trials": [1, 0.5]}, "whole numbers"),
    ({"subject_index": [0, 2], "item_index": [0, 1], "response": [1.0, 0.0],
      "subjects": ["a", "b"]}, "beyond"),
])
def test_bad_arrays_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ResponseTable.from_arrays(**kwargs)


def test_repeats_found_when_the_matrix_is_too_large_to_count():
    s = np.array([0, 5_000_000, 3, 5_000_000])
    i = np.array([0, 4_000, 2, 4_000])
    with pytest.raises(ValueError, match="2 rows repeat"):
        ResponseTable.from_arrays(s, i, np.ones(4))
