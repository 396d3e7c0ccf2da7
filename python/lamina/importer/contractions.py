"""Contractions beyond matmul, composed of lamina ops:

    _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim)   (nn.Bilinear, nn.functional.bilinear)
        each input unsqueezed at its expand dims, the three multiplied (broadcast) and summed
        over sumdim: one fused reduction (products are not materialized)
"""
from __future__ import annotations

import torch

from ..dialect import ops
from ..dialect import types as T
from .aten_ops import cast, elem, meta_type, register, reshape, shape


def _unsqueezed(v, dims):
    s = list(shape(v))
    for d in sorted(dims):
        s.insert(d, 1)
    return reshape(v, T.tensor_type(s, elem(v)))


def _static(node) -> str | None:
    for arg in node.args[:3]:
        v = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
        if isinstance(v, torch.Tensor) and any(not isinstance(s, int) for s in v.shape):
            return "_trilinear with symbolic sizes (not supported yet)"
    return None


@register("aten._trilinear.default", check=_static)
def _trilinear(imp, node, a):
    et = meta_type(node).element_type
    i1 = _unsqueezed(cast(a.i1, et), a.expand1)
    i2 = _unsqueezed(cast(a.i2, et), a.expand2)
    i3 = _unsqueezed(cast(a.i3, et), a.expand3)
    product = ops.mul(ops.mul(i1, i2), i3)
    if not a.sumdim:
        return product
    # (an integer sum widens to i64 as torch.sum does; _trilinear keeps its inputs' type)
    return cast(ops.reduce_sum(product, dims=sorted(d % len(shape(product)) for d in a.sumdim), keepdim=False), et)
