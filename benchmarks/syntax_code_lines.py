"""Lines of custom parse/print code per dialect, and which ops use ``assembly_format``.

Counts, per dialect module, the source lines of every function or method that
parses or prints IR text (``parse``, ``print``, ``parse_parameters``, ...,
and module-level helpers named ``_parse*``/``_print*``/``parse_*``/``print_*``),
of every custom assembly-format directive class, and the ``assembly_format``
strings; attribute and type syntax (``parse_parameters``...) counts too.
It reads the working tree and, from git, ``BEFORE`` (the last commit of
``main`` before the ops were declared by ``assembly_format``; another
revision with ``--before REV``), and prints both. Run:
``.venv/bin/python benchmarks/syntax_code_lines.py``; the table in
``docs/ir-syntax.md`` is what it prints.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DIALECTS = "axisflow/dialects"
BEFORE = "1f57095"
DIALECT_MODULES = {
    "batch": ["batch.py", "labels.py"],
    "sched": ["sched.py"],
    "tprog": ["tprog.py"],
    "shared": ["keywords.py", "formats.py"],
}
SYNTAX_NAMES = {
    "parse",
    "print",
    "parse_parameters",
    "print_parameters",
    "parse_parameter",
    "print_parameter",
}


def _is_syntax_function(node: ast.AST) -> bool:
    if not isinstance(node, ast.FunctionDef):
        return False
    name = node.name.lstrip("_")
    return (
        node.name in SYNTAX_NAMES
        or name.startswith("parse")
        or name.startswith("print")
    )


def _is_directive_class(node: ast.AST) -> bool:
    """A custom assembly-format directive (or the base of some)."""
    return isinstance(node, ast.ClassDef) and (
        any(
            isinstance(base, ast.Name) and base.id == "CustomDirective"
            for base in node.bases
        )
        or any(
            isinstance(d, ast.Name) and d.id == "irdl_custom_directive"
            for d in node.decorator_list
        )
    )


def _lines(node: ast.AST) -> int:
    start = min(
        [node.lineno]  # type: ignore[attr-defined]
        + [d.lineno for d in getattr(node, "decorator_list", [])]
    )
    return node.end_lineno - start + 1  # type: ignore[attr-defined]


def _source(name: str, revision: str | None) -> str | None:
    """A dialect module's text in the working tree or at ``revision``."""
    if revision is None:
        path = REPO / DIALECTS / name
        return path.read_text(encoding="utf-8") if path.exists() else None
    shown = subprocess.run(
        ["git", "show", f"{revision}:{DIALECTS}/{name}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    return shown.stdout if shown.returncode == 0 else None


def count(name: str, revision: str | None) -> tuple[int, list[str], list[str]]:
    """Syntax-code lines of a module, its declarative ops, its custom-syntax ops."""
    source = _source(name, revision)
    if source is None:
        return 0, [], []
    tree = ast.parse(source)
    total = 0
    declarative: list[str] = []
    custom: list[str] = []
    # class name -> (has assembly_format, has parse/print), for inherited syntax
    kinds: dict[str, tuple[bool, bool]] = {}
    for node in tree.body:
        if _is_syntax_function(node) or _is_directive_class(node):
            total += _lines(node)
            continue
        if not isinstance(node, ast.ClassDef):
            continue
        op_name: str | None = None
        has_format = False
        has_syntax = False
        for item in node.body:
            if isinstance(item, ast.Assign) and len(item.targets) == 1:
                target = item.targets[0]
                if (
                    isinstance(target, ast.Name)
                    and target.id == "name"
                    and isinstance(item.value, ast.Constant)
                    and isinstance(item.value.value, str)
                ):
                    op_name = item.value.value
                if isinstance(target, ast.Name) and target.id == "assembly_format":
                    has_format = True
                    total += _lines(item)
            elif _is_syntax_function(item):
                has_syntax = True
                total += _lines(item)
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in kinds:
                inherited_format, inherited_syntax = kinds[base.id]
                has_format = has_format or inherited_format
                has_syntax = has_syntax or inherited_syntax
        kinds[node.name] = (has_format, has_syntax)
        is_op = any(
            isinstance(d, ast.Name) and d.id == "irdl_op_definition"
            for d in node.decorator_list
        )
        if is_op and op_name is not None:
            (declarative if has_format else custom).append(op_name)
    return total, declarative, custom


def _table(revision: str | None) -> dict[str, tuple[int, list[str], list[str]]]:
    found: dict[str, tuple[int, list[str], list[str]]] = {}
    for dialect, files in DIALECT_MODULES.items():
        total = 0
        declarative: list[str] = []
        custom: list[str] = []
        for name in files:
            lines, found_declarative, found_custom = count(name, revision)
            total += lines
            declarative += found_declarative
            custom += found_custom
        found[dialect] = (total, declarative, custom)
    return found


def main() -> None:
    """Print the table: before and now, per dialect, and the ops of each kind."""
    arguments = argparse.ArgumentParser(description=__doc__)
    arguments.add_argument("--before", default=BEFORE, help="git revision to compare")
    before_revision = arguments.parse_args().before
    before, now = _table(before_revision), _table(None)
    print(
        f"{'dialect':<8} {'lines before':>12} {'lines now':>10} {'ratio':>6} "
        f"{'ops':>4} {'declarative':>12} {'custom':>7}"
    )
    for dialect in DIALECT_MODULES:
        lines_before = before[dialect][0]
        lines_now, declarative, custom = now[dialect]
        ratio = f"{lines_now / lines_before:.2f}" if lines_before else "-"
        ops = len(declarative) + len(custom)
        print(
            f"{dialect:<8} {lines_before:>12} {lines_now:>10} {ratio:>6} "
            f"{ops:>4} {len(declarative):>12} {len(custom):>7}"
        )
    total_before = sum(lines for lines, _, _ in before.values())
    total_now = sum(lines for lines, _, _ in now.values())
    print(
        f"{'all':<8} {total_before:>12} {total_now:>10} "
        f"{total_now / total_before:>6.2f}"
    )
    for dialect, (_, declarative, custom) in now.items():
        if declarative:
            print(f"{dialect} assembly_format: {', '.join(declarative)}")
        if custom:
            print(f"{dialect} custom parse/print: {', '.join(custom)}")


if __name__ == "__main__":
    main()
