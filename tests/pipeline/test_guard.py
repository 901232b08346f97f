"""Never worse than not batching: loops that raise the peak are dropped."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from axisflow.pipeline import schedule_expression
from axisflow.pipeline.evaluate import compare
from axisflow.pipeline.guard import schedule_never_worse
from axisflow.pipeline.schedule import check_schedule
from axisflow.sequant import parse
from tests.conftest import EXAMPLES

REAL = "i=80,a=896,μ̃=896,Κ=1682"


def test_batching_the_energy_over_kappa_no_longer_raises_the_peak() -> None:
    text = (EXAMPLES / "sequant" / "csv_ccsd_energy_df.txt").read_text(encoding="utf-8")
    # The figures are on the file-order forest (order="file").
    planned = schedule_expression(
        text,
        "Κ",
        extents=REAL,
        elem=8,
        never_worse=False,
        accumulate=False,
        order="file",
    )
    # the scheduler alone: 1.39x the unbatched peak
    assert planned.report.scheduled_peak > 1.3 * planned.report.unbatched_peak
    guarded = schedule_never_worse(planned.model, max_rounds=16)
    assert guarded.first_peak == planned.report.scheduled_peak
    assert guarded.scheduled_peak <= guarded.unbatched_peak
    assert guarded.unbatched_peak == planned.report.unbatched_peak
    assert guarded.dropped, "something had to be dropped"
    first = guarded.dropped[0]
    assert first.space == "Κ" and first.peak_with == guarded.first_peak
    assert first.peak_without < first.peak_with
    assert "dropped: peak 153.2 GiB with it" in str(first)
    assert check_schedule(guarded.forest, guarded.result.schedule) == []
    small = {"i": 2, "a": 2, "μ̃": 2, "Κ": 3}
    assert compare(guarded.forest, guarded.result.schedule, extents=small).agrees


def test_a_policy_that_helps_is_kept_whole() -> None:
    text = (EXAMPLES / "sequant" / "csv_ccsd_energy_df.txt").read_text(encoding="utf-8")
    planned = schedule_expression(
        text, "i", extents=REAL, elem=8, never_worse=False, accumulate=False
    )
    guarded = schedule_never_worse(planned.model, max_rounds=16)
    assert guarded.dropped == []
    assert guarded.scheduled_peak == planned.report.scheduled_peak


INDICES = ["i_1", "i_2", "i_3", "a_1", "a_2", "Κ_1"]


@st.composite
def expressions(draw: st.DrawFn) -> str:
    terms: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        tensors: list[str] = []
        for k in range(draw(st.integers(2, 4))):
            chosen = draw(
                st.lists(st.sampled_from(INDICES), min_size=1, max_size=3, unique=True)
            )
            split = draw(st.integers(0, len(chosen)))
            tensors.append(
                f"T{k}{{{','.join(chosen[:split])};{','.join(chosen[split:])}}}"
            )
        terms.append(" * ".join(tensors))
    return " + ".join(terms)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    expressions(), st.sampled_from(["i", "a", "Κ", "i,Κ", "a,i"]), st.integers(0, 99)
)
def test_the_guarded_peak_never_exceeds_the_unbatched_one(
    text: str, batch: str, seed: int
) -> None:
    keys = parse(text).space_keys()
    assume(all(space in keys for space in batch.split(",")))
    sizes = {"i": 3, "a": 2, "Κ": 4}
    extents = ",".join(f"{k}={sizes[k]}" for k in keys)
    planned = schedule_expression(
        text, batch, extents=extents, elem=8, never_worse=False, accumulate=False
    )
    guarded = schedule_never_worse(planned.model, max_rounds=16)
    assert guarded.scheduled_peak <= guarded.unbatched_peak
    assert check_schedule(guarded.forest, guarded.result.schedule) == []
    assert compare(guarded.forest, guarded.result.schedule, seed=seed).agrees
