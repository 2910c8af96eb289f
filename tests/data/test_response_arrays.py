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


def _linked(table):
    from platinum_jax.data._connectivity import linked_through_busiest

    return linked_through_busiest(table.subject_index, table.item_index, table.n_subjects,
                                  table.n_items)


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


def test_connectedness_shortcut_agrees_with_the_graph_search():
    # check_connected first tries a cheap sufficient test (every subject shares an item with
    # the busiest subject); it must never accept a split graph, and a connected graph that
    # fails it (a chain) must still pass through the full search.
    rng = np.random.default_rng(3)
    dense_s, dense_i = np.divmod(np.arange(40 * 9), 9)
    keep = rng.random(len(dense_s)) > 0.3
    keep[::9] = True  # every subject keeps item 0
    dense = ResponseTable.from_arrays(dense_s[keep], dense_i[keep], np.ones(keep.sum()))
    assert _linked(dense) and len(dense.components()) == 1
    dense.check_connected()

    # a chain s0-i0-s1-i1-s2-...: connected, but no subject shares an item with all others
    s = np.array([0, 1, 1, 2, 2, 3, 3, 4])
    i = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    chain = ResponseTable.from_arrays(s, i, np.ones(len(s)))
    assert not _linked(chain) and len(chain.components()) == 1
    chain.check_connected()

    # two blocks that share nothing
    s2 = np.concatenate([dense_s, dense_s + 40])
    i2 = np.concatenate([dense_i, dense_i + 9])
    split = ResponseTable.from_arrays(s2, i2, np.ones(len(s2)))
    assert not _linked(split) and len(split.components()) == 2
    with pytest.raises(ValueError, match="2 disconnected components"):
        split.check_connected()


def test_runs_keep_repeated_samples_and_clusters_label_items():
    """A run column keeps repeated samples of one (subject, item) as rows of their own; a
    cluster column labels each item once; both survive the round trip through a frame."""
    import pandas as pd

    from platinum_jax.data import ResponseTable

    frame = pd.DataFrame({"subject": ["a", "a", "a", "b"], "item": ["q1", "q1", "q2", "q1"],
                          "response": [1.0, 0.0, 1.0, 1.0], "run": ["r0", "r1", "r0", "r0"],
                          "cluster": ["p", "p", "s", "p"]})
    table = ResponseTable.from_frame(frame)
    assert table.n_responses == 4 and list(table.run) == ["r0", "r1", "r0", "r0"]
    assert list(table.clusters) == ["p", "s"] and list(table.item_cluster) == [0, 1]
    back = table.to_frame()
    assert list(back["run"]) == list(frame["run"]) and list(back["cluster"]) == list(frame["cluster"])
    with pytest.raises(ValueError, match=r"repeat a \(subject, item, run\) key"):
        ResponseTable.from_frame(frame.assign(run="r0"))
    with pytest.raises(ValueError, match="add a run column"):
        ResponseTable.from_frame(frame.drop(columns="run"))
    with pytest.raises(ValueError, match="more than one cluster"):
        ResponseTable.from_frame(frame.assign(cluster=["p", "x", "s", "p"]))
