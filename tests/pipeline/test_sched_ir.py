"""The ``sched`` dialect: round trips and the schedule verifier."""

from __future__ import annotations

from io import StringIO

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from axisflow.dialects.sched import ScheduleOp
from axisflow.dialects.sched_model import schedule_from_op
from axisflow.passes.check_schedules import CheckSchedulesPass
from axisflow.pipeline.api import schedule_module
from tests.conftest import context, example, parse

EXAMPLES = [
    "pipeline/four_tensor.mlir",
    "pipeline/cross_iteration.mlir",
    "pipeline/sibling_nests.mlir",
    "pipeline/demotion.mlir",
]


def printed(module: ModuleOp, generic: bool = False) -> str:
    stream = StringIO()
    Printer(stream=stream, print_generic_format=generic).print_op(module)
    return stream.getvalue()


@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.parametrize("generic", [False, True])
def test_schedules_round_trip(name: str, generic: bool) -> None:
    module = example(name)
    result = schedule_module(module, block=2)
    text = printed(module, generic)
    again = Parser(context(), text).parse_module()
    again.verify()
    assert printed(again) == printed(module)
    schedule_op = next(op for op in again.walk() if isinstance(op, ScheduleOp))
    assert schedule_from_op(schedule_op)[0] == result.forests[0].schedule


FOREST = """
batch.forest @f {
  batch.space i extent 4 elem 8
  batch.space a extent 3 elem 8
  batch.value @P [i_1, a_1] leaf "P"
  batch.value @Q [a_1, a_2] leaf "Q"
  batch.value @Y [a_1] leaf "Y"
  batch.value @X [i_1, a_1] contracted [a_2] = @P [i_1, a_2] * @Q [a_2, a_1]
  batch.value @R [i_1] contracted [a_1] = @X [i_1, a_1] * @Y [a_1]
  batch.tree @t {
    batch.loop i_1 slot 0 {
      batch.use @R [i_1] {
        batch.use @X [i_1, a_1] {
          batch.use @P [i_1, a_2]
          batch.use @Q [a_2, a_1]
        }
        batch.use @Y [a_1]
      }
    }
  }
  sched.schedule rounds 1 {
%s
  }
}
"""

VALID = """
    sched.buffer @R bytes 32
    sched.loop over i instance 0 pass 0 block 1 {
      sched.build @X slice [i_1:0] bytes 24
      sched.build @R slice [i_1:0] bytes 8
      sched.scatter @R
    }
    sched.output @t = @R
"""


def checked(text: str) -> ModuleOp:
    """Parse, verify and run the deep schedule check (``check-schedules``)."""
    module = parse(text)
    CheckSchedulesPass().apply(context(), module)
    return module


def test_a_hand_written_schedule_verifies() -> None:
    checked(FOREST % VALID)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (VALID.replace("@X slice", "@Z slice"), "build of unknown value @Z"),
        (
            VALID.replace("bytes 24", "bytes 25"),
            "declares 25 bytes, but the forest's sizes give 24",
        ),
        (VALID.replace("pass 0", "pass 1"), "expected pass 0"),
        (
            VALID.replace("[i_1:0] bytes 24", "[a_1:0] bytes 24"),
            "loop instance 0 iterates i",
        ),
        (
            VALID.replace("[i_1:0] bytes 8", "[a_2:0] bytes 8"),
            "a_2 is not a slice mode",
        ),
        (VALID.replace("sched.scatter", "sched.accumulate"), "@R must be scattered"),
        (VALID.replace("    sched.output @t = @R\n", ""), "tree @t has no output"),
        (VALID.replace("@t = @R", "@t = @X"), "tree @t outputs @R, not @X"),
        (
            VALID.replace("sched.build @X slice [i_1:0] bytes 24\n", "").replace(
                "sched.buffer @R bytes 32",
                "sched.build @X bytes 96\n    sched.buffer @R bytes 32",
            ),
            None,
        ),
        (
            VALID.replace("sched.build @X slice [i_1:0] bytes 24\n", "")
            .replace(
                "sched.buffer @R bytes 32",
                "sched.build @X bytes 96\n    sched.buffer @R bytes 32",
            )
            .replace("sched.build @R slice [i_1:0] bytes 8", "sched.build @R bytes 32"),
            "loop instance 0 is left but binds no mode",
        ),
        (
            VALID.replace("sched.build @X slice [i_1:0] bytes 24\n", ""),
            "reads @X, which is not available here",
        ),
        (
            VALID.replace(
                "sched.build @R slice [i_1:0] bytes 8",
                "sched.build @R sum [a_1:0] bytes 32",
            ),
            "loop instance 0 iterates i",
        ),
    ],
)
def test_the_verifier_reports_broken_rules(body: str, message: str | None) -> None:
    text = FOREST % body
    if message is None:  # X built in full before the loop: valid
        checked(text)
        return
    with pytest.raises(VerifyException, match=message):
        checked(text)


