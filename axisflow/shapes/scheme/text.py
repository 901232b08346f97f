"""The text form of a shape scheme: one item per line, readable and parseable.

``str(scheme)`` lists these lines under a header, and the ``tprog.scheme`` IR
operation carries them, so that a pass can rebuild the scheme in another
session. Variables are renamed canonically: ``d1, d2, ...`` for dims and
``r1, r2, ...`` for rows, generalized ones first. ``a <= b`` reads ``a ⊑ b``
(``b`` broadcasts to ``a``). Names are quoted with single quotes (a quote
inside is doubled). Lines, in this order:

==================================================== =========================
``generalized d1, r1, r2``                           the trace's own variables
``fixed r3``                                         stand for pre-existing ones
``arg 0 'x' [...r1] | [...r2] -> [...r3]``           an argument's rows
``result 0 'h' [...r1] | [] -> [...r4, 16]``         a result's rows
``anchor 0 'w' [] | [...r3] -> [16]``                a pre-existing shape read
``internal 0 'h' [...r1] | [] -> [...r4, 16]``       an intermediate tensor
``ineq [...r4] <= [...r1] ORIGIN``                   a row inequality
``dim_ineq 16 <= d1 ORIGIN``                         a dim inequality
``at_least d2 3 ORIGIN``                             a fixed index's minimum
``total [...r5], [d2] = 12 ORIGIN``                  a pending element count
                                                     (``= d4``: counted by a dim)
``linear stride [2 d1 'o', -1 d3 '2*o'] 0 '2*o' ORIGIN``
                                                     a pending linear equation
                                                     ``Σ coeff·dim + const = 0``
                                                     (its kind, then each term:
                                                     coefficient, dim, name;
                                                     then the constant and the
                                                     axis)
``prefix [...r7] begins [d4] rest [...r8] ORIGIN``   axes before a row variable
``leaf [...r6] ORIGIN``, ``param [...r6] ORIGIN``    a terminal row
``mark safe_to_guess r4``                            a policy mark
``gen r4 1``                                         template depth of a variable
``pad arg 0 output -2 d4 ORIGIN``                    a padded convolution's axis
                                                     (which shape, row, axis,
                                                     kernel size)
``capture 'j' d3 ORIGIN``                            a capture input (a row
                                                     ``[...r2]`` for a row
                                                     variable's; ``d3 before
                                                     1 ORIGIN``: bound before
                                                     the second pending fact,
                                                     counting totals, linear
                                                     equations and prefixes)
``loose r5 = old r123``                              an open variable of the session
==================================================== =========================

``ORIGIN`` is ``('compose' 'h' of 'w', 'x' lhs 'h'.batch rhs 'x'.batch)``:
operation and tensor, then optional operands, the two sides, ``detail``,
``scheme`` and ``at`` (application).

:func:`scheme_lines` prints, :func:`parse_scheme_text` parses into plain
:class:`SchemeText`; :mod:`.read` rebuilds a scheme from it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NoReturn, Protocol

from axisflow.shapes.constraints import (
    DimAtLeast,
    DimIneq,
    DimLinear,
    LinearKind,
    Mark,
    RowIneq,
    RowPrefix,
    TotalElems,
)
from axisflow.shapes.errors import ShapeError
from axisflow.shapes.scheme.data import (
    Anchor,
    CaptureInput,
    Fact,
    InternalRows,
    LooseVariable,
    Padding,
    Rows,
)
from axisflow.shapes.terms import (
    DEFAULT_BASIS,
    KINDS,
    Dim,
    DimVar,
    Kind,
    Origin,
    Row,
    RowVar,
    Side,
    Size,
)


class SchemeParts(Protocol):
    """What the text form prints of a scheme (a :class:`~.model.Scheme`)."""

    @property
    def generalized(self) -> tuple[DimVar | RowVar, ...]: ...
    @property
    def fixed(self) -> tuple[DimVar | RowVar, ...]: ...
    @property
    def args(self) -> tuple[Rows, ...]: ...
    @property
    def arg_names(self) -> tuple[str, ...]: ...
    @property
    def results(self) -> tuple[Rows, ...]: ...
    @property
    def result_names(self) -> tuple[str, ...]: ...
    @property
    def anchors(self) -> tuple[Anchor, ...]: ...
    @property
    def internal(self) -> tuple[InternalRows, ...]: ...
    @property
    def facts(self) -> tuple[Fact, ...]: ...
    @property
    def marks(self) -> tuple[tuple[RowVar, Mark], ...]: ...
    @property
    def gens(self) -> tuple[tuple[RowVar, int], ...]: ...
    @property
    def captures(self) -> tuple[CaptureInput, ...]: ...
    @property
    def loose(self) -> tuple[LooseVariable, ...]: ...
    @property
    def paddings(self) -> tuple[Padding, ...]: ...


class SchemeTextError(ShapeError):
    """A malformed line of a shape scheme's text form."""


