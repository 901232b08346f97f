"""``execute_expression``: the residual run on a Dask cluster of two worker
processes, against the unbatched NumPy evaluation and the einsum oracle;
the budget, the output store, a worker killed mid-run."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import dask.config
import numpy as np
import pytest
import zarr
from dask.utils import parse_timedelta
from distributed import Client, get_task_stream
from distributed.diagnostics.plugin import WorkerPlugin

from axisflow.execution import (
    dask_executor,
    evaluate_expression,
    input_keys,
    input_signatures,
)
from axisflow.execution.aligned import Aligned
from axisflow.execution.dask_executor import (
    BudgetError,
    ExecutionError,
    execute_expression,
    local_cluster,
    predicted_peak,
)
from axisflow.execution.evaluation import PlannedEvaluation, plan_evaluation
from axisflow.forest.model import Forest
from axisflow.scheduling import pages
from axisflow.scheduling.evaluate import (
    Contribution,
    ScheduleRun,
    relative_difference,
    run_part,
)
from axisflow.scheduling.memory import lifetimes, pass_writes, task_lifetimes
from axisflow.scheduling.schedule import Buffer, Build, LoopPass, Schedule
from axisflow.sequant import parse
from tests.conftest import EXAMPLES
from tests.einsum_oracle import oracle_inputs, oracle_residual

AGREES = 1e-10
EQUATIONS = sorted(path.stem for path in (EXAMPLES / "sequant").glob("*.txt"))


def equation(name: str) -> str:
    return (EXAMPLES / "sequant" / f"{name}.txt").read_text(encoding="utf-8")


POLICIES: dict[str, list[tuple[str, int, bool]]] = {
    # (batch, block, never_worse)
    "ccsd_doubles_residual_sf": [("", 1, True), ("i", 1, False), ("a,i", 2, True)],
    # the guard's search on the doubles takes seconds: its schedules as classified
    "csv_ccsd_doubles_residual_df": [("i,a", 2, False), ("Κ", 2, False)],
    "csv_ccsd_energy_df": [("", 1, True), ("i,Κ", 1, False)],
    "csv_ccsd_singles_residual_df": [("i,Κ", 2, False), ("μ̃", 1, False)],
    "legality_cross_iteration": [("", 1, True), ("i", 1, False)],
}


def test_every_bundled_equation_has_policies() -> None:
    assert sorted(POLICIES) == EQUATIONS


@pytest.mark.parametrize(
    ("name", "batch", "block", "never_worse"),
    [(name, *policy) for name, policies in POLICIES.items() for policy in policies],
)
def test_the_executor_agrees_with_numpy_and_the_oracle(
    dask_client: Client, name: str, batch: str, block: int, never_worse: bool
) -> None:
    expression = parse(equation(name))
    extents = dict.fromkeys(expression.space_keys(), 2)
    inputs = oracle_inputs(expression, extents)
    modes, reference = oracle_residual(expression, extents)
    numpy = evaluate_expression(expression, inputs)
    run = execute_expression(
        expression,
        inputs,
        batch=batch,
        block=block,
        never_worse=never_worse,
        scheduler=dask_client,
    )
    assert run.modes == modes
    assert run.residual is not None
    assert relative_difference(run.residual, numpy.residual) <= AGREES
    assert relative_difference(run.residual, reference) <= AGREES
    report = run.report
    assert report.workers == 2 and report.tasks > 0 and report.multiply_adds > 0


SF_EXTENTS = {"i": 4, "a": 6}
"""The spin-free doubles: batched over ``i`` its per-worker peak is 131936
bytes on one worker, unbatched 195296 (inputs included). (When each block
held its partial sums apart until the assembly, batched was 259248.)"""


@pytest.fixture(scope="module")
def sf_inputs() -> dict[str, np.ndarray]:
    return oracle_inputs(parse(equation("ccsd_doubles_residual_sf")), SF_EXTENTS)


def test_a_budget_between_the_batched_and_unbatched_peaks(
    dask_client: Client, sf_inputs: dict[str, np.ndarray]
) -> None:
    # a worker's blocks add into one lane's partial sums: batching cuts the
    # peak even at i=4, a=6 (with each block's held apart until the
    # assembly, four on one worker outweighed what it cut there)
    text = equation("ccsd_doubles_residual_sf")
    inputs = sf_inputs
    policy: dict[str, Any] = {"batch": "i"}
    peaks = {
        batch: predicted_peak(planned.forest, planned.schedule, planned.sizing)
        for batch, planned in (
            (batch, plan_evaluation(text, inputs, scheduled=True, **keywords))
            for batch, keywords in (("", {}), ("i", policy))
        )
        if planned.schedule is not None
    }
    budget = 160_000
    assert peaks["i"] < budget < peaks[""]
    run = execute_expression(
        text, inputs, budget=budget, scheduler=dask_client, **policy
    )
    reference = evaluate_expression(text, inputs)
    assert run.residual is not None
    assert relative_difference(run.residual, reference.residual) <= AGREES
    with pytest.raises(BudgetError):
        execute_expression(text, inputs, budget=budget, scheduler=dask_client)


# R_i = sum A_{a1 a2 K} B_{a3 i K} Y_{a1 a2 a3}, multiplied as written: the
# first product is an a x a x a x i intermediate (655 MiB whole at a = i = 96),
# sliced to a x a x a x 8 when batched over i in blocks of 8
WIDE = "R{;i_1} = A{a_1,a_2;;Κ_1} * B{a_3;i_1;Κ_1} * Y{a_1,a_2,a_3;}"
WIDE_LIMIT = 600 * 2**20


def test_a_worker_memory_limit_between_the_batched_and_unbatched_peaks() -> None:
    rng = np.random.default_rng(5)
    extent, aux = 96, 4
    inputs = {
        "A": rng.standard_normal((extent, extent, aux)),
        "B": rng.standard_normal((extent, extent, aux)),
        "Y": rng.standard_normal((extent, extent, extent)),
    }
    batched = {"batch": "i", "block": 8}
    peaks = []
    for policy in (batched, {}):
        planned = plan_evaluation(WIDE, inputs, order="file", scheduled=True, **policy)
        assert planned.schedule is not None
        peaks.append(predicted_peak(planned.forest, planned.schedule, planned.sizing))
    assert peaks[0] < WIDE_LIMIT < peaks[1]
    reference = np.einsum("abk,cik,abc->i", inputs["A"], inputs["B"], inputs["Y"])
    # Dask's real limit: each worker's nanny restarts its process above 95% of
    # it, and Dask pauses it at 80%. Failing a task at its first death, never
    # spilling results to disk and the nanny looking every 10 ms (the whole
    # intermediate lives a few tenths of a second) would keep an unbatched
    # run's failure quick and certain; it is refused before any work.
    with (
        dask.config.set(
            {
                "distributed.scheduler.allowed-failures": 0,
                "distributed.worker.memory.spill": False,
                "distributed.worker.memory.target": False,
                "distributed.worker.memory.monitor-interval": "10ms",
            }
        ),
        local_cluster(1, memory_limit=WIDE_LIMIT) as client,
    ):
        run = execute_expression(
            WIDE, inputs, order="file", scheduler=client, **batched
        )
        assert run.residual is not None
        assert relative_difference(run.residual, reference) <= AGREES
        assert run.report.measured_peak is not None
        assert run.report.measured_peak < WIDE_LIMIT
        with pytest.raises(BudgetError) as refused:
            execute_expression(WIDE, inputs, order="file", scheduler=client)
    assert re.fullmatch(
        r"@\w+ \(value\) needs 648 MiB by itself, above the room on worker "
        r"tcp://127\.0\.0\.1:\d+: Dask pauses it at 80% of its memory limit of "
        r"600 MiB \(480 MiB; distributed\.worker\.memory\.pause\) and its process "
        r"holds [\d.]+ MiB before the run, leaving [\d.]+ MiB, of which a run "
        r"keeps 66\.21 MiB for the process's own use; batch over more spaces, use smaller blocks or give the workers "
        r"more memory",
        str(refused.value),
    ), str(refused.value)


def test_a_run_that_would_stop_its_worker_is_refused_naming_the_room() -> None:
    # the CSV doubles at a=64 on one worker limited to 300 MiB: 164 MiB
    # predicted, and Dask spills at 210 MiB and pauses the worker at 240
    # MiB, with about 64 MiB held before the run. Runs there (before this
    # refusal) waited paused for good, or died at the limit, in about half
    # the tries.
    text = equation("csv_ccsd_doubles_residual_df")
    extents = {"i": 8, "a": 64, "μ̃": 64, "Κ": 128}
    inputs = oracle_inputs(parse(text), extents)
    with local_cluster(1, memory_limit=300 * 2**20) as client:
        held = next(iter(cast(dict[str, Any], client.run(pids_and_rooms)).values()))
        assert held[1:3] == (0.7, "spill")
        assert 16 * 2**20 < held[3] < 176 * 2**20  # the worker's own memory
        with pytest.raises(BudgetError) as refused:
            execute_expression(text, inputs, batch="i", block=4, scheduler=client)
        # nothing ran: no task but the probes reached the worker
        assert client.run(_tasks_run) == {
            address: 0 for address in client.run(os.getpid)
        }
    assert re.fullmatch(
        # what the worker holds decides which: the whole or its largest value
        r"(the plan needs 164 MiB per worker \(the inputs and its peak, where "
        r"@v\d+ \(value\) is the largest value at 128 MiB\)|@v\d+ \(value\) "
        r"needs 128 MiB by itself), above the room on worker "
        r"tcp://127\.0\.0\.1:\d+: Dask spills its results to disk at 70% of its "
        r"memory limit of 300 MiB \(210 MiB; distributed\.worker\.memory\.spill\) "
        r"and its process holds [\d.]+ MiB before the run, leaving [\d.]+ MiB, "
        r"of which a run keeps 32 MiB for the process's own use; batch over more spaces, use smaller blocks or give "
        r"the workers more memory",
        str(refused.value),
    ), str(refused.value)


def pids_and_rooms(dask_worker: Any) -> tuple[int, float, str, int]:
    """``_worker_room`` through a name this module owns."""
    return dask_executor._worker_room(dask_worker)


def _tasks_run(dask_worker: Any) -> int:
    """Tasks a worker has run (``client.run`` is none)."""
    return len(dask_worker.state.tasks)


def test_check_room_counts_the_fraction_the_held_memory_and_the_slack() -> None:
    expression = parse(equation("ccsd_doubles_residual_sf"))
    planned = plan_evaluation(
        expression, oracle_inputs(expression, SF_EXTENTS), batch="i", scheduled=True
    )
    assert planned.schedule is not None
    forest, schedule, sizing = planned.forest, planned.schedule, planned.sizing
    needed = predicted_peak(forest, schedule, sizing, 2)
    slack = dask_executor.ROOM_SLACK_BYTES
    fits = needed + slack
    # room = limit * fraction - held; the tightest worker decides
    rooms = {
        "tcp://a:1": (2 * fits, 0.5, "pause", 0),
        "tcp://b:2": (fits + 1000, 1.0, "", 1000),
        "tcp://c:3": (0, 1.0, "", 10**12),  # no limit: not counted
    }
    dask_executor.check_room(forest, schedule, sizing, needed, rooms)
    rooms["tcp://b:2"] = (fits + 1000, 1.0, "", 1001)
    with pytest.raises(BudgetError) as refused:
        dask_executor.check_room(forest, schedule, sizing, needed, rooms)
    limit = dask_executor.format_bytes(fits + 1000)
    assert str(refused.value) == (
        f"the plan needs {dask_executor.format_bytes(needed)} per worker (the inputs "
        "and its peak, where input @g_4 is the largest value at 10.12 KiB), above "
        f"the room on worker tcp://b:2: its memory limit is {limit} and its process "
        f"holds 1001 B before the run, leaving {dask_executor.format_bytes(fits - 1)}"
        ", of which a run keeps 32 MiB for the process's own use; batch over more "
        "spaces, use smaller blocks or give the workers more memory"
    )
    rooms["tcp://a:1"] = (2 * fits, 0.45, "spill", 0)
    with pytest.raises(
        BudgetError,
        match=(
            r"the room on worker tcp://a:1: Dask spills its results to disk at 45% of "
            r"its memory limit of [\d.]+ MiB \([\d.]+ MiB; distributed\.worker\.memory"
            r"\.spill\) and its process holds 0 B before the run,"
        ),
    ):
        dask_executor.check_room(forest, schedule, sizing, needed, rooms)


def test_a_second_run_on_one_cluster_measures_the_peak_the_first_does() -> None:
    # the CSV doubles at sizes where blocks of 4 hold about 190 MiB per run;
    # before the baseline released the freed memory, the second run reused
    # the first's without the process growing and measured two thirds of it
    text = equation("csv_ccsd_doubles_residual_df")
    extents = {"i": 8, "a": 64, "μ̃": 64, "Κ": 128}
    inputs = oracle_inputs(parse(text), extents)
    with local_cluster(1) as client:
        peaks = []
        for _ in range(2):
            run = execute_expression(text, inputs, batch="i", block=4, scheduler=client)
            assert run.report.measured_peak is not None
            peaks.append(run.report.measured_peak)
    assert peaks[0] > 100 * 2**20
    assert 0.9 <= peaks[1] / peaks[0] <= 1.1, peaks


def test_the_budget_refusal_names_what_does_not_fit(
    sf_inputs: dict[str, np.ndarray],
) -> None:
    # refused before any cluster is made or connected to (no scheduler at
    # this address: the refusal comes first)
    text = equation("ccsd_doubles_residual_sf")
    with pytest.raises(BudgetError) as refused:
        execute_expression(
            text, sf_inputs, batch="i", budget="100KiB", scheduler="tcp://127.0.0.1:9"
        )
    assert str(refused.value) == (
        "the plan needs 128.8 KiB per worker (the inputs and its peak, where "
        "input @g_4 is the largest value at 10.12 KiB), above the budget of "
        "100 KiB (100 KiB per worker, 1 worker); batch over more spaces, use "
        "smaller blocks or give a larger budget"
    )
    with pytest.raises(BudgetError) as alone:
        execute_expression(
            text, sf_inputs, batch="i", budget=8000, scheduler="tcp://127.0.0.1:9"
        )
    assert str(alone.value) == (
        "input @g_4 needs 10.12 KiB by itself, above the budget of 7.812 KiB "
        "(7.812 KiB per worker, 1 worker); batch over more spaces, use smaller "
        "blocks or give a larger budget"
    )


def test_bad_arguments_are_named() -> None:
    text = equation("legality_cross_iteration")
    with pytest.raises(
        ValueError, match=r"^output: R\.txt must end in \.npy or \.zarr$"
    ):
        execute_expression(text, {}, output="R.txt")
    with pytest.raises(ValueError, match=r"^workers must be positive, got 0$"):
        execute_expression(text, {}, workers=0)


def random_inputs(name: str, extents: dict[str, int]) -> dict[str, np.ndarray]:
    """The inputs by key, as a user would save them."""
    expression = parse(equation(name))
    signatures = input_signatures(expression)
    keys = input_keys(signatures)
    by_leaf = oracle_inputs(expression, extents)
    assert set(by_leaf) == set(keys.values())
    return by_leaf


@pytest.mark.parametrize("store", ["npz", "zarr"])
def test_inputs_from_files_and_outputs_to_files(
    dask_client: Client, tmp_path: Path, store: str
) -> None:
    name = "csv_ccsd_singles_residual_df"
    expression = parse(equation(name))
    extents = dict.fromkeys(expression.space_keys(), 3)
    inputs = oracle_inputs(expression, extents)
    if store == "npz":
        source = tmp_path / "inputs.npz"
        np.savez(source, **inputs)  # pyright: ignore[reportArgumentType]
        target = tmp_path / "R.npy"
    else:
        source = tmp_path / "inputs.zarr"
        group = zarr.open_group(str(source), mode="w")
        for key, array in inputs.items():
            group.create_array(key, data=array)
        target = tmp_path / "R.zarr"
    run = execute_expression(
        expression,
        source,
        batch="i",
        never_worse=False,
        output=target,
        scheduler=dask_client,
    )
    assert run.residual is None and run.output == target
    written = (
        np.load(target) if store == "npz" else np.asarray(zarr.open_array(str(target)))
    )
    _, reference = oracle_residual(expression, extents)
    assert relative_difference(written, reference) <= AGREES
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [source.name, target.name]
    )


def test_a_failed_write_leaves_no_output_and_keeps_the_old_one(
    dask_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = equation("csv_ccsd_energy_df")
    expression = parse(text)
    inputs = oracle_inputs(expression, dict.fromkeys(expression.space_keys(), 2))
    target = tmp_path / "R.npy"

    def half_written(path: Any, array: np.ndarray) -> None:
        Path(path).write_bytes(b"\x93NUMPY half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(dask_executor.np, "save", half_written)
    with pytest.raises(OSError, match="No space left"):
        execute_expression(text, inputs, output=target, scheduler=dask_client)
    assert list(tmp_path.iterdir()) == []
    target.write_bytes(b"an earlier result")
    with pytest.raises(OSError, match="No space left"):
        execute_expression(text, inputs, output=target, scheduler=dask_client)
    assert [p.name for p in tmp_path.iterdir()] == ["R.npy"]
    assert target.read_bytes() == b"an earlier result"


def test_successive_runs_on_one_client_use_their_own_inputs(
    dask_client: Client,
) -> None:
    # The same labels (``t_1``, ``g_0``) at other extents, back to back: an
    # input keyed by its label alone raced its own release and a later run
    # read the earlier run's arrays (or lost them).
    name = "csv_ccsd_singles_residual_df"
    expression = parse(equation(name))
    for size in (2, 3, 2, 3):
        extents = dict.fromkeys(expression.space_keys(), size)
        inputs = oracle_inputs(expression, extents)
        run = execute_expression(
            expression, inputs, batch="i,Κ", never_worse=False, scheduler=dask_client
        )
        _, reference = oracle_residual(expression, extents)
        assert run.residual is not None
        assert run.residual.shape == reference.shape
        assert relative_difference(run.residual, reference) <= AGREES


def test_the_blocks_of_a_pass_are_dealt_to_the_workers_in_turn(
    dask_client: Client,
) -> None:
    # Left to itself, Dask runs a block where the data it reads lies: the
    # blocks of a pass, reading the same pieces, often all on one worker,
    # one after the other (and that worker then holds more than the memory
    # model's share). Each block task asks for the next worker in turn, and
    # runs there.
    expression = parse(equation("ccsd_doubles_residual_sf"))
    extents = dict.fromkeys(expression.space_keys(), 4)
    inputs = oracle_inputs(expression, extents)
    asked: dict[object, str] = {}
    submit = dask_client.submit

    def spying(function: Any, *args: Any, **kwargs: Any) -> Any:
        future = submit(function, *args, **kwargs)
        if function is dask_executor._run_part:
            asked[future.key] = kwargs["workers"][0]
        return future

    workers = sorted(dask_client.scheduler_info()["workers"])
    with (
        pytest.MonkeyPatch.context() as patch,
        get_task_stream(dask_client) as stream,
    ):
        patch.setattr(dask_client, "submit", spying)
        run = execute_expression(
            expression, inputs, batch="i", block=2, scheduler=dask_client
        )
    assert run.residual is not None
    # two blocks per pass, in order: the first to one worker, the second to
    # the other
    assert list(asked.values()) == workers * (len(asked) // 2) and asked
    ran = {task["key"]: task["worker"] for task in cast(Any, stream).data}
    assert {key: ran[key] for key in asked} == asked


class KillOnce(WorkerPlugin):
    """Kills its worker's process (SIGKILL) when a block task finishes on
    it, once on the whole cluster (a file marks that it happened)."""

    def __init__(self, mark: str) -> None:
        self.mark = mark

    def setup(self, worker: Any) -> None:
        self.worker = worker

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish != "memory" or "_run_part" not in str(key):
            return
        try:
            descriptor = os.open(self.mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.write(descriptor, str(os.getpid()).encode())
        os.close(descriptor)
        os.kill(os.getpid(), signal.SIGKILL)


@pytest.fixture
def killing(dask_client: Client, tmp_path: Path) -> Iterator[Path]:
    mark = tmp_path / "killed"
    dask_client.register_plugin(KillOnce(str(mark)), name="kill-once")
    try:
        yield mark
    finally:
        dask_client.unregister_worker_plugin("kill-once")
        dask_client.wait_for_workers(2, timeout=30)


def test_a_worker_killed_mid_run_is_replaced_and_the_result_unchanged(
    dask_client: Client, killing: Path
) -> None:
    name = "csv_ccsd_singles_residual_df"
    expression = parse(equation(name))
    extents = dict.fromkeys(expression.space_keys(), 3)
    inputs = oracle_inputs(expression, extents)
    pids = set(cast(dict[str, int], dask_client.run(os.getpid)).values())
    run = execute_expression(
        expression, inputs, batch="i,Κ", never_worse=False, scheduler=dask_client
    )
    killed = int(killing.read_text())
    assert killed in pids  # a worker of the cluster died mid-run
    _, reference = oracle_residual(expression, extents)
    assert run.residual is not None
    assert relative_difference(run.residual, reference) <= AGREES
    # the replacement samples as the cluster asked (it got Dask's defaults)
    dask_client.wait_for_workers(2, timeout=30)
    settings = cast(dict[str, object], dask_client.run(_monitor_settings))
    assert killed not in cast(dict[str, int], dask_client.run(os.getpid)).values()
    assert set(settings.values()) == {("500ms", False, False)}
    # the run's array pool is closed on the worker that lived through it
    assert set(cast(dict[str, object], dask_client.run(_pool_state)).values()) == {
        (0, None, 0)
    }


def _pool_state(dask_worker: Any) -> tuple[int, int | None, int]:
    """A worker's open ``reusing()`` scopes, its pool's ceiling and the
    runs it holds open (``pages.open_run``) or watches (``_PoolWatch``)."""
    watches = [name for name in dask_worker.periodic_callbacks if "pool-watch" in name]
    return (
        pages._reuse.depth,
        pages._reuse.ceiling,
        len(pages._open_runs) + len(watches),
    )


async def _watched_pool(watch: str, dask_worker: Any) -> tuple[int, int]:
    """The bytes a worker's pool holds after a freed 32 MiB array, and
    0.3 s later with a ``_PoolWatch`` whose ``most`` the process is above
    (``watch`` is ``most``), with one that has no ``most`` in a run whose
    ceiling the process is above (``ceiling``: one byte above what it held
    when the run began), or without one (``""``); on the worker's event
    loop, as the watch runs."""
    import asyncio

    pages.open_run("watched", 1 if watch == "ceiling" else None)
    try:
        array = pages.empty((4 * 2**20,))
        del array
        kept = pages._reuse.held
        if watch:
            most = 1 if watch == "most" else None
            dask_executor._PoolWatch("watched", most).start(dask_worker)
        await asyncio.sleep(0.3)
        return kept, pages._reuse.held
    finally:
        dask_executor._close_pool("watched", dask_worker)


def test_the_pool_lets_its_free_arrays_go_above_the_watched_memory(
    dask_client: Client,
) -> None:
    # a paused worker runs no task, so no request would let the pool's free
    # arrays go: the watch does, on the worker's event loop; and it lets
    # them go when memory the pool did not hand out takes the process above
    # the run's ceiling
    for watch, after in (("", 32 * 2**20), ("most", 0), ("ceiling", 0)):
        held = cast(dict[str, Any], dask_client.run(_watched_pool, watch))
        assert set(held.values()) == {(32 * 2**20, after)}, (watch, held)
    assert set(cast(dict[str, object], dask_client.run(_pool_state)).values()) == {
        (0, None, 0)
    }


def _wait_for(path: str) -> int:
    """Wait until ``path`` exists (a task held running from outside)."""
    import time

    while not os.path.exists(path):
        time.sleep(0.02)
    return 1


def _set_status(status: str, dask_worker: Any) -> None:
    from distributed.core import Status

    dask_worker.status = Status[status]


@pytest.mark.parametrize("loose", [True, False])
def test_a_task_preferring_a_worker_that_is_gone_runs_elsewhere(
    tmp_path: Path, loose: bool
) -> None:
    # Dask (2026.8) revives a task that became ready while no worker ran only
    # on a worker its restrictions name, loose or not. Here the task prefers
    # a worker not in the cluster, and its input is done while the only
    # worker is paused; without the plugin it waits for good.
    go = str(tmp_path / "go")
    with (
        # the worker's memory manager would resume a worker paused by hand
        dask.config.set({"distributed.worker.memory.pause": False}),
        local_cluster(1) as client,
    ):
        if loose:
            dask_executor.keep_restrictions_loose(client)
        started = client.submit(_wait_for, go, pure=False)
        _await_state(client, started.key, "processing")
        client.run(_set_status, "paused")  # before the next task is placed
        preferring = client.submit(
            _identity_plus_one,
            started,
            workers=["tcp://127.0.0.1:9"],
            allow_other_workers=True,
        )
        Path(go).touch()
        _await_state(client, preferring.key, "no-worker")
        client.run(_set_status, "running")
        if loose:
            assert preferring.result(timeout=30) == 2
        else:  # what the plugin is for
            with pytest.raises(TimeoutError):
                preferring.result(timeout=3)


def _await_state(client: Client, key: object, state: str) -> None:
    """Wait up to 30 s for the scheduler to hold task ``key`` in ``state``."""
    import time

    deadline = time.monotonic() + 30
    while client.run_on_scheduler(_state_of, key) != state:
        assert time.monotonic() < deadline, (key, state)
        time.sleep(0.01)


def _identity_plus_one(value: int) -> int:
    return value + 1


def _state_of(key: object, dask_scheduler: Any) -> str | None:
    task = dask_scheduler.tasks.get(key)  # None until the submission arrives
    return None if task is None else task.state


def test_a_workers_pool_keeps_below_where_dask_would_spill_or_pause(
    dask_client: Client,
) -> None:
    # the workers' limit is Dask's "auto" (the machine's memory shared),
    # spilling at 70% of it: an allowance above that is cut there, one
    # below it is kept
    limits = {
        address: int(info["memory_limit"])
        for address, info in dask_client.scheduler_info()["workers"].items()
    }
    assert all(limit > 0 for limit in limits.values())
    for allowance in (1 << 50, 1 << 20):
        dask_client.run(dask_executor._open_pool, "probe", allowance)
        try:
            states = cast(dict[str, Any], dask_client.run(_pool_state))
        finally:
            dask_client.run(dask_executor._close_pool, "probe")
        for address, (depth, ceiling, runs) in states.items():
            assert depth == 1 and runs == 2  # the run and its watch
            if allowance == 1 << 50:
                assert ceiling == int(limits[address] * 0.7)
            else:
                assert ceiling < int(limits[address] * 0.7)
    assert set(cast(dict[str, object], dask_client.run(_pool_state)).values()) == {
        (0, None, 0)
    }


def test_a_run_opens_each_workers_pool_with_its_ceiling_and_closes_it(
    dask_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the scope is opened on every worker with the predicted peak as its
    # allowance, and closed once the result is in
    opened: list[tuple[object, tuple[object, ...]]] = []
    run_on_workers = dask_client.run

    def recording(function: Any, *arguments: Any, **keywords: Any) -> Any:
        if function in (dask_executor._open_pool, dask_executor._close_pool):
            opened.append((function, arguments))
        return run_on_workers(function, *arguments, **keywords)

    monkeypatch.setattr(dask_client, "run", recording)
    name = "csv_ccsd_singles_residual_df"
    expression = parse(equation(name))
    extents = dict.fromkeys(expression.space_keys(), 3)
    run = execute_expression(
        expression, oracle_inputs(expression, extents), batch="i", scheduler=dask_client
    )
    monkeypatch.undo()
    assert [function for function, _ in opened] == [
        dask_executor._open_pool,
        dask_executor._close_pool,
    ]
    (_, (key, allowance)), (_, (closed_key,)) = opened
    assert closed_key == key and allowance == run.report.predicted_peak
    assert set(cast(dict[str, object], dask_client.run(_pool_state)).values()) == {
        (0, None, 0)
    }


def test_the_progress_bar_goes_to_standard_error(
    dask_client: Client, capsys: pytest.CaptureFixture[str]
) -> None:
    text = equation("csv_ccsd_energy_df")
    expression = parse(text)
    inputs = oracle_inputs(expression, dict.fromkeys(expression.space_keys(), 2))
    execute_expression(text, inputs, progress=True, scheduler=dask_client)
    printed = capsys.readouterr()
    assert printed.out == ""
    assert "100% Completed" in printed.err


def root_passes(
    forest: Forest, schedule: Schedule
) -> Iterator[tuple[int, LoopPass, set[str], set[str], set[int]]]:
    """Each root loop pass: its position, the pass, the values it reads
    with their factors, the root buffers it writes and the residual groups
    it adds into (``dask_executor._mentions``)."""
    for position, item in enumerate(schedule.items):
        if not isinstance(item, LoopPass):
            continue
        reads, writes, groups = dask_executor._mentions(item)
        names = set(reads) | {
            f.value
            for name in reads
            if name in forest.values
            for f in forest.values[name].factors
        }
        yield position, item, names, writes, groups


def csv_doubles_in_blocks_of_2(
    extents: dict[str, int],
) -> tuple[str, dict[str, np.ndarray], PlannedEvaluation]:
    """The bundled CSV doubles' text, oracle inputs at ``extents`` and its
    plan batched over ``i`` in blocks of 2, every loop kept."""
    text = equation("csv_ccsd_doubles_residual_df")
    data = oracle_inputs(parse(text), extents)
    planned = plan_evaluation(
        text, data, batch="i", block=2, never_worse=False, scheduled=True
    )
    return text, data, planned


def test_a_lane_adds_its_blocks_into_one_set_and_the_model_counts_it() -> None:
    """A worker runs the blocks dealt to it as one lane: each block carries
    on from the one before (``run_part``'s carry). The oracle runs each
    pass's two blocks apart and merges them as the assembly merges
    separate blocks (``_merge``): the lane gives the same numbers, holds
    one array per region the blocks sum into, and what it holds is what
    ``memory.task_lifetimes`` counts: its residuals over the pass, and,
    where the pass closes, every lane a worker merges beside the slices."""
    text, data, planned = csv_doubles_in_blocks_of_2({"i": 4, "a": 3, "μ̃": 3, "Κ": 5})
    forest, schedule, sizing = planned.forest, planned.schedule, planned.sizing
    assert schedule is not None
    run = ScheduleRun(forest, schedule, sizing, copies=True)
    leaves = planned.inputs.leaf_arrays(forest)
    rng = np.random.default_rng(3)

    def whole(name: str) -> np.ndarray:
        shape = [sizing.mode_extent(m) for m in forest.values[name].modes]
        return rng.standard_normal(shape)

    roots = {item.value for item in schedule.items if isinstance(item, Build | Buffer)}
    residual_modes = schedule.residual_modes() or ()
    residual_shape = tuple(sizing.mode_extent(m) for m in residual_modes)
    residual_bytes = 8 * int(np.prod(residual_shape))
    expected: dict[str, list[int]] = {"blocks": [], "lanes 1": [], "lanes 2": []}
    checked = 0
    for position, item, names, writes, groups in root_passes(forest, schedule):
        pieces = {n: whole(n) for n in names & roots if n not in writes}
        buffers: dict[str, np.ndarray | None] = dict.fromkeys(writes)
        blocks = [(0, item.block), (item.block, 2 * item.block)]
        first, second = (
            run_part(run, position, block, leaves, pieces, buffers).contributions
            for block in blocks
        )
        lane = run_part(
            run,
            position,
            blocks[1],
            leaves,
            pieces,
            buffers,
            carry=list(
                run_part(
                    run, position, blocks[0], leaves, pieces, buffers
                ).contributions
            ),
        ).contributions
        targets = {c.target for c in first + second}
        for target in targets:
            shape = (
                residual_shape
                if target not in forest.values
                else tuple(sizing.mode_extent(m) for m in forest.values[target].modes)
            )

            def of(part: list[Contribution], name: str = target) -> list[Contribution]:
                return [c for c in part if c.target == name]

            apart = dask_executor._assembled(
                shape, target, dask_executor._merge(target, of(first), of(second))
            )
            together = dask_executor._assembled(shape, target, of(lane))
            assert np.allclose(together, apart, rtol=1e-12, atol=1e-12), target
            checked += 1
        regions = [
            (c.target, tuple((x.start, x.stop) for x in c.index))
            for c in lane
            if c.accumulate
        ]
        assert len(regions) == len(set(regions))  # one array per summed region

        # summed over the pass's own loop: both blocks add into the same
        # regions (of the whole, or of an inner loop's slices)
        def sums(part: list[Contribution], name: str) -> set[object]:
            return {
                tuple((x.start, x.stop) for x in c.index)
                for c in part
                if c.target == name and c.accumulate
            }

        summed_targets = {
            c.target
            for c in first
            if c.accumulate
            and c.target in forest.values
            and sums(first, c.target) == sums(second, c.target)
        }
        summed = sum(c.array.nbytes for c in lane if c.target in summed_targets)
        residuals = sum(c.array.nbytes for c in lane if c.target not in forest.values)
        sliced = sum(c.array.nbytes for c in lane if c.target in forest.values) - summed
        assert residuals == residual_bytes * len(groups)
        if residuals:
            expected["blocks"].append(residuals)
        for workers in (1, 2):
            merging = workers * (summed + residuals) + sliced - residuals
            if merging:
                expected[f"lanes {workers}"].append(merging)
    assert checked > 20 and expected["blocks"]
    for workers in (1, 2):
        found = task_lifetimes(forest, schedule, sizing, workers)
        assert sorted(x.bytes for x in found if x.kind == "blocks") == sorted(
            expected["blocks"]
        )
        assert sorted(x.bytes for x in found if x.kind == "lanes") == sorted(
            expected[f"lanes {workers}"]
        )
    one_block = plan_evaluation(
        text, data, batch="i", block=4, never_worse=False, scheduled=True
    )
    assert one_block.schedule is not None
    copies = [
        x
        for x in task_lifetimes(one_block.forest, one_block.schedule, one_block.sizing)
        if x.kind != "copy"
    ]
    assert copies == lifetimes(one_block.forest, one_block.schedule, one_block.sizing)


def test_a_carry_that_arrived_read_only_is_copied_not_changed() -> None:
    """A carry unpickled over read-only frames cannot be added into in
    place: the part adds into a copy of it (its layout kept) and leaves
    the arrays it was given as they were."""
    _, _, planned = csv_doubles_in_blocks_of_2({"i": 4, "a": 3, "μ̃": 3, "Κ": 5})
    forest, schedule, sizing = planned.forest, planned.schedule, planned.sizing
    assert schedule is not None
    run = ScheduleRun(forest, schedule, sizing, copies=True)
    leaves = planned.inputs.leaf_arrays(forest)
    roots = {item.value for item in schedule.items if isinstance(item, Build | Buffer)}
    checked = 0
    for position, item, names, writes, _ in root_passes(forest, schedule):
        pieces = {
            n: np.ones([sizing.mode_extent(m) for m in forest.values[n].modes])
            for n in names & roots
            if n not in writes
        }
        buffers: dict[str, np.ndarray | None] = dict.fromkeys(writes)
        blocks = [(0, item.block), (item.block, 2 * item.block)]

        writable, frozen = (
            run_part(run, position, blocks[0], leaves, pieces, buffers).contributions
            for _ in range(2)
        )
        for contribution in frozen:
            contribution.array.flags.writeable = False
        before = [c.array.copy() for c in frozen]
        lane = run_part(run, position, blocks[1], leaves, pieces, buffers, writable)
        given = run_part(run, position, blocks[1], leaves, pieces, buffers, frozen)
        assert all(
            (c.array == kept).all() for c, kept in zip(frozen, before, strict=True)
        )
        assert len(given.contributions) == len(lane.contributions)
        for ours, theirs in zip(given.contributions, lane.contributions, strict=True):
            assert (ours.target, ours.index) == (theirs.target, theirs.index)
            assert ours.array.strides == theirs.array.strides
            assert np.array_equal(ours.array, theirs.array)
            checked += 1
    assert checked > 20


def test_the_model_counts_a_copy_of_the_smaller_operand_of_each_product() -> None:
    """At each build of two factors the executor's contraction may copy the
    smaller operand (cut to the build's blocks) into a layout BLAS takes:
    ``task_lifetimes`` counts it there. The oracle cuts each operand as
    the part runner does."""
    _, _, planned = csv_doubles_in_blocks_of_2({"i": 4, "a": 3, "μ̃": 5, "Κ": 7})
    forest, schedule, sizing = planned.forest, planned.schedule, planned.sizing
    assert schedule is not None
    blocks = schedule.blocks()
    expected: list[tuple[str, int]] = []
    for item, _ in schedule.walk():
        if not isinstance(item, Build):
            continue
        value = forest.values[item.value]
        if len(value.factors) != 2:
            continue
        bound = {b.mode: blocks[b.instance] for b in (*item.slices, *item.sums)}
        operands = [
            np.zeros(
                [
                    min(
                        bound.get(mapping[m], sizing.mode_extent(m)),
                        sizing.mode_extent(m),
                    )
                    for m in forest.values[factor.value].modes
                ]
            ).nbytes
            for factor, mapping in zip(value.factors, value.factor_maps, strict=True)
        ]
        expected.append((item.value, min(operands)))
    found = [
        (x.value, x.bytes)
        for x in task_lifetimes(forest, schedule, sizing)
        if x.kind == "copy"
    ]
    assert len(expected) > 10 and found == expected


@pytest.mark.parametrize(
    ("name", "batch"),
    [("csv_ccsd_doubles_residual_df", "i,a"), ("ccsd_doubles_residual_sf", "a,i")],
)
def test_a_part_sums_each_region_once_and_leaves_what_it_reads(
    name: str, batch: str
) -> None:
    """``run_part`` adds an inner loop's later partial sums of a root
    buffer's region into the first one in place. That is safe only if the
    first is the part's own array: the inputs and root pieces it reads stay
    as they were, and each region it sums into comes back as one
    contribution."""
    text = equation(name)
    expression = parse(text)
    extents = dict.fromkeys(expression.space_keys(), 3)
    inputs = oracle_inputs(expression, extents)
    planned = plan_evaluation(
        text, inputs, batch=batch, block=1, never_worse=False, scheduled=True
    )
    forest, schedule, sizing = planned.forest, planned.schedule, planned.sizing
    assert schedule is not None
    run = ScheduleRun(forest, schedule, sizing, copies=True)
    leaves = planned.inputs.leaf_arrays(forest)
    rng = np.random.default_rng(3)
    roots = {item.value for item in schedule.items if isinstance(item, Build | Buffer)}
    inner_sums = 0
    for position, item, names, writes, _ in root_passes(forest, schedule):
        pieces = {
            n: rng.standard_normal(
                [sizing.mode_extent(m) for m in forest.values[n].modes]
            )
            for n in names & roots
            if n not in writes
        }
        before = {n: a.copy() for n, a in (*leaves.items(), *pieces.items())}
        buffers: dict[str, np.ndarray | None] = dict.fromkeys(writes)
        part = run_part(run, position, (0, item.block), leaves, pieces, buffers)
        for n, array in (*leaves.items(), *pieces.items()):
            assert np.array_equal(array, before[n]), f"@{n} changed by a part"
        regions = [
            (c.target, tuple((x.start, x.stop) for x in c.index))
            for c in part.contributions
            if c.accumulate
        ]
        assert len(regions) == len(set(regions))
        inner_sums += bool(writes) and any(
            isinstance(inner, LoopPass) for inner in item.body
        )
    # the policies sum into root buffers over inner loops (with the in-place
    # sum disabled, each region comes back once per partial sum: fails)
    assert inner_sums


def _monitor_settings(dask_worker: Any) -> tuple[object, object, bool]:
    """A worker's memory sampling interval, whether it samples the disk
    counters, and whether Dask's statistical profiler runs in it."""
    return (
        dask.config.get("distributed.admin.system-monitor.interval"),
        dask.config.get("distributed.admin.system-monitor.disk"),
        "profile" in dask_worker.periodic_callbacks,
    )


def test_the_embedded_workers_sample_memory_as_asked_no_disk_no_profile(
    dask_client: Client,
) -> None:
    # The module's cluster asks for Dask's 500 ms (conftest); the default is
    # the executor's 20 ms. Nobody reads the host's disk counters or Dask's
    # statistical profile (its 10 ms sampling cost 3% of a two-worker run).
    settings = cast(dict[str, object], dask_client.run(_monitor_settings))
    assert len(settings) == 2
    assert set(settings.values()) == {("500ms", False, False)}


def test_only_the_workers_sample_at_the_executors_interval() -> None:
    # The scheduler and the nannies run in the calling process, on cores the
    # workers share: their own system monitors keep Dask's interval (at 20
    # ms their samples cost that process about 0.45 CPU seconds of a
    # two-worker run, docs/benchmarks-executor.md); the workers sample at
    # 20 ms.
    dask_default = 1000 * parse_timedelta(
        dask.config.get("distributed.admin.system-monitor.interval")
    )
    assert dask_default > 20
    with local_cluster(1) as client:
        settings = cast(dict[str, object], client.run(_monitor_settings))
        cluster: Any = client.cluster
        servers = [cluster.scheduler, *cluster.workers.values()]
        intervals = [s.periodic_callbacks["monitor"].callback_time for s in servers]
    assert set(settings.values()) == {("20ms", False, False)}
    assert len(intervals) == 2
    assert intervals == [dask_default, dask_default]


def _allocation_settings() -> tuple[object, ...]:
    core: Any = getattr(np, "_core", None) or np.core  # NumPy 2 renamed it
    return (
        os.environ.get("MALLOC_MMAP_THRESHOLD_"),
        os.environ.get("NUMPY_MADVISE_HUGEPAGE"),
        os.environ.get("OPENBLAS_NUM_THREADS"),
        core.multiarray._get_madvise_hugepage(),
    )


def test_the_embedded_workers_map_large_arrays_apart_without_huge_pages(
    dask_client: Client,
) -> None:
    # Read in the workers: glibc maps arrays above 32 MiB apart, NumPy asks
    # for no transparent huge pages (its own switch, read at import), one
    # BLAS thread.
    settings = cast(dict[str, object], dask_client.run(_allocation_settings))
    assert len(settings) == 2
    assert set(settings.values()) == {(str(32 * 1024**2), "0", "1", False)}


@pytest.mark.parametrize("interval", ["abc", "-1s", "0ms", "", 5])
def test_a_monitor_interval_that_is_no_duration_is_refused(interval: Any) -> None:
    message = (
        "monitor_interval must be a positive Dask duration such as '20ms', "
        f"got {interval!r}"
    )
    with (
        pytest.raises(ValueError, match=f"^{re.escape(message)}$"),
        local_cluster(1, monitor_interval=interval),
    ):
        pass


def test_a_cluster_without_workers_is_waited_for_then_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A cluster scaling up from none (dask-jobqueue), or whose one worker is
    # restarting, has no worker for a while: the run waits for one, then
    # says what is wrong (it divided by the worker count, zero).
    from distributed import LocalCluster

    expression = parse("R{a_1;i_1} = A{a_1;i_2} * B{i_2;i_1}")
    extents = dict.fromkeys(expression.space_keys(), 2)
    inputs = oracle_inputs(expression, extents)
    _, reference = oracle_residual(expression, extents)
    monkeypatch.setattr(dask_executor, "WORKER_WAIT_SECONDS", 0.5)
    cluster = LocalCluster(n_workers=0, processes=False, dashboard_address=":0")
    with cluster, Client(cluster) as client:
        with pytest.raises(ExecutionError) as refused:
            execute_expression(expression, inputs, batch="i", scheduler=client)
        assert str(refused.value) == (
            f"the cluster at {cluster.scheduler_address} has no worker: "
            "none came in 0.5 s"
        )
        monkeypatch.setattr(dask_executor, "WORKER_WAIT_SECONDS", 60.0)
        cluster.scale(1)  # the run waits for the worker if it is not up yet
        run = execute_expression(expression, inputs, batch="i", scheduler=client)
        assert run.residual is not None
        assert relative_difference(run.residual, reference) <= AGREES


def test_a_block_task_returns_its_contributions_per_target_and_assembly_reads_them(
    dask_client: Client,
) -> None:
    """A block's task returns its contributions to each root buffer and
    residual it writes, picked in the task: no task of its own picks them
    (there were two per buffer of a pass of two blocks), and no merge
    stands between a pass of at most ``FAN_IN`` blocks and the assembly of
    its buffers."""
    expression = parse(equation("csv_ccsd_doubles_residual_df"))
    extents = dict.fromkeys(expression.space_keys(), 3)
    inputs = oracle_inputs(expression, extents)
    submitted: list[tuple[str, int]] = []
    submit = dask_client.submit

    def spying(function: Any, *args: Any, **kwargs: Any) -> Any:
        futures = sum(type(a).__name__ == "Future" for a in args)
        submitted.append((function.__name__, futures))
        return submit(function, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dask_client, "submit", spying)
        run = execute_expression(
            expression,
            inputs,
            batch="i",
            block=2,
            never_worse=False,
            scheduler=dask_client,
        )
    functions = {name for name, _ in submitted}
    assert functions <= {
        "_identity",
        "_run_part",
        "_run_item",
        "_assemble",
        "_folded",
        "_merge",
        "_apply",
    }, functions
    assert "_run_part" in functions and "_assemble" in functions
    # each pass has two blocks (i=3, blocks of 2): an assembly reads the
    # two block tasks themselves (the residual's, the one fold before it)
    assert "_merge" not in functions
    assert {n for name, n in submitted if name == "_assemble"} == {1, 2}
    _, reference = oracle_residual(expression, extents)
    assert run.residual is not None
    assert relative_difference(run.residual, reference) <= AGREES


def _assemblies(
    client: Client, each_from: int, block: int
) -> tuple[dict[str, set[str | None]], dict[str, set[str]], set[str]]:
    """The CSV doubles at extents 3 over ``i`` in blocks of ``block`` on
    ``client``, large buffers from ``each_from`` bytes: for each root
    buffer, the workers it was assembled on and those whose blocks read it
    (each block reading the assembly on its own worker where there is
    one), and the buffers blocks sum into."""
    text = equation("csv_ccsd_doubles_residual_df")
    expression = parse(text)
    extents = dict.fromkeys(expression.space_keys(), 3)
    inputs = oracle_inputs(expression, extents)
    submitted: list[tuple[str, tuple[Any, ...], Any, str | None]] = []
    submit = client.submit

    def spying(function: Any, *args: Any, **kwargs: Any) -> Any:
        future = submit(function, *args, **kwargs)
        workers = kwargs.get("workers")
        submitted.append((function.__name__, args, future, workers and workers[0]))
        return future

    options: dict[str, Any] = {"batch": "i", "block": block, "never_worse": False}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(client, "submit", spying)
        patch.setattr(dask_executor, "ASSEMBLED_ON_EACH_BYTES", each_from)
        run = execute_expression(expression, inputs, scheduler=client, **options)
    _, reference = oracle_residual(expression, extents)
    assert run.residual is not None
    assert relative_difference(run.residual, reference) <= AGREES
    schedule = plan_evaluation(text, inputs, scheduled=True, **options).schedule
    assert schedule is not None
    roots = {item.value for item in schedule.items if isinstance(item, Buffer)}
    summed = {
        name
        for item in schedule.items
        if isinstance(item, LoopPass)
        for name in pass_writes(item, roots).summed
    }
    workers = set(client.scheduler_info()["workers"])
    # the buffers' assemblies (a residual's has no workers given)
    assembled_on = {
        future.key: (args[1], worker)
        for name, args, future, worker in submitted
        if name == "_assemble" and args[1] != dask_executor.residual_target(0)
    }
    on_each: dict[str, set[str | None]] = {}
    for target, worker in assembled_on.values():
        on_each.setdefault(target, set()).add(worker)
    read_on: dict[str, set[str]] = {}
    for name, args, _, worker in submitted:
        if name != "_run_part":
            continue
        assert worker is not None and worker in workers
        for buffer, future in args[6].items():
            if future is not None:
                target, where = assembled_on[future.key]
                assert target == buffer
                read_on.setdefault(buffer, set()).add(worker)
                if len(on_each[buffer]) > 1:
                    assert where == worker  # the assembly on its own worker
    return on_each, read_on, summed


@pytest.mark.parametrize("each_from", [0, 2**40])
def test_a_buffer_blocks_on_two_workers_read_is_assembled_on_each_of_them(
    dask_client: Client, each_from: int
) -> None:
    """A root buffer at least ``ASSEMBLED_ON_EACH_BYTES`` large that the
    blocks of a later pass read on both workers is assembled on each worker
    from the same contributions, and a block reads the one on its own
    worker; below that size, once (on one of them)."""
    on_each, read_on, summed = _assemblies(dask_client, each_from, block=2)
    assert any(len(places) == 2 for places in read_on.values())
    assert summed & set(read_on)  # partial sums too: with two workers, on each
    for buffer, places in read_on.items():
        if each_from == 0:
            assert on_each[buffer] == places
        else:
            assert len(on_each[buffer]) == 1


def test_a_buffer_blocks_sum_into_read_on_three_workers_is_assembled_once() -> None:
    """Read on three workers, a buffer whose blocks write slices of it is
    assembled on each of them, and one they sum into once: each worker
    would otherwise receive two partial sums as large as the whole."""
    with local_cluster(3, monitor_interval="500ms") as client:
        on_each, read_on, summed = _assemblies(client, 0, block=1)
    three = {buffer for buffer, places in read_on.items() if len(places) == 3}
    assert three & summed and three - summed
    for buffer in three:
        if buffer in summed:
            assert len(on_each[buffer]) == 1
        else:
            assert on_each[buffer] == read_on[buffer]


def _aligned_range(count: int) -> Aligned:
    return Aligned(np.arange(float(count)))


def _arrival(held: Aligned) -> tuple[bool, float]:
    return bool(held.array.flags.aligned), float(held.array.sum())


def test_an_array_one_worker_sends_another_arrives_aligned(dask_client: Client) -> None:
    """What a task returns reaches a task on another worker aligned (an
    unaligned operand NumPy copies at every product: ``aligned.py``)."""
    first, second = sorted(dask_client.scheduler_info()["workers"])
    for count in (1000, 1001, 1003):  # other lengths, other frame offsets
        made = dask_client.submit(_aligned_range, count, workers=[first], pure=False)
        arrival = dask_client.submit(_arrival, made, workers=[second], pure=False)
        assert arrival.result() == (True, count * (count - 1) / 2)


def test_an_assembly_adds_each_sources_contributions_to_its_target_in_order() -> None:
    slices = (slice(0, 2), slice(None))
    ones, twos = np.ones((2, 3)), np.full((2, 3), 2.0)
    picked = {
        "x": [Contribution("x", slices, ones, True)],
        "y": [Contribution("y", slices, twos, False)],
    }
    later = [Contribution("x", slices, twos, True)]
    assembled = dask_executor._assemble((4, 3), "x", picked, later).array
    assert (assembled[:2] == 3.0).all() and (assembled[2:] == 0.0).all()
    merged = dask_executor._merge("x", picked, later)
    assert len(merged) == 1 and (merged[0].array == 3.0).all()
    assert dask_executor._assemble((4, 3), "z", picked).array.sum() == 0.0
