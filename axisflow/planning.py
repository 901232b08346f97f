"""``axisflow plan``: which batching policy to use for an equation, on one screen.

::

    axisflow plan EQ.txt --extents i=80,a=896,μ̃=896,Κ=1682 --batch i,Κ
    axisflow plan EQ.txt --extents ... --batch i,Κ --plot memory.svg

For every policy tried (no batching, each named space alone, and every
combination of them, nested in the order given) the pipeline is run
(frontend, the planner with ``--share auto``, ``classify-axes``,
``schedule-batches``) for the objective (``--budget``: the fewest
multiply-adds within it; ``--max-extra-flops``: the smallest peak within
that much more than the shared forest's multiply-adds; neither: the
smallest peak within 10%) and one line is printed: the multiply-adds the
schedule performs and how far above the shared forest's they are, how
values are shared, unbatched and scheduled peaks, the lower bound, their
ratio, and how many loops were dropped because they would have raised the
peak. Then, for the best policy (smallest scheduled peak, fewer loops on
ties): the Pareto front the planner found (peak, multiply-adds) with the
chosen point, the five values that dominate its peak (what is live there,
largest first, with modes and sizes) and the dropped loops with both
figures. ``--plot FILE.svg|png`` draws live bytes over the schedule's steps,
one line per policy, peaks marked (needs the optional extra
``axisflow[plot]``, i.e. matplotlib).

``--batch`` with n spaces tries 2^n policies (each a pipeline run; with
``--share auto`` the best one runs again for its whole front): the count is said on standard error, and more than
``MAX_SPACES`` spaces are refused unless ``--max-spaces`` allows them. The
runs share ``--jobs`` worker processes (``plan_policies``; the same output
as one by one).
Notes (an ``--extents`` or ``--block`` entry naming a space the equation
lacks, ignored) are lines ``axisflow plan: note: ...`` on standard error.

Bad input (unreadable file, invalid UTF-8, syntax error, unknown space, an
empty name in ``--batch``, a plot file of another type, matplotlib missing, a
plot that cannot be written) is one line on standard error and exit status 1
(2 for bad command-line usage); never a traceback. The plot is written to a
temporary file next to it and renamed: a failure leaves an earlier plot as
it was.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import multiprocessing
import os
import pickle
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

from axisflow.notes import Note, UnusedOptionNote, collected_notes
from axisflow.numerals import significant
from axisflow.order import ORDERS, Order
from axisflow.running import add_run_parser, run_command
from axisflow.scheduling.memory import (
    Sizing,
    format_bytes,
    lifetimes,
    live_curve,
)
from axisflow.scheduling.options import SHARE_CHOICES, ShareChoice, parse_blocks

PLOT_SUFFIXES = (".svg", ".png")
MAX_SPACES = 4
"""Most ``--batch`` spaces tried without ``--max-spaces`` (2^4 = 16 policies)."""
TOP_VALUES = 5
MAX_LISTED = 4
"""Dropped loops listed for the best policy (the rest are counted)."""


@dataclass
class LiveValue:
    """One storage object live at a peak."""

    name: str
    kind: str
    modes: list[str]
    bytes: int


@dataclass
class PolicyPlan:
    """The pipeline's figures for one batching policy."""

    spaces: tuple[str, ...]
    flops: int
    unbatched_peak: int
    scheduled_peak: int
    dominant: list[LiveValue]
    dropped: list[str] = field(default_factory=list[str])
    curve: list[int] = field(default_factory=list[int])
    """Live bytes at every step of the schedule."""
    first_peak: int = 0
    """The scheduled peak before any loop was dropped."""
    share: str = "forest"
    """``forest`` (values shared by the trees), ``tree`` (rebuilt in each)
    or ``planned`` (the planner's choice)."""
    extra_flops: int = 0
    """Multiply-adds above the shared forest's (each value once)."""
    lower_bound: int = 0
    lower_bound_reason: str = ""
    front: list[dict[str, object]] = field(default_factory=list[dict[str, object]])
    """The planner's Pareto front (``MemoryReport.front``)."""
    blocks: dict[str, int] = field(default_factory=dict[str, int])
    budget: int | None = None

    @property
    def label(self) -> str:
        """``none`` or the spaces, outermost first (``i,Κ``)."""
        return ",".join(self.spaces) or "none"

    @property
    def ratio(self) -> float:
        """Scheduled over unbatched peak (1 when both are zero)."""
        if self.unbatched_peak == 0:
            return 1.0
        return self.scheduled_peak / self.unbatched_peak