# ------------------------------------------------------------------ printing


def quote(text: str) -> str:
    """``'text'`` with inner quotes doubled."""
    return "'" + text.replace("'", "''") + "'"


class _Names:
    """Canonical names of a scheme's variables."""

    def __init__(self, variables: Sequence[DimVar | RowVar]) -> None:
        self.names: dict[DimVar | RowVar, str] = {}
        self.rows: dict[Row, str] = {}
        dims = rows = 0
        for var in variables:
            if type(var) is DimVar:
                dims += 1
                self.names[var] = f"d{dims}"
            else:
                rows += 1
                self.names[var] = f"r{rows}"

    def var(self, var: DimVar | RowVar) -> str:
        name = self.names.get(var)
        if name is None:
            raise ShapeError(f"the scheme mentions {var!r}, which it does not declare")
        return name

    def dim(self, dim: Dim) -> str:
        if type(dim) is DimVar:
            return self.var(dim)
        return repr(dim)

    def row(self, row: Row) -> str:
        # The shapes of a body share their rows: each is written out once.
        text = self.rows.get(row)
        if text is None:
            items = [f"...{self.var(row.var)}"] if row.var is not None else []
            items.extend(self.dim(d) for d in row.dims)
            text = self.rows[row] = "[" + ", ".join(items) + "]"
        return text

    def term(self, term: Dim | Row) -> str:
        return self.row(term) if type(term) is Row else self.dim(term)  # type: ignore[arg-type]

    def rows3(self, rows: tuple[Row, Row, Row]) -> str:
        return f"{self.row(rows[0])} | {self.row(rows[1])} -> {self.row(rows[2])}"


def _side(side: Side) -> str:
    text = quote(side.tensor)
    return text if side.kind is None else f"{text}.{side.kind}"


def origin_text(origin: Origin) -> str:
    """The parseable text of an origin (its ``site`` is not part of it)."""
    parts = [quote(origin.operation), quote(origin.tensor)]
    if origin.operands:
        parts.append("of " + ", ".join(quote(name) for name in origin.operands))
    if origin.lhs is not None:
        parts.append("lhs " + _side(origin.lhs))
    if origin.rhs is not None:
        parts.append("rhs " + _side(origin.rhs))
    if origin.detail is not None:
        parts.append("detail " + quote(origin.detail))
    if origin.scheme is not None:
        parts.append("scheme " + quote(origin.scheme))
    if origin.application is not None:
        parts.append("at " + quote(origin.application))
    return "(" + " ".join(parts) + ")"


