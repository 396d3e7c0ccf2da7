"""Reading a kernel for Triton code generation: its arguments and stored results
(`_Kernel`), linalg indexing maps and iterators, constants and locations, and the small
string algebra the generated index expressions are built with (`_mul`, `_add`, ...).
"""
from __future__ import annotations

import math
import re

from mlir import ir

from ...lowering.tiling import _is_contraction
from ..conv_library import is_convolution


_TL_TYPES = {"f32": "tl.float32", "f16": "tl.float16", "bf16": "tl.bfloat16", "f64": "tl.float64",
             "i64": "tl.int64", "i32": "tl.int32", "i16": "tl.int16", "i8": "tl.int8", "i1": "tl.int1"}


class Unsupported(Exception):
    """The kernel uses something this code generator does not handle (the graph falls back)."""


class NestedReduction(Unsupported):
    """A reduction's result read per lane of another reduction (x.sum(-1).sum(), mode's
    counts of equal pairs): a program reduces over its lanes once, so `value` is computed
    into a temporary by a program of its own first (the emitter retries the group)."""

    def __init__(self, value):
        super().__init__("a reduction read at a lane-dependent index (nested reductions)")
        self.value = value


def _is_int(s: str) -> bool:
    return re.fullmatch(r"-?\d+", s) is not None


def _mul(a: str, b: str) -> str:
    if a == "0" or b == "0":
        return "0"
    if a == "1":
        return b
    if b == "1":
        return a
    if _is_int(a) and _is_int(b):
        return str(int(a) * int(b))
    return f"({a} * {b})"


def _add(a: str, b: str) -> str:
    if a == "0":
        return b
    if b == "0":
        return a
    if _is_int(a) and _is_int(b):
        return str(int(a) + int(b))
    return f"({a} + {b})"


def _prod(xs) -> str:
    out = "1"
    for x in xs:
        out = _mul(out, x)
    return out


def _elem(t: ir.Type) -> str:
    return str(t.element_type) if isinstance(t, ir.ShapedType) else str(t)


def _tl(elem: str) -> str:
    try:
        return _TL_TYPES[elem]
    except KeyError:
        raise Unsupported(f"element type {elem}") from None


def _float_literal(attr) -> str:
    v = ir.FloatAttr(attr).value
    if math.isnan(v):
        return 'float("nan")'
    if math.isinf(v):
        return 'float("inf")' if v > 0 else 'float("-inf")'
    return repr(float(v))


def _scalar_literal(attr, elem: str) -> str:
    if elem == "i1":
        return "1" if ir.IntegerAttr(attr).value else "0"
    if elem.startswith("i") or elem == "index":
        return str(ir.IntegerAttr(attr).value)
    return _float_literal(attr)


def _op_name_of(loc) -> str | None:
    """The ATen op and user source line a location names (the importer's
    `loc("op"("file":line:col))`), for comments in the generated code. The op is the graph
    node's name less its numbering (relu_1 -> relu): the same op reads the same in every
    layer of a model, so their programs keep one source (and one entry in Triton's cache)."""
    text = str(loc)
    m = re.match(r'loc\("([^"]+)"\(', text)
    f = re.search(r'"([^"]+)":(\d+):\d+', text)
    where = f"{f.group(1).rsplit('/', 1)[-1]}:{f.group(2)}" if f else None
    if m:
        op = re.sub(r"_\d+$", "", m.group(1))
        return f"{op}  ({where})" if where else op
    return where


class _Kernel:
    """Arguments, stored results and value definitions of one kernel function."""

    def __init__(self, func):
        self.func = func
        self.name = ir.StringAttr(func.attributes["sym_name"]).value
        self.block = func.regions[0].blocks[0]
        self.args = list(self.block.arguments)
        self.stores: list[tuple[ir.Value, int]] = []     # (tensor value, output arg index)
        self.tensor_of_arg: dict = {}                      # to_tensor result -> arg index
        for op in self.block.operations:
            name = op.operation.name
            if name == "bufferization.to_tensor" and op.operands[0] in self.args:
                self.tensor_of_arg[op.results[0]] = self.args.index(op.operands[0])
            elif name == "bufferization.materialize_in_destination":
                self.stores.append((op.operands[0], self.args.index(op.operands[1])))
        # contractions and convolutions run on the vendor libraries through torch (triton_emit)
        self.contractions = [op for op in self.block.operations if _is_contraction(op) or is_convolution(op)]
        # scatters (lowering/indirect.py's loops) run on torch's index_put_ / scatter_reduce_
        self.scatters = [op for op in self.block.operations
                         if op.operation.name == "scf.for" and "lamina.scatter" in op.operation.attributes]
        # sorting networks (lowering/sorting.py's loops) run on torch.sort(stable=True)
        self.sorts = [op for op in self.block.operations
                      if op.operation.name == "scf.for" and "lamina.argsort" in op.operation.attributes]
        # library calls (lowering/library_calls.py) run the routine through torch in the launcher
        self.library_calls = [op for op in self.block.operations
                              if op.operation.name == "func.call" and "lamina.library_call" in op.operation.attributes]

    def arg_name(self, i: int) -> str:
        return f"a{i}"

    def memref(self, i: int) -> ir.MemRefType:
        return ir.MemRefType(self.args[i].type)

    def contiguous(self, i: int) -> bool:
        return "strided" not in str(self.memref(i).layout)


