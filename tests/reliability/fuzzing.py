"""Mutation fuzzing of every bundled input through every entry point.

Each bundled input (``examples/``) is mutated (truncation, line deletion and
duplication, token swaps, character flips, huge and odd numbers, malformed
labels, Unicode junk and invalid UTF-8, deep nesting, long lines, unclosed
strings and long products) and run in process through the command it belongs
to: ``axisflow-opt`` (``axisflow.cli.main``) with ``classify-axes``,
``schedule-batches``, the SeQuant frontend, ``close-shapes`` and
``generalize-shapes``; ``axisflow plan`` (``axisflow.planning.main``) on the
SeQuant equations, with misused options too; ``axisflow-run``
(``axisflow.interpret.main``) on modules lowered by ``lower-schedule`` (made
by ``axisflow-opt`` at the start of the campaign).

Each run has one outcome: ``success`` (status 0), ``clean error`` (status 1,
one message starting with the command's error prefix, no traceback; for
``axisflow plan`` and ``axisflow-run`` also argparse's usage error, status
2),
``traceback`` (an exception escaped),
``timeout`` (not done within the per-input limit) or ``memory``
(``MemoryError``). The suite's test runs a small campaign and requires only
the first two; ``make fuzz`` runs ``python -m tests.reliability.fuzzing``, a
longer campaign that prints the table kept in ``docs/reliability.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import axisflow.cli
import axisflow.interpret
import axisflow.planning
from axisflow.cli import MAX_NESTING

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

Tool = Literal["axisflow-opt", "axisflow-run", "axisflow plan"]
ERROR_PREFIX: dict[Tool, str] = {
    "axisflow-opt": "error: ",
    "axisflow-run": "axisflow-run: ",
    "axisflow plan": "axisflow plan: error: ",
}
"""How each command's one error message starts."""

OUTCOMES = ("success", "clean error", "traceback", "timeout", "memory")


@dataclass(frozen=True)
class EntryPoint:
    """A way in: a name for the table, the bundled inputs, the arguments."""

    name: str
    inputs: tuple[str, ...]
    args: tuple[str, ...]
    suffix: str = ".mlir"
    odd_args: tuple[tuple[str, ...], ...] = ()
    """Misused options, each tried on some inputs instead of ``args``."""
    tool: Tool = "axisflow-opt"


