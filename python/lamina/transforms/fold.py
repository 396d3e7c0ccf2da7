"""lamina-fold-constants: evaluate lamina ops whose operands are all `lamina.constant`.

Each foldable op is computed with numpy and replaced by a `lamina.constant` of exactly
its result type (the old constants stay for lamina-dce). Semantics follow torch:

* operands are first converted to the op's computation type, as torch's type
  promotion does (the result type, or for comparisons the promoted operand type);
* float math is done in float64 and rounded once to the result type (add, sub, mul,
  div and sqrt give torch's correctly rounded f16/f32 results; transcendental
  functions agree to the last bit or so);
* integer math wraps like torch's; an integer `pow` with a negative exponent, an
  out-of-range `index_select` index, a float -> int cast of NaN/inf or an out-of-range
  value (undefined in torch) are left alone; `div` of integers is true division.

Limits (option `max-elements`, default 1024): a result is folded when it has at most
that many elements, or when every operand is a splat and the op maps splats to splats
(elementwise ops, casts, broadcast_to, reshape, transpose, slice) — then any size folds,
as a splat. Ops with dynamic shapes, bf16 tensors (numpy has no bf16) and ops that
fail their shape rule are not folded.

    lamina-opt --lamina-fold-constants="max-elements=4096" in.mlir
"""
from __future__ import annotations

import functools
import math
import warnings

import numpy as np
from mlir import ir

from ..dialect import infer
from ..dialect import ops as lops
from ..dialect import types as T
from .common import (constant_array, defining_lamina, dense_attr, in_module_context, lamina_ops, numpy_dtype,
                     reject_options, splat_attr, splat_scalar, static_shape)
from .registry import register_pass

DEFAULT_MAX_ELEMENTS = 1024
MAX_OPERAND_ELEMENTS = 1 << 20   # do not evaluate on huge constants (the result may still be small)
MAX_MATMUL_FLOPS = 1 << 24


class _Skip(Exception):
    """This op is not folded (unsupported case); not an error."""


# Ops whose result is a splat when every operand is a splat.
_ELEMENTWISE = set(infer.UNARY_OPS) | set(infer.ARITH_BINARY_OPS) | set(infer.COMPARE_OPS) | \
    set(infer.LOGICAL_BINARY_OPS) | {"logical_not", "where", "cast"}
_SPLAT_PRESERVING = _ELEMENTWISE | {"broadcast_to", "reshape", "transpose", "slice"}


def _is_float_dtype(dt) -> bool:
    return np.dtype(dt).kind == "f"


def _float_op(fn, dtype, *args):
    """fn on the args converted to `dtype` (the computation type), in f64 when `dtype` is a float."""
    conv = [np.asarray(a).astype(dtype) for a in args]
    if _is_float_dtype(dtype):
        return fn(*[c.astype(np.float64) for c in conv])
    return fn(*conv)


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


@functools.lru_cache(maxsize=None)
def _libm(name: str):
    """The C library's f64 `name` (exp, pow, ...), elementwise over arrays. numpy's own
    transcendental loops depend on the host (on AVX-512 machines its SIMD pow and exp differ
    from the C library's in the last bit), while ATen's scalar kernels call the C library:
    a folded constant must not change with the machine that compiled it."""
    import ctypes
    import ctypes.util

    lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    fn = getattr(lib, name)
    arity = 2 if name == "pow" else 1
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_double] * arity
    return np.vectorize(fn, otypes=[np.float64])


