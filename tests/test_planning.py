"""``axisflow plan``: policies, figures, the screenful and the plot."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from axisflow.pipeline.api import plan_expression, schedule_expression
from axisflow.planning import (
    PlanOptions,
    _portable,  # pyright: ignore[reportPrivateUsage]
    best,
    main,
    plan_policies,
    plan_policy,
    policies,
)
from axisflow.scheduling.memory import Lifetime, live_curve, peak
from axisflow.scheduling.options import ShareChoice
from axisflow.sequant import PolicyError
from axisflow.sequant.syntax import SequantError
from tests.conftest import EXAMPLES
from tests.ladder_terms import ladder_term

ENERGY = EXAMPLES / "sequant" / "csv_ccsd_energy_df.txt"
DOUBLES = EXAMPLES / "sequant" / "csv_ccsd_doubles_residual_df.txt"
REAL = "i=80,a=896,μ̃=896,Κ=1682"


def test_policies_are_none_each_space_and_combinations_in_order() -> None:
    assert policies(("i", "Κ")) == [(), ("i",), ("Κ",), ("i", "Κ")]
    assert len(policies(("i", "a", "Κ"))) == 8


def test_live_curve_peaks_where_the_sweep_does() -> None:
    found = [
        Lifetime("x", "value", 10, 1, 3),
        Lifetime("y", "value", 5, 2, 5),
        Lifetime("z", "piece", 7, 4, 4),
    ]
    curve = live_curve(found)
    assert curve == [0, 10, 15, 15, 12, 5]
    assert max(curve) == peak(found).bytes


def test_multiply_adds_of_a_small_product() -> None:
    # node modes a_1, i_1, i_2: 3 * 4 * 4 multiply-adds
    plan = plan_policy("f{a_1;i_2} * t{i_2;i_1}", (), extents="i=4,a=3", elem=8)
    assert plan.flops == 48
    # the root (a_1, i_1) and the residual it is added into, both 3 * 4 * 8 B
    assert plan.unbatched_peak == plan.scheduled_peak == 2 * 3 * 4 * 8
    assert [v.kind for v in plan.dominant] == ["value", "residual"]


def test_the_screenful_on_the_energy(capsys: pytest.CaptureFixture[str]) -> None:
    # file order: the figures of the left-to-right forest
    status = main(
        ["plan", str(ENERGY), "--extents", REAL, "--batch", "i,Κ", "--order", "file"]
    )
    out = capsys.readouterr().out
    assert status == 0
    lines = out.splitlines()
    assert lines[0].startswith("plan for csv_ccsd_energy_df.txt")
    table = [line.split()[0] for line in lines[2:6]]
    assert table == ["none", "i", "Κ", "i,Κ"]
    assert "110.1 GiB" in lines[2]  # unbatched peak of the energy (file order)
    best = next(line for line in lines if line.startswith("best: "))
    assert "below unbatched" in best
    dominant = lines.index(next(x for x in lines if x.startswith("values dominating")))
    assert (
        sum(1 for x in lines[dominant + 1 : dominant + 6] if x.startswith("  @")) >= 1
    )
    assert len(lines) <= 25  # a screenful


@pytest.mark.parametrize(
    ("suffix", "magic"), [(".svg", b"<?xml"), (".png", b"\x89PNG")]
)
def test_plot_writes_the_file_type_asked_for(
    tmp_path: Path, suffix: str, magic: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / f"memory{suffix}"
    status = main(
        ["plan", str(ENERGY), "--extents", REAL, "--batch", "i", "--plot", str(target)]
    )
    assert status == 0
    assert target.read_bytes().startswith(magic)
    assert f"plot: {target}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plan", "no-such.txt"], "no-such.txt: No such file or directory"),
        (["plan", str(ENERGY), "--batch", "q"], "index space 'q' does not occur"),
        (["plan", str(ENERGY), "--plot", "x.pdf"], "must end in .svg or .png"),
        (["plan", str(ENERGY), "--block", "i=0"], "block: expected N or SPACE=N"),
        (["plan", str(ENERGY), "--budget", "lots"], "budget: expected a size"),
        (
            ["plan", str(ENERGY), "--max-extra-flops", "-1"],
            "max-extra-flops: must not be negative",
        ),
        (
            ["plan", str(ENERGY), "--batch", ",,,"],
            "batch: an empty space name in ',,,' (expected SPACE,SPACE,...)",
        ),
        (["plan", str(ENERGY), "--batch", "i,i"], "--batch: i named twice in 'i,i'"),
        (
            ["plan", str(ENERGY), "--batch", "i,a,μ̃,Κ,q"],
            "--batch names 5 spaces: 32 policies, each a pipeline run; at most 4 "
            "are combined unless --max-spaces 5 asks for them",
        ),
        (
            ["plan", str(ENERGY), "--batch", "i,a,μ̃,Κ,q", "--max-spaces", "5"],
            "index space 'q' does not occur in the expression",
        ),
        (["plan", str(ENERGY), "--extents", "i=3,i=4"], "space 'i' is given twice"),
    ],
)
def test_bad_input_is_one_line_and_status_1(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("axisflow plan: error: ") and message in err
    assert err.count("\n") == 1


def test_a_result_expression_names_the_residual_layout() -> None:
    """``R{...} = ...`` gives the residual's indices in its written order;
    without it the externals are sorted."""
    from axisflow.pipeline import schedule_expression

    declared = schedule_expression("R{i_1,a_1;} = t{a_1;i_1}", (), extents="i=2,a=3")
    plain = schedule_expression("t{a_1;i_1}", (), extents="i=2,a=3")
    assert declared.residual is not None and plain.residual is not None
    assert [str(m) for m in declared.residual.modes] == ["i_1", "a_1"]
    assert [str(m) for m in plain.residual.modes] == ["a_1", "i_1"]


def test_the_doubles_are_planned_far_below_sharing_and_rebuilding() -> None:
    """The CSV-CCSD doubles with composite extents batched over i: the
    planner (``auto``) shares what fits, far below the unbatched peak and
    below both the shared forest and the forest rebuilt per tree, for a few
    percent more multiply-adds than sharing everything, all counted."""
    text = DOUBLES.read_text(encoding="utf-8")
    extents = REAL + ",a<2>=40,a<1>=60"
    plain = plan_policy(text, (), extents=extents, elem=8, share="forest")
    shared = plan_policy(text, ("i",), extents=extents, elem=8, share="forest")
    rebuilt = plan_policy(text, ("i",), extents=extents, elem=8, share="tree")
    chosen = plan_policy(text, ("i",), extents=extents, elem=8, budget="100GiB")
    assert (shared.share, rebuilt.share, chosen.share) == ("forest", "tree", "planned")
    assert chosen.scheduled_peak < min(shared.scheduled_peak, rebuilt.scheduled_peak)
    assert chosen.scheduled_peak * 10 <= plain.unbatched_peak
    assert chosen.scheduled_peak * 10 <= chosen.unbatched_peak
    # what it costs: multiply-adds the schedule performs, against sharing
    # everything as written: within 5% (the planner's canonical factor
    # order builds a shared forest 25% cheaper than the written order's
    # here, its reference)
    reference = chosen.flops - chosen.extra_flops
    assert reference * 100 <= shared.flops * 76
    assert chosen.flops * 100 <= shared.flops * 105
    assert chosen.extra_flops > 0
    assert chosen.lower_bound <= chosen.scheduled_peak
    assert any(point["chosen"] for point in chosen.front)


def test_share_forest_keeps_values_shared(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(
        ["plan", str(ENERGY), "--extents", REAL, "--batch", "Κ", "--share", "forest"]
    )
    out = capsys.readouterr().out
    assert status == 0
    rows = out.splitlines()[2:4]
    assert [row.split()[3] for row in rows] == ["shared", "shared"]


@pytest.mark.parametrize(
    ("name", "batch", "extents", "share"),
    [
        ("csv_ccsd_energy_df", "Κ", REAL, "auto"),
        ("csv_ccsd_singles_residual_df", "i,Κ", REAL, "auto"),
        ("csv_ccsd_singles_residual_df", "μ̃", REAL + ",a<1>=60", "tree"),
        ("csv_ccsd_doubles_residual_df", "Κ", "i=3,a=4,μ̃=4,Κ=5", "forest"),
    ],
)
def test_planning_without_ir_gives_what_the_pipeline_gives(
    name: str, batch: str, extents: str, share: ShareChoice
) -> None:
    # axisflow plan skips the IR round trip (print, verify, read back, the
    # schedule op): the same models, schedules, reports and drops
    text = (EXAMPLES / "sequant" / f"{name}.txt").read_text(encoding="utf-8")
    through_ir = schedule_expression(text, batch, extents=extents, share=share)
    direct = plan_expression(text, batch, extents=extents, share=share)
    assert direct.report.json_text() == through_ir.report.json_text()
    assert direct.schedule == through_ir.schedule
    assert direct.dropped == through_ir.dropped
    assert direct.share == through_ir.share
    assert direct.model.roles == through_ir.model.roles
    assert direct.residual == through_ir.residual


def test_planning_without_ir_reports_errors_as_the_pipeline_does() -> None:
    with pytest.raises(PolicyError) as through_ir:
        schedule_expression("t{i_1;a_1}", "Κ")
    with pytest.raises(PolicyError) as direct:
        plan_expression("t{i_1;a_1}", "Κ")
    assert str(direct.value) == str(through_ir.value)


def test_a_budget_prints_the_front_and_the_chosen_point(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(
        ["plan", str(ENERGY), "--extents", REAL, "--batch", "i,Κ", "--budget", "20MiB"]
    )
    out = capsys.readouterr().out
    assert status == 0
    assert "; budget 20MiB)" in out.splitlines()[0]
    assert "Pareto front of" in out
    chosen = [line for line in out.splitlines() if line.startswith("  * ")]
    assert len(chosen) == 1
    assert "lower bound of" in out


def test_the_front_says_which_points_rebuild_inside_loops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ladder term of the doubles within 50% more multiply-adds: the
    chosen point rebuilds values inside one loop (the planner's step 4),
    the point without rebuilds stays on the front, larger and cheaper."""
    path = tmp_path / "term30.txt"
    path.write_text(str(ladder_term(30)) + "\n", encoding="utf-8")
    status = main(
        [
            "plan",
            str(path),
            "--extents",
            "i=4,a=7,μ̃=7,Κ=8",
            "--batch",
            "i",
            "--max-extra-flops",
            "50%",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    front = out.split("Pareto front of i ")[1].split("values dominating")[0]
    lines = [line for line in front.splitlines() if "planned" in line]
    assert lines[0].startswith("  * ")
    assert lines[0].endswith("planned, 0 shares, values rebuilt inside 1 loop")
    assert lines[1].endswith("+0.0%  planned, 0 shares")


def test_input_that_is_no_utf8_is_located(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "eq.txt"
    path.write_bytes(b"x{i_1;a_1} * y{a_1;i_1}\n+ \xd0\xd0 z{i_1;i_1}\n")
    assert main(["plan", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"axisflow plan: error: {path}:2:3: input is not valid UTF-8 (byte 0xd0)\n"
    )


def test_an_empty_equation_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "eq.txt"
    path.write_text("// nothing yet\n", encoding="utf-8")
    assert main(["plan", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"axisflow plan: error: {path}: the expression has no term: nothing to plan\n"
    )


def test_the_number_of_policies_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    small = "i=2,a=2,μ̃=2,Κ=2"
    assert main(["plan", str(ENERGY), "--extents", small, "--batch", "i,Κ"]) == 0
    assert capsys.readouterr().err == (
        "axisflow plan: 2 spaces: 4 policies (each a pipeline run, the best one "
        "again for its front)\n"
    )
    argv = ["plan", str(ENERGY), "--extents", small, "--batch", "i", "--share", "tree"]
    assert main(argv) == 0
    assert capsys.readouterr().err == ""  # one space: two policies, nothing said


def test_unused_extents_and_blocks_are_notes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # one extents text for the energy, singles and doubles of a method
    legality = EXAMPLES / "sequant" / "legality_cross_iteration.txt"
    argv = ["plan", str(legality), "--extents", "i=8,a=16,Κ=20", "--block", "zz=2"]
    assert main(argv) == 0
    assert capsys.readouterr().err == (
        "axisflow plan: note: extents names a, Κ, which do not occur in the "
        "expression (its spaces: i); ignored\n"
        "axisflow plan: note: block names 'zz', which is no index space of "
        "batch.forest @legality_cross_iteration (its spaces: i); ignored\n"
    )


def test_a_plot_on_a_full_disk_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # /dev/full fails every write with ENOSPC: a device is written directly.
    target = tmp_path / "memory.svg"
    target.symlink_to("/dev/full")
    argv = ["plan", str(ENERGY), "--extents", "i=2,a=2,μ̃=2,Κ=2", "--plot", str(target)]
    assert main(argv) == 1
    assert capsys.readouterr().err == (
        f"axisflow plan: error: {target}: No space left on device\n"
    )


def test_a_failed_plot_leaves_the_earlier_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno

    from matplotlib.figure import Figure

    target = tmp_path / "memory.svg"
    target.write_text("the earlier plot", encoding="utf-8")

    def full_disk(self: Figure, name: str, **_: object) -> None:
        Path(name).write_text("<?xml trunc", encoding="utf-8")  # half written
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full_disk)
    argv = ["plan", str(ENERGY), "--extents", "i=2,a=2,μ̃=2,Κ=2", "--plot", str(target)]
    assert main(argv) == 1
    assert capsys.readouterr().err == (
        f"axisflow plan: error: {target}: No space left on device\n"
    )
    assert target.read_text(encoding="utf-8") == "the earlier plot"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.svg"]


@pytest.mark.parametrize(
    ("batch", "objective", "chosen"),
    [
        ("i,Κ", [], "i"),  # not every space: its front runs after the others
        # every space: its front ran beside the others
        ("i,μ̃", ["--budget", "200B"], "i,μ̃"),
    ],
)
def test_worker_processes_print_what_one_process_prints(
    batch: str, objective: list[str], chosen: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["plan", str(ENERGY), "--extents", "i=3,a=4,μ̃=4,Κ=5,zz=2", "--batch", batch]
    assert main([*argv, *objective, "--jobs", "1"]) == 0
    alone = capsys.readouterr()
    assert main([*argv, *objective, "--jobs", "2"]) == 0
    shared = capsys.readouterr()
    assert f"Pareto front of {chosen} " in alone.out
    assert "axisflow plan: note: extents names zz" in alone.err
    assert (shared.out, shared.err) == (alone.out, alone.err)


def test_a_failing_run_in_a_worker_process_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["plan", str(ENERGY), "--extents", "i=3,a=4,μ̃=4,Κ=5", "--batch", "i,Κ"]
    assert main([*argv, "--budget", "lots", "--jobs", "1"]) == 1
    alone = capsys.readouterr().err
    assert main([*argv, "--budget", "lots", "--jobs", "2"]) == 1
    assert capsys.readouterr().err == alone
    assert alone.splitlines()[-1].startswith(
        "axisflow plan: error: budget: expected a size"
    )


def test_jobs_must_be_a_positive_count(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["plan", str(ENERGY), "--jobs", "0"])
    assert exited.value.code == 2
    assert "--jobs: expected a positive integer, got '0'" in capsys.readouterr().err


def test_the_speculative_front_is_the_one_a_second_run_gives() -> None:
    # the policy of every space planned for its front beside the others is
    # the plan the one-by-one order makes after them
    options = PlanOptions(extents="i=3,a=4,μ̃=4,Κ=5", elem=8, budget="200B")
    text = ENERGY.read_text("utf-8")
    tried = policies(("i", "μ̃"))
    alone, alone_notes = plan_policies(text, tried, options, front=True, jobs=1)
    shared, shared_notes = plan_policies(text, tried, options, front=True, jobs=2)
    assert best(alone).spaces == ("i", "μ̃")
    assert best(alone).front
    assert shared == alone
    assert [str(n) for n in shared_notes] == [str(n) for n in alone_notes]


def test_an_error_a_worker_process_cannot_hand_back_keeps_its_message() -> None:
    # SequantError's location arguments are lost by pickling: a process
    # pool could not hand it back as it is (its message would be lost)
    located = SequantError("expected a factor", "eq.txt", 4, 1, 5)
    plain = _portable(located)
    assert type(plain) is ValueError
    assert str(plain) == str(located) == "eq.txt:1:5: expected a factor"
    assert pickle.loads(pickle.dumps(plain)).args == plain.args
    lost = OSError(28, "No space left on device", "memory.svg")
    assert _portable(lost) is lost  # comes back as it is
    odd = _Unpicklable("x", 1)
    assert str(_portable(odd)) == "_Unpicklable: x1"


class _Unpicklable(RuntimeError):
    def __init__(self, text: str, number: int) -> None:
        super().__init__(f"{text}{number}")


def test_a_worker_process_that_dies_is_one_line_not_a_hang() -> None:
    # a fresh process (one thread: the pool forks) whose run of policy i
    # ends its worker process as the kernel's out-of-memory killer would
    script = (
        "import os, sys\n"
        "import axisflow.planning as planning\n"
        "real = planning.plan_policy\n"
        "def dying(text, spaces, **options):\n"
        "    if spaces == ('i',):\n"
        "        os._exit(9)\n"
        "    return real(text, spaces, **options)\n"
        "planning.plan_policy = dying\n"
        "sys.exit(planning.main(sys.argv[1:]))\n"
    )
    argv = ["plan", str(ENERGY), "--extents", "i=3,a=4,μ̃=4,Κ=5", "--batch", "i,Κ"]
    done = subprocess.run(
        [sys.executable, "-c", script, *argv, "--jobs", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "axisflow plan: 2 spaces: 4 policies (each a pipeline run, the best one "
        "again for its front)",
        "axisflow plan: error: a worker process ended abruptly (killed, or out of "
        "memory?); --jobs 1 plans the policies one by one in this process",
    ]


FAILING_RUNS = (
    "import sys\n"
    "import axisflow.planning as planning\n"
    "real = planning.plan_policy\n"
    "def failing(text, spaces, front=False, **options):\n"
    "    if (spaces, front) in {failing_runs}:\n"
    "        raise ValueError(f'run {{spaces}} front={{front}} fails')\n"
    "    return real(text, spaces, front=front, **options)\n"
    "planning.plan_policy = failing\n"
    "sys.exit(planning.main(sys.argv[1:]))\n"
)


@pytest.mark.parametrize(
    ("failing_runs", "error"),
    [
        # the every-space policy's front, planned ahead, is not the best's
        # (i is): one by one never runs it, so its error is moot
        ({(("i", "Κ"), True)}, None),
        # two errors: the one the order of one by one meets first
        ({(("i",), False), (("i", "Κ"), True)}, "run ('i',) front=False fails"),
        ({(("i", "Κ"), False), (("Κ",), False)}, "run ('Κ',) front=False fails"),
    ],
)
def test_worker_processes_fail_as_one_process_fails(
    failing_runs: set[tuple[tuple[str, ...], bool]], error: str | None
) -> None:
    # fresh processes (one thread: the pool forks, the patch goes with it)
    script = FAILING_RUNS.format(failing_runs=failing_runs)
    argv = ["plan", str(ENERGY), "--extents", "i=3,a=4,μ̃=4,Κ=5", "--batch", "i,Κ"]
    printed = {}
    for jobs in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", script, *argv, "--jobs", jobs],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        printed[jobs] = (done.returncode, done.stdout, done.stderr)
    assert printed["2"] == printed["1"]
    status, out, err = printed["1"]
    if error is None:
        assert status == 0 and "Pareto front of i " in out
    else:
        assert (status, out) == (1, "")
        assert err.splitlines()[-1] == f"axisflow plan: error: {error}"
