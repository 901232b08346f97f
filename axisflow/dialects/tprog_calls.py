"""The calls of a ``tprog`` module: its call graph, and how each call site was served.

:class:`CallGraph` is what the interpreter (:mod:`axisflow.dialects.tprog_eval`)
plans shared calls with: every ``tprog.call`` with the function whose body
holds it, each function's callees, the functions on a call cycle, and the
capture labels in the order re-evaluation first meets them.
:class:`CallReport` records, for each call site, whether it was served by a
shape scheme or re-evaluated and why; the passes' ``explain`` option writes
it into the IR (:meth:`CallReport.attach`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation

from axisflow.dialects.tprog import (
    CallOp,
    EinsumOp,
    FuncOp,
    InstantiateOp,
    SetDimOp,
)

SERVED_ATTR = "tprog.served"
"""The attribute ``explain`` writes on each call site and on the module."""

BY_A_SCHEME = "by a scheme"


@dataclass(frozen=True)
class CallGraph:
    """Who calls whom, and where.

    ``functions``: the module's ``tprog.func``s by name. ``calls``: every
    ``tprog.call`` (at module level and in bodies) in walk order, each with
    the function whose body holds it (``None``: module level). ``callees``:
    per function, the functions its body calls, in call order (each once).
    ``recursive``: the functions on a call cycle.
    """

    functions: dict[str, FuncOp]
    calls: tuple[tuple[CallOp, str | None], ...]
    callees: dict[str, tuple[str, ...]]
    recursive: frozenset[str]

    @classmethod
    def of(cls, module: ModuleOp) -> CallGraph:
        """The call graph of a module."""
        functions = {
            op.sym_name.data: op for op in module.ops if isinstance(op, FuncOp)
        }
        calls: list[tuple[CallOp, str | None]] = []
        callees: dict[str, dict[str, None]] = {name: {} for name in functions}
        for op in module.ops:
            if isinstance(op, CallOp):
                calls.append((op, None))
            elif isinstance(op, FuncOp):
                name = op.sym_name.data
                for inner in op.body.walk():
                    if isinstance(inner, CallOp):
                        calls.append((inner, name))
                        callee = inner.callee.root_reference.data
                        if callee in functions:
                            callees[name].setdefault(callee, None)
        graph = {name: tuple(found) for name, found in callees.items()}
        return cls(functions, tuple(calls), graph, _on_cycles(graph))

    def callee_of(self, call: CallOp) -> str:
        """The name a call applies."""
        return call.callee.root_reference.data

    def applied(self) -> set[str]:
        """The functions evaluating the module applies: those called at module
        level, and those their bodies call, transitively."""
        found: set[str] = set()
        stack = [self.callee_of(call) for call, owner in self.calls if owner is None]
        while stack:
            name = stack.pop()
            if name in found or name not in self.functions:
                continue
            found.add(name)
            stack.extend(self.callees.get(name, ()))
        return found

    def site_counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """Per function, its call sites in all, and those at module level.

        Only call sites that evaluating the module reaches count: at module
        level, and in the bodies of functions it applies.
        """
        applied = self.applied()
        every: dict[str, int] = {}
        top: dict[str, int] = {}
        for call, owner in self.calls:
            if owner is not None and owner not in applied:
                continue
            name = self.callee_of(call)
            every[name] = every.get(name, 0) + 1
            if owner is None:
                top[name] = top.get(name, 0) + 1
        return every, top

    def below(self, name: str) -> list[str]:
        """The functions ``name`` calls, transitively, callees before callers.

        Depth first with an explicit stack (a call chain of any length);
        recursive functions and ``name`` itself are left out.
        """
        order: list[str] = []
        seen = {name}
        stack: list[tuple[str, int]] = [(name, 0)]
        while stack:
            current, index = stack.pop()
            found = self.callees.get(current, ())
            if index < len(found):
                stack.append((current, index + 1))
                callee = found[index]
                if callee not in seen and callee not in self.recursive:
                    seen.add(callee)
                    stack.append((callee, 0))
            elif current != name:
                order.append(current)
        return order

    def labels_in_evaluation_order(self, module: ModuleOp) -> list[str]:
        """The capture labels in the order evaluating the module meets them first.

        Module-level operations in order, a function's body at its first
        call (each body once); functions never called are not evaluated.
        """
        labels: dict[str, None] = {}
        entered: set[str] = set()
        # An explicit stack of operation lists with positions.
        stack: list[tuple[list[Operation], int]] = [(list(module.ops), 0)]
        while stack:
            ops, index = stack.pop()
            if index >= len(ops):
                continue
            stack.append((ops, index + 1))
            op = ops[index]
            if isinstance(op, EinsumOp):
                for label in op.capture_labels:
                    labels.setdefault(label, None)
            elif isinstance(op, SetDimOp):
                labels.setdefault(op.label.data, None)
            elif isinstance(op, CallOp):
                callee = self.functions.get(self.callee_of(op))
                if callee is not None and callee.sym_name.data not in entered:
                    entered.add(callee.sym_name.data)
                    stack.append((list(callee.body.block.ops), 0))
        return list(labels)


def _on_cycles(graph: dict[str, tuple[str, ...]]) -> frozenset[str]:
    """The nodes on a cycle of ``graph`` (Tarjan's strongly connected components)."""
    index_of: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    component_stack: list[str] = []
    cyclic: set[str] = set()
    counter = 0
    for root in graph:
        if root in index_of:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index_of[node] = low[node] = counter
                counter += 1
                component_stack.append(node)
                on_stack.add(node)
            successors = graph.get(node, ())
            if position < len(successors):
                work.append((node, position + 1))
                nxt = successors[position]
                if nxt not in index_of:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index_of[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index_of[node]:
                component: list[str] = []
                while True:
                    member = component_stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    cyclic.update(component)
    return frozenset(cyclic)


@dataclass
class CallReport:
    """How each call site was served: by a shape scheme, or re-evaluated and why.

    A call site evaluated several times (in a re-evaluated body) keeps its
    first re-evaluation's reason; a site never evaluated (in a function
    never applied) is reported as such.
    """

    status: dict[Operation, str] = field(default_factory=dict)

    def served(self, call: Operation) -> None:
        """The call was applied through its callee's scheme."""
        self.status.setdefault(call, BY_A_SCHEME)

    def re_evaluated(self, call: Operation, why: str) -> None:
        """The call ran its callee's body; ``why`` says why."""
        current = self.status.get(call)
        if current is None or current == BY_A_SCHEME:
            self.status[call] = f"re-evaluated: {why}"

    def counts(self, calls: list[Operation]) -> tuple[int, int, int]:
        """Of ``calls``: served by a scheme, re-evaluated, never evaluated."""
        served = re_evaluated = never = 0
        for call in calls:
            status = self.status.get(call)
            if status is None:
                never += 1
            elif status == BY_A_SCHEME:
                served += 1
            else:
                re_evaluated += 1
        return served, re_evaluated, never

    def summary(self, calls: list[Operation]) -> str:
        """``N call sites: S served by a scheme, R re-evaluated[, U never evaluated]``."""
        served, re_evaluated, never = self.counts(calls)
        text = (
            f"{len(calls)} call sites: {served} served by a scheme, "
            f"{re_evaluated} re-evaluated"
        )
        if never:
            text += f", {never} never evaluated (in functions never applied)"
        return text

    def reasons(self, calls: list[Operation]) -> dict[str, int]:
        """How many call sites each reason for re-evaluating accounts for."""
        found: dict[str, int] = {}
        for call in calls:
            status = self.status.get(call)
            if status is not None and status != BY_A_SCHEME:
                found[status] = found.get(status, 0) + 1
        return found

    def attach(self, module: ModuleOp) -> None:
        """Write the report: on each call site, and the summary on the module."""
        calls = call_sites(module)
        for call in calls:
            status = self.status.get(
                call, "never evaluated (its function is never applied)"
            )
            call.attributes[SERVED_ATTR] = StringAttr(status)
        module.attributes[SERVED_ATTR] = StringAttr(self.summary(calls))


def call_sites(module: ModuleOp) -> list[Operation]:
    """Every ``tprog.call`` and ``tprog.instantiate`` of a module, in walk order."""
    return [op for op in module.walk() if isinstance(op, CallOp | InstantiateOp)]