def _gelu(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


_UNARY_FLOAT = {
    "exp": lambda x: _libm("exp")(x), "log": lambda x: _libm("log")(x), "log1p": lambda x: _libm("log1p")(x),
    "expm1": lambda x: _libm("expm1")(x), "sin": lambda x: _libm("sin")(x), "cos": lambda x: _libm("cos")(x),
    "tanh": lambda x: _libm("tanh")(x), "sigmoid": lambda x: 1.0 / (1.0 + _libm("exp")(-x)), "erf": _erf,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "reciprocal": lambda x: 1.0 / x,
}


def _unary(name, x, attrs, out_dtype):
    if name == "logical_not":
        return x == 0
    if name in _UNARY_FLOAT or name == "gelu":
        if not _is_float_dtype(out_dtype):
            raise _Skip()
        xf = x.astype(out_dtype).astype(np.float64)
        return _gelu(xf, attrs.get("approximate", "none")) if name == "gelu" else _UNARY_FLOAT[name](xf)
    if x.dtype == np.bool_:
        raise _Skip()  # torch rejects neg/abs/relu/... of bool
    if name == "neg":
        return -x
    if name == "abs":
        return np.abs(x)
    if name == "relu":
        return np.where(x > 0, x, np.zeros_like(x)) if not _is_float_dtype(x.dtype) else np.where(np.isnan(x) | (x > 0), x, 0)
    if name == "floor":
        return np.floor(x) if _is_float_dtype(x.dtype) else x
    if name == "ceil":
        return np.ceil(x) if _is_float_dtype(x.dtype) else x
    if name == "round":
        return np.rint(x) if _is_float_dtype(x.dtype) else x   # halves to even
    raise _Skip()


def _binary(name, a, b, operand_types, out_dtype):
    if name in infer.COMPARE_OPS:
        ranks = [(t.element_type, t.rank) for t in operand_types]
        ct = numpy_dtype(T.promote(ranks))
        if ct is None:
            raise _Skip()
        a, b = a.astype(ct), b.astype(ct)
        return {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                "gt": np.greater, "ge": np.greater_equal}[name](a, b)
    if name in infer.LOGICAL_BINARY_OPS:
        fn = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}[name]
        return fn(a != 0, b != 0)
    dt = np.dtype(out_dtype)
    if dt == np.bool_:
        if name == "add":
            return np.logical_or(a, b)
        if name == "mul":
            return np.logical_and(a, b)
        if name in ("maximum", "minimum"):
            return (np.logical_or if name == "maximum" else np.logical_and)(a, b)
        raise _Skip()  # sub/pow of bools: torch rejects or is unusual
    fns = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
           "maximum": np.maximum, "minimum": np.minimum,
           "pow": (lambda x, y: _libm("pow")(x, y)) if _is_float_dtype(dt) else np.power}
    if name == "pow" and not _is_float_dtype(dt):
        bi = b.astype(dt)
        if np.any(bi < 0):
            raise _Skip()  # torch: integers to negative integer powers are not allowed
    if name == "div" and not _is_float_dtype(dt):
        raise _Skip()
    return _float_op(fns[name], dt, a, b)


def _cast(x, out_dtype):
    dt = np.dtype(out_dtype)
    if dt == np.bool_:
        return x != 0  # NaN -> True, as torch
    if _is_float_dtype(x.dtype) and not _is_float_dtype(dt):
        if not np.all(np.isfinite(x)):
            raise _Skip()
        t = np.trunc(x.astype(np.float64))
        info = np.iinfo(dt)
        if np.any(t < info.min) or np.any(t > info.max):
            raise _Skip()  # undefined in torch (C++ UB)
        return t.astype(dt)
    return x.astype(dt)


def _reduce(name, x, attrs, out_dtype):
    rank = x.ndim
    if rank == 0 or not attrs["dims"]:
        raise _Skip()  # the meaning of "no dims" differs between torch entry points: leave it
    dims = tuple(sorted({infer.normalize_dim(d, rank) for d in attrs["dims"]}))
    keep = bool(attrs["keepdim"])
    if name in ("reduce_max", "reduce_min"):
        if any(x.shape[d] == 0 for d in dims):
            raise _Skip()
        return (np.max if name == "reduce_max" else np.min)(x, axis=dims, keepdims=keep)
    if _is_float_dtype(out_dtype):
        xf = x.astype(np.float64)
    else:
        xf = x.astype(np.int64)
    if name == "reduce_sum":
        return np.sum(xf, axis=dims, keepdims=keep)
    if name == "reduce_prod":
        return np.prod(xf, axis=dims, keepdims=keep)
    if name == "reduce_mean":
        return np.mean(xf, axis=dims, keepdims=keep)
    if name == "var":
        return np.var(xf, axis=dims, keepdims=keep, ddof=float(attrs["correction"]))
    raise _Skip()


def _softmax(name, x, attrs):
    dim = infer.normalize_dim(attrs["dim"], x.ndim)
    xf = x.astype(np.float64)
    shifted = xf - np.max(xf, axis=dim, keepdims=True)
    if name == "log_softmax":
        return shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))
    e = np.exp(shifted)
    return e / np.sum(e, axis=dim, keepdims=True)


