"""Embedding entry points and the ``schedule-batches`` pass."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import PassFailedException

from axisflow.dialects.batch import ForestOp, ValueOp
from axisflow.dialects.sched import ScheduleOp
from axisflow.passes.classify_axes import ClassifyAxesPass
from axisflow.passes.schedule_batches import ScheduleBatchesPass
from axisflow.pipeline import PipelineError, schedule_module
from axisflow.scheduling.evaluate import compare
from axisflow.universe import AXISFLOW_UNIVERSE
from tests.conftest import EXAMPLES, context, example, parse


def printed(module: ModuleOp) -> str:
    stream = StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue()


def schedules(module: ModuleOp) -> list[ScheduleOp]:
    return [op for op in module.walk() if isinstance(op, ScheduleOp)]


def test_schedule_module_classifies_schedules_and_reports() -> None:
    module = example("pipeline/four_tensor.mlir")
    result = schedule_module(module)
    (forest,) = result.forests
    assert forest.report.unbatched_peak == 960
    assert forest.report.scheduled_peak == 432
    assert schedules(module) == [forest.schedule_op]
    assert forest.schedule_op.parent_op() is forest.forest
    assert "roles" in next(iter(forest.forest.values())).attributes
    assert compare(forest.model, forest.schedule).agrees
    assert "peak scheduled: 432 B" in result.tables()


def test_rescheduling_replaces_the_schedule() -> None:
    module = example("pipeline/four_tensor.mlir")
    schedule_module(module, block=1)
    schedule_module(module, block=2)
    (only,) = schedules(module)
    assert "block 2" in printed(module)
    assert only.verify() is None


def test_a_failing_forest_leaves_the_module_unchanged() -> None:
    good = (EXAMPLES / "pipeline/four_tensor.mlir").read_text(encoding="utf-8")
    bad = (EXAMPLES / "pipeline/demotion.mlir").read_text(encoding="utf-8")
    module = parse(good + bad)
    before = printed(module)
    with pytest.raises(
        PipelineError, match=r"batch.forest @demotion: .*within 1 rounds"
    ):
        schedule_module(module, max_rounds=1)
    assert printed(module) == before  # no roles, no schedule on @four_tensor either


def test_invalid_ir_is_reported_not_raised_from_deep_inside() -> None:
    module = example("pipeline/four_tensor.mlir")
    forest = next(op for op in module.walk() if isinstance(op, ForestOp))
    value = next(v for v in forest.values() if v.value_name == "T1")
    value.detach()
    forest.body.block.add_op(ValueOp("T1", value.result_indices))  # after its users
    forest.body.block.add_op(value.clone())  # duplicate name
    with pytest.raises(PipelineError, match="duplicate value name @T1"):
        schedule_module(module)


def run_pass(module: ModuleOp, spec: str) -> None:
    pipeline = PassPipeline.parse_spec(AXISFLOW_UNIVERSE.all_passes, spec)
    pipeline.apply(context(), module)


def test_the_pass_reports_a_table_and_json_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    module = example("pipeline/four_tensor.mlir")
    ClassifyAxesPass().apply(context(), module)
    ScheduleBatchesPass(report="table").apply(context(), module)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("memory of batch.forest @four_tensor\n")
    assert "peak unbatched: 960 B" in captured.err
    ScheduleBatchesPass(report="json", block=2).apply(context(), module)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1  # JSON Lines: one document per forest
    data = json.loads(lines[0])
    assert data["forest"] == "four_tensor"
    assert data["blocks"] == {"b": 2, "c": 2}


def test_report_file_is_replaced_once_then_appended(tmp_path: Path) -> None:
    target = tmp_path / "report.jsonl"
    target.write_text("stale\n", encoding="utf-8")
    for _ in range(2):  # two chunks of --split-input-file in one process
        module = example("pipeline/four_tensor.mlir")
        ClassifyAxesPass().apply(context(), module)
        ScheduleBatchesPass(report="json", report_file=str(target)).apply(
            context(), module
        )
    lines = target.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["scheduled_peak_bytes"] for line in lines] == [432, 432]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.jsonl"]


def test_an_unwritable_report_file_fails_the_pass(tmp_path: Path) -> None:
    module = example("pipeline/four_tensor.mlir")
    ClassifyAxesPass().apply(context(), module)
    missing = tmp_path / "no-such-dir" / "r.txt"
    with pytest.raises(PassFailedException, match="cannot write report-file"):
        ScheduleBatchesPass(report="table", report_file=str(missing)).apply(
            context(), module
        )


def test_the_pass_options_parse_from_a_pipeline_spec() -> None:
    module = example("pipeline/demotion.mlir")
    run_pass(
        module,
        "classify-axes,schedule-batches{block=2 max-rounds=4 never-worse=false accumulate=false}",
    )
    text = printed(module)
    assert "sched.schedule rounds 2" in text
    assert "block 2" in text


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("schedule-batches{report=xml}", "report must be one of none, table, json"),
        ("schedule-batches", "run classify-axes first"),
        ("classify-axes,schedule-batches{max-rounds=1}", "within 1 rounds"),
        ("classify-axes,schedule-batches{block=0}", "block must be positive"),
    ],
)
def test_pass_failures_are_diagnostics(spec: str, message: str) -> None:
    module = example("pipeline/demotion.mlir")
    with pytest.raises(PassFailedException, match=message):
        run_pass(module, spec)
    assert schedules(module) == []


def test_block_per_space_from_the_pass_spec(capsys: pytest.CaptureFixture[str]) -> None:
    module = example("pipeline/four_tensor.mlir")
    run_pass(module, 'classify-axes,schedule-batches{report=json block="b=3"}')
    data = json.loads(capsys.readouterr().err)
    assert data["blocks"] == {"b": 3, "c": 1}
    with pytest.raises(PassFailedException, match="block: expected N or SPACE=N"):
        run_pass(example("pipeline/four_tensor.mlir"), 'schedule-batches{block="b=0"}')


def test_share_tree_rebuilds_shared_values_and_counts_their_cost() -> None:
    from axisflow.pipeline import schedule_expression
    from axisflow.sequant import PolicyError

    text = (EXAMPLES / "sequant" / "csv_ccsd_energy_df.txt").read_text("utf-8")
    extents = "i=3,a=2,μ̃=2,Κ=3"
    shared = schedule_expression(text, "i", extents=extents, elem=8)
    rebuilt = schedule_expression(text, "i", extents=extents, elem=8, share="tree")
    assert (shared.share, rebuilt.share) == ("forest", "tree")
    assert shared.report.extra_flops == 0
    assert rebuilt.report.flops == shared.report.flops + rebuilt.report.extra_flops
    assert rebuilt.report.extra_flops > 0
    copies = [name for name in rebuilt.model.values if "_term" in name]
    assert copies and not any("_term" in name for name in shared.model.values)
    data = json.loads(rebuilt.report.json_text())
    assert (data["share"], data["extra_flops"]) == ("tree", rebuilt.report.extra_flops)
    assert "rebuilt in each" in rebuilt.report.table()
    assert "rebuilt in each" not in shared.report.table()
    assert compare(rebuilt.model, rebuilt.schedule).agrees
    # auto plans (the default objective: the smallest peak within 10% more
    # multiply-adds than the shared forest's): never above the shared
    # forest's peak, compared with the shared forest's unbatched peak, the
    # front in its report
    auto = schedule_expression(
        text, "i", extents=extents, elem=8, share="auto", block=1
    )
    assert auto.share == auto.report.share == "planned"
    assert auto.report.scheduled_peak <= shared.report.scheduled_peak
    assert auto.report.flops * 10 <= shared.report.flops * 11
    assert auto.report.unbatched_peak == shared.report.unbatched_peak
    chosen = [p for p in auto.report.front if p["chosen"]]
    assert chosen and chosen[0]["flops"] == auto.report.flops
    assert compare(auto.model, auto.schedule).agrees
    with pytest.raises(PolicyError, match="share must be one of forest, tree, auto"):
        schedule_expression(text, "i", share="trees")  # type: ignore[arg-type]
