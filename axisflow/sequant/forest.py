"""From a SeQuant ``Expression`` to the forest model of pairwise contractions.

Pure Python, no xDSL: ``build_forest`` returns an ``axisflow.forest.model.Forest``
(the one forest model); ``axisflow.dialects.batch_model`` emits it as IR.

Construction, per term:

* **Binarization.** Each term's plan (``axisflow.order``, through
  ``plan_pairing``) gives its binary tree: ``order="file"`` folds the tensors
  left to right, ``((t1 * t2) * t3) * ...`` (``binarize``); ``"flops"`` (the
  default) takes the tree with the fewest multiply-adds, ``"memory"`` the one
  with the smallest largest intermediate; parenthesized groups are kept as
  written. Every inner node is a value whose result indices are those of its
  operands still needed outside its subtree (they appear in another tensor
  of the term) or external to the term, in order of first appearance (left
  operand, then right), followed by any mode the value must keep that no
  tensor outside carries as an index (``i_1`` when only a composite
  ``c_1<i_1>`` outside still depends on it): so a value's modes are exactly
  the modes the cost model keeps. The indices contracted at the node are those on both
  operands that are not modes of the result (a proto of a result composite
  stays in the result); a Hadamard index (on both, still needed) stays on
  the result. Proto indices ride along inside their composite labels:
  ``a_1<i_1>`` is one index, and a proto is not an appearance of its own.
* **Values and CSE.** Leaves (input tensors) are values too. Every value
  lives in its own canonical index frame (``frames.canonical_renaming``), so
  values equal up to a consistent renaming of indices are one value with
  several use-sites, across the whole forest (with ``share="tree"``: within
  each tree only, see below). Identity is structural: a leaf
  is identified by its label, symmetry, group layout and canonical indices; a
  contraction by its two factor values and how their frames connect (the
  canonical labels of both factors, their proto pairings, and the result in
  the node's frame).
* **Explicit pairings.** The canonical renaming of a node is a bijection
  between the term's labels and the node's frame, protos included, so every
  use-site's mode map (the value's modes -> the term's labels) and every
  factor's (the factor's modes -> the consumer's frame) is its inverse,
  composed: exact, never guessed. The model carries them (``Site.protos``,
  ``Factor.protos``); the IR prints the ones that are not forced.
* **Coefficients.** A term's rational coefficient is its tree's ``coeff``; a
  single-tensor term's tree uses the leaf value as its root; a term without
  tensors (a bare number) is a tree without a root.
* **Batching policy.** For each space named in the policy (outermost first)
  and each tree, one batch loop per distinct index of that space occurring
  in the term (as a tensor index, or as a proto index at any depth), nested
  in canonical order (first appearance in the term, indices that occur only
  as protos last; never label order, so that renaming changes nothing), all
  enclosing the whole tree at its root. The k-th loop of a space (in that
  order) shares one fusion slot across all trees; slots are
  numbered in order of first use. With ``separate_instances`` every loop gets
  a slot of its own.
* **Sharing.** ``share="forest"`` (the default) shares a contraction value
  by every tree that builds it. ``share="tree"`` recomputes instead
  (``axisflow.forest.sharing.rebuild_per_tree``): each tree rebuilds the
  values it shares with other trees, and every loop is an instance of its
  own (each tree runs in its own loop nest); leaves (the inputs) stay
  shared. It costs the multiply-adds of the rebuilt values and can lower
  the scheduled peak a lot: a shared value is otherwise held whole from its
  first reader tree to its last.
"""

from __future__ import annotations

import contextlib
import itertools
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar, cast

