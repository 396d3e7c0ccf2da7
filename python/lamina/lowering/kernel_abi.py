"""lamina-kernel-abi (L4): kernels become destination-passing functions on memrefs.

    func.func @g_kernel_0(%x: tensor<4x8xf32>) -> tensor<4x8xf32>
  becomes
    func.func @g_kernel_0(%x: memref<4x8xf32>, %out0: memref<4x8xf32>) attributes {llvm.emit_c_interface} {
      %t = bufferization.to_tensor %x restrict : memref<4x8xf32> to tensor<4x8xf32>
      ...
      bufferization.materialize_in_destination %r in restrict writable %out0 : (...) -> ()
      return
    }

so one-shot bufferization writes each result straight into a buffer it is given, and
reads inputs in place (zero copy). Inputs are contiguous (identity layout) unless the
argument carries `lamina.layout = "strided"`, which gives a fully dynamic strided layout
for torch tensors that are views (transposed, sliced).

The graph function becomes the one native entry point of the compiled graph, following
its memory plan (lamina-plan-memory, planned here if the IR has none):

    func.func @g(%a: memref<4x8xf32>, %out0: memref<4x8xf32>, %arena: memref<128xi8>)
        attributes {lamina.graph, lamina.arena_bytes = 128, llvm.emit_c_interface} {
      %c0 = arith.constant 0 : index
      %t = memref.view %arena[%c0][] : memref<128xi8> to memref<4x8xf32>
      call @g_kernel_0(%a, %t) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
      call @g_kernel_1(%t, %out0) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
      return
    }

Its arguments are the graph's inputs, one output buffer per distinct kernel result it
returns (the runtime allocates those; results that are graph inputs are copied by the
runtime), and the arena. Kernels become private functions the entry calls natively, so a
graph call is one foreign call. A graph input marked strided makes every kernel argument
it feeds strided too.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import bufferization, func, memref

from ..dialect import symbols as S
from ..dialect import types as T
from ..transforms.registry import register_pass
from .memory_plan import read_plan

LAYOUT_ATTR = "lamina.layout"


def memref_type(tensor_type: ir.Type, strided: bool = False) -> ir.Type:
    """The memref a tensor argument becomes (other types, e.g. a symbol's `index`, stay)."""
    if not isinstance(tensor_type, ir.RankedTensorType):
        return tensor_type
    t = ir.RankedTensorType(tensor_type)
    shape = [t.get_dim_size(i) for i in range(t.rank)]
    if strided and t.rank > 0:
        dyn = ir.ShapedType.get_dynamic_stride_or_offset()
        layout = ir.StridedLayoutAttr.get(dyn, [dyn] * t.rank)
        return ir.MemRefType.get(shape, t.element_type, layout=layout)
    return ir.MemRefType.get(shape, t.element_type)


def _arg_is_strided(func_op, index: int, kind: str = "arg_attrs") -> bool:
    """Argument (or, kind="res_attrs", result) `index` is marked `lamina.layout = "strided"`:
    a strided memref (a torch view; lamina-plan-layouts: a buffer laid out otherwise)."""
    if kind not in func_op.attributes:
        return False
    d = ir.DictAttr(ir.ArrayAttr(func_op.attributes[kind])[index])
    return LAYOUT_ATTR in d and ir.StringAttr(d[LAYOUT_ATTR]).value == "strided"


def kernel_functions(module: ir.Module):
    return [op for op in module.body.operations
            if op.operation.name == "func.func" and "lamina.kernel" in op.attributes]


def to_destination_passing(func_op) -> None:
    block = func_op.regions[0].blocks[0]
    ftype = ir.FunctionType(ir.TypeAttr(func_op.attributes["function_type"]).value)
    n_in = len(ftype.inputs)
    loc = func_op.location
    with loc:
        in_types = [memref_type(t, _arg_is_strided(func_op, i)) for i, t in enumerate(ftype.inputs)]
        out_types = [memref_type(t, _arg_is_strided(func_op, k, "res_attrs")) for k, t in enumerate(ftype.results)]
    first = list(block.operations)[0]
    ret = list(block.operations)[-1]
    with loc:
        new_inputs = [block.add_argument(t, loc) for t in in_types]
        outputs = [block.add_argument(t, loc) for t in out_types]
        with ir.InsertionPoint(first):
            for old, new, ttype in zip(list(block.arguments)[:n_in], new_inputs, ftype.inputs):
                if isinstance(ttype, ir.RankedTensorType):
                    old.replace_all_uses_with(bufferization.to_tensor(ttype, new, restrict=True))
                else:
                    old.replace_all_uses_with(new)
        with ir.InsertionPoint(ret):
            for value, dest in zip(ret.operands, outputs):
                bufferization.materialize_in_destination(None, value, dest, restrict=True, writable=True)
            func.ReturnOp([])
        ret.erase()
    for _ in range(n_in):
        block.erase_argument(0)
    func_op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(in_types + out_types, []))
    symbol_attrs = _symbol_arg_attrs(func_op, len(in_types) + len(out_types))
    if "arg_attrs" in func_op.attributes:
        del func_op.attributes["arg_attrs"]
    if "res_attrs" in func_op.attributes:
        del func_op.attributes["res_attrs"]
    func_op.attributes["arg_attrs"] = _with_noalias(symbol_attrs, in_types + out_types)
    func_op.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()


