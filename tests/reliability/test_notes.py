"""Notes from Python: a warning of class ``axisflow.notes.Note`` when the
never-worse guard drops loops or an option names a space the input lacks;
``quiet=True`` (the pass option's equivalent) says nothing."""

from __future__ import annotations

import warnings

import pytest

from axisflow.notes import LoopsDroppedNote, Note, UnusedOptionNote, collected_notes
from axisflow.pipeline.api import plan_expression, schedule_expression, schedule_module
from tests.conftest import EXAMPLES, example

ENERGY = (EXAMPLES / "sequant" / "csv_ccsd_energy_df.txt").read_text(encoding="utf-8")
REAL = "i=80,a=896,μ̃=896,Κ=1682"


def test_dropped_loops_are_a_note_with_both_peaks() -> None:
    with pytest.warns(LoopsDroppedNote) as caught:
        planned = schedule_expression(ENERGY, "Κ", extents=REAL, order="file")
    assert len(planned.dropped) == 2
    assert [str(w.message) for w in caught] == [
        "batch.forest @sequant: the never-worse guard dropped 2 loop groups; "
        "peak 153.2 GiB with them, 110.1 GiB without (report=table says which)"
    ]


def test_quiet_says_nothing_and_schedules_the_same() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", Note)
        quiet = plan_expression(ENERGY, "Κ", extents=REAL, order="file", quiet=True)
    with pytest.warns(LoopsDroppedNote):
        said = plan_expression(ENERGY, "Κ", extents=REAL, order="file")
    assert quiet.schedule == said.schedule and quiet.dropped == said.dropped


def test_every_loop_dropped_says_nothing_is_batched() -> None:
    module = example("pipeline/demotion.mlir")
    with collected_notes() as notes:
        result = schedule_module(module)
    assert result.forests[0].dropped
    (note,) = notes
    assert isinstance(note, LoopsDroppedNote)
    assert "dropped every batch loop (1 loop group): nothing is batched" in str(note)


def test_nothing_dropped_nothing_said() -> None:
    with collected_notes() as notes:
        schedule_expression(ENERGY, "i", extents="i=2,a=2,μ̃=2,Κ=2")
    assert notes == []


def test_a_block_of_a_space_the_forest_lacks_is_a_note() -> None:
    with collected_notes() as notes:
        schedule_expression(ENERGY, "i", extents="i=4,a=2,μ̃=2,Κ=2", block={"zz": 2})
    assert [type(n) for n in notes] == [UnusedOptionNote]
    assert str(notes[0]).startswith("block names 'zz', which is no index space of")


def test_notes_are_collected_once_and_other_warnings_pass() -> None:
    with (
        pytest.warns(DeprecationWarning, match="other"),
        collected_notes() as notes,
    ):
        for _ in range(3):
            warnings.warn(UnusedOptionNote("the same note"), stacklevel=1)
        warnings.warn("other", DeprecationWarning, stacklevel=1)
    assert [str(n) for n in notes] == ["the same note"]