from axisflow.forest.frames import (
    ProtoPairs,
    canonical_renaming,
    expand_modes,
    invert,
    proto_closure,
    proto_modes,
)
from axisflow.forest.model import Factor, Forest, Loop, Site, Space, Tree, Value
from axisflow.forest.sharing import rebuild_per_tree
from axisflow.notes import UnusedOptionNote, say
from axisflow.order import (
    ORDERS,
    Costs,
    ExtentError,
    Extents,
    Order,
    Plan,
    PlanCache,
    plan_product,
    split_kind,
)
from axisflow.order import parse_extents as _parse_extents
from axisflow.residual import ResidualError, ResidualLayout, residual_layout
from axisflow.residual.operators import Operator, OperatorError
from axisflow.roles.index import Index
from axisflow.sequant.canonical import class_orders, tie_classes
from axisflow.sequant.ordering import batched_size
from axisflow.sequant.syntax import Expression, SequantError, Tensor, Term

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
    spelled by its ASCII alias, see ``ascii_alias``); ``external``: those of
    them batched only over a term's external indices (written
    ``i:external`` in ``batch``), so that contracted indices of the space
    get no loop. ``extents``: extent per
    space key (or alias). ``elem``: element size in bytes, declared on every
    space. ``separate_instances``: a fusion slot per loop instead of one per
    (space, nesting position) shared by all trees. ``share``: ``forest``
    (values shared by all trees) or ``tree`` (shared within a tree only,
    rebuilt by every tree that needs them, a slot per loop).
    """

    spaces: tuple[str, ...] = ()
    extents: tuple[tuple[str, int], ...] = ()
    elem: int | None = None
    separate_instances: bool = False
    external: tuple[str, ...] = ()
    share: Share = "forest"

    @staticmethod
    def make(
        batch: str | Iterable[str] = (),
        extents: str | Mapping[str, int] | None = None,
        elem: int | None = None,
        separate_instances: bool = False,
        share: str = "forest",
    ) -> BatchPolicy:
        """Build a policy from user-facing values.

        ``batch`` is a key, a comma-separated list of keys, or an iterable of
        keys (an empty string: no batching; an empty name in a list is an
        error); ``extents`` a mapping or text such as
        ``"i=80,a=896,Κ=1682"``. Raises ``PolicyError`` on malformed values.
        """
        spaces: list[str] = []
        external: list[str] = []
        for entry in batch_entries(batch):
            key, colon, which = (part.strip() for part in entry.partition(":"))
            if colon and which != "external":
                raise PolicyError(
                    f"malformed batch entry {entry!r}: expected SPACE or SPACE:external"
                )
            spaces.append(key)
            if colon:
                external.append(key)
        if isinstance(extents, str):
            extents = parse_extents(extents)
        pairs = tuple((extents or {}).items())
        for key, extent in pairs:
            if extent <= 0:
                raise PolicyError(f"extent of space {key!r} must be positive")
        if elem is not None and elem <= 0:
            raise PolicyError(f"element size must be positive, got {elem}")
        if share not in SHARES:
            raise PolicyError(
                f"share must be one of {', '.join(SHARES)}, got {share!r}"
            )
        return BatchPolicy(
            tuple(spaces),
            pairs,
            elem,
            separate_instances,
            tuple(external),
            cast(Share, share),
        )


class PolicyError(ValueError):
    """A batching option that does not fit the expression."""


def batch_entries(batch: str | Iterable[str]) -> list[str]:
    """The entries of a ``batch`` option (``"i,Κ:external"`` or an iterable),
    stripped. ``""`` is none (no batching) and a comma after the last name is
    allowed (``"i,"``); an empty name anywhere else (``","``, ``"i,,Κ"``) is
    a ``PolicyError``."""
    given = batch
    if isinstance(batch, str):
        batch = batch.split(",") if batch.strip() else []
    entries = [key.strip() for key in batch]
    if len(entries) > 1 and not entries[-1] and isinstance(given, str):
        entries.pop()  # "i,Κ,": a trailing comma
    if any(not entry for entry in entries):
        raise PolicyError(
            f"batch: an empty space name in {given!r} (expected SPACE,SPACE,...)"
        )
    return entries


def parse_extents(text: str) -> dict[str, int]:
    """``"i=80,a=896,a<2>=40,Κ=1682"`` → ``{"i": 80, ..., "a<2>": 40, ...}``
    (``axisflow.order.parse_extents``, raising ``PolicyError``)."""
    try:
        return _parse_extents(text)
    except ExtentError as error:
        raise PolicyError(str(error)) from None


def space_aliases(keys: Iterable[str]) -> dict[str, str]:
    """The ASCII alias of each space key that has one (``ascii_alias``),
    mapped to the key."""
    return {alias: key for key in keys if (alias := ascii_alias(key)) is not None}


def resolve_space_key(
    name: str, keys: Sequence[str], aliases: Mapping[str, str]
) -> str:
    """The space key ``name`` stands for: one of ``keys`` (an expression's
    space keys), or the key of an ASCII alias (``aliases``, from
    ``space_aliases``). Raises ``PolicyError`` listing the spaces."""
    if name in keys:
        return name
    if name in aliases:
        return aliases[name]
    raise PolicyError(
        f"index space {name!r} does not occur in the expression (its spaces: "
        f"{_known_keys(keys)})"
    )


def check_spaces(expression: Expression, names: Iterable[str]) -> None:
    """Raise ``PolicyError`` for the first of ``names`` (``batch`` entries:
    ``Κ`` or ``Κ:external``) that is neither a space key of ``expression``
    nor the ASCII alias of one."""
    keys = expression.space_keys()
    aliases = {alias: key for key in keys if (alias := ascii_alias(key)) is not None}
    for name in names:
        resolve_space_key(name.partition(":")[0].strip(), keys, aliases)


def _known_keys(keys: Sequence[str]) -> str:
    """The expression's space keys for a message, with their ASCII aliases."""
    known = ", ".join(
        key + (f" (alias {alias})" if (alias := ascii_alias(key)) else "")
        for key in keys
    )
    return known or "none"