def policies(spaces: Sequence[str]) -> list[tuple[str, ...]]:
    """No batching, then every non-empty combination of ``spaces`` (by
    size, each keeping the order given)."""
    found: list[tuple[str, ...]] = [()]
    for size in range(1, len(spaces) + 1):
        found.extend(itertools.combinations(spaces, size))
    return found


def plan_policy(
    text: str,
    spaces: tuple[str, ...],
    *,
    extents: str | None,
    elem: int,
    block: str | None = None,
    separate_instances: bool = False,
    source: str = "<input>",
    order: Order = "flops",
    share: ShareChoice = "auto",
    budget: str | None = None,
    max_extra_flops: str | None = None,
    front: bool = False,
) -> PolicyPlan:
    """Run the pipeline on ``text`` batched over ``spaces``, each term's
    product in ``order`` (``file|flops|memory``), values shared, rebuilt per
    tree or planned for the objective by ``share`` (``auto``: the planner);
    ``front``: search the whole Pareto front."""
    from axisflow.pipeline.api import plan_expression
    from axisflow.sequant import parse

    expression = parse(text, source=source)
    # the pipeline without its IR round trip: the figures are the same
    forest = plan_expression(
        expression,
        spaces,
        extents=extents,
        elem=elem,
        separate_instances=separate_instances,
        name=Path(source).stem or "sequant",
        block=parse_blocks(block) if block else None,
        order=order,
        share=share,
        budget=budget,
        max_extra_flops=max_extra_flops,
        front=front,
    )
    model = forest.model
    sizing = Sizing(model)
    found = lifetimes(model, forest.schedule, sizing)
    curve = live_curve(found)
    top = max(range(len(curve)), key=curve.__getitem__, default=0)
    live = [life for life in found if life.start <= top <= life.end]
    live.sort(key=lambda life: -life.bytes)
    residual_modes = () if forest.residual is None else forest.residual.modes

    def modes(name: str) -> list[str]:
        value = model.values.get(name)
        chosen = residual_modes if value is None else value.modes
        return [m.full_label for m in chosen]

    dominant = [
        LiveValue(life.value, life.kind, modes(life.value), life.bytes)
        for life in live[:TOP_VALUES]
    ]
    report = forest.report
    return PolicyPlan(
        spaces,
        report.flops,
        report.unbatched_peak,
        report.scheduled_peak,
        dominant,
        [str(d) for d in forest.dropped],
        curve,
        report.first_peak or report.scheduled_peak,
        report.share or "forest",
        report.extra_flops,
        report.lower_bound,
        report.lower_bound_reason,
        report.front,
        report.blocks,
        report.budget,
    )


@dataclass(frozen=True)
class PlanOptions:
    """``plan_policy``'s options but the policy and ``front``: the same for
    every policy ``axisflow plan`` tries."""

    extents: str | None
    elem: int
    block: str | None = None
    separate_instances: bool = False
    source: str = "<input>"
    order: Order = "flops"
    share: ShareChoice = "auto"
    budget: str | None = None
    max_extra_flops: str | None = None


@dataclass(frozen=True)
class _Job:
    """One pipeline run of ``plan_policies``."""

    text: str
    spaces: tuple[str, ...]
    options: PlanOptions
    front: bool


def _run_job(job: _Job) -> tuple[PolicyPlan, list[Note]]:
    """``job``'s plan and the notes its run emitted (in a worker process
    of ``plan_policies`` or in this one)."""
    with collected_notes() as notes:
        plan = plan_policy(
            job.text, job.spaces, **dataclasses.asdict(job.options), front=job.front
        )
    return plan, notes


