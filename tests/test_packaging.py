"""The package as users install it: optional extras, one version, and a wheel that works alone.

The wheel test builds the wheel from a copy of the sources, installs it with ``--no-deps`` into a
new virtual environment outside the repository (the test environment's packages supply the
dependencies), and runs ``platinum-jax demo`` and one stitching fit from that install.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from email.parser import Parser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from packaging.requirements import Requirement

import platinum_jax
from platinum_jax._extras import MissingExtraError, require

ROOT = Path(__file__).resolve().parents[1]
LLM_CLIENTS = {"openai", "anthropic"}


# --- optional extras -----------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_judge_provider_without_its_client_names_the_extra(provider, monkeypatch):
    from platinum_jax.judge import JudgeConfig, make_provider

    monkeypatch.setitem(sys.modules, provider, None)  # import now fails as if not installed
    monkeypatch.setenv("PJ_TEST_KEY", "unused")
    with pytest.raises(MissingExtraError) as info:
        make_provider(JudgeConfig(provider, "some-model", api_key_env="PJ_TEST_KEY"))
    msg = str(info.value)
    assert "\n" not in msg
    assert f"the {provider} judge provider" in msg and 'pip install "platinum-jax[judge]"' in msg
    assert isinstance(info.value, ImportError)  # code that catches ImportError still works


def test_certify_without_the_judge_extra_prints_one_line(tmp_path, monkeypatch, capsys):
    from platinum_jax.cli import main

    monkeypatch.setitem(sys.modules, "openai", None)
    items = tmp_path / "items.jsonl"
    items.write_text('{"item_id": "q1", "text": "What is 2 + 2?"}\n')
    rc = main(["certify", str(items), "--judge", "openai:m", "--out", str(tmp_path / "cert"),
               "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("platinum-jax certify: error:") and "platinum-jax[judge]" in err


def test_zarr_store_without_zarr_names_the_extra(tmp_path, monkeypatch, capsys):
    from platinum_jax.cli import main
    from platinum_jax.datasets import demo_world
    from platinum_jax.sweeps import RiskAversion, Welfare, sweep

    monkeypatch.setitem(sys.modules, "zarr", None)
    with pytest.raises(MissingExtraError, match=r'platinum-jax\[zarr\]'):
        sweep(demo_world(seed=0).primitives, [RiskAversion([0.5, 1.0])], [Welfare()],
              store=str(tmp_path / "s.zarr"), progress=False)
    rc = main(["sweep", "--r", "0.5,1", "--store-format", "zarr", "--no-plots",
               "--out", str(tmp_path / "cli")])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("platinum-jax sweep: error:")
    assert 'pip install "platinum-jax[zarr]"' in err


def test_require_reports_a_broken_dependency_as_itself(tmp_path, monkeypatch):
    # A package that is installed but fails on one of its own imports is not a missing extra.
    pkg = tmp_path / "pj_broken_dep"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import pj_module_that_does_not_exist\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError) as info:
        require("pj_broken_dep", "judge", "a test")
    assert not isinstance(info.value, MissingExtraError)
    assert info.value.name == "pj_module_that_does_not_exist"
    assert require("json", "none", "a test") is json


def test_every_module_imports_without_llm_clients(tmp_path):
    # A fresh process in which openai/anthropic cannot be imported, as after `pip install .`.
    script = textwrap.dedent(
        """
        import importlib, pkgutil, sys
        for name in ("openai", "anthropic"):
            sys.modules[name] = None
        import platinum_jax
        names = [m.name for m in pkgutil.walk_packages(platinum_jax.__path__, "platinum_jax.")]
        for name in names:
            importlib.import_module(name)
        print(len(names))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) >= 40  # every sub-module, private ones included


# --- the wheel -------------------------------------------------------------------------------


