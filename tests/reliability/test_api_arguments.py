"""Public functions check their arguments at the boundary: a wrong type or
value raises TypeError or ValueError naming the parameter and what it
expected, never a raw error from deep inside."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from axisflow import Index, Occurrence, classify_axis
from axisflow.pipeline import schedule_module
from axisflow.pipeline.api import schedule_expression
from axisflow.scheduling.evaluate import compare
from axisflow.sequant import parse, to_module
from axisflow.shapes.session import Session


def _session_call(method: str, *args: Any, **kwargs: Any) -> Callable[[], object]:
    def call() -> object:
        session: Any = Session()
        x = session.leaf("x", "3")
        resolved = [x if arg == "<tensor>" else arg for arg in args]
        return getattr(session, method)(*resolved, **kwargs)

    return call


UNTYPED_INDEX: Any = Index
UNTYPED_CLASSIFY: Any = classify_axis
UNTYPED_OCCURRENCE: Any = Occurrence
I_1, SPACE_I = Index.parse("i_1"), Index.parse("i")

ENERGY = "2 f{a_1;i_1} * t{i_1;a_1}"
UNTYPED_TO_MODULE: Any = to_module


def _to_module(**options: Any) -> Callable[[], object]:
    def call() -> object:
        arguments: dict[str, Any] = {"expression": parse(ENERGY), "batch": "i"}
        arguments.update(options)
        return UNTYPED_TO_MODULE(**arguments)

    return call


UNTYPED_SCHEDULE_MODULE: Any = schedule_module
UNTYPED_SCHEDULE_EXPRESSION: Any = schedule_expression
UNTYPED_COMPARE: Any = compare


def _compare(extents: Any) -> Callable[[], object]:
    def call() -> object:
        scheduled = schedule_expression(ENERGY, "i")
        return UNTYPED_COMPARE(scheduled.model, scheduled.schedule, extents=extents)

    return call


UNTYPED_PARSE: Any = parse


def _assemble_without_residual() -> object:
    # Terms whose externals differ and no operator: the plan has no residual.
    from axisflow.pipeline.api import plan_expression
    from axisflow.scheduling.assemble import assemble_residual

    planned = plan_expression("f{a_1;i_1} + g{i_1;i_2}", "i", extents="i=2,a=2")
    assert planned.residual is None
    untyped: Any = assemble_residual
    return untyped(planned.model, {}, planned.residual)


MISUSES: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    (
        "sequant.parse(None)",
        lambda: UNTYPED_PARSE(None),
        TypeError,
        "text must be a str, got NoneType",
    ),
    (
        "sequant.parse(5)",
        lambda: UNTYPED_PARSE(5),
        TypeError,
        "text must be a str, got int",
    ),
    (
        "sequant.parse(b'...')",
        lambda: UNTYPED_PARSE(b"t{a_1;i_1}"),
        TypeError,
        "text must be a str (decode it first: data.decode('utf-8')), got bytes",
    ),
    (
        "sequant.parse(['...'])",
        lambda: UNTYPED_PARSE(["t{a_1;i_1}"]),
        TypeError,
        "text must be a str, got list",
    ),
    (
        "sequant.parse(text, source=1)",
        lambda: UNTYPED_PARSE("t{a_1;i_1}", 1),
        TypeError,
        "source must be a str, got int",
    ),
    (
        "Index('i_1') < 'i'",
        lambda: UNTYPED_INDEX.parse("i_1") < "i",
        TypeError,
        "'<' not supported between instances of 'Index' and 'str'",
    ),
    (
        "Index.parse('a_1<i_1,i_1>')",
        lambda: UNTYPED_INDEX.parse("a_1<i_1,i_1>"),
        ValueError,
        "malformed index label 'a_1<i_1,i_1>' at position 8: expected a proto "
        "index not listed before, found 'i'",
    ),
    (
        "Index('a', 1, [i_1, i_1])",
        lambda: UNTYPED_INDEX("a", 1, [I_1, I_1]),
        ValueError,
        "proto index i_1 is listed twice in the protos of a_1",
    ),
    (
        "Index.parse('a\\u200b_1')",
        lambda: UNTYPED_INDEX.parse("a\u200b_1"),
        ValueError,
        "malformed index label 'a\\u200b_1' at position 1: expected end of "
        "label, found '\\u200b'",
    ),
    (
        "sequant.parse('x{a\\u200b_1;i_1}')",
        lambda: parse("x{a\u200b_1;i_1}"),
        ValueError,
        "<input>:1:4: expected",
    ),
    (
        "Occurrence(slots='01')",
        lambda: UNTYPED_OCCURRENCE([I_1], [I_1], slots="01"),
        TypeError,
        "Occurrence slots must be ints, got '01'",
    ),
    (
        "Occurrence(slots=['0'])",
        lambda: UNTYPED_OCCURRENCE([I_1], [I_1], slots=["0"]),
        TypeError,
        "Occurrence slots must be ints, got ['0']",
    ),
    (
        "classify_axis(sliced=None)",
        lambda: UNTYPED_CLASSIFY([I_1], [], SPACE_I, [], sliced=None),
        TypeError,
        "sliced must be an iterable of Index, got NoneType",
    ),
    (
        "classify_axis(sliced=['i_1'])",
        lambda: UNTYPED_CLASSIFY([I_1], [], SPACE_I, [], sliced=["i_1"]),
        TypeError,
        "sliced must hold Index objects (Index.parse('i_1')), got 'i_1'",
    ),
    (
        "to_module(batch=',')",
        _to_module(batch=","),
        ValueError,
        "batch: an empty space name in ',' (expected SPACE,SPACE,...)",
    ),
    (
        "to_module(extents='i=3,i=4')",
        _to_module(extents="i=3,i=4"),
        ValueError,
        "space 'i' is given twice in 'i=3,i=4'",
    ),
    (
        "assemble_residual(layout=None)",
        _assemble_without_residual,
        TypeError,
        "layout must be a ResidualLayout, got NoneType (the plan has no residual: "
        "its terms' externals differ and no operator makes them one; evaluate "
        "its trees one by one)",
    ),
    ("Index.parse(None)", lambda: UNTYPED_INDEX.parse(None), TypeError, "text must"),
    ("Index('i', 1.5)", lambda: UNTYPED_INDEX("i", 1.5), TypeError, "ordinal must"),
    (
        "classify_axis(carried=['i_1'])",
        lambda: UNTYPED_CLASSIFY(["i_1"], [], SPACE_I, []),
        TypeError,
        "carried must hold Index objects (Index.parse('i_1')), got 'i_1'",
    ),
    (
        "classify_axis(carried='i_1')",
        lambda: UNTYPED_CLASSIFY("i_1", [], SPACE_I, []),
        TypeError,
        "carried must be a sequence of Index, got str",
    ),
    (
        "classify_axis(axis='i')",
        lambda: UNTYPED_CLASSIFY([I_1], [], "i", []),
        TypeError,
        "axis must be an Index (Index.parse('i')), got str",
    ),
    (
        "classify_axis(occurrences='x')",
        lambda: UNTYPED_CLASSIFY([I_1], [], SPACE_I, "x"),
        TypeError,
        "occurrences must be a sequence of Occurrence, got str",
    ),
    (
        "classify_axis(enclosing_slot=3)",
        lambda: UNTYPED_CLASSIFY([I_1], [], SPACE_I, [], enclosing_slot=3),
        TypeError,
        "enclosing_slot must be a function",
    ),
    (
        "Occurrence(['i_1'], [])",
        lambda: UNTYPED_OCCURRENCE(["i_1"], []),
        TypeError,
        "Occurrence carried must be Index objects, got ('i_1',)",
    ),
    (
        "sequant.to_module(text)",
        _to_module(expression=ENERGY),
        TypeError,
        "expression must be a parsed Expression (parse it first: "
        "axisflow.sequant.parse(text)), got str",
    ),
    (
        "to_module(extents={'i': 2.5})",
        _to_module(extents={"i": 2.5}),
        TypeError,
        "extents['i'] must be a positive int, got 2.5 (float)",
    ),
    (
        "to_module(extents={'i': True})",
        _to_module(extents={"i": True}),
        TypeError,
        "extents['i'] must be a positive int, got True (bool)",
    ),
    (
        "to_module(extents={'i': 0})",
        _to_module(extents={"i": 0}),
        ValueError,
        "extents['i'] must be positive, got 0",
    ),
    (
        "to_module(separate_instances='no')",
        _to_module(separate_instances="no"),
        TypeError,
        "separate_instances must be True or False, got 'no'",
    ),
    (
        "to_module(share=1)",
        _to_module(share=1),
        TypeError,
        "share must be 'forest' or 'tree', got 1",
    ),
    (
        "to_module(share='trees')",
        _to_module(share="trees"),
        ValueError,
        "share must be one of forest, tree, got 'trees'",
    ),
    (
        "schedule_expression(share=0)",
        lambda: UNTYPED_SCHEDULE_EXPRESSION(ENERGY, "i", share=0),
        ValueError,
        "share must be one of forest, tree, auto, got 0",
    ),
    (
        "schedule_expression(budget='lots')",
        lambda: UNTYPED_SCHEDULE_EXPRESSION(ENERGY, "i", budget="lots"),
        ValueError,
        "budget: expected a size such as 100GiB, 500MB or 4e9 (bytes), got 'lots'",
    ),
    (
        "schedule_expression(max_extra_flops='-5%')",
        lambda: UNTYPED_SCHEDULE_EXPRESSION(ENERGY, "i", max_extra_flops="-5%"),
        ValueError,
        "max-extra-flops: must not be negative, got '-5%'",
    ),
    (
        "schedule_expression(budget and max_extra_flops)",
        lambda: UNTYPED_SCHEDULE_EXPRESSION(
            ENERGY, "i", budget="1GiB", max_extra_flops="5%"
        ),
        ValueError,
        "give either budget (the fewest multiply-adds within it) or "
        "max_extra_flops (the smallest peak within it), not both",
    ),
    (
        "to_module(elem=1.0)",
        _to_module(elem=1.0),
        TypeError,
        "elem must be a positive int, got 1.0 (float)",
    ),
    (
        "to_module(batch=[1])",
        _to_module(batch=[1]),
        TypeError,
        "batch must be a str or an iterable of str, got (1,)",
    ),
    (
        "schedule_module(None)",
        lambda: UNTYPED_SCHEDULE_MODULE(None),
        TypeError,
        "module must be a builtin.module (ModuleOp), got NoneType",
    ),
    (
        "schedule_expression(max_rounds=None)",
        lambda: UNTYPED_SCHEDULE_EXPRESSION(ENERGY, "i", max_rounds=None),
        TypeError,
        "max_rounds must be a positive int, got None (NoneType)",
    ),
    (
        "schedule_expression(block={'i': 2.5})",
        lambda: UNTYPED_SCHEDULE_EXPRESSION(ENERGY, "i", block={"i": 2.5}),
        TypeError,
        "block['i'] must be a positive int, got 2.5 (float)",
    ),
    (
        "schedule_expression(block=True)",
        lambda: UNTYPED_SCHEDULE_EXPRESSION(ENERGY, "i", block=True),
        TypeError,
        "block must be a positive int, got True (bool)",
    ),
    (
        "schedule_expression(block=2**64)",
        lambda: UNTYPED_SCHEDULE_EXPRESSION(ENERGY, "i", block=2**64),
        ValueError,
        f"block must be at most 9223372036854775807, got {2**64}",
    ),
    (
        "compare(extents={'i': 0})",
        _compare({"i": 0}),
        ValueError,
        "extents['i'] must be positive, got 0",
    ),
    (
        "compare(extents={'i': True})",
        _compare({"i": True}),
        TypeError,
        "extents['i'] must be a positive int, got True (bool)",
    ),
    (
        "Session.total_elems(None, 12)",
        _session_call("total_elems", None, 12),
        TypeError,
        "total_elems: tensor must be a Tensor, got None",
    ),
    (
        "Session.einsum(capture_dims=None)",
        _session_call(
            "einsum", "e", "i;i=>i", "<tensor>", "<tensor>", capture_dims=None
        ),
        TypeError,
        "capture_dims must be a sequence of dim_ref()s, got None",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [case[1:] for case in MISUSES],
    ids=[case[0] for case in MISUSES],
)
def test_misuse_is_refused_at_the_boundary(
    call: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        call()


def test_to_module_reads_a_batch_generator_once() -> None:
    module = to_module(parse(ENERGY), (key for key in ["i"]))
    assert "batch.loop i_1" in str(module)


def test_an_empty_expression_is_the_empty_sum() -> None:
    # Deliberate: SeQuant's zero, and what deparse prints for it; the forest
    # has no tree. axisflow plan refuses it (nothing to plan:
    # tests/test_planning.py).
    from axisflow.sequant import deparse

    for text in ("", "  \n// nothing\n"):
        assert parse(text).terms == ()
    assert deparse(parse("")) == ""
    assert "batch.tree" not in str(to_module(parse("")))


def test_a_trailing_comma_in_batch_is_allowed() -> None:
    # Deliberate: "i," is "i" (a list written with a last comma).
    assert str(to_module(parse(ENERGY), "i,")) == str(to_module(parse(ENERGY), "i"))


def test_an_einsum_spec_without_labels_is_the_scalar_one() -> None:
    # Deliberate: '=>' is the unary spec of a scalar (NumPy's '->' on a 0-d
    # array, OCANNL's empty labels): one operand, no axes, a scalar result.
    from axisflow.shapes.errors import ShapeError
    from axisflow.shapes.spec import parse_einsum_spec

    spec = parse_einsum_spec("=>")
    assert len(spec.operands) == 1
    assert spec.labels() == set()
    session = Session()
    scalar = session.leaf("s", "")
    session.einsum("e", "=>", scalar)
    vector = session.leaf("v", "3")
    with pytest.raises(ShapeError, match="output axes disagree"):
        session.einsum("f", "=>", vector)
