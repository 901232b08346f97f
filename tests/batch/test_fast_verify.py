"""The fast verification of ``batch`` and ``sched`` ops changes no verdict.

``axisflow.dialects.fast_verify`` accepts plain ops without xDSL's generic
per-op machinery and hands everything else to xDSL. Each case below (a valid
forest, a schedule, and IR broken in the ways xDSL's generic verifier
checks: wrong parent, unknown, missing or ill-typed property, block
arguments, two blocks, an operand, a result, a foreign op inside, a forest
ending a function body, plus the dialects' own rules) is verified twice:
with the fast path, and with it switched off so that every op goes through
xDSL's own verifier. Outcome and complete diagnostic must be identical.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.dialects.test import Test
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from axisflow.dialects import fast_verify
from axisflow.dialects.batch import Batch
from axisflow.dialects.sched import Sched

ROOT = Path(__file__).resolve().parents[2]
XDSL_OPT = str(Path(sys.executable).with_name("xdsl-opt"))


def _generic(*args: str) -> str:
    return subprocess.run(
        [XDSL_OPT, *args, "--print-op-generic"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


FOREST = _generic("examples/four_tensor.mlir")
SCHEDULED = _generic(
    "examples/pipeline/four_tensor.mlir", "-p", "classify-axes,schedule-batches"
)
USE_A = (
    '"batch.use"() <{value = @A, carried = [#batch.index<"a">, '
    '#batch.index<"c">, #batch.index<"i">, #batch.index<"k">]}> ({\n'
    "            }) : () -> ()"
)
LOOP_C = '"batch.loop"() <{index = #batch.index<"c">}> ({'
TREE = '"batch.tree"() <{sym_name = "S_term"'


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


CASES: dict[str, str] = {
    "valid forest": FOREST,
    "valid schedule": SCHEDULED,
    "use outside a tree": _edit(FOREST, TREE, USE_A + "\n    " + TREE),
    "unknown property": _edit(FOREST, "value = @A,", "value = @A, bogus = 1 : i64,"),
    "ill-typed property": _edit(FOREST, "value = @A,", 'value = "A",'),
    "missing property": _edit(
        FOREST, USE_A, '"batch.use"() <{value = @A}> ({\n            }) : () -> ()'
    ),
    "label list of integers": _edit(
        FOREST,
        'carried = [#batch.index<"a">, #batch.index<"c">, #batch.index<"i">, '
        '#batch.index<"k">]',
        "carried = [1 : i64, 2 : i64, 3 : i64, 4 : i64]",
    ),
    "block argument": _edit(FOREST, LOOP_C, LOOP_C + "\n        ^bb0(%x : i64):"),
    "two blocks": _edit(
        FOREST,
        USE_A,
        USE_A.replace("({\n", "({\n            ^bb0:\n            ^bb1:\n"),
    ),
    "an operand": _edit(
        FOREST,
        USE_A,
        '%v = "test.op"() : () -> i64\n'
        + USE_A.replace('"batch.use"()', '"batch.use"(%v)').replace(
            ": () -> ()", ": (i64) -> ()"
        ),
    ),
    "a result": _edit(
        FOREST, USE_A, "%r = " + USE_A.replace(": () -> ()", ": () -> i64")
    ),
    "valid with a foreign op in a use-site": _edit(
        FOREST,
        USE_A,
        USE_A.replace("({\n", '({\n              "test.op"() : () -> ()\n'),
    ),
    "wrong arity": _edit(
        FOREST,
        'carried = [#batch.index<"a">, #batch.index<"c">, #batch.index<"i">, '
        '#batch.index<"k">]',
        'carried = [#batch.index<"a">, #batch.index<"c">]',
    ),
    "unknown value": _edit(FOREST, "value = @A,", "value = @Z,"),
    "forest ends a function body": '"builtin.module"() ({\n'
    '"func.func"() <{sym_name = "f", function_type = () -> ()}> ({\n'
    + FOREST.split("\n", 1)[1].rstrip().removesuffix("}) : () -> ()")
    + "}) : () -> ()\n}) : () -> ()\n",
    "sched op with an unknown property": _edit(
        SCHEDULED,
        '"sched.build"() <{value = @T1,',
        '"sched.build"() <{bogus = 1, value = @T1,',
    ),
    "sched op outside a schedule": _edit(
        SCHEDULED,
        '"sched.schedule"()',
        '"sched.accumulate"() <{value = @S}> : () -> ()\n    "sched.schedule"()',
    ),
}


def _context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, Test, Batch, Sched):
        ctx.load_dialect(dialect)
    return ctx


def _outcome(text: str) -> str:
    """``ok`` or the exception's type and complete message."""
    module = Parser(_context(), text).parse_module()
    try:
        module.verify()
    except (VerifyException, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    return "ok"


@pytest.mark.parametrize("name", sorted(CASES))
def test_fast_path_gives_xdsls_verdict(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = CASES[name]
    fast = _outcome(text)
    monkeypatch.setattr(fast_verify, "_structure_ok", lambda op, shape: False)
    generic = _outcome(text)
    assert fast == generic
    assert (fast == "ok") == name.startswith("valid")


def test_plain_ops_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a valid forest no batch op reaches xDSL's generic op verifier."""
    module = Parser(_context(), FOREST).parse_module()
    generic: list[str] = []
    from xdsl.irdl import OpDef

    original = OpDef.verify

    def spy(self: OpDef, op: object) -> None:
        generic.append(self.name)
        original(self, op)  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(OpDef, "verify", spy)
    module.verify()
    assert generic == ["builtin.module"]


def _verdict(module: object) -> str:
    try:
        module.verify()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
    except (VerifyException, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    return "ok"


@pytest.mark.parametrize(
    ("property_name", "labels"),
    [
        ("carried", ["a", "c", "i"]),  # wrong arity at the use-site
        ("carried", ["a", "k", "i", "c"]),  # c and k swapped: frames disagree
    ],
)
def test_consistent_shapes_remembered_across_verifications_stay_sound(
    property_name: str, labels: list[str]
) -> None:
    """A use-site found consistent in one verification and then changed (a
    new attribute in place of the old one, as a pass would write it) is
    checked again: the second verification gives the verdict and message a
    fresh parse of the changed IR gives."""
    from xdsl.dialects.builtin import ArrayAttr

    from axisflow.dialects.batch import IndexAttr, UseOp

    module = Parser(_context(), FOREST).parse_module()
    assert _verdict(module) == "ok"
    assert _verdict(module) == "ok"  # the remembered shapes accept again
    use = next(
        op for op in module.walk() if isinstance(op, UseOp) and op.value_name == "A"
    )
    use.properties[property_name] = ArrayAttr([IndexAttr(n) for n in labels])
    changed = _verdict(module)
    fresh = _verdict(Parser(_context(), str(module)).parse_module())
    assert changed != "ok"
    assert changed == fresh
