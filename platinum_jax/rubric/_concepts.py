"""Concept sets: the welfare-relevant concepts J = {1, ..., J} the rubric scores.

A concept is a name and a short definition (Haupt et al., section 4).  The default set is the nine
OECD AI capability indicators; curators load their own from YAML, JSON or CSV.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pandas as pd
import yaml

from platinum_jax._names import unknown_name_message

__all__ = ["Concept", "ConceptSet", "load_concepts", "BUILTIN_CONCEPT_SETS"]

# Built-in sets shipped as package data, by the short name the CLI accepts.
BUILTIN_CONCEPT_SETS = {"oecd": "oecd.yaml"}


@dataclass(frozen=True)
class Concept:
    """One capability concept: a unique ``name`` and a non-empty ``definition``."""

    name: str
    definition: str


@dataclass(frozen=True)
class ConceptSet:
    """An ordered, immutable set of concepts with unique names.

    The order fixes the column order j = 1..J of every rubric table built from it.
    """

    concepts: tuple[Concept, ...]
    source: str = "user"

    def __post_init__(self) -> None:
        _validate_records(
            [{"name": c.name, "definition": c.definition} for c in self.concepts], self.source
        )

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.concepts)

    def __len__(self) -> int:
        return len(self.concepts)

    def __iter__(self) -> Iterator[Concept]:
        return iter(self.concepts)

    def __getitem__(self, name: str) -> Concept:
        for c in self.concepts:
            if c.name == name:
                return c
        raise KeyError(unknown_name_message("concept", name, self.names))

    def subset(self, names: Sequence[str]) -> ConceptSet:
        """The concepts named in ``names`` (in that order); unknown names raise ``KeyError``."""
        return ConceptSet(tuple(self[n] for n in names), source=self.source)

    def to_frame(self) -> pd.DataFrame:
        """A DataFrame indexed by concept name with a ``definition`` column."""
        return pd.DataFrame(
            {"definition": [c.definition for c in self.concepts]},
            index=pd.Index(self.names, name="concept"),
        )


def _validate_records(records: list[dict], source: str) -> None:
    if not records:
        raise ValueError(f"concept set {source}: it is empty; give at least one concept")
    seen: dict[str, int] = {}
    for k, rec in enumerate(records, start=1):
        where = f"concept set {source}, entry {k}"
        if not isinstance(rec, dict):
            raise ValueError(f"{where}: expected a mapping with 'name' and 'definition', got {rec!r}")
        missing = [f for f in ("name", "definition") if f not in rec]
        if missing:
            raise ValueError(f"{where}: missing field(s) {missing}; each concept needs a name and a definition")
        name, definition = rec["name"], rec["definition"]
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{where}: the name is empty or not text ({name!r})")
        if name != name.strip():
            raise ValueError(f"{where}: the name {name!r} has leading/trailing spaces; remove them")
        if not isinstance(definition, str) or not definition.strip():
            raise ValueError(
                f"{where}: concept {name!r} has an empty definition; the judge needs a short "
                "definition to score it"
            )
        if name in seen:
            raise ValueError(
                f"{where}: duplicate concept name {name!r} (first at entry {seen[name]}); "
                "names must be unique"
            )
        seen[name] = k


def _read_records(path: Path) -> list[dict]:
    suffix = path.suffix.lower()
    text = path.read_text(encoding="utf-8")
    if suffix in (".yaml", ".yml"):
        data = yaml.safe_load(text)
    elif suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"concept file {path}: invalid JSON ({exc})") from None
    elif suffix == ".csv":
        rows = list(csv.DictReader(text.splitlines()))
        if rows and not {"name", "definition"} <= set(rows[0]):
            raise ValueError(
                f"concept file {path}: the CSV needs a header with columns 'name' and "
                f"'definition', got {list(rows[0])}"
            )
        data = rows
    else:
        raise ValueError(
            f"concept file {path}: unsupported extension {suffix!r}; use .yaml, .yml, .json or .csv"
        )
    # Accept either a bare list or {"concepts": [...]}, the two natural layouts.
    if isinstance(data, dict) and "concepts" in data:
        data = data["concepts"]
    if not isinstance(data, list):
        raise ValueError(
            f"concept file {path}: expected a list of {{name, definition}} entries, got "
            f"{type(data).__name__}"
        )
    return data


def load_concepts(source: str | Path = "oecd") -> ConceptSet:
    """Load a concept set: a built-in name (``"oecd"``) or a YAML/JSON/CSV file path.

    Files hold a list of entries with ``name`` and ``definition`` (CSV: those two columns).
    Duplicate names, empty names or definitions and missing fields raise ``ValueError``.
    """
    key = str(source)
    if key in BUILTIN_CONCEPT_SETS:
        ref = resources.files("platinum_jax.rubric") / "data" / BUILTIN_CONCEPT_SETS[key]
        records = yaml.safe_load(ref.read_text(encoding="utf-8"))
        origin = key
    else:
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(
                f"concept set {key!r} is neither a built-in set ({', '.join(BUILTIN_CONCEPT_SETS)}) "
                "nor an existing file"
            )
        records = _read_records(path)
        origin = str(path)
    _validate_records(records, origin)
    concepts = tuple(
        Concept(name=r["name"], definition=" ".join(r["definition"].split())) for r in records
    )
    return ConceptSet(concepts, source=origin)
