"""From a SeQuant ``Expression`` to a forest of pairwise contractions.

Pure Python, no xDSL (``axisflow.sequant.emit`` turns a ``Forest`` into IR).

Construction, per term:

* **Binarization.** Each term's plan (``axisflow.sequant.ordering``) says
  which pairs to contract: ``order="file"`` folds the tensors left to right,
  ``((t1 * t2) * t3) * ...``; ``"flops"`` (the default) takes the tree with
  the fewest multiply-adds, ``"memory"`` the one with the smallest largest
  intermediate (``axisflow.order.search``); parenthesized groups are kept as
  written. Every inner node is a value whose result indices are those of its
  operands still needed (a tensor outside the node carries them) or external
  to the term, in order of first appearance (left operand, then right). The
  indices contracted at the node are those on both operands and absent from
  the result: none for an outer product; a Hadamard index (on both, still
  needed) stays on the result. Proto indices ride along inside their
  composite labels: ``a_1<i_1>`` is one index, and a proto is not an
  appearance of its own (a mode that only a composite outside still needs is
  kept as an index of its own, see ``ordering.step_labels``).
* **Values and CSE.** Leaves (input tensors) are values too. Every value
  lives in its own canonical index frame, so values equal up to a consistent
  renaming of indices are one value with several use-sites, across the whole
  forest. Identity is structural (hash-consing): a leaf is identified by its
  label, symmetry, group layout and canonical indices; a contraction by its
  two factor values and how their frames connect (the canonical labels of
  both factors and of the result in the node's frame). Use-sites carry the
  labels of their own term.
* **Coefficients.** A term's rational coefficient is its tree's ``coeff``; a
  single-tensor term's tree uses the leaf value as its root; a term without
  tensors (a bare number) is a tree without a root.
* **Batching policy.** For each space named in the policy (outermost first)
  and each tree, one batch loop per distinct index of that space occurring
  in the term (as a tensor index, or as a proto index at any depth), nested
  in label order, all enclosing the whole tree at its root. The k-th loop of
  a space (in label order) shares one fusion slot across all trees; slots are
  numbered in order of first use. With ``separate_instances`` every loop gets
  a slot of its own.

Canonical frames: indices of a node are renamed by first appearance in slot
order, ordinals counted per base key from 1 (``i_1, i_2, a_1<i_1,i_2>``).
Indices that occur only as protos come after and are ordered by where they
occur (list, slot, depth); this makes the frame independent of the original
labels (proto lists are sets, so two protos occurring in exactly the same
places are interchangeable).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from axisflow.order import (
    ORDERS,
    Costs,
    ExtentError,
    Extents,
    Order,
    expand_modes,
    split_kind,
)
from axisflow.order import parse_extents as _parse_extents
from axisflow.roles.index import Index
from axisflow.sequant.ordering import (
    batched_size,
    plan_term,
    step_labels,
    term_modes,
)
from axisflow.sequant.syntax import Expression, SequantError, Tensor, Term

# --------------------------------------------------------------------------
# The forest
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class LeafValue:
    """An input tensor in its canonical frame."""

    name: str
    tensor: str
    """The SeQuant tensor label (``g``, ``t``, ``δ``)."""
    symmetry: str | None
    layout: tuple[int, int, int]
    """Sizes of the bra, ket and aux index groups."""
    result: tuple[Index, ...]

    @property
    def contracted(self) -> tuple[Index, ...]:
        """Leaves contract nothing."""
        return ()


@dataclass(frozen=True)
class Factor:
    """One operand of a contraction: a value and its labels in the node's frame."""

    value: str
    indices: tuple[Index, ...]


@dataclass(frozen=True)
class ContractionValue:
    """A pairwise contraction in its canonical frame."""

    name: str
    result: tuple[Index, ...]
    contracted: tuple[Index, ...]
    left: Factor
    right: Factor


Value = LeafValue | ContractionValue


