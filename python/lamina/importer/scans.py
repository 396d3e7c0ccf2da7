"""Scans along one dim (static size along it; along a symbolic one, ATen's routine as a
library call), composed of lamina ops as a Hillis-Steele
prefix: log2(n) steps of `x = combine(shift(x, k), x)` for k = 1, 2, 4, ..., where shift
moves the dim by k and fills with the combine's identity (a slice and a concat):

    cumsum / cumprod            add / mul (ints in int64 as torch; f16/bf16 in f32, rounded once)
    cummax / cummin             (value, index) pairs: the later one wins where it is >= (<=) the
                                earlier or NaN, torch's rule, which is associative (a total order with
                                NaN largest, ties to the later index)

Every step is elementwise, so a scan is one fused kernel on both targets; floating-point sums
add in a tree order (error O(log n) ulp, not the sequential loop's O(n)).
"""
from __future__ import annotations

import math

import torch
from mlir import ir

from ..dialect import ops
from ..dialect import types as T
from .aten_ops import cast, constant, elem, meta_type, rank, register, reshape, shape, slice_, static_dims
from .library_calls import or_library_call, static_or_library


def _scan_dims(node, x):
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    return [dim] if x.dim() > 0 else []


_static_dim = static_dims(_scan_dims, "a scan along a symbolic dim")
# along a symbolic dim, ATen's routine as a library call (dialect/library_callees.py)
_scannable = static_or_library(_static_dim, "a scan along a symbolic dim")


def _shifted(v, d: int, k: int, fill):
    """v moved by k along d (v[i - k]), the first k entries `fill`."""
    n = shape(v)[d]
    head = list(shape(v))
    head[d] = k
    if k >= n:
        return constant(fill, elem(v), list(shape(v)))
    return ops.concat(constant(fill, elem(v), head), slice_(v, d, 0, n - k), dim=d)


def _scan(values, d: int, combine, fills):
    """Inclusive scan of a tuple of tensors along d with combine(earlier, later) -> tuple."""
    n = shape(values[0])[d]
    k = 1
    while k < n:
        earlier = tuple(_shifted(v, d, k, f) for v, f in zip(values, fills))
        values = combine(earlier, values, k)
        k *= 2
    return values


def inclusive_cumsum(x):
    """The cumulative sum of a 1-D integer tensor."""
    (out,) = _scan((x,), 0, lambda e, l, k: (ops.add(e[0], l[0]),), (0,))
    return out


def _scan_one(node, a, combine, identity):
    """The inclusive scan of a.self along a.dim in the result's compute type (f16/bf16 in
    f32, rounded once): combine(earlier, later, et) of two tensors, identity(et) its fill."""
    want = meta_type(node).element_type
    et = T.widened(want)
    x = cast(a.self, et)
    if rank(x) == 0 or shape(x)[a.dim % rank(x)] == 0:
        return cast(x, want)
    (out,) = _scan((x,), a.dim % rank(x), lambda e, l, k: (combine(e[0], l[0], et),), (identity(et),))
    return cast(out, want)


@register("aten.cumsum.default", "aten.cumprod.default", check=_scannable)
@or_library_call(_static_dim)
def _cumsum_cumprod(imp, node, a):
    is_sum = node.target is torch.ops.aten.cumsum.default
    op = ops.add if is_sum else ops.mul
    return _scan_one(node, a, lambda u, v, et: op(u, v),
                     lambda et: bool(not is_sum) if T.is_bool(et) else (0 if is_sum else 1))


def _register_cum_extreme(name: str, largest: bool):
    @register(f"aten.{name}.default", check=_scannable)
    @or_library_call(_static_dim)
    def _cum_extreme(imp, node, a):
        x = a.self
        i64 = T.element_type("i64")
        if rank(x) == 0:
            return x, constant(0, i64)
        if T.is_bool(elem(x)):   # as 0/1 bytes: i1 compares signed (true < false)
            values, indices = _cum_extreme(imp, node, type(a)({**a, "self": cast(x, T.element_type("i8"))}))
            return cast(values, elem(x)), indices
        d = a.dim % rank(x)
        n = shape(x)[d]
        if n == 0:
            return x, ops.broadcast_to(constant(0, i64), result_type=T.with_element_type(x.type, i64))
        iota = ops.iota(result_type=T.tensor_type([n], i64))
        idx = ops.broadcast_to(reshape(iota, T.tensor_type([n if i == d else 1 for i in range(rank(x))], i64)),
                               result_type=T.with_element_type(x.type, i64))
        et = elem(x)
        bits = ir.IntegerType(et).width if not T.is_float(et) else 0
        lowest = (-math.inf if largest else math.inf) if T.is_float(et) else \
            (-(2 ** (bits - 1)) if largest else 2 ** (bits - 1) - 1)

        def combine(earlier, later, k):
            (ve, ie), (vl, il) = earlier, later
            better = ops.ge(vl, ve) if largest else ops.le(vl, ve)
            if T.is_float(et):
                better = ops.logical_or(better, ops.ne(vl, vl))
                # an earlier NaN stays unless the later one is NaN too
                better = ops.logical_and(better, ops.logical_or(ops.eq(ve, ve), ops.ne(vl, vl)))
            return ops.where(better, vl, ve), ops.where(better, il, ie)

        values, indices = _scan((x, idx), d, combine, (lowest, -1))
        return values, indices


_register_cum_extreme("cummax", True)
_register_cum_extreme("cummin", False)


@register("aten.logcumsumexp.default", check=_scannable)
@or_library_call(_static_dim)
def _logcumsumexp(imp, node, a):
    """A scan of log(exp(a) + exp(b)) = max + log1p(exp(min - max)) (ATen's helper: equal
    infinities give themselves, so -inf stays -inf, not NaN); f16/bf16 in f32."""
    def combine(u, v, et):
        lo, hi = ops.minimum(u, v), ops.maximum(u, v)
        summed = ops.add(hi, ops.log1p(ops.exp(ops.sub(lo, hi))))
        same_inf = ops.logical_and(ops.eq(lo, hi), ops.eq(ops.abs(hi), constant(math.inf, et)))
        return ops.where(same_inf, hi, summed)

    return _scan_one(node, a, combine, lambda et: -math.inf)
