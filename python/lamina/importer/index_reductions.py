"""Reductions that return positions, composed of lamina reductions:

    argmax(x, dim)      m = reduce_max(x, dim); first i with x[i] == m, where a NaN maximum
                        (reduce_max propagates NaN, as torch) matches the first NaN
    argmin              the same with reduce_min
    max.dim / min.dim   (values, indices) of the above

The first position is reduce_min(where(match, iota along dim, n)); ties keep the first, as
torch's CPU and CUDA kernels do. dim=None reduces the flattened tensor.
"""
from __future__ import annotations

from ..dialect import ops
from ..dialect import symbols as S
from ..dialect import types as T
from .aten_ops import constant, elem, rank, register, reshape, shape


def _flat(x):
    return reshape(x, T.tensor_type([S.product(shape(x))], elem(x)))


def _positions(x, d: int):
    """int64 iota along dim d, shaped to broadcast against x."""
    i64 = T.element_type("i64")
    n = shape(x)[d]
    iota = ops.iota(result_type=T.tensor_type([n], i64))
    return reshape(iota, T.tensor_type([n if i == d else 1 for i in range(rank(x))], i64))


def _arg_extreme(x, dim, keepdim: bool, largest: bool):
    """(values, int64 indices) of max/min along dim (None: over everything)."""
    keep_shape = None
    if dim is None:
        keep_shape = [1] * rank(x)
        x = _flat(x) if rank(x) != 1 else x
        d = 0
    else:
        if rank(x) == 0:
            x = reshape(x, T.tensor_type([1], elem(x)))
            keep_shape = []
        d = dim % rank(x)
    if shape(x)[d] == 0:
        raise ValueError("argmax/argmin of an empty dim (eager raises)")
    m = (ops.reduce_max if largest else ops.reduce_min)(x, dims=[d], keepdim=True)
    match = ops.eq(x, m)
    if T.is_float(elem(x)):
        nan_x, nan_m = ops.ne(x, x), ops.ne(m, m)
        match = ops.where(nan_m, nan_x, match)
    n = shape(x)[d]
    i64 = T.element_type("i64")
    big = constant(n, i64) if isinstance(n, int) else constant(2 ** 62, i64)
    idx = ops.reduce_min(ops.where(match, _positions(x, d), big), dims=[d], keepdim=True)
    if keep_shape is not None:   # dim=None (or a 0-d input): the result is 0-d, or all ones with keepdim
        want = keep_shape if keepdim else []
        return reshape(m, T.tensor_type(want, elem(m))), reshape(idx, T.tensor_type(want, i64))
    if not keepdim:
        out = [s for i, s in enumerate(shape(x)) if i != d]
        m = reshape(m, T.tensor_type(out, elem(m)))
        idx = reshape(idx, T.tensor_type(out, i64))
    return m, idx


def _nonempty(node):
    x = node.args[0].meta.get("val") if hasattr(node.args[0], "meta") else None
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if x is None or not hasattr(x, "shape"):
        return None
    if x.numel() == 0 and (dim is None or x.dim() == 0 or x.shape[dim % x.dim()] == 0):
        return "argmax/argmin/max/min over an empty dim (eager raises an error)"
    if dim is not None and x.dim() > 0 and not isinstance(x.shape[dim % x.dim()], int):
        return None
    return None


@register("aten.argmax.default", check=_nonempty)
def _argmax(imp, node, a):
    return _arg_extreme(a.self, a.dim, bool(a.keepdim), True)[1]


@register("aten.argmin.default", check=_nonempty)
def _argmin(imp, node, a):
    return _arg_extreme(a.self, a.dim, bool(a.keepdim), False)[1]


@register("aten.max.dim", check=_nonempty)
def _max_dim(imp, node, a):
    return _arg_extreme(a.self, a.dim, bool(a.keepdim), True)


@register("aten.min.dim", check=_nonempty)
def _min_dim(imp, node, a):
    return _arg_extreme(a.self, a.dim, bool(a.keepdim), False)
