"""Float64 is switched on in one place: the library never forces it on import; the command line
and the benchmarks turn it on through :func:`platinum_jax.enable_float64`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import platinum_jax

ROOT = Path(platinum_jax.__file__).resolve().parent
RAW = re.compile(r"^\s*jax\.config\.update\(\s*['\"]jax_enable_x64['\"]", re.M)
# Every command switches it on through platinum_jax.enable_float64(); none is pending.
PENDING: set[str] = set()


def test_importing_the_library_leaves_jax_in_float32():
    code = ("import jax\nimport platinum_jax, platinum_jax.models, platinum_jax.inference, "
            "platinum_jax.design, platinum_jax.efficient, platinum_jax.analysis\n"
            "print(jax.config.jax_enable_x64, platinum_jax.enable_float64.__module__)\n"
            "platinum_jax.enable_float64()\nimport jax.numpy as jnp\n"
            "print(jnp.zeros(1).dtype)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "platinum_jax._runtime", "float64"]


def test_only_the_helper_sets_the_flag():
    places = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
                    if RAW.search(p.read_text()))
    assert set(places) - PENDING == {"_runtime.py"}, places
    benchmarks = ROOT.parent / "benchmarks"
    if benchmarks.is_dir():  # a source checkout
        raw = [p.name for p in benchmarks.glob("*.py") if RAW.search(p.read_text())]
        assert not raw, f"benchmarks setting jax_enable_x64 themselves: {raw}"
