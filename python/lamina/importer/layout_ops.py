"""Layout ops composed of index_select, concat and slice (static sizes along the dims they
touch; a symbolic one is reported and falls back):

    flip(x, dims)               index_select with n-1-iota along each dim
    constant_pad_nd(x, pad, v)  per dim (last first): slice for negative pads, concat with
                                a constant block of v for positive ones
"""
from __future__ import annotations

import torch

from ..dialect import ops
from ..dialect import types as T
from .aten_ops import constant, elem, rank, register, shape, slice_


def _static_dims(dims_of):
    def check(node):
        x = node.args[0].meta.get("val") if node.args and isinstance(node.args[0], torch.fx.Node) else None
        if not isinstance(x, torch.Tensor):
            return None
        for d in dims_of(node, x):
            if not isinstance(x.shape[d % max(x.dim(), 1)], int):
                return "a symbolic size along a flipped or padded dim (not supported yet)"
        return None
    return check


def _flip_dims(node, x):
    return list(node.args[1]) if len(node.args) > 1 else list(node.kwargs.get("dims", []))


def _pad_dims(node, x):
    pad = list(node.args[1]) if len(node.args) > 1 else list(node.kwargs.get("pad", []))
    return [x.dim() - 1 - i for i in range(len(pad) // 2)]


@register("aten.flip.default", check=_static_dims(_flip_dims))
def _flip(imp, node, a):
    x = a.self
    if rank(x) == 0:
        return x
    for d in sorted({d % rank(x) for d in a.dims}):
        n = shape(x)[d]
        if n <= 1:
            continue
        i64 = T.element_type("i64")
        iota = ops.iota(result_type=T.tensor_type([n], i64))
        idx = ops.sub(constant(n - 1, i64), iota)
        x = ops.index_select(x, idx, dim=d)
    return x


@register("aten.constant_pad_nd.default", check=_static_dims(_pad_dims))
def _constant_pad_nd(imp, node, a):
    x = a.self
    pad = list(a.pad)
    value = a.value if a.value is not None else 0
    et = elem(x)
    for i in range(len(pad) // 2):
        d = rank(x) - 1 - i
        lo, hi = int(pad[2 * i]), int(pad[2 * i + 1])
        n = shape(x)[d]
        if lo < 0 or hi < 0:   # negative pads cut
            x = slice_(x, d, max(-lo, 0), n - max(-hi, 0))
        parts = []
        for amount in (lo, hi):
            if amount > 0:
                s = list(shape(x))
                s[d] = amount
                v = value if T.is_float(et) else (bool(value) if T.is_bool(et) else int(value))
                parts.append(constant(v, et, s))
            else:
                parts.append(None)
        if parts[0] is not None:
            x = ops.concat(parts[0], x, dim=d)
        if parts[1] is not None:
            x = ops.concat(x, parts[1], dim=d)
    return x
