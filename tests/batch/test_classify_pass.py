"""The classify-axes pass on IR: roles attached, explain, idempotence, pipelines."""

from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path

from hypothesis import given, settings
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import PassPipeline
from xdsl.printer import Printer

from axisflow import Index, LoopRole, Occurrence, classify_axis
from axisflow.dialects.batch import (
    AxisReasonsAttr,
    AxisRolesAttr,
    ForestOp,
    LoopOp,
    UseOp,
    ValueOp,
)
from axisflow.passes.classify_axes import ClassifyAxesPass
from axisflow.universe import AXISFLOW_UNIVERSE
from tests.batch.forests import context, forests

FOUR_TENSOR = (Path(__file__).parents[2] / "examples" / "four_tensor.mlir").read_text(
    encoding="utf-8"
)


@dataclass
class Collected:
    """A value's occurrences, read from the IR by this test's own walk."""

    op: ValueOp
    occurrences: list[Occurrence] = field(default_factory=list[Occurrence])
    axes: dict[Index, None] = field(default_factory=dict[Index, None])


def collect(forest: ForestOp) -> tuple[dict[str, Collected], bool]:
    """Every use-site as an occurrence (ectx: the loops around its consumer)
    and every value's axes (loops around its use-sites); whether any loop
    has a slot. Forests without protos only (one frame for everything)."""
    found = {op.value_name: Collected(op) for op in forest.values()}
    has_slots = False

    def walk(op, loops, consumer_loops) -> None:
        nonlocal has_slots
        if isinstance(op, LoopOp):
            has_slots = has_slots or op.slot_value is not None
            inner = (*loops, (op.loop_index, op.slot_value))
            for child in op.items():
                walk(child, inner, consumer_loops)
        elif isinstance(op, UseOp):
            entry = found[op.value_name]
            entry.occurrences.append(
                Occurrence(
                    op.carried_indices,
                    [label for label, _ in consumer_loops],
                    [-1 if slot is None else slot for _, slot in consumer_loops],
                )
            )
            for label, _ in loops:
                entry.axes.setdefault(label, None)
            for child in op.items():
                walk(child, loops, loops)

    for tree in forest.trees():
        for item in tree.items():
            walk(item, (), ())
    return found, has_slots


def parse(text: str) -> ModuleOp:
    module = Parser(context(), text).parse_module()
    module.verify()
    return module


def show(module: ModuleOp) -> str:
    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def roles(module: ModuleOp) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for op in module.walk():
        if isinstance(op, ValueOp) and "roles" in op.attributes:
            attr = op.attributes["roles"]
            assert isinstance(attr, AxisRolesAttr)
            found[op.value_name] = {
                axis.full_label: role.value for axis, role in attr.as_dict().items()
            }
    return found


def test_four_tensor_example_of_the_note() -> None:
    module = parse(FOUR_TENSOR)
    ClassifyAxesPass().apply(context(), module)
    assert roles(module) == {
        "T1": {"b": "loop_local", "c": "loop_local"},
        "T2": {"b": "loop_local", "c": "loop_local"},
        "S": {"b": "loop_carried", "c": "reduction"},
        "B": {"b": "loop_local", "c": "loop_invariant"},
        "D": {"b": "loop_invariant", "c": "loop_local"},
        "C": {"b": "loop_invariant", "c": "loop_invariant"},
        "A": {"b": "loop_invariant", "c": "loop_local"},
    }


def test_explain_names_use_site_and_index() -> None:
    module = parse(FOUR_TENSOR)
    ClassifyAxesPass(explain=True).apply(context(), module)
    why = {
        op.value_name: op.attributes["why"]
        for op in module.walk()
        if isinstance(op, ValueOp)
    }
    s_why = why["S"]
    assert isinstance(s_why, AxisReasonsAttr)
    reasons = {axis.full_label: text for axis, text in s_why.as_dict().items()}
    assert reasons["c"] == "contracts c at its own node"
    assert reasons["b"] == "no enclosing loop of b at any use-site: a free result index"


