"""Memory accounting rule by rule: size overrides, live ranges of hand-made
schedules (pieces, buffers, residual groups, operator steps), the peak sweep,
the unbatched schedule with a residual layout, and the report's exact text.

Each expected figure follows from the rules in ``docs/pipeline.md`` (section
3) by hand; the schedules are written out item by item so that every program
position is known.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from axisflow.forest.builder import ForestBuilder, loop, use
from axisflow.forest.model import Forest
from axisflow.pipeline import schedule_module
from axisflow.residual import Operator, OperatorGroup, ResidualLayout
from axisflow.roles.index import Index
from axisflow.scheduling.memory import (
    DEFAULT_ELEM,
    DEFAULT_EXTENT,
    Lifetime,
    MemoryReport,
    Peak,
    Sizing,
    ValueMemory,
    display_width,
    forest_flops,
    format_bytes,
    format_count,
    lifetimes,
    memory_report,
    peak,
    residual_name,
    unbatched_schedule,
)
from axisflow.scheduling.schedule import (
    Apply,
    Bind,
    Buffer,
    Build,
    LoopPass,
    Output,
    Residual,
    Schedule,
    Write,
)
from tests.conftest import example

DOCS = Path(__file__).resolve().parents[2] / "docs"
I1, A1 = Index.parse("i_1"), Index.parse("a_1")


def two_trees() -> Forest:
    """i (extent 3) and a (extent 5), 8-byte elements; V and W over i_1,
    both A[i_1 a_1] * B[a_1]; trees t0 (V, in a loop over i), t1 (W) and a
    bare number c."""
    builder = ForestBuilder("two").space("i", 3).space("a", 5)
    builder.input("A", "i_1 a_1").input("B", "a_1")
    builder.contraction("V", "i_1", "A i_1 a_1", "B a_1")
    builder.contraction("W", "i_1", "A i_1 a_1", "B a_1")
    builder.tree(
        "t0", loop("i", 0, use("V", "i_1", use("A", "i_1 a_1"), use("B", "a_1")))
    )
    builder.tree("t1", use("W", "i_1", use("A", "i_1 a_1"), use("B", "a_1")))
    builder.tree("c", coeff=2)
    return builder.finish()


def spans(found: list[Lifetime]) -> list[tuple[str, str, int, int, int]]:
    return [(f.value, f.kind, f.bytes, f.start, f.end) for f in found]


# --------------------------------------------------------------------------
# Sizes
# --------------------------------------------------------------------------


def test_overrides_reach_spaces_and_composite_kinds() -> None:
    builder = ForestBuilder().space("a", 5, composites=((2, 7),)).space("i", 3)
    builder.input("C", "a_1<i_1,i_2> m_1")
    forest = builder.finish()
    value = forest.values["C"]
    # a_1<i_1,i_2> takes its kind's 7, m the default, i_1 and i_2 their 3.
    assert Sizing(forest).elements(value) == 7 * DEFAULT_EXTENT * 3 * 3
    assert Sizing(forest).mode_extent(value.modes[0]) == 7
    over = Sizing(forest, {"i": 2, "a<2>": 6, "m": 5})
    assert over.elements(value) == 6 * 5 * 2 * 2
    assert over.extent("i") == 2 and over.extent("a") == 5
    assert not over.is_default("m") and Sizing(forest).is_default("m")
    # A plain override of a leaves the composite kind's own extent alone.
    assert Sizing(forest, {"a": 9}).elements(value) == 7 * DEFAULT_EXTENT * 3 * 3


def test_bad_overrides_are_refused_naming_the_key() -> None:
    forest = two_trees()
    with pytest.raises(
        TypeError, match=r"^extents must be a mapping of space key to extent, got"
    ):
        Sizing(forest, [("i", 2)])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^extents\['i'\] must be positive, got 0$"):
        Sizing(forest, {"i": 0})
    with pytest.raises(TypeError, match=r"^extents\['a'\] must be a positive int"):
        Sizing(forest, {"a": "2"})  # type: ignore[dict-item]


def test_a_slice_of_a_loop_without_a_recorded_block_is_one_element() -> None:
    forest = two_trees()
    sizing, value = Sizing(forest), forest.values["A"]
    assert sizing.elements(value, (Bind(I1, 0),), {0: 2}) == 2 * 5
    assert sizing.elements(value, (Bind(I1, 0),), {0: 10}) == 3 * 5  # min(block, 3)
    assert sizing.elements(value, (Bind(I1, 7),), {0: 2}) == 1 * 5
    assert sizing.elements(value, (Bind(I1, 0),)) == 1 * 5


def test_flops_count_contractions_only() -> None:
    forest = two_trees()
    sizing = Sizing(forest)
    assert sizing.flops(forest.values["A"]) == 0  # an input costs nothing
    assert sizing.flops(forest.values["V"]) == 3 * 5  # node modes i_1, a_1
    assert forest_flops(forest) == 2 * 3 * 5
    assert forest_flops(forest, Sizing(forest, {"a": 2})) == 2 * 3 * 2


def test_residual_bytes_follow_the_element_size_rule() -> None:
    builder = ForestBuilder().space("i", 3, elem=4).space("a", 5).space("k", 2, elem=2)
    builder.input("X", "i_1 a_1")
    sizing = Sizing(builder.finish())
    assert sizing.mode_bytes((I1, A1)) == 4 * 3 * 5  # i declares 4, a none
    assert sizing.mode_bytes((A1,)) == 4 * 5  # the forest's largest elem
    assert sizing.mode_bytes((Index.parse("k_1"), A1)) == 2 * 2 * 5
    assert sizing.mode_bytes(()) == 4  # a scalar residual: one element
    plain = Sizing(two_trees())
    assert plain.mode_bytes((I1, A1)) == DEFAULT_ELEM * 3 * 5


# --------------------------------------------------------------------------
# Live ranges of hand-made schedules
# --------------------------------------------------------------------------


def direct_residual_schedule(block: int) -> Schedule:
    """V's pieces added straight into the residual inside a loop over i."""
    return Schedule(
        [
            Residual(0, (I1,), 24),  # 1
            LoopPass(
                0,
                "i",
                0,
                block=block,
                body=[  # 2
                    Build("V", slices=(Bind(I1, 0),)),  # 3
                    Write("V", False, into=0, tree="t0"),  # 4
                ],
            ),  # closes at 5
            Output("t0", "V", into=0, direct=True),  # 6
            Output("c", None),  # 7
        ]
    )


