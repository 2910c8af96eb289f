"""What keeps a point fit's process short: priors built on first use, Bayesian code loaded
only when asked for, compiled solvers kept on disk (and never used when stale), and the
component search without scipy.sparse, and small dense solves without LAPACK."""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from platinum_jax import _runtime
from platinum_jax.data._connectivity import component_roots
from platinum_jax.inference import _dense
from platinum_jax.models import Gaussian, Param, PriorSpec, Rosetta

XS = np.array([-2.5, -0.3, 0.0, 1.1, 4.0])


# ---------------------------------------------------------------------- priors
def test_prior_accepts_a_distribution_a_spec_or_a_factory():
    import numpyro.distributions as dist

    given = dist.Normal(0.5, 2.0)
    assert Param(prior=given).prior is given
    assert Param().prior is None

    spec = Param(prior=PriorSpec("Normal", 0.5, 2.0))
    built = spec.prior
    assert isinstance(built, dist.Normal)
    assert spec.prior is built  # built once, then kept
    np.testing.assert_allclose(built.log_prob(XS), stats.norm.logpdf(XS, 0.5, 2.0), rtol=1e-12)

    factory = Param(prior=lambda: dist.StudentT(3.0, 1.0, 0.5))
    np.testing.assert_allclose(factory.prior.log_prob(XS), stats.t.logpdf(XS, 3.0, 1.0, 0.5),
                               rtol=1e-10)
    # a copy with another field keeps the prior
    moved = dataclasses.replace(spec, init=1.0)
    assert moved.init == 1.0 and isinstance(moved.prior, dist.Normal)


def test_bad_priors_are_named():
    with pytest.raises(TypeError, match="Param.prior: the prior factory returned float"):
        _ = Param(prior=lambda: 1.0).prior
    with pytest.raises(ValueError, match="no 'Gausian'"):
        _ = Param(prior=PriorSpec("Gausian", 0.0, 1.0)).prior


def test_builtin_priors_keep_their_values():
    """The Rosetta priors (C, D ~ N(0, 3), alpha ~ N(1, 1)) and the Gaussian noise prior
    (log sigma ~ N(log 0.1, 1.5)) as declared, now built on first use."""
    model = Rosetta(likelihood=Gaussian())
    expected = {"capability": (0.0, 3.0), "difficulty": (0.0, 3.0), "slope": (1.0, 1.0),
                "log_noise": (np.log(0.1), 1.5)}
    decl = {**model.subject_params(), **model.item_params(), **model.likelihood.params()}
    for name, (loc, scale) in expected.items():
        np.testing.assert_allclose(decl[name].prior.log_prob(XS),
                                   stats.norm.logpdf(XS, loc, scale), rtol=1e-12, err_msg=name)