@dataclass(frozen=True)
class Use:
    """A use-site: a value, the labels it carries in its term, and the
    use-sites of its two factors (none for a leaf)."""

    value: str
    carried: tuple[Index, ...]
    factors: tuple[Use, ...] = ()

    def walk(self) -> Iterator[Use]:
        """This use-site and every use-site below it, pre-order."""
        stack: list[Use] = [self]
        while stack:
            use = stack.pop()
            yield use
            stack.extend(reversed(use.factors))


@dataclass(frozen=True)
class Loop:
    """A batch loop at a tree's root: the bound label and its fusion slot."""

    index: Index
    slot: int


@dataclass(frozen=True)
class Tree:
    """One term: coefficient, root loops (outermost first), root use-site."""

    name: str
    coefficient: Fraction
    loops: tuple[Loop, ...]
    root: Use | None
    """``None`` for a term without tensors (a bare number)."""
    term: int
    """Position of the term in the expression."""


@dataclass(frozen=True)
class Space:
    """An index space: base key, optional extent and element size (bytes),
    and the extents of its composite kinds, ``(number of protos, extent)``."""

    key: str
    extent: int | None = None
    elem: int | None = None
    composites: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class Forest:
    """Spaces, values (leaves first, then contractions, each in creation
    order) and trees (one per term, in order)."""

    name: str
    spaces: tuple[Space, ...]
    values: tuple[Value, ...]
    trees: tuple[Tree, ...]

    def value_table(self) -> dict[str, Value]:
        """Values by name."""
        return {value.name: value for value in self.values}

    def use_counts(self) -> dict[str, int]:
        """Number of use-sites of every value."""
        counts = dict.fromkeys((value.name for value in self.values), 0)
        for tree in self.trees:
            if tree.root is not None:
                for use in tree.root.walk():
                    counts[use.value] += 1
        return counts


# --------------------------------------------------------------------------
# Batching policy
# --------------------------------------------------------------------------

_GREEK = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
    "rho",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "chi",
    "psi",
    "omega",
]
_MARKS = {"tilde": "\u0303", "hat": "\u0302", "bar": "\u0304"}


def ascii_alias(key: str) -> str | None:
    """The ASCII spelling of a space key made of one Greek letter and optional
    combining marks: ``Κ`` → ``Kappa``, ``μ̃`` → ``mutilde``; ``None`` if the
    key has no such spelling (ASCII keys are their own spelling)."""
    if key.isascii():
        return None
    letter, marks = key[0], key[1:]
    name = unicodedata.name(letter, "")
    if not name.startswith("GREEK ") or " LETTER " not in name:
        return None
    word = name.rsplit(" ", 1)[-1].lower()
    if word not in _GREEK:
        return None
    alias = word.capitalize() if "CAPITAL" in name else word
    mark_names = {code: name for name, code in _MARKS.items()}
    for mark in marks:
        if mark not in mark_names:
            return None
        alias += mark_names[mark]
    return alias


@dataclass(frozen=True)
class BatchPolicy:
    """Which index spaces to batch, and the declared space sizes.

    ``spaces``: base keys to batch, outermost loop first (a key may also be
    spelled by its ASCII alias, see ``ascii_alias``). ``extents``: extent per
    space key (or alias). ``elem``: element size in bytes, declared on every
    space. ``separate_instances``: a fusion slot per loop instead of one per
    (space, nesting position) shared by all trees.
    """

    spaces: tuple[str, ...] = ()
    extents: tuple[tuple[str, int], ...] = ()
    elem: int | None = None
    separate_instances: bool = False

    @staticmethod
    def make(
        batch: str | Iterable[str] = (),
        extents: str | Mapping[str, int] | None = None,
        elem: int | None = None,
        separate_instances: bool = False,
    ) -> BatchPolicy:
        """Build a policy from user-facing values.

        ``batch`` is a key, a comma-separated list of keys, or an iterable of
        keys; ``extents`` a mapping or text such as ``"i=80,a=896,Κ=1682"``.
        Raises ``PolicyError`` on malformed values.
        """
        if isinstance(batch, str):
            batch = batch.split(",")
        spaces = tuple(key.strip() for key in batch if key.strip())
        if isinstance(extents, str):
            extents = parse_extents(extents)
        pairs = tuple((extents or {}).items())
        for key, extent in pairs:
            if extent <= 0:
                raise PolicyError(f"extent of space {key!r} must be positive")
        if elem is not None and elem <= 0:
            raise PolicyError(f"element size must be positive, got {elem}")
        return BatchPolicy(spaces, pairs, elem, separate_instances)