# --------------------------------------------------------------------------
# Binarization
# --------------------------------------------------------------------------

Pairing = int | tuple["Pairing", "Pairing"]
"""A binary tree over a term's tensors: a tensor position, or a pair."""


def binarize(tensors: Sequence[Tensor]) -> Pairing:
    """The left to right fold ``((t0 * t1) * t2) * ...`` of a term's tensors
    (at least one): the file order."""
    tree: Pairing = 0
    for position in range(1, len(tensors)):
        tree = (tree, position)
    return tree


def plan_pairing(plan: Plan) -> Pairing:
    """The binary tree of a plan's SSA steps (built without recursion)."""
    nodes: list[Pairing] = list(range(plan.leaves))
    for left, right in plan.steps:
        nodes.append((nodes[left], nodes[right]))
    return nodes[plan.root]


# --------------------------------------------------------------------------
# Construction
# --------------------------------------------------------------------------


@dataclass
class _Use:
    """A use-site while a term is built: value, labels in the term, the
    value's modes -> the term's labels, factor use-sites."""

    value: Value
    carried: tuple[Index, ...]
    mode_map: dict[Index, Index]
    factors: tuple[_Use, ...] = ()
    tensors: frozenset[int] = frozenset()
    """Positions of the term's tensors below this use-site."""


_LeafKey = tuple[str, str | None, tuple[int, int, int], tuple[Index, ...]]
_NodeKey = tuple[
    str,
    str,
    tuple[Index, ...],
    tuple[Index, ...],
    tuple[Index, ...],
    ProtoPairs,
    ProtoPairs,
]

Share = Literal["forest", "tree"]
"""Where contraction values are shared: by the whole forest, or per tree."""
SHARES: tuple[Share, ...] = ("forest", "tree")


_Key = TypeVar("_Key")


def _keep_oldest(table: dict[_Key, Value], count: int) -> None:
    """Remove the entries of ``table`` added after its first ``count``."""
    for key in list(itertools.islice(reversed(table), len(table) - count)):
        del table[key]