def scheme_lines(sc: SchemeParts) -> list[str]:
    """The text form of a scheme (see the module docstring)."""
    names = _Names((*sc.generalized, *sc.fixed))

    def var_list(variables: Sequence[DimVar | RowVar]) -> str:
        return ", ".join(names.var(v) for v in variables) if variables else "(none)"

    lines = [
        f"generalized {var_list(sc.generalized)}",
        f"fixed {var_list(sc.fixed)}",
    ]
    for index, rows in enumerate(sc.args):
        lines.append(f"arg {index} {quote(sc.arg_names[index])} {names.rows3(rows)}")
    for index, rows in enumerate(sc.results):
        lines.append(
            f"result {index} {quote(sc.result_names[index])} {names.rows3(rows)}"
        )
    for index, anchor in enumerate(sc.anchors):
        lines.append(
            f"anchor {index} {quote(anchor.shape.name)} {names.rows3(anchor.rows)}"
        )
    for index, item in enumerate(sc.internal):
        lines.append(f"internal {index} {quote(item.name)} {names.rows3(item.rows)}")
    for fact in sc.facts:
        origin = origin_text(fact.origin)
        if isinstance(fact, RowIneq):
            lines.append(
                f"ineq {names.row(fact.res)} <= {names.row(fact.opnd)} {origin}"
            )
        elif isinstance(fact, DimIneq):
            lines.append(
                f"dim_ineq {names.dim(fact.res)} <= {names.dim(fact.opnd)} {origin}"
            )
        elif isinstance(fact, DimAtLeast):
            lines.append(f"at_least {names.dim(fact.dim)} {fact.n} {origin}")
        elif isinstance(fact, TotalElems):
            rows = ", ".join(names.row(r) for r in fact.rows)
            count = fact.count
            counted = names.dim(count) if isinstance(count, DimVar | Size) else count
            lines.append(f"total {rows} = {counted} {origin}")
        elif isinstance(fact, DimLinear):
            terms = ", ".join(
                f"{coeff} {names.dim(dim)} {quote(name)}"
                for (coeff, dim), name in zip(fact.terms, fact.names, strict=True)
            )
            lines.append(
                f"linear {fact.kind.value} [{terms}] {fact.const} {quote(fact.text)} "
                f"{origin}"
            )
        elif isinstance(fact, RowPrefix):
            beg = "[" + ", ".join(names.dim(d) for d in fact.beg) + "]"
            lines.append(
                f"prefix {names.row(fact.whole)} begins {beg} rest "
                f"{names.row(fact.rest)} {origin}"
            )
        else:
            kind = "param" if fact.is_param else "leaf"
            lines.append(f"{kind} {names.row(fact.row)} {origin}")
    for var, mark in sc.marks:
        lines.append(f"mark {mark.value} {names.var(var)}")
    for var, gen in sc.gens:
        lines.append(f"gen {names.var(var)} {gen}")
    for padding in sc.paddings:
        lines.append(
            f"pad {padding.where} {padding.index} {padding.kind.value} "
            f"{padding.axis} {names.dim(padding.kernel)} {origin_text(padding.origin)}"
        )
    for capture in sc.captures:
        before = "" if capture.before is None else f"before {capture.before} "
        lines.append(
            f"capture {quote(capture.ref.label)} {names.term(capture.dim)} "
            f"{before}{origin_text(capture.origin)}"
        )
    for item in sc.loose:
        term = (
            names.row(item.term) if isinstance(item.term, Row) else names.dim(item.term)
        )
        lines.append(f"loose {term} = old {item.old!r}")
    return lines


