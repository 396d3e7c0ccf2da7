"""Shape and dtype rules of the lamina ops: the one Python place per op.

IRDL (dialects/lamina.irdl.mlir) states op names, operands and attributes; what it
cannot state lives here. `infer_result_type(op_name, operand_types, attrs)` gives the
result type of an op from its operands and its attributes as Python values; ops whose
result is chosen by the builder (reshape, broadcast_to, cast, constant, iota) take
it from the caller and are checked instead by `check_result_type`.

Symbolic dims are expression strings in shapes (`?` plus the type's encoding, see
symbols.py) and flow through every rule; `symbols.UNKNOWN` is a size nothing is known of.
"""
from __future__ import annotations

from typing import Callable

from mlir import ir

from . import symbols as S
from . import types as T

Shape = list  # list[int | None]


class ShapeError(ValueError):
    """Operands or attributes that no lamina op accepts."""


_RULES: dict[str, Callable] = {}

# inverse and hyperbolic trig, exp2/log2/log10: math dialect ops, on the CPU libm calls
# (convert-math-to-libm) or LLVM intrinsics, on the cuda target triton_helpers / tl
TRIG_UNARY = ("tan", "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "log2", "log10")
UNARY_OPS = ("neg", "abs", "exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "sigmoid", "relu",
             "erf", "sqrt", "rsqrt", "reciprocal", "floor", "ceil", "round", "gelu") + TRIG_UNARY
FLOAT_ONLY_UNARY = ("exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "sigmoid", "erf", "sqrt",
                    "rsqrt", "reciprocal", "gelu") + TRIG_UNARY
ARITH_BINARY_OPS = ("add", "sub", "mul", "div", "pow", "maximum", "minimum")
COMPARE_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
LOGICAL_BINARY_OPS = ("logical_and", "logical_or", "logical_xor")
BITWISE_BINARY_OPS = ("bitwise_and", "bitwise_or", "bitwise_xor")
SHIFT_OPS = ("bitwise_left_shift", "bitwise_right_shift")
DIVISION_OPS = ("fmod", "remainder", "div_trunc", "div_floor")
REDUCE_OPS = ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "var")
LIBRARY_CALL_OPS = ("library_call1", "library_call2", "library_call3")
RESULT_GIVEN_OPS = ("reshape", "broadcast_to", "cast", "bitcast", "constant", "iota", "size", "random_uniform") \
    + LIBRARY_CALL_OPS


def rule(*names):
    def register(fn):
        for n in names:
            _RULES[n] = fn
        return fn
    return register


def infer_result_type(op_name: str, operand_types: list[ir.Type], attrs: dict) -> ir.Type:
    """Result type of `lamina.<op_name>`; raises ShapeError on bad operands."""
    if op_name in RESULT_GIVEN_OPS:
        raise ShapeError(f"lamina.{op_name} needs an explicit result type")
    try:
        fn = _RULES[op_name]
    except KeyError:
        raise ShapeError(f"no shape rule for lamina.{op_name}") from None
    return fn(op_name, [ir.RankedTensorType(t) for t in operand_types], attrs)


# ---- helpers -----------------------------------------------------------------

def _bit_width(t: ir.Type) -> int | None:
    """Bits of an integer or float element type (f16/bf16 16, f32 32, ...)."""
    if isinstance(t, ir.IntegerType):
        return t.width
    return {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}.get(str(t))


def broadcast_shapes(*shapes: Shape) -> Shape:
    """numpy/torch broadcasting; a string (or None) is a symbolic size. torch guarantees a
    symbolic size that broadcasts against another size equals it (dynamo specializes 0/1
    and guards equalities), so a static size wins over a symbol."""
    rank = max((len(s) for s in shapes), default=0)
    out: Shape = []
    for i in range(rank):
        size = 1
        for s in shapes:
            j = i - (rank - len(s))
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                continue
            if size == 1:
                size = d
            elif d == size:
                continue
            elif _symbolic(d) and _symbolic(size):
                size = d if size in (None, S.UNKNOWN) else size   # keep the known expression
            elif _symbolic(size):
                size = d                                          # a static size wins
            elif _symbolic(d):
                continue
            elif d != size:
                raise ShapeError(f"shapes {[list(x) for x in shapes]} do not broadcast (dim {i}: {size} vs {d})")
        out.append(size)
    return out