BATCH_INPUTS = (
    "four_tensor.mlir",
    "pipeline/cross_iteration.mlir",
    "pipeline/demotion.mlir",
    "pipeline/four_tensor.mlir",
    "pipeline/sibling_nests.mlir",
)
SEQUANT_INPUTS = (
    "sequant/legality_cross_iteration.txt",
    "sequant/csv_ccsd_energy_df.txt",
    "sequant/csv_ccsd_singles_residual_df.txt",
    "sequant/csv_ccsd_doubles_residual_df.txt",
)
SEQUANT_PASSES = ("-p", "classify-axes,schedule-batches{report=json}")
PLAN_INPUTS = SEQUANT_INPUTS[:3]  # the doubles: 30 s per plan of four policies
PLAN_ARGS = ("--extents", "i=8,a=16,μ̃=16,Κ=20", "--batch", "i,Κ")
LOWER = "classify-axes,schedule-batches{block=2 quiet=true},lower-schedule{main=true}"
LOWERED_INPUTS: dict[str, tuple[str, ...]] = {
    "lowered/four_tensor.mlir": ("pipeline/four_tensor.mlir", "-p", LOWER),
    "lowered/sibling_nests.mlir": ("pipeline/sibling_nests.mlir", "-p", LOWER),
    "lowered/energy.mlir": (
        "sequant/csv_ccsd_energy_df.txt",
        "-f",
        'sequant{batch=i extents="i=2,a=2,μ̃=2,Κ=2"}',
        "-p",
        LOWER,
    ),
    "lowered/two_groups.mlir": (
        "lowering/two_groups.txt",
        "-f",
        'sequant{batch=i extents="a=2,i=2"}',
        "-p",
        LOWER,
    ),
}
"""Modules lowered at the start of a campaign for ``axisflow-run``: the
example and how ``axisflow-opt`` lowers it (``main=true``; blocks of 2, so
some loops have a ragged last block)."""
ENTRY_POINTS = (
    EntryPoint(
        "classify-axes",
        BATCH_INPUTS,
        ("-p", "classify-axes{explain=true}"),
        odd_args=(("-p", "classify-axes{explain=maybe}"), ("-p", "classify-axes{")),
    ),
    EntryPoint(
        "schedule-batches",
        BATCH_INPUTS,
        ("-p", "classify-axes,schedule-batches{report=table}"),
        odd_args=tuple(
            ("-p", f"classify-axes,schedule-batches{{{option}}}")
            for option in (
                "block=0",
                "block=-3",
                f"block={2**64}",
                "max-rounds=0",
                "report=bogus",
                "block=²",
            )
        ),
    ),
    EntryPoint(
        "sequant frontend",
        SEQUANT_INPUTS,
        (
            "-f",
            'sequant{batch=i,"Κ" extents="i=8,a=16,μ̃=16,Κ=20" elem=8}',
            *SEQUANT_PASSES,
        ),
        ".txt",
        odd_args=tuple(
            ("-f", f"sequant{{{option}}}", *SEQUANT_PASSES)
            for option in (
                'batch=i extents="i=²"',
                'batch=i extents="i=0"',
                f'batch=i extents="i={"9" * 4400}"',
                f'batch=i extents="i={2**64}"',
                'batch=i extents="i"',
                "batch=i elem=0",
                "batch=i separate-instances=no",
                "batch=nosuchkey",
                'batch=""',
                "forest=",
            )
        ),
    ),
    EntryPoint("close-shapes", ("shapes/mlp.mlir",), ("-p", "close-shapes")),
    EntryPoint(
        "generalize-shapes",
        ("shapes/mlp.mlir",),
        ("-p", "generalize-shapes,close-shapes"),
    ),
    EntryPoint(
        "axisflow plan",
        PLAN_INPUTS,
        PLAN_ARGS,
        ".txt",
        odd_args=(
            ("--extents", "i=3,i=4"),
            ("--extents", "i=²,a=2"),
            ("--extents", "i=0"),
            ("--extents", f"i={2**64}"),
            ("--extents", f"i={'9' * 4400}"),
            (
                "--extents",
                "i=1000000000000000000,a=1000000000000000000",
                "--batch",
                "i",
            ),
            ("--extents", "zz=4"),
            ("--batch", ",,,"),
            ("--batch", ","),
            ("--batch", "nosuch"),
            ("--batch", "i,i"),
            ("--batch", "i,a,μ̃,Κ,i,a,μ̃"),
            ("--block", "zz=2"),
            ("--block", "0"),
            ("--block", "i=2,i=3"),
            ("--elem", "0"),
            ("--elem", "-8"),
            ("--elem", "x"),
            ("--order", "bogus"),
            ("--share", "bogus"),
            ("--plot", "memory.txt"),
            ("--plot", "/nonexistent-directory/memory.svg"),
            ("--batch", "i", "--plot", "{scratch}/memory.svg"),
        ),
        tool="axisflow plan",
    ),
    EntryPoint(
        "axisflow-run",
        tuple(LOWERED_INPUTS),
        (),
        odd_args=(
            ("--symbol", "nowhere"),
            ("--symbol", "printI64"),
            ("--symbol", ""),
            ("--memory-limit", "0"),
            ("--memory-limit", "64"),
            ("--memory-limit", "²"),
        ),
        tool="axisflow-run",
    ),
)

# -- mutations ------------------------------------------------------------

ODD_NUMBERS = (
    "0",
    "-1",
    "00",
    str(2**63),
    str(2**64 + 1),
    "9" * 4301,
    "9" * 40,
    "²",
    "٣",
    "1e999999",
    "0x7fffffffffffffffff",
    "1.5",
    "1/0",
)
ODD_LABELS = (
    "i_",
    "_1",
    "i__1",
    "a_1<",
    "a_1<i_1",
    "a_1<>",
    "a_1<i_1,>",
    "μ̃",
    "i_²",
    "a_1<" * 300 + "i_1" + ">" * 300,
    "x" * 5000,
    "i↑_1",
    "Κ_1<Κ_1>",
)
UNICODE_JUNK = (
    "\u0303",  # combining tilde, alone
    "\u200b",  # zero width space
    "\u202e",  # right-to-left override
    "\ufeff",  # byte order mark
    "𝒜",
    "é",
    "\x00",
    "\t",
    "\r",
    "\x0b",
    "\\",
)
INVALID_UTF8 = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x82")
PUNCTUATION = tuple("{}()[]<>,;:=@%\"'*+-/|^_.#!$ ")
_NUMBER = re.compile(r"\d+")
_LABEL = re.compile(r"[^\W\d_]+_\d+(?:<[^>\s]*>)?|\b[a-zA-Zμ̃Κ]\b")


