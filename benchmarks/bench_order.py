"""Contraction order: what each order costs on the CSV-CCSD equations, and
how long ordering and scheduling take.

Inputs: ``examples/sequant/csv_ccsd_{energy,singles_residual,doubles_residual}
_df.txt`` with i=80, a=μ̃=896, Κ=1682, 8-byte elements; and again with the
composite kinds a<2>=40, a<1>=60 (pair- and orbital-specific virtuals).

For every order (file, flops, memory) and batching policy (none and every
combination of i, μ̃, Κ; spaces outermost first, slots shared, blocks of one
element), the forest is built by the SeQuant frontend, classified and
scheduled in memory, and the table gives:

  multiply-adds   the forest's total (the memory report's ``flops``: every
                  value once, shared values once)
  unbatched       peak live bytes of the forest evaluated without loops
  scheduled       peak live bytes of the schedule, and its ratio to unbatched
                  (a ratio above 1 means batching made the peak larger)
  order           time to build the forest (parse excluded; the search per
                  term is the bulk of it for flops and memory)
  schedule        classify-axes + scheduler + memory report, in memory

Then the doubles again with the values several trees share rebuilt in each
tree (``share="tree"``, one loop nest per tree; one run), and, per equation
and extents, the optimality check: the sum over terms of
the flops order's multiply-adds against an oracle: every binarization for
terms of up to 8 tensors (an explicit search written here), opt_einsum's
optimal path recomputed in the same cost convention above that (opt_einsum
is a test dependency; it is installed by ``make venv``).

Then the time to order every term of each equation (the search alone, under
flops and under memory, a fresh ``PlanCache`` per run as the frontend uses
one per expression).

Times are the best of a few runs on a fresh module, seconds.

Run: .venv/bin/python benchmarks/bench_order.py   (or make bench)
     .venv/bin/python benchmarks/bench_order.py --ordering   (only the
     optimality and ordering-time lines)
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from timing import best_of, print_notes  # benchmarks/timing.py
from xdsl.dialects.builtin import ModuleOp

from axisflow.dialects.batch import ForestOp
from axisflow.order import (
    ORDERS,
    Costs,
    Extents,
    Order,
    Plan,
    PlanCache,
    expand_modes,
    forget_shared_pairs,
    parse_extents,
)
from axisflow.passes.classify_axes import classify_forest
from axisflow.pipeline.api import ForestSchedule, PipelineError, attach, plan_forest
from axisflow.planning import policies
from axisflow.roles.index import Index
from axisflow.scheduling.memory import format_bytes, pad_to_width
from axisflow.sequant import Expression, Share, Term, parse, to_module
from axisflow.sequant.ordering import plan_term

ROOT = Path(__file__).resolve().parents[1]
SEQUANT = ROOT / "examples" / "sequant"
EQUATIONS = (
    ("energy", "csv_ccsd_energy_df.txt"),
    ("singles", "csv_ccsd_singles_residual_df.txt"),
    ("doubles", "csv_ccsd_doubles_residual_df.txt"),
)
FULL = "i=80,a=896,μ̃=896,Κ=1682"
COMPOSITE = FULL + ",a<2>=40,a<1>=60"
POLICIES: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (",".join(p) or "none", p) for p in policies(("i", "μ̃", "Κ"))
)
VERBOSE = "-v" in sys.argv
TIB = 1024**4
GIB = 1024**3


def only_forest(module: ModuleOp) -> ForestOp:
    return next(op for op in module.walk() if isinstance(op, ForestOp))


@dataclass
class Row:
    equation: str
    extents: str
    order: str
    policy: str
    flops: int
    unbatched: int
    scheduled: int
    order_time: float
    schedule_time: float
    failure: str = ""
    """Why the pipeline refused the forest (the row has no figures then)."""
    share: Share = "forest"
    """``forest``: values shared by the trees; ``tree``: rebuilt in each."""


def measure(
    equation: str,
    expression: Expression,
    extents: str,
    order: Order,
    policy: str,
    batch: tuple[str, ...],
    runs: int,
    share: Share = "forest",
) -> Row:
    def build() -> ModuleOp:
        return to_module(
            expression, batch, extents=extents, elem=8, order=order, share=share
        )

    t_order, _ = best_of(runs, build)
    t_schedule = float("inf")
    result: ForestSchedule | None = None
    kind = "composite" if "<" in extents else "full"
    for _ in range(runs):  # each run on a fresh module: the passes change it
        forest = only_forest(build())
        begin = time.perf_counter()
        classify_forest(forest)
        try:
            result = plan_forest(forest)
        except PipelineError as error:
            reason = str(error).split(": ", 1)[-1]
            return Row(
                equation, kind, order, policy, 0, 0, 0, t_order, 0.0, reason, share
            )
        attach(forest, result.schedule_op)
        t_schedule = min(t_schedule, time.perf_counter() - begin)
    assert result is not None
    report = result.report
    return Row(
        equation,
        kind,
        order,
        policy,
        report.flops,
        report.unbatched_peak,
        report.scheduled_peak,
        t_order,
        t_schedule,
        share=share,
    )


def print_table(rows: Sequence[Row], header: bool = True) -> None:
    title = (
        f"{'equation':<8} {'extents':<9} {'order':<6} {'batch':<5} "
        f"{'multiply-adds':>13} {'unbatched':>11} {'scheduled':>11} {'ratio':>8} "
        f"{'order s':>8} {'sched s':>8}"
    )
    if header:
        print(title)
        print("-" * len(title))
    for r in rows:
        if r.failure:
            print(
                f"{r.equation:<8} {r.extents:<9} {r.order:<6} "
                f"{pad_to_width(r.policy, 5)} schedule-batches failed: {r.failure}"
            )
            continue
        ratio = r.scheduled / r.unbatched if r.unbatched else 1.0
        flag = " (larger)" if ratio > 1 else ""
        print(
            f"{r.equation:<8} {r.extents:<9} {r.order:<6} {pad_to_width(r.policy, 5)} "
            f"{r.flops:>13.3e} {format_bytes(r.unbatched):>11} "
            f"{format_bytes(r.scheduled):>11} {ratio:>8.3g} "
            f"{r.order_time:>8.3f} {r.schedule_time:>8.3f}{flag}"
        )


# --------------------------------------------------------------------------
# The optimality oracle
# --------------------------------------------------------------------------


class Oracle:
    """Per-term minimum multiply-adds, by the cost model's definition."""

    def __init__(self, term: Term, extents: Extents) -> None:
        self.leaves = [frozenset(expand_modes(t.indices)) for t in term.tensors]
        self.output = frozenset(expand_modes(term.externals()))
        self.extents = extents

    def size(self, modes: frozenset[Index]) -> int:
        return math.prod(self.extents.extent(m) for m in modes)

    def kept(self, subset: frozenset[int]) -> frozenset[Index]:
        if len(subset) == 1:
            return self.leaves[next(iter(subset))]
        inside: set[Index] = set()
        outside: set[Index] = set(self.output)
        for position, modes in enumerate(self.leaves):
            (inside if position in subset else outside).update(modes)
        return frozenset(inside & outside)

    def exhaustive(self) -> int:
        """The fewest multiply-adds over every binarization."""

        @cache
        def best(subset: frozenset[int]) -> int:
            if len(subset) == 1:
                return 0
            first, *rest = sorted(subset)
            found = None
            for mask in range(1 << len(rest)):
                left = frozenset(
                    [first] + [m for b, m in enumerate(rest) if mask >> b & 1]
                )
                right = subset - left
                if right:
                    cost = (
                        best(left)
                        + best(right)
                        + self.size(self.kept(left) | self.kept(right))
                    )
                    found = cost if found is None else min(found, cost)
            assert found is not None
            return found

        return best(frozenset(range(len(self.leaves))))

    def opt_einsum(self) -> int:
        """opt_einsum's optimal path (no outer products), recomputed here."""
        import opt_einsum

        letters: dict[Index, str] = {}
        for modes in [*self.leaves, self.output]:
            for mode in sorted(modes, key=Index.sort_key):
                letters.setdefault(mode, opt_einsum.get_symbol(len(letters)))
        inputs = [frozenset(letters[m] for m in modes) for modes in self.leaves]
        output = frozenset(letters[m] for m in self.output)
        sizes = {letter: self.extents.extent(mode) for mode, letter in letters.items()}
        path = opt_einsum.paths.DynamicProgramming(minimize="flops")(
            inputs, output, sizes
        )
        current = [frozenset({k}) for k in range(len(self.leaves))]
        total = 0
        for pair in path:
            if len(pair) < 2:
                continue
            left, right = (current[p] for p in pair)
            total += self.size(self.kept(left) | self.kept(right))
            current = [c for n, c in enumerate(current) if n not in pair] + [
                left | right
            ]
        return total


