"""Benchmark: classify-axes against parsing, on generated forests.

For forests of about 1k, 10k and 50k ops it prints the time xdsl-opt's
parser takes on the file (in process: the same ``Parser`` xdsl-opt runs, so
interpreter start-up does not blur the ratio), the verification time, the
``classify-axes`` time, their ratio, and the growth per 10x ops.

The pass's times, on which the growth rests, are measured interleaved: in
each of ``ROUNDS`` rounds every size runs one sample (the pass repeated
until the sample takes at least ``SAMPLE_SECONDS``, its time per pass),
and each size keeps its best round. Timing the sizes one after another
with more runs for the small ones made the growth follow the host's load
between them (one run printed 13.2x for 1k to 10k and 11.3x for 10k to
50k, the next 10.3x and 14.5x).

Goals (issue 2): the pass costs at most 20% of parsing the same file, and 10x
more ops costs at most 12x more time. Run: ``.venv/bin/python
benchmarks/bench_classify_axes.py`` (``--quick`` for a smoke run;
``--instructions`` counts the pass's instructions at 1k and 10k ops under
valgrind instead, some 3 minutes).
"""

from __future__ import annotations

import gc
import math
import random
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.parser import Parser

from axisflow.dialects.batch import Batch
from axisflow.passes.classify_axes import ClassifyAxesPass

SPACES = ("i", "a", "Κ")
ROUNDS = 7
SAMPLE_SECONDS = 0.3


def generate(target_ops: int, seed: int = 7) -> str:
    """A forest text of about ``target_ops`` ops: density-fitted-like terms of
    3 to 5 factors over a pool of shared leaves, each tree batched over Κ and
    i at its root (fused slots), with intermediates shared between terms."""
    rng = random.Random(seed)
    lines = ["batch.forest @bench {"]
    lines += [f"  batch.space {key} extent 8" for key in SPACES]
    leaves: dict[str, list[str]] = {}
    for number in range(40):
        keys = rng.sample(SPACES, rng.randint(2, 3))
        leaves[f"L{number}"] = [f"{key}_1" for key in keys]
        lines.append(
            f'  batch.value @L{number} [{", ".join(leaves[f"L{number}"])}] leaf "L"'
        )
    ops = 4 + len(leaves)
    value_lines: list[str] = []
    tree_lines: list[str] = []
    tree = 0
    while ops < target_ops:
        count = rng.randint(3, 5)
        factors = [rng.choice(sorted(leaves)) for _ in range(count)]
        # Per term, give each leaf slot a label; an index shared by two leaves
        # is contracted once both are folded in.
        labels = [
            [f"{lab.split('_')[0]}_{rng.randint(1, 3)}" for lab in leaves[f]]
            for f in factors
        ]
        labels = [
            list(dict.fromkeys(ls)) if len(set(ls)) == len(ls) else leaves[f]
            for ls, f in zip(labels, factors, strict=True)
        ]
        labels = [
            ls if len(ls) == len(leaves[f]) else leaves[f]
            for ls, f in zip(labels, factors, strict=True)
        ]
        total = Counter(label for ls in labels for label in ls)
        uses = [f"batch.use @{factors[0]} [{', '.join(labels[0])}]"]
        current = labels[0]
        current_name = factors[0]
        seen = Counter(labels[0])
        for position in range(1, count):
            right = labels[position]
            seen.update(right)
            union = list(dict.fromkeys(current + right))
            common = [x for x in current if x in right]
            result = [
                x
                for x in union
                if seen[x] < total[x] or total[x] == 1 or x not in common
            ]
            result = [
                x
                for x in result
                if not (x in common and seen[x] == total[x] and total[x] > 1)
            ]
            dangling = [x for x in union if x not in result and x not in common]
            result += dangling
            contracted = [x for x in common if x not in result]
            name = f"V{tree}_{position}"
            contracted_text = (
                f" contracted [{', '.join(contracted)}]" if contracted else ""
            )
            value_lines.append(
                f"  batch.value @{name} [{', '.join(result)}]{contracted_text} = "
                f"@{current_name} [{', '.join(current)}] * @{factors[position]} [{', '.join(right)}]"
            )
            inner = "\n".join("  " + u for u in uses)
            uses = [
                f"batch.use @{name} [{', '.join(result)}] {{\n{inner}\n"
                f"  batch.use @{factors[position]} [{', '.join(right)}]\n}}"
            ]
            current, current_name = result, name
            ops += 2
        batch_labels = sorted(
            {x for x in current if x.startswith(("Κ", "i"))} or {"Κ_1"}
        )
        body = uses[0]
        for label in reversed(batch_labels):
            body = f"batch.loop {label} slot 0 {{\n{body}\n}}"
        tree_lines.append(f"  batch.tree @T{tree} {{\n{body}\n  }}")
        ops += 2 + len(batch_labels)
        tree += 1
    lines += value_lines + tree_lines + ["}"]
    return "\n".join(lines) + "\n"


def context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Batch)
    return ctx


def best_of(repeats: int, action, budget: float = 2.0) -> float:  # type: ignore[no-untyped-def]
    """Best CPU time of at least ``repeats`` runs, more while the runs so far
    took less than ``budget`` seconds (small inputs are noisy). Process time,
    not wall time, since the machine is shared; a full collection first so
    that earlier garbage is not charged to this run."""
    times: list[float] = []
    while len(times) < repeats or (sum(times) < budget and len(times) < 100):
        gc.collect()
        start = time.process_time()
        action()
        times.append(time.process_time() - start)
    return min(times)


