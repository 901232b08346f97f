"""Benchmark of shape schemes: applying a traced scheme vs re-evaluating the body.

**Applications.** A function of 50 operations (five residual blocks of a
compose with a shared weight, a bias, a ReLU, a squared-mean normalization
through an einsum, a gain, two transposes and a residual sum; 15 shared
parameters) applied at 10, 100 and 1000 call sites, each with its own batch
size. *Re-evaluation* runs the body again at every call; *schemes* trace it
once and instantiate the scheme at every call. Two levels:

* the engine's Python API: Stage 1 (all calls; for schemes including the one
  trace), the closing, and the ratios re-evaluation / schemes;
* the IR passes: ``close-shapes{calls=re-evaluate}`` (which re-evaluates
  every ``tprog.call``, the baseline set for schemes) vs ``generalize-shapes``
  then ``close-shapes`` on the same module (parsing excluded), and the default
  ``close-shapes``, which traces a function called at several sites once and
  applies its scheme at each call.

Goal: schemes at least 5x faster at 100 sites and more.

**Nested and convolutional modules.** OCANNL's blocks as functions
(``examples/shapes/ocannl_functions.mlir``: a transformer encoder block
calling attention, layer norms and an MLP, which call a linear layer; a CNN
calling a convolution block) as bundled, and a generated module of that
kind: ``@encoder`` (two encoder blocks, each layer's parameters module-level
tensors) or ``@cnn`` (two convolution blocks, a mean and a linear
classifier) applied at 10, 100 and 1000 module-level sites, each to data of
its own batch size. For each: how many call sites (module-level and in
bodies) a scheme served and how many were re-evaluated, and why (the report
``close-shapes{explain=true}`` writes); ``close-shapes{calls=re-evaluate}``
against ``close-shapes`` (shared calls) and ``generalize-shapes,close-shapes``
(the same typed modules, asserted); and the memory a call site keeps (the
peak ``tracemalloc`` sees while ``close-shapes`` runs, at two numbers of
sites). Goals: every call site served by a scheme, at least 5x faster than
re-evaluation at 1000 sites, at most 25 KB per call site.

**check.** ``scheme.check`` of that function against sessions holding 100,
10k and 100k unrelated open constraints (pointwise operations on open data
leaves), and the ratio of its time to the 100-constraint session's. Goal: at
most 1.2x.

Times are process CPU time (``time.process_time``), the fastest of
``--repeat`` runs, since the machine is shared; the two sides of every ratio
are run in turn (and the three ``check`` sessions measured in turn), so that
both see the same machine when its speed drifts. The cyclic garbage collector
is paused inside measured regions (after a full collection), unless ``--gc``
is given: a full collection walks every live object, so its cost follows the
size of the heap, not the work measured. For ``check`` that is exactly the
dependence on the rest of the session the measurement is meant to exclude
(the engine's own work is what must not grow); for the applications it is
noise shared by both sides. ``--gc`` shows the figures with the collector on.
Run:

    .venv/bin/python benchmarks/bench_shape_schemes.py [--sites 10,100,1000] [--repeat 3] [--gc]
        [--nested-sites 10,100,1000] [--memory-sites 100,400] [--parts ...]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

from timing import counts_option, positive_option  # benchmarks/timing.py
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.parser import Parser
from xdsl.passes import ModulePass

from axisflow.dialects.tprog import CallOp, InstantiateOp, Tprog
from axisflow.dialects.tprog_calls import BY_A_SCHEME, SERVED_ATTR, call_sites
from axisflow.dialects.tprog_eval import ProgramEvaluator
from axisflow.passes.close_shapes import CloseShapesPass
from axisflow.passes.generalize_shapes import GeneralizeShapesPass
from axisflow.shapes import Session, Tensor, scheme
from axisflow.shapes.terms import Row, RowVar

PAUSE_GC = True
"""Pause the cyclic collector inside measured regions (``--gc`` clears it)."""

BLOCKS = 5  # ten operations each
WIDTH = 16
INPUT_WIDTH = 8


def make_parameters(s: Session) -> list[tuple[Tensor, Tensor, Tensor]]:
    """The shared parameters: per block a weight, a bias and a gain."""
    params = []
    for block in range(BLOCKS):
        weight_spec = f"...->{WIDTH}" if block == 0 else f"{WIDTH}->{WIDTH}"
        params.append(
            (
                s.param(f"w{block}", weight_spec),
                s.param(f"b{block}", f"{WIDTH}"),
                s.param(f"g{block}", f"{WIDTH}"),
            )
        )
    return params


def body(
    s: Session, x: Tensor, params: Sequence[tuple[Tensor, Tensor, Tensor]]
) -> Tensor:
    """Fifty operations: five residual blocks."""
    h = x
    for block, (w, b, g) in enumerate(params):
        p = f"{block}_"
        h1 = s.compose(p + "h1", w, h)
        h2 = s.pointwise(p + "h2", h1, b)
        a = s.pointwise(p + "relu", h2)
        sq = s.pointwise(p + "sq", a, a)
        mean = s.einsum(p + "mean", "...|i=>...|", sq)
        norm = s.pointwise(p + "norm", a, mean)
        scaled = s.pointwise(p + "scaled", norm, g)
        t = s.transpose(p + "t", scaled)
        t2 = s.transpose(p + "t2", t)
        h = s.pointwise(p + "res", t2, h1)
    return h


def batch_of(site: int) -> int:
    """A batch size per call site."""
    return 1 + site % 13


class Measured:
    """CPU seconds of a region, with the collector paused in it if ``PAUSE_GC``."""

    def __enter__(self) -> Measured:
        if PAUSE_GC:
            gc.collect()
            gc.disable()
        self.start = time.process_time()
        return self

    def __exit__(self, *_: object) -> None:
        self.seconds = time.process_time() - self.start
        if PAUSE_GC:
            gc.enable()


def re_evaluation(sites: int) -> tuple[float, float, list[object]]:
    """Run the body at every call site."""
    s = Session()
    params = make_parameters(s)
    with Measured() as stage1:
        results = [
            body(s, s.leaf(f"x{i}", f"{batch_of(i)}|->{INPUT_WIDTH}"), params)
            for i in range(sites)
        ]
    with Measured() as closing:
        s.close()
    return stage1.seconds, closing.seconds, [r.shape.dims() for r in results]


def trace_block(
    s: Session, params: Sequence[tuple[Tensor, Tensor, Tensor]]
) -> scheme.Scheme:
    with s.rewind():
        mark = s.var_mark()
        x = s.fresh("x")
        return scheme.trace(
            s, var_mark=mark, label="block", args=[x], f=lambda: [body(s, x, params)]
        )


def through_schemes(sites: int) -> tuple[float, float, list[object]]:
    """Trace the body once, instantiate its scheme at every call site."""
    s = Session()
    params = make_parameters(s)
    with Measured() as stage1:
        sc = trace_block(s, params)
        results = []
        for i in range(sites):
            y = s.fresh(f"y{i}")
            scheme.instantiate(
                sc,
                application=f"site{i}",
                args=[s.leaf(f"x{i}", f"{batch_of(i)}|->{INPUT_WIDTH}")],
                results=[y],
            )
            results.append(y)
    with Measured() as closing:
        s.close()
    return stage1.seconds, closing.seconds, [r.shape.dims() for r in results]


# ----------------------------------------------------------------- IR level


def module_text(sites: int) -> str:
    """The same function and call sites as a tprog module."""
    lines = []
    for block in range(BLOCKS):
        weight_spec = f"...->{WIDTH}" if block == 0 else f"{WIDTH}->{WIDTH}"
        lines.append(f'%w{block} = tprog.param "{weight_spec}"')
        lines.append(f'%b{block} = tprog.param "{WIDTH}"')
        lines.append(f'%g{block} = tprog.param "{WIDTH}"')
    lines.append("tprog.func @block(%x: !tprog.tensor) -> !tprog.tensor {")
    h = "%x"
    for block in range(BLOCKS):
        p = f"%k{block}_"
        lines += [
            f"  {p}h1 = tprog.compose %w{block}, {h}",
            f"  {p}h2 = tprog.pointwise {p}h1, %b{block}",
            f'  {p}relu = tprog.pointwise {p}h2 {{fn = "relu"}}',
            f"  {p}sq = tprog.pointwise {p}relu, {p}relu",
            f'  {p}mean = tprog.einsum "...|i=>...|" ({p}sq)',
            f"  {p}norm = tprog.pointwise {p}relu, {p}mean",
            f"  {p}scaled = tprog.pointwise {p}norm, %g{block}",
            f"  {p}t = tprog.transpose {p}scaled",
            f"  {p}t2 = tprog.transpose {p}t",
            f"  {p}res = tprog.pointwise {p}t2, {p}h1",
        ]
        h = f"{p}res"
    lines.append(f"  tprog.return {h}")
    lines.append("}")
    for i in range(sites):
        lines.append(f'%x{i} = tprog.leaf "{batch_of(i)}|->{INPUT_WIDTH}"')
        lines.append(f'%y{i} = tprog.call @block(%x{i}) at "site{i}" : !tprog.tensor')
    return "\n".join(lines)


def parse_module(text: str) -> ModuleOp:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Tprog)
    return Parser(ctx, text).parse_module()


def call_types(module: ModuleOp) -> list[object]:
    return [
        op.results[0].type
        for op in module.ops
        if isinstance(op, CallOp | InstantiateOp)
    ]


def ir_pipeline(sites: int, passes: Sequence[ModulePass]) -> tuple[float, list[object]]:
    """CPU seconds of the passes on a freshly parsed module (parsing excluded)."""
    module = parse_module(module_text(sites))
    with Measured() as measured:
        for one in passes:
            one.apply(Context(), module)
    return measured.seconds, call_types(module)


def check_session(unrelated: int) -> tuple[Session, scheme.Scheme, Tensor]:
    """A session with ``unrelated`` open constraints, the scheme and an argument."""
    s = Session()
    for i in range(unrelated):
        s.pointwise(f"u{i}", s.leaf(f"p{i}"), s.leaf(f"q{i}", "...,3"))
    params = make_parameters(s)
    sc = trace_block(s, params)
    return s, sc, s.leaf("x", f"4|->{INPUT_WIDTH}")


def check_seconds(sc: scheme.Scheme, x: Tensor, checks: int) -> float:
    """CPU seconds per ``check``."""
    with Measured() as measured:
        for i in range(checks):
            scheme.check(sc, application=f"probe{i}", args=[x])
    return measured.seconds / checks


# --------------------------------------------------- nested and convolutional

EXAMPLE = Path(__file__).resolve().parents[1] / "examples/shapes/ocannl_functions.mlir"
FUNCTIONS_END = "// Two encoder layers, each with its own parameters."
LAYER_PARAMS = (
    ("w_q", "...->..."),
    ("w_k", "...->..."),
    ("w_v", "...->..."),
    ("w_o", "...->..."),
    ("g1", "...->..."),
    ("b1", "...->..."),
    ("w_up", "...->..."),
    ("b_up", "...->256"),
    ("w_down", "...->..."),
    ("g2", "...->..."),
    ("b2", "...->..."),
)
"""Each encoder layer's parameters as OCANNL writes them (``{ w }``: sizes
inferred from the applications; only the MLP's hidden width is given)."""