ORDERING_RUNS = 3


def ordering_time(expression: Expression, extents: Extents, order: Order) -> float:
    """Seconds to order every term (the search alone), best of
    ``ORDERING_RUNS``, each run with a fresh ``PlanCache`` for the expression
    (as the frontend builds one per expression) and the process's pairs
    forgotten (``forget_shared_pairs``): nothing carries over."""

    def order_all() -> list[Plan]:
        forget_shared_pairs()
        cache = PlanCache()
        return [
            plan_term(term, Costs(extents), order, cache) for term in expression.terms
        ]

    elapsed, _ = best_of(ORDERING_RUNS, order_all)
    return elapsed


def optimality(expression: Expression, extents: Extents) -> tuple[int, int]:
    """(flops order total, oracle total) over the terms of ``expression``."""
    ours = oracle = 0
    cache = PlanCache()
    for term in expression.terms:
        if len(term.tensors) < 2:
            continue
        ours += plan_term(term, Costs(extents), "flops", cache).flops
        check = Oracle(term, extents)
        oracle += check.exhaustive() if len(term.tensors) <= 8 else check.opt_einsum()
    return ours, oracle


def print_optimality() -> None:
    """Per equation and extents: the flops order against the oracle, and the
    time to order every term under flops and under memory."""
    print("optimality of order=flops (sum over terms; oracle: every binarization up")
    print("to 8 tensors, opt_einsum's optimal path above), and time to order all terms")
    print(f"(search only, best of {ORDERING_RUNS}, flops and memory):")
    slowest = 0.0
    for equation, file in EQUATIONS:
        expression = parse((SEQUANT / file).read_text("utf-8"), file)
        for name, text in (("full", FULL), ("composite", COMPOSITE)):
            extents = Extents.make(parse_extents(text))
            ours, oracle = optimality(expression, extents)
            flops_time = ordering_time(expression, extents, "flops")
            memory_time = ordering_time(expression, extents, "memory")
            print(
                f"  {equation:<8} {name:<9} flops {ours:.4e}  oracle {oracle:.4e}  "
                f"ratio {ours / oracle:.2f}  ordering {flops_time:.3f} s  "
                f"memory {memory_time:.3f} s"
            )
            if equation == "doubles":
                slowest = max(slowest, flops_time, memory_time)
    met = "met" if slowest < 1.0 else "NOT met"
    print(
        f"ordering all terms of the doubles: at most {slowest:.3f} s (flops and "
        f"memory, both extents); target under 1 s: {met}"
    )


