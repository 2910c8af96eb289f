"""The README stays a front page: short, and every link it gives leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _nav_pages(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [p for item in node for p in _nav_pages(item)]
    if isinstance(node, dict):
        return [p for value in node.values() for p in _nav_pages(value)]
    return []


def test_readme_fits_on_a_page():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


def test_readme_links_resolve_to_files_in_the_repository():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert local, "the README links into the docs"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, missing


def test_every_docs_page_the_readme_links_is_in_the_site_nav():
    # mkdocs.yml has no custom YAML tags, so a plain safe load reads the nav.
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = set(_nav_pages(config["nav"]))
    linked = {t.removeprefix("docs/") for t in re.findall(r"\]\((docs/[^)#\s]+\.md)", README.read_text(encoding="utf-8"))}
    assert "benchmarks.md" in nav
    assert linked <= nav, sorted(linked - nav)