DECLARED_PARAMS = {
    "w_q": "64->4,16",
    "w_k": "64->4,16",
    "w_v": "64->4,16",
    "w_o": "4,16->64",
    "g1": "64",
    "b1": "64",
    "w_up": "64->256",
    "b_up": "256",
    "w_down": "256->64",
    "g2": "64",
    "b2": "64",
    "kernel1": "3,3,3->8",
    "bias1": "8",
    "kernel2": "3,3,8->8",
    "bias2": "8",
    "classes": "8->10",
}
"""The same parameters with their sizes declared (a model loaded with its
weights): what the first application infers for the inferred ones."""


def ocannl_functions() -> str:
    """The bundled blocks' functions and set_dims (the example up to its model)."""
    text = EXAMPLE.read_text("utf-8")
    assert FUNCTIONS_END in text, f"{EXAMPLE} changed: no {FUNCTIONS_END!r}"
    return text[: text.index(FUNCTIONS_END)]


PARAMS = ("inferred", "closed", "declared")
"""The generated modules' parameters: inferred (OCANNL's ``{ w }``) with
one closing at the end; inferred and closed (``tprog.close``) after the
first application of each model, as OCANNL's ``finish_inference`` runs
at a model's first forward; declared (``DECLARED_PARAMS``)."""


