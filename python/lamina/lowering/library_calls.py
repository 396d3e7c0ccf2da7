"""lamina.library_callN -> a call of the routine on buffers, inside the tensor kernel:

    %a_buf = bufferization.to_buffer %a read_only : tensor<4x4xf32> to memref<4x4xf32, strided<[?, ?], offset: ?>>
    %out = memref.alloc() : memref<4x4xf32>
    func.call @lamina_library_<spec>(cast %a_buf, cast %out)     (unranked memrefs)
        {lamina.library_call = {callee, arguments, result}}
    %r = bufferization.to_tensor %out restrict writable : memref<4x4xf32> to tensor<4x4xf32>

one-shot bufferization keeps the buffers (to_buffer of a tensor is its buffer, `restrict`
says nothing else aliases the result), buffer deallocation frees %out after its last use.
The callee's symbol encodes its whole spec (dialect/library_callees.symbol), so a compiled
shared object loaded in another process knows what each call runs (codegen/library_calls.py
resolves it); the attribute on the call says the same readably (the cuda target reads it
and calls the routine in its launcher).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import bufferization, func, memref

from lamina.dialect import infer
from lamina.dialect.library_callees import symbol

from .to_linalg import _result_size, _st, lowering

CALL_ATTR = "lamina.library_call"


def _module_of(op: ir.Operation) -> ir.Operation:
    while op.name != "builtin.module":
        op = op.parent
    return op


def _declare(module_op: ir.Operation, name: str, n_args: int, elems: list[ir.Type]) -> None:
    body = module_op.regions[0].blocks[0]
    for o in body.operations:
        if "sym_name" in o.attributes and ir.StringAttr(o.attributes["sym_name"]).value == name:
            return
    with ir.InsertionPoint.at_block_begin(body), ir.Location.unknown():
        f = func.FuncOp(name, ir.FunctionType.get([ir.UnrankedMemRefType.get(e, None) for e in elems], []),
                        visibility="private")
        f.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()


def _any_layout(t: ir.RankedTensorType) -> ir.MemRefType:
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    layout = ir.StridedLayoutAttr.get(dyn, [dyn] * t.rank)
    return ir.MemRefType.get(t.shape, t.element_type, layout)


@lowering(*infer.LIBRARY_CALL_OPS)
def _lower_library_call(op: ir.Operation) -> ir.Value:
    attrs = {k: op.attributes[k] for k in ("callee", "arguments", "result")}
    result_type = ir.RankedTensorType(op.results[0].type)
    inputs = [_st(v) for v in op.operands]
    elems = [ir.RankedTensorType(v.type).element_type for v in inputs] + [result_type.element_type]
    spec = {"callee": ir.StringAttr(attrs["callee"]).value, "arguments": ir.StringAttr(attrs["arguments"]).value,
            "result": ir.IntegerAttr(attrs["result"]).value, "types": [str(e) for e in elems]}
    name = symbol(spec)
    _declare(_module_of(op), name, len(elems), elems)
    args = []
    for v in inputs:
        t = ir.RankedTensorType(v.type)
        buf = bufferization.to_buffer(_any_layout(t), v, read_only=True)
        args.append(memref.cast(ir.UnrankedMemRefType.get(t.element_type, None), buf))
    # (a symbolic result dim is allocated at the size its symbol has at run time)
    sizes = [_result_size(result_type, i) for i, d in enumerate(result_type.shape) if ir.ShapedType.is_dynamic_size(d)]
    out = memref.alloc(ir.MemRefType.get(result_type.shape, result_type.element_type), sizes, [])
    args.append(memref.cast(ir.UnrankedMemRefType.get(result_type.element_type, None), out))
    call = func.CallOp([], ir.FlatSymbolRefAttr.get(name), args)
    call.attributes[CALL_ATTR] = ir.DictAttr.get(attrs)
    return bufferization.to_tensor(result_type, out, restrict=True, writable=True)