def _replace_match(rng: random.Random, text: str, pattern: re.Pattern[str], by: str):
    matches = list(pattern.finditer(text))
    if not matches:
        return text + by
    match = rng.choice(matches)
    return text[: match.start()] + by + text[match.end() :]


def _lines(text: str) -> list[str]:
    return text.split("\n")


def truncate(rng: random.Random, text: str) -> str:
    return text[: rng.randrange(len(text) + 1)]


def delete_line(rng: random.Random, text: str) -> str:
    lines = _lines(text)
    del lines[rng.randrange(len(lines))]
    return "\n".join(lines)


def duplicate_line(rng: random.Random, text: str) -> str:
    lines = _lines(text)
    k = rng.randrange(len(lines))
    lines.insert(k, lines[k])
    return "\n".join(lines)


def swap_tokens(rng: random.Random, text: str) -> str:
    tokens = re.split(r"(\s+)", text)
    words = [k for k, token in enumerate(tokens) if token.strip()]
    if len(words) < 2:
        return text
    a, b = rng.sample(words, 2)
    tokens[a], tokens[b] = tokens[b], tokens[a]
    return "".join(tokens)


def flip_characters(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 3)):
        if not chars:
            break
        chars[rng.randrange(len(chars))] = rng.choice(PUNCTUATION + UNICODE_JUNK)
    return "".join(chars)


def odd_number(rng: random.Random, text: str) -> str:
    return _replace_match(rng, text, _NUMBER, rng.choice(ODD_NUMBERS))


def malformed_label(rng: random.Random, text: str) -> str:
    return _replace_match(rng, text, _LABEL, rng.choice(ODD_LABELS))


def unicode_junk(rng: random.Random, text: str) -> str:
    k = rng.randrange(len(text) + 1)
    return text[:k] + rng.choice(UNICODE_JUNK) * rng.randint(1, 3) + text[k:]


