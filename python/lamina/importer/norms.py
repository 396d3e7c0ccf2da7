"""linalg_vector_norm composed of lamina reductions (every p torch takes):

    p = 2: sqrt(sum(x^2))   p = 1: sum(|x|)   p = inf / -inf: max / min of |x|
    p = 0: count of non-zeros   other p: sum(|x|^p)^(1/p)
computed in the result's float type (`dtype` when given), over `dim` (all when None).
"""
from __future__ import annotations

import math

from ..dialect import ops
from ..dialect import types as T
from .aten_ops import cast, constant, meta_type, norm_dims, rank, register


@register("aten.linalg_vector_norm.default")
def _vector_norm(imp, node, a):
    want = meta_type(node)
    et = want.element_type
    x = cast(a.self, et)
    p = float(a.ord) if a.ord is not None else 2.0
    if rank(x) == 0:
        x = ops.reshape(x, result_type=T.tensor_type([1], et))
    dims = norm_dims(a.dim, rank(x))
    keep = bool(a.keepdim)

    def finish(v):
        return v if v.type == want else ops.reshape(v, result_type=want)

    if p == 0.0:
        nz = ops.cast(ops.ne(x, constant(0, et)), result_type=x.type)
        return finish(ops.reduce_sum(nz, dims=dims, keepdim=keep))
    ax = ops.abs(x)
    if math.isinf(p):
        return finish((ops.reduce_max if p > 0 else ops.reduce_min)(ax, dims=dims, keepdim=keep))
    if p == 1.0:
        return finish(ops.reduce_sum(ax, dims=dims, keepdim=keep))
    if p == 2.0:
        return finish(ops.sqrt(ops.reduce_sum(ops.mul(x, x), dims=dims, keepdim=keep)))
    s = ops.reduce_sum(ops.pow(ax, constant(p, et)), dims=dims, keepdim=keep)
    return finish(ops.pow(s, constant(1.0 / p, et)))
