"""lamina.convolution -> linalg (the convolution family of lamina-to-linalg).

    x [N, C, *S], w [F, Cg, *K], groups G (C = G * Cg, F = G * Fg)

    xp  = zero padding of x (linalg.fill + tensor.insert_slice; none when padding is 0)
    out = linalg.generic over (n, f, o..., c, k...)
            xp[n, c, o_i * stride_i + k_i * dilation_i] * w[f, c, k...] + out[n, f, o...]
    with groups > 1, over (n, g, f, o..., c, k...) on xp [N, G, Cg, *S], w [G, Fg, Cg, *K] and
    out [N, G, Fg, *O] (expanded; the result collapsed to [N, F, *O])
    init: fill 0; f16/bf16 accumulate in f32 and round once at the end.

Without groups the operands and result keep their shapes, so the result is computed
straight into the kernel's output buffer. The generic carries
`lamina.conv = {stride, dilation, groups}`: the loop-level form every target reads. The CPU
target runs it on the host's convolution library or as loops (codegen/conv_library.py,
`lamina.contraction` as for a matmul); the cuda target emits a library call for it
(codegen/cuda/triton_emit.py).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, tensor

from lamina.dialect import ops
from lamina.dialect import types as T

from .to_linalg import (_collapse, _const, _dim, _empty, _expand, _fill, _generic, _idx, _insert_slice, _is_float,
                        _map_tensor, _name, _result_size, _rt, _shape, _upcast, convert, lowering)

CONV_ATTR = "lamina.conv"


def _plain_type(sizes, elem) -> ir.RankedTensorType:
    return ir.RankedTensorType.get([s if isinstance(s, int) else T.DYNAMIC for s in sizes], elem)


def _pad(x: ir.Value, lo: list[int], hi: list[int]) -> ir.Value:
    """x zero-padded on its spatial dims (2, 3, ...); dynamic sizes grow by tensor.dim + pads."""
    if not any(lo) and not any(hi):
        return x
    sh = _shape(x)
    et = _rt(x).element_type
    dyn = [_dim(x, i) if s is None else None for i, s in enumerate(sh)]
    sizes, grown = [], []
    for i, s in enumerate(sh):
        extra = lo[i - 2] + hi[i - 2] if i >= 2 else 0
        sizes.append(None if s is None else s + extra)
        grown.append(None if s is not None else (dyn[i] if not extra else arith.addi(dyn[i], _idx(extra))))
    init = _fill(_const(et, 0), _empty(_plain_type(sizes, et), grown))
    if 0 in sh:   # nothing to insert (an empty slice's offsets do not verify)
        return init
    return _insert_slice(x, init, [0, 0] + list(lo), [dyn[i] if s is None else s for i, s in enumerate(sh)])


@lowering("convolution")
def _lower_convolution(op: ir.Operation) -> ir.Value:
    x, w = op.operands
    attrs = ops.attributes_of(op)
    stride, dilation, padding = list(attrs["stride"]), list(attrs["dilation"]), list(attrs["padding"])
    groups = int(attrs["groups"])
    rt = _rt(op.results[0])
    elem = rt.element_type
    acc = _upcast(elem)
    r = len(stride)
    sw = _shape(w)
    c = groups * sw[1]
    if _shape(x)[1] is None:   # a symbolic channel count (dynamic=True): the weight's
        xs = _shape(x)
        x = tensor.cast(_plain_type(xs[:1] + [c] + xs[2:], _rt(x).element_type), x)
    xp = _pad(x, padding[:r], padding[r:])
    sx = _shape(xp)
    n, f = sx[0], sw[0]
    cg, fg = c // groups, f // groups
    out_spatial = T.shape_of(rt)[2:]
    n_size = _dim(xp, 0) if n is None else n
    out_dyn = [None if s is not None else _result_size(rt, 2 + i) for i, s in enumerate(out_spatial)]

    # loops: n [g] f o_1..o_r | c k_1..k_r. Without groups the operands and the result keep
    # their shapes; with groups (a g loop; f and c count within a group) x, w and the result
    # are expanded to [N, G, Cg, *S], [G, Fg, Cg, *K], [N, G, Fg, *O] (a g * Fg + f result
    # map would not be invertible).
    gl = 1 if groups > 1 else 0
    L = 2 + gl + r + 1 + r
    d = ir.AffineDimExpr.get
    o = [d(2 + gl + i) for i in range(r)]
    ch = d(2 + gl + r)
    k = [d(3 + gl + r + i) for i in range(r)]
    taps = [o[i] * stride[i] + k[i] * dilation[i] for i in range(r)]
    if gl:
        xp = _expand(xp, _plain_type([n, groups, cg] + sx[2:], _rt(xp).element_type),
                     [[0], [1, 2]] + [[3 + i] for i in range(r)],
                     [n_size, groups, cg] + [_dim(xp, 2 + i) if v is None else v for i, v in enumerate(sx[2:])])
        w = _expand(w, _plain_type([groups, fg] + sw[1:], _rt(w).element_type),
                    [[0, 1]] + [[2 + i] for i in range(1 + r)], [groups, fg] + sw[1:])
        out_sizes = [n, groups, fg] + out_spatial
        x_map = ir.AffineMap.get(L, 0, [d(0), d(1), ch] + taps)
        w_map = ir.AffineMap.get(L, 0, [d(1), d(2), ch] + k)
        o_map = ir.AffineMap.get(L, 0, [d(0), d(1), d(2)] + o)
    else:
        out_sizes = [n, f] + out_spatial
        x_map = ir.AffineMap.get(L, 0, [d(0), ch] + taps)
        w_map = ir.AffineMap.get(L, 0, [d(1), ch] + k)
        o_map = ir.AffineMap.get(L, 0, [d(0), d(1)] + o)
    init = _fill(_const(acc, 0), _empty(_plain_type(out_sizes, acc),
                                        [n_size if n is None else None] + [None] * (1 + gl) + out_dyn))

    if _is_float(acc):
        def body(a, b, out):
            return [arith.addf(out, arith.mulf(convert(a, acc), convert(b, acc)))]
    else:
        def body(a, b, out):
            return [arith.addi(out, arith.muli(convert(a, acc), convert(b, acc)))]
    conv_attr = ir.DictAttr.get({"stride": ir.DenseI64ArrayAttr.get(stride),
                                 "dilation": ir.DenseI64ArrayAttr.get(dilation),
                                 "groups": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), groups)})
    # (a statically empty loop, Cg = 0 or a 0 kernel size, leaves the fill of 0: _generic)
    res = _generic([xp, w], [init], [x_map, w_map, o_map], ["parallel"] * (2 + gl + r) + ["reduction"] * (1 + r),
                   body, attrs={CONV_ATTR: conv_attr})[0]
    if gl:
        res = _collapse(res, [[0], [1, 2]] + [[3 + i] for i in range(r)])
    if _name(acc) != _name(elem):
        res = _map_tensor(res, _plain_type(_shape(res), elem), lambda s: convert(s, elem))
    return res