def deep_nesting(rng: random.Random, text: str) -> str:
    lines = _lines(text)
    k = rng.randrange(len(lines))
    depth = rng.choice((MAX_NESTING // 2, MAX_NESTING, MAX_NESTING + 1, 5000))
    opener = rng.choice(("{", "[", "(", "<", "builtin.module {", "batch.loop i {"))
    closer = {"{": "}", "[": "]", "(": ")", "<": ">"}[opener[-1]]
    lines[k] = opener * depth + lines[k] + closer * depth
    return "\n".join(lines)


def long_line(rng: random.Random, text: str) -> str:
    lines = _lines(text)
    k = rng.randrange(len(lines))
    tail = rng.choice(
        (
            ' "' + "x" * rng.choice((30, 60, 10_000)),  # an unclosed string
            "// " + "y" * 100_000,
            " " + "z" * 100_000,
            " " + "+ 1 x{i_1}" * 2000,
        )
    )
    lines[k] = lines[k] + tail
    return "\n".join(lines)


def long_product(rng: random.Random, text: str) -> str:
    """A line replaced by one product of 199 to 400 factors.

    199 is where the SeQuant printer used to recurse too deep; much longer
    products are slow in the batch verifier (docs/reliability.md, limits)."""
    return _with_product(rng, text, rng.choice((199, 400)))


def planned_product(rng: random.Random, text: str) -> str:
    """``long_product`` for ``axisflow plan``: a product of 100 factors.

    The planner schedules every policy's forest about eight times (both
    sharings, the never-worse guard's trials) and every use-site lists all
    the loops of its tree: 400 factors batched over their own index take
    about 35 s (docs/reliability.md, limits)."""
    return _with_product(rng, text, 100)


def _with_product(rng: random.Random, text: str, factors: int) -> str:
    lines = _lines(text)
    product = " * ".join(f"t{{i_{n};i_{n + 1}}}" for n in range(1, factors + 1))
    lines[rng.randrange(len(lines))] = product
    return "\n".join(lines)


TEXT_MUTATIONS: tuple[Callable[[random.Random, str], str], ...] = (
    truncate,
    delete_line,
    duplicate_line,
    swap_tokens,
    flip_characters,
    odd_number,
    malformed_label,
    unicode_junk,
    deep_nesting,
    long_line,
    long_product,
)


PLAN_MUTATIONS = tuple(
    planned_product if m is long_product else m for m in TEXT_MUTATIONS
)


def mutate(
    rng: random.Random,
    data: bytes,
    mutations: tuple[Callable[[random.Random, str], str], ...] = TEXT_MUTATIONS,
) -> tuple[str, bytes]:
    """One mutation of ``data`` (one of ``mutations``, or invalid UTF-8):
    its name and the mutated bytes."""
    if rng.random() < 0.08:
        k = rng.randrange(len(data) + 1)
        return "invalid UTF-8", data[:k] + rng.choice(INVALID_UTF8) + data[k:]
    mutation = rng.choice(mutations)
    text = data.decode("utf-8")
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        text = mutation(rng, text)
    return mutation.__name__, text.encode("utf-8", "surrogatepass")


# -- running --------------------------------------------------------------

LEAKED_INTERNALS = (
    "invalid literal for int()",
    "set_int_max_str_digits",
    "object has no attribute",
    "NoneType",
    "not subscriptable",
    "unhashable type",
    "maximum recursion depth",
    "codec can't decode",
    "out of range for type i64",
    "KeyError",
)
"""Python's own wording: a message containing one is an internal error that
escaped as the diagnostic, not a diagnostic written for the input."""


_SAID = re.compile(
    r"^(?:note: |axisflow plan: note: |axisflow plan: \d+ spaces: ).*\n", re.M
)
"""Lines a command says that are no error (``axisflow.notes``)."""


@dataclass(frozen=True)
class Run:
    """One fuzz input and what became of it."""

    entry: str
    source: str
    mutation: str
    outcome: str
    seconds: float
    detail: str


def _command(tool: Tool) -> Callable[[list[str]], int]:
    """The function behind ``tool``, looked up when called (so that a test
    can sabotage it)."""
    if tool == "axisflow-run":
        return lambda args: axisflow.interpret.main(args)
    if tool == "axisflow plan":
        return lambda args: axisflow.planning.main(["plan", *args])
    return lambda args: axisflow.cli.main(args)


def run_once(
    args: list[str], time_limit: float, tool: Tool = "axisflow-opt"
) -> tuple[str, float, str]:
    """Run ``tool args`` in process: outcome, seconds, detail."""
    out, err = io.StringIO(), io.StringIO()
    result: list[int | BaseException] = []
    command = _command(tool)

    def work() -> None:
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                result.append(command(args))
        except BaseException as error:
            result.append(error)

    start = time.perf_counter()
    worker = threading.Thread(target=work, name=_WORKER, daemon=True)
    worker.start()
    worker.join(time_limit)
    seconds = time.perf_counter() - start
    if worker.is_alive():
        return "timeout", seconds, f"still running after {time_limit} s"
    outcome = result[0]
    # What a run says besides its error (notes, the policy count) comes first.
    message = _SAID.sub("", err.getvalue())
    prefix = ERROR_PREFIX[tool]
    if isinstance(outcome, SystemExit) and tool != "axisflow-opt":
        # argparse: the usage (wrapped), then one "axisflow plan: error: ..."
        lines = message.splitlines()
        if (
            outcome.code == 2
            and lines
            and lines[0].startswith("usage: ")
            and lines[-1].startswith(prefix)
            and sum(line.startswith(prefix) for line in lines) == 1
        ):
            return "clean error", seconds, lines[-1]
    if isinstance(outcome, MemoryError):
        return "memory", seconds, "MemoryError"
    if isinstance(outcome, BaseException):
        return "traceback", seconds, f"{type(outcome).__name__}: {outcome}"[:300]
    if outcome == 0:
        return "success", seconds, ""
    if outcome == 1 and message.startswith(prefix) and "Traceback" not in message:
        leaked = [phrase for phrase in LEAKED_INTERNALS if phrase in message]
        if leaked:  # an internal error surfaced as the message, unlocated
            return "traceback", seconds, f"leaked {leaked[0]!r}: {message[:300]}"
        return "clean error", seconds, message
    return "traceback", seconds, f"status {outcome}: {message[:300]}"


_WORKER = "axisflow-fuzz-run"
"""The name of ``run_once``'s worker threads."""


def drain(wait: float) -> None:
    """Wait up to ``wait`` seconds for the workers of runs that timed out:
    one still running shares the CPU and the process's redirected standard
    streams with the next run, which would then be misjudged."""
    deadline = time.perf_counter() + wait
    for thread in threading.enumerate():
        if thread.name == _WORKER:
            thread.join(max(0.0, deadline - time.perf_counter()))


def campaign(
    mutations_per_input: Callable[[EntryPoint, str], int],
    seed: int,
    time_limit: float,
    keep: Path | None = None,
) -> Iterator[Run]:
    """Every entry point, every input, the given number of mutations each;
    with ``keep``, each input that fails is copied there (its path and the
    arguments end the run's detail)."""
    rng = random.Random(seed)
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="axisflow-fuzz-") as scratch:
        for entry in ENTRY_POINTS:
            for source in entry.inputs:
                count = mutations_per_input(entry, source)
                if count == 0:
                    continue
                data = input_bytes(source, Path(scratch))
                for k in range(count):
                    mutations = (
                        PLAN_MUTATIONS
                        if entry.tool == "axisflow plan"
                        else TEXT_MUTATIONS
                    )
                    mutation, mutated = mutate(rng, data, mutations)
                    path = Path(scratch) / f"input{entry.suffix}"
                    options = entry.args
                    if entry.odd_args and rng.random() < 0.15:
                        options = rng.choice(entry.odd_args)
                        options = tuple(
                            o.replace("{scratch}", scratch) for o in options
                        )
                        mutation, mutated = "misused option", data
                    path.write_bytes(mutated)
                    args = [str(path), *options]
                    if entry.tool == "axisflow-opt" and k % 4 == 0:
                        # the atomic -o path as well
                        args += ["-o", str(Path(scratch) / "out.mlir")]
                    outcome, seconds, detail = run_once(args, time_limit, entry.tool)
                    if outcome == "timeout":
                        drain(10 * time_limit)
                    if keep is not None and outcome not in OUTCOMES[:2]:
                        # Numbered across the campaign: one name per failure.
                        failures += 1
                        kept = keep / f"failure{failures}-{path.name}"
                        kept.write_bytes(mutated)
                        detail += f" [input kept as {kept}; {entry.tool} {args[1:]}]"
                    yield Run(entry.name, source, mutation, outcome, seconds, detail)


def input_bytes(source: str, scratch: Path) -> bytes:
    """A bundled input, or a module of ``LOWERED_INPUTS`` lowered now."""
    if source not in LOWERED_INPUTS:
        return (EXAMPLES / source).read_bytes()
    example, *how = LOWERED_INPUTS[source]
    target = scratch / source.replace("/", "_")
    if not target.exists():
        status = axisflow.cli.main([*how, str(EXAMPLES / example), "-o", str(target)])
        if status != 0:
            raise RuntimeError(f"lowering {example} for the campaign failed")
    return target.read_bytes()


# -- the Python readers, called directly --------------------------------


def _api_readers() -> tuple[tuple[str, Callable[[str], object], type[Exception]], ...]:
    """Text readers of the Python API and the one error type each documents."""
    from axisflow.roles.index import Index
    from axisflow.sequant.syntax import SequantError, deparse, parse
    from axisflow.shapes.errors import SpecError
    from axisflow.shapes.spec import parse_einsum_spec, parse_shape_spec

    return (
        ("Index.parse", Index.parse, ValueError),
        ("sequant.syntax.parse", lambda text: deparse(parse(text)), SequantError),
        ("parse_shape_spec", parse_shape_spec, SpecError),
        ("parse_einsum_spec", parse_einsum_spec, SpecError),
    )


API_SEEDS = {
    "Index.parse": ("a_1<i_1,i_2>", "μ̃_1152", "i↑_1", "Κ_2<i_1<a_1>>"),
    "sequant.syntax.parse": (
        "g{a_1,a_2;i_1,i_2}:A * t{i_1,i_2;a_1,a_2}:A",
        "1/2 Ŝ{a_1;i_1} * f{i_1;a_1} - 2.5e-1 x{a_1<i_1>;i_1}",
    ),
    "parse_shape_spec": ("8|3,5->4", "...->64", "1000|->784", "2@b,...|->3"),
    "parse_einsum_spec": ("ij;jk=>ik", "...a,b..;b=>a", "i,j;j,k=>i,k", "a2;2b=>ab"),
}


def api_campaign(count: int, seed: int) -> Iterator[Run]:
    """Mutated texts through the Python readers: success or their own error."""
    rng = random.Random(seed)
    for name, reader, documented in _api_readers():
        for k in range(count):
            text = API_SEEDS[name][k % len(API_SEEDS[name])]
            mutation = rng.choice(TEXT_MUTATIONS)
            mutated = mutation(rng, text)
            start = time.perf_counter()
            try:
                reader(mutated)
                outcome, detail = "success", ""
            except documented as error:
                outcome, detail = "clean error", str(error)[:300]
            except MemoryError:
                outcome, detail = "memory", "MemoryError"
            except Exception as error:
                outcome = "traceback"
                detail = f"{type(error).__name__}: {error} on {mutated[:200]!r}"
            seconds = time.perf_counter() - start
            yield Run(name, text, mutation.__name__, outcome, seconds, detail)


def table(runs: list[Run]) -> str:
    """Markdown table: inputs per entry point and their outcomes."""
    by_entry: dict[str, Counter[str]] = {}
    for run in runs:
        by_entry.setdefault(run.entry, Counter())[run.outcome] += 1
    header = "| entry point | inputs | " + " | ".join(OUTCOMES) + " |"
    rule = "|---|---:|" + "---:|" * len(OUTCOMES)
    rows = [header, rule]
    total: Counter[str] = Counter()
    for entry, counts in by_entry.items():
        total.update(counts)
        cells = " | ".join(str(counts[o]) for o in OUTCOMES)
        rows.append(f"| {entry} | {counts.total()} | {cells} |")
    cells = " | ".join(str(total[o]) for o in OUTCOMES)
    rows.append(f"| **all** | {total.total()} | {cells} |")
    return "\n".join(rows)


def main_campaign(argv: list[str] | None = None) -> int:
    """``make fuzz``: a longer campaign; prints the table and every failure."""
    parser = argparse.ArgumentParser(description="axisflow fuzz campaign")
    parser.add_argument("--per-input", type=int, default=120)
    parser.add_argument("--seed", type=int, default=2026)
    # A hang guard, far above any real run: the slowest inputs (the doubles
    # with two 400-factor products) take about 10 s of CPU, twice that in
    # wall-clock time on a loaded 2-core machine.
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument(
        "--keep", type=Path, help="copy failing inputs here (made if missing)"
    )
    options = parser.parse_args(argv)
    # The process's own stdout: a run that timed out keeps its thread's
    # redirection of sys.stdout until it ends.
    out = sys.__stdout__
    start = time.perf_counter()
    runs: list[Run] = []

    def per_input(entry: EntryPoint, source: str) -> int:
        del entry, source
        return options.per_input

    for run in campaign(per_input, options.seed, options.time_limit, options.keep):
        runs.append(run)
        if run.outcome not in OUTCOMES[:2]:  # said at once: a campaign is long
            print(
                f"FAIL {run.outcome}: {run.entry} {run.source} {run.mutation}: ",
                file=out,
            )
            print(f"    {run.detail}", file=out, flush=True)
    runs += api_campaign(options.per_input * 5, options.seed)
    elapsed = time.perf_counter() - start
    print(table(runs), file=out)
    print(file=out)
    for entry in dict.fromkeys(run.entry for run in runs):
        of_entry = [run for run in runs if run.entry == entry]
        slow = max(of_entry, key=lambda run: run.seconds)
        print(
            f"slowest of {entry}: {slow.seconds:.2f} s ({slow.source}, {slow.mutation})",
            file=out,
        )
    slowest = max(runs, key=lambda run: run.seconds)
    print(
        f"\n{len(runs)} inputs, seed {options.seed}, per-input limit "
        f"{options.time_limit:g} s, {elapsed:.0f} s in all; slowest "
        f"{slowest.seconds:.2f} s ({slowest.entry}, {slowest.source}, "
        f"{slowest.mutation})",
        file=out,
    )
    failures = [run for run in runs if run.outcome not in OUTCOMES[:2]]
    for run in failures:
        print(
            f"FAIL {run.outcome}: {run.entry} {run.source} {run.mutation}: ", file=out
        )
        print(f"    {run.detail}", file=out)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main_campaign())