def nested_module_text(sites: int, params: str = "inferred") -> str:
    """The bundled blocks, an ``@encoder`` and a ``@cnn``, applied at ``sites`` sites.

    Three sites in four apply ``@encoder`` (two encoder blocks: attention,
    layer norms and an MLP, which call the linear layer), the fourth ``@cnn``
    (two convolution blocks, a mean over the positions, a linear
    classifier); each to data of its own batch size. ``params``: one of
    ``PARAMS``.
    """
    assert params in PARAMS, params
    declared = params == "declared"
    lines = [ocannl_functions()]
    for layer in range(2):
        for name, spec in LAYER_PARAMS:
            spec = DECLARED_PARAMS[name] if declared else spec
            lines.append(f'%l{layer}_{name} = tprog.param "{spec}"')
    for name in ("kernel1", "bias1", "kernel2", "bias2"):
        spec = DECLARED_PARAMS[name] if declared else "...->..."
        lines.append(f'%{name} = tprog.param "{spec}"')
    classes = DECLARED_PARAMS["classes"] if declared else "...->10"
    lines.append(f'%classes = tprog.param "{classes}"')
    block_args = [
        ", ".join(f"%l{layer}_{name}" for name, _ in LAYER_PARAMS) for layer in range(2)
    ]
    lines += [
        "tprog.func @encoder(%x: !tprog.tensor) -> !tprog.tensor {",
        f'  %h0 = tprog.call @encoder_block(%x, {block_args[0]}) at "layer0" : !tprog.tensor',
        f'  %h1 = tprog.call @encoder_block(%h0, {block_args[1]}) at "layer1" : !tprog.tensor',
        "  tprog.return %h1",
        "}",
        "tprog.func @cnn(%img: !tprog.tensor) -> !tprog.tensor {",
        '  %c1 = tprog.call @conv_block(%img, %kernel1, %bias1) at "conv1" : !tprog.tensor',
        '  %c2 = tprog.call @conv_block(%c1, %kernel2, %bias2) at "conv2" : !tprog.tensor',
        '  %m = tprog.einsum "... | h, w, c => ... | c" (%c2) : !tprog.tensor',
        '  %logits = tprog.call @linear(%m, %classes) at "classify" : !tprog.tensor',
        "  tprog.return %logits",
        "}",
    ]
    for i in range(sites):
        batch = batch_of(i)
        if i % 4 == 3:
            lines.append(f'%x{i} = tprog.leaf "{batch}|16,16,3"')
            lines.append(f'%y{i} = tprog.call @cnn(%x{i}) at "site{i}" : !tprog.tensor')
        else:
            lines.append(f'%x{i} = tprog.leaf "{batch},10|->64"')
            lines.append(
                f'%y{i} = tprog.call @encoder(%x{i}) at "site{i}" : !tprog.tensor'
            )
        if params == "closed" and i == min(sites - 1, 3):
            lines.append("tprog.close")  # both models applied once
    return "\n".join(lines)


