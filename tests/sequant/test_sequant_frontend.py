"""The xdsl-opt entry points: the frontend class, its options and errors."""

from __future__ import annotations

import re
from io import BytesIO
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from axisflow.dialects.batch import ForestOp, LoopOp, SpaceOp
from axisflow.sequant.frontend import (
    SequantFrontend,
    SequantTextFrontend,
    default_forest_name,
)
from axisflow.universe import AXISFLOW_UNIVERSE

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sequant"
ENERGY = EXAMPLES / "csv_ccsd_energy_df.txt"


def _parse(frontend: SequantFrontend, text: str | bytes, name: str = "eq.txt"):
    data = text.encode() if isinstance(text, str) else text
    return frontend.parse(Context(), BytesIO(data), name)


def test_registered_under_sequant_and_txt() -> None:
    frontends = AXISFLOW_UNIVERSE.all_frontends
    assert frontends["sequant"]() is SequantFrontend
    assert frontends["txt"]() is SequantTextFrontend
    assert SequantTextFrontend.from_spec(parse_spec("txt{batch=i}")).batch == ("i",)


def test_options_from_spec() -> None:
    spec = parse_spec(
        'sequant{batch="Κ",i extents="i=80,a=896,Κ=1682" elem=8 '
        "separate-instances=true forest=ccsd}"
    )
    frontend = SequantFrontend.from_spec(spec)
    assert frontend == SequantFrontend(
        batch=("Κ", "i"),
        extents=("i=80,a=896,Κ=1682",),
        elem=8,
        separate_instances=True,
        forest="ccsd",
    )
    module = _parse(frontend, ENERGY.read_bytes())
    forest = next(op for op in module.walk() if isinstance(op, ForestOp))
    assert forest.sym_name is not None and forest.sym_name.data == "ccsd"
    spaces = {s.space_key: (s.extent_value, s.elem_value) for s in forest.spaces()}
    assert spaces == {"a": (896, 8), "i": (80, 8), "Κ": (1682, 8), "μ̃": (None, 8)}
    slots = [op.slot_value for op in module.walk() if isinstance(op, LoopOp)]
    # term 0 loops over i_1 only; terms 1-4 over Κ_1, i_1 and i_2.
    assert slots == list(range(1 + 4 * 3))


def test_ascii_alias_and_default_name() -> None:
    frontend = SequantFrontend.from_spec(parse_spec("sequant{batch=Kappa}"))
    module = _parse(frontend, ENERGY.read_bytes(), str(ENERGY))
    forest = next(op for op in module.walk() if isinstance(op, ForestOp))
    assert forest.sym_name is not None
    assert forest.sym_name.data == "csv_ccsd_energy_df"
    loops = {op.loop_index.full_label for op in module.walk() if isinstance(op, LoopOp)}
    assert loops == {"Κ_1"}
    assert [op.space_key for op in module.walk() if isinstance(op, SpaceOp)] == [
        "a",
        "i",
        "Κ",
        "μ̃",
    ]
    assert default_forest_name("stdin") == "sequant"
    assert default_forest_name("dir/2-eq.v1.txt") == "sequant_2_eq_v1"


def test_syntax_error_is_a_located_parse_error() -> None:
    with pytest.raises(ParseError) as info:
        _parse(SequantFrontend(), "t{a_1;i_1}\n  * g{i_1;a_1", "eq.txt")
    text = str(info.value)
    assert text.startswith("eq.txt:2:14\n")
    assert "expected ',', ';' or '}' after an index, found end of input" in text


def test_forest_error_is_a_located_parse_error() -> None:
    with pytest.raises(ParseError) as info:
        _parse(SequantFrontend(), "t{a_1;i_1} * g{i_1,i_1;a_1}", "eq.txt")
    assert str(info.value).startswith("eq.txt:1:14\n")
    assert "index i_1 appears twice in tensor g" in str(info.value)


def test_invalid_utf8_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as info:
        _parse(SequantFrontend(), b"t{a_1;i_1} * \xff{}", "eq.txt")
    assert "input is not valid UTF-8" in str(info.value)
    assert str(info.value).startswith("eq.txt:1:14")


def test_option_error_is_a_diagnostic() -> None:
    with pytest.raises(DiagnosticException, match="index space 'x' does not occur"):
        _parse(SequantFrontend(batch=("x",)), ENERGY.read_text("utf-8"))


def test_xdsl_opt_reads_txt_files_with_and_without_f(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = str(EXAMPLES / "legality_cross_iteration.txt")
    xDSLOptMain(args=[path, "-f", "sequant{batch=i}", "-p", "classify-axes"]).run()
    with_f = capsys.readouterr().out
    assert "batch.loop i_3 slot 0" in with_f
    assert "roles = #batch.roles<i_3 = loop_carried" in with_f
    xDSLOptMain(args=[path]).run()
    assert "batch.forest @legality_cross_iteration" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("frontend", "message"),
    [
        (SequantFrontend(budget="lots"), "budget: expected a size such as 100GiB"),
        (SequantFrontend(max_extra_flops="x%"), "max-extra-flops: expected a fraction"),
        (
            SequantFrontend(budget="1GiB", max_extra_flops="5%"),
            "give either budget or max-extra-flops, not both",
        ),
        (SequantFrontend(share="all"), "share must be"),
    ],
)
def test_planner_option_errors_are_diagnostics(
    frontend: SequantFrontend, message: str
) -> None:
    with pytest.raises(DiagnosticException, match=re.escape(message)):
        _parse(frontend, ENERGY.read_text("utf-8"))


def test_a_budget_prints_the_planned_forest_that_schedule_batches_schedules() -> None:
    """With a budget the frontend prints the plan; scheduled as IR (the
    default rules) it is what the Python API schedules for that budget."""
    from axisflow.pipeline import schedule_expression, schedule_module

    text = ENERGY.read_text("utf-8")
    extents = "i=80,a=896,μ̃=896,Κ=1682"
    module = _parse(
        SequantFrontend(batch=("i", "Κ"), extents=(extents,), elem=8, budget="1GiB"),
        text,
    )
    (through_ir,) = schedule_module(module, block=1).forests
    direct = schedule_expression(
        text, "i,Κ", extents=extents, elem=8, budget="1GiB", block=1
    )
    assert direct.share == "planned"
    assert through_ir.report.scheduled_peak == direct.report.scheduled_peak
    assert through_ir.report.flops == direct.report.flops
    assert through_ir.report.scheduled_peak <= 2**30