def _symbolic(d) -> bool:
    return d is None or isinstance(d, str)


def normalize_dim(dim: int, rank: int) -> int:
    if not -max(rank, 1) <= dim < max(rank, 1):
        raise ShapeError(f"dim {dim} out of range for rank {rank}")
    return dim % max(rank, 1)


def _elem_rank(t: ir.RankedTensorType):
    return (t.element_type, t.rank)


# ---- rules ---------------------------------------------------------------------

@rule(*UNARY_OPS)
def _unary(name, ts, attrs):
    (t,) = ts
    if name in FLOAT_ONLY_UNARY and not T.is_float(t.element_type):
        raise ShapeError(f"lamina.{name} needs a float operand, got {t}")
    return t


@rule("logical_not")
def _logical_not(name, ts, attrs):
    return T.tensor_type(T.dims_of(ts[0]), "i1")


@rule(*ARITH_BINARY_OPS)
def _arith_binary(name, ts, attrs):
    shape = broadcast_shapes(T.dims_of(ts[0]), T.dims_of(ts[1]))
    elem = T.promote([_elem_rank(t) for t in ts])
    if name == "div" and not T.is_float(elem):
        elem = T.element_type("f32")  # true division, as aten.div.Tensor
    return T.tensor_type(shape, elem)


ORTHOGONAL_POLYNOMIALS = ("chebyshev_t", "chebyshev_u", "chebyshev_v", "chebyshev_w", "shifted_chebyshev_t",
                          "shifted_chebyshev_u", "shifted_chebyshev_v", "shifted_chebyshev_w", "hermite_h",
                          "hermite_he", "laguerre_l", "legendre_p")


@rule("airy_ai")
def _float_unary(name, ts, attrs):
    if not T.is_float(ir.RankedTensorType(ts[0]).element_type):
        raise ShapeError(f"lamina.{name} needs a float operand, got {ts[0]}")
    return ts[0]


@rule("gcd")
def _gcd(name, ts, attrs):
    ea, eb = (ir.RankedTensorType(t).element_type for t in ts)
    if not isinstance(ea, ir.IntegerType) or ea != eb or ir.IntegerType(ea).width == 1:
        raise ShapeError(f"gcd takes a and b of one integer type, got {ea} and {eb}")
    return T.tensor_type(broadcast_shapes(T.dims_of(ts[0]), T.dims_of(ts[1])), ea)


@rule("orthogonal_polynomial")
def _orthogonal_polynomial(name, ts, attrs):
    if attrs.get("kind") not in ORTHOGONAL_POLYNOMIALS:
        raise ShapeError(f"orthogonal_polynomial: unknown kind {attrs.get('kind')!r}")
    ex, en = (ir.RankedTensorType(t).element_type for t in ts)
    if not T.is_float(ex) or ex != en:
        raise ShapeError(f"orthogonal_polynomial takes x and n of one float type, got {ex} and {en}")
    return T.tensor_type(broadcast_shapes(T.dims_of(ts[0]), T.dims_of(ts[1])), ex)


IGAMMA_SERIES = ("lower_series", "upper_series", "continued_fraction", "asymptotic")


@rule("igamma_series")
def _igamma_series(name, ts, attrs):
    if attrs.get("kind") not in IGAMMA_SERIES:
        raise ShapeError(f"igamma_series: unknown kind {attrs.get('kind')!r}")
    ea, ev, eb = (ir.RankedTensorType(t).element_type for t in ts)
    if not T.is_float(ea) or ea != ev:
        raise ShapeError(f"igamma_series takes a and v of one float type, got {ea} and {ev}")
    if not T.is_bool(eb):
        raise ShapeError(f"igamma_series: active must be i1, got {eb}")
    return T.tensor_type(broadcast_shapes(*(T.dims_of(t) for t in ts)), ea)


@rule(*DIVISION_OPS)
def _division(name, ts, attrs):
    shape = broadcast_shapes(T.dims_of(ts[0]), T.dims_of(ts[1]))
    elem = T.promote([_elem_rank(t) for t in ts])
    if T.is_bool(elem):
        raise ShapeError(f"{name} takes integers or floats, got {elem}")
    return T.tensor_type(shape, elem)


