"""lamina-to-linalg (L3): rewrite every lamina op into linalg / tensor / arith / math on tensors.

    from lamina.lowering.to_linalg import lower_to_linalg
    lower_to_linalg(module)            # in place; runs lamina-decompose first

or `lamina-opt --lamina-to-linalg`. The pass walks every function of the module, and each
lamina op is replaced, at its own location, by the ops one function of `_LOWERINGS` builds
(one function per op family):

* elementwise ops (unary, binary, where, cast) -> one `linalg.generic`; broadcasting is in
  the indexing maps (size-1 dims read index 0), operand element types are converted to the
  compute type inside the body (torch promotion: the types infer.py gave the result);
  f16/bf16 transcendental functions compute in f32, as torch's CPU kernels do.
* reductions -> `linalg.fill` (identity) + a `linalg.generic` with reduction iterators whose
  output map keeps reduced dims as constant 0 when keepdim; sums/products/means/variances
  of f16/bf16 accumulate in f32; var is two-pass (mean, then squared deviations).
  Float sums (reduce_sum, reduce_mean, both passes of var, hence softmax denominators and
  norms) over more than 2 elements, or a dynamic number, are compensated: the generic
  carries (s, c) and adds with TwoSum, the map after it reads s + c (see "additive float
  reductions" below; error ~2 ulp for any row length). The choice is the attribute
  `lamina.accumulate = "compensated" | "plain"` on the generic; the same attribute on the
  lamina op overrides it. max/min/prod and integer sums are plain.
* matmul -> `linalg.matmul` (2-D, or [..., M, K] x [K, N] by collapsing the batch dims into
  M), `linalg.batch_matmul` (equal batch dims, collapsed into one), or a contraction
  `linalg.generic` when batch dims broadcast. f16/bf16 accumulate in f32. A statically
  empty K is the fill of 0 alone (no contraction op: tiling asserts on a loop of size 0).
* data movement -> `tensor.collapse_shape`/`expand_shape`/`reshape`, `linalg.transpose`,
  `tensor.extract_slice`, `tensor.insert_slice`, a gather `linalg.generic` (index_select).
* constant -> `arith.constant`; iota -> `linalg.generic` on `linalg.index`.

Dynamic dims (`?`) get their sizes from `tensor.dim` of an operand, or, where no operand
has that size (a reshape's `s0*s1`, an iota of `s0`), from the kernel's symbol arguments
(`lamina.symbol`, see dialect/symbols.py) and the op's symbolic result type. Symbolic
encodings are dropped from every type first: the upstream passes take plain `?`. Static zero sizes give
valid IR and no work: a generic whose iteration space is statically empty is not built (its
results are its inits: the `tensor.empty` of a zero-element result, the fill of a reduction
over an empty dim; mean and var then divide 0 by 0 = nan, as torch does).

What the lowered IR needs downstream (beyond the DESIGN.md CPU pipeline): `convert-math-to-funcs`
(math.ipowi of integer pow; after bufferization, whose function-boundary analysis rejects
the cf-based helper it creates), and `convert-math-to-llvm,
convert-math-to-libm` before `convert-to-llvm` (math.erf has no LLVM intrinsic: it becomes a
call to libm's erff/erf, which the JIT resolves in-process). The pipelines are the assets
passes/cpu*.pipeline, run by lamina.codegen.cpu.lower_to_llvm (tests use its
function_boundary_pipeline_text for functions that return tensors).
"""
from __future__ import annotations

import math as _pymath
from typing import Callable, Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, math, tensor

from lamina.dialect import infer, ops
from lamina.dialect import symbols as S
from lamina.dialect import types as T
from lamina.transforms.decompose import decompose
from lamina.transforms.registry import register_pass

_LOWERINGS: dict[str, Callable[[ir.Operation], ir.Value]] = {}


def lowering(*names):
    def register(fn):
        for n in names:
            _LOWERINGS["lamina." + n] = fn
        return fn
    return register


# ---- small builders ---------------------------------------------------------------

def _rt(v_or_t) -> ir.RankedTensorType:
    t = v_or_t.type if isinstance(v_or_t, ir.Value) else v_or_t
    return ir.RankedTensorType(t)


def _shape(v_or_t) -> list:
    return T.shape_of(_rt(v_or_t))


def _name(t: ir.Type) -> str:
    return str(t)


def _is_float(t) -> bool:
    return T.is_float(t)


def _is_bool(t) -> bool:
    return _name(t) == "i1"


def _width(t) -> int:
    n = _name(t)
    return {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}.get(n) or ir.IntegerType(t).width


def _idx(i: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), i)


def _const(t: ir.Type, value) -> ir.Value:
    """A constant of element type `t` (float, int or bool), or a splat of a vector type."""
    if isinstance(t, ir.VectorType):
        et = ir.VectorType(t).element_type
        attr = ir.FloatAttr.get(et, float(value)) if _is_float(et) else ir.IntegerAttr.get(et, int(value))
        return arith.constant(t, ir.DenseElementsAttr.get_splat(t, attr))
    if _is_float(t):
        return arith.constant(t, float(value))
    if _is_bool(t):
        return arith.constant(t, ir.IntegerAttr.get(t, 1 if value else 0))
    return arith.constant(t, ir.IntegerAttr.get(t, int(value)))


# ---- bool storage: i1 tensors live in memory as i8 (torch.bool's byte layout) -------------
# MLIR 22.1.8 cannot lower memref<...xi1> loads/stores to LLVM (an assertion in
# MemRefToLLVM), so no i1 tensor may reach bufferization. While lowering, an i1 tensor is
# an i8 "storage" tensor wrapped in a marked builtin.unrealized_conversion_cast to the i1
# type (so unlowered lamina ops still see i1); the helpers below strip the wrapper, build
# on the i8 tensor and convert scalars in linalg bodies (trunci on read, extui on write).
# At the end, function arguments/results and calls use the i8 tensors, and the wrappers go.
_MARK = "lamina.bool_storage"


def _st_type(t: ir.Type) -> ir.Type:
    """Storage type of a tensor type: i1 elements are stored as i8."""
    rt = ir.RankedTensorType(t)
    if _name(rt.element_type) == "i1":
        return ir.RankedTensorType.get(rt.shape, ir.IntegerType.get_signless(8))
    return rt


def _wrap(storage: ir.Value, logical_type: ir.Type) -> ir.Value:
    """The logical (i1) view of an i8 storage tensor."""
    if storage.type == logical_type:
        return storage
    op = ir.Operation.create("builtin.unrealized_conversion_cast", results=[logical_type],
                             operands=[storage], attributes={_MARK: ir.UnitAttr.get()})
    return op.result


def _is_mark(op) -> bool:
    return op.name == "builtin.unrealized_conversion_cast" and _MARK in op.attributes


def _st(v: ir.Value) -> ir.Value:
    """The storage tensor behind a logical value."""
    if isinstance(v, ir.OpResult) and _is_mark(v.owner):
        return v.owner.operands[0]
    return v


def _one(x) -> ir.Value:
    """The single result of what a builder returned (Value, OpView or result list)."""
    if isinstance(x, ir.Value):
        return x
    if hasattr(x, "results"):
        return x.results[0]
    return x[0]


def _loop_index(d: int) -> ir.Value:
    return linalg.IndexOp(ir.IntegerAttr.get(ir.IntegerType.get_signless(64), d)).result


def _dim(v: ir.Value, i: int) -> ir.Value:
    return tensor.dim(_st(v), _idx(i))


# While one op is lowered: its result's symbolic dims and the enclosing function's symbol
# values (lower_op sets them; the encodings are gone from the types by then).
_current = {"dims": None, "operand_dims": None, "symbols": {}}


def _result_size(rt: ir.RankedTensorType, i: int) -> ir.Value:
    """Size of dynamic dim i of the op being lowered (`rt` is its result's shape), computed
    from the symbol its type recorded."""
    dims = _current["dims"]
    if dims is None or len(dims) != rt.rank or not isinstance(dims[i], str) or dims[i] == S.UNKNOWN:
        raise NotImplementedError(f"lamina-to-linalg: no size for dynamic dim {i} of {rt}")
    return S.materialize(dims[i], _current["symbols"])