class PolicyError(ValueError):
    """A batching option that does not fit the expression."""


def parse_extents(text: str) -> dict[str, int]:
    """``"i=80,a=896,a<2>=40,Κ=1682"`` → ``{"i": 80, ..., "a<2>": 40, ...}``
    (``axisflow.order.parse_extents``, raising ``PolicyError``)."""
    try:
        return _parse_extents(text)
    except ExtentError as error:
        raise PolicyError(str(error)) from None


def _resolve_key(name: str, keys: Sequence[str], aliases: Mapping[str, str]) -> str:
    if name in keys:
        return name
    if name in aliases:
        return aliases[name]
    known = ", ".join(
        key + (f" (alias {alias})" if (alias := ascii_alias(key)) else "")
        for key in keys
    )
    raise PolicyError(
        f"index space {name!r} does not occur in the expression (its spaces: "
        f"{known or 'none'})"
    )


# --------------------------------------------------------------------------
# Canonical frames
# --------------------------------------------------------------------------


def canonical_renaming(lists: Sequence[Sequence[Index]]) -> dict[Index, Index]:
    """A renaming of every index in ``lists`` (protos included) to canonical
    labels that do not depend on the original labels.

    Indices are numbered per base key from 1: first every index of the lists
    in order of first appearance, then indices that occur only as protos,
    ordered by the places (list, slot, depth) where they occur.
    """
    next_ordinal: dict[str, int] = {}
    ordinal: dict[Index, int] = {}

    def number(index: Index) -> None:
        value = next_ordinal.get(index.base_key, 1)
        next_ordinal[index.base_key] = value + 1
        ordinal[index] = value

    for indices in lists:
        for index in indices:
            if index not in ordinal:
                number(index)
    places: dict[Index, list[tuple[int, int, int]]] = {}
    for list_number, indices in enumerate(lists):
        for slot, index in enumerate(indices):
            if index.protos:
                for depth, proto in _protos_with_depth(index, 1):
                    if proto not in ordinal:
                        places.setdefault(proto, []).append((list_number, slot, depth))
    for proto in sorted(places, key=lambda p: (places[p], p.sort_key())):
        number(proto)

    renamed: dict[Index, Index] = {}

    def canonical(index: Index) -> Index:
        found = renamed.get(index)
        if found is None:
            found = Index(
                index.base_key,
                ordinal[index],
                (canonical(proto) for proto in index.protos),
            )
            renamed[index] = found
        return found

    for index in list(ordinal):
        canonical(index)
    return renamed


def _protos_with_depth(index: Index, depth: int) -> Iterator[tuple[int, Index]]:
    for proto in index.protos:
        yield depth, proto
        yield from _protos_with_depth(proto, depth + 1)


# --------------------------------------------------------------------------
# Construction
# --------------------------------------------------------------------------


_LeafKey = tuple[str, str | None, tuple[int, int, int], tuple[Index, ...]]
_NodeKey = tuple[str, str, tuple[Index, ...], tuple[Index, ...], tuple[Index, ...]]