def interleaved_best(actions: list[Callable[[], object]], rounds: int) -> list[float]:
    """Each action's best CPU time per run over ``rounds`` rounds, the actions
    taking turns within a round; a sample repeats its action until it has
    taken ``SAMPLE_SECONDS`` (the count fixed by a first run)."""
    repeats: list[int] = []
    for action in actions:
        start = time.process_time()
        action()
        once = max(time.process_time() - start, 1e-6)
        repeats.append(max(1, math.ceil(SAMPLE_SECONDS / once)))
    best = [math.inf] * len(actions)
    for _ in range(rounds):
        for k, action in enumerate(actions):
            gc.collect()
            start = time.process_time()
            for _ in range(repeats[k]):
                action()
            best[k] = min(best[k], (time.process_time() - start) / repeats[k])
    return best


def one_run(size: int, passes: int) -> None:
    """Parse the forest of ``size`` and run the pass ``passes`` times (what
    ``--instructions`` counts under cachegrind)."""
    module = Parser(context(), generate(size)).parse_module()
    for _ in range(passes):
        ClassifyAxesPass().apply(context(), module)


def instructions(size: int, passes: int) -> int:
    """Instructions ``one_run(size, passes)`` executes, counted by valgrind's
    cachegrind (no cache simulation)."""
    completed = subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--one-run",
            str(size),
            str(passes),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", completed.stderr)
    if found is None:
        raise SystemExit(
            f"no instruction count in valgrind's output:\n{completed.stderr}"
        )
    return int(found.group(1).replace(",", ""))


def instruction_growth(sizes: list[int]) -> None:
    """Instructions of one pass (half the difference between runs of three
    passes and of one: parsing cancels) per size, and their growth; a
    machine's load and the heap's layout do not move these counts."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    print("classify-axes instructions per pass (cachegrind, --cache-sim=no)")
    previous: tuple[int, int] | None = None
    for size in sizes:
        per_pass = (instructions(size, 3) - instructions(size, 1)) // 2
        ops = sum(1 for _ in Parser(context(), generate(size)).parse_module().walk())
        growth = ""
        if previous is not None:
            growth = f"  {per_pass / previous[1]:.2f}x for {ops / previous[0]:.1f}x ops"
        print(f"  {size:>6} ({ops} ops): {per_pass / 1e6:8.1f} M{growth}")
        previous = (ops, per_pass)


def main() -> None:
    if sys.argv[1:2] == ["--one-run"]:
        one_run(int(sys.argv[2]), int(sys.argv[3]))
        return
    if "--instructions" in sys.argv:
        instruction_growth([1_000, 10_000])
        return
    quick = "--quick" in sys.argv
    sizes = [1_000, 10_000] if quick else [1_000, 10_000, 50_000]
    repeats = 1 if quick else 5
    rows = []
    modules: list[ModuleOp] = []
    for size in sizes:
        text = generate(size)
        module_holder: list[ModuleOp] = []

        def parse(text: str = text, holder: list[ModuleOp] = module_holder) -> None:
            holder.clear()
            holder.append(Parser(context(), text).parse_module())

        parse_time = best_of(repeats, parse)
        module = module_holder[0]
        op_count = sum(1 for _ in module.walk())
        verify_time = best_of(repeats, module.verify)
        modules.append(module)
        rows.append((size, op_count, parse_time, verify_time))
    pass_times = interleaved_best(
        [
            lambda module=module: ClassifyAxesPass().apply(context(), module)
            for module in modules
        ],
        1 if quick else ROUNDS,
    )

    print(
        f"classify-axes vs parsing (CPU seconds; parse and verify: best of >= "
        f"{repeats} runs, small inputs repeated up to 2 s; classify: best of "
        f"{1 if quick else ROUNDS} interleaved rounds of >= {SAMPLE_SECONDS} s)"
    )
    print(
        f"{'target':>8} {'ops':>8} {'parse':>9} {'verify':>9} {'classify':>9} {'classify/parse':>15} {'growth(parse)':>14} {'growth(classify)':>17} {'classify per 10x':>17}"
    )
    previous = None
    growths: list[float] = []
    for (size, ops, parse_time, verify_time), pass_time in zip(
        rows, pass_times, strict=True
    ):
        growth = growth_pass = per_ten = ""
        if previous is not None:
            scale = ops / previous[1]
            growth = f"{parse_time / previous[2]:.2f}x/{scale:.1f}x"
            growth_pass = f"{pass_time / previous[4]:.2f}x/{scale:.1f}x"
            # The growth normalised to a 10x step: ratio ** (1 / log10(scale)).
            normalised = (pass_time / previous[4]) ** (1 / math.log10(scale))
            growths.append(normalised)
            per_ten = f"{normalised:.2f}x"
        print(
            f"{size:>8} {ops:>8} {parse_time:>9.3f} {verify_time:>9.3f} {pass_time:>9.3f} "
            f"{pass_time / parse_time:>14.1%} {growth:>14} {growth_pass:>17} {per_ten:>17}"
        )
        previous = (size, ops, parse_time, verify_time, pass_time)
    print("goals: classify/parse <= 20%; growth(classify) <= 12x per 10x ops")
    share = max(
        pass_time / row[2] for row, pass_time in zip(rows, pass_times, strict=True)
    )
    print(f"  classify/parse at most {share:.1%}: {verdict(share <= 0.20)}")
    for (size, *_), growth in zip(rows[1:], growths, strict=True):
        print(
            f"  growth per 10x ops up to {size}: {growth:.2f}x: {verdict(growth <= 12)}"
        )
    per_op = ", ".join(
        f"{1e6 * pass_time / row[1]:.2f}"
        for row, pass_time in zip(rows, pass_times, strict=True)
    )
    print(f"  classify per op (us): {per_op}")


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


if __name__ == "__main__":
    main()
