"""Make (once) the side environment that holds Every Eval Ever's own validator.

The validator (``every-eval-ever`` 0.3.0 on the package index) needs Python >= 3.12; this
project runs on 3.11 as well. The script finds an interpreter of 3.12 or later (``$EEE_PYTHON``,
then ``python3.13`` / ``python3.12`` on PATH, then pyenv's versions), makes ``.venv-eee`` with
it and installs the validator there. It prints the path of the ``every_eval_ever`` program,
or exits 3 with the reason when no such interpreter exists (the tests then skip, saying so).

    python3 scripts/eee_validator.py          # or: make eee-validator
    .venv-eee/bin/every_eval_ever validate 'eee_out/data/*/*/*/*.json*'
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

VERSION = "0.3.0"
ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv-eee"
STAMP = VENV / f".installed-every-eval-ever-{VERSION}"
NO_PYTHON = 3


def _version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    major, minor = out.stdout.split()
    return int(major), int(minor)


def candidates() -> list[str]:
    """Interpreters to try, in order."""
    found = [os.environ["EEE_PYTHON"]] if os.environ.get("EEE_PYTHON") else []
    found += [p for name in ("python3.13", "python3.12") if (p := shutil.which(name))]
    root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    found += sorted(glob.glob(f"{root}/versions/3.1[2-9]*/bin/python3"), reverse=True)
    return list(dict.fromkeys(found))


def find_python() -> str | None:
    """The first interpreter of Python 3.12 or later, or None."""
    for python in candidates():
        v = _version(python)
        if v is not None and v >= (3, 12):
            return python
    return None


def validator() -> Path:
    """The validator program, installed first if needed."""
    program = VENV / "bin" / "every_eval_ever"
    if STAMP.exists() and program.exists():
        return program
    python = find_python()
    if python is None:
        raise LookupError("no Python 3.12 or later found (tried $EEE_PYTHON, python3.13, "
                          "python3.12 and pyenv's versions); Every Eval Ever's validator "
                          "needs one. Install one (e.g. `pyenv install 3.12`) or set EEE_PYTHON")
    if VENV.exists():
        shutil.rmtree(VENV)
    subprocess.run([python, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    f"every-eval-ever=={VERSION}"], check=True)
    STAMP.touch()
    return program


def schema_dir() -> Path:
    """The folder of the release's JSON Schema files (``eval.schema.json``,
    ``instance_level_eval.schema.json``): from the side environment when it exists, else from
    the release's wheel, downloaded once by this interpreter's pip into ``.cache/``."""
    found = sorted(VENV.glob("lib/python3.*/site-packages/every_eval_ever/schemas"))
    if STAMP.exists() and found:
        return found[-1]
    target = ROOT / ".cache" / f"every-eval-ever-{VERSION}-schemas"
    if (target / "eval.schema.json").exists():
        return target
    import tempfile
    import zipfile

    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary=:all:", "--python-version", "3.12", "--dest", tmp,
                        f"every-eval-ever=={VERSION}"], check=True)
        (wheel,) = Path(tmp).glob("every_eval_ever-*.whl")
        staged = Path(tmp) / "schemas"
        staged.mkdir()
        with zipfile.ZipFile(wheel) as z:
            for name in ("eval.schema.json", "instance_level_eval.schema.json"):
                (staged / name).write_bytes(z.read(f"every_eval_ever/schemas/{name}"))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staged), target)
    return target


def main() -> int:
    try:
        print(validator())
    except LookupError as exc:
        print(exc, file=sys.stderr)
        return NO_PYTHON
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