@dataclass
class _Builder:
    """Interns values across the whole forest (the CSE tables)."""

    expression: Expression
    leaves: dict[_LeafKey, LeafValue] = field(default_factory=dict[_LeafKey, LeafValue])
    nodes: dict[_NodeKey, ContractionValue] = field(
        default_factory=dict[_NodeKey, ContractionValue]
    )
    leaf_names: dict[str, int] = field(default_factory=dict[str, int])

    def leaf(self, tensor: Tensor) -> Use:
        indices = tensor.indices
        renaming = canonical_renaming((indices,))
        frame = tuple(renaming[i] for i in indices)
        label = tensor.label
        key: _LeafKey = (
            unicodedata.normalize("NFC", label),
            tensor.symmetry,
            tensor.layout,
            frame,
        )
        value = self.leaves.get(key)
        if value is None:
            value = LeafValue(
                self._leaf_name(label), label, tensor.symmetry, tensor.layout, frame
            )
            self.leaves[key] = value
        return Use(value.name, indices)

    def _leaf_name(self, label: str) -> str:
        base = symbol_name(label)
        count = self.leaf_names.get(base, 0)
        self.leaf_names[base] = count + 1
        return f"{base}_{count}"

    def contraction(
        self,
        left: Use,
        right: Use,
        result: tuple[Index, ...],
        contracted: tuple[Index, ...],
    ) -> Use:
        renaming = canonical_renaming((left.carried, right.carried))
        left_frame = tuple(renaming[i] for i in left.carried)
        right_frame = tuple(renaming[i] for i in right.carried)
        result_frame = tuple(renaming[i] for i in result)
        key: _NodeKey = (left.value, right.value, left_frame, right_frame, result_frame)
        value = self.nodes.get(key)
        if value is None:
            value = ContractionValue(
                f"v{len(self.nodes)}",
                result_frame,
                tuple(renaming[i] for i in contracted),
                Factor(left.value, left_frame),
                Factor(right.value, right_frame),
            )
            self.nodes[key] = value
        return Use(value.name, result, (left, right))

    def term_root(self, term: Term, costs: Costs, order: Order) -> Use | None:
        """The root use-site of ``term``'s binary tree under ``order``
        (validated first)."""
        self.check_term(term)
        if not term.tensors:
            return None
        plan = plan_term(term, costs, order)
        nodes = [self.leaf(tensor) for tensor in term.tensors]
        for (left, right), (result, contracted) in zip(
            plan.steps, step_labels(term, plan), strict=True
        ):
            nodes.append(
                self.contraction(nodes[left], nodes[right], result, contracted)
            )
        return nodes[plan.root]

    def check_term(self, term: Term) -> frozenset[Index]:
        """The term's externals; raise ``SequantError`` if the term cannot be
        a tree (repeated index in a tensor, operator lists an index no tensor
        carries, or an index that is neither summed nor a result)."""
        for tensor in term.tensors:
            seen: set[Index] = set()
            for index in tensor.indices:
                if index in seen:
                    raise self.expression.error(
                        f"index {index} appears twice in tensor {tensor.label}: "
                        "traces and diagonals are not supported (a tensor's "
                        "indices must be distinct)",
                        tensor.offset,
                    )
                seen.add(index)
        externals = term.externals()
        if not term.operators:
            return frozenset(externals)
        counts = term.appearances()
        for operator in term.operators:
            for index in operator.indices:
                if index not in counts:
                    raise self.expression.error(
                        f"operator {operator.label} lists index {index}, which "
                        "no tensor of the term carries",
                        operator.offset,
                    )
        listed = frozenset(externals)
        for tensor in term.tensors:
            for index in tensor.indices:
                if counts[index] == 1 and index not in listed:
                    raise self.expression.error(
                        f"index {index} of tensor {tensor.label} appears once in "
                        "its term but no operator of the term lists it as a "
                        "result index",
                        tensor.offset,
                    )
        return listed


def symbol_name(label: str) -> str:
    """An ASCII identifier for a tensor label: ASCII letters, digits and
    ``_`` kept, other characters spelled by their Unicode name
    (``δ`` → ``delta``, ``μ̃`` → ``mutilde``)."""
    parts: list[str] = []
    for char in label:
        if char.isascii() and (char.isalnum() or char == "_"):
            parts.append(char)
            continue
        name = unicodedata.name(char, f"u{ord(char):04x}")
        word = name.rsplit(" ", 1)[-1].lower()
        if "CAPITAL" in name:
            word = word.capitalize()
        parts.append(word if word.isascii() and word.isalnum() else f"u{ord(char):04x}")
    text = "".join(parts)
    return text if text[:1].isalpha() or text[:1] == "_" else f"t{text}"


