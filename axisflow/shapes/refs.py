"""Capture references: a name for one einsum label's dim, across operations.

Below the constraints (which carry references) and the session (which makes
them): a reference only needs its owner's solver to read its size.
"""

from __future__ import annotations

from typing import Protocol

from axisflow.shapes.terms import Dim, DimVar, Size


class DimFinder(Protocol):
    """What a reference reads its size through (the session's solver)."""

    def find_dim(self, dim: Dim) -> Dim: ...


class RefOwner(Protocol):
    """The session a reference belongs to, as the reference sees it."""

    @property
    def solver(self) -> DimFinder: ...


class DimRef:
    """A capture reference (OCANNL's ``delayed_var_ref``), made by ``dim_ref``.

    An einsum given ``capture_dims=[ref]`` binds the reference to the dim
    variable of its spec label ``ref.label``. :attr:`value` is the solved size
    (published at closing) or ``None``.
    """

    __slots__ = ("_session", "created_at", "discarded", "label", "size", "var")

    def __init__(self, session: RefOwner, label: str, created_at: int) -> None:
        self._session = session
        self.label = label
        self.created_at = created_at
        self.var: DimVar | None = None
        self.size: Size | None = None
        self.discarded = False

    @property
    def session(self) -> RefOwner:
        """The session the reference belongs to."""
        return self._session

    @property
    def value(self) -> int | None:
        """The size the reference stands for, if known."""
        if self.var is not None:
            dim = self._session.solver.find_dim(self.var)
            if type(dim) is Size:
                return dim.n
            return None
        return self.size.n if self.size is not None else None

    def __repr__(self) -> str:
        return f"<DimRef {self.label}={self.value}>"
