"""Shared fixtures: float64 for the numerical checks and the path to the public Epoch data."""

from __future__ import annotations

import os
from pathlib import Path

# The command line caches compiled programs in the user's home; tests call it in-process and
# must leave nothing behind there.
os.environ["PLATINUM_JAX_CACHE"] = "off"

import jax  # noqa: E402
import pytest  # noqa: E402

# Tests compare against NumPy/SciPy in double precision; the library itself never forces this.
jax.config.update("jax_enable_x64", True)

REPO_ROOT = Path(__file__).resolve().parents[1]
EPOCH_DIR = REPO_ROOT.parent / "shared" / "data" / "epoch-benchmark-stitching"


@pytest.fixture(scope="session")
def epoch_dir() -> Path:
    """Directory of the public Epoch AI benchmark-stitching data (``../shared/data/...``)."""
    if not (EPOCH_DIR / "scores_long.csv").exists():
        pytest.fail(
            f"the shared Epoch data is missing: expected {EPOCH_DIR.relative_to(REPO_ROOT.parent)} "
            "beside the repository checkout"
        )
    return EPOCH_DIR


@pytest.fixture(scope="session")
def scores_long_csv(epoch_dir: Path) -> Path:
    return epoch_dir / "scores_long.csv"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Keep each test file on one xdist worker (its module fixtures are built once), but give
    every notebook its own group, and split a file that sets ``XDIST_GROUP_BY_PARAMETER`` by
    its parametrisation (each case's module fixture is built on the worker that runs it)."""
    for item in items:
        group = item.nodeid.split("::")[0]
        if item.get_closest_marker("notebook") is not None:
            group = item.nodeid
        elif getattr(item.module, "XDIST_GROUP_BY_PARAMETER", False) and hasattr(item, "callspec"):
            group = f"{group}[{item.callspec.id}]"
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True)
def _ctrl_c_raises():
    """Ctrl-C raises KeyboardInterrupt in every test, as in a terminal. A test run started in
    the background of a non-interactive shell inherits SIGINT ignored, and Python then installs
    no handler of its own, so the tests that press Ctrl-C would see nothing happen."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGINT)
    if before == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if before == signal.SIG_IGN:
            signal.signal(signal.SIGINT, before)
