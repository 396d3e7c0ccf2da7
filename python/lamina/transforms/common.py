"""Helpers shared by the L1 graph passes (dce, cse, fold, canonicalize, verify).

    from lamina.transforms.common import PassFailure, lamina_ops, constant_array
    for op in lamina_ops(module):           # pre-order, every lamina op under the module
        arr = constant_array(op.operands[0])  # numpy value of a lamina.constant operand, or None
    raise PassFailure("cannot do X", op.location)   # lamina-opt prints file:line:col: error: ...

A pass that fails should raise `PassFailure` with the offending op's location: the
`lamina-opt` driver prints every diagnostic it carries as `file:line:col: error: msg`.
Exceptions that carry a `location` (ir.Location) or an `op` attribute are located too.
"""
from __future__ import annotations

import functools
from typing import Iterator

import numpy as np
from mlir import ir


class PassFailure(Exception):
    """A pass (or the verifier) rejected the IR; carries located diagnostics.

    `diagnostics` is a list of (ir.Location | None, message); the first one is the
    exception's message and location.
    """

    def __init__(self, message: str, location: ir.Location | None = None,
                 diagnostics: list[tuple[ir.Location | None, str]] | None = None):
        super().__init__(message)
        self.message = message
        self.location = location
        self.diagnostics = diagnostics or [(location, message)]


def in_module_context(fn):
    """Run `fn(module, ...)` inside the module's context with a default location, so that
    passes also work when called directly (type constructors need both)."""
    @functools.wraps(fn)
    def wrapper(module, *args, **kwargs):
        ctx = module.context
        with ctx, ir.Location.unknown(ctx):
            return fn(module, *args, **kwargs)
    return wrapper


def reject_options(options: dict) -> None:
    """Fail on options a pass does not know (instead of ignoring a typo)."""
    if options:
        names = ", ".join(k.replace("_", "-") for k in options)
        raise PassFailure(f"unknown pass option(s): {names}")


# ---- walking ---------------------------------------------------------------------

def _root_operation(root) -> ir.Operation:
    return root.operation  # ir.Module, OpView and Operation all have .operation


def walk_ops(root) -> Iterator[ir.Operation]:
    """Every op nested under `root` (not root itself), pre-order, as ir.Operation.

    The list of a block's ops is taken before its ops are yielded, so the caller may
    erase the op it was just given (not others).
    """
    for region in _root_operation(root).regions:
        for block in region.blocks:
            for op in list(block.operations):
                op = op.operation
                yield op
                if len(op.regions):
                    yield from walk_ops(op)


def visit_ops(root, visit) -> None:
    """visit(op) for every op nested under `root` (walk_ops' order and safety)."""
    for op in walk_ops(root):
        visit(op)


ANY_OP = "!transform.any_op"


def transform_script(lines: list[str]) -> str:
    """A transform-dialect module whose `@__transform_main(%root)` runs `lines` (read-only
    on its payload) then yields: the wrapper every generated schedule shares."""
    body = "\n    ".join(lines)
    return (f'module attributes {{transform.with_named_sequence}} {{\n'
            f'  transform.named_sequence @__transform_main(%root: {ANY_OP} {{transform.readonly}}) {{\n'
            f'    {body}\n    transform.yield\n  }}\n}}\n')


def apply_transform_script(target, text: str, dump: bool = False) -> None:
    """Run the `@__transform_main` of the transform module `text` on `target` (an op);
    `dump` prints the script to stderr first."""
    import sys

    from mlir.dialects.transform import interpreter

    if dump:
        print(text, file=sys.stderr)
    schedule = ir.Module.parse(text, context=target.context)
    main = next(op for op in schedule.body.operations
                if ir.StringAttr(op.attributes["sym_name"]).value == "__transform_main")
    interpreter.apply_named_sequence(target.operation, main, schedule)


def symbol_name(op) -> str:
    """The `sym_name` of a symbol op (func.func, llvm.func, ...)."""
    return ir.StringAttr(op.attributes["sym_name"]).value


def is_lamina(op) -> bool:
    return op.name.startswith("lamina.")


def lamina_ops(root) -> list[ir.Operation]:
    """Every lamina op under `root`, in program order (a snapshot list)."""
    return [op for op in walk_ops(root) if is_lamina(op)]


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The op that defines `value`, or None for a block argument."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation


def defining_lamina(value: ir.Value, name: str) -> ir.Operation | None:
    """The defining op of `value` when it is `lamina.<name>`, else None."""
    op = defining_op(value)
    if op is not None and op.name == f"lamina.{name}":
        return op
    return None


def has_uses(value: ir.Value) -> bool:
    for _ in value.uses:
        return True
    return False


