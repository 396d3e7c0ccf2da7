"""Sorting and searching, composed of lamina ops (torch-mlir keeps these in its
Uncategorized/Sort files):

    sort / argsort / msort      lamina.argsort along the dim (a stable bitonic network,
                                lowering/sorting.py; static size along it), the values gathered
                                by the positions it gives
    topk / kthvalue             the first k (the k-th) of the sorted dim
    median / nanmedian          the lower median of the sorted dim; median is NaN (at the first
                                NaN's index) where the dim has a NaN, nanmedian skips NaNs
    searchsorted / bucketize    a count: lower bound = #{j: !(seq[j] >= x)} (upper: `>`), the
                                predicate of ATen's binary search, so NaN x lands at the end

lamina.argsort orders (value, original position) pairs totally: NaN after every number
(before, descending), equal values by position. So the sort is stable (torch leaves the
order of ties unspecified unless stable=True, and stable=True is this order), and
topk/kthvalue/median return the position torch's stable order gives. Bools sort as 0/1
bytes (i1 compares signed).
"""
from __future__ import annotations

import math

import torch
from mlir import ir

from ..dialect import ops
from ..dialect import types as T
from .indexing import take_along_dim
from .aten_ops import _all_checks, _arg, _static_args, cast, constant, elem, meta_type, rank, register, reshape, shape, slice_, static_dims
from .library_calls import or_library_call, static_or_library

_I64 = "i64"


def _sort_dim(node, x):
    return [_arg(node, "dim", -1)] if x.dim() > 0 else []


_static_sort_dim = static_dims(_sort_dim, "sorting along a symbolic dim")


def _sortable(node) -> str | None:
    """Sorts compile along a static dim; along a symbolic one they are library calls of
    ATen's routine (dialect/library_callees.py)."""
    x = node.args[0].meta.get("val") if node.args else None
    if isinstance(x, torch.Tensor) and x.dtype in (torch.complex64, torch.complex128):
        return f"sorting {x.dtype} values (not supported yet)"
    return static_or_library(_static_sort_dim, "sorting along a symbolic dim")(node)


def _along(v, d: int, r: int):
    """A 1-D tensor shaped to broadcast along dim d of a rank-r tensor."""
    n = shape(v)[0]
    return reshape(v, T.tensor_type([n if i == d else 1 for i in range(r)], elem(v)))


def sort_along(x, d: int, descending: bool, imp=None):
    """(sorted values, int64 original indices) of x along dim d: lamina.argsort (a stable
    bitonic network, lowering/sorting.py), then the values gathered by it (the other dims
    may be symbolic: `imp` computes their sizes)."""
    key = cast(x, T.element_type("i8")) if T.is_bool(elem(x)) else x   # i1 compares signed: true < false
    idx = ops.argsort(key, dim=d, descending=descending)
    return take_along_dim(x, idx, d, imp), idx


def _dim(a, x) -> int:
    return a.dim % rank(x) if rank(x) else 0


def _as_1d(x):
    return reshape(x, T.tensor_type([1], elem(x))) if rank(x) == 0 else x


def _drop_dim(v, d: int, keepdim: bool, r: int):
    """v (size 1 along d) without d unless keepdim; a rank-0 input gives rank 0."""
    if keepdim and r > 0:
        return v
    s = [e for i, e in enumerate(shape(v)) if i != d]
    return reshape(v, T.tensor_type(s, elem(v)))


@register("aten.sort.default", "aten.sort.stable", check=_sortable)
@or_library_call(_static_sort_dim)
def _sort(imp, node, a):
    x = a.self
    if rank(x) == 0:
        return x, constant(0, _I64)
    return sort_along(x, _dim(a, x), bool(a.descending), imp)


@register("aten.topk.default", check=_all_checks(_sortable, _static_args("k")))
@or_library_call(_static_sort_dim)
def _topk(imp, node, a):
    x = a.self
    r = rank(x)
    values, indices = sort_along(_as_1d(x), _dim(a, x), bool(a.largest), imp)
    d = _dim(a, x)
    values, indices = slice_(values, d, 0, a.k), slice_(indices, d, 0, a.k)
    if r == 0:
        return reshape(values, x.type), reshape(indices, T.tensor_type([], T.element_type(_I64)))
    return values, indices


@register("aten.kthvalue.default", check=_all_checks(_sortable, _static_args("k")))
@or_library_call(_static_sort_dim)
def _kthvalue(imp, node, a):
    x = a.self
    r = rank(x)
    d = _dim(a, x)
    values, indices = sort_along(_as_1d(x), d, False, imp)
    values, indices = slice_(values, d, a.k - 1, a.k), slice_(indices, d, a.k - 1, a.k)
    return _drop_dim(values, d, a.keepdim, r), _drop_dim(indices, d, a.keepdim, r)


def _pick(sorted_v, sorted_i, d: int, position):
    """The element of the sorted dim at a per-row position (size 1 along d): the index
    exactly, the value as a max over a mask (-inf / the lowest int elsewhere: exact, NaN
    at the position propagates)."""
    n = shape(sorted_v)[d]
    r = rank(sorted_v)
    i64 = T.element_type(_I64)
    at = ops.eq(_along(ops.iota(result_type=T.tensor_type([n], i64)), d, r), position)
    et = elem(sorted_v)
    lowest = -math.inf if T.is_float(et) else (False if T.is_bool(et) else -(2 ** (ir.IntegerType(et).width - 1)))
    value = ops.reduce_max(ops.where(at, sorted_v, constant(lowest, et)), dims=[d], keepdim=True)
    index = ops.reduce_sum(ops.where(at, sorted_i, constant(0, _I64)), dims=[d], keepdim=True)
    return value, index


