"""``axisflow-opt``: the stock ``xdsl-opt`` with clean error reports.

``xdsl-opt`` re-raises a failed verification, a parse error or a bad option
as a Python traceback unless ``--verify-diagnostics`` or
``--parsing-diagnostics`` is given, and then dumps the whole module in
generic form. ``axisflow-opt`` takes exactly the same arguments (it is
``xDSLOptMain``) and prints every error as one located message on standard
error, exiting with status 1:

- a verifier or pass error names the ``file:line:col`` of the failing op (the
  op, or its nearest ancestor that came from the input), as parse errors do;
- MLIR input is checked in one linear scan before xDSL lexes it: invalid
  UTF-8, a string literal that is never closed (xDSL's string regex takes
  exponential time on one, see ``docs/reliability.md``), brackets nested
  deeper than ``MAX_NESTING`` (xDSL's parser and printer recurse once per
  level) and digits such as ``²`` (which xDSL lexes as a number it cannot
  read) are refused with their position;
- ``-o FILE`` is written to a temporary file next to ``FILE`` and moved into
  place only when every input chunk succeeded, so a failure never leaves an
  empty or half-written file; so are the report files of
  ``schedule-batches{report-file=...}`` (``axisflow.report_file``).

For its run it raises the cyclic collector's thresholds
(``axisflow.gc_pause.collector_tuned``; measured in
docs/benchmarks-phases.md); importing the plugin changes nothing.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any, Literal, NoReturn, get_args, get_origin, get_type_hints

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import IRNode, Operation
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline, parse_spec
from xdsl.utils.diagnostic import Diagnostic
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    VerifyException,
)
from xdsl.utils.lexer import Input, Span, Token
from xdsl.utils.mlir_lexer import MLIRTokenKind
from xdsl.xdsl_opt_main import xDSLOptMain

from axisflow.gc_pause import collector_tuned
from axisflow.numerals import MAX_DIGITS
from axisflow.report_file import all_or_nothing
from axisflow.xdsl_compat import IntegerCheckingParser, current_token

MAX_NESTING = 1000
"""Deepest bracket nesting (``{``, ``(``, ``[``, ``<``) accepted in MLIR input.

xDSL parses, verifies and prints recursively, a few dozen Python frames per
level; ``main`` runs with a recursion limit and a stack that cover this depth
with a wide margin (``tests/test_reliability.py`` checks depth ``MAX_NESTING``
succeeds and one more is refused)."""

_RECURSION_LIMIT = 60_000
_STACK_BYTES = 512 * 1024 * 1024

# One string literal exactly as xDSL's lexer accepts it, but with single-char
# alternatives and a possessive repetition, so a failed match is linear.
_STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')
# What the scan stops at outside strings: a comment, a string, a bracket, a
# non-ASCII character (xDSL lexes a digit such as '²' as a number and then
# fails in int() without a position).
_INTERESTING = re.compile(r'//[^\n]*|["{}()\[\]<>]|[^\x00-\x7f]')
_CLOSERS = {"}": "{", ")": "(", "]": "["}

FAILING_OP = "_axisflow_failing_op"
"""The attribute naming the op an error was raised at (``diagnostics_without_dump``)."""


def check_mlir_text(data: bytes, name: str) -> str:
    """Decode MLIR input and refuse what xDSL cannot lex or parse safely.

    Returns the text. Raises ``ParseError`` located at the first invalid
    UTF-8 byte, at the opening quote of a string literal that is never
    closed, at the first bracket nested deeper than ``MAX_NESTING``, or at a
    non-ASCII digit outside strings and comments.
    One linear pass over the text.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        prefix = data[: error.start].decode("utf-8")
        shown = Input(data.decode("utf-8", "replace"), name)
        position = len(prefix)
        message = f"input is not valid UTF-8 (byte 0x{data[error.start]:02x})"
        raise ParseError(Span(position, position + 1, shown), message) from None
    check_mlir_source(text, name)
    return text


def check_mlir_source(text: str, name: str) -> None:
    """``check_mlir_text`` on decoded text: one linear pass, ``ParseError``
    at the first string literal never closed, bracket nested deeper than
    ``MAX_NESTING`` or non-ASCII digit outside strings and comments."""
    source = Input(text, name)
    openers: list[str] = []
    position = 0
    while (found := _INTERESTING.search(text, position)) is not None:
        token = found.group()
        position = found.end()
        if token.startswith("//"):
            continue
        start = found.start()
        if token == '"':
            literal = _STRING_LITERAL.match(text, start)
            if literal is None:
                raise ParseError(
                    Span(start, start + 1, source),
                    "string literal not closed on this line",
                )
            position = literal.end()
        elif not token.isascii():
            if token.isdigit():
                raise ParseError(
                    Span(start, start + 1, source),
                    f"{token!r} is not a digit here: numbers are ASCII digits 0-9",
                )
        elif token in "{([<":
            openers.append(token)
            if len(openers) > MAX_NESTING:
                raise ParseError(
                    Span(start, start + 1, source),
                    f"nesting deeper than {MAX_NESTING} brackets; xDSL's parser "
                    "and printer recurse once per level",
                )
        elif token == ">":
            # '->' and comparison-like uses are no brackets.
            if openers and openers[-1] == "<":
                openers.pop()
        elif _CLOSERS[token] in openers:
            # Unclosed '<' inside are dropped with their bracket.
            while openers.pop() != _CLOSERS[token]:
                pass


class LocatingParser(IntegerCheckingParser):
    """xDSL's parser, remembering where each op starts in the input."""

    def __init__(
        self, ctx: Context, text: str, name: str, starts: dict[Operation, int]
    ) -> None:
        super().__init__(ctx, text, name)
        self._op_starts = starts

    def parse_operation(self) -> Operation:
        start = self.pos
        op = super().parse_operation()
        self._op_starts[op] = start
        return op

    def check_integer_literal(self, token: Token[MLIRTokenKind, str]) -> None:
        """Refuse a decimal literal longer than ``MAX_DIGITS`` (Python's int
        conversion would fail with its own wording)."""
        if len(token.text) > MAX_DIGITS and not token.text[:2].lower() == "0x":
            raise ParseError(
                token.span,
                f"integer literal has {len(token.text)} digits, more than the "
                f"limit of {MAX_DIGITS}",
            )

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """xDSL's ``parse_module``; what some op and attribute parsers raise
        instead of a ``ParseError`` becomes one at the token where it was
        raised: a ``ValueError`` (``'par\\ufeffallel' is not a valid
        IteratorType``), an ``IndexError`` (``linalg.fill i ns(...)`` parses as
        a fill without inputs), the ``VerifyException`` of an integer
        attribute out of its type's range (``rounds = 99999999999999999999 :
        i64`` in generic form: named by its entry, at its literal); xDSL's
        own located message for a literal out of range is said the same
        way."""
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as error:
            if _XDSL_OUT_OF_RANGE.match(error.msg) is None:
                raise
            raise _out_of_range(error.span, error.msg) from None
        except VerifyException as error:
            raise self._attribute_error(error) from None
        except ValueError as error:
            span = current_token(self).span
            if _XDSL_OUT_OF_RANGE.match(str(error)) is not None:
                # raised after the literal was read: at the last one before
                before = span.input.content[max(0, span.start - 200) : span.start]
                literal = _LAST_LITERAL.search(before)
                if literal is not None:
                    offset = span.start - len(before)
                    start, end = (offset + k for k in literal.span(1))
                    span = Span(start, end, span.input)
                raise _out_of_range(span, str(error)) from None
            raise ParseError(span, str(error)) from None
        except (IndexError, KeyError, TypeError, AttributeError) as error:
            raise ParseError(
                current_token(self).span,
                f"cannot read the op before this token (xDSL's parser stopped with "
                f"{type(error).__name__})",
            ) from None

    def _attribute_error(self, error: VerifyException) -> ParseError:
        """An attribute refused as it was built: at its integer literal
        (``N : type``, named by its entry ``name = N : type`` if it is one)
        when the text before the parser's position ends in one."""
        span = current_token(self).span
        before = span.input.content[: span.start]
        literal = _TYPED_INTEGER.search(before)
        if literal is None:
            return ParseError(span, str(error))
        name, digits, type_name = literal.group(1, 2, 3)
        start, end = literal.span(2)
        what = f"{name} = {_shortened(digits)}" if name else _shortened(digits)
        return ParseError(
            Span(start, end, span.input),
            f"{what}: the value does not fit in {type_name}",
        )


# xDSL's message for a literal out of its type's range (a ParseError).
_XDSL_OUT_OF_RANGE = re.compile(r"Integer value -?\d+ is out of range for type (\w+)")

# The last integer literal of a text (what follows it: punctuation, spaces).
_LAST_LITERAL = re.compile(r"(-?(?:0x[0-9a-fA-F]+|[0-9]+))[^\w%]*$")

# ``123 : i64`` or ``name = 123 : i64`` right before the parser's position.
_TYPED_INTEGER = re.compile(
    r'(?:([\w$.-]+|"[^"\n]*")\s*=\s*)?(-?[0-9]+)\s*:\s*(\w+)\s*$'
)


def _out_of_range(span: Span[str] | Span[bytes], message: str) -> ParseError:
    """xDSL's message for the literal at ``span`` out of its type's range,
    said as the generic form's is (``N: the value does not fit in i64``)."""
    found = _XDSL_OUT_OF_RANGE.match(message)
    assert found is not None
    text = span.text if isinstance(span.text, str) else span.text.decode()
    return ParseError(
        span, f"{_shortened(text)}: the value does not fit in {found.group(1)}"
    )


def _shortened(digits: str) -> str:
    """A numeral for a message: long ones cut to 24 characters."""
    return digits if len(digits) <= 24 else digits[:24] + "…"


class AxisflowOptMain(xDSLOptMain):
    """``xDSLOptMain`` that checks MLIR input first, locates ops and writes
    ``-o`` atomically."""

    def __init__(self, args: list[str] | None = None) -> None:
        self.source: Input | None = None
        self.line_offset = 0
        self.op_starts: dict[Operation, int] = {}
        self.temporary_output: str | None = None
        super().__init__(args=args)

    def setup_pipeline(self) -> None:
        try:
            super().setup_pipeline()
        except ValueError as error:
            specs = list(parse_pipeline(self.args.passes))
            raise ValueError(
                explain_option_error(specs, self.available_passes, error)
            ) from None

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        frontend = self.args.frontend or file_extension
        if frontend != "mlir":
            self.source = None
            try:
                return super().parse_chunk(chunk, file_extension, start_offset)
            except ValueError as error:
                spec = parse_spec(frontend)
                raise ValueError(
                    explain_option_error([spec], self.available_frontends, error)
                ) from None
        name = self.get_input_name()
        text = check_mlir_text(chunk.read(), name)  # xDSL adds the line offset
        self.source = Input(text, name)
        self.line_offset = start_offset
        self.op_starts = {}
        parser = LocatingParser(self.ctx, text, name, self.op_starts)
        return parser.parse_module(not self.args.no_implicit_module)

    def output_resulting_program(self, prog: ModuleOp) -> str:
        """xDSL's printed program, refused when ``axisflow-opt`` could not
        read it back (``check_mlir_source``: brackets nested deeper than
        ``MAX_NESTING``, as a SeQuant product of 1005 factors nests a
        use-site per factor): what the tool writes, the tool reads."""
        text = super().output_resulting_program(prog)
        # xDSL's printer indents two spaces per region and leaves at most two
        # brackets open per region (``({``) across lines, so no line nests
        # deeper than its length: only text with a line longer than the
        # limit needs the scan (a linear pass, a tenth of a microsecond per
        # character).
        if (
            self.args.target == "mlir"
            and max(map(len, text.splitlines()), default=0) > MAX_NESTING
        ):
            try:
                check_mlir_source(text, "output")
            except ParseError as error:
                where = error.span.get_location()
                raise DiagnosticException(
                    f"the output could not be read back (its line {where.line}: "
                    f"{error.msg}): nothing is written"
                ) from None
        return text

    def prepare_output(self) -> IO[str]:
        target = self.args.output_file
        if target is None:
            return sys.stdout
        target = os.path.realpath(target)
        if os.path.exists(target) and not os.path.isfile(target):
            # /dev/null, a pipe: nothing to protect, and never replace a device.
            return open(target, "w", encoding="utf-8")
        directory, base = os.path.split(target)
        try:
            handle, self.temporary_output = tempfile.mkstemp(
                dir=directory, prefix=f".{base}.", suffix=".tmp"
            )
        except OSError as error:
            message = f"cannot write {self.args.output_file}: {error.strerror}"
            raise OSError(message) from None
        os.chmod(self.temporary_output, _output_mode(target))
        return os.fdopen(handle, "w", encoding="utf-8")

    def finish_output(self, succeeded: bool) -> None:
        """Move the temporary output into place, or drop it after a failure."""
        if self.temporary_output is None:
            return
        if succeeded:
            os.replace(self.temporary_output, os.path.realpath(self.args.output_file))
        else:
            os.unlink(self.temporary_output)
        self.temporary_output = None

    def locate(self, error: BaseException) -> str:
        """The message of a diagnostic, at the failing op when it is known."""
        op: Operation | None = getattr(error, FAILING_OP, None)
        while op is not None and op not in self.op_starts:
            op = op.parent_op()
        if op is None or self.source is None:
            return str(error)
        start = self.op_starts[op]
        word = re.compile(r"[^\s(]+").match(self.source.content, start)
        end = word.end() if word is not None else start + 1
        span = Span(start, end, self.source, self.line_offset)
        return span.print_with_context(str(error))


def _describe_type(expected: Any) -> str:
    """What an option of type ``expected`` accepts, in words."""
    origin = get_origin(expected)
    if origin is Literal:
        return "one of " + ", ".join(str(choice) for choice in get_args(expected))
    if origin is tuple:
        item = get_args(expected)[0]
        plural = {bool: "booleans", int: "integers", float: "numbers", str: "strings"}
        return "a comma-separated list of " + plural.get(item, _describe_type(item))
    members = [member for member in get_args(expected) if member is not type(None)]
    if members:
        return " or ".join(_describe_type(member) for member in members)
    names = {
        bool: "true or false",
        int: "an integer",
        float: "a number",
        str: "a string",
    }
    return names.get(expected, getattr(expected, "__name__", str(expected)))


def explain_option_error(
    specs: list[ArgSpec],
    available: Mapping[str, Callable[..., Any]],
    error: ValueError,
) -> str:
    """xDSL's message for an option of the wrong type (``Incompatible types:
    given ('x',), expected ...``) names neither the pass nor the option: find
    the first option of ``specs`` whose value its field's type refuses and
    name both, with the value and what the field accepts. Any other error
    keeps its message."""
    if not str(error).startswith("Incompatible types"):
        return str(error)
    for spec in specs:
        factory = available.get(spec.name)
        if factory is None or inspect.signature(factory).parameters:
            continue  # unknown, or an old-style frontend without options
        entry = factory()
        hints = get_type_hints(entry) if isinstance(entry, type) else {}
        for name, value in spec.normalize_parameter_names().parameters.items():
            if name not in hints:
                continue
            try:
                entry.from_spec(ArgSpec(spec.name, {name: value}))
            except ValueError as refused:
                if not str(refused).startswith("Incompatible types"):
                    continue
                shown = ",".join(str(item) for item in value)
                option = name.replace("_", "-")
                return (
                    f"{spec.name}: option {option}={shown} is not valid: "
                    f"expected {_describe_type(hints[name])}"
                )
    return str(error)


def _output_mode(target: str) -> int:
    if os.path.exists(target):
        return os.stat(target).st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextmanager
def diagnostics_without_dump(enabled: bool) -> Iterator[None]:
    """Make an op's diagnostic remember the op instead of dumping the module.

    xDSL's ``Diagnostic.raise_exception`` prints the whole module in generic
    form into the exception's notes; ``axisflow-opt`` reports the op's source
    position instead (and skips a print as deep and as large as the input).
    """
    if not enabled:
        yield
        return
    original = Diagnostic.raise_exception

    def raise_at_op(
        self: Diagnostic, ir: IRNode, underlying_error: Exception
    ) -> NoReturn:
        del ir
        # The first op to report an error is where it happened; an enclosing
        # op re-raising it (xDSL's interpreter does) does not move it.
        if getattr(underlying_error, FAILING_OP, None) is None:
            setattr(underlying_error, FAILING_OP, next(iter(self.op_messages), None))
        raise underlying_error

    Diagnostic.raise_exception = raise_at_op
    try:
        yield
    finally:
        Diagnostic.raise_exception = original


def _report(message: str) -> int:
    print(f"error: {message.rstrip()}", file=sys.stderr)
    return 1


def _run(argv: list[str] | None) -> int:
    try:
        tool = AxisflowOptMain(args=argv)
    except (ArgSpecParseError, ValueError, OSError) as error:
        return _report(str(error))
    succeeded = False
    try:
        with (
            collector_tuned(),
            diagnostics_without_dump(not tool.args.verify_diagnostics),
            all_or_nothing(),  # report files: written if the whole run succeeds
        ):
            tool.run()
        succeeded = True
    except DiagnosticException as error:
        return _report(tool.locate(error))
    except (ParseError, ArgSpecParseError, ValueError, OSError) as error:
        return _report(str(error))
    except RecursionError:
        return _report(
            f"{tool.get_input_name()}: nesting too deep for xDSL's recursive "
            "parser and printer"
        )
    finally:
        tool.finish_output(succeeded)
    return 0


def in_deep_thread(work: Callable[[], int]) -> int:
    """Run ``work`` on a thread whose stack and recursion limit cover
    ``MAX_NESTING``; re-raise what it raised (``SystemExit`` included)."""
    outcome: list[int | BaseException] = []

    def target() -> None:
        try:
            outcome.append(work())
        except BaseException as error:
            outcome.append(error)

    previous_limit = sys.getrecursionlimit()
    previous_stack = threading.stack_size(_STACK_BYTES)
    sys.setrecursionlimit(max(previous_limit, _RECURSION_LIMIT))
    try:
        worker = threading.Thread(target=target, name="axisflow-opt", daemon=True)
        worker.start()
    finally:
        threading.stack_size(previous_stack)
    try:
        worker.join()
    finally:
        sys.setrecursionlimit(previous_limit)
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


def main(argv: list[str] | None = None) -> int:
    """Run ``xdsl-opt`` with ``argv``; return the exit status."""
    return in_deep_thread(lambda: _run(argv))


if __name__ == "__main__":
    sys.exit(main())
