"""The lowering pass and its plan: structure, real-MLIR verification, errors."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import pytest

from axisflow.lowering import toolchain
from axisflow.lowering.plan import (
    AddScaled,
    Alloc,
    Contract,
    Emit,
    Free,
    Loop,
    LoweringError,
    WriteBack,
    Zero,
)
from axisflow.lowering.toolchain import ToolchainError, require_toolchain, verify_text
from axisflow.passes.lower_schedule import lower_module
from tests.lowering.cases import scheduled_example, scheduled_sequant, scheduled_text


def test_four_tensor_plan_follows_the_schedule() -> None:
    module = scheduled_example("pipeline/four_tensor.mlir", accumulate=False)
    (plan,) = lower_module(module)
    top = [type(step).__name__ for step in plan.steps]
    # buffer S (zeroed), the loop over b, the output, S freed
    assert top == ["Alloc", "Zero", "Loop", "Emit", "Free"]
    outer = plan.steps[2]
    assert isinstance(outer, Loop)
    assert (outer.space, outer.start, outer.stop, outer.block) == ("b", 0, 3, 1)
    (inner,) = outer.body
    assert isinstance(inner, Loop) and inner.space == "c"
    contractions = [s for s in inner.body if isinstance(s, Contract)]
    assert [c.value for c in contractions] == ["T1", "T2", "S"]
    # S: result modes a b i j parallel, c k summed at the node: reductions
    s = contractions[2]
    assert s.modes == ("a", "b", "i", "j", "c", "k")
    assert s.reductions == (False, False, False, False, True, True)
    assert s.extents == (2, 1, 2, 3, 1, 2)  # b and c are one block
    (write,) = [w for w in inner.body if isinstance(w, WriteBack)]
    assert write.accumulate  # Reduction over c: added into the buffer
    assert write.target.offsets == (None, outer.instance, None, None)
    # every piece allocated in the body is freed in it
    allocated = {s.tensor for s in inner.body if isinstance(s, Alloc)}
    freed = {s.tensor for s in inner.body if isinstance(s, Free)}
    zeroed = {s.tensor for s in inner.body if isinstance(s, Zero)}
    assert allocated == freed == zeroed
    (emit,) = [e for e in plan.steps if isinstance(e, Emit)]
    assert emit.tree == "S_term" and emit.coeff == 1


def test_four_tensor_residual_takes_the_pieces_directly() -> None:
    # With the residual (the default): S is never a buffer; each (b, c)
    # piece goes straight into the b block of the zeroed result argument.
    module = scheduled_example("pipeline/four_tensor.mlir")
    (plan,) = lower_module(module)
    assert plan.residual is not None and plan.outputs == (plan.residual,)
    residual = plan.tensors[plan.residual]
    assert (residual.kind, residual.modes, residual.shape) == (
        "residual",
        ("a", "b", "i", "j"),
        (2, 3, 2, 3),
    )
    top = [type(step).__name__ for step in plan.steps]
    assert top == ["Zero", "Loop"]  # no buffer, no output copy
    assert not any(plan.tensors[t].kind == "buffer" for t in range(len(plan.tensors)))
    (outer,) = [s for s in plan.steps if isinstance(s, Loop)]
    (inner,) = outer.body
    assert isinstance(inner, Loop)
    (add,) = [s for s in inner.body if isinstance(s, AddScaled)]
    assert add.accumulate and add.coeff == 1
    assert add.target.tensor == plan.residual
    assert add.target.offsets == (None, outer.instance, None, None)
    assert add.target.sizes == (2, 1, 2, 3)
    assert add.source_dims == (0, 1, 2, 3)


def test_operator_step_is_one_generic_per_weighted_relabelling() -> None:
    from tests.lowering.test_run import GROUPS

    module = scheduled_text(GROUPS, "i", "a=2,i=3", "groups")
    (plan,) = lower_module(module)
    kinds = [plan.tensors[t].kind for t in range(len(plan.tensors))]
    assert kinds.count("residual") == 4  # the result and three more groups
    assert kinds.count("operand") == 3  # Ŝ, Â, P̂: one operand each
    steps = plan.walk()
    terms = [s for s in steps if isinstance(s, AddScaled) and ", term " in s.what]
    # Ŝ: 2 column permutations of 1/2; Â: 4 signed of 1/4; P̂: one swap
    weights = sorted(t.coeff for t in terms)
    assert weights == sorted(
        [Fraction(1, 2)] * 2 + [Fraction(1, 4)] * 2 + [Fraction(-1, 4)] * 2 + [1]
    )
    # the residual's modes are a_1 a_2 i_1 i_2; Ŝ (group 0, in place) has
    # as its second term the column swap (a_1 i_1) <-> (a_2 i_2): the
    # operand read transposed
    s_terms = [t for t in terms if t.what.startswith("residual = Ŝ")]
    assert [t.source_dims for t in s_terms] == [(0, 1, 2, 3), (1, 0, 3, 2)]
    assert [t.accumulate for t in s_terms] == [False, True]
    # every group other than 0 is added into the result and freed
    into_result = [
        s
        for s in steps
        if isinstance(s, AddScaled)
        and re.fullmatch(r"residual#\d into residual", s.what)
    ]
    assert len(into_result) == 3
    freed = {s.tensor for s in steps if isinstance(s, Free)}
    residuals = {t for t, kind in enumerate(kinds) if kind in ("residual", "operand")}
    assert residuals - freed == {plan.residual}
    # the memory the schedule counts: each residual buffer is its
    # sched.residual's bytes, each operand its sched.apply's
    from axisflow.dialects.batch import ForestOp
    from axisflow.dialects.sched import ScheduleOp
    from axisflow.dialects.sched_model import schedule_from_op
    from axisflow.scheduling.schedule import Apply, Residual

    scheduled = scheduled_text(GROUPS, "i", "a=2,i=3", "groups")
    forest = next(op for op in scheduled.walk() if isinstance(op, ForestOp))
    schedule_op = next(op for op in forest.body.block.ops if isinstance(op, ScheduleOp))
    schedule, _ = schedule_from_op(schedule_op)
    counted = {
        (type(item).__name__, item.group): item.bytes
        for item in schedule.items
        if isinstance(item, Residual | Apply)
    }
    for tensor in plan.tensors:
        if tensor.kind not in ("residual", "operand"):
            continue
        group = 0 if tensor.value == "residual" else int(tensor.value.split("#")[1])
        item = "Residual" if tensor.kind == "residual" else "Apply"
        assert 8 * math.prod(tensor.shape) == counted[(item, group)], tensor


def test_a_ragged_block_is_a_second_loop_with_static_shapes() -> None:
    module = scheduled_example("pipeline/four_tensor.mlir", block=3, accumulate=False)
    (plan,) = lower_module(module)
    (outer,) = [s for s in plan.steps if isinstance(s, Loop)]  # b: 3 = one block
    assert (outer.start, outer.stop, outer.block) == (0, 3, 3)
    inner = [s for s in outer.body if isinstance(s, Loop)]  # c: 4 = 3 + 1
    assert [(s.start, s.stop, s.block) for s in inner] == [(0, 3, 3), (3, 4, 1)]
    t1_shapes = [
        plan.tensors[c.target].shape
        for loop in inner
        for c in loop.body
        if isinstance(c, Contract) and c.value == "T1"
    ]
    assert t1_shapes == [(3, 3, 2, 2), (3, 1, 2, 2)]


def test_loop_carried_value_is_scattered() -> None:
    module = scheduled_example("pipeline/cross_iteration.mlir", accumulate=False)
    (plan,) = lower_module(module)
    writes = [s for s in plan.walk() if isinstance(s, WriteBack)]
    assert writes and not any(w.accumulate for w in writes)


@pytest.mark.parametrize(
    "make",
    [
        lambda: scheduled_example("pipeline/four_tensor.mlir"),
        lambda: scheduled_example("pipeline/sibling_nests.mlir"),
        lambda: scheduled_sequant(
            "csv_ccsd_singles_residual_df.txt", "i,Κ", "i=2,a=2,μ̃=2,Κ=2"
        ),
    ],
)
@pytest.mark.parametrize("main", [False, True])
def test_mlir_opt_verifies_the_lowered_module(make, main: bool) -> None:
    module = make()
    lower_module(module, main=main)
    printed = verify_text(str(module))
    assert "func.func @" in printed
    assert ("func.func @main" in printed) == main


def test_missing_tools_fail_with_install_instructions(monkeypatch) -> None:
    monkeypatch.setattr(toolchain, "LLVM_DIRS", ())
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("MLIR_BIN_DIR", raising=False)
    with pytest.raises(ToolchainError, match="apt-get install -y mlir-22-tools"):
        require_toolchain()


def test_doubles_residual_is_accepted_by_mlir_opt() -> None:
    # The intended use: xdsl-opt -f sequant{...} eq.txt -p
    # 'classify-axes,schedule-batches,lower-schedule' prints MLIR that
    # mlir-opt accepts (static shapes; nothing runs).
    module = scheduled_sequant(
        "csv_ccsd_doubles_residual_df.txt", "i", "i=20,a=40,μ̃=40,Κ=80"
    )
    (plan,) = lower_module(module)
    assert plan.outputs == (plan.residual,)  # the 55 terms accumulate into one
    adds = [s for s in plan.walk() if isinstance(s, AddScaled)]
    assert len(adds) == 55
    printed = verify_text(str(module))
    assert printed.count("linalg.generic") >= 55


def test_a_tensor_no_memref_can_index_is_refused() -> None:
    # At the real extents the file-order forest of the doubles residual holds
    # a value of about 3e20 elements: MLIR's 64-bit strides cannot address it.
    # (About the file order's fold: order="file".)
    module = scheduled_sequant(
        "csv_ccsd_doubles_residual_df.txt",
        "i",
        "i=80,a=896,μ̃=896,Κ=1682",
        order="file",
    )
    with pytest.raises(
        LoweringError,
        match=r"would be a memref of .* elements .*more than a memref can index",
    ):
        lower_module(module)


def test_a_loop_binding_composites_of_two_extents_is_refused() -> None:
    """One loop over ``a`` binds a_1<i_1> (kind a<1>, extent 2) in one term
    and a_1<i_1,i_2> (kind a<2>, extent 3) in the other: two ranges, which
    one loop cannot run over; the lowering refuses, as the evaluator does."""
    from xdsl.utils.exceptions import VerifyException

    from axisflow.scheduling.evaluate import ScheduleRunError, run_schedule
    from axisflow.scheduling.memory import Sizing

    module = scheduled_text(MIXED_KINDS, "a", "i=2,a=4,a<1>=2,a<2>=3", "mixed")
    expected = (
        r"loop instance 0 over a binds a_1<i_1> of @v\d+ \(extent 2\) and "
        r"a_1<i_1,i_2> of @v\d+ \(extent 3\): one loop cannot run over two extents"
    )
    from axisflow.dialects.batch import ForestOp
    from axisflow.dialects.batch_model import forest_model
    from axisflow.dialects.sched import ScheduleOp
    from axisflow.dialects.sched_model import schedule_from_op

    forest = next(op for op in module.walk() if isinstance(op, ForestOp))
    model = forest_model(forest)
    schedule_op = next(op for op in forest.body.block.ops if isinstance(op, ScheduleOp))
    schedule, _ = schedule_from_op(schedule_op)
    with pytest.raises(ScheduleRunError, match=expected):
        run_schedule(model, schedule, {}, Sizing(model))
    # the deep check of the schedule, which the lowering runs first (and
    # check-schedules alone), refuses it at the sched.schedule op
    with pytest.raises(VerifyException, match="sched.schedule: " + expected):
        lower_module(module)


MIXED_KINDS = "A{a_1<i_1>;i_1} * B{i_1;a_1<i_1>} + C{a_1<i_1,i_2>;i_1,i_2} * D{i_1,i_2;a_1<i_1,i_2>}"
"""Two scalar terms whose batched index a_1 has two composite kinds."""
