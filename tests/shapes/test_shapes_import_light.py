"""The package root and the shape engine do not import xDSL."""

from __future__ import annotations

import subprocess
import sys


def imported_modules(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint('\\n'.join(sys.modules))"
    output = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    return set(output.split())


def test_package_root_does_not_import_xdsl() -> None:
    assert not any(m.startswith("xdsl") for m in imported_modules("import axisflow"))


def test_shape_engine_does_not_import_xdsl() -> None:
    modules = imported_modules("import axisflow.shapes")
    assert "axisflow.shapes.solver" in modules
    assert not any(m.startswith("xdsl") for m in modules)


def test_universe_does_not_import_the_dialect_or_pass() -> None:
    modules = imported_modules("import axisflow.universe")
    assert "axisflow.dialects.tprog" not in modules
    assert "axisflow.passes.close_shapes" not in modules
    assert "axisflow.passes.generalize_shapes" not in modules