def _run_job_apart(job: _Job) -> tuple[PolicyPlan, list[Note]]:
    """``_run_job`` in a worker process: an error it raises comes back
    ``_portable``."""
    try:
        return _run_job(job)
    except Exception as error:
        raise _portable(error) from None


def _portable(error: Exception) -> Exception:
    """``error`` itself if it comes back from pickling, the way a worker
    process hands it over; else one of its kind (``OSError``,
    ``ValueError``, else ``RuntimeError``) with the same message. A
    process pool that cannot unpickle what a worker hands back is broken
    (``ProcessPoolExecutor``) or waits for ever (``multiprocessing.Pool``),
    and the run's own message is lost (``SequantError`` takes its location
    as arguments of its own, which pickling loses)."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # anything a class's own __init__ or __reduce__ raises
        if isinstance(error, OSError):
            return OSError(error.errno, error.strerror or str(error), error.filename)
        if isinstance(error, ValueError):
            return ValueError(str(error))
        return RuntimeError(f"{type(error).__name__}: {error}")
    return error


def default_jobs() -> int:
    """The cores this process may run on (``--jobs``' default)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def plan_policies(
    text: str,
    tried: Sequence[tuple[str, ...]],
    options: PlanOptions,
    *,
    front: bool,
    jobs: int = 1,
) -> tuple[list[PolicyPlan], list[Note]]:
    """Every policy of ``tried`` planned (``plan_policy``), and with
    ``front`` the best one (``best``) again for its whole Pareto front, in
    its place; with the notes the runs emitted, each once, in the order
    the runs come. ``jobs`` above 1: the runs share that many worker
    processes, and the policy of every space (``tried[-1]``, usually the
    best) runs for its front from the start, beside the others, so that
    the command waits for the longest run rather than for the sum (the
    same plans as one by one: a run depends on its policy alone)."""
    runs = [_Job(text, spaces, options, False) for spaces in tried]
    ahead = (
        _Job(text, tried[-1], options, True)
        if front and tried[-1] and jobs > 1
        else None
    )
    processes = min(jobs, len(runs) + (ahead is not None))
    if processes <= 1:
        done = [_run_job(job) for job in runs]
        plans = [plan for plan, _ in done]
        chosen = best(plans)
        if front and chosen.spaces:
            done.append(_run_job(_Job(text, chosen.spaces, options, True)))
            plans[plans.index(chosen)] = done[-1][0]
        return plans, _once([note for _, found in done for note in found])
    # fork (no imports again) where no other thread could hold a lock the
    # child inherits; a program running threads gets fresh interpreters
    method = "fork" if threading.active_count() == 1 else "spawn"
    context = multiprocessing.get_context(method)
    pool = ProcessPoolExecutor(processes, mp_context=context)
    try:
        # the longest run first: the others fill the other processes
        ahead_future = None if ahead is None else pool.submit(_run_job_apart, ahead)
        pending = [pool.submit(_run_job_apart, job) for job in runs]
        # results (and the first error) in the order one by one meets them;
        # the run ahead counts only where one by one would have made it
        done = [future.result() for future in pending]
        plans = [plan for plan, _ in done]
        chosen = best(plans)
        if front and chosen.spaces:
            if ahead_future is not None and chosen.spaces == tried[-1]:
                done.append(ahead_future.result())
            else:
                again = _Job(text, chosen.spaces, options, True)
                done.append(pool.submit(_run_job_apart, again).result())
            plans[plans.index(chosen)] = done[-1][0]
    except BrokenProcessPool:
        raise WorkerProcessError(
            "a worker process ended abruptly (killed, or out of memory?); "
            "--jobs 1 plans the policies one by one in this process"
        ) from None
    finally:
        # after an error, the runs not started are dropped (those running end)
        pool.shutdown(wait=True, cancel_futures=True)
    return plans, _once([note for _, found in done for note in found])


class WorkerProcessError(RuntimeError):
    """A worker process of ``plan_policies`` that ended without a result."""


def _once(notes: Iterable[Note]) -> list[Note]:
    """``notes`` without repeats (by their text), in order."""
    first: dict[str, Note] = {}
    for note in notes:
        first.setdefault(str(note), note)
    return list(first.values())