def evaluate(op: ir.Operation, args: list[np.ndarray], result_shape) -> np.ndarray:
    """numpy value of lamina op `op` on operand values `args` (raises _Skip when unsupported).

    `result_shape` is None when args are 0-d splat scalars (elementwise evaluation).
    """
    name = op.name.split(".", 1)[1]
    attrs = lops.attributes_of(op)
    rt = ir.RankedTensorType(op.results[0].type)
    out_dtype = numpy_dtype(rt.element_type)
    operand_types = [ir.RankedTensorType(v.type) for v in op.operands]
    if out_dtype is None or any(numpy_dtype(t.element_type) is None for t in operand_types):
        raise _Skip()
    if name in _ELEMENTWISE and name not in ("where", "cast") and len(args) == 1:
        return _unary(name, args[0], attrs, out_dtype)
    if name in infer.ARITH_BINARY_OPS or name in infer.COMPARE_OPS or name in infer.LOGICAL_BINARY_OPS:
        return _binary(name, args[0], args[1], operand_types, out_dtype)
    if name == "where":
        cond, a, b = args
        return np.where(cond != 0, a.astype(out_dtype), b.astype(out_dtype))
    if name == "cast":
        return _cast(args[0], out_dtype)
    if name == "iota":
        if np.dtype(out_dtype) == np.bool_:
            raise _Skip()
        return np.arange(result_shape[0], dtype=np.int64).astype(out_dtype)
    if name in ("reshape", "broadcast_to"):
        if result_shape is None:
            return args[0]
        return (np.reshape if name == "reshape" else np.broadcast_to)(args[0], result_shape)
    if name == "transpose":
        return args[0] if result_shape is None else np.transpose(args[0], attrs["perm"])
    if name == "slice":
        if result_shape is None:
            return args[0]
        if isinstance(attrs["start"], str) or isinstance(attrs["end"], str):
            raise _Skip()   # (symbolic bounds: the operand's shape is not static either)
        x = args[0]
        dim = infer.normalize_dim(attrs["dim"], x.ndim)
        index = [slice(None)] * x.ndim
        index[dim] = slice(attrs["start"], attrs["end"], attrs["step"])
        return x[tuple(index)]
    if name == "concat":
        return np.concatenate([args[0], args[1]], axis=infer.normalize_dim(attrs["dim"], args[0].ndim))
    if name == "index_select":
        x, idx = args
        dim = infer.normalize_dim(attrs["dim"], x.ndim)
        if idx.size and (np.min(idx) < 0 or np.max(idx) >= x.shape[dim]):
            raise _Skip()
        return np.take(x, idx.astype(np.int64), axis=dim)
    if name in infer.REDUCE_OPS:
        return _reduce(name, args[0], attrs, out_dtype)
    if name == "matmul":
        a, b = args
        if a.size * b.shape[-1] > MAX_MATMUL_FLOPS:
            raise _Skip()
        return _float_op(np.matmul, out_dtype, a, b)
    if name in ("softmax", "log_softmax"):
        return _softmax(name, args[0], attrs)
    raise _Skip()


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _fold_value(op: ir.Operation, max_elements: int) -> ir.DenseElementsAttr | None:
    """The folded value of `op` as an attribute of its result type, or None."""
    if len(op.results) != 1:
        return None
    rtype = op.results[0].type
    shape = static_shape(rtype)
    if shape is None or numpy_dtype(ir.RankedTensorType(rtype).element_type) is None:
        return None
    if any(static_shape(v.type) is None for v in op.operands):
        return None
    try:
        lops.verify_op(op)
    except Exception:
        return None  # invalid IR is lamina-verify's business, not folded
    name = op.name.split(".", 1)[1]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            scalars = [splat_scalar(v) for v in op.operands]
            if name in _SPLAT_PRESERVING and op.operands and _numel(shape) > 0 and all(s is not None for s in scalars):
                out = np.asarray(evaluate(op, scalars, None))
                if out.size != 1:
                    return None
                return splat_attr(out, rtype)
            if _numel(shape) > max_elements:
                return None
            args = [constant_array(v) for v in op.operands]
            if any(a is None for a in args) or any(a.size > MAX_OPERAND_ELEMENTS for a in args):
                return None
            out = np.asarray(evaluate(op, args, shape))
        except (_Skip, ValueError, TypeError, ArithmeticError, infer.ShapeError):
            return None
    if list(out.shape) != shape:
        return None  # a rule and numpy disagree: do not guess
    return dense_attr(out, rtype)


@in_module_context
def fold_constants(module, max_elements: int = DEFAULT_MAX_ELEMENTS) -> int:
    """Fold every lamina op of `module` whose operands are constants; returns how many.

    Ops are visited in program order, so chains of foldable ops fold in one call.
    """
    folded = 0
    for op in lamina_ops(module):
        if op.name == "lamina.constant":
            continue
        if not all(defining_lamina(v, "constant") is not None for v in op.operands):
            continue
        value = _fold_value(op, max_elements)
        if value is None:
            continue
        with ir.InsertionPoint(op), op.location:
            new = lops.constant(value=value, result_type=op.results[0].type)
        op.results[0].replace_all_uses_with(new)
        op.erase()
        folded += 1
    return folded


@register_pass("lamina-fold-constants", level="L1",
               description="evaluate lamina ops on constant operands (numpy, torch semantics) into lamina.constant; option max-elements=1024")
def run(module: ir.Module, max_elements: int = DEFAULT_MAX_ELEMENTS, **options) -> None:
    reject_options(options)
    fold_constants(module, int(max_elements))
