"""Shared fixtures: float64 for the numerical checks, one compilation cache and quick-compiling
XLA flags for the whole run, and the path to the public Epoch data."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

# The command line caches compiled programs in the user's home; tests call it in-process and
# must leave nothing behind there.
os.environ["PLATINUM_JAX_CACHE"] = "off"

# One persistent XLA compilation cache for the run, in the repository's ignored .cache/ (`make
# clean` empties it): JAX reads these variables when it is imported, so both xdist workers, the
# subprocesses the tests start and the notebooks' kernels share it, and a program compiled in one
# of them is loaded by the others. Programs that compile in under 0.1 s are not worth the disk.
# Set JAX_COMPILATION_CACHE_DIR yourself to put it elsewhere.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(REPO_ROOT / ".cache" / "jax-tests"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.1")
# A size limit makes JAX lock the cache (with the filelock package of the dev extra) while an
# entry is written, so a worker never reads another's half-written program (a warning, which the
# tests that turn warnings into errors would fail on).
os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(8 * 2**30))

# Compile for the suite, not for speed of the compiled code: XLA's classic CPU emitters at LLVM
# optimisation level 0. The suite's data are small, so its time is almost all compilation (one
# program per model, shape and sampler setting), and these flags cut that CPU time by about 40%
# (a contract row: 30 -> 19 s; the Bayesian stitching, streaming and design tests: 299 -> 162 s).
# The programs compute the same operations; only rounding in the last bits can differ from the
# default code generators. Users' programs are not affected (this file sets them for the test run
# only); set XLA_FLAGS yourself (even to "") to run the suite with other flags.
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_backend_optimization_level=0")

# One string-hash seed for the processes this run starts (the xdist workers, subprocesses,
# kernels): NumPyro's ELBO sums its sites in the order of a Python set of their names, so with
# random hashing every process traces a differently ordered program, and the compilation cache
# above never finds an SVI program another process compiled.
os.environ.setdefault("PYTHONHASHSEED", "0")

# One BLAS thread per process: the run is already two xdist workers on two cores, and OpenBLAS
# threads that wait on a busy core spin (SciPy's least squares on the Epoch table took 30 s of
# CPU with them and 1 s without). Read when NumPy loads, so this reaches the workers (started
# from this process), subprocesses and kernels; a process that loaded NumPy already keeps its own.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import jax  # noqa: E402
import pytest  # noqa: E402

# Set again in case a pytest plugin imported JAX before this file was read.
jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
jax.config.update("jax_persistent_cache_min_compile_time_secs",
                  float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]))
jax.config.update("jax_compilation_cache_max_size",
                  int(os.environ["JAX_COMPILATION_CACHE_MAX_SIZE"]))

# Tests compare against NumPy/SciPy in double precision; the library itself never forces this.
jax.config.update("jax_enable_x64", True)

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


# How `pytest -n 2 --dist loadgroup` (the Makefile's command) shares the tests between its two
# workers: a unit of work is a whole test file, so that a file's module fixtures (a fitted world,
# a subprocess's output) are built once, on one worker. Two exceptions make the units even:
# each notebook is a unit of its own, and the engine contract is split by model (each model's
# world is a module fixture per parameter). The units that take longest go out first, so that
# the two workers finish together: the notebooks and the contract's models, then the files with
# a test marked ``slow``, then the others, most tests first. The order is the collection's
# (each worker sorts its items the same way, below) and the scheduler keeps it.
# (pytest-xdist's own loadgroup reads an ``xdist_group`` mark from a suffix it adds to each test's
# id, which pytest 9 no longer lets a plugin change: with it, a file's tests were spread over
# both workers and its module fixtures built on each.)
EACH_TEST_A_UNIT = ("tests/test_notebooks.py",)
A_UNIT_PER_PARAMETER = ("tests/inference/test_engine_contract.py",)


def work_unit(nodeid: str) -> str:
    """The unit of work of a test, from its id (``path::name[parameters]``)."""
    path = nodeid.split("::")[0]
    if path in EACH_TEST_A_UNIT:
        return nodeid
    if path in A_UNIT_PER_PARAMETER and nodeid.endswith("]") and "[" in nodeid:
        return f"{path}[{nodeid[nodeid.index('[') + 1:-1]}]"
    return path


def first_out(unit: str, n_tests: int, has_slow: bool) -> tuple:
    """Sort key of a unit of work: the long units first."""
    long_alone = unit.split("::")[0].split("[")[0] in EACH_TEST_A_UNIT + A_UNIT_PER_PARAMETER
    return (not long_alone, not has_slow, -n_tests)


@pytest.hookimpl(trylast=True)  # after pytest's own reordering by fixtures, which it keeps
def pytest_collection_modifyitems(config, items):
    units: dict[str, list] = {}
    for item in items:
        units.setdefault(work_unit(item.nodeid), []).append(item)
    order = sorted(units, key=lambda u: first_out(
        u, len(units[u]), any(i.get_closest_marker("slow") for i in units[u])))
    items[:] = [item for unit in order for item in units[unit]]


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from collections import OrderedDict

    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:  # the first call: the queue holds every unit; keep the
                # collection's order (xdist would sort by the number of tests)
                first = {}
                for index, nodeid in enumerate(self.collection):
                    first.setdefault(work_unit(nodeid), index)
                self.workqueue = OrderedDict(sorted(self.workqueue.items(),
                                                    key=lambda kv: first[kv[0]]))
                self.ordered = True
            super()._assign_work_unit(node)

    return FileScheduling(config, log)


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


@pytest.fixture
def no_compilation_cache():
    """The run's persistent compilation cache unused during the test: for tests of what a fresh
    compilation does (the cache would hand back a program another test compiled)."""
    from jax.experimental.compilation_cache import compilation_cache

    before = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    compilation_cache.reset_cache()  # JAX decides once per process whether the cache is used
    try:
        yield
    finally:
        jax.config.update("jax_enable_compilation_cache", before)
        compilation_cache.reset_cache()


def _sparse_score_frame(seed=0, n_models=9, n_bench=4, n_items=40):
    """Scores k / n of a synthetic stitching truth with standard errors (some below the
    floor), about a fifth of the pairs missing, as the Epoch data are sparse. The Bayesian
    stitching tests of both paths sample the same worlds, so their programs are compiled once
    in the run."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    c = rng.normal(0.0, 1.0, n_models)
    d = rng.normal(0.0, 0.7, n_bench)
    a = np.exp(rng.normal(0.0, 0.3, n_bench))
    rows = []
    for m in range(n_models):
        for b in range(n_bench):
            if b > 0 and rng.random() < 0.2:
                continue
            mu = 1.0 / (1.0 + np.exp(-a[b] * (c[m] - d[b])))
            k = rng.binomial(n_items, mu)
            rows.append((f"m{m}", f"b{b}", k / n_items, n_items, rng.choice([0.0, 0.002, 0.03])))
    return pd.DataFrame(rows, columns=["model", "benchmark", "score", "n_items", "stderr"])


@pytest.fixture(scope="session")
def sparse_scores():
    """``sparse_scores(seed=0, n_models=9, n_bench=4, n_items=40)``: a sparse synthetic score
    table (columns model, benchmark, score, n_items, stderr)."""
    return _sparse_score_frame

