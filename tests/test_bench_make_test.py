"""``benchmarks/bench_make_test.py`` refuses a bad argument in one line,
before any ``make test`` runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "bench_make_test.py"


def refusal(*arguments: str) -> tuple[int, str]:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), *arguments],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.stdout == ""
    return run.returncode, run.stderr.strip().splitlines()[-1]


def test_a_checkout_without_a_makefile_is_refused(tmp_path: Path) -> None:
    assert refusal("--checkout", str(tmp_path / "missing")) == (
        2,
        f"bench_make_test.py: error: --checkout '{tmp_path / 'missing'}': "
        "no Makefile there",
    )


def test_runs_below_one_are_refused() -> None:
    assert refusal("--runs", "0") == (
        2,
        "bench_make_test.py: error: --runs: expected a positive integer, got 0",
    )
