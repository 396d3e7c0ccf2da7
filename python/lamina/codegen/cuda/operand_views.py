"""lamina-gpu-operand-views (L5, cuda target): kernel outputs that are only a view of an
input (a transpose, a reshape, a slice: attention's K^T and head reshapes, which lamina's
target-neutral fusion puts in data-movement kernels of their own) and that only ever feed
contractions become torch views instead of copies: cuBLAS reads strided operands directly,
as Inductor hands its bmm strided views.

The reverse case, a graph output that is only a reshape of an intermediate (a head merge's
copy into the returned tensor, a flash-attention result reshaped to the caller's shape), is
not copied either: the intermediate's producer writes it straight into the output buffer,
seen in the intermediate's shape. Recorded as `lamina.output_sources = {"<output position>":
<input position>}`; conditions: the stored value is a chain of collapse / expand / reshape of
that input (same elements in the same order), and the input is an arena buffer that one
earlier kernel writes (not a view that kernel binds) and no other output takes in place.

The decision is recorded on the kernel as `lamina.view_outputs = {"<output position>":
"<torch expression of the kernel's arguments>"}`; lamina-to-triton then writes nothing for
those outputs, and the plan runner binds their slots to the expression (a kernel left with
no work is not launched). Conditions, checked on the graph function (lamina-kernel-abi form):

* the stored value is a chain of transpose / collapse / expand / reshape / static slices of
  one kernel input;
* every later use of the output buffer is a kernel argument used only as a contraction
  operand (directly or through such views) in that kernel, and it is not a graph output;
* the viewed input stays intact until the last such use: a graph input, or an arena buffer
  (static offset) that no call from the producer to the last consumer, inclusive, writes
  into (the memory plan only kept it alive until the producer).
"""
from __future__ import annotations

from mlir import ir

from ...lowering.tiling import _is_contraction
from . import attention
from .attention import keeps_every_dim, uncollapsed_batch
from .triton_emit import _Kernel, _KernelCodegen, _owner

VIEW_OUTPUTS = "lamina.view_outputs"
OUTPUT_SOURCES = "lamina.output_sources"
_VIEW_OPS = ("linalg.transpose", "tensor.collapse_shape", "tensor.expand_shape", "tensor.reshape", "tensor.extract_slice")
_RESHAPES = ("tensor.collapse_shape", "tensor.expand_shape", "tensor.reshape")


def _functions(module) -> dict:
    return {ir.StringAttr(op.attributes["sym_name"]).value: op for op in module.body.operations
            if op.operation.name == "func.func"}


def _graph(module):
    return next((op for op in module.body.operations
                 if op.operation.name == "func.func" and "lamina.graph" in op.attributes), None)


def _view_root(v: ir.Value, k: _Kernel):
    """The kernel argument `v` is a pure view of, or None."""
    while True:
        if v in k.tensor_of_arg:
            return k.tensor_of_arg[v]
        op = _owner(v)
        if op is None or op.name not in _VIEW_OPS:
            return None
        v = op.operands[0]


def _reshaped_arg(v: ir.Value, k: _Kernel):
    """The kernel argument `v` is only a reshape of (same elements, same order), or None."""
    while v not in k.tensor_of_arg:
        op = _owner(v)
        if op is None or op.name not in _RESHAPES:
            return None
        v = op.operands[0]
    return k.tensor_of_arg[v]


def _only_contraction_operand(v: ir.Value) -> bool:
    uses = list(v.uses)
    if not uses:
        return False
    for u in uses:
        op = u.owner.operation if hasattr(u.owner, "operation") else u.owner
        if _is_contraction(op):
            if u.operand_number > 1:       # the init: written, not a view to read
                return False
            continue
        if op.name in _VIEW_OPS and u.operand_number == 0 and _static_view(op) \
                and all(_only_contraction_operand(r) for r in op.results):
            continue
        return False
    return True


def _read_directly(t: ir.Value) -> bool:
    """Every use of `t` is a contraction operand, through shape ops that keep every dim."""
    for u in t.uses:
        op = u.owner.operation if hasattr(u.owner, "operation") else u.owner
        if _is_contraction(op):
            continue
        if keeps_every_dim(op) and _read_directly(op.results[0]):
            continue
        return False
    return True


def _static_view(op) -> bool:
    """A view op the consumer's contraction can express as a torch view of a strided tensor
    (lamina-to-triton's `_torch_view`: slices only with static offsets, sizes and strides);
    anything else would be materialized by a Triton program, which reads its argument as
    contiguous."""
    if op.name != "tensor.extract_slice":
        return True
    return all(x >= 0 and x != ir.ShapedType.get_dynamic_size()
               for part in ("offsets", "sizes", "strides")
               for x in ir.DenseI64ArrayAttr(op.attributes[f"static_{part}"]))


def _arena_range(v: ir.Value, arena: ir.Value):
    """[start, end) bytes of a `memref.view` of the arena at a static offset, else None."""
    op = _owner(v)
    if op is None or op.name != "memref.view" or op.operands[0] != arena:
        return None
    off = _owner(op.operands[1])
    t = ir.MemRefType(v.type)
    if off is None or off.name != "arith.constant" or not t.has_static_shape:
        return None
    start = ir.IntegerAttr(off.attributes["value"]).value
    nbytes = t.element_type.width // 8 if hasattr(t.element_type, "width") else 4
    for d in t.shape:
        nbytes *= d
    return start, start + nbytes


