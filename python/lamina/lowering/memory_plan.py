"""lamina-plan-memory (L4): where every kernel result of a graph lives, decided by liveness.

On the outlined graph function (calls of kernels, then a return), each call gets

    %3:2 = call @g_kernel_1(%0, %2) {lamina.buffers = [{arena = 0 : i64, bytes = 4096 : i64},
                                                       {output = 0 : i64}]}

and the graph function `lamina.arena_bytes = N`. A result the graph returns is written
straight into the caller's output buffer `output = k` (k = its position among the distinct
kernel results of the return, in return order), so no copy follows the last kernel. Every
other result is a slice of one per-graph arena, at an offset that no buffer live at the
same time overlaps: a buffer is live from the call that writes it to the last call that
reads it, both included (a kernel reads its inputs while it writes its outputs, so a
buffer dying at call i is free again for results of call i + 1 onwards). Offsets are
first-fit in call order, aligned to ALIGNMENT bytes.

Symbolic sizes: a result of a symbolic size (`tensor<?x64xf32, ["s0"]>`) has `bytes`
and `arena` as expressions ("256*s0"), and its type in the entry (`type`, which
lamina-kernel-abi needs for the view once the types are lowered). Static buffers are
placed first-fit as above, in the arena's static part; after it come slots of symbolic
size, each holding buffers of one size expression whose live ranges do not meet, so
the offsets are sums of aligned slot sizes and hold for every value of the symbols.
`lamina.arena_bytes` is then an expression too; the runtime evaluates it per call.

With `view_lifetimes=1` (a target that may read a data-movement kernel's output as a view of
its input instead of a copy: the cuda target's lamina-gpu-operand-views) a kernel result that
is only a reshape / transpose / slice of one of the kernel's arguments keeps that argument's
buffer live as long as the result is: the view stays valid wherever the target uses it.

The plan is plain IR: `lamina-opt` prints it, a user may edit it, and lamina-kernel-abi
(which turns the graph into one native entry point taking the arena) checks an edited
plan with `verify_plan` before it trusts it (symbolic plans at sample symbol values).
"""
from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..dialect import symbols as S
from ..transforms.registry import register_pass

BUFFERS_ATTR = "lamina.buffers"
ARENA_ATTR = "lamina.arena_bytes"
ALIGNMENT = 64  # bytes: a cache line, and the widest vector load (AVX-512)


class MemoryPlanError(ValueError):
    """A memory plan (possibly edited by hand) that would let live buffers overlap."""


@dataclass
class Buffer:
    value: ir.Value
    call: int          # index of the call that writes it
    last_use: int      # index of the last call that reads it (>= call)
    bytes: int | str   # an expression (symbols.py) for a symbolic size
    offset: int | str | None = None   # arena offset; None for graph outputs
    output: int | None = None         # output position; None for arena buffers
    type: ir.Type | None = None       # the recorded (symbolic) type of an arena buffer
    layout: str | None = None         # "channels_last" (lamina-plan-layouts), None: contiguous


def _size_attr(v: int | str) -> ir.Attribute:
    return _i64(v) if isinstance(v, int) else ir.StringAttr.get(v)


def _size_value(a: ir.Attribute) -> int | str:
    return ir.StringAttr(a).value if isinstance(a, ir.StringAttr) else ir.IntegerAttr(a).value


def _i64(v: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v)