# ------------------------------------------------------------------- parsing

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<quoted>'(?:[^']|'')*')
     |(?P<ellipsis>\.\.\.)
     |(?P<arrow>->)
     |(?P<le><=)
     |(?P<word>[A-Za-z_][A-Za-z0-9_]*)
     |(?P<int>-?\d+)
     |(?P<punct>[\[\],|()=.@])
    )""",
    re.VERBOSE,
)
_VAR = re.compile(r"([dr])(\d+)\Z")


@dataclass
class _Tokens:
    line: str
    number: int
    items: list[tuple[str, str, int]] = field(default_factory=list)
    pos: int = 0

    @classmethod
    def of(cls, line: str, number: int) -> _Tokens:
        tokens = cls(line, number)
        index = 0
        # Past the last non-blank character only blanks remain; computed once,
        # as slicing the rest of the line at each token is quadratic in it (a
        # nested call's origin names its whole call path).
        end = len(line.rstrip())
        while index < end:
            match = _TOKEN.match(line, index)
            if match is None or match.lastgroup is None:
                # Point at the character itself, not at the blanks before it.
                column = len(line) - len(line[index:].lstrip())
                tokens.fail_at(column, "unexpected character")
            start = match.start(match.lastgroup)
            tokens.items.append((match.lastgroup, match.group(match.lastgroup), start))
            index = match.end()
        return tokens

    def fail_at(self, column: int, message: str) -> NoReturn:
        raise SchemeTextError(
            f"malformed shape scheme line {self.number} at column {column}: {message} "
            f"in {self.line!r}"
        )

    def fail(self, message: str) -> NoReturn:
        column = (
            self.items[self.pos][2] if self.pos < len(self.items) else len(self.line)
        )
        self.fail_at(column, message)

    def peek(self) -> tuple[str, str] | None:
        if self.pos < len(self.items):
            kind, text, _ = self.items[self.pos]
            return kind, text
        return None

    def take(self, kind: str, text: str | None = None) -> str:
        found = self.peek()
        if found is None or found[0] != kind or (text is not None and found[1] != text):
            wanted = repr(text) if text is not None else kind
            got = "the end of the line" if found is None else repr(found[1])
            self.fail(f"expected {wanted}, got {got}")
        self.pos += 1
        return found[1]

    def optional(self, kind: str, text: str | None = None) -> str | None:
        found = self.peek()
        if (
            found is not None
            and found[0] == kind
            and (text is None or found[1] == text)
        ):
            self.pos += 1
            return found[1]
        return None

    def end(self) -> None:
        if self.pos != len(self.items):
            self.fail("unexpected text at the end of the line")

    def quoted(self) -> str:
        return self.take("quoted")[1:-1].replace("''", "'")

    def integer(self) -> int:
        return int(self.take("int"))


@dataclass(frozen=True)
class VarName:
    """A variable of the text form (``d3``, ``r2``) or an old variable id."""

    kind: str  # "d" or "r"
    number: int


TextDim = VarName | Size
TextRow = tuple[tuple[TextDim, ...], VarName | None]
TextRows = tuple[TextRow, TextRow, TextRow]


@dataclass
class SchemeText:
    """A parsed scheme text, not yet bound to a session."""

    generalized: list[VarName] = field(default_factory=list)
    fixed: list[VarName] = field(default_factory=list)
    args: list[tuple[str, TextRows]] = field(default_factory=list)
    results: list[tuple[str, TextRows]] = field(default_factory=list)
    anchors: list[tuple[str, TextRows]] = field(default_factory=list)
    internal: list[tuple[str, TextRows]] = field(default_factory=list)
    facts: list[tuple[str, tuple[object, ...], Origin]] = field(default_factory=list)
    marks: list[tuple[VarName, Mark]] = field(default_factory=list)
    gens: list[tuple[VarName, int]] = field(default_factory=list)
    captures: list[tuple[str, TextDim | TextRow, Origin, int | None]] = field(
        default_factory=list
    )
    paddings: list[tuple[str, int, Kind, int, TextDim, Origin]] = field(
        default_factory=list
    )
    loose: list[tuple[TextDim | TextRow, VarName]] = field(default_factory=list)


def _var(tokens: _Tokens, kind: str | None = None) -> VarName:
    word = tokens.take("word")
    match = _VAR.match(word)
    if match is None or (kind is not None and match.group(1) != kind):
        tokens.pos -= 1
        tokens.fail(
            f"expected a {'dim' if kind == 'd' else 'row' if kind else ''} variable, got {word!r}"
        )
    return VarName(match.group(1), int(match.group(2)))


def _dim(tokens: _Tokens) -> TextDim:
    found = tokens.peek()
    if found is not None and found[0] == "int":
        n = tokens.integer()
        if n < 1:
            tokens.pos -= 1
            tokens.fail("a size must be positive")
        basis = tokens.take("word") if tokens.optional("punct", "@") else DEFAULT_BASIS
        return Size(n, basis)
    return _var(tokens, "d")


def _row(tokens: _Tokens) -> TextRow:
    tokens.take("punct", "[")
    var: VarName | None = None
    dims: list[TextDim] = []
    if tokens.optional("punct", "]") is not None:
        return ((), None)
    if tokens.optional("ellipsis") is not None:
        var = _var(tokens, "r")
    else:
        dims.append(_dim(tokens))
    while tokens.optional("punct", ",") is not None:
        dims.append(_dim(tokens))
    tokens.take("punct", "]")
    return (tuple(dims), var)


def _rows3(tokens: _Tokens) -> TextRows:
    batch = _row(tokens)
    tokens.take("punct", "|")
    input_ = _row(tokens)
    tokens.take("arrow")
    output = _row(tokens)
    return (batch, input_, output)


def _parse_side(tokens: _Tokens) -> Side:
    name = tokens.quoted()
    if tokens.optional("punct", ".") is None:
        return Side(name)
    kind = tokens.take("word")
    if kind not in {k.value for k in KINDS}:
        tokens.pos -= 1
        tokens.fail(f"expected an axis kind (batch, input, output), got {kind!r}")
    return Side(name, Kind(kind))


def _origin(tokens: _Tokens) -> Origin:
    tokens.take("punct", "(")
    operation = tokens.quoted()
    tensor = tokens.quoted()
    operands: list[str] = []
    lhs = rhs = None
    detail = scheme = application = None
    if tokens.optional("word", "of") is not None:
        operands.append(tokens.quoted())
        while tokens.optional("punct", ",") is not None:
            operands.append(tokens.quoted())
    if tokens.optional("word", "lhs") is not None:
        lhs = _parse_side(tokens)
    if tokens.optional("word", "rhs") is not None:
        rhs = _parse_side(tokens)
    if tokens.optional("word", "detail") is not None:
        detail = tokens.quoted()
    if tokens.optional("word", "scheme") is not None:
        scheme = tokens.quoted()
    if tokens.optional("word", "at") is not None:
        application = tokens.quoted()
    tokens.take("punct", ")")
    return Origin(
        operation, tensor, tuple(operands), lhs, rhs, detail, scheme, application
    )


def _var_list(tokens: _Tokens) -> list[VarName]:
    if tokens.optional("punct", "(") is not None:
        if tokens.take("word") != "none":
            tokens.pos -= 1
            tokens.fail("expected '(none)'")
        tokens.take("punct", ")")
        return []
    names = [_var(tokens)]
    while tokens.optional("punct", ",") is not None:
        names.append(_var(tokens))
    return names


def _indexed(tokens: _Tokens, items: list[tuple[str, TextRows]], what: str) -> None:
    index = tokens.integer()
    if index != len(items):
        tokens.pos -= 1
        tokens.fail(f"expected {what} {len(items)}, got {what} {index}")
    name = tokens.quoted()
    items.append((name, _rows3(tokens)))


# The lines that list a shape's rows (``arg``, ``result``, ``anchor``,
# ``internal``) as the printer writes them. They are most of a nested scheme's
# lines (a caller's scheme lists the shapes of every body it calls into), so
# they are read by one regular expression; any other spelling, and every
# malformed line, goes through the tokenizer, which reports errors.
_FAST_ROWS = re.compile(
    r"(arg|result|anchor|internal) (\d+) ('(?:[^']|'')*') "
    r"\[([^\]]*)\] \| \[([^\]]*)\] -> \[([^\]]*)\]\Z"
)
_FAST_ITEM = re.compile(
    r"(?:\.\.\.r(\d+)|d(\d+)|(\d+)(?:@([A-Za-z_][A-Za-z0-9_]*))?)\Z"
)


def _fast_row(inside: str) -> TextRow | None:
    """A row's items as the printer writes them, or ``None`` to use the tokenizer."""
    if not inside:
        return ((), None)
    var: VarName | None = None
    dims: list[TextDim] = []
    for position, item in enumerate(inside.split(", ")):
        match = _FAST_ITEM.match(item)
        if match is None:
            return None
        row_var, dim_var, size, basis = match.groups()
        if row_var is not None:
            if position:
                return None
            var = VarName("r", int(row_var))
        elif dim_var is not None:
            dims.append(VarName("d", int(dim_var)))
        else:
            n = int(size)
            if n < 1:
                return None
            dims.append(Size(n, DEFAULT_BASIS if basis is None else basis))
    return (tuple(dims), var)


