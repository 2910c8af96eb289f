"""Pages generated at build time (run by the mkdocs-gen-files plugin).

* ``reference/``: one API page per public module of ``platinum_jax``, found by walking the
  package, so a new sub-package appears in the reference without touching the docs config.
  Modules whose name (or a parent's) starts with ``_`` are private and left out; their public
  names are documented where the package re-exports them.
* ``tutorials/``: the executed notebooks of ``notebooks/``, copied in unchanged and rendered by
  mkdocs-jupyter without running them.
"""

from __future__ import annotations

from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "platinum_jax"

nav = mkdocs_gen_files.Nav()
for path in sorted(PACKAGE.rglob("*.py")):
    parts = path.relative_to(ROOT).with_suffix("").parts
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    if any(p.startswith("_") for p in parts):
        continue
    ident = ".".join(parts)
    # A package gets its folder's index page, so its sub-modules nest under it in the menu.
    doc_path = Path(*parts[1:], "index.md") if is_package else Path(*parts[1:]).with_suffix(".md")
    nav[parts[1:] or ("platinum_jax",)] = doc_path.as_posix()
    with mkdocs_gen_files.open(Path("reference", doc_path), "w") as fh:
        fh.write(f"::: {ident}\n")
    mkdocs_gen_files.set_edit_path(Path("reference", doc_path), path.relative_to(ROOT))

with mkdocs_gen_files.open("reference/SUMMARY.md", "w") as fh:
    fh.writelines(nav.build_literate_nav())

for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
    with mkdocs_gen_files.open(Path("tutorials", nb.name), "wb") as fh:
        fh.write(nb.read_bytes())
