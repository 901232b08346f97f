"""How the terms of a SeQuant expression assemble into one residual.

A SeQuant expression is one residual tensor ``R``. Its carried indices are,
in this order of precedence:

1. the indices of a result expression ``R{...} = ...`` when one is given;
2. otherwise the indices listed by the operators of the first term that has
   operators (bra then ket, in the order written: SeQuant's evaluation lays
   the result out by the symmetrizer's indices);
3. otherwise the term externals (indices that appear once), sorted by
   ``Index.sort_key`` so that the layout does not depend on term order.

Every term must carry exactly these externals (as a set). Terms with the same
operators (equal as written) form one *group*: their scaled trees are summed
first and the operators act once on that partial sum, which by linearity is
the same as applying them term by term (SeQuant writes the operator into
every term of an expanded residual). The residual is the sum over groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from axisflow.forest.frames import expand_modes
from axisflow.residual.operators import Operator, OperatorError, check_residual
from axisflow.roles.index import Index


class ResidualError(ValueError):
    """Terms that do not form one residual. ``term`` is the 0-based position
    of the offending term (``-1`` for the expression as a whole)."""

    def __init__(self, reason: str, term: int = -1) -> None:
        self.reason = reason
        self.term = term
        super().__init__(reason)


@dataclass(frozen=True)
class OperatorGroup:
    """Terms (positions) that share ``operators`` (outermost first)."""

    operators: tuple[Operator, ...]
    terms: tuple[int, ...]


@dataclass(frozen=True)
class ResidualLayout:
    """The residual's carried indices, its dense modes (carried indices then
    their protos, see ``expand_modes``) and its operator groups."""

    indices: tuple[Index, ...]
    modes: tuple[Index, ...]
    groups: tuple[OperatorGroup, ...]

    @property
    def has_operators(self) -> bool:
        """Whether some group applies an operator."""
        return any(group.operators for group in self.groups)


def residual_layout(
    externals: Sequence[Sequence[Index]],
    operators: Sequence[Sequence[Operator]],
    result: Sequence[Index] | None = None,
) -> ResidualLayout:
    """The layout of a residual whose k-th term has ``externals[k]`` and
    ``operators[k]``; ``result`` names the indices when the text gives them.

    Raises ``ResidualError`` (naming the term) when a term's externals differ
    from the residual's, or an operator does not map the residual onto
    itself (``OperatorError`` reasons).
    """
    if len(externals) != len(operators):
        raise ResidualError("one operator list per term is needed")
    if result is not None:
        indices = tuple(result)
    else:
        with_operators = next((ops for ops in operators if ops), None)
        if with_operators is not None:
            listed: dict[Index, None] = {}
            for operator in with_operators:
                listed.update(dict.fromkeys(operator.indices))
            indices = tuple(listed)
        elif externals:
            indices = tuple(sorted(externals[0], key=Index.sort_key))
        else:
            indices = ()
    if len(set(indices)) != len(indices):
        raise ResidualError(
            f"the residual lists an index twice: {', '.join(map(str, indices))}"
        )
    wanted = set(indices)
    for position, term_externals in enumerate(externals):
        if set(term_externals) != wanted:
            raise ResidualError(
                f"term {position + 1} has externals "
                f"({', '.join(map(str, term_externals))}) but the residual "
                f"carries ({', '.join(map(str, indices))})",
                position,
            )
    modes = expand_modes(indices)
    groups: dict[tuple[Operator, ...], list[int]] = {}
    for position, term_operators in enumerate(operators):
        key = tuple(term_operators)
        for operator in key:
            try:
                check_residual(operator, modes)
            except OperatorError as error:
                raise ResidualError(str(error), position) from None
        groups.setdefault(key, []).append(position)
    return ResidualLayout(
        indices,
        modes,
        tuple(OperatorGroup(ops, tuple(terms)) for ops, terms in groups.items()),
    )