def typed_results(module: ModuleOp) -> list[object]:
    """Every result type, module-level and in bodies, in walk order."""
    return [value.type for op in module.walk() for value in op.results]


def served_report(text: str) -> tuple[int, int, dict[str, int]]:
    """Call sites served by a scheme and re-evaluated under ``close-shapes``, and
    how many each reason for re-evaluating accounts for."""
    module = parse_module(text)
    CloseShapesPass(explain=True).apply(Context(), module)
    served = re_evaluated = 0
    reasons: dict[str, int] = {}
    for call in call_sites(module):
        status = call.attributes[SERVED_ATTR].data  # type: ignore[attr-defined]
        if status == BY_A_SCHEME:
            served += 1
        else:
            re_evaluated += 1
            reasons[status] = reasons.get(status, 0) + 1
    return served, re_evaluated, reasons


def pipeline_seconds(
    text: str, passes: Sequence[ModulePass]
) -> tuple[float, list[object]]:
    """CPU seconds of the passes on a freshly parsed module, and its types."""
    module = parse_module(text)
    with Measured() as measured:
        for one in passes:
            one.apply(Context(), module)
    return measured.seconds, typed_results(module)


def kb_per_site(make: object, low: int, high: int, calls: str) -> float:
    """The memory one more module-level site keeps while close-shapes runs (KB)."""
    peaks = []
    for sites in (low, high):
        module = parse_module(make(sites))  # type: ignore[operator]
        gc.collect()
        tracemalloc.start()
        CloseShapesPass(calls=calls).apply(Context(), module)  # type: ignore[arg-type]
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        del module
    return (peaks[1] - peaks[0]) / (high - low) / 1e3


