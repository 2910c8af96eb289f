"""Two local processes joined by JAX's distributed runtime give the one-process answers, write
their outputs once, and never wait for ever on a process that died.

The launcher: N processes of one command on the loopback address (Gloo collectives on CPU), a
free port per run, a deadline, and every process's exit status, output and time kept for the
test to check; one process's failure fails the test.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

pytestmark = pytest.mark.xdist_group("multiprocess")

WORKER = Path(__file__).with_name("worker.py")


@dataclass
class Finished:
    """One process of a launched run; ``returncode`` None: killed at the deadline."""

    process: int
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float

    def describe(self) -> str:
        return (f"process {self.process}: exit {self.returncode} after {self.seconds:.1f} s\n"
                f"--- stdout\n{self.stdout[-2000:]}\n--- stderr\n{self.stderr[-3000:]}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    # One CPU device per process: the host-device flag of other tests is not inherited.
    flags = env.get("XLA_FLAGS", "").split()
    env["XLA_FLAGS"] = " ".join(f for f in flags if "host_platform_device_count" not in f)
    for name in ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID"):
        env.pop(name, None)
    env.update(extra or {})
    return env


def launch(argv: Callable[[int, str], Sequence[str]], n: int = 2, *, timeout: float = 120,
           env: dict[str, str] | None = None, cwd: Path | None = None) -> list[Finished]:
    """Start ``argv(i, "127.0.0.1:PORT")`` for i in 0..n-1 at once; wait for all (killing what
    is left at ``timeout`` seconds); one :class:`Finished` per process, in order."""
    coordinator = f"127.0.0.1:{free_port()}"
    start = time.monotonic()
    procs = [subprocess.Popen(list(argv(i, coordinator)), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_env(env), cwd=cwd)
             for i in range(n)]
    done: list[Finished] = []
    for i, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=max(1.0, timeout - (time.monotonic() - start)))
            code = p.returncode
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, err = p.communicate()
            code = None
        done.append(Finished(i, code, out, err, time.monotonic() - start))
    return done


def _worker_module():
    spec = importlib.util.spec_from_file_location("multiprocess_worker", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def worker(task: str, out: Path) -> Callable[[int, str], list[str]]:
    """The argv of :data:`WORKER` running ``task`` into ``out`` as process i of a run."""
    return lambda i, coord: [sys.executable, str(WORKER), task, str(out), coord, str(i)]


def cli(*args: str) -> Callable[[int, str], list[str]]:
    """The argv of ``platinum-jax --coordinator ... --num-processes 2 --process-id i ARGS``."""
    return lambda i, coord: [sys.executable, "-m", "platinum_jax.cli", "--coordinator", coord,
                             "--num-processes", "2", "--process-id", str(i), *args]


def all_ok(runs: list[Finished]) -> None:
    bad = [r for r in runs if r.returncode != 0]
    assert not bad, "\n".join(r.describe() for r in runs)


@pytest.fixture(scope="session")
def launcher():
    """``(launch, worker, cli, all_ok)``: the launcher above and its helpers."""
    return launch, worker, cli, all_ok


def test_library_paths_across_two_processes_equal_one(launcher, tmp_path):
    from platinum_jax.inference import bootstrap_replicates, fit_map, simulate
    from platinum_jax.models import TwoPL

    launch, worker, _, all_ok = launcher
    runs = launch(worker("library", tmp_path), timeout=240)
    all_ok(runs)
    # The one-process answers, computed here.
    table, _ = simulate(TwoPL(), 41, 9, seed=4, density=0.8)
    first = fit_map(TwoPL(), table, solver="first_order", max_steps=40, gtol=0.0, ftol=0.0)
    reps = bootstrap_replicates(first, 6, seed=3, chunk=2, block=2)
    boot = np.concatenate([np.asarray(t).reshape(6, -1) for t in reps.theta], axis=1)
    robustness = _worker_module().robustness()
    for p in (0, 1):
        got = np.load(tmp_path / f"library-{p}.npz")
        assert int(got["first_order_devices"]) == 2  # the rows split over both processes
        np.testing.assert_allclose(got["first_order_ability"],
                                   first.subjects["ability"].to_numpy(), atol=1e-10)
        # replicates 0-1 and 4-5 refitted on process 0, 2-3 on process 1, gathered in order.
        # A refit on the other process runs that process's compiled program, whose sums may
        # be taken in another order: on some CPUs that moves an entry by up to 1e-7 (a
        # replicate out of order would be off by the replicates' spread, over 1e-3)
        np.testing.assert_allclose(got["bootstrap_theta"], boot, rtol=0, atol=1e-6)
        assert np.ptp(got["bootstrap_theta"], axis=0).max() > 1e-3  # replicates differ
        for name, value in robustness.items():  # refits split over the processes
            np.testing.assert_allclose(got[name], value, atol=1e-8, err_msg=name)
        rule = json.loads((tmp_path / f"library-{p}.json").read_text())["store_on_process_1"]
        assert "process(es) [1]" in rule and "store=None" in rule


def _guide_sweep_args() -> list[str]:
    """The command of the cluster guide's "Trying it on one machine" for process 0, from
    ``sweep`` to before ``--out``: the test runs what the guide tells users to run."""
    guide = Path(__file__).parents[2] / "docs" / "guide" / "cluster.md"
    section = guide.read_text().split("## Trying it on one machine", 1)[1]
    line = next(ln for ln in section.splitlines() if "--process-id 0 sweep" in ln)
    words = shlex.split(line.rstrip(" &"))
    assert words[:6] == ["platinum-jax", "--coordinator", "127.0.0.1:7777", "--num-processes",
                         "2", "--process-id"], line
    cut = words.index("--out")
    assert words[cut + 1:] == ["two"], line
    return words[7:cut]


def test_cli_sweep_joins_writes_once_and_resumes(launcher, tmp_path):
    launch, _, cli, all_ok = launcher
    from platinum_jax.datasets import demo_world
    from platinum_jax.sweeps import CostScale, RiskAversion, Welfare, sweep

    out = tmp_path / "sweep"
    args = (*_guide_sweep_args(), "--out", str(out))
    runs = launch(cli(*args), timeout=180)
    all_ok(runs)
    assert "process 0 of 2, 1 of 2 devices here" in runs[0].stderr
    assert "process 1 of 2" in runs[1].stderr
    assert f"wrote {out / 'sweep.nc'}" in runs[0].stdout
    assert "wrote" not in runs[1].stdout and "points in" not in runs[1].stdout
    assert sorted(p.name for p in out.iterdir()) == [
        ".platinum-jax-manifest.json", ".platinum-jax.lock", "chunks", "summary.json",
        "sweep.nc"]
    assert not list(tmp_path.glob(".sweep.*"))  # no staging left by either process
    ref = sweep(demo_world(seed=0).primitives,
                [RiskAversion(np.geomspace(0.1, 10, 12)), CostScale(np.linspace(0.5, 4, 10))],
                [Welfare()], method="general")
    with xr.open_dataset(out / "sweep.nc") as ds:
        # the general path's points split over both processes' devices
        assert ds.attrs["path"] == "general" and ds.attrs["n_devices"] == 2
        np.testing.assert_allclose(ds["welfare"].values, ref["welfare"].values, atol=1e-12)

    # Resumed: process 0's store says all three chunks are done, and both processes agree.
    runs = launch(cli(*args, "--resume"), timeout=180)
    all_ok(runs)
    assert "0 chunk(s) computed, 3 reused" in runs[0].stdout
    with xr.open_dataset(out / "sweep.nc") as ds:
        np.testing.assert_allclose(ds["welfare"].values, ref["welfare"].values, atol=1e-12)

    # Claimed results without --resume or --overwrite: process 0 refuses, both stop.
    runs = launch(cli(*args), timeout=120)
    assert [r.returncode for r in runs] == [2, 2], "\n".join(r.describe() for r in runs)
    assert "already holds" in runs[0].stderr
    assert "process 0 stopped" in runs[1].stderr and "already holds" in runs[1].stderr


def test_a_dead_process_stops_the_others(launcher, tmp_path):
    launch, worker, _, _ = launcher
    runs = launch(worker("die", tmp_path), timeout=90)
    assert runs[1].returncode == 3
    assert runs[0].returncode not in (0, None), runs[0].describe()
    assert "the second exchange returned" not in runs[0].stdout
    assert runs[0].seconds < 60


def test_cli_refuses_half_a_coordinate(tmp_path):
    from platinum_jax.cli import main

    code = main(["--num-processes", "2", "sweep", "--r", "1:2:2", "--out", str(tmp_path / "o")])
    assert code == 2
    assert not (tmp_path / "o").exists()


def test_cli_streamed_fit_across_two_processes_equals_one(launcher, tmp_path):
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from platinum_jax.inference import fit_streamed_2pl

    launch, _, cli, all_ok = launcher
    rng = np.random.default_rng(3)
    n_s, n_i = 240, 12
    theta, b = rng.normal(size=n_s), rng.normal(size=n_i)
    s, i = (g.ravel() for g in np.meshgrid(np.arange(n_s), np.arange(n_i), indexing="ij"))
    y = (rng.random(s.size) < 1 / (1 + np.exp(-(theta[s] - b[i])))).astype(np.int8)
    data = tmp_path / "r.parquet"
    pq.write_table(pa.table({"subject": [f"m{k}" for k in s], "item": [f"q{k:02d}" for k in i],
                             "response": y}), data)
    out = tmp_path / "irt"
    runs = launch(cli("fit", str(data), "--model", "2pl", "--method", "marginal", "--stream",
                      "--out", str(out)), timeout=180)
    all_ok(runs)
    assert "wrote" in runs[0].stdout and "wrote" not in runs[1].stdout
    fit = json.loads((out / "fit.json").read_text())
    assert fit["diagnostics"]["devices"] == 2  # the blocks of subjects split over both
    one = fit_streamed_2pl(data)
    items = pd.read_csv(out / "items.csv", index_col="item")
    np.testing.assert_allclose(items.to_numpy(), one.items.to_numpy(), atol=1e-10)
