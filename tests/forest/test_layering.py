"""The layers: pure logic below the dialects, no import running back up,
no pass importing another pass (every import statement, also those inside
functions)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "axisflow"

PURE = [
    "roles/index.py",
    "roles/decision.py",
    "forest/frames.py",
    "forest/model.py",
    "forest/roles.py",
    "forest/builder.py",
    "scheduling/__init__.py",
    "scheduling/schedule.py",
    "scheduling/walker.py",
    "scheduling/check.py",
    "scheduling/scheduler.py",
    "scheduling/memory.py",
    "scheduling/evaluate.py",
    "scheduling/guard.py",
    "scheduling/assemble.py",
    "scheduling/contraction.py",
    "scheduling/options.py",
    "sequant/syntax.py",
    "sequant/forest.py",
    "sequant/ordering.py",
    "order/__init__.py",
    "order/extents.py",
    "order/search.py",
    "lowering/plan.py",
    "lowering/harness.py",
    "lowering/toolchain.py",
    "execution/__init__.py",
    "execution/inputs.py",
    "execution/evaluation.py",
    "execution/chem.py",
]


def imports(relative: str) -> set[str]:
    tree = ast.parse((PACKAGE / relative).read_text("utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def offending(relative: str, prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in imports(relative) if m.startswith(prefixes))


@pytest.mark.parametrize("relative", PURE)
def test_pure_modules_import_no_xdsl_and_nothing_above(relative: str) -> None:
    above = ("xdsl", "axisflow.dialects", "axisflow.passes", "axisflow.pipeline")
    assert offending(relative, above) == []


@pytest.mark.parametrize(
    "relative",
    [
        "dialects/batch.py",
        "dialects/sched.py",
        "dialects/batch_model.py",
        "dialects/tprog.py",
        "dialects/tprog_calls.py",
        "dialects/tprog_eval.py",
        "dialects/tprog_generalize.py",
        "dialects/sched_model.py",
    ],
)
def test_dialects_import_no_pass_and_no_api(relative: str) -> None:
    assert offending(relative, ("axisflow.passes", "axisflow.pipeline.api")) == []


@pytest.mark.parametrize(
    "relative", [m for m in PURE if not m.startswith("execution/")]
)
def test_nothing_below_imports_the_execution_layer(relative: str) -> None:
    assert offending(relative, ("axisflow.execution",)) == []


def test_the_pipeline_api_imports_no_pass() -> None:
    assert offending("pipeline/api.py", ("axisflow.passes",)) == []


SHAPES = sorted(
    str(path.relative_to(PACKAGE)) for path in (PACKAGE / "shapes").rglob("*.py")
)


@pytest.mark.parametrize("relative", SHAPES)
def test_the_shape_engine_imports_no_xdsl_and_nothing_above(relative: str) -> None:
    above = ("xdsl", "axisflow.dialects", "axisflow.passes")
    assert offending(relative, above) == []


PASSES = sorted(
    str(path.relative_to(PACKAGE))
    for path in (PACKAGE / "passes").glob("*.py")
    if path.name != "__init__.py"
)


@pytest.mark.parametrize("relative", PASSES)
def test_no_pass_imports_another_pass(relative: str) -> None:
    assert offending(relative, ("axisflow.passes",)) == []