def operand_views(module, **options) -> None:
    graph = _graph(module)
    if graph is None:
        return
    funcs = _functions(module)
    block = graph.regions[0].blocks[0]
    args = list(block.arguments)
    arena = args[-1] if args and isinstance(args[-1].type, ir.MemRefType) and \
        str(ir.MemRefType(args[-1].type).element_type) == "i8" else None
    calls = [op for op in block.operations if op.operation.name == "func.call"]
    kernels = {}
    for c in calls:
        callee = ir.FlatSymbolRefAttr(c.attributes["callee"]).value
        kernels[c] = (funcs[callee], _Kernel(funcs[callee]))
    taken_in_place = set()   # intermediates an output buffer already holds
    for i, call in enumerate(calls):
        func, k = kernels[call]
        outs = {}
        sources = {}
        cg = None
        for v, out_arg in k.stores:
            root = _view_root(v, k)
            if root is None:
                continue
            m_out, m_src = call.operands[out_arg], call.operands[root]
            if m_out in args:                       # a graph output: must be a real tensor ...
                src = _reshaped_arg(v, k)
                if src is not None and call.operands[src] not in taken_in_place \
                        and _written_once(call.operands[src], calls[:i], calls, kernels, arena):
                    # ... which the intermediate's producer can write in place
                    sources[str(out_arg)] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), src)
                    taken_in_place.add(call.operands[src])
                continue
            consumers = []
            direct = True   # every consumer reads it as a contraction operand, no view between
            ok = True
            for u in m_out.uses:
                user = u.owner.operation if hasattr(u.owner, "operation") else u.owner
                if user == call.operation:
                    continue
                if user.name != "func.call":
                    ok = False
                    break
                j = next(n for n, c in enumerate(calls) if c.operation == user)
                _, ck = kernels[calls[j]]
                t = next((tv for tv, a in ck.tensor_of_arg.items() if a == u.operand_number), None)
                if t is None or not _only_contraction_operand(t):
                    ok = False
                    break
                direct &= _read_directly(t)
                consumers.append(j)
            if not ok or not consumers or min(consumers) <= i:
                continue
            if m_src not in args:                  # an arena buffer: intact until the last consumer?
                src = _arena_range(m_src, arena) if arena is not None else None
                if src is None:
                    continue
                for later in calls[i + 1:max(consumers) + 1]:
                    _, lk = kernels[later]
                    for _, o in lk.stores:
                        r = _arena_range(later.operands[o], arena)
                        if r is None or (r[0] < src[1] and src[0] < r[1]):
                            ok = False
                if not ok:
                    continue
            cg = cg or _KernelCodegen(func)
            expr = None
            owner = _owner(v)
            if direct and owner is not None and owner.name == "tensor.collapse_shape" and uncollapsed_batch(owner) \
                    and all(attention.match(kernels[calls[j]][1]) is not None for j in consumers):
                # a flash-attention program reads the batch dims with their strides: a head
                # split ([b, t, h, d] -> [b, h, t, d]) is not merged (that would be a copy)
                expr = cg._torch_view(owner.operands[0])
            expr = expr or cg._torch_view(v)
            if expr is None:
                continue
            outs[str(out_arg)] = ir.StringAttr.get(expr)
        if outs:
            func.attributes[VIEW_OUTPUTS] = ir.DictAttr.get(outs)
        if sources:
            func.attributes[OUTPUT_SOURCES] = ir.DictAttr.get(sources)


def _written_once(m: ir.Value, earlier: list, calls: list, kernels: dict, arena) -> bool:
    """`m` is an arena buffer that exactly one call writes, one of the `earlier` calls, and
    writes itself (not as a view it binds)."""
    if arena is None or _arena_range(m, arena) is None:
        return False
    writers = 0
    for c in calls:
        func, k = kernels[c]
        bound = view_outputs_of(func)
        for _, o in k.stores:
            if c.operands[o] == m:
                if o in bound or c not in earlier:
                    return False
                writers += 1
    return writers == 1


def view_outputs_of(func) -> dict[int, str]:
    """{kernel argument index of an output: torch expression of the kernel's arguments}."""
    if VIEW_OUTPUTS not in func.attributes:
        return {}
    d = ir.DictAttr(func.attributes[VIEW_OUTPUTS])
    return {int(name.name): ir.StringAttr(name.attr).value for name in d}


def output_sources_of(func) -> dict[int, int]:
    """{kernel argument index of an output: index of the input its producer writes into it}."""
    if OUTPUT_SOURCES not in func.attributes:
        return {}
    d = ir.DictAttr(func.attributes[OUTPUT_SOURCES])
    return {int(name.name): ir.IntegerAttr(name.attr).value for name in d}


def _register() -> None:
    from ...transforms.registry import register_pass

    register_pass("lamina-gpu-operand-views", level="L5",
                  description="cuda target: kernel outputs that are views of an input and only feed contractions "
                              "become torch views, not copies (lamina.view_outputs); graph outputs that are "
                              "reshapes of an intermediate are written in place by its producer "
                              "(lamina.output_sources)")(operand_views)


_register()