def test_a_residual_lives_from_the_loop_around_its_first_write_to_the_end() -> None:
    forest = two_trees()
    found = lifetimes(forest, direct_residual_schedule(1))
    assert spans(found) == [
        ("V", "piece", 8, 3, 4),
        ("residual", "residual", 24, 2, 7),
    ]
    assert peak(found) == Peak(32, 3, found)
    # Blocks of two: the piece holds two rows of V.
    assert spans(lifetimes(forest, direct_residual_schedule(2)))[0] == (
        "V",
        "piece",
        16,
        3,
        4,
    )


def operator_group_schedule() -> Schedule:
    """t0 accumulates into group 1, whose operator adds it into group 0; t1
    adds into group 0 directly; the bare number c closes the program."""
    operator = Operator.make("Ŝ", [I1], [A1])
    return Schedule(
        [
            Residual(0, (I1,), 24),  # 1
            Residual(1, (I1,), 24),  # 2
            Build("V"),  # 3
            Output("t0", "V", into=1),  # 4
            Apply(1, (operator,), 24),  # 5
            Build("W"),  # 6
            Output("t1", "W", into=0),  # 7
            Apply(0, (operator,), 24),  # 8
            Output("c", None),  # 9
        ]
    )


def test_operator_steps_release_their_group_and_start_the_result() -> None:
    found = lifetimes(two_trees(), operator_group_schedule())
    assert spans(found) == [
        ("V", "value", 24, 3, 4),
        # Group 1: from its first add to its Apply, which releases it.
        ("residual#1", "residual", 24, 4, 5),
        # Group 0 first receives at group 1's Apply; it stays to the end.
        ("residual", "residual", 24, 5, 9),
        ("residual#1", "operator", 24, 5, 5),
        ("W", "value", 24, 6, 7),
        ("residual", "operator", 24, 8, 8),
    ]
    # At 5: V released (after 4), both residuals and one operator residual.
    assert peak(found).bytes == 3 * 24 and peak(found).position == 5


