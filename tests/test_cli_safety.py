"""The commands lose nothing and say no wrong thing: Ctrl-C, overwrite, bad responses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from platinum_jax._outputs import LOCK, output_directory
from platinum_jax.cli import main


def _responses(path: Path, n_subjects=12, n_items=6, seed=0) -> Path:
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=n_subjects), np.linspace(-1, 1, n_items)
    p = 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))
    y = (rng.random(p.shape) < p).astype(float)
    pd.DataFrame([(f"m{s}", f"q{i}", y[s, i]) for s in range(n_subjects) for i in range(n_items)],
                 columns=["subject", "item", "response"]).to_csv(path, index=False)
    return path


def _old_fit(out: Path) -> dict:
    with output_directory(out, "fit") as od:
        od.write_text("subjects.csv", "subject,ability\nold,0.5\n")
        od.write_text("fit.json", '{"method": "laplace"}\n')
        od.write("draws.npz", Path.write_bytes, b"the earlier draws")
    return {p.name: p.read_bytes() for p in out.iterdir() if p.name != LOCK}


def test_ctrl_c_during_a_fit_stops_at_once_with_130_and_keeps_the_old_results(tmp_path):
    data, out = _responses(tmp_path / "r.csv"), tmp_path / "fit"
    before = _old_fit(out)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PLATINUM_JAX_CACHE": "off"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "platinum_jax.cli", "fit", str(data), "--method", "nuts",
         "--chains", "1", "--warmup", "200000", "--samples", "200000", "--save-draws",
         "--overwrite", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    line = proc.stdout.readline().decode()  # "read ..." comes just before the fit
    assert line.startswith("read"), (line, proc.stderr.read().decode() if proc.poll() else "")
    time.sleep(1.0)  # compiling or sampling: compiled work in flight either way
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    try:
        rc = proc.wait(timeout=20)
    finally:
        proc.kill()
    elapsed = time.monotonic() - t0
    err = proc.stderr.read().decode()
    assert rc == 130, err
    assert elapsed < 10
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("platinum-jax fit: interrupted")
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != LOCK} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit", "r.csv"]


def test_a_failing_overwrite_of_a_fit_keeps_the_old_fit(tmp_path, capsys):
    """`fit --model mirt --method marginal --overwrite` fails (marginal is for one ability)
    and must leave the earlier fit, draws included."""
    data, out = _responses(tmp_path / "r.csv"), tmp_path / "fit"
    before = _old_fit(out)
    assert main(["fit", str(data), "--model", "mirt", "--method", "marginal", "--overwrite",
                 "--out", str(out)]) == 2
    assert "error" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != LOCK} == before
