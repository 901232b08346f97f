"""Soak run of the scheme oracle: many more generated programs than ``make test``.

``make soak`` runs ``python -m tests.shapes.oracle_soak``: the property of
``tests/shapes/test_schemes_oracle.py`` (applying a function's shape scheme
gives what re-evaluating its body gives: the same failing call or closing,
the same shapes of every argument, anchor, result and internal tensor, the
same capture value) on ``--programs`` generated programs (100,000 by
default; ``make test`` runs 200 and a fixed set of 20). A disagreement does
not stop the run: each is printed as the ``Program(...)`` to pin as an
``@example``, and the run exits with status 1 if there was any. The last
line is the count::

    100000 programs (99731 distinct), 0 disagreements, seed 0

Hypothesis draws the programs (seeded: the same seed draws the same
programs), in chunks of 5,000 from seeds of their own, without its example
database or shrinking, so a failure is printed as drawn. Not part of ``make test``: at about 8 ms a program, a
soak takes a quarter of an hour on one core.
"""

from __future__ import annotations

import argparse
import sys
import time

from hypothesis import HealthCheck, Phase, given, seed, settings

from tests.shapes.test_schemes_oracle import Program, programs, run

CHUNK = 5_000
"""Programs drawn per Hypothesis run: Hypothesis keeps a record of every
example of a run (some 30 KB each), so the soak draws in chunks, each from a
seed of its own, to keep its memory flat."""


def soak(count: int, start_seed: int, progress: int) -> tuple[int, int, list[str]]:
    """Run the oracle on ``count`` programs; (programs, distinct, disagreements)."""
    seen: set[int] = set()
    ran = 0
    disagreements: list[str] = []
    began = time.monotonic()

    def check(program: Program) -> None:
        nonlocal ran
        ran += 1
        text = repr(program)
        seen.add(hash(text))
        through_schemes = run(program, through_schemes=True)
        re_evaluated = run(program, through_schemes=False)
        if through_schemes != re_evaluated:
            disagreements.append(text)
            print(f"disagreement: {text}", flush=True)
            print(f"  scheme:        {through_schemes}", flush=True)
            print(f"  re-evaluation: {re_evaluated}", flush=True)
        if progress and ran % progress == 0:
            elapsed = time.monotonic() - began
            print(
                f"{ran} programs, {len(disagreements)} disagreements, {elapsed:.0f} s",
                flush=True,
            )

    chunk = 0
    while ran < count:
        draw = seed(start_seed * 1_000_003 + chunk)(
            settings(
                max_examples=min(CHUNK, count - ran),
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
        chunk += 1
    return ran, len(seen), disagreements


def main(argv: list[str] | None = None) -> int:
    """Run the soak; the exit status is 1 if a program disagreed."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.shapes.oracle_soak",
        description="The scheme oracle on many generated programs.",
    )
    parser.add_argument("--programs", type=int, default=100_000, metavar="N")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--progress", type=int, default=10_000, metavar="N", help="report every N"
    )
    args = parser.parse_args(argv)
    if args.programs < 1:
        parser.error(f"--programs must be positive, got {args.programs}")
    ran, distinct, disagreements = soak(args.programs, args.seed, args.progress)
    print(
        f"{ran} programs ({distinct} distinct), {len(disagreements)} "
        f"disagreements, seed {args.seed}"
    )
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
