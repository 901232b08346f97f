"""A bounded fuzz campaign: every mutated bundled input through every entry
point ends in success or a clean, located diagnostic within the time limit.

About 430 inputs, well under a minute; ``make fuzz`` runs a longer one.
"""

from __future__ import annotations

import random
import tempfile
import threading
from pathlib import Path

import pytest

import axisflow.cli

from .fuzzing import (
    ENTRY_POINTS,
    ERROR_PREFIX,
    EXAMPLES,
    OUTCOMES,
    TEXT_MUTATIONS,
    EntryPoint,
    Tool,
    api_campaign,
    campaign,
    input_bytes,
    mutate,
    run_once,
    table,
)

SEED = 15
# Seconds per input: a hang guard, far above any real run. The planner's
# search checks at most ``planner.MAX_EVALUATIONS`` schedules one by one
# (some 30 s for the doubles at their small default extents under load).
TIME_LIMIT = 120.0
# The doubles residual takes ~2 s through the whole pipeline; the rest ~50 ms.
SLOW_INPUTS = {"sequant/csv_ccsd_doubles_residual_df.txt": 3}
PER_INPUT = 24
# axisflow plan searches four policies per input (the slowest input); axisflow-run
# interprets a lowered module (about 0.3 s).
PER_TOOL_INPUT = {"axisflow plan": 4, "axisflow-run": 8}


def per_input(entry: EntryPoint, source: str) -> int:
    if entry.tool in PER_TOOL_INPUT:
        return PER_TOOL_INPUT[entry.tool]
    return SLOW_INPUTS.get(source, PER_INPUT)


def test_every_outcome_is_success_or_a_clean_diagnostic() -> None:
    runs = list(campaign(per_input, SEED, TIME_LIMIT))
    failures = [
        f"{run.outcome}: {run.entry} {run.source} ({run.mutation}): {run.detail}"
        for run in runs
        if run.outcome not in ("success", "clean error")
    ]
    assert failures == [], table(runs)
    # The campaign reaches every entry point, and both outcomes occur.
    assert {run.entry for run in runs} == {entry.name for entry in ENTRY_POINTS}
    assert {run.outcome for run in runs} == set(OUTCOMES[:2])


def test_python_readers_raise_only_their_documented_error() -> None:
    runs = list(api_campaign(150, SEED))
    failures = [
        f"{run.entry}: {run.detail}" for run in runs if run.outcome not in OUTCOMES[:2]
    ]
    assert failures == []
    assert {run.outcome for run in runs} == set(OUTCOMES[:2])


def test_clean_errors_are_one_located_message() -> None:
    runs = list(campaign(lambda _e, _s: 1, SEED + 1, TIME_LIMIT))
    tool: dict[str, Tool] = {entry.name: entry.tool for entry in ENTRY_POINTS}
    errors = [run for run in runs if run.outcome == "clean error"]
    assert errors
    for run in errors:
        prefix = ERROR_PREFIX[tool[run.entry]]
        assert run.detail.startswith(prefix), run.detail
        assert run.detail.count(prefix) == 1, run.detail
        assert '"builtin.module"()' not in run.detail  # no generic module dump


@pytest.mark.parametrize("mutation", TEXT_MUTATIONS, ids=lambda m: m.__name__)
def test_each_mutation_changes_every_bundled_input(mutation) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory() as scratch:
        for entry in ENTRY_POINTS:
            for source in entry.inputs:
                text = input_bytes(source, Path(scratch)).decode("utf-8")
                changed = any(mutation(rng, text) != text for _ in range(5))
                assert changed, (mutation.__name__, source)


def test_mutate_is_deterministic_for_a_seed() -> None:
    data = (EXAMPLES / "four_tensor.mlir").read_bytes()
    first = [mutate(random.Random(7), data) for _ in range(3)]
    again = [mutate(random.Random(7), data) for _ in range(3)]
    assert first == again


@pytest.mark.parametrize(
    ("fault", "outcome"),
    [
        (RuntimeError("a bug"), "traceback"),
        (MemoryError(), "memory"),
        (None, "timeout"),
    ],
)
def test_faults_are_classified_as_failures(
    monkeypatch: pytest.MonkeyPatch, fault: BaseException | None, outcome: str
) -> None:
    # The fuzzer must be able to fail: sabotage the CLI and watch it notice.
    release = threading.Event()

    def sabotaged(data: bytes, name: str) -> str:
        if fault is None:
            release.wait(30.0)  # "hangs" until the test has its verdict
        else:
            raise fault
        return data.decode()

    monkeypatch.setattr(axisflow.cli, "check_mlir_text", sabotaged)
    before = set(threading.enumerate())
    args = [str(EXAMPLES / "four_tensor.mlir")]
    assert run_once(args, time_limit=0.5)[0] == outcome
    # Let the hung run finish here, not during a later test (it restores the
    # recursion limit when done).
    release.set()
    for thread in set(threading.enumerate()) - before:
        thread.join(30.0)
