"""Reading SeQuant index labels embedded in MLIR text.

Labels such as ``μ̃_1152`` or ``i↑_1`` are not MLIR tokens: the MLIR lexer
stops at the combining tilde or the arrow. The custom assembly formats of the
``batch`` dialect therefore scan labels from the raw input text, starting at
the current token (which always lexes: a ``[`` or the label's first letter),
and resume the token stream after the label. Errors are ``ParseError`` at the
exact position in the file.
"""

from __future__ import annotations

from functools import lru_cache

from xdsl.parser import BaseParser
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Span

from axisflow.roles.index import Index, IndexSyntaxError, is_key_char
from axisflow.xdsl_compat import resume_at


@lru_cache(maxsize=65536)
def parse_label(label: str) -> Index:
    """``Index.parse`` with a cache: IR repeats the same few labels many times."""
    return Index.parse(label)


def _raw_text(parser: BaseParser) -> str:
    content = parser.lexer.input.content
    assert isinstance(content, str)
    return content


def _fail(parser: BaseParser, pos: int, message: str) -> ParseError:
    return ParseError(Span(pos, pos + 1, parser.lexer.input), message)


_LABELS_BY_TEXT: dict[str, Index] = {}
"""Label text as it appeared in the input -> its (shared) ``Index``: the label
cache, consulted before a label is parsed. Holds only texts that
``Index.parse_prefix`` consumed entirely."""
_LABELS_BY_TEXT_LIMIT = 65536
_LABEL_STOP = frozenset(' \t\r\n,]>[=:*{}()"')
"""Characters that end a label outside its proto list (none is a key
character, a digit or ``_``, so ``parse_prefix`` would stop there too)."""


def _label_extent(text: str, pos: int) -> int:
    """Where the label starting at ``pos`` ends if it is well formed, or -1
    when only ``parse_prefix`` can tell (a blank before a possible ``<``)."""
    end = pos
    size = len(text)
    stop = _LABEL_STOP
    while end < size:
        char = text[end]
        if char == "<":  # a proto list: up to its matching '>'
            depth = 0
            while end < size:
                char = text[end]
                if char == "<":
                    depth += 1
                elif char == ">":
                    depth -= 1
                    if depth == 0:
                        return end + 1
                elif char in "\r\n]":
                    return -1
                end += 1
            return -1
        if char in stop:
            break
        end += 1
    if end < size and text[end] in " \t":
        after = end
        while after < size and text[after] in " \t":
            after += 1
        if after < size and text[after] == "<":
            return -1
    return end


def _scan_index(parser: BaseParser, text: str, pos: int) -> tuple[Index, int]:
    end = _label_extent(text, pos)
    if end > pos:
        known = _LABELS_BY_TEXT.get(text[pos:end])
        if known is not None:
            return known, end
    try:
        index, end = Index.parse_prefix(text, pos)
    except IndexSyntaxError as error:
        raise _fail(
            parser,
            error.position,
            f"malformed index label: expected {error.expected}, found {error.found}",
        ) from None
    shared = parse_label(index.full_label)
    if len(_LABELS_BY_TEXT) >= _LABELS_BY_TEXT_LIMIT:
        _LABELS_BY_TEXT.clear()
    _LABELS_BY_TEXT[text[pos:end]] = shared
    return shared, end


def parse_index(parser: BaseParser) -> Index:
    """Parse one bare label at the current token, e.g. ``Κ_1`` or ``a_1<i_1>``."""
    text = _raw_text(parser)
    start = parser.pos
    if start < len(text) and text[start] == '"':
        label = parse_text(parser, "an index label")
        try:
            return parse_label(label)
        except ValueError as error:
            raise _fail(parser, start, str(error)) from None
    index, end = _scan_index(parser, text, start)
    resume_at(parser, end)
    return index


def parse_index_list(parser: BaseParser) -> list[Index]:
    """Parse ``[label, label, ...]`` (possibly empty) at the current ``[``."""
    text = _raw_text(parser)
    start = parser.pos
    if start >= len(text) or text[start] != "[":
        raise _fail(parser, start, "expected '[' to open an index list")
    pos = _skip_blank(text, start + 1)
    indices: list[Index] = []
    if pos < len(text) and text[pos] == "]":
        resume_at(parser, pos + 1)
        return indices
    while True:
        index, pos = _scan_index(parser, text, pos)
        indices.append(index)
        pos = _skip_blank(text, pos)
        if pos < len(text) and text[pos] == ",":
            pos = _skip_blank(text, pos + 1)
            continue
        if pos < len(text) and text[pos] == "]":
            resume_at(parser, pos + 1)
            return indices
        raise _fail(parser, pos, "expected ',' or ']' in an index list")


def parse_text(parser: BaseParser, what: str) -> str:
    """A string literal, also when xDSL printed it as escaped UTF-8 bytes.

    xDSL's generic printer escapes non-ASCII characters byte by byte, and its
    lexer then reads the literal as bytes: decode them here so that labels
    such as ``δ`` or ``Κ_1`` round-trip through the generic form.
    """
    start = parser.pos
    text = parser.parse_optional_str_literal()
    if text is not None:
        return text
    data = parser.parse_optional_bytes_literal()
    if data is None:
        raise _fail(parser, start, f"expected a string literal for {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(parser, start, f"{what} is not valid UTF-8") from None


def quote_text(text: str) -> str:
    """A string literal with Unicode kept readable; quotes, backslashes and
    control characters escaped as MLIR expects."""
    out: list[str] = ['"']
    for char in text:
        if char in '"\\' or ord(char) < 0x20 or ord(char) == 0x7F:
            out.extend(f"\\{byte:02X}" for byte in char.encode("utf-8"))
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def parse_key(parser: BaseParser) -> str:
    """Parse a bare index-space key (``i``, ``Κ``, ``μ̃``) or a string literal."""
    text = _raw_text(parser)
    start = parser.pos
    if start < len(text) and text[start] == '"':
        key = parse_text(parser, "an index-space key")
        if not key or not all(is_key_char(c) for c in key):
            raise _fail(parser, start, f"malformed index-space key {key!r}")
        return key
    end = start
    while end < len(text) and is_key_char(text[end]):
        end += 1
    if end == start:
        raise _fail(parser, start, "expected an index-space key")
    if end < len(text) and (text[end] in "_<" or text[end].isdigit()):
        raise _fail(parser, end, "an index-space key has no ordinal or proto indices")
    resume_at(parser, end)
    return text[start:end]


def _skip_blank(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def print_label(index: Index) -> str:
    """A label as it appears in custom syntax (quoted if the lexer cannot start it)."""
    label = index.full_label
    return label if label[0].isalpha() else quote_text(label)


def print_index_list(indices: tuple[Index, ...] | list[Index]) -> str:
    """``[a, b]`` with bare labels; nothing needs quoting inside brackets."""
    return "[" + ", ".join(index.full_label for index in indices) + "]"
