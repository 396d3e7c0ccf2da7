"""lamina-widen-low-precision (L2): inside a kernel, f16/bf16 values are computed in f32 and
rounded once, where they leave the kernel.

torch's type rules give every op on f16/bf16 tensors an f16/bf16 result, so an imported
chain `y = (x - mean) * rstd * w + b` rounds after every op. Eager's fused kernels and
Inductor compute such chains in f32 and round once when they store; lamina does the same
per kernel (the `lamina.kernel` labels lamina-fuse decided), so this pass runs after
lamina-fuse and before lamina-outline-kernels:

    %1 = "lamina.sub"(%x, %m) {lamina.kernel = 0} : (tensor<8xbf16>, tensor<1xbf16>) -> tensor<8xbf16>
    %2 = "lamina.mul"(%1, %r) {lamina.kernel = 0} : ...bf16
  becomes
    %x32 = "lamina.cast"(%x) {lamina.kernel = 0} : (tensor<8xbf16>) -> tensor<8xf32>
    ...
    %1 = "lamina.sub"(%x32, %m32) {lamina.kernel = 0, lamina.widened} : (...) -> tensor<8xf32>
    %2 = "lamina.mul"(%1, %r32) {lamina.kernel = 0, lamina.widened} : (...) -> tensor<8xf32>
    %3 = "lamina.cast"(%2) {lamina.kernel = 0, lamina.rounding} : (tensor<8xf32>) -> tensor<8xbf16>

Which ops are widened: arithmetic, unary math, where, reductions and the data movement
between them (exact either way). Data movement of values that are not widened yet (kernel
inputs: a weight's transpose feeding a matmul) stays in f16/bf16: half the bytes, and no
cast pair around it. Kept as they are, reading rounded values:
  * explicit casts (the user asked for that rounding: `.to(torch.bfloat16)`);
  * matmul (its operands are the rounded tensors, as eager's bf16 GEMM reads them);
  * comparisons (a widened compare could flip a discrete result against eager).
A rounded copy (`lamina.rounding` cast) is made for every widened value that something
other than a widened op of the same kernel reads: other kernels, the graph's results,
matmuls, casts, comparisons. Unused rounded copies are erased.
A `lamina.rounding` cast the importer made (an f32 op computing an f16/bf16 result, as a
0-d bf16 tensor times a Python float) is such a rounded copy too.
An op whose kernel label is missing (constants) is never widened; nor is an op whose
widened result type would not be the f32 form of its own (then it stays as it was).
"""
from __future__ import annotations

from mlir import ir

from ..dialect import infer, ops
from ..dialect import types as T
from .common import in_module_context, reject_options
from .fusion import KERNEL_ATTR, graph_functions, lamina_ops
from .registry import register_pass

WIDENED_ATTR = "lamina.widened"
ROUNDING_ATTR = "lamina.rounding"
LOW_PRECISION = ("f16", "bf16")

_DATA_MOVEMENT = {"reshape", "transpose", "slice", "concat", "broadcast_to", "index_select"}
_WIDEN = (set(infer.UNARY_OPS) | set(infer.ARITH_BINARY_OPS) | set(infer.REDUCE_OPS)
          | {"where", "softmax", "log_softmax"} | _DATA_MOVEMENT)


def _is_low(t: ir.Type) -> bool:
    return isinstance(t, ir.RankedTensorType) and str(t.element_type) in LOW_PRECISION


def _as_f32(t: ir.Type) -> ir.RankedTensorType:
    # the symbolic sizes stay: a reshape of a widened value needs them to lower
    return T.with_element_type(t, ir.F32Type.get())


def _copy_discardable(src: ir.Operation, dst: ir.Operation, spec_attrs) -> None:
    for i in range(len(src.attributes)):
        named = src.attributes[i]   # by position: a NamedAttribute
        if named.name not in spec_attrs:
            dst.attributes[named.name] = named.attr


def _cast(v: ir.Value, to: ir.Type, kernel: ir.Attribute, rounding: bool = False) -> ir.Value:
    r = ops.cast(v, result_type=to)
    r.owner.attributes[KERNEL_ATTR] = kernel
    if rounding:
        r.owner.attributes[ROUNDING_ATTR] = ir.UnitAttr.get()
    return r


def widen_function(func_op) -> int:
    """Widen the f16/bf16 ops of one graph function; returns how many were widened."""
    wide: dict = {}      # (low-precision value, kernel label) -> its f32 form in that kernel
    rounded = []
    count = 0
    for op in lamina_ops(func_op):
        name = op.name.removeprefix("lamina.")
        if KERNEL_ATTR not in op.attributes:
            continue
        kernel = op.attributes[KERNEL_ATTR]
        label = int(ir.IntegerAttr(kernel).value)
        if name == "cast" and ROUNDING_ATTR in op.attributes \
                and _is_low(op.results[0].type) and op.operands[0].type == _as_f32(op.results[0].type):
            # a rounding the importer made (an f32 computation of an f16/bf16 result): the
            # kernel's widened ops read the value before it
            wide[(op.results[0], label)] = op.operands[0]
            rounded.append(op.results[0])
            continue
        if name not in _WIDEN:
            continue
        if not _is_low(op.results[0].type):
            if op.results[0].type == _as_f32(op.results[0].type) and name not in _DATA_MOVEMENT:
                # an f32 op reading rounded values of its kernel (a 0-d bf16 tensor times a
                # Python float) reads them unrounded, as the widened ops do
                for i, v in enumerate(op.operands):
                    if (v, label) in wide and wide[(v, label)].type == _as_f32(v.type):
                        op.operands[i] = wide[(v, label)]
            continue
        if name in _DATA_MOVEMENT and not any((v, label) in wide for v in op.operands):
            continue  # moves rounded values only: as exact in f16/bf16, and half the bytes
        spec = ops.op_specs()[name]
        attrs = {k: op.attributes[k] for k in spec.attributes}
        with ir.InsertionPoint(op), op.location:
            operands = []
            for v in op.operands:
                if not _is_low(v.type):
                    operands.append(v)
                    continue
                if (v, label) not in wide:   # a kernel input (or a value of another kernel)
                    wide[(v, label)] = _cast(v, _as_f32(v.type), kernel)   # extf: exact
                operands.append(wide[(v, label)])
            want = _as_f32(op.results[0].type)
            given = want if name in infer.RESULT_GIVEN_OPS else None
            try:
                new = ops.build(name, operands, attrs, given)
            except (infer.ShapeError, TypeError, ValueError):
                continue
            if new.type != want:
                new.owner.erase()
                continue
        _copy_discardable(op, new.owner, spec.attributes)
        new.owner.attributes[WIDENED_ATTR] = ir.UnitAttr.get()
        with ir.InsertionPoint(op), op.location:
            copy = _cast(new, op.results[0].type, kernel, rounding=True)
        op.results[0].replace_all_uses_with(copy)
        op.erase()
        wide[(copy, label)] = new
        rounded.append(copy)
        count += 1
    for copy in rounded:
        if not any(True for _ in copy.uses):
            copy.owner.erase()
    return count


@in_module_context
def widen_low_precision(module: ir.Module) -> int:
    return sum(widen_function(f) for f in graph_functions(module))


@register_pass("lamina-widen-low-precision", level="L2",
               description="compute f16/bf16 ops in f32 inside each kernel (lamina.kernel), rounding once where values leave it")
def run(module: ir.Module, **options) -> None:
    reject_options(options)
    widen_low_precision(module)
