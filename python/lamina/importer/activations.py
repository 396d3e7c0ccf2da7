"""Activations composed of lamina primitives:

    elu(x; alpha, scale, input_scale) = scale * (x > 0 ? x : alpha * expm1(x * input_scale))
    (selu and celu reach the importer as elu with their constants)
"""
from __future__ import annotations

from ..dialect import ops
from .aten_ops import constant, elem, register


@register("aten.elu.default")
def _elu(imp, node, a):
    x = a.self
    et = elem(x)
    alpha, scale, input_scale = (float(v) if v is not None else d
                                 for v, d in ((a.alpha, 1.0), (a.scale, 1.0), (a.input_scale, 1.0)))
    inner = x if input_scale == 1.0 else ops.mul(x, constant(input_scale, et))
    neg = ops.expm1(inner)
    if alpha != 1.0:
        neg = ops.mul(neg, constant(alpha, et))
    out = ops.where(ops.gt(x, constant(0, et)), x, neg)
    return out if scale == 1.0 else ops.mul(out, constant(scale, et))