class _Builder:
    """Hash-consed values of one forest."""

    def __init__(self, expression: Expression) -> None:
        self.expression = expression
        self.leaves: dict[_LeafKey, Value] = {}
        self.nodes: dict[_NodeKey, Value] = {}
        self.leaf_names: dict[str, int] = {}
        self.plans = PlanCache()
        """The order search's findings, shared by the terms."""

    def leaf(self, tensor: Tensor, position: int) -> _Use:
        renaming = canonical_renaming((tensor.indices,))
        frame = tuple(renaming[i] for i in tensor.indices)
        layout = (len(tensor.bra), len(tensor.ket), len(tensor.aux))
        key: _LeafKey = (tensor.label, tensor.symmetry, layout, frame)
        value = self.leaves.get(key)
        if value is None:
            value = Value(
                self.fresh_leaf_name(tensor.label),
                frame,
                tensor=tensor.label,
                symmetry=tensor.symmetry,
                layout=layout,
            )
            self.leaves[key] = value
        mode_map = {renaming[x]: x for x in expand_modes(tensor.indices)}
        return _Use(value, tensor.indices, mode_map, (), frozenset((position,)))

    @contextlib.contextmanager
    def tentative(self) -> Iterator[Callable[[], list[Value]]]:
        """Inside, what is built is undone on leaving (values are only
        ever added, so the undo costs what was added, not the forest); the
        callable yielded lists the contractions added so far, in the order
        they were built."""
        leaf_count, node_count = len(self.leaves), len(self.nodes)
        leaf_names = dict(self.leaf_names)  # one count per label

        def added() -> list[Value]:
            count = len(self.nodes) - node_count
            newest = itertools.islice(reversed(self.nodes.values()), count)
            return list(newest)[::-1]

        try:
            yield added
        finally:
            _keep_oldest(self.nodes, node_count)
            _keep_oldest(self.leaves, leaf_count)
            self.leaf_names = leaf_names

    def fresh_leaf_name(self, label: str) -> str:
        base = symbol_name(label)
        count = self.leaf_names.get(base, 0)
        self.leaf_names[base] = count + 1
        return f"{base}_{count}"

    def contraction(
        self,
        left: _Use,
        right: _Use,
        result: tuple[Index, ...],
        contracted: tuple[Index, ...],
    ) -> _Use:
        renaming = canonical_renaming((left.carried, right.carried))
        left_frame = tuple(renaming[i] for i in left.carried)
        right_frame = tuple(renaming[i] for i in right.carried)
        result_frame = tuple(renaming[i] for i in result)
        left_protos = _factor_protos(left, renaming)
        right_protos = _factor_protos(right, renaming)
        key: _NodeKey = (
            left.value.name,
            right.value.name,
            left_frame,
            right_frame,
            result_frame,
            left_protos,
            right_protos,
        )
        value = self.nodes.get(key)
        if value is None:
            value = Value(
                f"v{len(self.nodes)}",
                result_frame,
                tuple(renaming[i] for i in contracted),
                (
                    Factor(left.value.name, left_frame, left_protos),
                    Factor(right.value.name, right_frame, right_protos),
                ),
            )
            self.nodes[key] = value
        mode_map = {renaming[x]: x for x in expand_modes(result)}
        return _Use(
            value, result, mode_map, (left, right), left.tensors | right.tensors
        )

    def term_root(
        self,
        term: Term,
        renaming: Mapping[Index, Index] | None = None,
        order: Order = "file",
        extents: Extents | None = None,
        loops: Sequence[Index] = (),
    ) -> _Use | None:
        """The root use-site of ``term``'s binary tree under ``order``
        (validated first), in the term's canonical labels (``canonical_term``;
        ``renaming``: its renaming, if computed already); ``loops`` are the
        batch loops' labels in those labels, outermost first (for the
        batch-aware sizes of the search)."""
        externals = self.check_term(term)
        if not term.tensors:
            return None
        tensors, renaming = canonical_term(term.tensors, renaming)
        externals = frozenset(renaming[i] for i in externals)
        # Where each index occurs, as a tensor index or as a proto: a later
        # composite depending on an index keeps it alive (one mode).
        places: dict[Index, set[int]] = {}
        for position, tensor in enumerate(tensors):
            for index in expand_modes(tensor.indices):
                places.setdefault(index, set()).add(position)
        output = frozenset(expand_modes(sorted(externals, key=Index.sort_key)))
        extents = extents or Extents()
        size = None
        if loops:
            size = batched_size(extents, loops, frozenset(places), output)
        plan = plan_product(
            [t.indices for t in tensors],
            sorted(externals, key=Index.sort_key),
            Costs(extents, size),
            order,
            term.groups,
            term.operands(),
            self.plans,
        )
        # Post-order over the pairing, iteratively (a chain may be long).
        stack: list[tuple[Pairing, bool]] = [(plan_pairing(plan), False)]
        results: list[_Use] = []
        while stack:
            node, ready = stack.pop()
            if isinstance(node, int):
                results.append(self.leaf(tensors[node], node))
                continue
            if not ready:
                stack.append((node, True))
                stack.append((node[1], False))
                stack.append((node[0], False))
                continue
            right = results.pop()
            left = results.pop()
            inside = left.tensors | right.tensors
            on_left = set(left.carried)
            operands = left.carried + tuple(
                i for i in right.carried if i not in on_left
            )
            result = [i for i in operands if i in externals or places[i] - inside]
            kept = set(expand_modes(result))
            # A proto of an operand that a tensor outside still depends on
            # stays a mode of the result, as an index of its own if needed.
            for mode in expand_modes(operands):
                if mode not in kept and places[mode] - inside:
                    result.append(mode)
                    kept.update(expand_modes((mode,)))
            on_both = set(expand_modes(left.carried)) & set(expand_modes(right.carried))
            contracted = tuple(i for i in operands if i in on_both and i not in kept)
            results.append(self.contraction(left, right, tuple(result), contracted))
        (root,) = results
        return root

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