def test_point_fit_loads_no_bayesian_or_plotting_code(scores_long_csv, tmp_path):
    code = textwrap.dedent(f"""
        import sys
        from platinum_jax.cli import main
        rc = main(["stitch", {str(scores_long_csv)!r}, "--out", {str(tmp_path / "fit")!r}])
        print("RC", rc)
        print("MODULES", " ".join(sys.modules))
    """)
    env = {**os.environ, "PLATINUM_JAX_CACHE": "off"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "RC 0" in done.stdout, done.stderr[-2000:]
    loaded = set(done.stdout.split("MODULES", 1)[1].split())
    assert not {"numpyro", "optax", "matplotlib", "scipy.sparse.csgraph"} & loaded
    assert "cost 3.447380" in done.stdout


# ---------------------------------------------------------------------- components
def test_component_roots_match_scipy():
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    rng = np.random.default_rng(3)
    for _ in range(100):
        n = int(rng.integers(1, 50))
        e = int(rng.integers(0, 70))
        u, v = rng.integers(0, n, e), rng.integers(0, n, e)
        roots = component_roots(u, v, n)
        k, labels = connected_components(coo_matrix((np.ones(e), (u, v)), shape=(n, n)),
                                         directed=False)
        assert len(np.unique(roots)) == k
        for a in range(n):
            same = labels == labels[a]
            assert np.array_equal(same, roots == roots[a])
            assert roots[a] == np.flatnonzero(same).min()  # the smallest node of its component


# ---------------------------------------------------------------------- compiled executables
class _NoTracing:
    """A jitted function that must not be lowered: calling it proves a load from disk."""

    def __init__(self, jitted):
        self.jitted = jitted

    def lower(self, *args, **kwargs):
        raise AssertionError("traced although a valid entry was on disk")


@pytest.fixture
def executables(tmp_path, monkeypatch, no_compilation_cache):
    # Only fresh compilations are written (see below), so the run's shared compilation cache,
    # which may already hold these programs, is off.
    directory = tmp_path / "executables"
    monkeypatch.setattr(_runtime, "_EXECUTABLES", directory)
    return directory


def _double_plus_one(x):
    return 2.0 * x + 1.0


def _square(x):
    return x * x


def test_executable_is_written_once_and_loaded_without_tracing(executables):
    x = jnp.linspace(0.0, 1.0, 5)
    first = _runtime.DiskCachedFunction(jax.jit(_double_plus_one), "affine")
    np.testing.assert_allclose(first(x), 2.0 * np.linspace(0.0, 1.0, 5) + 1.0)
    assert len(list(executables.glob("*.executable"))) == 1
    again = _runtime.DiskCachedFunction(_NoTracing(jax.jit(_double_plus_one)), "affine")
    np.testing.assert_allclose(again(x), 2.0 * np.linspace(0.0, 1.0, 5) + 1.0)
    # another shape is another program
    again.jitted = jax.jit(_double_plus_one)
    np.testing.assert_allclose(again(jnp.ones(3)), np.full(3, 3.0))
    assert len(list(executables.glob("*.executable"))) == 2


def test_a_stale_or_broken_entry_is_rebuilt_never_used(executables, monkeypatch):
    x = jnp.array([1.0, 2.0, 3.0])
    _runtime.DiskCachedFunction(jax.jit(_double_plus_one), "affine")(x)
    (affine_file,) = executables.glob("*.executable")
    # The affine program's file put where the square's entry belongs (as a digest collision
    # or a copied cache would): its recorded key differs, so the square is rebuilt.
    square = _runtime.DiskCachedFunction(jax.jit(_square), "square")
    target = square._path(executables, square._full_key((x,)))
    target.write_bytes(affine_file.read_bytes())
    np.testing.assert_allclose(square(x), [1.0, 4.0, 9.0])
    assert pickle.loads(target.read_bytes())[0] == square._full_key((x,))  # rewritten
    # A truncated entry: rebuilt, and the answer is right.
    target.write_bytes(target.read_bytes()[:100])
    fresh = _runtime.DiskCachedFunction(jax.jit(_square), "square")
    np.testing.assert_allclose(fresh(x), [1.0, 4.0, 9.0])
    assert pickle.loads(target.read_bytes())[0] == fresh._full_key((x,))
    # Changed package source (or JAX, device, x64): a different entry, built afresh.
    monkeypatch.setattr(_runtime, "_SOURCE_DIGEST", "edited")
    with pytest.raises(AssertionError, match="traced"):
        _runtime.DiskCachedFunction(_NoTracing(jax.jit(_square)), "square")(x)


class _FromCompilationCache:
    """A jitted function whose compilation reports a hit of JAX's persistent cache."""

    def __init__(self, jitted):
        self.jitted = jitted

    def lower(self, *args):
        lowered = self.jitted.lower(*args)

        class Lowered:
            def compile(self):
                jax.monitoring.record_event("/jax/compilation_cache/cache_hits")
                return lowered.compile()

            def as_text(self):
                return lowered.as_text()

        return Lowered()


def test_executables_from_the_compilation_cache_are_not_kept(executables):
    """Re-serialised after a compilation-cache hit, an executable lacks code and cannot run
    in another process, so only fresh compilations are written."""
    f = _runtime.DiskCachedFunction(_FromCompilationCache(jax.jit(_square)), "square")
    np.testing.assert_allclose(f(jnp.array([3.0])), [9.0])
    assert not list(executables.glob("*.executable"))


def test_an_entry_that_fails_to_run_is_dropped(executables, monkeypatch):
    x = jnp.array([1.0, 2.0])
    _runtime.DiskCachedFunction(jax.jit(_square), "square")(x)
    (entry,) = executables.glob("*.executable")

    def broken(*args):
        raise RuntimeError("NOT_FOUND: Function fusion not found")

    monkeypatch.setattr(_runtime.DiskCachedFunction, "_load", lambda self, d, k: broken)
    again = _runtime.DiskCachedFunction(jax.jit(_square), "square")
    np.testing.assert_allclose(again(x), [1.0, 4.0])  # traced instead
    assert not entry.exists()


def test_programs_with_host_callbacks_stay_in_memory(executables):
    def noisy(x):
        jax.debug.callback(lambda v: None, x)
        return x + 1.0

    out = _runtime.DiskCachedFunction(jax.jit(noisy), "noisy")(jnp.ones(2))
    np.testing.assert_allclose(out, [2.0, 2.0])
    assert not list(executables.glob("*.executable"))


def test_a_lapack_program_loads_in_a_fresh_process(executables):
    """Cholesky solves call LAPACK through slots that JAX fills when lowering; a program loaded
    in a new process must find them filled (it crashed before they were)."""
    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    b = np.array([1.0, -2.0, 0.5])

    def solve(a, b):
        return jax.scipy.linalg.cho_solve((jnp.linalg.cholesky(a), True), b)

    _runtime.DiskCachedFunction(jax.jit(solve), "cholesky")(jnp.asarray(a), jnp.asarray(b))
    code = textwrap.dedent(f"""
        import jax, jax.numpy as jnp, numpy as np
        jax.config.update("jax_enable_x64", True)
        from pathlib import Path
        from platinum_jax import _runtime
        _runtime._EXECUTABLES = Path({str(executables)!r})
        class NoTracing:
            def lower(self, *a, **k):
                raise SystemExit("traced")
        f = _runtime.DiskCachedFunction(NoTracing(), "cholesky")
        a = jnp.asarray({a.tolist()!r}); b = jnp.asarray({b.tolist()!r})
        print(repr(np.asarray(f(a, b)).tolist()))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    np.testing.assert_allclose(eval(done.stdout.strip()), np.linalg.solve(a, b), rtol=1e-12)


def test_a_program_without_lapack_loads_without_lapack_set_up(executables):
    """LAPACK's set-up imports SciPy's linear algebra (about 0.2 s); a loaded program that
    calls no LAPACK routine must not pay it."""
    _runtime.DiskCachedFunction(jax.jit(_double_plus_one), "affine")(jnp.arange(3.0))
    (entry,) = executables.glob("*.executable")
    assert pickle.loads(entry.read_bytes())[1] is False  # recorded: no LAPACK call inside
    code = textwrap.dedent(f"""
        import sys
        import jax, jax.numpy as jnp, numpy as np
        jax.config.update("jax_enable_x64", True)
        from pathlib import Path
        from platinum_jax import _runtime
        _runtime._EXECUTABLES = Path({str(executables)!r})
        class NoTracing:
            def lower(self, *a, **k):
                raise SystemExit("traced")
        f = _runtime.DiskCachedFunction(NoTracing(), "affine")
        print(repr(np.asarray(f(jnp.arange(3.0))).tolist()))
        print("scipy.linalg" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    values, scipy_loaded = done.stdout.strip().splitlines()
    assert eval(values) == [1.0, 3.0, 5.0]
    assert scipy_loaded == "False"


@pytest.mark.parametrize("n", [1, 2, 7, 40, _dense._SMALL, _dense._SMALL + 3])
def test_spd_solve_matches_numpy(n):
    """The Schur system of the MAP solver: XLA's own factorisation up to _SMALL unknowns,
    LAPACK's above; both against NumPy's dense solve."""
    rng = np.random.default_rng(n)
    x = rng.normal(size=(n + 5, n))
    a = x.T @ x + 0.1 * np.eye(n)  # positive definite, condition number up to ~1e3
    b = rng.normal(size=n)
    got = np.asarray(jax.jit(_dense._spd_solve)(jnp.asarray(a), jnp.asarray(b)))
    want = np.linalg.solve(a, b)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())
    # batched, as the analyses' vmapped refits call it
    batch = np.stack([a, a + np.eye(n)])
    got = np.asarray(jax.vmap(_dense._spd_solve)(jnp.asarray(batch), jnp.asarray(np.stack([b, b]))))
    np.testing.assert_allclose(got[1], np.linalg.solve(batch[1], b), rtol=1e-9,
                               atol=1e-9 * np.abs(want).max())


@pytest.mark.parametrize("n", [2, _dense._SMALL + 1])
def test_spd_solve_reports_an_indefinite_system_as_nan(n):
    a = np.eye(n)
    a[0, 0] = -1.0
    got = np.asarray(_dense._spd_solve(jnp.asarray(a), jnp.ones(n)))
    assert np.isnan(got).any()


def test_solver_key_names_what_the_program_depends_on(scores_long_csv, executables):
    from platinum_jax.data import ScoreTable
    from platinum_jax.inference import Problem, _map
    from platinum_jax.models.rosetta import BenchmarkAnchor

    table = ScoreTable.from_csv(scores_long_csv).responses
    key = {}
    for l2 in (0.1, 0.2):
        key[l2] = _map._disk_key(Problem(Rosetta(l2=l2), table), None, None, {"max_steps": 5})
    assert key[0.1] is not None and key[0.1] != key[0.2]
    other_anchor = Rosetta(anchor=BenchmarkAnchor("MMLU", 0.0, 1.0))
    assert _map._disk_key(Problem(other_anchor, table), None, None, {"max_steps": 5}) \
        != key[0.1]
    assert _map._disk_key(Problem(Rosetta(l2=0.1), table), None, None, {"max_steps": 6}) \
        != key[0.1]

    class WithArray(Rosetta):
        weights: jax.Array = dataclasses.field(default_factory=lambda: jnp.ones(2))

    assert _map._disk_key(Problem(WithArray(), table), None, None, {}) is None


def test_solvers_are_kept_in_memory_without_the_disk_cache(monkeypatch):
    """A second fit of the same structure in one process reuses the compiled solver whether
    or not the disk cache is on (a library session that never called
    enable_compilation_cache, a test run): it is neither traced nor compiled again."""
    from platinum_jax.inference import Problem, _map, fit_map, simulate
    from platinum_jax.models import TwoPL

    monkeypatch.setattr(_runtime, "_EXECUTABLES", None)
    monkeypatch.setattr(_map, "_SOLVERS", {})
    model = TwoPL()
    first, _ = simulate(model, 30, 6, seed=1)
    second, _ = simulate(model, 30, 6, seed=2)
    assert _map.map_solver(Problem(model, first)) is _map.map_solver(Problem(model, second))
    fit_map(model, first)
    traced = []
    real = _map.solve_map
    monkeypatch.setattr(_map, "solve_map", lambda *a, **k: traced.append(1) or real(*a, **k))
    fit_map(model, second)
    assert not traced


def test_a_misspelt_solver_option_is_named_not_hashed():
    """An option the solver does not take (e.g. a dict passed as ``solver_options=``) fails
    with the option's name and the accepted ones, not with an unhashable-type error."""
    from platinum_jax.inference import Problem, _map, simulate
    from platinum_jax.models import TwoPL

    table, _ = simulate(TwoPL(), 30, 6, seed=0)  # the shape above: one simulation program
    with pytest.raises(TypeError, match=r"unknown solver option\(s\) \['solver_options'\].*max_steps"):
        _map.map_solver(Problem(TwoPL(), table), solver_options={"max_steps": 10})


def test_stitching_fit_from_a_loaded_solver_is_the_same_fit(scores_long_csv, executables,
                                                             monkeypatch):
    from platinum_jax.data import ScoreTable
    from platinum_jax.inference import _map
    from platinum_jax.stitching import fit_stitching

    monkeypatch.setattr(_map, "_SOLVERS", {})
    table = ScoreTable.from_csv(scores_long_csv)
    built = fit_stitching(table)
    assert len(list(executables.glob("*.executable"))) == 1
    monkeypatch.setattr(_map, "_SOLVERS", {})  # a new process: only the disk remembers
    loaded = fit_stitching(table)
    assert f"{built.cost:.6f}" == "3.447380"  # the paper start's minimum (README, SciPy agrees)
    assert loaded.cost == built.cost and loaded.iterations == built.iterations
    np.testing.assert_array_equal(loaded.theta, built.theta)


# ---------------------------------------------------------------------- links on NumPy input
@pytest.mark.parametrize("name", ["sigmoid", "clipped_linear"])
def test_links_give_numpy_results_equal_to_the_jax_ones(name):
    """Reading predictions from a finished fit evaluates the link on NumPy arrays (no compiled
    call); the values must be the JAX link's, overflow-free at extreme arguments."""
    from scipy.special import expit

    from platinum_jax.models.rosetta._model import LINKS

    z = np.concatenate([np.linspace(-40.0, 40.0, 101), [-800.0, 800.0, 0.0]])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        got = LINKS[name](z)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, np.asarray(LINKS[name](jnp.asarray(z))), rtol=1e-14,
                               atol=1e-300)
    want = expit(z) if name == "sigmoid" else np.clip(0.5 + 0.25 * z, 0.0, 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-300)