def _owner(v: ir.Value):
    return v.owner.operation if isinstance(v, ir.OpResult) else None


def _result_index(v: ir.Value) -> int:
    return ir.OpResult(v).result_number


def _affine_results(m: ir.AffineMap):
    return list(m.results)


def _dim_pos(e) -> int | None:
    return ir.AffineDimExpr(e).position if isinstance(e, ir.AffineDimExpr) else None


def _const_val(e) -> int | None:
    return ir.AffineConstantExpr(e).value if isinstance(e, ir.AffineConstantExpr) else None


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _kinds(op) -> list[str]:
    return ["reduction" if "reduction" in str(a) else "parallel" for a in ir.ArrayAttr(op.attributes["iterator_types"])]


def _body_names(op) -> list[str]:
    """The ops of a linalg body, its yield left out."""
    return [o.operation.name for o in op.regions[0].blocks[0].operations if o.operation.name != "linalg.yield"]


def _is_identity(m: ir.AffineMap) -> bool:
    res = _affine_results(m)
    return len(res) == m.n_dims and all(_dim_pos(e) == i for i, e in enumerate(res))


def _readers(v: ir.Value) -> list:
    """The uses of `v` that read its elements (tensor.dim only reads its shape)."""
    return [u for u in v.uses if u.owner.name != "tensor.dim"]


def _cast_generic(op) -> bool:
    """An elementwise rounding or widening (truncf / extf) of one tensor, read at its own index."""
    return (op is not None and op.name == "linalg.generic" and len(op.operands) == 2
            and _body_names(op) in (["arith.truncf"], ["arith.extf"])
            and all(k == "parallel" for k in _kinds(op)) and all(_is_identity(m) for m in _maps(op)))


def _dense_constants(func) -> list:
    """The kernel's non-splat dense tensor constants, in block order (named k0, k1, ...):
    they become device tensors the programs read."""
    out = []
    for op in func.regions[0].blocks[0].operations:
        if op.operation.name == "arith.constant" and isinstance(op.attributes["value"], ir.DenseElementsAttr) \
                and not ir.DenseElementsAttr(op.attributes["value"]).is_splat:
            out.append(op)
    return out


def _expr_deps(e, loop_sets) -> set:
    """The output dims an affine expression of loop dims depends on."""
    deps = set()
    for tok in re.findall(r"d(\d+)", str(e)):
        deps |= loop_sets[int(tok)]
    return deps


def _slice_src_sets(op, sets, src_rank):
    """Dependency sets of an extract_slice's source dims (dropped unit dims: none)."""
    static_sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
    res_rank = len(sets)
    dropped = _dropped_dims(op, src_rank, res_rank, static_sizes)
    out, k = [], 0
    for j in range(src_rank):
        if j in dropped:
            out.append(set())
        else:
            out.append(sets[k])
            k += 1
    return out


def _dropped_dims(op, src_rank, res_rank, static_sizes) -> set:
    """Source dims a rank-reducing extract_slice drops: unit dims, leftmost first, until the
    ranks agree (MLIR's rank-reduction mask for the shapes lamina produces)."""
    dropped = set()
    extra = src_rank - res_rank
    for j in range(src_rank):
        if extra and static_sizes[j] == 1:
            dropped.add(j)
            extra -= 1
    if extra:
        raise Unsupported("a rank-reducing slice that drops a non-unit dim")
    return dropped


def _compensation_of(op, v) -> bool:
    """Whether `v` is the error term of a compensated sum (`lamina.accumulate =
    "compensated"`: results (sum, error)), which Triton's tree sums make zero."""
    return "lamina.accumulate" in op.attributes and len(op.results) == 2 and v == op.results[1] \
        and ir.StringAttr(op.attributes["lamina.accumulate"]).value == "compensated"


def row_dims_of(rows) -> list[int]:
    """The row dims of a row group: `rows` is how many dims lead, or their tuple
    (triton_emit._row_dims)."""
    return list(rows) if isinstance(rows, tuple) else list(range(rows))
