"""MkDocs hooks: links from the docs to files of the repository outside ``docs/``.

The Markdown pages are written for two readers: a repository browser, where
``[examples/chem](../examples/chem/README.md)`` is a relative path in the
source tree, and this site. MkDocs knows only ``docs/``, so such a link would
be a broken link (an error under ``--strict``). Rather than rewrite the
sources, the site carries the linked files: every file outside ``docs/``
that a page links to (and, for a linked Markdown file, what it links to in
turn) is added to the site under ``repo/<its path>`` (a Markdown file as a
page, anything else as a static file), and the links are rewritten to it
while the page is built. A link to a path that does not exist is left as
written, so MkDocs reports it and ``--strict`` fails.
"""

from __future__ import annotations

import posixpath
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.pages import Page

sys.path.insert(0, str(Path(__file__).resolve().parent))
from griffe_rest import widen_list_indents

REPO_PREFIX = "repo"
"""Where the files outside ``docs/`` go in the site."""

# Inline links and images, [text](target) or [text](target "title"); code
# spans and fenced blocks are skipped by _outside_code below.
LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")
FENCE = re.compile(r"^(```|~~~)")


def _root(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).resolve().parent


def _docs(config: MkDocsConfig) -> Path:
    return Path(config.docs_dir).resolve()


def _is_relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith(
        ("#", "/")
    )


def _outside_code(markdown: str) -> list[tuple[int, int]]:
    """Character spans of ``markdown`` outside fenced code blocks."""
    spans: list[tuple[int, int]] = []
    position, start, fenced = 0, 0, False
    for line in markdown.splitlines(keepends=True):
        if FENCE.match(line.lstrip()):
            if fenced:
                start = position + len(line)
            else:
                spans.append((start, position))
            fenced = not fenced
        position += len(line)
    if not fenced:
        spans.append((start, position))
    return spans


def _targets(source: Path, root: Path) -> list[Path]:
    """Files of the repository that ``source`` (a Markdown file) links to."""
    text = source.read_text(encoding="utf-8")
    found = []
    for begin, end in _outside_code(text):
        for match in LINK.finditer(text, begin, end):
            target = match.group(2).partition("#")[0]
            if target and _is_relative(target):
                path = (source.parent / target).resolve()
                if path.is_file() and path.is_relative_to(root):
                    found.append(path)
    return found


def _site_path(path: Path, root: Path, docs: Path) -> str:
    """The path of a repository file inside the site's sources."""
    if path.is_relative_to(docs):
        return path.relative_to(docs).as_posix()
    return f"{REPO_PREFIX}/{path.relative_to(root).as_posix()}"


def on_files(files: Files, config: MkDocsConfig, **_: Any) -> Files:
    """Add every file outside ``docs/`` that a page links to, transitively."""
    root, docs = _root(config), _docs(config)
    pending = [
        Path(f.abs_src_path)
        for f in files
        if f.src_uri.endswith(".md") and f.abs_src_path
    ]
    added: set[Path] = set()
    while pending:
        source = pending.pop()
        for path in _targets(source, root):
            if path.is_relative_to(docs) or path in added:
                continue
            added.add(path)
            files.append(
                File.generated(
                    config,
                    _site_path(path, root, docs),
                    abs_src_path=str(path),
                    inclusion=InclusionLevel.NOT_IN_NAV,
                )
            )
            if path.suffix == ".md":
                pending.append(path)
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, **_: Any) -> str:
    """Rewrite the relative links of a page that leave ``docs/``."""
    root, docs = _root(config), _docs(config)
    source = Path(page.file.abs_src_path or "")
    here = posixpath.dirname(page.file.src_uri)

    def rewrite(match: re.Match[str]) -> str:
        target = match.group(2)
        file_part, hash_mark, anchor = target.partition("#")
        if not file_part or not _is_relative(file_part):
            return match.group(0)
        path = (source.parent / file_part).resolve()
        if not path.exists() or not path.is_relative_to(root):
            return match.group(0)  # MkDocs reports it
        inside = _site_path(path, root, docs)
        relative = posixpath.relpath(inside, here or ".")
        return f"{match.group(1)}{relative}{hash_mark}{anchor}{match.group(3)}"

    pieces, last = [], 0
    for begin, end in _outside_code(markdown):
        pieces.append(markdown[last:begin])
        pieces.append(LINK.sub(rewrite, markdown[begin:end]))
        last = end
    pieces.append(markdown[last:])
    return widen_list_indents("".join(pieces))
