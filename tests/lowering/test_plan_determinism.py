"""The lowering plan is the same from run to run: it must not depend on the
order Python's string hashing gives sets (PYTHONHASHSEED)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The CSV-CCSD energy batched over Κ then i, blocks of 2: several storage
# objects are freed after one loop pass, which a set ordered by hash once
# printed in a different order from run to run.
PLAN = """
import hashlib
from pathlib import Path
from axisflow.lowering.plan import build_plan
from axisflow.pipeline import schedule_expression
text = Path("examples/sequant/csv_ccsd_energy_df.txt").read_text(encoding="utf-8")
forest = schedule_expression(
    text, "Κ,i", extents="i=2,a=3,μ̃=2,Κ=3", elem=8,
    never_worse=False, accumulate=False, block=2,
)
plan = build_plan(forest.model, forest.schedule)
print(hashlib.sha256(repr(plan).encode()).hexdigest())
"""


def test_the_plan_does_not_depend_on_the_hash_seed() -> None:
    printed = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", PLAN],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        printed.add(done.stdout.strip())
    assert len(printed) == 1, printed