def canonical_term(
    tensors: Sequence[Tensor], renaming: Mapping[Index, Index] | None = None
) -> tuple[tuple[Tensor, ...], Mapping[Index, Index]]:
    """The tensors with every index renamed canonically over the whole term,
    and the renaming (original -> canonical).

    The construction runs on this text, so the values, their frames and the
    proto pairings chosen where a tie must be broken do not depend on the
    term's labels: two protos left tied by the renaming occur in exactly the
    same places, so exchanging them maps the text to itself. Use-sites get
    the term's own labels back through the inverse renaming.
    """
    if renaming is None:
        renaming = canonical_renaming([t.indices for t in tensors])
    found = renaming

    def renamed(indices: tuple[Index, ...]) -> tuple[Index, ...]:
        return tuple(found[i] for i in indices)

    canonical = tuple(
        Tensor(
            t.label,
            renamed(t.bra),
            renamed(t.ket),
            renamed(t.aux),
            t.symmetry,
            t.offset,
        )
        for t in tensors
    )
    return canonical, renaming


def _factor_protos(use: _Use, renaming: Mapping[Index, Index]) -> ProtoPairs:
    """A factor's proto modes with their labels in the consumer's frame."""
    return tuple(
        (mode, renaming[use.mode_map[mode]]) for mode in proto_modes(use.value.result)
    )


def term_indices(term: Term) -> set[Index]:
    """Every distinct index of the term's tensors, protos at any depth included."""
    found: set[Index] = set()
    for tensor in term.tensors:
        found.update(tensor.indices)
        found.update(proto_closure(tensor.indices))
    return found


