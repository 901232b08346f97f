"""Growth: how the canonical factor order and planning grow with the
factors of one term, and planning with the terms of a sum.

Long products: the chain ``t{i_1;i_2} * t{i_2;i_3} * ... * t{i_n;i_n+1}``
(one label, so every factor is in one tie class of
``sequant.canonical.tie_classes``), written in a shuffled order, for ``n``
of 50 to 400 (``--factors``).

  canonical order   ``tie_classes`` of the term (CPU seconds, best of
                    ``--repeat``); the order must be the chain's own
  planning          ``planning.plan_policy`` batched over ``i`` (the
                    pipeline without its IR round trip: both sharings, the
                    guard's trials, each tree's loop order), one run

Long sums: the bundled CSV-CCSD doubles residual (55 terms), and it with
copies of its terms appended, each copy's amplitudes renamed (``t`` to
``u1``, ``u2``, ...) so that the copies share their integral
intermediates but not their amplitudes, as the terms of a larger
coupled-cluster residual do (``--copies``): planning batched over ``i`` at
``i=80, a=μ̃=896, Κ=1682`` with a budget of 100 GiB (the planner prices
each share on the cluster of trees it joins), CPU seconds of one run.

For each, the growth from one size to the next (``x`` times the time for
twice the size: 4x per doubling is quadratic, 8x cubic). Real terms have
a handful of factors; the long products are what the fuzz campaign gives
(``docs/reliability.md``, known limits).

Run: .venv/bin/python benchmarks/bench_growth.py [--factors 50,100,200,400] [--copies 1,2,3]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from timing import best_of, counts_option, positive_option  # benchmarks/timing.py

from axisflow.planning import plan_policy
from axisflow.sequant import parse
from axisflow.sequant.canonical import tie_classes


def chain_text(count: int, shuffled: bool = True) -> str:
    """The chain as SeQuant text, its factors shuffled (or in order)."""
    factors = [f"t{{i_{k};i_{k + 1}}}" for k in range(1, count + 1)]
    if shuffled:
        random.Random(count).shuffle(factors)
    return " * ".join(factors)


def cpu_seconds(action: Callable[[], object], repeat: int = 1) -> float:
    """The least process CPU time of ``repeat`` calls of ``action``."""
    return best_of(repeat, action, clock=time.process_time)[0]


def canonical_seconds(count: int, repeat: int) -> float:
    """CPU seconds of ``tie_classes`` on the shuffled chain (checked)."""
    term = parse(chain_text(count)).terms[0]
    found, classes = tie_classes(term)
    ordered = parse(chain_text(count, shuffled=False)).terms[0].tensors
    assert found.tensors == ordered, "the chain was not read in its order"
    assert classes == [list(range(count))]
    return cpu_seconds(lambda: tie_classes(term), repeat)


def planning_seconds(count: int) -> float:
    """CPU seconds of planning the chain batched over ``i`` (one run)."""
    text = chain_text(count)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the planner's notes
        return cpu_seconds(lambda: plan_policy(text, ("i",), extents="i=8", elem=8))


DOUBLES = (
    Path(__file__).resolve().parent.parent
    / "examples"
    / "sequant"
    / "csv_ccsd_doubles_residual_df.txt"
)


def copied_sum(copies: int) -> str:
    """The doubles residual with ``copies - 1`` copies of its terms
    appended, each copy's amplitudes ``t`` renamed ``u1``, ``u2``, ..."""
    text = DOUBLES.read_text(encoding="utf-8").strip()
    parts = [text] + [re.sub(r"\bt\{", f"u{k}{{", text) for k in range(1, copies)]
    joined = parts[0]
    for part in parts[1:]:
        joined += (" " if part.startswith("-") else " + ") + part
    return joined


def sum_planning_seconds(copies: int) -> float:
    """CPU seconds of planning the copied doubles (one run)."""
    text = copied_sum(copies)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the planner's notes
        return cpu_seconds(
            lambda: plan_policy(
                text,
                ("i",),
                extents="i=80,a=896,μ̃=896,Κ=1682",
                elem=8,
                budget="100GiB",
            ),
        )


def growth(seconds: list[float], counts: list[int], at: int) -> str:
    """The time at ``counts[at]`` over the one before, per doubling."""
    if at == 0 or seconds[at - 1] <= 0:
        return ""
    ratio = seconds[at] / seconds[at - 1]
    factor = counts[at] / counts[at - 1]
    if factor == 2:
        return f"{ratio:.1f}x"
    return f"{ratio:.1f}x for {factor:g}x the size"


def _factors(text: str) -> list[int]:
    return sorted(set(counts_option(text, least=2)))


def main() -> None:
    """Print both tables."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--factors", type=_factors, default=[50, 100, 200, 400])
    parser.add_argument(
        "--copies",
        type=lambda text: sorted(set(counts_option(text))),
        default=[1, 2, 3],
    )
    parser.add_argument("--repeat", type=positive_option, default=3)
    args = parser.parse_args()
    counts: list[int] = args.factors
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20 * max(counts)))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"# growth: Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load average {load:.2f} at start; CPU seconds"
    )
    canonical = [canonical_seconds(count, args.repeat) for count in counts]
    planning = [planning_seconds(count) for count in counts]
    print("\n# long products: a chain of one label")
    print(
        f"{'factors':>8}  {'canonical order s':>18}  {'growth':>7}"
        f"  {'planning s':>11}  {'growth':>7}"
    )
    for at, count in enumerate(counts):
        print(
            f"{count:>8}  {canonical[at]:>18.3f}  {growth(canonical, counts, at):>7}"
            f"  {planning[at]:>11.2f}  {growth(planning, counts, at):>7}"
        )
    copies: list[int] = args.copies
    summed = [sum_planning_seconds(count) for count in copies]
    print("\n# long sums: the doubles residual and copies of its terms")
    print(f"{'terms':>8}  {'planning s':>11}  {'growth':>26}")
    terms = [len(parse(copied_sum(count)).terms) for count in copies]
    for at, count in enumerate(terms):
        print(f"{count:>8}  {summed[at]:>11.2f}  {growth(summed, terms, at):>26}")


if __name__ == "__main__":
    main()