def _empty(result_type: ir.RankedTensorType, dyn: Sequence[ir.Value | None] = ()) -> ir.Value:
    """tensor.empty of `result_type`; dyn[i] is the size Value of dynamic dim i (None:
    from the op's symbolic result type)."""
    rt = ir.RankedTensorType(result_type)
    sizes = []
    for i, s in enumerate(T.shape_of(rt)):
        if s is None:
            sizes.append(dyn[i] if i < len(dyn) and dyn[i] is not None else _result_size(rt, i))
        else:
            sizes.append(s)
    return _wrap(tensor.empty(sizes, ir.RankedTensorType(_st_type(rt)).element_type), rt)


def _maps_attr(maps: Sequence[ir.AffineMap]) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])


def _iters(kinds: Sequence[str]) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in kinds])


def _empty_domain(operands: Sequence[ir.Value], maps: Sequence[ir.AffineMap]) -> bool:
    """True if some loop has static extent 0 (an operand dim of size 0 read by a plain d_i)."""
    for v, m in zip(operands, maps):
        for size, e in zip(_shape(v), m.results):
            if size == 0 and isinstance(e, ir.AffineDimExpr):
                return True
    return False


def _generic(inputs: Sequence[ir.Value], inits: Sequence[ir.Value], maps: Sequence[ir.AffineMap],
             iterators: Sequence[str], body: Callable[..., Sequence[ir.Value]],
             attrs: dict | None = None) -> list[ir.Value]:
    """linalg.generic; body(*scalar_args) builds the region and returns the values to yield.
    A statically empty iteration space runs no body: the results are the inits themselves
    (a zero-element result is its tensor.empty, a reduction over an empty dim its fill)."""
    if _empty_domain(list(inputs) + list(inits), maps):
        return list(inits)
    st_in, st_init = [_st(v) for v in inputs], [_st(v) for v in inits]
    op = linalg.GenericOp([v.type for v in st_init], st_in, st_init, _maps_attr(maps), _iters(iterators))
    for k, v in (attrs or {}).items():
        op.attributes[k] = v
    logical = [_rt(v).element_type for v in list(inputs) + list(inits)]
    block = op.regions[0].blocks.append(*[_rt(v).element_type for v in st_in + st_init])
    with ir.InsertionPoint(block):
        args = [arith.trunci(t, a) if _name(t) == "i1" and _name(a.type) != "i1" else a
                for a, t in zip(block.arguments, logical)]
        vals = list(body(*args))
        vals = [arith.extui(_rt(o).element_type, v) if _name(v.type) == "i1" and _name(_rt(o).element_type) != "i1"
                else v for v, o in zip(vals, st_init)]
        linalg.YieldOp(vals)
    return [_wrap(r, i.type) for r, i in zip(op.results, inits)]


def _fill(value: ir.Value, init: ir.Value) -> ir.Value:
    st = _st(init)
    if 0 in _shape(st):  # nothing to fill
        return init
    if _name(value.type) == "i1" and _name(_rt(st).element_type) != "i1":
        value = arith.extui(_rt(st).element_type, value)
    return _wrap(_one(linalg.fill(value, outs=[st])), init.type)


def _bcast_map(in_shape, out_shape) -> ir.AffineMap:
    """Indexing map reading an operand of `in_shape` broadcast (numpy rules) to `out_shape`."""
    R, r = len(out_shape), len(in_shape)
    exprs = []
    for j, s in enumerate(in_shape):
        i = j + R - r
        if s == 1 and out_shape[i] != 1:
            exprs.append(ir.AffineConstantExpr.get(0))
        else:
            exprs.append(ir.AffineDimExpr.get(i))
    return ir.AffineMap.get(R, 0, exprs)


def _bcast_dyn_sizes(result_type, operands: Sequence[ir.Value]) -> list:
    """Sizes of the result's dynamic dims, from an operand whose aligned dim is dynamic."""
    out = T.shape_of(result_type)
    R = len(out)
    dyn = []
    for i, s in enumerate(out):
        if s is not None:
            dyn.append(None)
            continue
        found = None
        for v in operands:
            sh = _shape(v)
            j = i - (R - len(sh))
            if j >= 0 and sh[j] is None:
                found = _dim(v, j)
                break
        dyn.append(found)
    return dyn


def _elementwise(operands: Sequence[ir.Value], result_type, fn) -> ir.Value:
    """One linalg.generic over the broadcast shape; fn(*scalars) -> scalar of the result type."""
    rt = ir.RankedTensorType(result_type)
    out_shape = T.shape_of(rt)
    init = _empty(rt, _bcast_dyn_sizes(rt, operands))
    maps = [_bcast_map(_shape(v), out_shape) for v in operands] + [ir.AffineMap.get_identity(rt.rank)]
    return _generic(operands, [init], maps, ["parallel"] * rt.rank, lambda *a: [fn(*a[:-1])])[0]


# ---- scalar conversions (torch semantics) ---------------------------------------------

def convert(x: ir.Value, dst: ir.Type) -> ir.Value:
    """Convert scalar `x` to element type `dst` like torch's .to(dtype)."""
    src = x.type
    if _name(src) == _name(dst):
        return x
    if _is_bool(dst):
        if _is_float(src):
            return arith.cmpf(arith.CmpFPredicate.UNE, x, _const(src, 0.0))
        return arith.cmpi(arith.CmpIPredicate.ne, x, _const(src, 0))
    if _is_float(dst):
        if _is_bool(src):
            return arith.uitofp(dst, x)
        if not _is_float(src):
            return arith.sitofp(dst, x)
        if _width(src) == _width(dst):  # f16 <-> bf16
            return arith.truncf(dst, arith.extf(ir.F32Type.get(), x))
        if _width(dst) > _width(src):
            return arith.extf(dst, x)
        if _width(src) == 64 and _width(dst) == 16:
            # f64 -> f16/bf16 would call compiler-rt's __truncdfhf2/__truncdfbf2, which the
            # JIT does not find: go through f32 (torch rounds once; this may differ in 1 ulp).
            x = arith.truncf(ir.F32Type.get(), x)
        return arith.truncf(dst, x)
    # integer destination
    if _is_bool(src):
        return arith.extui(dst, x)
    if _is_float(src):
        return arith.fptosi(dst, x)
    return arith.extsi(dst, x) if _width(dst) > _width(src) else arith.trunci(dst, x)


def _upcast(t: ir.Type) -> ir.Type:
    """Type transcendental functions and accumulations compute in (f16/bf16 -> f32)."""
    return ir.F32Type.get() if _name(t) in ("f16", "bf16") else t


# ---- unary elementwise --------------------------------------------------------------------