@rule(*BITWISE_BINARY_OPS, *SHIFT_OPS)
def _bitwise_binary(name, ts, attrs):
    shape = broadcast_shapes(T.dims_of(ts[0]), T.dims_of(ts[1]))
    elem = T.promote([_elem_rank(t) for t in ts])
    if T.is_float(elem) or (name in SHIFT_OPS and T.is_bool(elem)):
        raise ShapeError(f"{name} takes integers{'' if name in SHIFT_OPS else ' or bools'}, got {elem}")
    return T.tensor_type(shape, elem)


@rule("bitwise_not")
def _bitwise_not(name, ts, attrs):
    if T.is_float(ir.RankedTensorType(ts[0]).element_type):
        raise ShapeError(f"{name} takes integers or bools, got {ts[0]}")
    return ts[0]


@rule(*COMPARE_OPS, *LOGICAL_BINARY_OPS)
def _predicate_binary(name, ts, attrs):
    return T.tensor_type(broadcast_shapes(T.dims_of(ts[0]), T.dims_of(ts[1])), "i1")


@rule("where")
def _where(name, ts, attrs):
    cond, a, b = ts
    if not T.is_bool(cond.element_type):
        raise ShapeError(f"lamina.where condition must be i1, got {cond}")
    shape = broadcast_shapes(T.dims_of(cond), T.dims_of(a), T.dims_of(b))
    return T.tensor_type(shape, T.promote([_elem_rank(a), _elem_rank(b)]))


@rule(*REDUCE_OPS)
def _reduce(name, ts, attrs):
    (t,) = ts
    shape = T.dims_of(t)
    dims = sorted({normalize_dim(d, len(shape)) for d in attrs["dims"]}) if len(shape) else []
    keepdim = bool(attrs["keepdim"])
    out = [1 if i in dims else s for i, s in enumerate(shape) if keepdim or i not in dims]
    elem = t.element_type
    if name in ("reduce_mean", "var") and not T.is_float(elem):
        raise ShapeError(f"lamina.{name} needs a float operand, got {t}")
    if name in ("reduce_sum", "reduce_prod") and (T.is_bool(elem) or T.is_integer(elem)):
        elem = T.element_type("i64")  # torch sums/prods integers and bools in int64
    return T.tensor_type(out, elem)


@rule("matmul")
def _matmul(name, ts, attrs):
    a, b = ts
    if a.rank < 2 or b.rank < 2:
        raise ShapeError(f"lamina.matmul needs rank >= 2 operands, got {a} and {b}")
    sa, sb = T.dims_of(a), T.dims_of(b)
    if isinstance(sa[-1], int) and isinstance(sb[-2], int) and sa[-1] != sb[-2]:
        raise ShapeError(f"lamina.matmul contraction sizes differ: {a} x {b}")
    if str(a.element_type) != str(b.element_type):
        raise ShapeError(f"lamina.matmul operands must share an element type: {a} x {b}")
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    return T.tensor_type(batch + [sa[-2], sb[-1]], a.element_type)