def best(plans: Sequence[PolicyPlan]) -> PolicyPlan:
    """The smallest scheduled peak; fewer spaces on ties."""
    return min(plans, key=lambda p: (p.scheduled_peak, len(p.spaces)))


def render(plans: Sequence[PolicyPlan], title: str) -> str:
    """The screenful: the policy table, then the best policy's peak."""
    header = (
        "policy",
        "multiply-adds",
        "vs shared",
        "values",
        "unbatched",
        "scheduled",
        "bound",
        "ratio",
        "dropped",
    )
    rows = [
        (
            p.label,
            significant(p.flops, 3),
            _extra(p.flops, p.extra_flops),
            _sharing(p),
            format_bytes(p.unbatched_peak),
            format_bytes(p.scheduled_peak),
            format_bytes(p.lower_bound),
            f"{p.ratio:#.3g}x",
            str(len(p.dropped)),
        )
        for p in plans
    ]
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
    lines = [title]
    for row in [header, *rows]:
        lines.append(
            "  "
            + "  ".join(
                cell.ljust(w) if k == 0 else cell.rjust(w)
                for k, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    chosen = best(plans)
    factor = 1 / chosen.ratio if chosen.ratio else math.inf
    bound = (
        f", {chosen.scheduled_peak / chosen.lower_bound:.3g}x the lower bound"
        if chosen.lower_bound
        else ""
    )
    blocks = ", ".join(f"{k}={b}" for k, b in chosen.blocks.items())
    lines.append(
        f"best: {chosen.label}, scheduled peak {format_bytes(chosen.scheduled_peak)}"
        f" ({factor:.3g}x below unbatched{bound})"
        + (f", blocks {blocks}" if blocks else "")
    )
    if chosen.lower_bound:
        lines.append(
            f"lower bound of {chosen.label}: {format_bytes(chosen.lower_bound)} "
            f"({chosen.lower_bound_reason})"
        )
    if chosen.front:
        lines.append(
            f"Pareto front of {chosen.label} (peak at blocks of 1, multiply-adds; "
            "* the chosen point):"
        )
        shared = chosen.flops - chosen.extra_flops
        for point in chosen.front:
            flops = point["flops"]
            assert isinstance(flops, int)
            peak_bytes = point["peak_bytes"]
            assert isinstance(peak_bytes, int)
            mark = "*" if point["chosen"] else " "
            lines.append(
                f"  {mark} {format_bytes(peak_bytes):>10}  {significant(flops, 4)}  "
                f"{_extra(flops, flops - shared):>7}  {point['kind']}"
                + (f", {point['shares']} shares" if point["kind"] == "planned" else "")
                + _rebuilt(point.get("rebuilt_in_loops"))
            )
    lines.append(f"values dominating the peak of {chosen.label}:")
    for value in chosen.dominant:
        lines.append(
            f"  @{value.name} {value.kind}  [{' '.join(value.modes) or 'scalar'}]"
            f"  {format_bytes(value.bytes)}"
        )
    if not chosen.dominant:
        lines.append("  (nothing live)")
    lines.append(f"loops dropped in {chosen.label}:")
    lines.extend(f"  {d}" for d in chosen.dropped[:MAX_LISTED])
    if len(chosen.dropped) > MAX_LISTED:
        lines.append(f"  ... and {len(chosen.dropped) - MAX_LISTED} more")
    if not chosen.dropped:
        lines.append("  none")
    for p in plans:
        if p.dropped and p is not chosen:
            lines.append(
                f"{p.label}: {len(p.dropped)} loop(s) dropped, peak "
                f"{format_bytes(p.first_peak)} before, {format_bytes(p.scheduled_peak)}"
                " after"
            )
    return "\n".join(lines) + "\n"


def _rebuilt(loops: object) -> str:
    """What a front point rebuilds inside loops (the planner's step 4)."""
    if not isinstance(loops, int) or not loops:
        return ""
    return f", values rebuilt inside {loops} loop{'s' if loops > 1 else ''}"


def _sharing(plan: PolicyPlan) -> str:
    """How values several trees build are evaluated: ``shared``, ``rebuilt``
    (per tree) or ``planned``."""
    return {"tree": "rebuilt", "planned": "planned"}.get(plan.share, "shared")


def _extra(flops: int, extra: int) -> str:
    """``+9.1%``: multiply-adds above the shared forest's."""
    shared = flops - extra
    return f"{extra / shared:+.1%}" if shared else "+0"


def plot(plans: Sequence[PolicyPlan], path: Path) -> None:
    """Live bytes over the schedule's steps, one line per policy, peaks
    marked; written as SVG or PNG by ``path``'s suffix."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 4.5))
    for p in plans:
        steps = range(len(p.curve))
        (line,) = axes.plot(steps, p.curve, label=f"{p.label}", linewidth=1.2)
        if p.curve:
            top = max(steps, key=p.curve.__getitem__)
            axes.plot([top], [p.curve[top]], "o", color=line.get_color())
            axes.annotate(
                format_bytes(p.curve[top]),
                (top, p.curve[top]),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize=8,
            )
    if any(max(p.curve, default=0) > 0 for p in plans):
        axes.set_yscale("log")
    axes.set_xlabel("schedule step")
    axes.set_ylabel("live bytes")
    axes.set_title("memory over the schedule (peak marked)")
    axes.legend(title="batch")
    figure.tight_layout()
    try:
        write_atomically(
            path, lambda target: figure.savefig(target, format=path.suffix[1:])
        )
    finally:
        plt.close(figure)


def write_atomically(path: Path, write: Callable[[str], None]) -> None:
    """``write(name)`` into a temporary file next to ``path``, then renamed
    over it: a failed write (a full disk) leaves an earlier ``path`` as it
    was and no temporary file. A ``path`` that is no regular file (a device,
    a pipe) is written directly. Raises ``OSError`` naming ``path``."""
    target = os.path.realpath(path)
    try:
        if os.path.exists(target) and not os.path.isfile(target):
            write(target)
            return
        handle, temporary = tempfile.mkstemp(
            dir=os.path.dirname(target),
            prefix=f".{os.path.basename(target)}.",
            suffix=path.suffix,
        )
        os.close(handle)
        try:
            write(temporary)
            os.replace(temporary, target)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as error:
        raise OSError(error.errno, error.strerror or str(error), str(path)) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="axisflow", description="Plan batched evaluation of SeQuant equations."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    plan = commands.add_parser("plan", help="compare batching policies")
    plan.add_argument("equation", help="SeQuant expression text file")
    plan.add_argument("--extents", help='space extents, e.g. "i=80,a=896,Κ=1682"')
    plan.add_argument(
        "--batch", default="", help="spaces to try, outermost first (i,Κ)"
    )
    plan.add_argument("--elem", type=int, default=8, help="bytes per element")
    plan.add_argument(
        "--block",
        help="block size: N, per space i=8,Κ=64, or auto (as large as the budget "
        "allows; the default with --share auto)",
    )
    plan.add_argument(
        "--budget",
        help="memory budget (100GiB, 500MB, 4e9): the fewest multiply-adds within it",
    )
    plan.add_argument(
        "--max-extra-flops",
        help="the smallest peak within this much more multiply-adds than the shared "
        "forest's (5%%, 0.05)",
    )
    plan.add_argument(
        "--separate-instances", action="store_true", help="one fusion slot per loop"
    )
    plan.add_argument(
        "--order",
        choices=ORDERS,
        default="flops",
        help="contraction order of each term (default: flops)",
    )
    plan.add_argument(
        "--share",
        choices=SHARE_CHOICES,
        default="auto",
        help="values several trees build: shared, rebuilt per tree, or auto "
        "(the planner: shared where the objective pays for it; default)",
    )
    plan.add_argument("--plot", help="draw memory over steps into FILE.svg|png")
    plan.add_argument(
        "--max-spaces",
        type=_count,
        default=MAX_SPACES,
        metavar="N",
        help=f"most --batch spaces to combine (2^N policies; default {MAX_SPACES})",
    )
    plan.add_argument(
        "--jobs",
        type=_count,
        default=None,
        metavar="N",
        help="worker processes for the policies' runs (default: the cores this "
        "process may use; 1 runs them one by one in this process)",
    )
    add_run_parser(commands)
    return parser


def _count(text: str) -> int:
    """A positive integer option (ASCII digits)."""
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def batch_spaces(text: str, limit: int) -> tuple[str, ...]:
    """``--batch``'s spaces (``axisflow.sequant.forest.batch_entries``:
    ``""`` is none, an empty name is an error); a space named twice is an
    error, and so are more than ``limit`` spaces (2^n policies)."""
    from axisflow.sequant.forest import batch_entries

    spaces = tuple(batch_entries(text))
    twice = sorted({s for s in spaces if spaces.count(s) > 1})
    if twice:
        raise ValueError(f"--batch: {', '.join(twice)} named twice in {text!r}")
    if len(spaces) > limit:
        raise ValueError(
            f"--batch names {len(spaces)} spaces: {2 ** len(spaces)} policies, each "
            f"a pipeline run; at most {limit} are combined unless --max-spaces "
            f"{len(spaces)} asks for them"
        )
    return spaces


def main(argv: Sequence[str] | None = None) -> int:
    """The ``axisflow`` command; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "run":
        return run_command(args)
    try:
        plot_path = Path(args.plot) if args.plot else None
        if plot_path is not None:
            if plot_path.suffix.lower() not in PLOT_SUFFIXES:
                raise ValueError(f"--plot: {plot_path} must end in .svg or .png")
            try:
                import matplotlib  # noqa: F401  # pyright: ignore[reportUnusedImport]
            except ImportError:
                raise ValueError(
                    "--plot needs matplotlib: pip install 'axisflow[plot]'"
                ) from None
        from axisflow.sequant import parse
        from axisflow.sequant.forest import check_spaces
        from axisflow.sequant.syntax import decode

        path = Path(args.equation)
        text = decode(path.read_bytes(), str(path))
        spaces = batch_spaces(args.batch, args.max_spaces)
        expression = parse(text, str(path))
        if not expression.terms:
            raise ValueError(f"{path}: the expression has no term: nothing to plan")
        # before any policy runs: a space the equation lacks fails them all
        check_spaces(expression, spaces)
        tried = policies(spaces)
        if len(spaces) > 1:
            runs = (
                "each a pipeline run, the best one again for its front"
                if args.share == "auto"
                else "each a pipeline run"
            )
            print(
                f"axisflow plan: {len(spaces)} spaces: {len(tried)} policies ({runs})",
                file=sys.stderr,
            )

        options = PlanOptions(
            extents=args.extents,
            elem=args.elem,
            block=args.block,
            separate_instances=args.separate_instances,
            source=str(path),
            order=args.order,
            share=args.share,
            budget=args.budget,
            max_extra_flops=args.max_extra_flops,
        )
        # the best policy's whole front too (the other rows searched only
        # what their objective needed)
        plans, notes = plan_policies(
            text,
            tried,
            options,
            front=args.share == "auto",
            jobs=args.jobs or default_jobs(),
        )
        for note in notes:
            if isinstance(note, UnusedOptionNote):  # the table says what dropped
                print(f"axisflow plan: note: {note}", file=sys.stderr)
        extents = args.extents or "defaults"
        objective = (
            f"; budget {args.budget}"
            if args.budget
            else f"; at most {args.max_extra_flops} more multiply-adds"
            if args.max_extra_flops
            else ""
        )
        title = (
            f"plan for {path.name}  (extents {extents}; {args.elem} B elements"
            f"{objective})"
        )
        sys.stdout.write(render(plans, title))
        if plot_path is not None:
            plot(plans, plot_path)
            sys.stdout.write(f"plot: {plot_path}\n")
    except (OSError, ValueError, WorkerProcessError) as error:
        if isinstance(error, OSError):
            where = f"{error.filename}: " if error.filename else ""
            message = f"{where}{error.strerror or error}"
        else:
            message = str(error)
        print(f"axisflow plan: error: {message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