def _requirements(metadata: str) -> tuple[set[str], dict[str, set[str]]]:
    """Core requirement names and, per extra, the names it adds (from a METADATA file)."""
    core: set[str] = set()
    extras: dict[str, set[str]] = {}
    for line in Parser().parsestr(metadata).get_all("Requires-Dist") or []:
        req = Requirement(line)
        if req.marker is None:
            core.add(req.name.lower())
            continue
        for extra in Parser().parsestr(metadata).get_all("Provides-Extra") or []:
            if req.marker.evaluate({"extra": extra}):
                extras.setdefault(extra, set()).add(req.name.lower())
    return core, extras


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """Build the wheel from a copy of the sources, so no build files land in the checkout."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "platinum_jax", src / "platinum_jax",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp / "dist"
    # No build isolation: the test environment already has setuptools and wheel (the [dev] extra).
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "--quiet", "--wheel-dir", str(dist), str(src)],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    (whl,) = dist.glob("platinum_jax-*.whl")
    return whl


def test_wheel_metadata_version_package_data_and_extras(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = zf.read(meta_name).decode()
        entry_points = zf.read(meta_name.replace("METADATA", "entry_points.txt")).decode()
    assert Parser().parsestr(metadata)["Version"] == platinum_jax.__version__
    assert wheel.name.startswith(f"platinum_jax-{platinum_jax.__version__}-")
    # Package data the code reads at run time, and the typing marker.
    for path in ("platinum_jax/py.typed", "platinum_jax/rubric/data/oecd.yaml",
                 "platinum_jax/judge/templates/item_prompt.txt",
                 "platinum_jax/judge/templates/concept_prompt.txt",
                 "platinum_jax/importers/epoch_baselines.csv"):
        assert path in names, path
    assert not any(n.startswith(("tests/", "notebooks/", "benchmarks/")) for n in names)
    assert "platinum-jax = platinum_jax.cli:main" in entry_points

    core, extras = _requirements(metadata)
    assert {"jax", "numpyro", "arviz", "pandas", "xarray"} <= core
    assert not core & LLM_CLIENTS, f"core requirements pull an LLM client: {core & LLM_CLIENTS}"
    assert "optimistix" not in core
    assert LLM_CLIENTS <= extras["judge"]
    assert {"mkdocs", "mkdocstrings"} <= extras["docs"]
    assert {"pymc", "nutpie"} <= extras["bench"]  # the peers of benchmarks/bench_bayes.py
    arviz = next(Requirement(r) for r in Parser().parsestr(metadata).get_all("Requires-Dist")
                 if Requirement(r).name == "arviz")
    assert "0.23" in arviz.specifier and "1.0" not in arviz.specifier  # ArviZ 1.0 breaks the API


@pytest.mark.slow
def test_wheel_runs_outside_the_repository(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # The dependencies come from the test environment's site-packages, added as a plain path: its
    # .pth files (among them the editable install of this checkout) are not processed.
    (site / "zz_test_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index",
         "--disable-pip-version-check", "--quiet", str(wheel)],
        capture_output=True, text=True, timeout=300,
    )
    assert install.returncode == 0, install.stdout + install.stderr

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PLATINUM_JAX_CACHE"] = "off"
    work = tmp_path / "work"
    work.mkdir()

    # The installed copy is the one imported, and it carries its package data: the OECD concept
    # set and the judge's prompt templates.
    probe = subprocess.run(
        [str(py), "-c", "import platinum_jax; from platinum_jax import rubric; "
         "from platinum_jax.judge import render_item_prompt; c = rubric.load_concepts('oecd'); "
         "k = c[c.names[0]]; print(platinum_jax.__file__); "
         "print(len(c), 'Language' in render_item_prompt('2 + 2?', None, k.name, k.definition))"],
        capture_output=True, text=True, cwd=work, env=env, timeout=120)
    assert probe.returncode == 0, probe.stderr
    location, checks = probe.stdout.strip().splitlines()
    assert Path(location).is_relative_to(venv), location  # not the checkout
    assert checks.split() == ["9", "True"]

    cli = venv / "bin" / "platinum-jax"
    demo = subprocess.run([str(cli), "demo", "--out", "demo"], capture_output=True, text=True,
                          cwd=work, env=env, timeout=300)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    items = pd.read_csv(work / "demo" / "items.csv", index_col="item")
    assert json.loads((work / "demo" / "summary.json").read_text())

    from platinum_jax.datasets import demo_world

    p = demo_world(seed=0).primitives  # the demo's defaults: seed 0, r = 1
    M, Sigma, w = (np.asarray(x, dtype=np.float64) for x in (p.M, p.Sigma, p.w))
    v_star = np.linalg.solve(M + 1.0 * Sigma, M @ w)
    np.testing.assert_allclose(items["optimal_weight"].to_numpy(), v_star, rtol=1e-6, atol=1e-9)

    # One fit from the installed wheel: noise-free scores from a known truth, recovered exactly.
    rng = np.random.default_rng(7)
    C = rng.normal(0.0, 1.0, 12)
    D = np.r_[0.0, rng.normal(0.0, 0.8, 3)]  # b0 is the anchor: D = 0, alpha = 1
    alpha = np.r_[1.0, rng.uniform(0.8, 2.0, 3)]
    models = [f"m{i:02d}" for i in range(C.size)]
    rows = [(m, f"b{j}", 1.0 / (1.0 + np.exp(-alpha[j] * (C[i] - D[j]))))
            for i, m in enumerate(models) for j in range(D.size)]
    pd.DataFrame(rows, columns=["model", "benchmark", "score"]).to_csv(work / "scores.csv", index=False)
    fit = subprocess.run([str(cli), "stitch", "scores.csv", "--anchor-benchmark", "b0", "--l2", "0",
                          "--out", "stitch"], capture_output=True, text=True, cwd=work, env=env,
                         timeout=300)
    assert fit.returncode == 0, fit.stdout + fit.stderr
    caps = pd.read_csv(work / "stitch" / "capabilities.csv", index_col="model")
    np.testing.assert_allclose(caps.loc[models, "capability"].to_numpy(), C, atol=1e-5)
    bench = pd.read_csv(work / "stitch" / "benchmarks.csv", index_col="benchmark")
    np.testing.assert_allclose(bench.loc[[f"b{j}" for j in range(D.size)], "difficulty"], D, atol=1e-5)


# --- the papers by name ----------------------------------------------------------------------


def test_user_facing_text_cites_the_papers_by_name(capsys):
    # Internal file numbers ("seed 000", "seed 002") mean nothing to a reader.
    from platinum_jax.cli import main

    pattern = re.compile(r"\bseeds?\s*(?:0\d\d|§)", re.IGNORECASE)
    files = [*ROOT.joinpath("platinum_jax").rglob("*.py"), *ROOT.joinpath("platinum_jax").rglob("*.txt"),
             *ROOT.joinpath("notebooks").glob("*.ipynb"), *ROOT.joinpath("docs").rglob("*.md"),
             ROOT / "README.md"]
    offenders = [f"{p.relative_to(ROOT)}:{i}" for p in files
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if pattern.search(line)]
    assert not offenders, offenders

    with pytest.raises(SystemExit):
        main(["certify", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "Haupt, Reuel, Kochenderfer and Koyejo" in help_text
    assert "Optimal Aggregation Mechanisms for AI Benchmarking and Platinum Benchmarks" in help_text