def conv_output_size(size, k: int, stride: int, pad_lo: int, pad_hi: int, dilation: int):
    """One spatial output size of lamina.convolution (symbolic input sizes stay expressions)."""
    span = dilation * (k - 1) + 1
    if isinstance(size, int):
        return max((size + pad_lo + pad_hi - span) // stride + 1, 0)
    return S.simplify(f"(({size}) + {pad_lo + pad_hi - span}) // {stride} + 1")


@rule("convolution")
def _convolution(name, ts, attrs):
    x, w = ts
    r = x.rank - 2
    stride, padding, dilation = (list(attrs[k]) for k in ("stride", "padding", "dilation"))
    groups = int(attrs["groups"])
    if r not in (1, 2, 3) or w.rank != x.rank:
        raise ShapeError(f"lamina.convolution needs input and weight of rank 3-5, got {x} and {w}")
    if len(stride) != r or len(dilation) != r or len(padding) != 2 * r:
        raise ShapeError(f"lamina.convolution with {r} spatial dims needs {r} strides and dilations "
                         f"and {2 * r} paddings, got {stride}, {dilation}, {padding}")
    if min(stride + dilation) < 1 or min(padding) < 0 or groups < 1:
        raise ShapeError(f"lamina.convolution: stride {stride} and dilation {dilation} must be >= 1, "
                         f"padding {padding} >= 0, groups {groups} >= 1")
    if str(x.element_type) != str(w.element_type):
        raise ShapeError(f"lamina.convolution operands must share an element type: {x} x {w}")
    sx, sw = T.dims_of(x), T.dims_of(w)
    if any(not isinstance(d, int) for d in sw):
        raise ShapeError(f"lamina.convolution needs a weight of static shape, got {w}")
    f, cg = sw[0], sw[1]
    if f % groups or (isinstance(sx[1], int) and sx[1] != cg * groups):
        raise ShapeError(f"{sx[1]} input channels and {f} filters do not split into "
                         f"{groups} groups of {cg} channels")
    out = [conv_output_size(sx[2 + i], sw[2 + i], stride[i], padding[i], padding[r + i], dilation[i])
           for i in range(r)]
    return T.tensor_type([sx[0], f] + out, x.element_type)


@rule("transpose")
def _transpose(name, ts, attrs):
    (t,) = ts
    perm = [int(p) for p in attrs["perm"]]
    if sorted(perm) != list(range(t.rank)):
        raise ShapeError(f"lamina.transpose perm {perm} is not a permutation of rank {t.rank}")
    shape = T.dims_of(t)
    return T.tensor_type([shape[p] for p in perm], t.element_type)


def slice_size(size, start: int | str, end: int | str, step: int):
    """Number of elements of input[start:end:step] along one dim (start/end normalized here;
    symbolic bounds come normalized: in [0, size], start <= end)."""
    if isinstance(start, str) or isinstance(end, str):
        n = S.combine("-", end, start)
        return n if step == 1 else S.combine("//", S.combine("+", n, step - 1), step)
    if size is None or size == S.UNKNOWN:
        return S.UNKNOWN
    if isinstance(size, str):
        if start < 0 or end < 0:
            return S.UNKNOWN
        stop = size if end >= 2**62 else f"min({end}, {size})"
        return S.simplify(f"max(0, ({stop} - {start} + {step - 1}) // {step})")
    start = min(max(start + size if start < 0 else start, 0), size)
    end = min(max(end + size if end < 0 else end, 0), size)
    return max(0, (end - start + step - 1) // step)


@rule("slice")
def _slice(name, ts, attrs):
    (t,) = ts
    shape = T.dims_of(t)
    dim = normalize_dim(attrs["dim"], t.rank)
    if attrs["step"] <= 0:
        raise ShapeError("lamina.slice needs step > 0")
    for bound in ("start", "end"):
        if isinstance(attrs[bound], bool) or not isinstance(attrs[bound], (int, str)):
            raise ShapeError(f"lamina.slice {bound} must be an integer or a symbolic expression string")
    shape[dim] = slice_size(shape[dim], attrs["start"], attrs["end"], attrs["step"])
    return T.tensor_type(shape, t.element_type)


@rule("concat")
def _concat(name, ts, attrs):
    a, b = ts
    if a.rank != b.rank or str(a.element_type) != str(b.element_type):
        raise ShapeError(f"lamina.concat operands differ in rank or dtype: {a}, {b}")
    dim = normalize_dim(attrs["dim"], a.rank)
    sa, sb = T.dims_of(a), T.dims_of(b)
    for i, (x, y) in enumerate(zip(sa, sb)):
        if i != dim and isinstance(x, int) and isinstance(y, int) and x != y:
            raise ShapeError(f"lamina.concat sizes differ outside dim {dim}: {a}, {b}")
    sa[dim] = S.combine("+", sa[dim], sb[dim])
    return T.tensor_type(sa, a.element_type)


@rule("index_select")
def _index_select(name, ts, attrs):
    t, idx = ts
    if not T.is_integer(idx.element_type):
        raise ShapeError(f"lamina.index_select index must be an integer tensor, got {idx}")
    dim = normalize_dim(attrs["dim"], t.rank)
    shape = T.dims_of(t)
    return T.tensor_type(shape[:dim] + T.dims_of(idx) + shape[dim + 1:], t.element_type)


@rule("argsort")
def _argsort(name, ts, attrs):
    (t,) = ts
    if T.is_bool(t.element_type):
        raise ShapeError(f"lamina.argsort takes numbers (cast bools to i8 first), got {t}")
    normalize_dim(attrs["dim"], max(t.rank, 1))
    return T.with_element_type(t, T.element_type("i64"))


SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")


@rule("scatter")
def _scatter(name, ts, attrs):
    dest, idx, upd = ts
    if dest.rank != 1 or idx.rank != 1 or upd.rank != 1:
        raise ShapeError(f"lamina.scatter takes 1-D dest, index and updates, got {dest}, {idx}, {upd}")
    if not T.is_integer(idx.element_type):
        raise ShapeError(f"lamina.scatter index must be an integer tensor, got {idx}")
    if str(upd.element_type) != str(dest.element_type):
        raise ShapeError(f"lamina.scatter updates must have dest's element type, got {upd} into {dest}")
    if T.dims_of(idx)[0] != T.dims_of(upd)[0]:
        raise ShapeError(f"lamina.scatter index and updates differ in length: {idx}, {upd}")
    if attrs.get("reduce") not in SCATTER_REDUCTIONS:
        raise ShapeError(f"lamina.scatter reduce must be one of {SCATTER_REDUCTIONS}, got {attrs.get('reduce')!r}")
    return dest


@rule("softmax", "log_softmax")
def _softmax(name, ts, attrs):
    (t,) = ts
    normalize_dim(attrs["dim"], t.rank)
    if not T.is_float(t.element_type):
        raise ShapeError(f"lamina.{name} needs a float operand, got {t}")
    return t


# ---- checks for ops whose result type the builder chooses -------------------------

def _numel(shape):
    n = 1
    for s in shape:
        if not isinstance(s, int):
            return None
        n *= s
    return n


def check_result_type(op_name: str, operand_types: list[ir.Type], attrs: dict, result: ir.Type) -> None:
    """Raise ShapeError when `result` is not a valid result type of the op."""
    r = ir.RankedTensorType(result)
    if op_name in RESULT_GIVEN_OPS:
        if op_name == "reshape":
            a, b = _numel(T.dims_of(operand_types[0])), _numel(T.dims_of(r))
            if a is not None and b is not None and a != b:
                raise ShapeError(f"lamina.reshape changes the element count: {operand_types[0]} -> {r}")
        elif op_name == "broadcast_to":
            src, dst = T.shape_of(operand_types[0]), T.shape_of(r)
            if None not in src + dst and broadcast_shapes(src, dst) != dst:
                raise ShapeError(f"lamina.broadcast_to: {operand_types[0]} does not broadcast to {r}")
        elif op_name == "bitcast":
            src = ir.RankedTensorType(operand_types[0])
            if T.shape_of(src) != T.shape_of(r) or _bit_width(src.element_type) != _bit_width(r.element_type):
                raise ShapeError(f"lamina.bitcast needs the same shape and bit width: {src} -> {r}")
        elif op_name in LIBRARY_CALL_OPS:
            from .library_callees import check_library_call

            check_library_call(op_name, len(operand_types), attrs)
        elif op_name == "iota" and r.rank != 1:
            raise ShapeError("lamina.iota result must be rank 1")
        elif op_name == "size" and (r.rank != 0 or str(r.element_type) != "i64"):
            raise ShapeError("lamina.size result must be tensor<i64>")
        elif op_name == "random_uniform":
            seed = ir.RankedTensorType(operand_types[0])
            if seed.rank != 0 or str(seed.element_type) != "i64" or not T.is_float(r.element_type):
                raise ShapeError(f"lamina.random_uniform takes a tensor<i64> seed and gives floats, got "
                                 f"{operand_types[0]} -> {r}")
        if op_name in ("reshape", "broadcast_to") and str(r.element_type) != str(ir.RankedTensorType(operand_types[0]).element_type):
            raise ShapeError(f"lamina.{op_name} cannot change the element type")
        return
    expected = infer_result_type(op_name, operand_types, attrs)
    if expected != r and not _equivalent_types(expected, r):
        raise ShapeError(f"lamina.{op_name}: result type {r} differs from the inferred {expected}")


def _equivalent_types(a: ir.Type, b: ir.Type) -> bool:
    """Same element type and shape, symbolic sizes possibly stated otherwise (S.equivalent)."""
    if S.strip(a) != S.strip(b):
        return False
    return all(S.equivalent(x, y) for x, y in zip(T.dims_of(a), T.dims_of(b)))