def test_a_buffer_lives_from_its_allocation_to_its_last_read() -> None:
    forest = two_trees()
    schedule = Schedule(
        [
            Buffer("V", zero=False),  # 1
            LoopPass(
                0,
                "i",
                0,
                block=1,
                body=[  # 2
                    Build("V", slices=(Bind(I1, 0),)),  # 3
                    Write("V", False),  # 4
                ],
            ),  # closes at 5
            Output("t0", "V"),  # 6
            Build("W"),  # 7
            Output("t1", "W"),  # 8
            Output("c", None),  # 9
        ]
    )
    found = lifetimes(forest, schedule)
    assert spans(found) == [
        ("V", "buffer", 24, 1, 6),
        ("V", "piece", 8, 3, 4),
        ("W", "value", 24, 7, 8),
    ]
    assert peak(found) == Peak(32, 3, found[:2])


def test_the_peak_sweep() -> None:
    first = Lifetime("x", "value", 10, 1, 1)
    second = Lifetime("y", "value", 10, 3, 3)
    # Equal totals: the first position that reaches the peak is reported.
    assert peak([first, second]) == Peak(10, 1, [first])
    # A release at p + 1 comes before an allocation at p + 1.
    after = Lifetime("z", "value", 10, 2, 2)
    assert peak([first, after]) == Peak(10, 1, [first])
    # Nothing with bytes: a peak of 0 with nothing live.
    assert peak([Lifetime("e", "value", 0, 0, 2)]) == Peak(0, 0, [])
    assert peak([]) == Peak(0, 0, [])


def test_residual_names() -> None:
    assert [residual_name(g) for g in (0, 1, 2)] == [
        "residual",
        "residual#1",
        "residual#2",
    ]


# --------------------------------------------------------------------------
# The unbatched schedule
# --------------------------------------------------------------------------


def test_the_unbatched_schedule_with_operator_groups() -> None:
    forest = two_trees()
    operator = Operator.make("Ŝ", [I1], [A1])
    layout = ResidualLayout(
        (I1,),
        (I1,),
        (OperatorGroup((operator,), (0,)), OperatorGroup((), (1, 2))),
    )
    sizing = Sizing(forest, {"i": 2})
    schedule = unbatched_schedule(forest, sizing, layout)
    assert schedule.items == [
        Residual(0, (I1,), 16),
        Residual(1, (I1,), 16),
        Build("V", bytes=16),
        Output("t0", "V", 0),
        Build("W", bytes=16),
        Output("t1", "W", 1),
        Output("c", None, 1),
        Apply(0, (operator,), 16),  # group 0's operators, in place
        Apply(1, (), 16),  # group 1 has none, but is added into group 0
    ]
    assert schedule.rounds == 0
    assert unbatched_schedule(forest).items == [
        Build("V", bytes=24),
        Output("t0", "V", None),
        Build("W", bytes=24),
        Output("t1", "W", None),
        Output("c", None, None),
    ]


# --------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------


def documented_table(title: str) -> str:
    """The fenced block of ``docs/pipeline.md`` that starts with ``title``."""
    text = (DOCS / "pipeline.md").read_text(encoding="utf-8")
    match = re.search(r"```\n(" + re.escape(title) + r"\n.*?)```", text, re.S)
    assert match, f"docs/pipeline.md shows no block starting {title!r}"
    return match[1]


def test_the_documented_four_tensor_table_is_what_the_pipeline_prints() -> None:
    (forest,) = schedule_module(example("pipeline/four_tensor.mlir")).forests
    assert forest.report.table() == documented_table(
        "memory of batch.forest @four_tensor"
    )


