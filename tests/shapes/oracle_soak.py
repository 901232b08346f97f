"""Soak run of the scheme oracle: many more generated programs than ``make test``.

``make soak`` runs ``python -m tests.shapes.oracle_soak``: the property of
``tests/shapes/test_schemes_oracle.py`` (applying a function's shape scheme
gives what re-evaluating its body gives: the same failing call or closing,
the same shapes of every argument, anchor, result and internal tensor, the
same capture value) on ``--programs`` generated programs (100,000 by
default; ``make test`` runs 200 and a fixed set of 20). A finding does not
stop the run: each disagreement is printed as the ``Program(...)`` to pin
in that module's ``PINNED``, and so is a program that runs out of memory or
time (the engine must refuse bad input, not exhaust the machine); the run
exits with status 1 if there was any. The last line is the count::

    100000 programs (99731 distinct), 0 findings, seed 0, 1012 s

Hypothesis draws the programs (seeded: the same seed draws the same
programs), in chunks of 5,000 from seeds of their own, without its example
database or shrinking, so a finding is printed as drawn. Each chunk runs in
a process of its own whose address space is limited (``--memory-mb``, 2,048
by default), and each program has ``--seconds`` (60) for both of its runs:
the soak's memory stays flat whatever a program does. Not part of ``make
test``: at about 10 ms a program, a soak takes 15 to 30 minutes on one core.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import signal
import subprocess
import sys
import time
from types import FrameType

from hypothesis import HealthCheck, Phase, given, seed, settings

from tests.shapes.test_schemes_oracle import Program, programs, run

CHUNK = 5_000
"""Programs drawn per Hypothesis run: Hypothesis keeps a record of every
example of a run (some 30 KB each), so the soak draws in chunks, each from a
seed of its own, each in a process of its own."""

RESULT = "chunk result: "
"""The prefix of a chunk process's last line (JSON), which the soak reads."""


class _OutOfTime(Exception):
    """A program's runs took longer than the soak allows."""


def _out_of_time(_signum: int, _frame: FrameType | None) -> None:
    raise _OutOfTime


def run_chunk(count: int, chunk_seed: int, seconds: int) -> dict[str, object]:
    """Run the oracle on ``count`` programs drawn from ``chunk_seed``.

    Returns the programs run, the hashes of their texts (for the distinct
    count) and the findings, each a printable text.
    """
    hashes: list[str] = []
    findings: list[str] = []

    def check(program: Program) -> None:
        text = repr(program)
        # A digest, not hash(): each chunk's process salts str hashes anew.
        hashes.append(hashlib.blake2b(text.encode(), digest_size=8).hexdigest())
        signal.alarm(seconds)
        try:
            through_schemes = run(program, through_schemes=True)
            re_evaluated = run(program, through_schemes=False)
        except MemoryError:
            finding = f"out of memory: {text}"
        except _OutOfTime:
            finding = f"out of time ({seconds} s): {text}"
        else:
            if through_schemes == re_evaluated:
                return
            finding = (
                f"disagreement: {text}\n  scheme:        {through_schemes}\n"
                f"  re-evaluation: {re_evaluated}"
            )
        finally:
            signal.alarm(0)
        findings.append(finding)
        print(finding, flush=True)

    signal.signal(signal.SIGALRM, _out_of_time)
    draw = seed(chunk_seed)(
        settings(
            max_examples=count,
            deadline=None,
            database=None,
            phases=(Phase.generate,),
            suppress_health_check=[
                HealthCheck.too_slow,
                HealthCheck.data_too_large,
                HealthCheck.filter_too_much,
            ],
        )(given(programs())(check))
    )
    draw()
    return {"ran": len(hashes), "hashes": hashes, "findings": findings}


def _limit_memory(megabytes: int) -> None:
    limit = megabytes * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def soak(
    count: int, start_seed: int, progress: int, memory_mb: int, seconds: int
) -> tuple[int, int, list[str]]:
    """Run the oracle on ``count`` programs, chunk by chunk, each chunk in a
    process of its own; (programs, distinct, findings)."""
    seen: set[str] = set()
    ran = 0
    findings: list[str] = []
    began = time.monotonic()
    chunk = 0
    reported = 0
    while ran < count:
        size = min(CHUNK, count - ran)
        chunk_seed = start_seed * 1_000_003 + chunk
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.shapes.oracle_soak",
                "--chunk",
                str(chunk_seed),
                "--programs",
                str(size),
                "--seconds",
                str(seconds),
            ],
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: _limit_memory(memory_mb),
            check=False,
        )
        lines = done.stdout.splitlines()
        if done.returncode or not lines or not lines[-1].startswith(RESULT):
            # The chunk process itself failed (a finding it could not catch).
            finding = (
                f"chunk {chunk} (seed {chunk_seed}) ended with status "
                f"{done.returncode}: {lines[-3:]}"
            )
            print(finding, flush=True)
            findings.append(finding)
            ran += size
        else:
            for line in lines[:-1]:
                print(line, flush=True)
            result = json.loads(lines[-1][len(RESULT) :])
            ran += result["ran"]
            seen.update(result["hashes"])
            findings.extend(result["findings"])
        chunk += 1
        if progress and ran // progress > reported:
            reported = ran // progress
            elapsed = time.monotonic() - began
            print(
                f"{ran} programs, {len(findings)} findings, {elapsed:.0f} s",
                flush=True,
            )
    return ran, len(seen), findings


def main(argv: list[str] | None = None) -> int:
    """Run the soak; the exit status is 1 if there was a finding."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.shapes.oracle_soak",
        description="The scheme oracle on many generated programs.",
    )
    parser.add_argument("--programs", type=int, default=100_000, metavar="N")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--progress", type=int, default=10_000, metavar="N", help="report every N"
    )
    parser.add_argument(
        "--memory-mb",
        type=int,
        default=2048,
        metavar="MB",
        help="address space of each chunk's process",
    )
    parser.add_argument(
        "--seconds", type=int, default=60, help="time allowed for one program"
    )
    parser.add_argument("--chunk", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.programs < 1:
        parser.error(f"--programs must be positive, got {args.programs}")
    if args.memory_mb < 256:
        parser.error(f"--memory-mb must be at least 256, got {args.memory_mb}")
    if args.seconds < 1:
        parser.error(f"--seconds must be positive, got {args.seconds}")
    if args.chunk is not None:
        result = run_chunk(args.programs, args.chunk, args.seconds)
        print(RESULT + json.dumps(result), flush=True)
        return 0
    began = time.monotonic()
    ran, distinct, findings = soak(
        args.programs, args.seed, args.progress, args.memory_mb, args.seconds
    )
    print(
        f"{ran} programs ({distinct} distinct), {len(findings)} findings, "
        f"seed {args.seed}, {time.monotonic() - began:.0f} s"
    )
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