def term_indices(term: Term) -> set[Index]:
    """Every distinct index of the term's tensors, protos at any depth included."""
    found: set[Index] = set()
    for tensor in term.tensors:
        for index in tensor.indices:
            if index not in found:
                found.add(index)
                found.update(index.all_protos())
    return found


def build_forest(
    expression: Expression,
    policy: BatchPolicy | None = None,
    name: str = "sequant",
    order: Order = "flops",
) -> Forest:
    """The forest of ``expression`` with the batch loops of ``policy``, each
    term's tree chosen by ``order`` (``file``, ``flops`` or ``memory``; see
    ``axisflow.order.search``), costed with the policy's extents (composite
    kinds included, ``DEFAULT_EXTENT`` for a space without one) and, when the
    policy batches spaces, with the sizes values have under the term's loops
    (``ordering.batched_size``).

    Raises ``SequantError`` (located) for a term that cannot be a tree and
    ``PolicyError`` for a policy naming a space the expression lacks or an
    unknown order.
    """
    if order not in ORDERS:
        raise PolicyError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    policy = policy or BatchPolicy()
    keys = expression.space_keys()
    aliases = {alias: key for key in keys if (alias := ascii_alias(key)) is not None}
    batch_keys = [_resolve_key(k, keys, aliases) for k in policy.spaces]
    if len(set(batch_keys)) != len(batch_keys):
        raise PolicyError(f"an index space is named twice in batch={policy.spaces}")
    extents: dict[str, int] = {}
    composites: dict[tuple[str, int], int] = {}
    for key, extent in policy.extents:
        try:
            base, protos = split_kind(key)
        except ExtentError as error:
            raise PolicyError(str(error)) from None
        base = _resolve_key(base, keys, aliases)
        if protos is None:
            extents[base] = extent
        else:
            composites[(base, protos)] = extent
    spaces = tuple(
        Space(
            key,
            extents.get(key),
            policy.elem,
            tuple(sorted((p, n) for (k, p), n in composites.items() if k == key)),
        )
        for key in keys
    )
    sizing = Extents(extents, composites)

    builder = _Builder(expression)
    shared_slots: dict[tuple[str, int], int] = {}
    trees: list[Tree] = []
    loop_count = 0
    for number, term in enumerate(expression.terms):
        bound: list[Index] = []
        if batch_keys:
            indices = term_indices(term)
            for key in batch_keys:
                bound.extend(sorted(i for i in indices if i.base_key == key))
        costs = Costs(
            sizing,
            batched_size(
                sizing,
                bound,
                term_modes(term),
                frozenset(expand_modes(term.externals())),
            )
            if bound
            else None,
        )
        root = builder.term_root(term, costs, order)
        loops: list[Loop] = []
        if root is not None:
            depths: dict[str, int] = {}
            for index in bound:
                key = index.base_key
                depth = depths[key] = depths.get(key, -1) + 1
                if policy.separate_instances:
                    slot = loop_count
                else:
                    slot = shared_slots.setdefault((key, depth), len(shared_slots))
                loops.append(Loop(index, slot))
                loop_count += 1
        trees.append(
            Tree(f"term{number}", term.coefficient, tuple(loops), root, number)
        )
    values: list[Value] = [*builder.leaves.values(), *builder.nodes.values()]
    return Forest(name, spaces, tuple(values), tuple(trees))


__all__ = [
    "BatchPolicy",
    "ContractionValue",
    "Factor",
    "Forest",
    "LeafValue",
    "Loop",
    "PolicyError",
    "SequantError",
    "Space",
    "Tree",
    "Use",
    "Value",
    "build_forest",
    "canonical_renaming",
]