def byte_size(tensor_type: ir.Type) -> int | str:
    """Bytes of a tensor type: an int, or an expression of its symbols."""
    t = ir.RankedTensorType(tensor_type)
    dims = S.dims_of(t)
    if S.UNKNOWN in dims:
        raise NotImplementedError(f"memory planning needs static or symbolic sizes, got {t}")
    elem = t.element_type
    width = elem.width if hasattr(elem, "width") else ir.IntegerType(elem).width
    return S.product(dims + [max(1, (width + 7) // 8)])   # i1 is stored as a byte, as torch.bool is


def is_size_op(op) -> bool:
    """Scalar size computations in a graph function (symbol reads, index arithmetic)."""
    return all(isinstance(r.type, ir.IndexType) for r in op.results) and len(op.results) > 0


def _calls_and_return(graph_func):
    block = graph_func.regions[0].blocks[0]
    calls, ret = [], None
    for op in block.operations:
        op = op.operation
        if op.name == "func.call":
            calls.append(op)
        elif op.name == "func.return":
            ret = op
        elif not is_size_op(op):
            raise ValueError(f"graph function holds {op.name}; memory planning expects only calls, size "
                             "computations and a return (run lamina-outline-kernels first)")
    return calls, ret


_VIEW_OPS = ("lamina.reshape", "lamina.transpose", "lamina.slice")


def _view_sources(kernel_func) -> dict[int, int]:
    """{result position: argument position} for the results of an outlined kernel that are
    a chain of view ops of one of its arguments."""
    if kernel_func is None or not kernel_func.regions[0].blocks:
        return {}
    block = kernel_func.regions[0].blocks[0]
    ret = next((op for op in block.operations if op.operation.name == "func.return"), None)
    out = {}
    for pos, v in enumerate(ret.operands if ret is not None else []):
        while not isinstance(v, ir.BlockArgument):
            op = v.owner
            op = getattr(op, "operation", op)
            if op.name not in _VIEW_OPS:
                break
            v = op.operands[0]
        if isinstance(v, ir.BlockArgument):
            out[pos] = v.arg_number
    return out


def _extend_for_views(graph_func, calls, bufs: list[Buffer], index: dict) -> None:
    """A view result's source buffer lives as long as the view (latest calls first, so views
    of views carry their lifetime back)."""
    module_block = graph_func.operation.parent.regions[0].blocks[0] if graph_func.operation.parent else None
    funcs = {ir.StringAttr(op.attributes["sym_name"]).value: op for op in module_block.operations
             if op.operation.name == "func.func"} if module_block is not None else {}
    for c in reversed(calls):
        callee = ir.FlatSymbolRefAttr(c.attributes["callee"]).value
        for res_pos, arg_pos in _view_sources(funcs.get(callee)).items():
            src = c.operands[arg_pos]
            if src in index and c.results[res_pos] in index:
                b, view = bufs[index[src]], bufs[index[c.results[res_pos]]]
                b.last_use = max(b.last_use, view.last_use)


def buffers_of(graph_func, view_lifetimes: bool = False) -> list[Buffer]:
    """Every kernel result of the graph with its live range (call indices) and size."""
    calls, ret = _calls_and_return(graph_func)
    index = {}
    bufs: list[Buffer] = []
    for i, c in enumerate(calls):
        for r in c.results:
            index[r] = len(bufs)
            # after lamina-to-linalg the types lost their symbols: read_plan takes the
            # recorded `bytes` then
            bytes_ = None if S.UNKNOWN in S.dims_of(r.type) else byte_size(r.type)
            bufs.append(Buffer(r, i, i, bytes_))
    for i, c in enumerate(calls):
        for v in c.operands:
            if v in index:
                b = bufs[index[v]]
                b.last_use = max(b.last_use, i)
    if view_lifetimes:
        _extend_for_views(graph_func, calls, bufs, index)
    outputs = 0
    for v in ret.operands:
        if v in index and bufs[index[v]].output is None:
            bufs[index[v]].output = outputs
            outputs += 1
    return bufs


def _first_fit(bufs: list[Buffer]) -> int | str:
    placed: list[Buffer] = []
    arena = 0
    for b in bufs:
        if b.output is not None or not isinstance(b.bytes, int):
            continue
        live = sorted((p for p in placed if p.call <= b.last_use and b.call <= p.last_use), key=lambda p: p.offset)
        offset = 0
        for p in live:
            if offset + b.bytes <= p.offset:
                break
            offset = max(offset, _align(p.offset + p.bytes))
        b.offset = offset
        placed.append(b)
        arena = max(arena, offset + b.bytes)
    return _symbolic_slots(bufs, _align(arena))


def _symbolic_slots(bufs: list[Buffer], static_bytes: int) -> int | str:
    """Place buffers of symbolic size in slots after `static_bytes`; returns the arena size."""
    slots: list[tuple[str, list[Buffer]]] = []
    for b in bufs:
        if b.output is not None or isinstance(b.bytes, int):
            continue
        for size, members in slots:
            if size == b.bytes and all(not (p.call <= b.last_use and b.call <= p.last_use) for p in members):
                members.append(b)
                break
        else:
            slots.append((b.bytes, [b]))
    offset: int | str = static_bytes
    for size, members in slots:
        for b in members:
            b.offset = offset
        offset = S.combine("+", offset, align_expr(size))
    return offset


def align_expr(size: int | str) -> int | str:
    """`size` rounded up to ALIGNMENT, as an int or an expression."""
    if isinstance(size, int):
        return _align(size)
    return S.simplify(f"(({size}) + {ALIGNMENT - 1}) // {ALIGNMENT} * {ALIGNMENT}")


def _align(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def plan_graph(graph_func, view_lifetimes: bool = False) -> int | str:
    """Annotate the calls of one graph function with their buffers; returns the arena size."""
    bufs = buffers_of(graph_func, view_lifetimes)
    unknown = [b for b in bufs if b.bytes is None]
    if unknown:
        raise NotImplementedError(f"memory planning needs static or symbolic sizes, got {unknown[0].value.type}")
    arena = _first_fit(bufs)
    calls, _ = _calls_and_return(graph_func)
    by_value = {b.value: b for b in bufs}
    for c in calls:
        entries = []
        for r in c.results:
            b = by_value[r]
            if b.output is not None:
                entries.append(ir.DictAttr.get({"output": _i64(b.output)}))
            else:
                entry = {"arena": _size_attr(b.offset), "bytes": _size_attr(b.bytes)}
                if not isinstance(b.bytes, int) or not ir.RankedTensorType(r.type).has_static_shape:
                    # (symbolic dims: lamina-kernel-abi sizes the buffer's view from them; a
                    # static 0 beside a symbolic dim is 0 bytes and still such a view)
                    entry["type"] = ir.TypeAttr.get(r.type)
                entries.append(ir.DictAttr.get(entry))
        c.attributes[BUFFERS_ATTR] = ir.ArrayAttr.get(entries)
    graph_func.attributes[ARENA_ATTR] = _size_attr(arena)
    return arena


def read_plan(graph_func) -> tuple[list[Buffer], int]:
    """The plan recorded on a graph function (planning it first if it has none), verified."""
    if ARENA_ATTR not in graph_func.attributes:
        plan_graph(graph_func)
    bufs = buffers_of(graph_func)
    by_value = {b.value: b for b in bufs}
    calls, _ = _calls_and_return(graph_func)
    for c in calls:
        if BUFFERS_ATTR not in c.attributes:
            raise MemoryPlanError(f"{c.location}: call without {BUFFERS_ATTR} in a planned graph")
        entries = list(ir.ArrayAttr(c.attributes[BUFFERS_ATTR]))
        if len(entries) != len(c.results):
            raise MemoryPlanError(f"{c.location}: {BUFFERS_ATTR} has {len(entries)} entries for {len(c.results)} results")
        for r, e in zip(c.results, entries):
            d = ir.DictAttr(e)
            b = by_value[r]
            if "output" in d:
                if b.output is None or ir.IntegerAttr(d["output"]).value != b.output:
                    raise MemoryPlanError(f"{c.location}: output buffers must be the returned results in "
                                          f"return order (expected {b.output}, got {d['output']})")
            elif "arena" in d:
                if b.output is not None:
                    raise MemoryPlanError(f"{c.location}: a returned result must live in an output buffer, not the arena")
                b.offset = _size_value(d["arena"])
                if "bytes" in d:
                    b.bytes = _size_value(d["bytes"])
                if "type" in d:
                    b.type = ir.TypeAttr(d["type"]).value
                if "layout" in d:
                    b.layout = ir.StringAttr(d["layout"]).value
            else:
                raise MemoryPlanError(f"{c.location}: {BUFFERS_ATTR} entry {d} has neither `arena` nor `output`")
    arena = _size_value(graph_func.attributes[ARENA_ATTR])
    verify_plan(bufs, arena)
    return bufs, arena


# Symbol values at which a symbolic plan is checked (dynamo specializes 0 and 1).
_SAMPLES = (2, 3, 17, 64, 1000)


def verify_plan(bufs: list[Buffer], arena: int | str) -> None:
    """Raise MemoryPlanError if arena buffers that are live at the same time overlap (a
    symbolic plan: at each sample value of its symbols)."""
    symbolic = [x for b in bufs for x in (b.bytes, b.offset) if isinstance(x, str)]
    if isinstance(arena, str):
        symbolic.append(arena)
    if not symbolic:
        return _verify_numeric(bufs, arena)
    names = sorted(set().union(*(S.free_symbols(x) for x in symbolic)))
    for sample in _SAMPLES:
        env = {n: sample + i for i, n in enumerate(names)}  # distinct values per symbol

        def ev(x):
            return x if x is None or isinstance(x, int) else S.evaluate(x, env)
        try:
            concrete = [Buffer(b.value, b.call, b.last_use, ev(b.bytes), ev(b.offset), b.output) for b in bufs]
            size = ev(arena)
        except ZeroDivisionError:
            # not a value the symbols can take together (a reshape's -1 dim as s // (s // 3),
            # under dynamo's guard that 3 divides s): nothing to check at this sample
            continue
        if any(b.bytes is not None and b.bytes < 0 for b in concrete):
            # nor is one that makes a size negative (a convolution's output length s - 3 at
            # s = 2: the input is shorter than the kernel, which eager refuses)
            continue
        _verify_numeric(concrete, size)


def _verify_numeric(bufs: list[Buffer], arena: int) -> None:
    placed = [b for b in bufs if b.output is None]
    for b in placed:
        if b.offset < 0 or b.offset % ALIGNMENT or b.offset + b.bytes > arena:
            raise MemoryPlanError(f"buffer of {b.bytes} bytes at arena offset {b.offset} is misaligned "
                                  f"(alignment {ALIGNMENT}) or outside the arena of {arena} bytes")
    for i, a in enumerate(placed):
        for b in placed[i + 1:]:
            live_together = a.call <= b.last_use and b.call <= a.last_use
            disjoint = a.offset + a.bytes <= b.offset or b.offset + b.bytes <= a.offset
            if live_together and not disjoint and a.bytes and b.bytes:
                raise MemoryPlanError(f"arena buffers [{a.offset}, {a.offset + a.bytes}) and "
                                      f"[{b.offset}, {b.offset + b.bytes}) overlap while both are live "
                                      f"(calls {a.call}..{a.last_use} and {b.call}..{b.last_use})")


@register_pass("lamina-plan-memory", level="L4",
               description="place kernel results: returned ones in output buffers, the rest in one arena by liveness; "
                           "view_lifetimes=1: a view result keeps its source live")
def plan_memory(module: ir.Module, view_lifetimes=False, **options) -> None:
    from .kernel_abi import graph_functions  # kernel_abi imports this module

    for g in graph_functions(module):
        plan_graph(g, bool(int(view_lifetimes)))
