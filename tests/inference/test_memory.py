"""Memory before allocation: a fit whose layout cannot fit in the memory the test allows is
refused (or, on the command line, streamed) before it builds its large arrays."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from platinum_jax._memory import (
    MEMORY_ENV,
    InsufficientMemory,
    marginal_bytes,
    memory_available,
    streamed_bytes,
)
from platinum_jax.cli import main
from platinum_jax.data import ResponseTable
from platinum_jax.inference import fit, simulate
from platinum_jax.models import TwoPL


@pytest.fixture
def limit(monkeypatch):
    def set_limit(value: str) -> None:
        monkeypatch.setenv(MEMORY_ENV, value)
    return set_limit


def test_the_limit_reads_units_and_refuses_what_is_not_a_size(limit):
    limit("1.5GB")
    assert memory_available() == (1_500_000_000, f"{MEMORY_ENV}=1.5GB")
    limit("2GiB")
    assert memory_available()[0] == 2 * 2**30
    limit("off")
    assert memory_available()[0] is None
    limit("lots")
    with pytest.raises(ValueError, match="is not a memory size"):
        memory_available()


def test_the_marginal_row_layout_is_refused_before_it_is_built(limit):
    table, _ = simulate(TwoPL(), 400, 60, seed=3)
    n = table.n_responses
    # the row layout evaluates every response at 2 x 61 + 241 nodes in float64
    need = marginal_bytes(400, 60, n, nodes=61, eap_nodes=241, dense=False)
    assert need >= 8 * n * (61 + 241)
    limit(f"{need // 4}")
    tracemalloc.start()
    try:
        with pytest.raises(InsufficientMemory) as info:
            fit(TwoPL(), table, method="marginal", dense=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert "row layout" in message and f"{n:,} responses" in message
    assert "--stream" in message and MEMORY_ENV in message
    assert isinstance(info.value, ValueError)  # the command line reports it as an error
    assert peak < need / 50  # refused before anything of the layout's size was allocated
    from platinum_jax.inference._marginal import _check_layout_memory
    from platinum_jax.inference._point import _problem

    limit(f"{need}")  # exactly enough: no refusal
    _check_layout_memory(_problem(TwoPL(), table), False, 61, 241)


@pytest.mark.parametrize("method, options, what", [
    ("map", {}, "MAP fit"),
    ("bootstrap", {"replicates": 50}, "MAP fit"),  # its full-data MAP comes first
    ("nuts", {"chains": 2, "samples": 100, "warmup": 10}, "NUTS"),
])
def test_every_fit_path_checks_its_peak_first(limit, method, options, what):
    table, _ = simulate(TwoPL(), 60, 10, seed=1)
    limit("10KB")
    with pytest.raises(InsufficientMemory, match=what):
        fit(TwoPL(), table, method=method, **options)


def test_the_bootstrap_and_laplace_check_their_own_arrays(limit):
    table, _ = simulate(TwoPL(), 60, 10, seed=1)
    base = fit(TwoPL(), table)
    p = base.problem.n_free
    limit(f"{3 * 8 * p * p - 1}")  # three p x p float64 matrices
    from platinum_jax.inference import bootstrap, laplace

    with pytest.raises(InsufficientMemory, match=f"{p} x {p} Hessian"):
        laplace(base)

    limit(f"{8 * 60 * 10 * 400}")  # room for the MAP's responses, not 8 refits at once
    with pytest.raises(InsufficientMemory, match="bootstrap .200 refits, 8 at a time"):
        bootstrap(base, replicates=200)


def _parquet(path, n_subjects, n_items, seed=0):
    table, truth = simulate(TwoPL(), n_subjects, n_items, seed=seed, density=0.5)
    frame = table.to_frame()
    pq.write_table(pa.table({"subject": frame["subject"].astype(str),
                             "item": frame["item"].astype(str),
                             "response": frame["response"].astype(np.int8)}), path)
    return ResponseTable.from_frame(frame)


def _default_and_streamed(n_subjects, n_items, n):
    """The default path's peak (the response table, then the dense layout) and the
    streamed fit's."""
    dense = marginal_bytes(n_subjects, n_items, n, nodes=61, eap_nodes=241, dense=True)
    return 64 * n + dense, streamed_bytes(n_subjects, n_items, n)


def test_fit_streams_when_only_the_streamed_path_fits(tmp_path, limit, capsys):
    path = tmp_path / "responses.parquet"
    table = _parquet(path, 2000, 200)
    n = table.n_responses
    default, stream = _default_and_streamed(2000, 200, n)
    assert stream < default
    limit(f"{(stream + default) // 2}")
    out = tmp_path / "fit"
    assert main(["fit", str(path), "--model", "2pl", "--method", "marginal",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "fitting streamed instead" in err and f"{n:,} responses" in err
    summary = json.loads((out / "fit.json").read_text())
    assert summary["layout"] == "streamed"
    assert "fitting streamed instead" in summary["diagnostics"]["layout_chosen"]
    # the estimates are the default path's (the same marginal likelihood), within the tolerance
    limit("off")
    reference = fit(TwoPL(), table, method="marginal").items
    import pandas as pd

    items = pd.read_csv(out / "items.csv", index_col="item")
    for column in ("difficulty", "discrimination"):
        np.testing.assert_allclose(items.loc[reference.index, column], reference[column],
                                   atol=2e-3)


def test_fit_refuses_in_seconds_when_no_path_fits(tmp_path, limit, capsys):
    path = tmp_path / "responses.parquet"
    table = _parquet(path, 2000, 200)
    default, stream = _default_and_streamed(2000, 200, table.n_responses)
    limit(f"{stream // 2}")
    out = tmp_path / "fit"
    tracemalloc.start()
    try:
        code = main(["fit", str(path), "--model", "2pl", "--method", "marginal",
                     "--out", str(out)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert "the streamed fit" in err and "does not fit either" in err and "MB" in err
    assert peak < stream / 4  # the metadata and the label columns only
    # with a flag the streamed fit does not take, the refusal names it
    limit(f"{(stream + default) // 2}")
    assert main(["fit", str(path), "--model", "2pl", "--method", "marginal", "--diagnostics",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "does not take --diagnostics" in err and "add --stream" in err
    assert not out.exists()
