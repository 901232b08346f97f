"""SeQuant expression text: the syntax tree, its parser and its printer.

Pure Python, no xDSL. The accepted syntax (section 6 of the batching note,
and SeQuant's own ``parse_expr``)::

    expression ::= ( result "=" )? ( sign? term ( sign term )* )?
    result     ::= tensor                                e.g. R{a_1,a_2;i_1,i_2}
    sign       ::= "+" | "-"
    term       ::= factor ( "*"? factor )*
    factor     ::= number | tensor | "(" term-without-sign ")"
    number     ::= decimal ( "/" decimal )?              e.g. 2, 1/2, 0.5
    tensor     ::= label "{" indices ( ";" indices ( ";" indices )? )? "}"
                   ( ":" LETTER ( "-" LETTER ( "-" LETTER )? )? )?
    indices    ::= ( index ( "," index )* )?             (see axisflow.Index)

* The three index groups are bra, ket and auxiliary (``g{p_1;p_2;Κ_1}``);
  missing groups are empty. ``:N-S-S`` (symmetry, bra-ket symmetry, particle
  symmetry) is kept as text.
* Numbers multiply into the term's rational coefficient (decimals are read
  exactly, ``0.5`` is ``1/2``); ``*`` between factors is optional, as in
  SeQuant (``2 g{...}``).
* White space (new lines included) may separate any two tokens; ``//`` starts
  a comment up to the end of the line (an extension, so that a test file can
  carry its own ``// RUN:`` lines).
* Reserved operator labels ``Ŝ`` (symmetrizer), ``Â`` (antisymmetrizer) and
  ``P̂`` (transposition) are not factors: the parser moves them to
  ``Term.operators`` and the term's external indices are the ones they list.
* Parentheses group a sub-product, nested to any depth: ``(A * B) * (C * D)``
  is binarized as written (this is how SeQuant prints an optimized product).
  Numbers and operators inside parentheses still go to the term's
  coefficient and operators; a group of one operand is that operand
  (``((A))`` is ``A``), a group of none vanishes. Groups are stored flat in
  ``Term.groups`` (no nesting of Python objects), so neither the parser nor
  the printer recurses on the nesting depth.
* A result expression ``R{a_1,a_2;i_1,i_2} = ...`` names the residual
  tensor (``Expression.result``); its indices are every term's externals.
  Each term must carry each of them, and an index that appears once in a
  term must be one of them (located errors otherwise).
* Not supported (reported as a syntax error): signs inside parentheses,
  scalar variables and the ``t_{...}^{...}`` tensor notation.

Errors are ``SequantSyntaxError`` with the source name, line, column (both
1-based, columns in code points) and what was expected; ``parse`` returns a
complete ``Expression`` or raises, never a partial result.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction

from axisflow.numerals import MAX_DIGITS, NumeralError, natural
from axisflow.roles.index import Index, IndexSyntaxError

RESERVED_OPERATORS = frozenset(
    unicodedata.normalize("NFC", label) for label in ("Ŝ", "Â", "P̂")
)
"""Operator labels (NFC): symmetrizer, antisymmetrizer, transposition."""


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


class SequantError(ValueError):
    """Bad SeQuant input, located in the source text.

    ``offset`` is the 0-based code-point position in the source (``-1`` when
    unknown, e.g. for a hand-built expression); ``line`` and ``column`` are
    1-based (0 when unknown); ``reason`` is the message without location.
    """

    def __init__(
        self, reason: str, source: str, offset: int, line: int, column: int
    ) -> None:
        self.reason = reason
        self.source = source
        self.offset = offset
        self.line = line
        self.column = column
        where = f"{source}:{line}:{column}: " if line > 0 else f"{source}: "
        super().__init__(where + reason)


class SequantSyntaxError(SequantError):
    """Malformed expression text: ``expected`` says what would have been valid
    at the location, ``found`` what is there (quoted, or ``end of input``)."""

    def __init__(
        self,
        expected: str,
        found: str,
        source: str,
        offset: int,
        line: int,
        column: int,
    ) -> None:
        self.expected = expected
        self.found = found
        super().__init__(
            f"expected {expected}, found {found}", source, offset, line, column
        )


# --------------------------------------------------------------------------
# Syntax tree
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Tensor:
    """``label{bra;ket;aux}:symmetry``; ``offset`` locates it in the source
    (``-1`` if built by hand) and takes no part in equality."""

    label: str
    bra: tuple[Index, ...] = ()
    ket: tuple[Index, ...] = ()
    aux: tuple[Index, ...] = ()
    symmetry: str | None = None
    offset: int = field(default=-1, compare=False)

    @property
    def indices(self) -> tuple[Index, ...]:
        """All indices in slot order: bra, then ket, then aux."""
        return self.bra + self.ket + self.aux

    @property
    def layout(self) -> tuple[int, int, int]:
        """Sizes of the bra, ket and aux groups."""
        return (len(self.bra), len(self.ket), len(self.aux))

    def renamed(self, rename: Callable[[Index], Index]) -> Tensor:
        """The tensor with ``rename`` applied to every index slot."""
        return Tensor(
            self.label,
            tuple(map(rename, self.bra)),
            tuple(map(rename, self.ket)),
            tuple(map(rename, self.aux)),
            self.symmetry,
        )

    @property
    def is_operator(self) -> bool:
        """Whether the label is a reserved operator (``Ŝ``, ``Â``, ``P̂``)."""
        return unicodedata.normalize("NFC", self.label) in RESERVED_OPERATORS

    def __str__(self) -> str:
        groups = [self.bra, self.ket] + ([self.aux] if self.aux else [])
        body = ";".join(",".join(i.full_label for i in group) for group in groups)
        suffix = "" if self.symmetry is None else f":{self.symmetry}"
        return f"{self.label}{{{body}}}{suffix}"


Operand = int
"""An operand of a product: ``k >= 0`` is ``Term.tensors[k]``, ``~j`` (that
is ``-j - 1``) is ``Term.groups[j]``."""


@dataclass(frozen=True)
class Term:
    """One product: a rational coefficient, tensors in product order, the
    reserved operators applied to it (not factors), its parenthesized
    sub-products and the externals a result expression declares."""

    coefficient: Fraction
    tensors: tuple[Tensor, ...]
    operators: tuple[Tensor, ...] = ()
    offset: int = field(default=-1, compare=False)
    groups: tuple[tuple[Operand, ...], ...] = ()
    """Parenthesized sub-products, each a tuple of two or more operands in
    written order, numbered in the order their ``)`` is written (so a group
    only refers to earlier groups). Empty when the term has no parentheses."""
    declared: tuple[Index, ...] | None = None
    """The indices of the expression's result tensor (``R{...} = ...``), when
    it has one: then they are the term's externals."""

    def operands(self) -> tuple[Operand, ...]:
        """The operands of the term's own (outermost) product in written
        order: tensors and groups that no group contains."""
        if not self.groups:
            return tuple(range(len(self.tensors)))
        inner: set[Operand] = set()
        first: list[int] = []
        for group in self.groups:
            inner.update(group)
            head = group[0]
            first.append(head if head >= 0 else first[~head])
        top = [k for k in range(len(self.tensors)) if k not in inner]
        top.extend(~j for j in range(len(self.groups)) if ~j not in inner)
        return tuple(sorted(top, key=lambda k: k if k >= 0 else first[~k]))

    def appearances(self) -> dict[Index, int]:
        """How often each index appears as a tensor index (proto indices
        inside a composite label are not appearances), first-seen order."""
        counts: dict[Index, int] = {}
        for tensor in self.tensors:
            for index in tensor.indices:
                counts[index] = counts.get(index, 0) + 1
        return counts

    def externals(self) -> tuple[Index, ...]:
        """The term's result indices.

        Those of the expression's result tensor if it declares one
        (``declared``); otherwise those listed by its operators (in order,
        without repeats) if it has any; otherwise the indices that appear
        exactly once.
        """
        if self.declared is not None:
            return self.declared
        if self.operators:
            listed: dict[Index, None] = {}
            for operator in self.operators:
                listed.update(dict.fromkeys(operator.indices))
            return tuple(listed)
        return tuple(i for i, n in self.appearances().items() if n == 1)

    def with_fresh_dummies(self, offset: int) -> Term:
        """The term with every summed (non-external) index, and every such
        proto index, renumbered by ``offset``: the same term on fresh labels."""
        externals = set(self.externals())
        memo: dict[Index, Index] = {}

        def rename(index: Index) -> Index:
            # Post-order with an explicit stack: protos nest to any depth.
            pending: list[tuple[Index, bool]] = [(index, False)]
            while pending:
                current, protos_done = pending.pop()
                if current in memo:
                    continue
                if not protos_done:
                    pending.append((current, True))
                    pending.extend((p, False) for p in current.protos)
                    continue
                ordinal = current.ordinal
                if current not in externals and ordinal is not None:
                    ordinal += offset
                protos = [memo[p] for p in current.protos]
                memo[current] = Index(current.base_key, ordinal, protos)
            return memo[index]

        def tensor(t: Tensor) -> Tensor:
            return t.renamed(rename)

        return Term(
            self.coefficient,
            tuple(map(tensor, self.tensors)),
            tuple(map(tensor, self.operators)),
            groups=self.groups,
            declared=self.declared,
        )

    def __str__(self) -> str:
        return "".join(_format_term(self, first=True))


