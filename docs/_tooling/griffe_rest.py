"""Griffe extension: axisflow's reStructuredText docstrings as Markdown.

The docstrings are written for ``help()`` and a plain-text reader, with a few
reStructuredText constructs; mkdocstrings renders Markdown. This extension
rewrites, once the package is loaded:

* Sphinx roles (``:class:`Session```, ``:func:`~axisflow.shapes.session.Session```,
  ``:attr:`Session.log <axisflow.shapes.session.Session.log>```, relative
  ``:mod:`.read```) into cross-references ``[`Session`][axisflow.shapes.session.Session]``,
  resolved in the scope of the object whose docstring it is. The site's
  ``--strict`` build then fails on a reference to nothing. A role naming a
  private object (one the reference does not show) becomes plain code; a role
  that cannot be resolved is an error here, naming the object and the role;
* simple tables (``====  ====`` borders) into Markdown tables;
* a paragraph ending in ``::`` (a literal block follows) into one ending in
  ``:``, the indented block staying a code block;
* list items whose later paragraphs (or tables, or code) are indented to the
  item's text, as GitHub and reStructuredText read them, into items indented
  by four spaces, as Python-Markdown needs (``widen_list_indents``; the
  site's hook does the same for the pages).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|meth|func|attr|mod|data|exc|obj):`([^`]+)`")
BORDER = re.compile(r"^(\s*)(=+)((?: +=+)*)\s*$")


class ReferenceError(ValueError):
    """A role that names nothing in the scope of its docstring."""


def _walk(obj: griffe.Object) -> Iterator[griffe.Object]:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)  # type: ignore[arg-type]


def _module(obj: griffe.Object) -> griffe.Module:
    while not obj.is_module:
        assert obj.parent is not None
        obj = obj.parent
    return obj  # type: ignore[return-value]


def _absolute(target: str, obj: griffe.Object) -> str:
    """The full path of a role's target, seen from ``obj``'s docstring."""
    if target.startswith("."):
        module = _module(obj)
        dots = len(target) - len(target.lstrip("."))
        package = module.path.split(".")
        # One dot is the current package: a package's own __init__ is the
        # package, a module's is its parent.
        is_init = module.filepath is not None and module.filepath.name == "__init__.py"  # type: ignore[union-attr]
        keep = len(package) - (dots - 1) - (0 if is_init else 1)
        return ".".join([*package[:keep], target.lstrip(".")])
    if target.split(".")[0] == obj.package.name:
        return target  # absolute
    first, _, rest = target.partition(".")
    try:
        resolved = obj.resolve(first)
    except griffe.NameResolutionError:
        raise ReferenceError(f"{obj.path}: cannot resolve {target!r}") from None
    return f"{resolved}.{rest}" if rest else resolved


def _role(match: re.Match[str], obj: griffe.Object) -> str:
    text = match.group(1)
    titled = re.fullmatch(r"(.+?)\s*<([^>]+)>", text, re.S)
    if titled:
        title, target = " ".join(titled.group(1).split()), titled.group(2).strip()
    else:
        target = text.strip()
        title = target.lstrip("~").split(".")[-1] if target.startswith("~") else target
        target = target.lstrip("~")
    path = _absolute(target, obj)
    if any(part.startswith("_") for part in path.split(".")):
        return f"`{title}`"
    return f"[`{title}`][{path}]"


def _is_border(line: str) -> bool:
    return bool(BORDER.match(line)) and len(line.split()) >= 2


def _rows(lines: list[str], columns: list[tuple[int, int]]) -> list[list[str]]:
    """Table lines as rows of cells; a line whose first cell is empty
    continues the row above."""
    rows: list[list[str]] = []
    for line in lines:
        # Column starts, dropping those whose gap the text runs across (a
        # cell spanning into the next column leaves that one empty).
        starts = [columns[0][0]]
        spans = [1]
        for (_, end), (start, _) in pairwise(columns):
            if line[end:start].strip():
                spans[-1] += 1
            else:
                starts.append(start)
                spans.append(1)
        cells = []
        for number, begin in enumerate(starts):
            stop = starts[number + 1] if number + 1 < len(starts) else None
            cells += [line[begin:stop].strip()] + [""] * (spans[number] - 1)
        if rows and not cells[0]:
            rows[-1] = [
                f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)
            ]
        else:
            rows.append(cells)
    return rows


def _tables(text: str) -> str:
    """Every simple table of ``text`` (border, [header, border,] rows, border)
    as a Markdown table, at the table's indentation."""
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        if not _is_border(lines[index]):
            out.append(lines[index])
            index += 1
            continue
        indent = BORDER.match(lines[index]).group(1)  # type: ignore[union-attr]
        columns = [(m.start(), m.end()) for m in re.finditer(r"=+", lines[index])]
        borders = [index]
        cursor = index + 1
        while cursor < len(lines) and len(borders) < 3:
            if _is_border(lines[cursor]):
                borders.append(cursor)
                after = lines[cursor + 1] if cursor + 1 < len(lines) else ""
                if len(borders) == 2 and not after.strip():
                    break  # no header: this border closes the table
            cursor += 1
        if len(borders) < 2:
            raise ValueError(f"a table without its closing border: {lines[index]!r}")
        if len(borders) == 3:
            header = [
                " ".join(cell)
                for cell in zip(
                    *_rows(lines[borders[0] + 1 : borders[1]], columns), strict=True
                )
            ]
            body = _rows(lines[borders[1] + 1 : borders[2]], columns)
        else:
            header = [""] * len(columns)
            body = _rows(lines[borders[0] + 1 : borders[1]], columns)
        out.append(f"{indent}| {' | '.join(header)} |")
        out.append(f"{indent}|{'---|' * len(columns)}")
        out += [
            f"{indent}| {' | '.join(c.replace('|', '&#124;') for c in row)} |"
            for row in body
        ]
        index = borders[-1] + 1
    return "\n".join(out)


