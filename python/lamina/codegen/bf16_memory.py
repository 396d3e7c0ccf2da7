"""bf16 vectors move through memory as i16 vectors (LLVM dialect, after the CPU pipeline).

arith-expand{include-bf16} computes bf16 conversions with integer ops (shift, round to
nearest even, NaN quieting) on i16/i32 vectors, then bitcasts to `vector<Nxbf16>` for the
store (and bitcasts a loaded `vector<Nxbf16>` to i16 before widening it). On x86 without
AVX-512 BF16, LLVM's type legalizer promotes every `bfloat` lane of such a vector to
`float` separately: the rounding above is scalarized lane by lane around the load or
store, ~5x slower than the f16 path (F16C). The bits are the same whatever the type, so
this step loads and stores the i16 vector instead and drops the bitcasts:

    %b = llvm.bitcast %i : vector<8xi16> to vector<8xbf16>      llvm.store %i, %p
    llvm.store %b, %p : vector<8xbf16>, !llvm.ptr          ->    : vector<8xi16>, !llvm.ptr

    %v = llvm.load %p : !llvm.ptr -> vector<8xbf16>             %v = llvm.load %p
    %i = llvm.bitcast %v : vector<8xbf16> to vector<8xi16>  ->    : !llvm.ptr -> vector<8xi16>

(masked loads and stores likewise, with the pass-through value bitcast). Scalar bf16 loads and
stores too: LLVM's vectorizers otherwise make bf16 vectors of a kernel's scalar copy and fill
loops, which x86 without AVX-512 BF16 cannot always legalize (a bf16 convolution's backward
aborted its compile worker). Loads and stores of other types are left alone.
"""
from __future__ import annotations

from mlir import ir

from ..transforms.registry import register_pass

# op name -> (index of the stored value operand, or None for loads)
_MEMORY_OPS = {"llvm.load": None, "llvm.store": 0, "llvm.intr.masked.load": None, "llvm.intr.masked.store": 0}


def _bf16_vector(t: ir.Type) -> bool:
    """A bf16 vector, or a bf16 scalar: LLVM's vectorizers turn loops of scalar bf16 loads
    and stores (a kernel's copies and fills) into bf16 vectors it cannot legalize on x86
    ("Do not know how to soft promote this operator's operand", scalar_to_vector v32bf16:
    a bf16 convolution's backward aborted its compile worker); as i16 they are plain moves."""
    return isinstance(t, ir.BF16Type) or (isinstance(t, ir.VectorType) and isinstance(t.element_type, ir.BF16Type))


def _as_i16(t: ir.Type) -> ir.Type:
    if isinstance(t, ir.BF16Type):
        return ir.IntegerType.get_signless(16)
    v = ir.VectorType(t)
    if v.scalable:
        return ir.VectorType.get(v.shape, ir.IntegerType.get_signless(16), scalable=v.scalable_dims)
    return ir.VectorType.get(v.shape, ir.IntegerType.get_signless(16))


def _bitcast(value: ir.Value, to: ir.Type) -> ir.Value:
    return ir.Operation.create("llvm.bitcast", results=[to], operands=[value]).result


def _clone_with(op: ir.Operation, operands: list[ir.Value], results: list[ir.Type]) -> ir.Operation:
    attrs = {op.attributes[i].name: op.attributes[i].attr for i in range(len(op.attributes))}
    return ir.Operation.create(op.name, results=results, operands=operands, attributes=attrs)


def bf16_memory_as_i16(module: ir.Module | ir.Operation) -> int:
    """Rewrite bf16-vector loads and stores of an LLVM-dialect module; returns the count."""
    root = module.operation if isinstance(module, ir.Module) else module
    found: list[ir.Operation] = []

    def collect(o):
        if o.name in _MEMORY_OPS:
            found.append(o)
        return ir.WalkResult.ADVANCE

    root.walk(collect)
    count = 0
    for op in found:
        value_index = _MEMORY_OPS[op.name]
        if value_index is None:  # a load
            if not _bf16_vector(op.results[0].type):
                continue
            bf16_type = op.results[0].type
            with ir.InsertionPoint(op), op.location:
                # a masked load's pass-through value is a bf16 vector too
                operands = [_bitcast(v, _as_i16(v.type)) if _bf16_vector(v.type) else v for v in op.operands]
                load = _clone_with(op, operands, [_as_i16(bf16_type)])
                as_bf16 = None
                for use in list(op.results[0].uses):
                    user = use.owner
                    if user.name == "llvm.bitcast" and user.results[0].type == load.results[0].type:
                        user.results[0].replace_all_uses_with(load.results[0])
                        user.erase()
                    else:
                        if as_bf16 is None:
                            as_bf16 = _bitcast(load.results[0], bf16_type)
                        user.operands[use.operand_number] = as_bf16
            op.erase()
        else:  # a store: the value is operand `value_index`
            value = op.operands[value_index]
            if not _bf16_vector(value.type):
                continue
            owner = value.owner.operation if isinstance(value.owner, ir.OpView) else value.owner
            with ir.InsertionPoint(op), op.location:
                if isinstance(owner, ir.Operation) and owner.name == "llvm.bitcast" and \
                        owner.operands[0].type == _as_i16(value.type):
                    bits = owner.operands[0]
                else:
                    bits = _bitcast(value, _as_i16(value.type))
                op.operands[value_index] = bits
            if isinstance(owner, ir.Operation) and owner.name == "llvm.bitcast" and not list(owner.results[0].uses):
                owner.erase()
        count += 1
    return count


@register_pass("lamina-bf16-memory-as-i16", level="L5",
               description="load and store bf16 vectors as i16 vectors (LLVM dialect): no per-lane bf16 legalization")
def bf16_memory_as_i16_pass(module: ir.Module, **options) -> None:
    bf16_memory_as_i16(module)
