"""any / all (every overload: one dim, several dims, everything) as counts: any(x) is
"some element is non-zero", sum(x != 0) > 0; all(x) is sum(x == 0) == 0. Counting keeps the
empty-reduction values torch gives (any of nothing is False, all of nothing is True) where a
max / min would return its neutral element; NaN is non-zero, as in torch."""
from __future__ import annotations

from ..dialect import ops
from ..dialect import types as T
from .aten_ops import constant, elem, meta_type, norm_dims, rank, register


def _count_reduce(x, dims, keepdim: bool, want_any: bool, result_type):
    zero = constant(False if T.is_bool(elem(x)) else 0, elem(x))
    hits = ops.ne(x, zero) if want_any else ops.eq(x, zero)
    if rank(x) == 0:
        out = hits if want_any else ops.logical_not(hits)
        return _as_result(out, result_type)
    counts = ops.cast(hits, result_type=T.with_element_type(hits.type, T.element_type("i64")))
    total = ops.reduce_sum(counts, dims=norm_dims(dims, rank(x)), keepdim=bool(keepdim))
    none = constant(0, "i64")
    out = ops.ne(total, none) if want_any else ops.eq(total, none)
    return _as_result(out, result_type)


def _as_result(out, result_type):
    """The bool answer in torch's result type: uint8 inputs give uint8 (0 / 1)."""
    if elem(out) != result_type.element_type:
        out = ops.cast(out, result_type=T.with_element_type(out.type, result_type.element_type))
    return out if out.type == result_type else ops.reshape(out, result_type=result_type)


def _counting(want_any: bool):
    """One converter for every overload (.dim, .dims, .default: no dim means all dims)."""
    def conv(imp, node, a):
        return _count_reduce(a.self, a.get("dim"), a.get("keepdim", False), want_any, meta_type(node))
    return conv


register("aten.any.dim", "aten.any.dims", "aten.any.default")(_counting(True))
register("aten.all.dim", "aten.all.dims", "aten.all.default")(_counting(False))