def build_forest(
    expression: Expression,
    policy: BatchPolicy | None = None,
    name: str = "sequant",
    order: Order = "flops",
    canonical: bool = False,
) -> Forest:
    """The forest model of ``expression`` with the batch loops of ``policy``,
    each term's tree chosen by ``order`` (``file``, ``flops`` or ``memory``;
    see ``axisflow.order.search``), costed with the policy's extents
    (composite kinds included, ``DEFAULT_EXTENT`` for a space without one)
    and, when the policy batches spaces, with the sizes values have under the
    term's loops (``ordering.batched_size``). ``canonical``: each term read
    in the order of its factors that does not depend on how it was written
    (``axisflow.sequant.canonical``), among those of equal standing the one
    adding the fewest multiply-adds to the terms before it
    (``_cheapest_order``); the planner reads expressions so.

    Raises ``SequantError`` (located) for a term that cannot be a tree and
    ``PolicyError`` for a policy batching a space the expression lacks or an
    unknown order; an extent of such a space is ignored with an
    ``UnusedOptionNote`` (``axisflow.notes``).
    """
    if order not in ORDERS:
        raise PolicyError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    policy = policy or BatchPolicy()
    keys = expression.space_keys()
    aliases = space_aliases(keys)
    batch_keys = [resolve_space_key(k, keys, aliases) for k in policy.spaces]
    external_keys = {resolve_space_key(k, keys, aliases) for k in policy.external}
    if len(set(batch_keys)) != len(batch_keys):
        raise PolicyError(f"an index space is named twice in batch={policy.spaces}")
    extents: dict[str, int] = {}
    composites: dict[tuple[str, int], int] = {}
    unused: list[str] = []
    for key, extent in policy.extents:
        try:
            base, protos = split_kind(key)
        except ExtentError as error:
            raise PolicyError(str(error)) from None
        if base not in keys and base not in aliases:
            unused.append(key)  # one text for several equations: said, not refused
            continue
        base = resolve_space_key(base, keys, aliases)
        if (base in extents) if protos is None else ((base, protos) in composites):
            raise PolicyError(f"extents gives {key!r} twice (by its key and its alias)")
        if protos is None:
            extents[base] = extent
        else:
            composites[(base, protos)] = extent
    if unused:
        named = ", ".join(unused)
        verb = "does" if len(unused) == 1 else "do"
        say(
            UnusedOptionNote(
                f"extents names {named}, which {verb} not occur in the expression "
                f"(its spaces: {_known_keys(keys)}); ignored"
            )
        )
    spaces = {
        key: Space(
            key,
            extents.get(key),
            policy.elem,
            tuple(sorted((p, n) for (k, p), n in composites.items() if k == key)),
        )
        for key in keys
    }
    sizing = Extents(extents, composites)

    builder = _Builder(expression)
    shared_slots: dict[tuple[str, int], int] = {}
    trees: list[Tree] = []
    sites: list[Site] = []
    loop_count = 0
    for number, written in enumerate(expression.terms):
        term = (
            _cheapest_order(builder, written, order, sizing) if canonical else written
        )
        renaming = canonical_renaming([t.indices for t in term.tensors])
        bound = _bound(term, renaming, batch_keys, external_keys)
        nest = [renaming[i] for of_space in bound for i in of_space]
        root = builder.term_root(term, renaming, order, sizing, nest)
        loops: list[Loop] = []
        if root is not None:
            for of_space in bound:
                key = of_space[0].base_key if of_space else ""
                for depth, index in enumerate(of_space):
                    if policy.separate_instances:
                        slot = loop_count
                    else:
                        slot = shared_slots.setdefault((key, depth), len(shared_slots))
                    loops.append(Loop(slot, index, slot))
                    loop_count += 1
        try:
            operators = tuple(
                str(Operator.make(o.label, o.bra, o.ket)) for o in term.operators
            )
        except OperatorError as error:
            raise expression.error(str(error), term.offset) from None
        tree = Tree(f"term{number}", term.coefficient, None, operators)
        trees.append(tree)
        if root is not None:
            back = invert(renaming)
            tree.root = _flatten(root, number, tuple(loops), sites, back)
    values = {v.name: v for v in (*builder.leaves.values(), *builder.nodes.values())}
    forest = Forest(name, spaces, values, trees, sites, has_slots=loop_count > 0)
    forest.finish()
    if policy.share == "tree":
        return rebuild_per_tree(forest)
    return forest