def open_rows_of_an_application(sites: int, params: str) -> tuple[int, int, int]:
    """What the last ``@encoder`` application of the generated module leaves
    for the closing, measured just before it runs.

    Counts the row variables the application minted that are still open
    (each merged group once): all of them, those related through the
    application's own open rows to a row made before it (a parameter's
    open row: their values wait for the parameter's, which the closing
    decides from every site), and those related that way to the
    application's result rows (what the caller does with the result
    reaches them at the closing, so they cannot be shared with another
    application; see ``test_close_shapes_sharing``).
    """
    module = parse_module(nested_module_text(sites, params))
    evaluator = ProgramEvaluator(module, share_calls=True)
    session = evaluator.session
    ops = list(module.ops)
    last = [
        op
        for op in ops
        if isinstance(op, CallOp) and op.callee.string_value() == "encoder"
    ][-1]
    mark = 0
    for op in ops:
        if op is last:
            mark = session.var_mark()
        evaluator.evaluate_op(op, evaluator.top)
    solver = session.solver

    def group(var: RowVar) -> RowVar | None:
        return solver.norm_row(Row((), var)).var

    minted = {
        var
        for var_id in solver.row_bounds
        if var_id >= mark
        and (var := group(RowVar(var_id))) is not None
        and var.id >= mark
    }
    related: dict[RowVar, set[RowVar]] = {var: set() for var in minted}
    touching_older: list[RowVar] = []
    for var in minted:
        entry = session.row_entry(var)
        for other in (*(row.var for row in entry.glbs), *entry.res, *entry.opnd):
            found = None if other is None else group(other)
            if found is None:
                continue
            if found in related:
                related[var].add(found)
                related[found].add(var)
            elif found.id < mark:
                touching_older.append(var)
    result = evaluator.top.values[last.results[0]]
    result_rows = [group(row.var) for row in result.shape.rows() if row.var is not None]

    def reached(start: Sequence[RowVar | None]) -> int:
        seen = {var for var in start if var is not None and var in related}
        stack = list(seen)
        while stack:
            for other in related[stack.pop()]:
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
        return len(seen)

    return len(minted), reached(touching_older), reached(result_rows)


