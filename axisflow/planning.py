"""``axisflow plan``: which batching policy to use for an equation, on one screen.

::

    axisflow plan EQ.txt --extents i=80,a=896,μ̃=896,Κ=1682 --batch i,Κ
    axisflow plan EQ.txt --extents ... --batch i,Κ --plot memory.svg

For every policy tried (no batching, each named space alone, and every
combination of them, nested in the order given) the pipeline is run
(frontend, ``classify-axes``, ``schedule-batches``) and one line is printed:
multiply-adds, unbatched and scheduled peaks and their ratio, and how many
loops the scheduler dropped because they would have raised the peak. Then,
for the best policy (smallest scheduled peak, fewer loops on ties): the five
values that dominate its peak (what is live there, largest first, with modes
and sizes) and the dropped loops with both figures. ``--plot FILE.svg|png``
draws live bytes over the schedule's steps, one line per policy, peaks
marked (needs the optional extra ``axisflow[plot]``, i.e. matplotlib).

Bad input (unreadable file, syntax error, unknown space, a plot file of
another type, matplotlib missing) is one line on standard error and exit
status 1 (2 for bad command-line usage); never a traceback.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from axisflow.order import ORDERS, Order
from axisflow.scheduling.memory import (
    Lifetime,
    Sizing,
    forest_flops,
    format_bytes,
    lifetimes,
)
from axisflow.scheduling.options import SHARE_CHOICES, ShareChoice, parse_blocks

PLOT_SUFFIXES = (".svg", ".png")
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
    """``forest`` (values shared by the trees) or ``tree`` (rebuilt in each)."""
    extra_flops: int = 0
    """Multiply-adds the rebuilt values add (0 when shared)."""

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


def live_curve(found: Iterable[Lifetime]) -> list[int]:
    """Live bytes at every program position ``0..last`` (a sweep)."""
    found = list(found)
    last = max((life.end for life in found), default=0)
    change = [0] * (last + 2)
    for life in found:
        change[life.start] += life.bytes
        change[life.end + 1] -= life.bytes
    return list(itertools.accumulate(change[: last + 1]))


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
) -> PolicyPlan:
    """Run the pipeline on ``text`` batched over ``spaces``, each term's
    product in ``order`` (``file|flops|memory``), values shared or rebuilt
    per tree by ``share`` (``auto``: whichever gives the smaller peak)."""
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
        block=parse_blocks(block) if block else 1,
        order=order,
        share=share,
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
        forest_flops(model, sizing),
        report.unbatched_peak,
        report.scheduled_peak,
        dominant,
        [str(d) for d in forest.dropped],
        curve,
        report.first_peak or report.scheduled_peak,
        report.share or "forest",
        report.extra_flops,
    )


def best(plans: Sequence[PolicyPlan]) -> PolicyPlan:
    """The smallest scheduled peak; fewer spaces on ties."""
    return min(plans, key=lambda p: (p.scheduled_peak, len(p.spaces)))


def render(plans: Sequence[PolicyPlan], title: str) -> str:
    """The screenful: the policy table, then the best policy's peak."""
    header = (
        "policy",
        "multiply-adds",
        "values",
        "unbatched",
        "scheduled",
        "ratio",
        "dropped",
    )
    rows = [
        (
            p.label,
            f"{p.flops:.3g}",
            _sharing(p),
            format_bytes(p.unbatched_peak),
            format_bytes(p.scheduled_peak),
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
    lines.append(
        f"best: {chosen.label}, scheduled peak {format_bytes(chosen.scheduled_peak)}"
        f" ({factor:.3g}x below unbatched)"
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


def _sharing(plan: PolicyPlan) -> str:
    """``shared``, or ``rebuilt +9.1%`` (the extra multiply-adds)."""
    if plan.share != "tree":
        return "shared"
    shared = plan.flops - plan.extra_flops
    return f"rebuilt {plan.extra_flops / shared:+.1%}" if shared else "rebuilt"


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
    figure.savefig(path, format=path.suffix[1:])
    plt.close(figure)


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
    plan.add_argument("--block", help="block size: N, or per space i=8,Κ=64")
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
        "(per policy, whichever peak is smaller; default)",
    )
    plan.add_argument("--plot", help="draw memory over steps into FILE.svg|png")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``axisflow`` command; returns the exit status."""
    args = _parser().parse_args(argv)
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
        path = Path(args.equation)
        text = path.read_text(encoding="utf-8")
        spaces = tuple(s.strip() for s in args.batch.split(",") if s.strip())
        plans = [
            plan_policy(
                text,
                policy,
                extents=args.extents,
                elem=args.elem,
                block=args.block,
                separate_instances=args.separate_instances,
                source=str(path),
                order=args.order,
                share=args.share,
            )
            for policy in policies(spaces)
        ]
        extents = args.extents or "defaults"
        title = f"plan for {path.name}  (extents {extents}; {args.elem} B elements)"
        sys.stdout.write(render(plans, title))
        if plot_path is not None:
            plot(plans, plot_path)
            sys.stdout.write(f"plot: {plot_path}\n")
    except (OSError, ValueError) as error:
        message = error.strerror if isinstance(error, OSError) else None
        where = f"{error.filename}: " if isinstance(error, OSError) else ""
        print(f"axisflow plan: error: {where}{message or error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