def test_the_four_tensor_report_as_json() -> None:
    (forest,) = schedule_module(example("pipeline/four_tensor.mlir")).forests
    report = forest.report
    data = report.to_json()
    assert list(data) == [
        "forest",
        "extents",
        "default_extents",
        "elem",
        "blocks",
        "rounds",
        "input_bytes",
        "flops",
        "unbatched_peak_bytes",
        "scheduled_peak_bytes",
        "unbatched_live_at_peak",
        "scheduled_live_at_peak",
        "residual_bytes",
        "share",
        "extra_flops",
        "recomputed_flops",
        "lower_bound_bytes",
        "lower_bound_reason",
        "budget_bytes",
        "front",
        "scheduler_peak_bytes",
        "dropped_loops",
        "values",
    ]
    assert data["forest"] == "four_tensor"
    assert data["extents"] == dict(a=2, b=3, c=4, d=2, e=3, f=2, i=2, j=3, k=2, l=2)
    assert (data["default_extents"], data["elem"]) == ([], 8)
    assert (data["blocks"], data["rounds"]) == ({"b": 1, "c": 1}, 1)
    assert (data["input_bytes"], data["flops"]) == (1120, 864)
    assert (data["unbatched_peak_bytes"], data["scheduled_peak_bytes"]) == (960, 432)
    assert data["unbatched_live_at_peak"] == ["@T1 value", "@T2 value"]
    assert data["scheduled_live_at_peak"] == [
        "@T2 piece",
        "@S piece",
        "@residual residual",
    ]
    assert (data["residual_bytes"], data["scheduler_peak_bytes"]) == (288, 432)
    # schedule-batches reads the forest as given: whether shared values were
    # rebuilt per tree is not known there, and nothing extra was computed.
    assert (data["share"], data["extra_flops"]) == (None, 0)
    assert data["dropped_loops"] == []
    assert data["values"] == [
        {
            "name": "T1",
            "modes": ["b", "c", "d", "f"],
            "full_bytes": 384,
            "piece_bytes": 32,
            "buffer_bytes": None,
            "placement": ["b#0:slice", "c#1:slice"],
            "demoted_instances": [],
        },
        {
            "name": "T2",
            "modes": ["b", "c", "j", "k"],
            "full_bytes": 576,
            "piece_bytes": 48,
            "buffer_bytes": None,
            "placement": ["b#0:slice", "c#1:slice"],
            "demoted_instances": [],
        },
        {
            "name": "S",
            "modes": ["a", "b", "i", "j"],
            "full_bytes": 288,
            "piece_bytes": 96,
            "buffer_bytes": None,
            "placement": ["b#0:scatter", "c#1:accumulate"],
            "demoted_instances": [],
        },
    ]
    text = report.json_text()
    assert text.splitlines()[:2] == ["{", '  "forest": "four_tensor",']
    assert json.loads(text) == data


def test_json_text_keeps_labels_readable() -> None:
    report = hand_report(forest="Κ")
    assert '"forest": "Κ"' in report.json_text()


def test_the_report_follows_size_overrides() -> None:
    """memory_report sizes the unbatched program (residual included), the
    scheduled one and the multiply-adds with the sizing it is given, not
    with the forest's own extents."""
    forest = two_trees()
    sizing = Sizing(forest, {"i": 10, "a": 10})
    layout = ResidualLayout((I1,), (I1,), (OperatorGroup((), (0, 1, 2)),))
    report = memory_report(forest, direct_residual_schedule(4), sizing, layout)
    assert report.extents == {"a": 10, "i": 10}
    # what the schedule performs: it builds V only (10 x 10), in blocks of 4
    # rows that cover i's 10
    assert report.flops == 10 * 10
    # Unbatched: the residual (80 B) from t0's output, V (80 B) before it,
    # then W (80 B): one value and the residual at a time.
    assert report.unbatched_peak == 80 + 80
    assert report.unbatched_live == ["@V value", "@residual residual"]
    # Scheduled: the 24 B recorded for the residual plus a piece of 4 rows.
    assert report.scheduled_peak == 24 + 8 * 4
    assert report.residual_bytes == 80
    assert report.blocks == {"i": 4}
    assert report.values[0] == ValueMemory(
        "V", ["i_1"], 80, 32, None, ["i#0:scatter"], []
    )
    without = memory_report(forest, direct_residual_schedule(4), sizing)
    assert (without.unbatched_peak, without.residual_bytes) == (80, 0)