def repeat_with_fresh_labels(
    terms: tuple[Term, ...], copies: int, stride: int = 10_000
) -> tuple[Term, ...]:
    """``copies`` copies of ``terms``, the k-th with its summed indices
    renumbered by ``k * stride`` (larger inputs of the same structure, for
    benchmarks and scaling tests)."""
    return tuple(
        term.with_fresh_dummies(stride * k) if k else term
        for k in range(copies)
        for term in terms
    )


@dataclass(frozen=True)
class Expression:
    """A sum of terms, with what is needed to locate its parts in the source."""

    terms: tuple[Term, ...]
    source: str = field(default="<input>", compare=False)
    line_starts: tuple[int, ...] = field(default=(0,), compare=False, repr=False)
    """Offsets at which source lines start (for ``locate``)."""
    result: Tensor | None = None
    """The residual tensor named by ``R{...} = ...``, if the text has one."""

    def locate(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a source offset; (0, 0) if unknown."""
        if offset < 0:
            return (0, 0)
        line = bisect_right(self.line_starts, offset)
        return (line, offset - self.line_starts[line - 1] + 1)

    def error(self, reason: str, offset: int) -> SequantError:
        """A ``SequantError`` at ``offset`` of this expression's source."""
        line, column = self.locate(offset)
        return SequantError(reason, self.source, offset, line, column)

    def tensors(self) -> Iterator[Tensor]:
        """Every tensor and operator of every term."""
        if self.result is not None:
            yield self.result
        for term in self.terms:
            yield from term.operators
            yield from term.tensors

    def space_keys(self) -> list[str]:
        """Base keys of every index at any depth (protos included), sorted."""
        keys: set[str] = set()
        seen: set[Index] = set()
        for tensor in self.tensors():
            for index in tensor.indices:
                if index in seen:
                    continue
                seen.add(index)
                keys.add(index.base_key)
                keys.update(proto.base_key for proto in index.all_protos())
        return sorted(keys)

    def __str__(self) -> str:
        return deparse(self)


# --------------------------------------------------------------------------
# Printer
# --------------------------------------------------------------------------


def _format_term(term: Term, first: bool) -> Iterator[str]:
    """The pieces of the term's text (joined without separators).

    Groups are printed with an explicit stack of pending pieces, so the
    nesting depth costs no Python recursion and the output is linear in size.
    """
    coefficient = term.coefficient
    if coefficient < 0:
        yield "-" if first else "- "
    elif not first:
        yield "+ "
    magnitude = abs(coefficient)
    heads = [str(t) for t in term.operators]
    operands = term.operands()
    if magnitude != 1 or not (heads or operands):
        heads.insert(0, str(magnitude))
    yield " * ".join(heads)
    # Pending work, popped from the end: an operand to print, or literal text.
    stack: list[Operand | str] = []
    for position in range(len(operands) - 1, -1, -1):
        stack.append(operands[position])
        if position or heads:
            stack.append(" * ")
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif item >= 0:
            yield str(term.tensors[item])
        else:
            group = term.groups[~item]
            yield "("
            stack.append(")")
            for position in range(len(group) - 1, -1, -1):
                stack.append(group[position])
                if position:
                    stack.append(" * ")


def deparse(expression: Expression) -> str:
    """The expression as SeQuant text; ``parse(deparse(e)) == e``.

    The result tensor, if any, comes first (``R{...} = ``); operators are
    printed first in their term; ``*`` joins all factors; groups keep their
    parentheses.
    """
    pieces: list[str] = []
    if expression.result is not None:
        pieces.append(f"{expression.result} =")
    for number, term in enumerate(expression.terms):
        if pieces:
            pieces.append(" ")
        pieces.extend(_format_term(term, first=number == 0))
    return "".join(pieces)


# --------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------

_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_SYMMETRY_LETTERS = "an upper-case symmetry letter (such as N, S, C or A)"


def _is_label_start(char: str) -> bool:
    return char.isalpha()


def _is_label_char(char: str) -> bool:
    """Characters of a tensor label (after the first letter), as in SeQuant:
    letters, digits, ``_``, combining marks, super/subscripts and arrows."""
    if char.isalnum() or char in "_⁔":
        return True
    code = ord(char)
    if 0x2070 <= code <= 0x209F or 0x2190 <= code <= 0x21FF:
        return True
    return unicodedata.category(char).startswith("M")


def parse(text: str, source: str = "<input>") -> Expression:
    """Parse SeQuant expression text into an ``Expression``.

    ``source`` names the input in error messages. Raises
    ``SequantSyntaxError`` (line, column, what was expected) on bad input
    and ``TypeError`` for a ``text`` or ``source`` that is no ``str``. Text
    without a term (empty, blank or comments only) is the empty sum, as in
    SeQuant: an ``Expression`` with no terms (``deparse`` of it is ``""``).
    """
    if not isinstance(text, str):
        hint = (
            " (decode it first: data.decode('utf-8'))"
            if isinstance(text, bytes | bytearray)
            else ""
        )
        raise TypeError(f"text must be a str{hint}, got {type(text).__name__}")
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, got {type(source).__name__}")
    return _Parser(text, source).parse_expression()


def decode(data: bytes, source: str = "<input>") -> str:
    """The text of SeQuant input read as bytes; invalid UTF-8 raises
    ``SequantError`` at its line and column (in characters)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        before = data[: error.start].decode("utf-8")
        line = before.count("\n") + 1
        column = len(before) - (before.rfind("\n") + 1) + 1
        reason = f"input is not valid UTF-8 (byte 0x{data[error.start]:02x})"
        raise SequantError(reason, source, len(before), line, column) from None


class _Parser:
    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.pos = 0
        self.token_end = 0
        """End of the last token read (where an unexpected end of input is
        reported, rather than after trailing blanks and comments)."""
        starts = [0]
        newline = text.find("\n")
        while newline != -1:
            starts.append(newline + 1)
            newline = text.find("\n", newline + 1)
        self.line_starts = tuple(starts)

    # -- low level ---------------------------------------------------------

    def fail(self, expected: str, pos: int | None = None) -> SequantSyntaxError:
        pos = self.pos if pos is None else pos
        if pos < len(self.text):
            found = repr(self.text[pos])
        else:
            found = "end of input"
            pos = self.token_end
        line = bisect_right(self.line_starts, pos)
        column = pos - self.line_starts[line - 1] + 1
        return SequantSyntaxError(expected, found, self.source, pos, line, column)

    def take(self, end: int) -> None:
        """Consume a token ending at ``end``."""
        self.pos = self.token_end = end

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip(self) -> str:
        """Skip white space and ``//`` comments; return the next character."""
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char.isspace():
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end == -1 else end
            else:
                return char
        return ""

    # -- grammar -----------------------------------------------------------

    def parse_expression(self) -> Expression:
        result = self.parse_result()
        declared = None if result is None else self.declared_externals(result)
        terms: list[Term] = []
        char = self.skip()
        if char:
            sign = 1
            start = self.pos
            if char in "+-":
                sign = -1 if char == "-" else 1
                self.take(self.pos + 1)
            terms.append(self.parse_term(sign, start, declared))
        while char := self.skip():
            if char not in "+-":
                raise self.fail("'+', '-', '*', another factor or end of input")
            start = self.pos
            self.take(self.pos + 1)
            terms.append(self.parse_term(-1 if char == "-" else 1, start, declared))
        return Expression(tuple(terms), self.source, self.line_starts, result)

    def parse_result(self) -> Tensor | None:
        """``R{...} =`` at the start of the text, if there."""
        if not _is_label_start(self.skip()):
            return None
        save = (self.pos, self.token_end)
        tensor = self.parse_tensor()
        if self.skip() != "=":
            self.pos, self.token_end = save
            return None
        if tensor.is_operator:
            raise self.error(
                f"the result of an expression cannot be the operator {tensor.label}",
                tensor.offset,
            )
        self.take(self.pos + 1)
        return tensor

    def declared_externals(self, result: Tensor) -> tuple[Index, ...]:
        seen: set[Index] = set()
        for index in result.indices:
            if index in seen:
                raise self.error(
                    f"index {index} appears twice in the result {result.label}",
                    result.offset,
                )
            seen.add(index)
        return result.indices

    def error(self, reason: str, offset: int) -> SequantError:
        line = bisect_right(self.line_starts, offset)
        column = offset - self.line_starts[line - 1] + 1
        return SequantError(reason, self.source, offset, line, column)

    def parse_term(
        self, sign: int, start: int, declared: tuple[Index, ...] | None
    ) -> Term:
        """A product: factors, and parenthesized groups nested to any depth.

        Iterative: ``products`` holds the operands of every open product
        (the term's own first), ``opens`` where each open parenthesis is.
        """
        coefficient = Fraction(sign)
        tensors: list[Tensor] = []
        operators: list[Tensor] = []
        groups: list[tuple[Operand, ...]] = []
        products: list[list[Operand]] = [[]]
        opens: list[int] = []
        expected = "a number, a tensor or '('"
        while True:
            char = self.skip()
            if char == "(":
                opens.append(self.pos)
                products.append([])
                self.take(self.pos + 1)
                expected = "a number, a tensor or '(' after '('"
                continue
            if char.isdigit() or (char == "." and self._digit_at(self.pos + 1)):
                coefficient *= self.parse_number()
            elif char and _is_label_start(char):
                tensor = self.parse_tensor()
                if tensor.is_operator:
                    operators.append(tensor)
                else:
                    products[-1].append(len(tensors))
                    tensors.append(tensor)
            else:
                raise self.fail(expected)
            char = self.skip()
            while char == ")" and opens:
                self.take(self.pos + 1)
                opens.pop()
                operands = products.pop()
                if len(operands) >= 2:
                    groups.append(tuple(operands))
                    products[-1].append(~(len(groups) - 1))
                elif operands:
                    products[-1].append(operands[0])
                char = self.skip()
            if char == "*":
                self.take(self.pos + 1)
                expected = "a number, a tensor or '(' after '*'"
            elif char and (char.isdigit() or char in ".(" or _is_label_start(char)):
                expected = "a number, a tensor or '('"
            elif opens:
                still = "one '(' is" if len(opens) == 1 else f"{len(opens)} '(' are"
                raise self.fail(f"'*', another factor or ')' ({still} still open)")
            else:
                term = Term(
                    coefficient,
                    tuple(tensors),
                    tuple(operators),
                    start,
                    tuple(groups),
                    declared,
                )
                if declared is not None:
                    self.check_declared(term, declared)
                return term

    def check_declared(self, term: Term, declared: tuple[Index, ...]) -> None:
        """A term of an expression with a result: it carries every result
        index, an index appearing once is a result index, and its operators
        list exactly the result's indices."""
        listed = set(declared)
        counts = term.appearances()
        for tensor in term.tensors:
            for index in tensor.indices:
                if counts[index] == 1 and index not in listed:
                    raise self.error(
                        f"index {index} of tensor {tensor.label} appears once in "
                        "its term but the result does not list it",
                        tensor.offset,
                    )
        for index in declared:
            if index not in counts:
                raise self.error(
                    f"the result lists index {index}, which no tensor of the "
                    "term carries",
                    term.offset,
                )
        for operator in term.operators:
            if set(operator.indices) != listed:
                raise self.error(
                    f"operator {operator.label} lists other indices than the result",
                    operator.offset,
                )

    def _digit_at(self, pos: int) -> bool:
        return pos < len(self.text) and self.text[pos].isdigit()

    def parse_decimal(self) -> Fraction:
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            raise self.fail("a number")
        mantissa, _, exponent = match.group().lower().partition("e")
        try:  # Fraction would fail unlocated, or build 10**exponent
            natural(mantissa.replace(".", ""), "a number's digits")
            natural(exponent.lstrip("+-") or "0", "an exponent", MAX_DIGITS)
        except NumeralError:
            raise self.fail(
                f"a number of at most {MAX_DIGITS} digits and exponent"
            ) from None
        self.take(match.end())
        return Fraction(match.group())

    def parse_number(self) -> Fraction:
        value = self.parse_decimal()
        save = self.pos
        if self.skip() != "/" or self.text.startswith("//", self.pos):
            self.pos = save
            return value
        self.take(self.pos + 1)
        self.skip()
        denominator_at = self.pos
        denominator = self.parse_decimal()
        if denominator == 0:
            raise self.fail("a non-zero denominator", denominator_at)
        return value / denominator

    def parse_tensor(self) -> Tensor:
        start = self.pos
        text = self.text
        end = start + 1
        while end < len(text) and _is_label_char(text[end]):
            end += 1
        label = text[start:end]
        self.take(end)
        if self.skip() != "{":
            raise self.fail(f"'{{' after tensor label {label!r}")
        self.take(self.pos + 1)
        groups: list[list[Index]] = [[]]
        need_index = False  # after ',' an index must follow
        while True:
            char = self.skip()
            if need_index or char not in ("", ";", "}"):
                groups[-1].append(self.parse_index(need_index))
                need_index = False
                char = self.skip()
                if char == ",":
                    self.take(self.pos + 1)
                    need_index = True
                    continue
                if char not in (";", "}"):
                    raise self.fail("',', ';' or '}' after an index")
            if char == "}":
                self.take(self.pos + 1)
                break
            if char == ";" and len(groups) < 3:
                self.take(self.pos + 1)
                groups.append([])
                continue
            if char == ";":
                raise self.fail("',' or '}' (a tensor has at most 3 index groups)")
            raise self.fail("an index, ';' or '}'")
        symmetry = self.parse_symmetry()
        bra, ket, aux = (tuple(g) for g in groups + [[]] * (3 - len(groups)))
        return Tensor(label, bra, ket, aux, symmetry, start)

    def parse_index(self, after_comma: bool) -> Index:
        try:
            index, end = Index.parse_prefix(self.text, self.pos)
        except IndexSyntaxError as error:
            expected = error.expected
            if error.position == self.pos:
                expected = "an index label" + (" after ','" if after_comma else "")
            raise self.fail(expected, error.position) from None
        self.take(end)
        return index

    def parse_symmetry(self) -> str | None:
        save = self.pos
        if self.skip() != ":":
            self.pos = save
            return None
        self.take(self.pos + 1)
        letters: list[str] = []
        while True:
            char = self.peek()
            if not ("A" <= char <= "Z"):
                raise self.fail(_SYMMETRY_LETTERS)
            letters.append(char)
            self.take(self.pos + 1)
            if len(letters) == 3 or self.peek() != "-":
                return "-".join(letters)
            self.take(self.pos + 1)