def _unary_scalar(name: str, x: ir.Value, attrs: dict) -> ir.Value:
    t = x.type
    if not _is_float(t):
        if name == "neg":
            return arith.subi(_const(t, 0), x)
        if name == "abs":
            return x if _is_bool(t) else math.absi(x)
        if name == "relu":
            return x if _is_bool(t) else arith.maxsi(x, _const(t, 0))
        if name in ("floor", "ceil"):
            return x
        raise NotImplementedError(f"lamina-to-linalg: lamina.{name} of {t}")
    if name == "neg":
        return arith.negf(x)
    if name == "abs":
        return math.absf(x)
    if name == "relu":
        # select(x < 0, 0, x), not maximumf(x, 0): torch keeps relu(-0.0) = -0.0 (IEEE maximum
        # orders -0 below +0) and passes NaN through (x < 0 is false for NaN).
        zero = _const(t, 0.0)
        return arith.select(arith.cmpf(arith.CmpFPredicate.OLT, x, zero), zero, x)
    if name == "floor":
        return math.floor(x)
    if name == "ceil":
        return math.ceil(x)
    if name == "round":
        return math.roundeven(x)   # halves to even, as torch.round
    # Transcendental: compute in f32 for f16/bf16.
    ct = _upcast(t)
    y = convert(x, ct)
    one = lambda: _const(ct, 1.0)  # noqa: E731
    if name in ("exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "erf", "sqrt", "rsqrt") + infer.TRIG_UNARY:
        r = getattr(math, name)(y)
    elif name == "reciprocal":
        r = arith.divf(one(), y)
    elif name == "sigmoid":
        r = arith.divf(one(), arith.addf(one(), math.exp(arith.negf(y))))
    elif name == "gelu":
        half = arith.mulf(_const(ct, 0.5), y)
        if attrs.get("approximate", "none") == "tanh":
            x3 = arith.mulf(arith.mulf(y, y), y)
            inner = arith.mulf(_const(ct, _pymath.sqrt(2.0 / _pymath.pi)),
                               arith.addf(y, arith.mulf(_const(ct, 0.044715), x3)))
            # 0.5*x*(1 + tanh(u)) == x * sigmoid(2u): one expf instead of a libm tanhf, which
            # made gelu(tanh) 10x slower than eager; exp overflow gives x/inf = -0, the limit.
            del half
            r = arith.divf(y, arith.addf(one(), math.exp(arith.mulf(_const(ct, -2.0), inner))))
        else:
            r = arith.mulf(half, arith.addf(one(), math.erf(arith.mulf(y, _const(ct, _pymath.sqrt(0.5))))))
    else:
        raise NotImplementedError(f"lamina-to-linalg: lamina.{name}")
    return convert(r, t)


@lowering(*infer.UNARY_OPS)
def _lower_unary(op: ir.Operation) -> ir.Value:
    name = op.name.split(".", 1)[1]
    attrs = ops.attributes_of(op)
    rt = _rt(op.results[0])
    return _elementwise([op.operands[0]], rt, lambda x: convert(_unary_scalar(name, x, attrs), rt.element_type))


@lowering("logical_not")
def _lower_logical_not(op: ir.Operation) -> ir.Value:
    def fn(x):
        return arith.xori(convert(x, ir.IntegerType.get_signless(1)), _const(ir.IntegerType.get_signless(1), True))
    return _elementwise([op.operands[0]], op.results[0].type, fn)


@lowering("cast")
def _lower_cast(op: ir.Operation) -> ir.Value:
    rt = _rt(op.results[0])
    return _elementwise([op.operands[0]], rt, lambda x: convert(x, rt.element_type))


@lowering("bitcast")
def _lower_bitcast(op: ir.Operation) -> ir.Value:
    rt = _rt(op.results[0])
    return _elementwise([op.operands[0]], rt, lambda x: arith.bitcast(rt.element_type, x))


# ---- binary elementwise -------------------------------------------------------------------

def _promoted(a: ir.Value, b: ir.Value) -> ir.Type:
    return T.promote([(_rt(a).element_type, _rt(a).rank), (_rt(b).element_type, _rt(b).rank)])


def _arith_scalar(name: str, x: ir.Value, y: ir.Value) -> ir.Value:
    t = x.type
    if _is_float(t):
        if name == "pow":
            return math.powf(x, y)
        return {"add": arith.addf, "sub": arith.subf, "mul": arith.mulf, "div": arith.divf,
                "maximum": arith.maximumf, "minimum": arith.minimumf}[name](x, y)
    if _is_bool(t):
        fn = {"add": arith.ori, "mul": arith.andi, "maximum": arith.ori, "minimum": arith.andi,
              "sub": arith.xori, "pow": lambda a, b: arith.ori(a, arith.xori(b, _const(t, True)))}
        return fn[name](x, y)
    if name == "pow":   # a negative exponent as torch: 1 ** e = 1, (-1) ** e = +-1, else 0 (0 too)
        zero, one = _const(t, 0), _const(t, 1)
        odd = arith.cmpi(arith.CmpIPredicate.ne, arith.andi(y, one), zero)
        minus_one = arith.select(odd, _const(t, -1), one)
        negative = arith.select(arith.cmpi(arith.CmpIPredicate.eq, x, one), one,
                                arith.select(arith.cmpi(arith.CmpIPredicate.eq, x, _const(t, -1)), minus_one, zero))
        return arith.select(arith.cmpi(arith.CmpIPredicate.slt, y, zero), negative, math.ipowi(x, y))
    return {"add": arith.addi, "sub": arith.subi, "mul": arith.muli, "div": arith.divsi,
            "maximum": arith.maxsi, "minimum": arith.minsi}[name](x, y)


@lowering(*infer.ARITH_BINARY_OPS)
def _lower_arith_binary(op: ir.Operation) -> ir.Value:
    name = op.name.split(".", 1)[1]
    rt = _rt(op.results[0])
    ct = rt.element_type  # the promoted type (div of ints: f32, true division)
    return _elementwise(list(op.operands), rt,
                        lambda x, y: _arith_scalar(name, convert(x, ct), convert(y, ct)))


_CMPF = {"eq": "OEQ", "ne": "UNE", "lt": "OLT", "le": "OLE", "gt": "OGT", "ge": "OGE"}
_CMPI = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
_CMPU = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}


@lowering(*infer.COMPARE_OPS)
def _lower_compare(op: ir.Operation) -> ir.Value:
    name = op.name.split(".", 1)[1]
    a, b = op.operands
    ct = _promoted(a, b)

    def fn(x, y):
        x, y = convert(x, ct), convert(y, ct)
        if _is_float(ct):
            return arith.cmpf(getattr(arith.CmpFPredicate, _CMPF[name]), x, y)
        table = _CMPU if _is_bool(ct) else _CMPI  # i1: true (1) > false (0), unsigned
        return arith.cmpi(getattr(arith.CmpIPredicate, table[name]), x, y)
    return _elementwise([a, b], op.results[0].type, fn)


@lowering(*infer.LOGICAL_BINARY_OPS)
def _lower_logical(op: ir.Operation) -> ir.Value:
    name = op.name.split(".", 1)[1]
    i1 = ir.IntegerType.get_signless(1)
    fn = {"logical_and": arith.andi, "logical_or": arith.ori, "logical_xor": arith.xori}[name]
    return _elementwise(list(op.operands), op.results[0].type, lambda x, y: fn(convert(x, i1), convert(y, i1)))


@lowering(*infer.BITWISE_BINARY_OPS)
def _lower_bitwise(op: ir.Operation) -> ir.Value:
    name = op.name.split(".", 1)[1]
    rt = _rt(op.results[0])
    ct = rt.element_type   # the promoted integer (or i1) type
    fn = {"bitwise_and": arith.andi, "bitwise_or": arith.ori, "bitwise_xor": arith.xori}[name]
    return _elementwise(list(op.operands), rt, lambda x, y: fn(convert(x, ct), convert(y, ct)))


@lowering(*infer.SHIFT_OPS)
def _lower_shift(op: ir.Operation) -> ir.Value:
    """x << s: 0 where s is outside [0, bits); x >> s (arithmetic): s clamped to bits - 1
    there (the sign fills the result), as torch computes shifts."""
    left = op.name.endswith("left_shift")
    rt = _rt(op.results[0])
    ct = rt.element_type
    bits = _width(ct)

    def shift(x, y):
        x, s = convert(x, ct), convert(y, ct)
        inside = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, s, _const(ct, 0)),
                            arith.cmpi(arith.CmpIPredicate.slt, s, _const(ct, bits)))
        if left:
            return arith.select(inside, arith.shli(x, s), _const(ct, 0))
        return arith.shrsi(x, arith.select(inside, s, _const(ct, bits - 1)))
    return _elementwise(list(op.operands), rt, shift)


