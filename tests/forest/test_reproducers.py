"""The bugs of issue 10, each as a test: roles, schedules and peaks must not
depend on index names, proto pairings are explicit, and ``contracted`` never
lists an index that stays in the result as a proto."""

from __future__ import annotations

import re

from xdsl.context import Context

from axisflow.dialects.batch import AxisRolesAttr, ForestOp
from axisflow.passes.classify_axes import ClassifyAxesPass
from axisflow.pipeline import schedule_expression
from axisflow.roles import LoopRole
from axisflow.sequant import parse, to_module
from tests.conftest import EXAMPLES

LOCAL = LoopRole.LOOP_LOCAL


def roles(text: str, batch: str) -> dict[str, dict[str, LoopRole]]:
    """Roles per value and loop space after the frontend and classify-axes."""
    module = to_module(parse(text), batch)
    module.verify()
    ClassifyAxesPass().apply(Context(), module)
    found: dict[str, dict[str, LoopRole]] = {}
    for op in module.walk():
        if isinstance(op, ForestOp):
            for value in op.values():
                attr = value.attributes.get("roles")
                if isinstance(attr, AxisRolesAttr):
                    found[value.value_name] = {
                        axis.base_key: role for axis, role in attr.as_dict().items()
                    }
    return found


def shift_ordinals(text: str, by: int) -> str:
    """Every ordinal of every label shifted by ``by`` (a consistent renaming)."""
    return re.sub(r"_(\d+)", lambda m: f"_{int(m.group(1)) + by}", text)


ONLY_PROTO = "A{a_1<i_1>;m_1} * D{m_1;} * B{a_1<i_1>;i_1}"
ONLY_PROTO_RENAMED = "A{a_2<i_2>;m_3} * D{m_3;} * B{a_2<i_2>;i_2}"


def test_a_value_sliced_only_through_a_proto_keeps_its_role_when_renamed() -> None:
    before, after = roles(ONLY_PROTO, "i"), roles(ONLY_PROTO_RENAMED, "i")
    assert before == after
    assert before["A_0"]["i"] is LOCAL
    assert before["v0"]["i"] is LOCAL


def test_the_peak_does_not_change_when_the_dummies_are_renamed() -> None:
    before = schedule_expression(ONLY_PROTO, "i")
    after = schedule_expression(ONLY_PROTO_RENAMED, "i")
    assert before.report.scheduled_peak == after.report.scheduled_peak
    assert before.report.scheduled_peak == 72


def test_csv_energy_roles_survive_shifting_every_ordinal() -> None:
    text = (EXAMPLES / "sequant" / "csv_ccsd_energy_df.txt").read_text("utf-8")
    assert roles(text, "i") == roles(shift_ordinals(text, 10), "i")


DF_TERM = (
    "g{μ̃_1170;i_4;Κ_2} * g{μ̃_1169;i_3;Κ_2} * t{a_5<i_3,i_4>,a_6<i_3,i_4>;i_3,i_4}"
    " * C{a_6<i_3,i_4>;μ̃_1173}"
)


def test_a_df_term_with_its_factors_reordered_schedules() -> None:
    forest = schedule_expression(DF_TERM, "i")
    assert forest.schedule is not None


def test_a_pairing_accepted_by_classify_axes_is_accepted_by_the_scheduler() -> None:
    forest = schedule_expression("C{a_1<i_2,i_1>,a_2<i_2,i_3>;} * C{a_2<i_1>;}", "i")
    assert forest.schedule is not None


def test_contracted_never_lists_a_proto_of_a_result_composite() -> None:
    module = to_module(parse("X{a_1<i_1,i_2>;i_1,i_2} * Y{i_1,i_2;}"))
    for op in module.walk():
        if isinstance(op, ForestOp):
            for value in op.values():
                modes = {p for i in value.result_indices for p in i.all_protos()}
                assert not modes & set(value.contracted_indices), value.value_name
