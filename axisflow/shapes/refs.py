"""Capture references: a name for one einsum label's dim, across operations.

Below the constraints (which carry references) and the session (which makes
them): a reference only needs its owner's solver to read its size.
"""

from __future__ import annotations

from typing import Protocol

from axisflow.shapes.terms import Dim, DimVar, Row, RowVar, Size


class DimFinder(Protocol):
    """What a reference reads its size through (the session's solver)."""

    def find_dim(self, dim: Dim) -> Dim: ...

    def norm_row(self, row: Row) -> Row: ...


class RefOwner(Protocol):
    """The session a reference belongs to, as the reference sees it."""

    @property
    def solver(self) -> DimFinder: ...


class DimRef:
    """A capture reference (OCANNL's ``delayed_var_ref``), made by ``dim_ref``.

    An einsum given ``capture_dims=[ref]`` binds the reference to the dim
    variable of its spec label ``ref.label`` (:attr:`var`), or to the row
    variable ``..label..`` (:attr:`row`), which then stands for the number of
    elements of that row. :attr:`value` is the solved size or element count
    (published at closing) or ``None``.
    """

    __slots__ = ("_session", "created_at", "discarded", "label", "row", "size", "var")

    def __init__(self, session: RefOwner, label: str, created_at: int) -> None:
        self._session = session
        self.label = label
        self.created_at = created_at
        self.var: DimVar | None = None
        self.row: RowVar | None = None
        self.size: Size | None = None
        self.discarded = False

    @property
    def is_bound(self) -> bool:
        """Whether an einsum bound the reference (to a dim or a row variable)."""
        return self.var is not None or self.row is not None

    def known_size(self) -> Size | None:
        """The size the reference stands for if it is known now, with its basis
        (an element count has the default basis)."""
        if self.var is not None:
            dim = self._session.solver.find_dim(self.var)
            return dim if type(dim) is Size else None
        if self.row is not None:
            row = self._session.solver.norm_row(Row((), self.row))
            if not row.is_concrete():
                return None
            product = 1
            for dim in row.dims:
                assert type(dim) is Size
                product *= dim.n
            return Size(product)
        return self.size

    @property
    def session(self) -> RefOwner:
        """The session the reference belongs to."""
        return self._session

    @property
    def value(self) -> int | None:
        """The size (or a row's element count) the reference stands for, if known."""
        size = self.known_size()
        return None if size is None else size.n

    def __repr__(self) -> str:
        return f"<DimRef {self.label}={self.value}>"
