"""Every message is the same under any PYTHONHASHSEED.

String and Index hashes change with the seed, so iterating a set of them in
an error path names a different culprit from run to run. Each check runs the
same inputs in fresh interpreters with different seeds and compares every
message byte for byte.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Inputs whose error has several equally valid culprits.
TARGETED = {
    # a_1 and a_2 are both on one factor only.
    "one-factor.mlir": (
        "batch.forest {\n"
        '  batch.value @A [a_1, a_2, i_1] leaf "A"\n'
        '  batch.value @B [i_1] leaf "B"\n'
        "  batch.value @C [i_1] contracted [] = @A [a_1, a_2, i_1] * @B [i_1]\n"
        "}\n"
    ),
}

SCRIPT = """
import json, os, sys, re
from pathlib import Path
from tests.reliability.fuzzing import campaign, run_once
os.chdir(sys.argv[1])  # every seed reads the same relative paths
messages = []
for name, text in json.loads(sys.argv[2]).items():
    Path(name).write_text(text, encoding="utf-8")
    messages.append(run_once([name], 60.0)[2])
for run in campaign(lambda entry, source: 0 if "doubles" in source else int(sys.argv[3]), 3, 60.0):
    messages.append(re.sub(r"axisflow-fuzz-[^/]+", "T", run.detail))
print(json.dumps(messages))
"""


def messages_under_seeds(
    tmp_path: Path, seeds: list[int], per_input: int
) -> list[list[str]]:
    processes = []
    for seed in seeds:
        scratch = tmp_path / str(seed)
        scratch.mkdir()
        env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(ROOT)}
        command = [
            sys.executable,
            "-c",
            SCRIPT,
            str(scratch),
            json.dumps(TARGETED),
            str(per_input),
        ]
        processes.append(
            subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE)
        )
    outputs = [process.communicate()[0] for process in processes]
    assert all(process.returncode == 0 for process in processes)
    return [json.loads(output) for output in outputs]


def test_messages_do_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    # Seeds 1 and 5 name a_2 and a_1 when the culprit comes from a set.
    first, *others = messages_under_seeds(tmp_path, [1, 5, 6], per_input=1)
    assert "index a_1 is on one factor only" in first[0]
    assert len(first) > len(TARGETED)
    for other in others:
        assert other == first
