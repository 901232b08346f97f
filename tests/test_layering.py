"""One layer per package, checked on every import statement of ``axisflow/``.

Every module of the package belongs to exactly one layer (``LAYERS``, by
package, so a new module of an existing package is covered as it is written
and a new package fails here until it is given a layer). Bottom up:

* ``base``: numbers, notes, the GC pause, report files; they import nothing
  else of axisflow;
* ``pure``: the logic, in plain Python (roles, forest, order, residual,
  scheduling, shapes, the pure SeQuant modules, the lowering plan, the
  executor); no xDSL, no dialect, no pass;
* ``dialect``: the IR definitions and their model converters;
* ``bridge``: the xDSL-facing APIs that are not passes (``pipeline``, the
  SeQuant frontend);
* ``pass``: one module per pass; a pass imports no other pass;
* ``entry``: the command-line programs and the plugin's entry point.

A module imports only its own layer and those below (``pass`` modules not
even their own), and the imports of the whole package form no cycle. Every
import statement counts, also those inside functions or under
``TYPE_CHECKING``; the one deferred upward import is listed in
``DEFERRED`` with its reason, and importing any pure module is checked not
to load xDSL.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "axisflow"

ORDER = ("base", "pure", "dialect", "bridge", "pass", "entry")
"""The layers, bottom up."""

# A name ending in ".*" is the package and every module under it; any other
# name is that one module.
LAYERS: dict[str, tuple[str, ...]] = {
    "base": (
        "axisflow.numerals",
        "axisflow.notes",
        "axisflow.gc_pause",
        "axisflow.report_file",
    ),
    "pure": (
        "axisflow",
        "axisflow.roles.*",
        "axisflow.forest.*",
        "axisflow.order.*",
        "axisflow.residual.*",
        "axisflow.scheduling.*",
        "axisflow.shapes.*",
        "axisflow.sequant.*",
        "axisflow.lowering.*",
        "axisflow.execution.*",
    ),
    # xdsl_compat: every private xDSL member axisflow uses, for the dialects
    # and above.
    "dialect": ("axisflow.dialects.*", "axisflow.xdsl_compat"),
    "bridge": ("axisflow.pipeline.*", "axisflow.sequant.frontend"),
    "pass": ("axisflow.passes.*",),
    "entry": (
        "axisflow.cli",
        "axisflow.interpret",
        "axisflow.planning",
        "axisflow.running",
        "axisflow.universe",
    ),
}

DEFERRED: dict[tuple[str, str], str] = {
    ("axisflow.sequant", "axisflow.dialects.batch_model"): (
        "to_module emits the IR on request; importing the package does not"
    ),
    ("axisflow.sequant", "xdsl.dialects.builtin"): "to_module's return type",
}
"""Upward imports allowed inside a function or under ``TYPE_CHECKING`` only:
(importer, imported) -> why."""


PURE_ORDER = (
    (
        "axisflow.roles",
        "axisflow.forest",
        "axisflow.order",
        "axisflow.residual",
        "axisflow.scheduling",
        "axisflow.sequant",
        "axisflow.lowering",
        "axisflow.execution",
        "axisflow",
    ),
    ("axisflow.shapes",),
)
"""The packages of the pure layer, bottom up, one chain per half: a package
imports only itself and those before it in its own chain (the executor sits
on top of everything it runs; the shape half and the roles half share
nothing but the base layer)."""


@dataclass(frozen=True)
class Import:
    """One imported module of one import statement."""

    target: str
    line: int
    deferred: bool
    """Inside a function or under ``if TYPE_CHECKING:``: not run on import."""


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {
    module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))
}


def resolve(module: str, name: str) -> str:
    """``from module import name``: the submodule ``module.name`` if there is
    one (importing it is what the statement does), else ``module``."""
    return f"{module}.{name}" if f"{module}.{name}" in MODULES else module


class _Imports(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[Import] = []
        self.depth = 0  # functions and TYPE_CHECKING blocks entered

    def _deferred_body(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _deferred_body

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        type_checking = (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        )
        if not type_checking:
            self.generic_visit(node)
            return
        self.visit(test)
        self.depth += 1
        for statement in node.body:
            self.visit(statement)
        self.depth -= 1
        for statement in node.orelse:
            self.visit(statement)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append(Import(alias.name, node.lineno, self.depth > 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        assert node.level == 0 and node.module, "relative imports are not used"
        for alias in node.names:
            target = resolve(node.module, alias.name)
            self.found.append(Import(target, node.lineno, self.depth > 0))


@cache
def imports(module: str) -> tuple[Import, ...]:
    """Every module ``module`` imports (axisflow's, xDSL's and others)."""
    visitor = _Imports()
    visitor.visit(ast.parse(MODULES[module].read_text("utf-8")))
    return tuple(visitor.found)


def matches(module: str, pattern: str) -> bool:
    if pattern.endswith(".*"):
        package = pattern[:-2]
        return module == package or module.startswith(package + ".")
    return module == pattern


def layers_of(module: str) -> list[str]:
    """The layers whose patterns name ``module``; the most specific pattern
    wins (``axisflow.sequant.frontend`` over ``axisflow.sequant.*``)."""
    best: dict[str, int] = {}
    for layer, patterns in LAYERS.items():
        for pattern in patterns:
            if matches(module, pattern):
                exact = 0 if pattern.endswith(".*") else 1
                score = pattern.count(".") * 2 + exact
                best[layer] = max(best.get(layer, -1), score)
    if not best:
        return []
    top = max(best.values())
    return [layer for layer, score in best.items() if score == top]


def layer(module: str) -> str:
    (found,) = layers_of(module)
    return found


def layer_of_target(target: str) -> str | None:
    """The layer of an imported module: axisflow's by ``LAYERS``, xDSL's is
    counted with the dialects (the lowest layer allowed to use it); other
    libraries have none."""
    if target == "xdsl" or target.startswith("xdsl."):
        return "dialect"
    if target in MODULES:
        return layer(target)
    return None


def pure_package(module: str) -> str:
    """``axisflow.scheduling.walker`` -> ``axisflow.scheduling``."""
    return ".".join(module.split(".")[:2])


def pure_rank(module: str) -> tuple[int, int]:
    """(chain, position in it) of the pure package of ``module``."""
    package = pure_package(module)
    for chain, packages in enumerate(PURE_ORDER):
        if package in packages:
            return chain, packages.index(package)
    raise LookupError(f"{package} is in no chain of PURE_ORDER")


def violations(module: str, own: str, found: Iterable[Import]) -> Iterator[str]:
    """The imports ``found`` of ``module`` (of layer ``own``) that break a
    layering rule, as ``module:line imports target (rule)``."""
    for one in found:
        target_layer = layer_of_target(one.target)
        if target_layer is None:
            continue
        where = f"{module}:{one.line} imports {one.target}"
        if ORDER.index(target_layer) > ORDER.index(own):
            reason = DEFERRED.get((module, one.target))
            if reason is None or not one.deferred:
                yield f"{where} ({target_layer} above {own})"
        elif own == "pure" and target_layer == "pure":
            (chain, rank), (own_chain, own_rank) = (
                pure_rank(one.target),
                pure_rank(module),
            )
            if chain != own_chain:
                yield f"{where} (the other half)"
            elif rank > own_rank:
                yield f"{where} (pure package above {pure_package(module)})"
        elif own == "pass" and target_layer == "pass":
            yield f"{where} (a pass imports another pass)"
        elif own == "base" and target_layer != "base":
            yield f"{where} (base imports only base)"


def test_violations_name_each_broken_rule() -> None:
    def check(module: str, own: str, target: str, deferred: bool = False) -> list[str]:
        return list(violations(module, own, [Import(target, 7, deferred)]))

    assert check("axisflow.roles.x", "pure", "xdsl.ir") == [
        "axisflow.roles.x:7 imports xdsl.ir (dialect above pure)"
    ]
    assert check("axisflow.roles.x", "pure", "axisflow.dialects.batch", True) == [
        "axisflow.roles.x:7 imports axisflow.dialects.batch (dialect above pure)"
    ]
    assert check("axisflow.dialects.x", "dialect", "axisflow.passes.close_shapes")
    assert check("axisflow.dialects.x", "dialect", "axisflow.pipeline.api")
    assert check("axisflow.passes.x", "pass", "axisflow.passes.close_shapes") == [
        "axisflow.passes.x:7 imports axisflow.passes.close_shapes"
        " (a pass imports another pass)"
    ]
    assert check("axisflow.numerals", "base", "axisflow.roles.index")
    assert check("axisflow.scheduling.x", "pure", "axisflow.execution.inputs") == [
        "axisflow.scheduling.x:7 imports axisflow.execution.inputs"
        " (pure package above axisflow.scheduling)"
    ]
    assert check("axisflow.roles.x", "pure", "axisflow.shapes.terms") == [
        "axisflow.roles.x:7 imports axisflow.shapes.terms (the other half)"
    ]
    # The listed deferred import passes only where it is deferred.
    assert check("axisflow.sequant", "pure", "axisflow.dialects.batch_model")
    assert not check("axisflow.sequant", "pure", "axisflow.dialects.batch_model", True)
    # Downward, sideways and third-party imports are fine.
    assert not check("axisflow.passes.x", "pass", "axisflow.dialects.batch")
    assert not check("axisflow.forest.x", "pure", "axisflow.roles.index")
    assert not check("axisflow.shapes.x", "pure", "numpy")


def test_every_module_has_exactly_one_layer() -> None:
    ambiguous = {m: layers_of(m) for m in MODULES if len(layers_of(m)) != 1}
    assert ambiguous == {}


def test_every_pattern_names_modules_that_exist() -> None:
    unused = [
        pattern
        for patterns in LAYERS.values()
        for pattern in patterns
        if not any(matches(m, pattern) for m in MODULES)
    ]
    assert unused == []


def test_every_pure_package_has_a_rank() -> None:
    unranked = {
        pure_package(m)
        for m in MODULES
        if layer(m) == "pure" and not any(pure_package(m) in c for c in PURE_ORDER)
    }
    assert unranked == set()


def test_the_modules_found_include_every_package() -> None:
    packages = {module_name(p.parent / "__init__.py") for p in PACKAGE.rglob("*.py")}
    assert {"axisflow.shapes.scheme", "axisflow.scheduling", "axisflow.execution"} <= (
        packages
    )
    assert packages <= set(MODULES)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_keep_to_the_layers(module: str) -> None:
    assert list(violations(module, layer(module), imports(module))) == []


def test_deferred_exceptions_are_still_needed_and_deferred() -> None:
    for (importer, target), _reason in DEFERRED.items():
        found = [i for i in imports(importer) if i.target == target]
        assert found, f"{importer} no longer imports {target}: drop the exception"
        assert all(i.deferred for i in found), (importer, target)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, or of one
    that imports itself (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(edges[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    found.append(sorted(component))
    return found


def test_cycles_finds_a_cycle_and_only_cycles() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert sorted(cycles(edges)) == [["a", "b", "c"], ["e"]]


def test_no_import_cycles() -> None:
    # A package's own __init__ importing its submodules is the one loop
    # Python resolves by design (a submodule's import runs the package's
    # __init__ first), so edges count only what a statement names.
    edges = {
        module: {i.target for i in imports(module) if i.target in MODULES}
        for module in MODULES
    }
    assert cycles(edges) == []


def test_pure_modules_do_not_load_xdsl() -> None:
    pure = sorted(m for m in MODULES if layer(m) == "pure")
    code = "\n".join(
        [
            "import sys",
            *(f"import {m}" for m in pure),
            "print('\\n'.join(m for m in sys.modules if m.split('.')[0] == 'xdsl'))",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    )
    assert len(pure) > 50
    assert result.stdout.split() == []
