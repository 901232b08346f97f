"""A located error for a misspelt keyword in a custom assembly format.

An op whose syntax ends in optional keyword clauses (``batch.value @A [i_1]
leaf "A"``) stops parsing at the first word it does not know, so a misspelt
``leaff`` would otherwise surface as "Operation leaff is not registered" at
the next op. Called where those optional clauses were all declined, this
says instead which keywords the op expected at that position. A word that
names a registered op is left alone: it is the next op of the block.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from xdsl.parser import Parser
from xdsl.utils.mlir_lexer import MLIRTokenKind

from axisflow.xdsl_compat import current_token, dialect_stack

END_OF_OP = ("an attribute dictionary", "the end of the op")
"""What may follow the last optional clause of most ops."""


def reject_unknown_keyword(
    parser: Parser,
    op_name: str,
    expected: Sequence[str],
    *,
    then: Sequence[str] = END_OF_OP,
) -> None:
    """Raise a ``ParseError`` at the next token if it is a bare word that is
    neither one of ``expected`` nor the name of an op.

    ``expected`` lists the keywords (or punctuation, quoted as written) the op
    accepts here; ``then`` describes what else may follow.
    """
    token = current_token(parser)
    if token.kind != MLIRTokenKind.BARE_IDENT:
        return
    word = token.text
    if word in expected or _names_an_op(parser, word):
        return
    choices = [f"'{keyword}'" for keyword in expected] + list(then)
    message = f"{op_name}: unexpected '{word}', expected " + _one_of(choices)
    close = difflib.get_close_matches(word, [k for k in expected if k.isalpha()], 1)
    if close:
        message += f" (did you mean '{close[0]}'?)"
    parser.raise_error(message, token.span)


def _names_an_op(parser: Parser, word: str) -> bool:
    # The op names the generic parser would accept next: resolved through the
    # dialects of the enclosing ops, as xDSL's own op lookup does.
    stack = dialect_stack(parser)
    return parser.ctx.get_optional_op(word, dialect_stack=stack) is not None


def _one_of(choices: Sequence[str]) -> str:
    if len(choices) == 1:
        return choices[0]
    return ", ".join(choices[:-1]) + " or " + choices[-1]
