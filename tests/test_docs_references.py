"""The docs refer only to what a reader of the repository or sdist has.

Every relative link of the README, docs/ and the examples' READMEs resolves to
a file of the source tree (and its #anchor to a heading there); no text points
outside the tree (``../shared``) or to issues of the tracker, which a reader
cannot see.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(
    [
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "examples").glob("*/README.md"),
    ]
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped,
    spaces to hyphens."""
    text = heading.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Anchors of the headings of a Markdown file (outside code blocks)."""
    found: set[str] = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            found.add(github_anchor(line.lstrip("#")))
    return found


def test_github_anchor_matches_known_headings() -> None:
    assert github_anchor(" 7. Decisions where the issue was silent") == (
        "7-decisions-where-the-issue-was-silent"
    )
    assert github_anchor(" `batch.value`") == "batchvalue"
    assert github_anchor(" Index labels") == "index-labels"


def test_docs_are_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in DOCS}
    assert {"README.md", "docs/index.md", "examples/sequant/README.md"} <= names


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(doc: Path) -> None:
    broken = []
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (doc.parent / file_part).resolve() if file_part else doc
        if (
            not linked.is_relative_to(ROOT)
            or not linked.exists()
            or (anchor and linked.suffix == ".md" and anchor not in anchors(linked))
        ):
            broken.append(target)
    assert broken == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_references_outside_the_tree_or_to_issues(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    outside = re.findall(r"\.\./shared\S*", text)
    issues = [
        m.group(0)
        for m in re.finditer(r"[^\n]{0,30}\bissues?\b[^\n]{0,30}", text, re.I)
    ]
    assert (outside, issues) == ([], [])