def _with_noalias(symbol_attrs, types) -> ir.ArrayAttr:
    """`llvm.noalias` on every memref argument of a kernel: a kernel writes only its output
    buffers, which never overlap its inputs or each other (fresh outputs; arena slices the
    memory plan keeps apart while live), and inputs are only read, so LLVM may keep loaded
    values (a row's mean, an eps argument) in registers across the stores of a loop."""
    old = list(ir.ArrayAttr(symbol_attrs)) if symbol_attrs is not None else [ir.DictAttr.get({})] * len(types)
    out = []
    for d, t in zip(old, types):
        entries = {a.name: a.attr for a in ir.DictAttr(d)}
        if isinstance(t, ir.MemRefType):
            entries["llvm.noalias"] = ir.UnitAttr.get()
        out.append(ir.DictAttr.get(entries))
    return ir.ArrayAttr.get(out)


def graph_functions(module: ir.Module):
    return [op for op in module.body.operations
            if op.operation.name == "func.func" and "lamina.graph" in op.attributes]


def mark_strided_kernel_args(module: ir.Module, graph_func) -> None:
    """Kernel arguments fed by a strided graph input take a strided memref too."""
    block = graph_func.regions[0].blocks[0]
    strided = {block.arguments[i] for i in range(len(block.arguments)) if _arg_is_strided(graph_func, i)}
    if not strided:
        return
    kernels = {ir.StringAttr(k.attributes["sym_name"]).value: k for k in kernel_functions(module)}
    for op in block.operations:
        if op.operation.name != "func.call":
            continue
        kernel = kernels[ir.FlatSymbolRefAttr(op.attributes["callee"]).value]
        for j, v in enumerate(op.operands):
            if v in strided:
                S.set_argument_attr(kernel, j, LAYOUT_ATTR, ir.StringAttr.get("strided"))


