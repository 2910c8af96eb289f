"""``Fit.write`` replaces each file whole: a failure while writing leaves the earlier results
exactly as they were, with no temporary file beside them."""

from __future__ import annotations

import numpy as np
import pytest

from platinum_jax.data import ResponseTable
from platinum_jax.inference import _fit_files, fit
from platinum_jax.models import OnePL


def _small_fit():
    rng = np.random.default_rng(3)
    theta, b = rng.normal(size=30), rng.normal(size=8)
    s, i = np.meshgrid(np.arange(30), np.arange(8), indexing="ij")
    p = 1.0 / (1.0 + np.exp(-(theta[s] - b[i])))
    y = (rng.uniform(size=p.shape) < p).astype(float)
    return fit(OnePL(), ResponseTable.from_arrays(s.ravel(), i.ravel(), y.ravel()), method="map")


def test_a_failed_write_keeps_the_earlier_files(tmp_path, monkeypatch):
    result = _small_fit()
    out = tmp_path / "fit"
    written = result.write(out, draws=True)
    assert sorted(p.name for p in written) == sorted(result.files(draws=True))
    assert _fit_files.DRAWS_FILE in result.files(draws=True)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert before["fit.json"].decode() == result.files(draws=True)["fit.json"]

    def broken(_fit):
        raise OSError("disk full")

    monkeypatch.setattr(_fit_files, "draws_bytes", broken)
    with pytest.raises(OSError, match="disk full"):
        result.write(out, draws=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