def rebuild_generic(op, result_types, ins, outs, maps, iterator_types=None, *, drop_attrs=(), block_args=None):
    """A linalg.generic built at `op` with new operands, maps and (optionally) iterator
    types, carrying `op`'s other attributes (but `drop_attrs`) and its body, moved in. The
    new block's arguments stand for `op`'s arguments listed in `block_args` (default: all,
    in order); the others must be unused. Replacing and erasing `op` is the caller's."""
    from mlir.dialects import linalg

    with ir.InsertionPoint(op), op.location:
        new = linalg.GenericOp(result_types, ins, outs, ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                               iterator_types if iterator_types is not None else op.attributes["iterator_types"])
    skip = {"indexing_maps", "iterator_types", "operandSegmentSizes", *drop_attrs}
    for i in range(len(op.attributes)):
        named = op.attributes[i]
        if named.name not in skip:
            new.attributes[named.name] = named.attr
    old_block = op.regions[0].blocks[0]
    old_args = list(old_block.arguments)
    order = list(range(len(old_args))) if block_args is None else list(block_args)
    block = new.regions[0].blocks.append(*[old_args[i].type for i in order])
    for i, arg in zip(order, block.arguments):
        old_args[i].replace_all_uses_with(arg)
    for body_op in list(old_block.operations):
        block.append(body_op.operation.detach_from_parent())
    return new


# ---- constants <-> numpy -----------------------------------------------------------

NUMPY_DTYPES = {
    "f64": np.float64, "f32": np.float32, "f16": np.float16,
    "i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8, "i1": np.bool_,
}  # bf16 has no numpy type: lamina-fold-constants leaves bf16 ops alone


def numpy_dtype(elem: ir.Type):
    """numpy dtype of an element type, or None (bf16, anything unusual)."""
    return NUMPY_DTYPES.get(str(elem))


def static_shape(t: ir.Type) -> list[int] | None:
    rt = ir.RankedTensorType(t)
    if not rt.has_static_shape:
        return None
    return [rt.get_dim_size(i) for i in range(rt.rank)]


def constant_attr(value: ir.Value) -> ir.DenseElementsAttr | None:
    """The `value` attribute of the lamina.constant defining `value`, or None."""
    op = defining_lamina(value, "constant")
    if op is None or "value" not in op.attributes:
        return None
    attr = op.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr):
        return None
    return attr


def _python_scalar(attr: ir.Attribute):
    if isinstance(attr, ir.BoolAttr):
        return bool(attr.value)
    if isinstance(attr, (ir.IntegerAttr, ir.FloatAttr)):
        return attr.value
    raise TypeError(f"unexpected splat element {attr}")


def splat_scalar(value: ir.Value) -> np.ndarray | None:
    """A 0-d numpy array when `value` is a splat lamina.constant of a numpy-able type."""
    attr = constant_attr(value)
    if attr is None or not attr.is_splat:
        return None
    dtype = numpy_dtype(ir.ShapedType(attr.type).element_type)
    if dtype is None:
        return None
    return np.array(_python_scalar(attr.get_splat_value()), dtype=dtype)


def constant_array(value: ir.Value) -> np.ndarray | None:
    """The numpy value (full shape) of a lamina.constant operand, or None.

    Splats come back as read-only broadcast views (no copy, whatever the size).
    """
    attr = constant_attr(value)
    if attr is None:
        return None
    st = ir.ShapedType(attr.type)
    dtype = numpy_dtype(st.element_type)
    shape = static_shape(attr.type)
    if dtype is None or shape is None:
        return None
    if attr.is_splat:
        return np.broadcast_to(np.array(_python_scalar(attr.get_splat_value()), dtype=dtype), shape)
    arr = np.array(attr)
    if arr.dtype != dtype or list(arr.shape) != shape:
        arr = arr.astype(dtype).reshape(shape)
    return arr


def _scalar_attr(elem: ir.Type, v) -> ir.Attribute:
    name = str(elem)
    if name == "i1":
        return ir.IntegerAttr.get(elem, 1 if bool(v) else 0)
    if name.startswith("i"):
        return ir.IntegerAttr.get(elem, int(v))
    return ir.FloatAttr.get(elem, float(v))


def splat_attr(scalar, result_type: ir.Type) -> ir.DenseElementsAttr:
    """A splat DenseElementsAttr of `result_type` (any size) with the value `scalar`."""
    rt = ir.RankedTensorType(result_type)
    value = np.asarray(scalar).astype(numpy_dtype(rt.element_type)).reshape(()).item()
    return ir.DenseElementsAttr.get_splat(rt, _scalar_attr(rt.element_type, value))


def dense_attr(array: np.ndarray, result_type: ir.Type) -> ir.DenseElementsAttr:
    """DenseElementsAttr of `result_type` holding `array` (a splat when all elements agree)."""
    rt = ir.RankedTensorType(result_type)
    dtype = numpy_dtype(rt.element_type)
    arr = np.asarray(array).astype(dtype, copy=False)
    flat = arr.reshape(-1)
    if flat.size >= 1 and (flat.size == 1 or bool(np.all(flat == flat[0]))):
        # Bitwise-equal elements only (NaN != NaN keeps NaN tensors dense, -0.0 == 0.0 is checked below).
        if flat.dtype.kind != "f" or bool(np.all(np.signbit(flat) == np.signbit(flat[0]))):
            return ir.DenseElementsAttr.get_splat(rt, _scalar_attr(rt.element_type, flat[0].item()))
    if dtype is np.bool_:
        return ir.DenseElementsAttr.get(np.ascontiguousarray(arr))  # i1 is inferred from the bool buffer
    return ir.DenseElementsAttr.get(np.ascontiguousarray(arr), type=rt)