def main() -> None:
    print_notes()
    if "--ordering" in sys.argv:  # only the optimality and ordering-time lines
        print_optimality()
        return
    runs = 2
    print(f"extents: full {FULL}; composite {COMPOSITE}; 8-byte elements")
    print(
        f"times: best of {runs} runs, seconds, in process (python {sys.version.split()[0]})"
    )
    print()
    rows: list[Row] = []
    for equation, file in EQUATIONS:
        expression = parse((SEQUANT / file).read_text("utf-8"), file)
        for extents in (FULL, COMPOSITE):
            for order in ORDERS:
                for policy, batch in POLICIES:
                    row = measure(
                        equation, expression, extents, order, policy, batch, runs
                    )
                    rows.append(row)
                    if VERBOSE:
                        print_table([row], header=False)
    print_table(rows)
    print()
    print("doubles with the values several trees share rebuilt in each tree")
    print("(share=tree; one run):")
    expression = parse((SEQUANT / EQUATIONS[2][1]).read_text("utf-8"), EQUATIONS[2][1])
    rebuilt: list[Row] = []
    for extents in (FULL, COMPOSITE):
        for order in ORDERS:
            for policy, batch in POLICIES:
                row = measure(
                    "doubles", expression, extents, order, policy, batch, 1, "tree"
                )
                rebuilt.append(row)
    print_table(rebuilt)
    print()
    print_optimality()
    print()
    doubles = [r for r in rows + rebuilt if r.equation == "doubles" and not r.failure]
    for name, target in (("full", 2 * TIB), ("composite", 190 * GIB)):
        for shares in (("forest",), ("forest", "tree")):
            best = min(
                (r for r in doubles if r.extents == name and r.share in shares),
                key=lambda r: r.scheduled,
            )
            met = "met" if best.scheduled <= target else "NOT met"
            values = "values shared" if best.share == "forest" else "values rebuilt"
            among = "shared values only" if shares == ("forest",) else "either way"
            print(
                f"doubles, {name} extents, {among}: best scheduled peak "
                f"{format_bytes(best.scheduled)} (order={best.order}, "
                f"batch={best.policy}, {values}); target {format_bytes(target)}: {met}"
            )
    failed = [r for r in rows if r.failure]
    print(f"schedule-batches failed on {len(failed)} of {len(rows)} forests")
    larger = [r for r in rows if r.scheduled > r.unbatched]
    print(
        f"batching made the peak larger than not batching in {len(larger)} of "
        f"{len(rows)} rows (marked 'larger')"
    )


if __name__ == "__main__":
    main()