def test_reading_before_the_producing_pass_closes_is_rejected() -> None:
    body = """
    sched.buffer @X bytes 96
    sched.buffer @R bytes 32
    sched.loop over i instance 0 pass 0 block 1 {
      sched.build @X slice [i_1:0] bytes 24
      sched.scatter @X
      sched.build @R slice [i_1:0] bytes 8
      sched.scatter @R
    }
    sched.output @t = @R
    """
    with pytest.raises(
        VerifyException, match="reads @X before the loop producing it closed"
    ):
        checked(FOREST % body)


def test_unaccumulated_partial_sums_are_rejected() -> None:
    body = """
    sched.loop over i instance 0 pass 0 block 1 {
      sched.build @X slice [i_1:0] bytes 24
      sched.build @R slice [i_1:0] bytes 8
    }
    sched.build @R bytes 32
    sched.output @t = @R
    """
    with pytest.raises(VerifyException, match="@R is built twice"):
        checked(FOREST % body)


def test_a_schedule_must_sit_in_a_forest() -> None:
    with pytest.raises(VerifyException, match=r"batch\.forest"):
        parse("sched.schedule rounds 1 {\n}")


def test_sizes_beyond_64_bits_round_trip() -> None:
    # 8 * (10**7)**3 bytes does not fit an i64: sizes are unbounded integers.
    module = parse(
        """
        batch.forest @big {
          batch.space i extent 10000000 elem 8
          batch.value @A [i_1, i_2] leaf "A"
          batch.value @B [i_2, i_3] leaf "B"
          batch.value @V [i_1, i_2, i_3] = @A [i_1, i_2] * @B [i_2, i_3]
          batch.tree @t {
            batch.use @V [i_1, i_2, i_3] {
              batch.use @A [i_1, i_2]
              batch.use @B [i_2, i_3]
            }
          }
        }
        """
    )
    result = schedule_module(module, accumulate=False)
    assert result.forests[0].report.unbatched_peak == 8 * 10**21
    text = printed(module)
    assert "sched.build @V bytes 8000000000000000000000" in text
    assert printed(parse(text)) == text
    assert printed(parse(printed(module, generic=True))) == text


def test_the_verifier_checks_structure_without_the_forest_model() -> None:
    # Verification (after every xdsl-opt pass) resolves symbols but leaves the
    # semantic rules, such as the byte sizes, to check-schedules.
    wrong_size = FOREST % VALID.replace("bytes 24", "bytes 25")
    parse(wrong_size)
    with pytest.raises(VerifyException, match="declares 25 bytes"):
        checked(wrong_size)
    with pytest.raises(VerifyException, match="build of unknown value @Z"):
        parse(FOREST % VALID.replace("@X slice", "@Z slice"))
    with pytest.raises(VerifyException, match="output of unknown tree @u"):
        parse(FOREST % VALID.replace("@t = @R", "@u = @R"))