def graph_to_entry(graph_func, kernels: dict | None = None) -> None:
    """The outlined graph (calls on tensors) -> the native entry (calls on memrefs, see above).

    Symbolic sizes: the entry takes the graph's `index` arguments as they are, reads the
    sizes of inputs it needs (`tensor.dim` -> `memref.dim`), and computes the arena offsets
    and the views' sizes of symbolic buffers from them; the arena is then `memref<?xi8>`."""
    kernels = kernels or {}
    bufs, arena_bytes = read_plan(graph_func)
    block = graph_func.regions[0].blocks[0]
    ftype = ir.FunctionType(ir.TypeAttr(graph_func.attributes["function_type"]).value)
    n_in = len(ftype.inputs)
    loc = graph_func.location
    ops = [op.operation for op in block.operations]
    ret = ops[-1]
    outputs = sorted((b for b in bufs if b.output is not None), key=lambda b: b.output)
    by_value = {b.value: b for b in bufs}
    with loc:
        in_types = [memref_type(t, _arg_is_strided(graph_func, i)) for i, t in enumerate(ftype.inputs)]
        out_types = [memref_type(b.value.type) for b in outputs]
        arena_type = ir.MemRefType.get([arena_bytes if isinstance(arena_bytes, int) else T.DYNAMIC],
                                       ir.IntegerType.get_signless(8))
        new_inputs = [block.add_argument(t, loc) for t in in_types]
        out_args = [block.add_argument(t, loc) for t in out_types]
        arena = block.add_argument(arena_type, loc)
    memref_of = dict(zip(list(block.arguments)[:n_in], new_inputs))
    for old, new in memref_of.items():
        if not isinstance(old.type, ir.RankedTensorType):
            old.replace_all_uses_with(new)
    for op in ops[:-1]:
        if op.name == "tensor.dim":  # a symbol read off a graph input
            with ir.InsertionPoint(op), op.location:
                d = memref.dim(memref_of[op.operands[0]], op.operands[1])
                if S.SYMBOL_ATTR in op.attributes:
                    d.owner.attributes[S.SYMBOL_ATTR] = op.attributes[S.SYMBOL_ATTR]
            op.results[0].replace_all_uses_with(d)
            op.erase()
    ops = [op.operation for op in block.operations]  # the tensor.dim ops are gone
    symbols = {name: memref_of.get(v, v) for name, v in S.symbol_values(graph_func).items()}
    for call in ops[:-1]:
        if call.name != "func.call":
            continue
        with ir.InsertionPoint(call), call.location:
            dests = []
            for r in call.results:
                b = by_value[r]
                if b.output is not None:
                    dest = out_args[b.output]
                else:
                    offset = S.materialize(b.offset, symbols)
                    sizes = [] if b.type is None else [
                        S.materialize(d, symbols) for d in S.dims_of(b.type) if isinstance(d, str)]
                    dest = memref.view(memref_type(r.type), arena, offset, sizes)
                memref_of[r] = dest
                dests.append(dest)
            operands = [memref_of.get(v, v) for v in call.operands] + dests
            callee = kernels.get(ir.FlatSymbolRefAttr(call.attributes["callee"]).value)
            if callee is not None:   # a strided kernel argument takes a cast of a contiguous buffer
                want = ir.FunctionType(ir.TypeAttr(callee.attributes["function_type"]).value).inputs
                operands = [memref.cast(t, x) if isinstance(t, ir.MemRefType) and x.type != t else x
                            for x, t in zip(operands, want)]
            func.CallOp([], ir.FlatSymbolRefAttr(call.attributes["callee"]), operands)
    with ir.InsertionPoint(ret), loc:
        func.ReturnOp([])
    ret.erase()
    for call in reversed(ops[:-1]):
        if call.name == "func.call":
            call.erase()
    for _ in range(n_in):
        block.erase_argument(0)
    graph_func.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(in_types + out_types + [arena_type], []))
    symbol_attrs = _symbol_arg_attrs(graph_func, n_in + len(out_types) + 1)
    for name in ("arg_attrs", "res_attrs"):
        if name in graph_func.attributes:
            del graph_func.attributes[name]
    if symbol_attrs is not None:
        graph_func.attributes["arg_attrs"] = symbol_attrs
    graph_func.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()


def _symbol_arg_attrs(func_op, n_args: int):
    """The `lamina.symbol` and `lamina.dims` argument attributes, padded to `n_args` (None if
    there are none)."""
    if "arg_attrs" not in func_op.attributes:
        return None
    kept = []
    for d in ir.ArrayAttr(func_op.attributes["arg_attrs"]):
        d = ir.DictAttr(d)
        kept.append(ir.DictAttr.get({k: d[k] for k in (S.SYMBOL_ATTR, S.DIMS_ATTR) if k in d}))
    if not any(len(d) for d in kept):
        return None
    return ir.ArrayAttr.get(kept + [ir.DictAttr.get({})] * (n_args - len(kept)))


@register_pass("lamina-kernel-abi", level="L4",
               description="kernels (lamina.kernel) -> destination-passing memref functions; the graph -> "
                           "one native entry calling them, its buffers from the memory plan")
def kernel_abi(module: ir.Module, **options) -> None:
    graphs = graph_functions(module)
    for g in graphs:
        mark_strided_kernel_args(module, g)
    for func_op in kernel_functions(module):
        to_destination_passing(func_op)
        if graphs:  # called natively by the entry: no C interface of its own
            del func_op.attributes["llvm.emit_c_interface"]
            func_op.attributes["sym_visibility"] = ir.StringAttr.get("private")
            # internal linkage: once LLVM inlines a kernel into the entry, its body is not
            # compiled a second time as an exported function
            func_op.attributes["llvm.linkage"] = ir.Attribute.parse("#llvm.linkage<internal>")
    kernels = {ir.StringAttr(k.attributes["sym_name"]).value: k for k in kernel_functions(module)}
    for g in graphs:
        graph_to_entry(g, kernels)