@lowering(*infer.DIVISION_OPS)
def _lower_division(op: ir.Operation) -> ir.Value:
    """fmod / remainder / div_trunc / div_floor as torch computes them. Floats: arith.remf
    (C's fmod, exact), the remainder moved to the divisor's sign, trunc/floor of the true
    quotient. Integers: the divisor 0 becomes 1 and -1 is handled apart (x86's idiv traps on
    both: a division by zero and INT_MIN / -1), so a bad divisor never crashes the process."""
    name = op.name.split(".", 1)[1]
    rt = _rt(op.results[0])
    ct = rt.element_type

    def to_divisor_sign(r, b, zero, lt):
        fix = arith.andi(arith.cmpi(arith.CmpIPredicate.ne, r, zero) if not _is_float(ct)
                         else arith.cmpf(arith.CmpFPredicate.UNE, r, zero),
                         arith.xori(lt(r, zero), lt(b, zero)))
        return arith.select(fix, (arith.addf if _is_float(ct) else arith.addi)(r, b), r)

    def float_body(a, b):
        zero = _const(ct, 0.0)
        lt = lambda x, y: arith.cmpf(arith.CmpFPredicate.OLT, x, y)  # noqa: E731
        if name == "fmod":
            return arith.remf(a, b)
        if name == "remainder":
            return to_divisor_sign(arith.remf(a, b), b, zero, lt)
        q = arith.divf(a, b)
        if name == "div_trunc":
            return math.trunc(q)
        # torch's floor division of floats (div_floor_floating), which rounds the exact
        # quotient: from the fmod remainder, not floor(a / b) (-1 // inf is -1, not -0)
        mod = arith.remf(a, b)
        div = arith.divf(arith.subf(a, mod), b)
        off = arith.andi(arith.cmpf(arith.CmpFPredicate.UNE, mod, zero),
                         arith.xori(lt(b, zero), lt(mod, zero)))
        div = arith.select(off, arith.subf(div, _const(ct, 1.0)), div)
        fl = math.floor(div)
        fl = arith.select(arith.cmpf(arith.CmpFPredicate.OGT, arith.subf(div, fl), _const(ct, 0.5)),
                          arith.addf(fl, _const(ct, 1.0)), fl)
        # copysign(0, q) as q * 0 (q is finite here; no fast-math flags fold it): LLVM's x86
        # backend asserts on a scalar bf16 copysign
        fl = arith.select(arith.cmpf(arith.CmpFPredicate.UNE, div, zero), fl, arith.mulf(q, zero))
        return arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, b, zero), q, fl)

    def int_body(a, b):
        zero, one, minus_one = _const(ct, 0), _const(ct, 1), _const(ct, -1)
        lt = lambda x, y: arith.cmpi(arith.CmpIPredicate.slt, x, y)  # noqa: E731
        is_zero = arith.cmpi(arith.CmpIPredicate.eq, b, zero)
        is_minus_one = arith.cmpi(arith.CmpIPredicate.eq, b, minus_one)
        safe = arith.select(arith.ori(is_zero, is_minus_one), one, b)
        if name in ("fmod", "remainder"):
            r = arith.remsi(a, safe)
            if name == "remainder":
                r = to_divisor_sign(r, safe, zero, lt)
            return arith.select(arith.ori(is_zero, is_minus_one), zero, r)
        q = arith.divsi(a, safe) if name == "div_trunc" else arith.floordivsi(a, safe)
        q = arith.select(is_minus_one, arith.subi(zero, a), q)
        return arith.select(is_zero, zero, q)

    body = float_body if _is_float(ct) else int_body
    return _elementwise(list(op.operands), rt, lambda x, y: body(convert(x, ct), convert(y, ct)))


@lowering("bitwise_not")
def _lower_bitwise_not(op: ir.Operation) -> ir.Value:
    rt = _rt(op.results[0])
    ct = rt.element_type
    ones = _const(ct, True) if _is_bool(ct) else _const(ct, -1)   # x ^ all-ones
    return _elementwise([op.operands[0]], rt, lambda x: arith.xori(x, ones))


@lowering("where")
def _lower_where(op: ir.Operation) -> ir.Value:
    rt = _rt(op.results[0])
    ct = rt.element_type
    i1 = ir.IntegerType.get_signless(1)
    return _elementwise(list(op.operands), rt,
                        lambda c, x, y: arith.select(convert(c, i1), convert(x, ct), convert(y, ct)))


# ---- sources ------------------------------------------------------------------------------

@lowering("constant")
def _lower_constant(op: ir.Operation) -> ir.Value:
    rt = _rt(op.results[0])
    value = op.attributes["value"]
    if value.type != rt:
        dense = ir.DenseElementsAttr(value)
        if not dense.is_splat:
            raise NotImplementedError(f"lamina-to-linalg: constant of type {value.type} for result {rt}")
        value = ir.DenseElementsAttr.get_splat(rt, dense.get_splat_value())
    if _name(rt.element_type) == "i1":
        i8 = ir.IntegerType.get_signless(8)
        dense = ir.DenseElementsAttr(value)
        if dense.is_splat:
            bit = ir.IntegerAttr(dense.get_splat_value()).value
            stored = ir.DenseElementsAttr.get_splat(_st_type(rt), ir.IntegerAttr.get(i8, 1 if bit else 0))
        else:
            bits = np.array(ir.DenseIntElementsAttr(value)).astype(np.int8)
            stored = ir.DenseIntElementsAttr.get(bits.reshape(rt.shape), type=_st_type(rt))
        return _wrap(arith.ConstantOp(_st_type(rt), stored).result, rt)
    return arith.ConstantOp(rt, value).result


@lowering("size")
def _lower_size(op: ir.Operation) -> ir.Value:
    i64 = ir.IntegerType.get_signless(64)
    return tensor.from_elements(ir.RankedTensorType.get([], i64), [arith.index_cast(i64, op.operands[0])])


@lowering("iota")
def _lower_iota(op: ir.Operation) -> ir.Value:
    rt = _rt(op.results[0])
    init = _empty(rt)

    def body(_out):
        i = arith.index_cast(ir.IntegerType.get_signless(64), _loop_index(0))
        return [convert(i, rt.element_type)]
    return _generic([], [init], [ir.AffineMap.get_identity(1)], ["parallel"], body)[0]


# ---- reductions ---------------------------------------------------------------------------

def _reduce_dims(op: ir.Operation) -> tuple[list[int], bool]:
    rank = _rt(op.operands[0]).rank
    attrs = ops.attributes_of(op)
    dims = sorted({infer.normalize_dim(int(d), rank) for d in attrs["dims"]}) if rank else []
    return dims, bool(attrs["keepdim"])


def _reduction(x: ir.Value, dims: list[int], keepdim: bool, result_type, acc_elem: ir.Type, identity,
               combine, extra: Sequence[tuple[ir.Value, ir.AffineMap]] = (), n_acc: int = 1,
               attrs: dict | None = None) -> tuple[list[ir.Value], ir.AffineMap]:
    """fill(identity) + linalg.generic reducing `x` over `dims` into `n_acc` accumulator
    tensors of the result's shape and element type `acc_elem`;
    combine(x_scalar, *extra_scalars, *accs) -> new accs (one Value when n_acc == 1).
    Returns the accumulator tensors and their indexing map (reused to read them back)."""
    rank = _rt(x).rank
    in_shape = _shape(x)
    exprs, dyn = [], []
    for i in range(rank):
        if i in dims:
            if keepdim:
                exprs.append(ir.AffineConstantExpr.get(0))
                dyn.append(None)
        else:
            exprs.append(ir.AffineDimExpr.get(i))
            dyn.append(_dim(x, i) if in_shape[i] is None else None)
    out_map = ir.AffineMap.get(rank, 0, exprs)
    acc_type = ir.RankedTensorType.get(ir.RankedTensorType(result_type).shape, acc_elem)
    init = _empty(acc_type, dyn)
    filled = [_fill(_const(acc_elem, identity), init) for _ in range(n_acc)]
    inputs = [x] + [v for v, _ in extra]
    maps = [ir.AffineMap.get_identity(rank)] + [m for _, m in extra] + [out_map] * n_acc
    iters = ["reduction" if i in dims else "parallel" for i in range(rank)]

    def body(*a):
        r = combine(*a)
        return [r] if n_acc == 1 else r
    return _generic(inputs, filled, maps, iters, body, attrs), out_map