def _fast_rows_line(
    line: str, text: SchemeText, seen: dict[str, TextRow | None]
) -> bool:
    """Read a printed rows line into ``text``; ``False`` if the tokenizer must.

    ``seen`` holds the rows already read in this scheme by their text: the
    shapes of a body share their row variables, so most rows recur."""
    match = _FAST_ROWS.match(line)
    if match is None:
        return False
    # The name ends where the tokenizer's quoted token would: a quote
    # followed by a space closes a quoted name whichever way it is parsed
    # (inside one, quotes come in pairs).
    keyword, index, name = match.group(1, 2, 3)
    items = {
        "arg": text.args,
        "result": text.results,
        "anchor": text.anchors,
        "internal": text.internal,
    }[keyword]
    if int(index) != len(items):
        return False
    rows: list[TextRow | None] = []
    for inside in match.group(4, 5, 6):
        if inside not in seen:
            seen[inside] = _fast_row(inside)
        rows.append(seen[inside])
    batch, input_, output = rows
    if batch is None or input_ is None or output is None:
        return False
    items.append((name[1:-1].replace("''", "'"), (batch, input_, output)))
    return True


def parse_scheme_text(lines: Sequence[str]) -> SchemeText:
    """Parse the lines of a scheme's text form (no session needed)."""
    text = SchemeText()
    seen: dict[str, TextRow | None] = {}
    for number, line in enumerate(lines, start=1):
        if _fast_rows_line(line, text, seen):
            continue
        tokens = _Tokens.of(line, number)
        keyword = tokens.take("word")
        if keyword == "generalized":
            text.generalized = _var_list(tokens)
        elif keyword == "fixed":
            text.fixed = _var_list(tokens)
        elif keyword == "arg":
            _indexed(tokens, text.args, "arg")
        elif keyword == "result":
            _indexed(tokens, text.results, "result")
        elif keyword == "anchor":
            _indexed(tokens, text.anchors, "anchor")
        elif keyword == "internal":
            _indexed(tokens, text.internal, "internal")
        elif keyword == "ineq":
            res = _row(tokens)
            tokens.take("le")
            opnd = _row(tokens)
            text.facts.append(("ineq", (res, opnd), _origin(tokens)))
        elif keyword == "dim_ineq":
            res_dim = _dim(tokens)
            tokens.take("le")
            opnd_dim = _dim(tokens)
            text.facts.append(("dim_ineq", (res_dim, opnd_dim), _origin(tokens)))
        elif keyword == "at_least":
            dim = _dim(tokens)
            n = tokens.integer()
            text.facts.append(("at_least", (dim, n), _origin(tokens)))
        elif keyword == "total":
            rows = [_row(tokens)]
            while tokens.optional("punct", ",") is not None:
                rows.append(_row(tokens))
            tokens.take("punct", "=")
            found = tokens.peek()
            count: int | TextDim = (
                _var(tokens, "d")
                if found is not None and found[0] == "word"
                else tokens.integer()
            )
            text.facts.append(("total", (tuple(rows), count), _origin(tokens)))
        elif keyword == "linear":
            kind_name = tokens.take("word")
            try:
                linear_kind = LinearKind(kind_name)
            except ValueError:
                tokens.pos -= 1
                tokens.fail(f"no kind of linear equation {kind_name!r}")
            tokens.take("punct", "[")
            terms: list[tuple[int, TextDim, str]] = []
            if tokens.optional("punct", "]") is None:
                while True:
                    coeff = tokens.integer()
                    terms.append((coeff, _dim(tokens), tokens.quoted()))
                    if tokens.optional("punct", ",") is None:
                        break
                tokens.take("punct", "]")
            const = tokens.integer()
            axis = tokens.quoted()
            text.facts.append(
                ("linear", (linear_kind, tuple(terms), const, axis), _origin(tokens))
            )
        elif keyword == "prefix":
            whole = _row(tokens)
            tokens.take("word", "begins")
            start = tokens.pos
            beg = _row(tokens)
            if beg[1] is not None:
                tokens.pos = start
                tokens.fail("the axes before a row variable cannot hold a row variable")
            tokens.take("word", "rest")
            rest = _row(tokens)
            text.facts.append(("prefix", (whole, beg[0], rest), _origin(tokens)))
        elif keyword in ("leaf", "param"):
            text.facts.append((keyword, (_row(tokens),), _origin(tokens)))
        elif keyword == "mark":
            name = tokens.take("word")
            try:
                mark = Mark(name)
            except ValueError:
                tokens.pos -= 1
                tokens.fail(f"no policy mark {name!r}")
            text.marks.append((_var(tokens, "r"), mark))
        elif keyword == "gen":
            text.gens.append((_var(tokens, "r"), tokens.integer()))
        elif keyword == "pad":
            where = tokens.take("word")
            if where not in ("arg", "internal", "anchor"):
                tokens.pos -= 1
                tokens.fail(f"expected arg, internal or anchor, got {where!r}")
            index = tokens.integer()
            kind_name = tokens.take("word")
            if kind_name not in {k.value for k in KINDS}:
                tokens.pos -= 1
                tokens.fail(
                    f"expected an axis kind (batch, input, output), got {kind_name!r}"
                )
            axis = tokens.integer()
            kernel = _dim(tokens)
            text.paddings.append(
                (where, index, Kind(kind_name), axis, kernel, _origin(tokens))
            )
        elif keyword == "capture":
            label = tokens.quoted()
            term = _row(tokens) if tokens.peek() == ("punct", "[") else _dim(tokens)
            before: int | None = None
            if tokens.peek() == ("word", "before"):
                tokens.take("word", "before")
                before = tokens.integer()
                pending = sum(
                    1
                    for kind, _, _ in text.facts
                    if kind in ("total", "linear", "prefix")
                )
                if not 0 <= before < pending:
                    tokens.pos -= 1
                    tokens.fail(
                        f"a capture bound before pending fact {before}: the scheme "
                        f"has {pending} pending fact(s) (totals, linear equations, "
                        f"row prefixes), counted from 0"
                    )
            text.captures.append((label, term, _origin(tokens), before))
        elif keyword == "loose":
            term: TextDim | TextRow = (
                _row(tokens) if tokens.peek() == ("punct", "[") else _dim(tokens)
            )
            tokens.take("punct", "=")
            tokens.take("word", "old")
            text.loose.append((term, _var(tokens)))
        else:
            tokens.pos -= 1
            tokens.fail(f"unknown item {keyword!r}")
        tokens.end()
    declared = [*text.generalized, *text.fixed]
    if len(set(declared)) != len(declared):
        raise SchemeTextError("malformed shape scheme: a variable is declared twice")
    return text