def test_a_buffer_kept_to_the_block_of_its_loop() -> None:
    """A buffer inside a loop over i, sliced by it: the value is a slice
    there (not a scatter), and its buffer holds one block."""
    forest = two_trees()
    sliced = (Bind(I1, 0),)
    schedule = Schedule(
        [
            LoopPass(
                0,
                "i",
                0,
                block=2,
                body=[
                    Buffer("V", slices=sliced),  # 2
                    Build("V", slices=sliced),  # 3
                    Write("V", False),  # 4
                    Output("t0", "V"),  # 5
                ],
            ),
            Build("W"),
            Output("t1", "W"),
        ]
    )
    assert spans(lifetimes(forest, schedule))[:2] == [
        ("V", "buffer", 16, 2, 5),
        ("V", "piece", 16, 3, 4),
    ]
    (v, _) = memory_report(forest, schedule).values
    assert (v.placement, v.piece_bytes, v.buffer_bytes) == (["i#0:slice"], 16, 16)


def test_a_value_under_a_loop_it_does_not_slice_is_rebuilt() -> None:
    forest = two_trees()
    schedule = Schedule(
        [
            LoopPass(0, "i", 0, body=[Build("V"), Output("t0", "V")]),
            Build("W"),
            Output("t1", "W"),
        ]
    )
    report = memory_report(forest, schedule)
    assert [(v.name, v.placement) for v in report.values] == [
        ("V", ["i#0:rebuild"]),
        ("W", []),
    ]


def test_a_loop_the_forest_does_not_know_is_reported_under_a_question_mark() -> None:
    forest = two_trees()
    schedule = Schedule(
        [
            LoopPass(9, "i", 0, block=2, body=[Build("V"), Output("t0", "V")]),
            Build("W"),
            Output("t1", "W"),
        ]
    )
    assert memory_report(forest, schedule).blocks == {"?": 2}


def test_composite_kinds_and_the_residual_in_the_report() -> None:
    builder = ForestBuilder("k").space("a", 5, composites=((1, 3),)).space("i", 2)
    builder.input("C", "a_1<i_1> i_1").input("D", "i_1")
    builder.contraction("E", "a_1<i_1>", "C a_1<i_1> i_1", "D i_1")
    builder.tree("t", use("E", "a_1<i_1>", use("C", "a_1<i_1> i_1"), use("D", "i_1")))
    forest = builder.finish()
    layout = ResidualLayout((I1,), (I1,), (OperatorGroup((), (0,)),))
    report = memory_report(forest, unbatched_schedule(forest), None, layout)
    assert report.extents == {"a": 5, "i": 2, "a<1>": 3}
    assert report.residual_bytes == 8 * 2
    assert memory_report(forest, unbatched_schedule(forest)).residual_bytes == 0


# --------------------------------------------------------------------------
# The table's text
# --------------------------------------------------------------------------


def hand_report(**changes: object) -> MemoryReport:
    fields: dict[str, object] = dict(
        forest="f",
        extents={"i": 3, "a": 4},
        default_extents=["a"],
        elem=8,
        blocks={"i": 2},
        rounds=3,
        values=[
            ValueMemory("V", ["i_1", "a_1"], 96, 64, 96, ["i#0:scatter"], [0]),
            ValueMemory("s", [], 8, 8, None, [], []),
        ],
        input_bytes=2048,
        unbatched_peak=3000,
        scheduled_peak=1000,
        flops=1234567,
        unbatched_live=["@V value"],
        scheduled_live=["@V buffer", "@V piece"],
    )
    fields.update(changes)
    return MemoryReport(**fields)  # type: ignore[arg-type]


def test_the_table_of_a_report_by_hand() -> None:
    assert hand_report().table() == (
        "memory of batch.forest @f\n"
        "  extents: i=3, a=4*   (* = default extent)\n"
        "  element size: 8 B (default for values without a sized space)\n"
        "  blocks: i=2   scheduling rounds: 3\n"
        "  value  modes     full  per piece  buffer  loops\n"
        "  @V     i_1 a_1   96 B  64 B       96 B    i#0:scatter\n"
        "  @s     (scalar)  8 B   8 B        -       -\n"
        "  multiply-adds: 1.235e+06 (1234567)\n"
        "  inputs (not in the peaks): 2 KiB\n"
        "  peak unbatched: 2.93 KiB  live: @V value\n"
        "  peak scheduled: 1000 B (0.333x of unbatched)  live: @V buffer, @V piece\n"
    )