def nested_report(sites_list: list[int], memory_sites: list[int], repeat: int) -> None:
    """The nested and convolutional modules' section of the benchmark."""
    example = EXAMPLE.read_text("utf-8")
    served, re_evaluated, reasons = served_report(example)
    print("# nested and convolutional modules: call sites served by a scheme")
    print(
        f"bundled OCANNL blocks ({EXAMPLE.name}): {served + re_evaluated} call sites, "
        f"{served} served by a scheme, {re_evaluated} re-evaluated"
    )
    for why, count in reasons.items():
        print(f"  {count} {why}")
    print()
    print(
        "# generated modules (@encoder: two blocks of attention, layer norms, MLP,"
        " calling the linear layer; @cnn: two convolution blocks); parameters"
        " inferred (OCANNL's { w }), inferred and closed after each model's first"
        " application (OCANNL's finish_inference at its first forward), or declared"
    )
    header = (
        f"{'params':>8}  {'sites':>5}  {'call sites':>10}  {'served':>6}  "
        f"{'re-eval':>7}  {'re-evaluate s':>13}  {'shared s':>8}  {'ratio':>6}  "
        f"{'generalize s':>12}  {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for label in PARAMS:
        for sites in sites_list:
            text = nested_module_text(sites, label)
            served, re_evaluated, reasons = served_report(text)
            baseline, shared, schemes = [], [], []
            for _ in range(repeat):
                baseline.append(
                    pipeline_seconds(text, [CloseShapesPass(calls="re-evaluate")])
                )
                shared.append(pipeline_seconds(text, [CloseShapesPass()]))
                schemes.append(
                    pipeline_seconds(text, [GeneralizeShapesPass(), CloseShapesPass()])
                )
            assert baseline[0][1] == shared[0][1], (
                "shared calls and re-evaluation disagree"
            )
            assert baseline[0][1] == schemes[0][1], "schemes and re-evaluation disagree"
            base = min(s for s, _ in baseline)
            by_sharing = min(s for s, _ in shared)
            through = min(s for s, _ in schemes)
            print(
                f"{label:>8}  {sites:>5}  {served + re_evaluated:>10}  {served:>6}  "
                f"{re_evaluated:>7}  {base:>13.3f}  {by_sharing:>8.3f}  "
                f"{base / by_sharing:>5.1f}x  {through:>12.3f}  {base / through:>5.1f}x"
            )
            for why, count in reasons.items():
                print(f"          {count} {why}")
    low, high = memory_sites
    print()
    print(
        f"# memory a module-level site keeps (tracemalloc peak while close-shapes "
        f"runs, {low} and {high} sites), KB per site"
    )
    for label in PARAMS:

        def make(sites: int, params: str = label) -> str:
            return nested_module_text(sites, params)

        shared_kb = kb_per_site(make, low, high, "shared")
        re_kb = kb_per_site(make, low, high, "re-evaluate")
        print(
            f"{label:>8} parameters: calls=shared {shared_kb:.1f}, "
            f"calls=re-evaluate {re_kb:.1f}"
        )
    print()
    print(
        f"# rows the last @encoder application leaves open for the closing "
        f"({low} sites, calls=shared): all; related through them to a parameter's "
        f"open row; related through them to its result"
    )
    for label in PARAMS:
        left, waiting, to_result = open_rows_of_an_application(low, label)
        print(
            f"{label:>8} parameters: {left} open, {waiting} wait for a parameter, "
            f"{to_result} reach the result"
        )


def main() -> None:
    global PAUSE_GC
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--sites", type=counts_option, default=[10, 100, 1000])
    parser.add_argument("--sessions", type=counts_option, default=[100, 10000, 100000])
    parser.add_argument("--checks", type=positive_option, default=200)
    parser.add_argument("--repeat", type=positive_option, default=3)
    parser.add_argument("--gc", action="store_true", help="keep the cyclic GC on")
    parser.add_argument("--nested-sites", type=counts_option, default=[10, 100, 1000])
    parser.add_argument(
        "--memory-sites",
        type=counts_option,
        default=[100, 400],
        help="two site counts, the smaller first: KB per site is their difference's",
    )
    parser.add_argument(
        "--parts",
        default="engine,ir,check,nested",
        help="comma-separated: engine, ir, check, nested",
    )
    options = parser.parse_args()
    parts = set(options.parts.split(","))
    unknown = parts - {"engine", "ir", "check", "nested"}
    if unknown:
        parser.error(f"unknown part(s): {', '.join(sorted(unknown))}")
    low_high = options.memory_sites
    if len(low_high) != 2 or low_high[0] >= low_high[1]:
        parser.error(
            "--memory-sites: two site counts, the smaller first (e.g. 100,400)"
        )
    PAUSE_GC = not options.gc
    sites_list: list[int] = options.sites
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"# shape scheme benchmark: Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {load:.2f} at start; CPU seconds, "
        f"best of {options.repeat}; cyclic GC {'on' if options.gc else 'paused'} "
        f"in measured regions"
    )
    print(f"# function: {BLOCKS * 10} operations, {BLOCKS * 3} shared parameters")
    print()
    if "engine" in parts:
        print(
            "# engine (Python API): re-evaluating the body vs instantiating its scheme"
        )
        header = (
            f"{'sites':>6}  {'re-eval s':>9}  {'close s':>7}  {'schemes s':>9}  "
            f"{'close s':>7}  {'stage-1 x':>9}  {'total x':>7}"
        )
        print(header)
        print("-" * len(header))
        for sites in sites_list:
            # The two sides alternate, so that both see the same machine.
            re_runs, sc_runs = [], []
            for _ in range(options.repeat):
                re_runs.append(re_evaluation(sites))
                sc_runs.append(through_schemes(sites))
            assert re_runs[0][2] == sc_runs[0][2], "schemes and re-evaluation disagree"
            re1, re2 = min(r[0] for r in re_runs), min(r[1] for r in re_runs)
            sc1, sc2 = min(r[0] for r in sc_runs), min(r[1] for r in sc_runs)
            print(
                f"{sites:>6}  {re1:>9.3f}  {re2:>7.3f}  {sc1:>9.3f}  {sc2:>7.3f}  "
                f"{re1 / sc1:>8.1f}x  {(re1 + re2) / (sc1 + sc2):>6.1f}x"
            )
        print()
    if "ir" in parts:
        print(
            "# IR passes: close-shapes{calls=re-evaluate} vs generalize-shapes,close-shapes;"
            " shared: close-shapes as it runs by default (one trace per function)"
        )
        header = (
            f"{'sites':>6}  {'re-evaluate s':>14}  {'with schemes s':>14}  {'ratio':>6}"
            f"  {'shared s':>9}  {'ratio':>6}"
        )
        print(header)
        print("-" * len(header))
        for sites in sites_list:
            baseline, schemes, shared = [], [], []
            for _ in range(options.repeat):
                baseline.append(
                    ir_pipeline(sites, [CloseShapesPass(calls="re-evaluate")])
                )
                schemes.append(
                    ir_pipeline(sites, [GeneralizeShapesPass(), CloseShapesPass()])
                )
                shared.append(ir_pipeline(sites, [CloseShapesPass()]))
            assert baseline[0][1] == schemes[0][1], "schemes and re-evaluation disagree"
            assert baseline[0][1] == shared[0][1], (
                "shared calls and re-evaluation disagree"
            )
            base = min(t for t, _ in baseline)
            through = min(t for t, _ in schemes)
            by_sharing = min(t for t, _ in shared)
            print(
                f"{sites:>6}  {base:>14.3f}  {through:>14.3f}  {base / through:>5.1f}x"
                f"  {by_sharing:>9.3f}  {base / by_sharing:>5.1f}x"
            )
        print()
    if "check" in parts:
        print(f"# check: {options.checks} checks per run, sessions measured in turn")
        header = f"{'open constraints':>16}  {'ms per check':>12}  {'ratio':>6}"
        print(header)
        print("-" * len(header))
        sizes: list[int] = options.sessions
        sessions = [check_session(unrelated) for unrelated in sizes]
        before = sessions[0][0].state()
        times: list[list[float]] = [[] for _ in sizes]
        for _ in range(options.repeat):
            for index, (_, sc, x) in enumerate(sessions):
                times[index].append(check_seconds(sc, x, options.checks))
        assert sessions[0][0].state() == before, "check changed the session"
        reference = min(times[0])
        for unrelated, measured in zip(sizes, times, strict=True):
            seconds = min(measured)
            print(
                f"{unrelated:>16}  {seconds * 1000:>12.3f}  {seconds / reference:>5.2f}x"
            )
        print()
    if "nested" in parts:
        nested_report(options.nested_sites, options.memory_sites, options.repeat)


if __name__ == "__main__":
    main()