LIST_ITEM = re.compile(r"^( *)(?:[-*+]|\d+[.)]) +(?=\S)")
FENCE = re.compile(r"^ *(```|~~~)")


def widen_list_indents(text: str) -> str:
    """Indent the blocks after the first paragraph of every list item by four
    spaces past the item's marker, keeping relative indentation (the first
    paragraph's lazy lines stay: a ``0.`` there is text, not a list); fenced
    code outside a list is left alone."""
    out: list[str] = []
    base = content = -1  # the open item's marker and text columns (-1: none)
    fenced = after_blank = widen = False
    for line in text.split("\n"):
        blank_before, after_blank = after_blank, not line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if fenced and content < 0:
            fenced = not FENCE.match(line)
            out.append(line)
            continue
        item = None if fenced else LIST_ITEM.match(line)
        if item and (content < 0 or indent <= base):
            base, content = indent, item.end()
            widen = False  # the item's first paragraph reads as it is
            out.append(line)
            continue
        ends = blank_before or FENCE.match(line)  # else a lazy continuation
        if content >= 0 and line.strip() and indent <= base and ends and not fenced:
            base = content = -1  # the list ended
        if content >= 0 and not line.strip():
            widen = True  # what follows in the item is a block of its own
        if content >= 0 and line.strip() and widen:
            out.append(" " * max(0, base + 4 - content) + line)
        else:
            out.append(line)
        if FENCE.match(line):
            fenced = not fenced
    return "\n".join(out)


def markdown(text: str, obj: griffe.Object) -> str:
    """A docstring of ``obj`` rewritten as described in the module docstring."""
    text = ROLE.sub(lambda m: _role(m, obj), text)
    text = _tables(text)
    text = re.sub(r"(\S)::\n\n", r"\1:\n\n", text)
    return widen_list_indents(text)


class RestToMarkdown(griffe.Extension):
    """Rewrite every docstring of a loaded package (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        problems = []
        for obj in _walk(pkg):
            if obj.docstring is not None:
                try:
                    obj.docstring.value = markdown(obj.docstring.value, obj)
                except (ReferenceError, ValueError) as error:
                    problems.append(str(error))
        if problems:
            raise ReferenceError(
                "docstrings that do not render:\n" + "\n".join(problems)
            )
