"""Is a response table one connected subject-item graph? (A fit puts only one connected part on
one scale.)"""

from __future__ import annotations

import numpy as np

__all__ = ["bipartite_components", "component_roots", "linked_through_busiest"]

_NUMPY_COMPONENTS_UP_TO = 1_000_000  # responses; above, SciPy's csgraph labels components


def component_roots(u: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """Connected components of the undirected graph on ``n`` nodes with edges ``(u[k], v[k])``:
    each node's label is the smallest node of its component.

    Vectorised hooking and pointer jumping (the idea of Shiloach and Vishkin's parallel
    algorithm): every edge whose ends have different roots hooks the larger root under the
    smaller, then every node jumps to its root; repeat until each edge's ends share a root.
    ``O(edges)`` NumPy work per round and a few rounds on score tables, without importing
    ``scipy.sparse.csgraph`` (a third of a second at start-up).
    """
    parent = np.arange(n, dtype=np.int64)
    while True:
        while True:  # pointer jumping: parent[x] becomes x's root
            grand = parent[parent]
            if np.array_equal(grand, parent):
                break
            parent = grand
        pu, pv = parent[u], parent[v]
        split = pu != pv
        if not split.any():
            return parent
        np.minimum.at(parent, np.maximum(pu[split], pv[split]), np.minimum(pu[split], pv[split]))


def bipartite_components(subject_index, item_index, n_subjects: int,
                         n_items: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Connected components of the subject-item graph, largest first, as ``(subject
    positions, item positions)``."""
    n_s, n_i = n_subjects, n_items
    u = np.asarray(subject_index, dtype=np.int64)
    v = n_s + np.asarray(item_index, dtype=np.int64)
    if len(u) <= _NUMPY_COMPONENTS_UP_TO:
        roots = component_roots(u, v, n_s + n_i)
    else:  # SciPy's graph search is faster here, and its import cost no longer matters
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        adj = coo_matrix((np.ones(len(u), dtype=np.int8), (u, v)), shape=(n_s + n_i,) * 2)
        roots = connected_components(adj, directed=False)[1]
    comps = [(np.flatnonzero(roots[:n_s] == k), np.flatnonzero(roots[n_s:] == k))
             for k in np.unique(roots)]
    return sorted(comps, key=lambda c: -(len(c[0]) + len(c[1])))


def linked_through_busiest(subject_index, item_index, n_subjects: int, n_items: int) -> bool:
    """A sufficient test of connectedness in a few passes over the rows: every subject
    answers an item that the busiest subject answers (so all subjects are linked through it),
    and every item has a response (so each hangs on one of those subjects). Nearly dense
    matrices pass; False means only that the full graph search must decide."""
    s, i = np.asarray(subject_index), np.asarray(item_index)
    if np.bincount(i, minlength=n_items).min() == 0:
        return False
    busiest = int(np.argmax(np.bincount(s, minlength=n_subjects)))
    hub = np.zeros(n_items, dtype=bool)
    hub[i[s == busiest]] = True
    linked = np.zeros(n_subjects, dtype=bool)
    linked[s[hub[i]]] = True
    return bool(linked.all())
