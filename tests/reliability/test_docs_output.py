"""The error examples in the docs show exactly what the commands print
(``axisflow-opt``, ``axisflow-run`` and ``axisflow plan``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("docs/reliability.md", "docs/tutorial-classify-axes.md")
BIN = Path(sys.executable).parent


def examples(doc: str) -> list[tuple[str, str]]:
    """Each indented ``$ command`` and the indented lines after it."""
    found: list[tuple[str, str]] = []
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    for k, line in enumerate(lines):
        commands = ("-opt", "axisflow-run", "axisflow plan")
        if not line.startswith("    $ ") or not any(c in line for c in commands):
            continue
        shown: list[str] = []
        for following in lines[k + 1 :]:
            if not following.startswith("    ") or following.startswith("    $ "):
                break
            shown.append(following[4:])
        found.append((line[6:], "\n".join(shown)))
    return found


CASES = [(doc, *example) for doc in DOCS for example in examples(doc)]


def test_every_doc_has_examples() -> None:
    assert {doc for doc, _, _ in CASES} == set(DOCS)
    assert len(CASES) >= 8


@pytest.mark.parametrize(("doc", "command", "shown"), CASES)
def test_example_prints_what_the_doc_shows(doc: str, command: str, shown: str) -> None:
    del doc
    command = command.replace(".venv/bin/", f"{BIN}/")
    result = subprocess.run(
        ["bash", "-c", command], cwd=ROOT, capture_output=True, text=True
    )
    printed = (result.stdout + result.stderr).rstrip("\n")
    assert printed == shown