def _bound(
    term: Term,
    renaming: Mapping[Index, Index],
    batch_keys: Sequence[str],
    external_keys: set[str],
) -> list[list[Index]]:
    """Per batched space, the term's indices its loops bind, outermost
    first."""
    bound: list[list[Index]] = []
    if batch_keys and term.tensors:
        indices = term_indices(term)
        outer = {*term.externals(), *proto_closure(term.externals())}
        for key in batch_keys:
            # In canonical order (first appearance), not label order: the
            # nesting and the shared slots must not depend on the labels.
            bound.append(
                sorted(
                    (
                        i
                        for i in indices
                        if i.base_key == key
                        and (key not in external_keys or i in outer)
                    ),
                    key=lambda i: renaming[i].sort_key(),
                )
            )
    return bound


LARGEST_PRICED_CLASS = 3
"""Tie classes of more tensors keep the least reading's order
(``canonical.tie_classes``): a class of n tensors is priced by building n!
trees."""


def _cheapest_order(
    builder: _Builder,
    term: Term,
    order: Order,
    sizing: Extents,
) -> Term:
    """``term`` in canonical order (``canonical.tie_classes``), each class
    of tensors the colours cannot order (of at most
    ``LARGEST_PRICED_CLASS``; a larger class keeps the least reading's
    order) put, one class after the other, in the order whose tree adds
    the fewest multiply-adds to the forest built so far (values it shares
    cost nothing), the smallest certificate among equals: a choice that
    depends on neither the written order nor the names."""
    current, classes = tie_classes(term)
    for members in classes:  # one class at a time, the others as chosen
        if len(members) > LARGEST_PRICED_CLASS:
            continue
        best: tuple[int, Term] | None = None
        for candidate in class_orders(current, members):
            with builder.tentative() as built:
                # unbatched sizes: the searches of equal networks are kept
                # (``PlanCache``), where batch-aware ones are searched anew
                builder.term_root(candidate, None, order, sizing)
                added = sum(
                    sizing.elements(set(expand_modes((*v.result, *v.contracted))))
                    for v in built()
                )
            if best is None or added < best[0]:
                best = (added, candidate)
        assert best is not None
        current = best[1]
    return current


def expression_layout(expression: Expression) -> ResidualLayout:
    """The residual of a SeQuant expression: its terms' externals and their
    reserved operators (``axisflow.residual.residual_layout``). Raises
    ``ResidualError`` naming the term that does not fit."""
    operators = []
    for position, term in enumerate(expression.terms):
        try:
            operators.append(
                tuple(Operator.make(o.label, o.bra, o.ket) for o in term.operators)
            )
        except OperatorError as error:
            raise ResidualError(str(error), position) from None
    return residual_layout(
        [term.externals() for term in expression.terms],
        operators,
        None if expression.result is None else expression.result.indices,
    )


def _flatten(
    root: _Use,
    tree: int,
    loops: tuple[Loop, ...],
    sites: list[Site],
    back: Mapping[Index, Index],
) -> int:
    """Append the use-sites under ``root`` to ``sites`` in pre-order (every
    one inside ``loops``), labelled through ``back`` (canonical -> the term's
    labels); return the root's site number."""
    first = len(sites)
    stack: list[tuple[_Use, int | None, int]] = [(root, None, 0)]
    children: dict[int, list[int]] = {}
    while stack:
        use, parent, _ = stack.pop()
        number = len(sites)
        protos = tuple(
            (mode, back[use.mode_map[mode]]) for mode in proto_modes(use.value.result)
        )
        carried = tuple(back[i] for i in use.carried)
        site = Site(number, use.value.name, tree, carried, loops, parent, protos=protos)
        site.mode_map = {
            mode: back[use.mode_map[mode]] for mode in expand_modes(use.value.result)
        }
        sites.append(site)
        if parent is not None:
            children.setdefault(parent, []).append(number)
        stack.extend((factor, number, 0) for factor in reversed(use.factors))
    for parent, found in children.items():
        sites[parent].children = tuple(found)
    return first


__all__ = [
    "SHARES",
    "BatchPolicy",
    "Pairing",
    "PolicyError",
    "SequantError",
    "Share",
    "binarize",
    "build_forest",
    "expression_layout",
    "resolve_space_key",
    "space_aliases",
]
