"""Every module, package or name the docs and docstrings cite exists.

The README, ``docs/``, the examples and the package's own docstrings and
comments name code as paths (``axisflow/scheduling/walker.py``,
``axisflow/shapes/scheme/``) or dotted names (``axisflow.order.extents``,
``axisflow.forest.frames.expand_modes``). When code moves, such a statement
goes stale without failing anything else; this test makes it fail. A dotted
name resolves to its longest prefix that is a module; what follows must be
an attribute of it, and the first part of that must be *defined* in the
module, not merely imported into it (a package's ``__init__`` may re-export),
so that a reference to a function that moved elsewhere is caught.
"""

from __future__ import annotations

import ast
import importlib
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(
    [
        ROOT / "README.md",
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "examples").rglob("*.md"),
        *(ROOT / "examples").rglob("*.py"),
        *(ROOT / "benchmarks").glob("*.py"),
        *(ROOT / "axisflow").rglob("*.py"),
    ]
)
DOTTED = re.compile(r"(?<![\w./-])axisflow(?:\.[A-Za-z_]\w*)+")
PATH = re.compile(r"(?<![\w./-])axisflow/[\w./-]*")


def module_path(parts: list[str]) -> Path | None:
    """The source file of module ``parts`` (a package's ``__init__.py``)."""
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def defined_names(path: Path) -> frozenset[str]:
    """Names a module binds at top level by a def, class or assignment."""
    names: set[str] = set()
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return frozenset(names)


def problem(reference: str) -> str | None:
    """Why ``reference`` (a path or a dotted name) names nothing, or None."""
    if "/" in reference:
        path = ROOT / reference.rstrip(".")
        return None if path.exists() else "no such file or directory"
    parts = reference.split(".")
    for split in range(len(parts), 0, -1):
        path = module_path(parts[:split])
        if path is not None:
            break
    else:
        return "no such module"
    rest = parts[split:]
    if not rest:
        return None
    if path.name != "__init__.py" and rest[0] not in defined_names(path):
        return f"{'.'.join(parts[:split])} does not define {rest[0]}"
    target: object = importlib.import_module(".".join(parts[:split]))
    for name in rest:
        if not hasattr(target, name):
            return f"no attribute {name}"
        target = getattr(target, name)
    return None


FILE_NAMES = (".md", ".svg", ".txt", ".mlir")
"""Endings of a file name, not a dotted name (``docs/api/axisflow.md``)."""


def references(source: Path) -> list[str]:
    text = source.read_text("utf-8")
    found = {m.group(0) for m in (*DOTTED.finditer(text), *PATH.finditer(text))}
    return sorted(r for r in found if "/" in r or not r.endswith(FILE_NAMES))


def test_problem_catches_each_kind_of_stale_reference() -> None:
    assert problem("axisflow/scheduling/walker.py") is None
    assert problem("axisflow/shapes/scheme/") is None
    assert problem("axisflow/pipeline/model.py") == "no such file or directory"
    assert problem("axisflow.pipeline.model") == "no attribute model"
    assert problem("axisflow.pipeline.api.schedule_module") is None
    assert problem("axisflow.nowhere") == "no attribute nowhere"
    assert problem("axisflow.forest.frames.expand_modes") is None
    assert problem("axisflow.order.search.expand_modes") == (
        "axisflow.order.search does not define expand_modes"
    )
    assert problem("axisflow.order.expand_modes") is None  # re-exported
    assert problem("axisflow.shapes.session.Session.log") is None
    assert problem("axisflow.shapes.session.Session.nothing") == "no attribute nothing"


def test_references_are_found() -> None:
    found = references(ROOT / "docs" / "index.md")
    assert "axisflow/roles/index.py" in found
    api = references(ROOT / "docs" / "api" / "index.md")
    assert "axisflow.md" not in api  # a page of the site, not a module
    assert len(SOURCES) > 100


@pytest.mark.parametrize(
    "source", SOURCES, ids=lambda p: p.relative_to(ROOT).as_posix()
)
def test_cited_modules_and_names_exist(source: Path) -> None:
    stale = {r: why for r in references(source) if (why := problem(r)) is not None}
    assert stale == {}