def test_explain_for_a_free_read_names_the_use_site() -> None:
    text = """
    batch.forest {
      batch.value @A [i_1] leaf "A"
      batch.value @P [i_3, i_4] = @A [i_3] * @A [i_4]
      batch.tree @t {
        batch.loop i_3 {
          batch.use @P [i_3, i_4] {
            batch.use @A [i_3]
            batch.use @A [i_4]
          }
        }
      }
    }
    """
    module = parse(text)
    ClassifyAxesPass(explain=True).apply(context(), module)
    value = next(
        op for op in module.walk() if isinstance(op, ValueOp) and op.value_name == "A"
    )
    assert roles(module)["A"] == {"i_3": "loop_carried"}
    why = value.attributes["why"]
    assert isinstance(why, AxisReasonsAttr)
    assert why.as_dict()[Index.parse("i_3")] == (
        "use-site 1 of @A in tree @t [i_4] carries i_4, bound by no enclosing loop of i"
    )


def test_a_loop_between_node_and_consumer_makes_the_node_escape() -> None:
    # The loop encloses the A use-sites but not their consumer P: A is built
    # per iteration and read whole outside, so it must be assembled.
    text = """
    batch.forest {
      batch.value @A [i_1] leaf "A"
      batch.value @P [i_3, i_4] = @A [i_3] * @A [i_4]
      batch.tree @t {
        batch.use @P [i_3, i_4] {
          batch.loop i_3 {
            batch.use @A [i_3]
          }
          batch.use @A [i_4]
        }
      }
    }
    """
    module = parse(text)
    ClassifyAxesPass().apply(context(), module)
    assert roles(module) == {"A": {"i_3": "loop_carried"}}


def test_pass_agrees_with_classify_axis_on_collected_occurrences() -> None:
    module = parse(FOUR_TENSOR)
    forest = next(op for op in module.walk() if isinstance(op, ForestOp))
    info, _ = collect(forest)
    s = info["S"]
    assert s.occurrences == [Occurrence(s.op.result_indices, ())]
    t1 = info["T1"]
    assert t1.occurrences[0].ectx == (Index.parse("b"), Index.parse("c"))
    role = classify_axis(
        t1.op.result_indices, t1.op.contracted_indices, Index.parse("b"), t1.occurrences
    )
    assert role is LoopRole.LOOP_LOCAL


def test_fusion_slots_make_binding_instance_aware() -> None:
    template = """
    batch.forest {{
      batch.value @x [i_1, a_1] leaf "x"
      batch.value @y [a_1] leaf "y"
      batch.value @X [i_1] contracted [a_1] = @x [i_1, a_1] * @y [a_1]
      batch.value @Z [i_1] = @X [i_1] * @X [i_1]
      batch.tree @t0 {{
        batch.loop i_1 {slot0} {{
          batch.use @Z [i_1] {{
            batch.use @X [i_1] {{
              batch.use @x [i_1, a_1]
              batch.use @y [a_1]
            }}
            batch.use @X [i_1] {{
              batch.use @x [i_1, a_1]
              batch.use @y [a_1]
            }}
          }}
        }}
      }}
      batch.tree @t1 {{
        batch.loop i_1 {slot1} {{
          batch.use @Z [i_1] {{
            batch.use @X [i_1] {{
              batch.use @x [i_1, a_1]
              batch.use @y [a_1]
            }}
            batch.use @X [i_1] {{
              batch.use @x [i_1, a_1]
              batch.use @y [a_1]
            }}
          }}
        }}
      }}
    }}
    """
    fused = parse(template.format(slot0="slot 0", slot1="slot 0"))
    ClassifyAxesPass().apply(context(), fused)
    assert roles(fused)["X"] == {"i_1": "loop_local"}
    siblings = parse(template.format(slot0="slot 0", slot1="slot 1"))
    ClassifyAxesPass().apply(context(), siblings)
    assert roles(siblings)["X"] == {"i_1": "loop_carried"}
    unslotted = parse(template.format(slot0="", slot1=""))
    ClassifyAxesPass().apply(context(), unslotted)
    assert roles(unslotted)["X"] == {"i_1": "loop_local"}