# ---- additive float reductions: compensated accumulation --------------------------------
# A float sum accumulated sequentially in one f32 scalar loses ~log2(n) bits: 2^24 values
# near 100 sum 17% off. Rows longer than COMPENSATED_MIN (or of dynamic length) therefore
# carry two accumulators (s, c) through the reduction generic: each addend y = x + c goes
# into s with Knuth's branch-free TwoSum, whose exact rounding error becomes the new c.
# Feeding c into the next addend (Kahan's scheme) keeps |c| <= ulp(s)/2; summing the
# errors into c separately (Ogita-Rump-Oishi Sum2) does not work here: for 2^24 values near
# 100 every step rounds the same way, c grows to ~1e8 and is itself summed 0.9% off.
# The error is ~2 ulp of the result, independent of n. inf/nan: once s is not finite, c
# resets to 0 (TwoSum's error would be nan), so s, and s + c at the end (done in the map
# that follows: mean's divide, the f32 -> f16 cast, or a small map of its own), are exactly
# a plain sum's inf/nan. Per lane the scheme survives vectorization; it needs IEEE
# arithmetic without reassociation (no fast-math flags are set anywhere).
# The choice is recorded as `lamina.accumulate = "compensated" | "plain"` on the reduction
# generic; a `lamina.accumulate` set on the lamina op (reduce_sum, reduce_mean, var,
# softmax, log_softmax) overrides it.
ACCUMULATE = "lamina.accumulate"
COMPENSATED_MIN = 2   # more than 2 addends round; compensated rows also make the mean of a
                      # constant row exact (eager's layer_norm gives exactly 0 there)


def _accumulate_mode(op: ir.Operation, x: ir.Value, dims: list[int]) -> str:
    if ACCUMULATE in op.attributes:
        mode = ir.StringAttr(op.attributes[ACCUMULATE]).value
        if mode not in ("compensated", "plain"):
            raise ValueError(f"lamina-to-linalg: {ACCUMULATE} = {mode!r} at {op.location}: "
                             "expected \"compensated\" or \"plain\"")
        return mode
    sizes = [_shape(x)[d] for d in dims]
    return "compensated" if None in sizes or _pymath.prod(sizes) > COMPENSATED_MIN else "plain"


def _is_finite(v: ir.Value) -> ir.Value:
    return arith.cmpf(arith.CmpFPredicate.OLT, math.absf(v), _const(v.type, float("inf")))


def two_sum_step(y: ir.Value, s: ir.Value, c: ir.Value) -> list[ir.Value]:
    """(s, c) + y: Kahan's carried error with Knuth's TwoSum (no |s| >= |y| assumption).
    Scalars or vectors (lamina-tile-cpu's vector reductions run it per lane)."""
    y = arith.addf(y, c)
    t = arith.addf(s, y)
    z = arith.subf(t, s)
    e = arith.addf(arith.subf(s, arith.subf(t, z)), arith.subf(y, z))
    return [t, arith.select(_is_finite(t), e, _const(s.type, 0.0))]


def _sum(x: ir.Value, dims: list[int], keepdim: bool, result_type, acc: ir.Type, term, mode: str,
         extra: Sequence[tuple[ir.Value, ir.AffineMap]] = ()) -> tuple[list[ir.Value], ir.AffineMap]:
    """Float sum over `dims` of term(x_scalar, *extra_scalars) in `acc`: the partial results
    [s] ("plain") or [s, c] ("compensated"), to be read back through `_total`."""
    n_in = 1 + len(extra)
    attrs = {ACCUMULATE: ir.StringAttr.get(mode)}
    if mode == "plain":
        return _reduction(x, dims, keepdim, result_type, acc, 0.0,
                          lambda *a: arith.addf(term(*a[:n_in]), a[n_in]), extra, 1, attrs)
    return _reduction(x, dims, keepdim, result_type, acc, 0.0,
                      lambda *a: two_sum_step(term(*a[:n_in]), *a[n_in:]), extra, 2, attrs)


def _total(*parts: ir.Value) -> ir.Value:
    """The sum from its partial results (scalars in a map body)."""
    return parts[0] if len(parts) == 1 else arith.addf(parts[0], parts[1])


def _map_parts(parts: Sequence[ir.Value], elem: ir.Type, fn) -> ir.Value:
    """Elementwise map of same-shape tensors into element type `elem`."""
    return _elementwise(list(parts), ir.RankedTensorType.get(_rt(parts[0]).shape, elem), fn)


def _count(x: ir.Value, dims: list[int], t: ir.Type) -> ir.Value:
    """Number of reduced elements, as a scalar of float type `t`."""
    shape = _shape(x)
    static = 1
    dyn = None
    for d in dims:
        if shape[d] is None:
            v = _dim(x, d)
            dyn = v if dyn is None else arith.muli(dyn, v)
        else:
            static *= shape[d]
    if dyn is None:
        return _const(t, float(static))
    n = arith.muli(dyn, _idx(static))
    return arith.sitofp(t, arith.index_cast(ir.IntegerType.get_signless(64), n))


def _map_tensor(v: ir.Value, result_type, fn) -> ir.Value:
    """Elementwise map of one tensor into `result_type` (same shape)."""
    return _elementwise([v], ir.RankedTensorType.get(_rt(v).shape, ir.RankedTensorType(result_type).element_type), fn)


@lowering("reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_mean")
def _lower_reduce(op: ir.Operation) -> ir.Value:
    name = op.name.split(".", 1)[1]
    x = op.operands[0]
    rt = _rt(op.results[0])
    elem = rt.element_type
    dims, keepdim = _reduce_dims(op)
    if name in ("reduce_sum", "reduce_mean") and _is_float(_upcast(elem)):
        acc = _upcast(elem)
        parts, _ = _sum(x, dims, keepdim, rt, acc, lambda a: convert(a, acc), _accumulate_mode(op, x, dims))
        if name == "reduce_mean":
            n = _count(x, dims, acc)  # 0 for an empty row: 0/0 = nan, as in torch
            return _map_parts(parts, elem, lambda *p: convert(arith.divf(_total(*p), n), elem))
        if len(parts) == 1 and _name(acc) == _name(elem):
            return parts[0]
        return _map_parts(parts, elem, lambda *p: convert(_total(*p), elem))
    if name in ("reduce_max", "reduce_min"):
        acc = elem
        if _is_float(elem):
            ident = float("-inf") if name == "reduce_max" else float("inf")
            fn = arith.maximumf if name == "reduce_max" else arith.minimumf
        elif _is_bool(elem):
            ident = name == "reduce_min"
            fn = arith.ori if name == "reduce_max" else arith.andi
        else:
            w = _width(elem)
            ident = -(2 ** (w - 1)) if name == "reduce_max" else 2 ** (w - 1) - 1
            fn = arith.maxsi if name == "reduce_max" else arith.minsi
    else:
        acc = _upcast(elem)
        prod = name == "reduce_prod"
        ident = 1 if prod else 0
        if _is_float(acc):
            fn = arith.mulf
        else:
            fn = arith.muli if prod else arith.addi
    [res], _ = _reduction(x, dims, keepdim, rt, acc, ident, lambda a, o: fn(convert(a, acc), o))
    if name == "reduce_mean":  # of integers (torch refuses; kept for completeness)
        n = _count(x, dims, acc)
        return _map_tensor(res, rt, lambda s: convert(arith.divf(s, n), elem))
    if _name(acc) != _name(elem):
        return _map_tensor(res, rt, lambda s: convert(s, elem))
    return res


@lowering("var")
def _lower_var(op: ir.Operation) -> ir.Value:
    x = op.operands[0]
    rt = _rt(op.results[0])
    elem = rt.element_type
    acc = _upcast(elem)
    dims, keepdim = _reduce_dims(op)
    mode = _accumulate_mode(op, x, dims)
    correction = float(ops.attributes_of(op)["correction"])
    n = _count(x, dims, acc)
    # Pass 1: the mean.
    parts, out_map = _sum(x, dims, keepdim, rt, acc, lambda a: convert(a, acc), mode)
    mean = _map_parts(parts, acc, lambda *p: arith.divf(_total(*p), n))

    # Pass 2: sum of squared deviations, divided by max(N - correction, 0).
    def sq(a, m):
        d = arith.subf(convert(a, acc), m)
        return arith.mulf(d, d)
    ssd, _ = _sum(x, dims, keepdim, rt, acc, sq, mode, extra=[(mean, out_map)])
    denom = arith.maximumf(arith.subf(n, _const(acc, correction)), _const(acc, 0.0))
    return _map_parts(ssd, elem, lambda *p: convert(arith.divf(_total(*p), denom), elem))