def _median(x, d: int, keepdim: bool, skip_nan: bool, imp=None):
    """(lower median, its index) along d; x has rank >= 1 and a static size along d."""
    n = shape(x)[d]
    r = rank(x)
    values, indices = sort_along(x, d, False, imp)
    if not T.is_float(elem(x)):
        mid = (n - 1) // 2
        return (_drop_dim(slice_(values, d, mid, mid + 1), d, keepdim, r),
                _drop_dim(slice_(indices, d, mid, mid + 1), d, keepdim, r))
    numbers = ops.reduce_sum(cast(ops.eq(x, x), T.element_type(_I64)), dims=[d], keepdim=True)
    if skip_nan:   # the lower median of the numbers (NaNs sort last); all NaN: the first NaN
        position = ops.div_floor(ops.maximum(ops.sub(numbers, constant(1, _I64)), constant(0, _I64)),
                                 constant(2, _I64))
    else:          # with a NaN, the first NaN (stable: the first in the input's order)
        position = ops.where(ops.lt(numbers, constant(n, _I64)), numbers, constant((n - 1) // 2, _I64))
    value, index = _pick(values, indices, d, position)
    return _drop_dim(value, d, keepdim, r), _drop_dim(index, d, keepdim, r)


def _nonempty(node) -> str | None:
    x = node.args[0].meta.get("val")
    if isinstance(x, torch.Tensor) and any(isinstance(n, int) and n == 0 for n in x.shape):
        return "the median of an empty tensor (eager raises or returns NaN)"
    return _sortable(node)


def _flat_median(skip_nan: bool):
    def conv(imp, node, a):
        x = a.self
        flat = reshape(x, T.tensor_type([math.prod(shape(x))], elem(x)))
        value, _ = _median(flat, 0, False, skip_nan)
        return value
    return conv


def _dim_median(skip_nan: bool):
    @or_library_call(_static_sort_dim)
    def conv(imp, node, a):
        x = a.self
        if rank(x) == 0:
            return x, constant(0, _I64)
        return _median(x, _dim(a, x), bool(a.keepdim), skip_nan, imp)
    return conv


def _flat_check(node) -> str | None:
    x = node.args[0].meta.get("val")
    if isinstance(x, torch.Tensor) and any(not isinstance(s, int) for s in x.shape):
        return "the median of a tensor of symbolic size (not supported yet)"
    return _nonempty(node)


register("aten.median.default", check=_flat_check)(_flat_median(False))
register("aten.nanmedian.default", check=_flat_check)(_flat_median(True))
register("aten.median.dim", check=_nonempty)(_dim_median(False))
register("aten.nanmedian.dim", check=_nonempty)(_dim_median(True))


# ---- searchsorted / bucketize -------------------------------------------------------------

def _search_check(node) -> str | None:
    if _arg(node, "sorter") is not None:
        return "searchsorted with a sorter (not supported yet)"
    vals = [a.meta.get("val") for a in node.args[:2] if isinstance(a, torch.fx.Node)]
    if any(v.dtype == torch.bool or v.is_complex() for v in vals if isinstance(v, torch.Tensor)):
        return "searching bool or complex values (not supported yet)"
    return None


def _count_below(seq, x, right: bool, want):
    """#{j : !(seq[..., j] >= x)} (right: `>`) for every x, seq's last dim searched; seq is
    1-D or has x's leading dims."""
    et = T.promote_pair(elem(seq), elem(x))
    seq, x = cast(seq, et), cast(x, et)
    m = shape(seq)[-1]
    xs = reshape(x, T.tensor_type(shape(x) + [1], et))
    ss = reshape(seq, T.tensor_type(shape(seq)[:-1] + [1, m], et)) if rank(seq) > 1 else seq
    beyond = ops.gt(ss, xs) if right else ops.ge(ss, xs)
    below = cast(ops.logical_not(beyond), T.element_type(_I64))
    return cast(ops.reduce_sum(below, dims=[rank(below) - 1], keepdim=False), want)


def _side_right(a) -> bool:
    side = getattr(a, "side", None)
    return bool(a.right) or side == "right"


@register("aten.searchsorted.Tensor", check=_search_check)
def _searchsorted(imp, node, a):
    return _count_below(a.sorted_sequence, a.self, _side_right(a), meta_type(node).element_type)


@register("aten.searchsorted.Scalar", check=_search_check)
def _searchsorted_scalar(imp, node, a):
    x = constant(a.self, T.element_type("f64") if isinstance(a.self, float) else T.element_type(_I64))
    return _count_below(a.sorted_sequence, x, _side_right(a), meta_type(node).element_type)


@register("aten.bucketize.Tensor", check=_search_check)
def _bucketize(imp, node, a):
    return _count_below(a.boundaries, a.self, bool(a.right), meta_type(node).element_type)