def test_sliced_modes_make_proto_indices_count() -> None:
    text = """
    batch.forest {
      batch.value @t [a_1<i_1>, i_1] leaf "t"
      batch.value @f [a_1<i_1>] leaf "f"
      batch.value @r [i_1] contracted [a_1<i_1>] = @t [a_1<i_1>, i_1] * @f [a_1<i_1>]
      batch.tree @term {
        batch.loop i_1 {
          batch.use @r [i_1] {
            batch.use @t [a_1<i_1>, i_1]
            batch.use @f [a_1<i_1>]
          }
        }
      }
    }
    """
    module = parse(text)
    ClassifyAxesPass().apply(context(), module)
    # f carries only a_1<i_1>; i_1 is sliced at its every occurrence, so the
    # proto is an i slot bound by the loop.
    assert roles(module)["f"] == {"i_1": "loop_local"}
    assert roles(module)["r"] == {"i_1": "loop_carried"}


def test_usable_from_a_pass_pipeline_with_the_plugin_table() -> None:
    module = parse(FOUR_TENSOR)
    pipeline = PassPipeline.parse_spec(
        AXISFLOW_UNIVERSE.all_passes, "classify-axes{explain=true}"
    )
    pipeline.apply(context(), module)
    assert roles(module)["S"] == {"b": "loop_carried", "c": "reduction"}
    assert (
        "why" in next(op for op in module.walk() if isinstance(op, ValueOp)).attributes
    )


def test_rerun_replaces_stale_explanations() -> None:
    module = parse(FOUR_TENSOR)
    ClassifyAxesPass(explain=True).apply(context(), module)
    ClassifyAxesPass(explain=False).apply(context(), module)
    assert all(
        "why" not in op.attributes for op in module.walk() if isinstance(op, ValueOp)
    )


@settings(max_examples=60, deadline=None)
@given(forests())
def test_pass_is_idempotent(module: ModuleOp) -> None:
    ClassifyAxesPass(explain=True).apply(context(), module)
    once = show(module)
    ClassifyAxesPass(explain=True).apply(context(), module)
    assert show(module) == once


@settings(max_examples=60, deadline=None)
@given(forests())
def test_print_parse_round_trip(module: ModuleOp) -> None:
    ClassifyAxesPass(explain=True).apply(context(), module)
    text = show(module)
    again = parse(text)
    assert show(again) == text
    assert again.is_structurally_equivalent(module)


@settings(max_examples=60, deadline=None)
@given(forests())
def test_generic_form_round_trip(module: ModuleOp) -> None:
    ClassifyAxesPass().apply(context(), module)
    out = StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    again = parse(out.getvalue())
    assert show(again) == show(module)


@settings(max_examples=60, deadline=None)
@given(forests())
def test_every_role_matches_the_pure_decision_tree(module: ModuleOp) -> None:
    ClassifyAxesPass().apply(context(), module)
    forest = next(op for op in module.walk() if isinstance(op, ForestOp))
    info, has_slots = collect(forest)
    found = roles(module)
    for name, value in info.items():
        expected = {
            axis.full_label: classify_axis(
                value.op.result_indices,
                value.op.contracted_indices,
                axis,
                value.occurrences,
                (),
                (lambda o, i: o.slot_of(i)) if has_slots else None,
            ).value
            for axis in value.axes
        }
        assert found.get(name, {}) == expected


def test_gc_paused_restores_the_collector_state() -> None:
    import gc

    from axisflow.gc_pause import gc_paused

    assert gc.isenabled()
    try:
        with gc_paused():
            assert not gc.isenabled()
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