def test_the_table_says_what_rebuilding_shared_values_cost() -> None:
    # share="tree": 1234567 multiply-adds of which 234567 are the rebuilt
    # copies, +23.5% of the 1000000 the shared forest needs.
    table = hand_report(share="tree", extra_flops=234567).table()
    assert (
        "  multiply-adds: 1.235e+06 (1234567) (values shared by several trees "
        "rebuilt in each: 234567 more, +23.5%)\n"
    ) in table
    # Nothing shared before rebuilding (every multiply-add is a copy): "+0".
    everything = hand_report(share="tree", extra_flops=1234567).table()
    assert "rebuilt in each: 1.235e+06 (1234567) more, +0)\n" in everything
    # share="forest" (or unknown) prints no such note.
    for share in ("forest", None):
        plain = hand_report(share=share, extra_flops=234567).table()
        assert "  multiply-adds: 1.235e+06 (1234567)\n" in plain


def test_the_table_of_an_empty_report_with_dropped_loops() -> None:
    dropped = [{"reason": f"loop {k} dropped"} for k in range(10)]
    report = hand_report(
        forest=None,
        extents={},
        default_extents=[],
        blocks={},
        values=[],
        unbatched_peak=0,
        scheduled_peak=0,
        unbatched_live=[],
        scheduled_live=[],
        residual_bytes=1536,
        dropped=dropped,
        first_peak=4096,
        flops=999999,
    )
    assert report.table() == (
        "memory of batch.forest (unnamed forest)\n"
        "  extents: (none)\n"
        "  element size: 8 B (default for values without a sized space)\n"
        "  blocks: -   scheduling rounds: 3\n"
        "  value  modes  full  per piece  buffer  loops\n"
        "  multiply-adds: 999999\n"
        "  inputs (not in the peaks): 2 KiB\n"
        "  peak unbatched: 0 B  live: -\n"
        "  peak scheduled: 0 B  live: -\n"
        "  residual buffer: 1.5 KiB (every tree adds into it)\n"
        "  loops dropped (they raised the peak; 4 KiB before): 10\n"
        + "".join(f"    loop {k} dropped\n" for k in range(8))
        + "    ... and 2 more\n"
    )
    nine = hand_report(dropped=dropped[:9]).table()
    assert nine.endswith("    loop 7 dropped\n    ... and 1 more\n")
    eight = hand_report(dropped=dropped[:8]).table()
    assert eight.endswith("    loop 7 dropped\n")
    assert "before): 8\n" in eight and "0 B before" in eight


# --------------------------------------------------------------------------
# Numbers for people
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1 KiB"),
        (1025, "1.001 KiB"),
        (1024**2 - 1, "1024 KiB"),
        (1024**2, "1 MiB"),
        (5 * 1024**2, "5 MiB"),
        (1024**3, "1 GiB"),
        (7 * 1024**4, "7 TiB"),
        (1024**5, "1 PiB"),
        (2 * 1024**6, "2048 PiB"),
        # 2**999 PiB and more: the count is written with logarithms.
        (2**1048, "2.679e+300 PiB"),
        (2**1050, "1.072e+301 PiB"),
        (3 * 2**1060, "3.292e+304 PiB"),
    ],
)
def test_format_bytes_at_each_unit_boundary(size: int, shown: str) -> None:
    assert format_bytes(size) == shown


def test_format_count_is_exact_below_a_million() -> None:
    assert format_count(999999) == "999999"
    assert format_count(10**6) == "1e+06 (1000000)"
    assert format_count(1771561) == "1.772e+06 (1771561)"


def test_display_width_of_invisible_and_wide_characters() -> None:
    assert display_width("a\u20dd") == 1  # an enclosing circle (Me) takes none
    assert display_width("a\u200db") == 2  # a zero-width joiner (Cf) takes none
    assert display_width("\uff21") == 2  # FULLWIDTH LATIN CAPITAL LETTER A (F)