# ---- matmul -------------------------------------------------------------------------------

def _collapse(v: ir.Value, groups: list[list[int]]) -> ir.Value:
    shape = _shape(v)
    out = []
    for g in groups:
        sizes = [shape[i] for i in g]
        out.append(None if None in sizes else _pymath.prod(sizes))
    rt = T.tensor_type(out, _rt(v).element_type)
    return _wrap(tensor.collapse_shape(_st_type(rt), _st(v), _reassoc_attr(groups)), rt)


def _reassoc_attr(groups: list[list[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in groups])


def _expand(v: ir.Value, result_type, groups: list[list[int]], sizes: Sequence[ir.Value | int]) -> ir.Value:
    """tensor.expand_shape of `v` into `result_type`; sizes: int or index Value per result dim."""
    dyn = [s for s in sizes if not isinstance(s, int)]
    static = [s if isinstance(s, int) else T.DYNAMIC for s in sizes]
    return _wrap(tensor.expand_shape(_st_type(result_type), _st(v), _reassoc_attr(groups), dyn, static), result_type)


@lowering("matmul")
def _lower_matmul(op: ir.Operation) -> ir.Value:
    a, b = op.operands
    rt = _rt(op.results[0])
    elem = rt.element_type
    if _is_bool(elem):
        raise NotImplementedError("lamina-to-linalg: lamina.matmul of i1")
    acc = _upcast(elem)
    sa, sb, so = _shape(a), _shape(b), T.shape_of(rt)
    ra, rb, ro = len(sa), len(sb), len(so)

    def size(v, i, static):
        return static if static is not None else _dim(v, i)

    def zeros(shape_vals):
        e = tensor.empty(list(shape_vals), acc)
        return _fill(_const(acc, 0), e)

    def finish(res):
        if _name(acc) != _name(elem):
            return _map_tensor(res, ir.RankedTensorType.get(_rt(res).shape, elem), lambda s: convert(s, elem))
        return res

    def contract(named, x, y, init):
        # K = 0 is a fill of 0 and a zero-element result needs no work: no linalg op at all,
        # so no schedule ever sees a loop of static size 0.
        if 0 in (sa[-1], sb[-2]) or 0 in _shape(init):
            return init
        return _one(named(x, y, outs=[init]))

    M = size(a, ra - 2, sa[-2])
    N = size(b, rb - 1, sb[-1])
    if ra == 2 and rb == 2:
        return finish(contract(linalg.matmul, a, b, zeros([M, N])))
    if rb == 2 and sa[:-1].count(None) <= 1:  # expand_shape allows one dynamic size per group
        # [..., M, K] x [K, N]: fold the batch dims into M, one 2-D matmul, unfold.
        a2 = _collapse(a, [list(range(ra - 1)), [ra - 1]])
        rows = size(a2, 0, _shape(a2)[0])
        r2 = contract(linalg.matmul, a2, b, zeros([rows, N]))
        r2 = finish(r2)
        out_sizes = [size(a, i, sa[i]) for i in range(ra - 1)] + [N]
        return _expand(r2, rt, [list(range(ra - 1)), [ra - 1]], out_sizes)
    syms = _current.get("all_operand_dims") or [None, None]
    same_symbols = (syms[0] is not None and syms[1] is not None and syms[0][:-2] == syms[1][:-2]
                    and S.UNKNOWN not in syms[0][:-2])
    if ra == rb and sa[:-2] == sb[:-2] and (None not in sa[:-2] or (
            same_symbols and (ra == 3 or sa[:-2].count(None) <= 1))):
        # Equal batch dims (static, or the same symbols): collapse them into one and use
        # batch_matmul (one dynamic size at most per expanded group).
        groups = [list(range(ra - 2)), [ra - 2], [ra - 1]]
        a3, b3 = _collapse(a, groups), _collapse(b, groups)
        B = _pymath.prod(sa[:-2]) if None not in sa[:-2] else _dim(a3, 0)
        r3 = finish(contract(linalg.batch_matmul, a3, b3, zeros([B, M, N])))
        if ra == 3:
            return r3
        out_sizes = [size(a, i, sa[i]) for i in range(ra - 2)] + [M, N]
        return _expand(r3, rt, groups, out_sizes)
    # Broadcasting batch dims: one contraction generic, loops (batch..., m, n, k).
    nb = ro - 2
    L = ro + 1
    d = ir.AffineDimExpr.get

    def operand_map(shape, last2):
        exprs = []
        for j, s in enumerate(shape[:-2]):
            i = j + nb - (len(shape) - 2)
            exprs.append(ir.AffineConstantExpr.get(0) if (s == 1 and so[i] != 1) else d(i))
        return ir.AffineMap.get(L, 0, exprs + [d(x) for x in last2])
    maps = [operand_map(sa, [nb, nb + 2]), operand_map(sb, [nb + 2, nb + 1]),
            ir.AffineMap.get(L, 0, [d(i) for i in range(ro)])]
    out_sizes = []
    for i in range(nb):
        if so[i] is not None:
            out_sizes.append(so[i])
            continue
        for v, sh in ((a, sa), (b, sb)):
            j = i - (nb - (len(sh) - 2))
            if j >= 0 and sh[j] is None:
                out_sizes.append(_dim(v, j))
                break
        else:
            raise NotImplementedError(f"lamina-to-linalg: matmul {rt}: unknown size of batch dim {i}")
    out_sizes += [M, N]
    init = zeros(out_sizes)
    if _is_float(acc):
        body = lambda x, y, o: [arith.addf(o, arith.mulf(convert(x, acc), convert(y, acc)))]  # noqa: E731
    else:
        body = lambda x, y, o: [arith.addi(o, arith.muli(x, y))]  # noqa: E731
    res = _generic([a, b], [init], maps, ["parallel"] * ro + ["reduction"], body)[0]  # K = 0: init
    return finish(res)


# ---- data movement ------------------------------------------------------------------------

def _reassociation(big: list, small: list):
    """Groups of `big` dims whose products are the `small` dims, or None. Sizes are ints or
    symbolic expressions (a group of symbolic dims matches the simplified product)."""
    if None in big or None in small or S.UNKNOWN in big or S.UNKNOWN in small:
        return None
    groups, i = [], 0
    for s in small:
        g, p = [], 1
        while i < len(big) and (not g or _smaller(p, s)):
            g.append(i)
            p = S.combine("*", p, big[i])
            i += 1
        if S.simplify(p) != S.simplify(s) or not g:
            return None
        groups.append(g)
    # Trailing size-1 dims join the last group.
    while i < len(big):
        if big[i] != 1 or not groups:
            return None
        groups[-1].append(i)
        i += 1
    return groups


def _smaller(p, s) -> bool:
    """Whether a partial product `p` may still grow to `s` (static: p < s; symbolic: not yet
    equal, and every symbol of p is in s)."""
    if isinstance(p, int) and isinstance(s, int):
        return p < s
    if S.simplify(p) == S.simplify(s):
        return False
    return isinstance(s, str) and (isinstance(p, int) or S.free_symbols(p) <= S.free_symbols(s))


@lowering("reshape")
def _lower_reshape(op: ir.Operation) -> ir.Value:
    x = op.operands[0]
    rt = _rt(op.results[0])
    si, so = _shape(x), T.shape_of(rt)
    if None in si or None in so:
        return _lower_symbolic_reshape(x, rt)
    grouped = _reshape_by_groups(x, rt, si, so, lambda: so)
    if grouped is not None:
        return grouped
    if not so or not si:
        # To or from rank 0 (all sizes 1): collapse / expand with no groups.
        if not so:
            return _wrap(tensor.collapse_shape(_st_type(rt), _st(x), _reassoc_attr([])), rt)
        return _expand(x, rt, [], so)
    i64 = ir.IntegerType.get_signless(64)
    shape_t = ir.RankedTensorType.get([len(so)], i64)
    shape = arith.ConstantOp(shape_t, ir.DenseIntElementsAttr.get(np.asarray(so, dtype=np.int64), type=shape_t)).result
    return _wrap(tensor.reshape(_st_type(rt), _st(x), shape), rt)


def _reshape_by_groups(x: ir.Value, rt: ir.RankedTensorType, si: list, so: list, sizes) -> ir.Value | None:
    """The reshape as a cast, a collapse_shape or an expand_shape when the dims (ints or
    expressions) group; None otherwise. `sizes()`: the result's sizes (ints or Values) for
    an expand."""
    if si == so:
        return x if x.type == rt else _wrap(tensor.cast(_st_type(rt), _st(x)), rt)
    if len(so) < len(si):
        groups = _reassociation(si, so)
        if groups is not None:
            return _wrap(tensor.collapse_shape(_st_type(rt), _st(x), _reassoc_attr(groups)), rt)
    elif len(so) > len(si):
        groups = _reassociation(so, si)
        # expand-strided-metadata asserts on a group with two dynamic sizes
        if groups is not None and all(sum(isinstance(so[d], str) for d in g) <= 1 for g in groups):
            return _expand(x, rt, groups, sizes())
    return None


def _lower_symbolic_reshape(x: ir.Value, rt: ir.RankedTensorType) -> ir.Value:
    """A reshape with symbolic sizes: collapse_shape / expand_shape when the dims group
    (symbolic products compared as expressions), else tensor.reshape to the sizes computed
    from the symbols."""
    si, so = _current["operand_dims"], _current["dims"]
    if si is None or so is None:
        raise NotImplementedError(f"lamina-to-linalg: reshape with unknown dynamic dims -> {rt}")
    def sizes():
        return [s if isinstance(s, int) else _result_size(rt, i) for i, s in enumerate(so)]
    grouped = _reshape_by_groups(x, rt, si, so, sizes)
    if grouped is not None:
        return grouped
    # Any other reshape: tensor.reshape to a shape tensor (memref.reshape after bufferization).
    i64 = ir.IntegerType.get_signless(64)
    shape = tensor.from_elements(ir.RankedTensorType.get([len(so)], i64),
                                 [arith.index_cast(i64, v if isinstance(v, ir.Value) else _idx(v)) for v in sizes()])
    return _wrap(tensor.reshape(_st_type(rt), _st(x), shape), rt)


@lowering("broadcast_to")
def _lower_broadcast_to(op: ir.Operation) -> ir.Value:
    x = op.operands[0]
    rt = _rt(op.results[0])
    si, so = _shape(x), T.shape_of(rt)
    dyn = []
    for i, s in enumerate(so):
        j = i - (len(so) - len(si))
        if s is None:
            dyn.append(_dim(x, j) if j >= 0 and si[j] is None else _result_size(rt, i))
        else:
            dyn.append(None)
    init = _empty(rt, dyn)
    maps = [_bcast_map(si, so), ir.AffineMap.get_identity(rt.rank)]
    return _generic([x], [init], maps, ["parallel"] * rt.rank, lambda a, o: [a])[0]


@lowering("transpose")
def _lower_transpose(op: ir.Operation) -> ir.Value:
    x = op.operands[0]
    rt = _rt(op.results[0])
    perm = [int(p) for p in ops.attributes_of(op)["perm"]]
    si = _shape(x)
    if perm == sorted(perm):
        return x
    init = _empty(rt, [_dim(x, p) if si[p] is None else None for p in perm])
    return _wrap(_one(linalg.transpose(_st(x), outs=[_st(init)], permutation=perm)), rt)


def _slice_offsets(size, start: int, end: int, step: int):
    """(offset, size) of input[start:end:step] along a dim of static `size` (as infer.slice_size)."""
    s = min(max(start + size if start < 0 else start, 0), size)
    return s, infer.slice_size(size, start, end, step)


@lowering("slice")
def _lower_slice(op: ir.Operation) -> ir.Value:
    x = op.operands[0]
    rt = _rt(op.results[0])
    attrs = ops.attributes_of(op)
    si = _shape(x)
    dim = infer.normalize_dim(int(attrs["dim"]), len(si))
    start, end, step = attrs["start"], attrs["end"], int(attrs["step"])
    offsets = [0] * len(si)
    sizes: list = [s if s is not None else _dim(x, i) for i, s in enumerate(si)]
    strides = [1] * len(si)
    strides[dim] = step
    if isinstance(start, str) or isinstance(end, str):
        # symbolic bounds, normalized by the importer (in [0, size], start <= end): the
        # offset is start, the size the result's
        start = S.simplify(start) if isinstance(start, str) else start
        offsets[dim] = start if isinstance(start, int) else S.materialize(start, _current["symbols"])
        n = T.shape_of(rt)[dim]
        sizes[dim] = n if n is not None else _result_size(rt, dim)
    elif si[dim] is not None:
        offsets[dim], sizes[dim] = _slice_offsets(si[dim], start, end, step)
    else:
        # Runtime normalization: clamp(start/end (+size if negative), 0, size).
        n = sizes[dim]
        zero = _idx(0)

        def norm(v):
            c = arith.addi(n, _idx(v)) if v < 0 else _idx(v)
            return arith.minsi(arith.maxsi(c, zero), n)
        s0, e0 = norm(start), norm(end)
        length = arith.subi(e0, s0)
        count = arith.divsi(arith.addi(length, _idx(step - 1)), _idx(step))
        offsets[dim], sizes[dim] = s0, arith.maxsi(count, zero)
    return _extract_slice(x, rt, offsets, sizes, strides)


def _mixed(vals):
    dyn = [v for v in vals if not isinstance(v, int)]
    static = [v if isinstance(v, int) else T.DYNAMIC for v in vals]
    return dyn, static


def _extract_slice(x, rt, offsets, sizes, strides):
    if 0 in T.shape_of(rt):  # a zero-element slice: any offset "is out of bounds" to the verifier
        return _empty(rt, [None if isinstance(s, int) else s for s in sizes])
    do, so_ = _mixed(offsets)
    ds, ss = _mixed(sizes)
    dt, st = _mixed(strides)
    return _wrap(tensor.extract_slice(_st_type(rt), _st(x), do, ds, dt, so_, ss, st), rt)


def _insert_slice(src, dest, offsets, sizes):
    do, so_ = _mixed(offsets)
    ds, ss = _mixed(sizes)
    dt, st = _mixed([1] * len(sizes))
    return _wrap(tensor.insert_slice(_st(src), _st(dest), do, ds, dt, so_, ss, st), dest.type)


@lowering("concat")
def _lower_concat(op: ir.Operation) -> ir.Value:
    a, b = op.operands
    rt = _rt(op.results[0])
    sa, sb, so = _shape(a), _shape(b), T.shape_of(rt)
    dim = infer.normalize_dim(int(ops.attributes_of(op)["dim"]), len(so))
    size_a = [s if s is not None else _dim(a, i) for i, s in enumerate(sa)]
    size_b = [s if s is not None else _dim(b, i) for i, s in enumerate(sb)]
    dyn = []
    for i, s in enumerate(so):
        if s is not None:
            dyn.append(None)
        elif i == dim:
            x, y = size_a[i], size_b[i]
            dyn.append(arith.addi(x if not isinstance(x, int) else _idx(x), y if not isinstance(y, int) else _idx(y)))
        else:
            dyn.append(size_a[i] if not isinstance(size_a[i], int) else _idx(size_a[i]))
    init = _empty(rt, dyn)
    # A statically empty operand is skipped (its insert_slice would not verify).
    r = init if 0 in sa else _insert_slice(a, init, [0] * len(so), size_a)
    off = [0] * len(so)
    off[dim] = size_a[dim]
    return r if 0 in sb else _insert_slice(b, r, off, size_b)


@lowering("index_select")
def _lower_index_select(op: ir.Operation) -> ir.Value:
    x, idx = op.operands
    rt = _rt(op.results[0])
    si, sidx = _shape(x), _shape(idx)
    dim = infer.normalize_dim(int(ops.attributes_of(op)["dim"]), len(si))
    k = len(sidx)
    dyn = []
    for i, s in enumerate(T.shape_of(rt)):
        if s is not None:
            dyn.append(None)
        elif i < dim:
            dyn.append(_dim(x, i))
        elif i < dim + k:
            dyn.append(_dim(idx, i - dim))
        else:
            dyn.append(_dim(x, i - k + 1))
    init = _empty(rt, dyn)
    R = rt.rank
    idx_map = ir.AffineMap.get(R, 0, [ir.AffineDimExpr.get(dim + j) for j in range(k)])
    size_along = _dim(x, dim) if si[dim] is None else _idx(si[dim])

    def body(i, _out):
        iv = arith.index_cast(ir.IndexType.get(), i)
        # Negative indices count from the end, as in torch.
        iv = arith.select(arith.cmpi(arith.CmpIPredicate.slt, iv, _idx(0)), arith.addi(iv, size_along), iv)
        coords = [_loop_index(d) for d in range(dim)] + [iv] + [_loop_index(dim + k + j) for j in range(len(si) - dim - 1)]
        return [tensor.extract(_st(x), coords)]
    return _generic([idx], [init], [idx_map, ir.AffineMap.get_identity(R)], ["parallel"] * R, body)[0]


# ---- the pass -----------------------------------------------------------------------------

def _lamina_ops(module: ir.Module) -> list[ir.Operation]:
    found = []

    def visit(op):
        if op.name.startswith("lamina."):
            found.append(op.operation if hasattr(op, "operation") else op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def lower_op(op: ir.Operation, symbolic_dims: dict | None = None, symbols: dict | None = None) -> None:
    """Replace one lamina op by its linalg/tensor/arith/math lowering. `symbolic_dims`:
    value -> its dims before the encodings were dropped; `symbols`: name -> index Value."""
    fn = _LOWERINGS.get(op.name)
    if fn is None:
        raise NotImplementedError(f"lamina-to-linalg: no lowering for {op.name} at {op.location}")
    symbolic_dims = symbolic_dims if symbolic_dims is not None else {}
    _current["dims"] = symbolic_dims.get(op.results[0])
    _current["operand_dims"] = symbolic_dims.get(op.operands[0]) if len(op.operands) else None
    _current["all_operand_dims"] = [symbolic_dims.get(v) for v in op.operands]
    _current["symbols"] = symbols or {}
    with ir.InsertionPoint(op), op.location:
        new = fn(op)
    if hasattr(new, "result") and not isinstance(new, ir.Value):
        new = new.result
    if new.type != op.results[0].type:
        with ir.InsertionPoint(op), op.location:
            new = _wrap(tensor.cast(_st_type(op.results[0].type), _st(new)), op.results[0].type)
    if op.results[0] in symbolic_dims:
        # (assigned, not setdefault: values are keyed by their IR object's address, and a
        # new value may reuse the address of one erased before; its entry is stale)
        symbolic_dims[new] = symbolic_dims.pop(op.results[0])
    op.results[0].replace_all_uses_with(new)
    op.erase()


def _funcs(module: ir.Module):
    return [op for op in module.body.operations if op.operation.name == "func.func"]


def _bools_to_storage_at_entry(module: ir.Module, symbolic_dims: dict) -> None:
    """i1 tensor arguments become i8 (storage) arguments, wrapped for the function body (the
    wrapper keeps the argument's symbolic dims: a reshape of a bool argument needs them)."""
    for f in _funcs(module):
        if not f.regions[0].blocks:
            continue
        entry = f.regions[0].blocks[0]
        for arg in entry.arguments:
            if isinstance(arg.type, ir.RankedTensorType) and _name(arg.type.element_type) == "i1":
                logical = arg.type
                arg.set_type(_st_type(logical))
                with ir.InsertionPoint.at_block_begin(entry), f.location:
                    w = _wrap(arg, logical)
                arg.replace_all_uses_except(w, w.owner.operation)
                if arg in symbolic_dims:
                    symbolic_dims[w] = symbolic_dims[arg]


def _bools_to_storage_at_exit(module: ir.Module) -> None:
    """Calls and returns use the i8 storage tensors; function types follow; wrappers go."""
    def visit(op):
        op = op.operation if hasattr(op, "operation") else op
        if op.name == "func.call":
            calls.append(op)
        elif op.name == "func.return":
            returns.append(op)
        elif _is_mark(op):
            marks.append(op)
        return ir.WalkResult.ADVANCE
    calls, returns, marks = [], [], []
    module.operation.walk(visit)
    for call in calls:
        operands = [_st(v) for v in call.operands]
        types = [_st_type(r.type) if isinstance(r.type, ir.RankedTensorType) else r.type for r in call.results]
        if operands == list(call.operands) and types == [r.type for r in call.results]:
            continue
        with ir.InsertionPoint(call), call.location:
            new = ir.Operation.create("func.call", results=types, operands=operands,
                                      attributes={name: call.attributes[name] for name in call.attributes})
            for old, r in zip(call.results, new.results):
                old.replace_all_uses_with(_wrap(r, old.type))
        call.erase()
    for ret in returns:
        for i, v in enumerate(ret.operands):
            ret.operands[i] = _st(v)
    for f in _funcs(module):
        if not f.regions[0].blocks:
            continue
        args = [a.type for a in f.regions[0].blocks[0].arguments]
        results = None
        for blk in f.regions[0].blocks:
            last = list(blk.operations)[-1] if len(blk.operations) else None
            if last is not None and last.operation.name == "func.return":
                results = [v.type for v in last.operands]
        ft = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
        f.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(args, results if results is not None else ft.results))
    marks = []
    module.operation.walk(visit)
    changed = True
    while changed:
        changed = False
        for m in list(marks):
            if not list(m.results[0].uses):
                m.erase()
                marks.remove(m)
                changed = True


def lower_to_linalg(module: ir.Module) -> None:
    """Run lamina-decompose, then lower every lamina op of `module` in place.

    Bool tensors: lowered functions take and return i8 tensors where the lamina function
    had i1 tensors (same bytes as torch.bool); i1 exists only as scalars in linalg bodies.
    """
    with module.context:
        decompose(module)
        symbolic_dims, symbols = _drop_encodings(module)
        _bools_to_storage_at_entry(module, symbolic_dims)
        for op in _lamina_ops(module):
            lower_op(op, symbolic_dims, symbols.get(_enclosing_func(op), {}))
        _bools_to_storage_at_exit(module)


def _enclosing_func(op: ir.Operation) -> str | None:
    """Name of the function holding `op`."""
    while op is not None and op.name != "func.func":
        op = op.parent
    return ir.StringAttr(op.attributes["sym_name"]).value if op is not None else None


def _drop_encodings(module: ir.Module) -> tuple[dict, dict]:
    """Strip the symbolic encodings from every type; returns (value -> its dims, for the
    values that had symbolic dims; function name -> its symbol values)."""
    dims: dict = {}

    def visit(op):
        for r in op.results:
            if isinstance(r.type, ir.RankedTensorType) and r.type.encoding is not None:
                dims[r] = S.dims_of(r.type)
        for region in op.regions:
            for block in region.blocks:
                for a in block.arguments:
                    if isinstance(a.type, ir.RankedTensorType) and a.type.encoding is not None:
                        dims[a] = S.dims_of(a.type)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    symbols = {}
    for f in _funcs(module):
        symbols[ir.StringAttr(f.attributes["sym_name"]).value] = S.symbol_values(f)
        S.strip_function(f)
    return dims, symbols


@register_pass("lamina-to-linalg", level="L3",
               description="lower every lamina op to linalg/tensor/arith/math on tensors (runs lamina-decompose first)")
def run(module: ir.Module, **options) -> None:
    lower_to_linalg(module)


# Op families in modules of their own (they register into _LOWERINGS on import).
from . import convolution  # noqa: E402,F401
from . import airy, incomplete_gamma, indirect, integer_loops, library_calls, orthogonal_polynomials, sorting  # noqa: E402,F401
from . import random  # noqa: E402,F401
