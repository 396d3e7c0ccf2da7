"""lamina-kernel-abi (L4): kernels become destination-passing functions on memrefs.

    func.func @g_kernel_0(%x: tensor<4x8xf32>) -> tensor<4x8xf32>
  becomes
    func.func @g_kernel_0(%x: memref<4x8xf32>, %out0: memref<4x8xf32>) attributes {llvm.emit_c_interface} {
      %t = bufferization.to_tensor %x restrict : memref<4x8xf32> to tensor<4x8xf32>
      ...
      bufferization.materialize_in_destination %r in restrict writable %out0 : (...) -> ()
      return
    }

so one-shot bufferization writes each result straight into a buffer the runtime
allocated with torch, and reads inputs in place from torch tensors (zero copy).
Inputs are contiguous (identity layout) unless the kernel argument carries
`lamina.layout = "strided"`, which gives a fully dynamic strided layout for torch
tensors that are views (transposed, sliced). A graph function still in the module is
replaced by its launch plan, kept readable as the module attribute `lamina.launch_plan`
(the pipeline reads the plan itself before lowering).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import bufferization, func

from ..transforms.registry import register_pass

LAYOUT_ATTR = "lamina.layout"


def memref_type(tensor_type: ir.Type, strided: bool = False) -> ir.MemRefType:
    t = ir.RankedTensorType(tensor_type)
    shape = [t.get_dim_size(i) for i in range(t.rank)]
    if strided and t.rank > 0:
        dyn = ir.ShapedType.get_dynamic_stride_or_offset()
        layout = ir.StridedLayoutAttr.get(dyn, [dyn] * t.rank)
        return ir.MemRefType.get(shape, t.element_type, layout=layout)
    return ir.MemRefType.get(shape, t.element_type)


def _arg_is_strided(func_op, index: int) -> bool:
    if "arg_attrs" not in func_op.attributes:
        return False
    attrs = ir.ArrayAttr(func_op.attributes["arg_attrs"])[index]
    d = ir.DictAttr(attrs)
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
        out_types = [memref_type(t) for t in ftype.results]
    first = list(block.operations)[0]
    ret = list(block.operations)[-1]
    with loc:
        new_inputs = [block.add_argument(t, loc) for t in in_types]
        outputs = [block.add_argument(t, loc) for t in out_types]
        with ir.InsertionPoint(first):
            for old, new, ttype in zip(list(block.arguments)[:n_in], new_inputs, ftype.inputs):
                as_tensor = bufferization.to_tensor(ttype, new, restrict=True)
                old.replace_all_uses_with(as_tensor)
        with ir.InsertionPoint(ret):
            for value, dest in zip(ret.operands, outputs):
                bufferization.materialize_in_destination(None, value, dest, restrict=True, writable=True)
            func.ReturnOp([])
        ret.erase()
    for _ in range(n_in):
        block.erase_argument(0)
    func_op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(in_types + out_types, []))
    if "arg_attrs" in func_op.attributes:
        del func_op.attributes["arg_attrs"]
    if "res_attrs" in func_op.attributes:
        del func_op.attributes["res_attrs"]
    func_op.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()


@register_pass("lamina-kernel-abi", level="L4",
               description="rewrite kernel functions (lamina.kernel) to destination-passing memref signatures for the runtime")
def kernel_abi(module: ir.Module, **options) -> None:
    # A graph function still here (lamina-opt replays) calls kernels by their tensor
    # signatures: record its launch plan on the module, then drop it, as the pipeline does.
    from ..runtime.compiled_graph import extract_launch_plan

    for op in list(module.body.operations):
        if op.operation.name == "func.func" and "lamina.graph" in op.attributes:
            plan = extract_launch_plan(op)
            module.operation.attributes["lamina.launch_plan"] = ir.StringAttr.get(plan.describe())
            op.operation.erase()
    for func_op in kernel_functions(module):
        to_destination_passing(func_op)
