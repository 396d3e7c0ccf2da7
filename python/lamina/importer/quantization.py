"""Quantization, composed of lamina ops (torch-mlir's "Quantized" family), exactly as ATen's
CPU kernels round and clamp (checked against eager at ties, NaN, +-inf and out-of-range):

    fake_quantize_per_tensor_affine_cachemask(x, scale, zp, qmin, qmax) -> (out, mask)
        q   = zp + nearbyint(x * (1.0f / scale))          float32, halves to even
        out = (fmin(fmax(q, qmin), qmax) - zp) * scale     NaN -> qmin, +inf -> qmax
        mask = qmin <= q <= qmax
      (the _tensor_qparams overload reads scale, zp and the enabled flag from tensors)
    fake_quantize_per_channel_affine_cachemask(x, scale[C], zp[C], axis, qmin, qmax)
        the same per channel of `axis`, but q goes through int64 before the clamp, as the
        kernel casts first: NaN and |q| >= 2^63 (+inf too) become int64's minimum -> qmin,
        masked out. On CUDA both kernels cast first, and the cast saturates (NaN -> the
        minimum): the importer follows the graph's device. (Measured on an H100: per
        tensor bit-exact on a grid of ties, NaN and infinities; per channel bit-exact on
        finite in-range values, while NaN, +-inf and |x / scale| >= 2^63 land on other
        bounds than CUDA's kernel gives.)
    quantize_per_tensor(x, scale, zp, dtype) -> dequantize
        a quantized tensor lives only inside the graph, as its integer values in i64:
        clamp(nearbyint(fma(x, 1.0f / scale, zp)), dtype's range), FBGEMM's rounding (zp is
        added before rounding, unlike the fake-quantize kernels; NaN -> the maximum);
        dequantize is float(q - zp) * scale
"""
from __future__ import annotations

import torch

from ..dialect import ops
from ..dialect import types as T
from .aten_ops import Converter, CONVERTERS, _resolve, cast, constant, elem, rank, register, reshape, shape

_F32 = "f32"
# (qint32 takes another ATen path, with its own rounding and overflow: not supported yet)
QUANTIZED_RANGES = {torch.quint8: (0, 255), torch.qint8: (-128, 127)}
# lamina's value of each quantized intermediate: (integer values, scale, zero point), by node
_QPARAMS_KEY = "lamina_quantized"


def _f32():
    return T.element_type(_F32)


def _inverse(scale):
    """1.0f / scale, in float32 (the kernels' inv_scale)."""
    return ops.div(constant(1.0, _F32), cast(scale, _f32()))


def _unclamped(x, scale, zp):
    """zp + nearbyint(x * inv_scale) in float32."""
    return ops.add(ops.round(ops.mul(cast(x, _f32()), _inverse(scale))), cast(zp, _f32()))


def _fclamp(q, lo: float, hi: float):
    """fmin(fmax(q, lo), hi): NaN -> lo (a comparison with NaN is false)."""
    lo_c, hi_c = constant(lo, _F32), constant(hi, _F32)
    q = ops.where(ops.ge(q, lo_c), q, lo_c)
    return ops.where(ops.le(q, hi_c), q, hi_c)


def _in_range(q, lo: float, hi: float):
    return ops.logical_and(ops.ge(q, constant(lo, _F32)), ops.le(q, constant(hi, _F32)))


def _fake_out(clamped, zp, scale, like):
    return cast(ops.mul(ops.sub(clamped, cast(zp, _f32())), cast(scale, _f32())), elem(like))


def _float_input(node) -> str | None:
    x = node.args[0].meta.get("val")
    if isinstance(x, torch.Tensor) and not x.dtype.is_floating_point:
        return f"fake quantization of {x.dtype} values"
    return None


def _through_int64(q, node):
    """static_cast<int64_t>(q) as the device's kernel computes it: on the CPU, NaN and values
    beyond int64 become its minimum (x86's conversion); on CUDA, NaN becomes the minimum
    and the rest saturate (measured on an H100)."""
    lo, hi = -(2.0 ** 63), 2.0 ** 63
    if _on_cuda(node):
        q = ops.where(ops.ne(q, q), constant(lo, _F32), q)
        q = ops.where(ops.ge(q, constant(hi, _F32)), constant(hi, _F32), q)
        return ops.where(ops.lt(q, constant(lo, _F32)), constant(lo, _F32), q)
    bad = ops.logical_or(ops.ne(q, q), ops.logical_not(_in_range(q, lo, hi - 1)))
    return ops.where(bad, constant(lo, _F32), q)


def _on_cuda(node) -> bool:
    val = node.meta.get("val")
    val = val[0] if isinstance(val, (tuple, list)) else val
    return isinstance(val, torch.Tensor) and val.device.type == "cuda"


def _per_tensor(x, scale, zp, qmin, qmax, node):
    q = _unclamped(x, scale, zp)
    if _on_cuda(node):   # CUDA's kernel casts to int64 before the clamp
        q = _through_int64(q, node)
    # the CPU kernel clamps in float: fmax(NaN, qmin) = qmin, and the mask is false
    return _fake_out(_fclamp(q, qmin, qmax), zp, scale, x), _in_range(q, qmin, qmax)


@register("aten.fake_quantize_per_tensor_affine_cachemask.default", check=_float_input)
def _fake_quant_tensor(imp, node, a):
    return _per_tensor(a.self, constant(float(a.scale), _F32), constant(int(a.zero_point), _F32),
                       a.quant_min, a.quant_max, node)


@register("aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default", check=_float_input)
def _fake_quant_tensor_qparams(imp, node, a):
    x = a.self
    out, mask = _per_tensor(x, cast(a.scale, _f32()), cast(a.zero_point, _f32()), a.quant_min, a.quant_max, node)
    enabled = ops.ne(cast(a.fake_quant_enabled, _f32()), constant(0.0, _F32))   # off: x itself, all kept
    enabled = reshape(enabled, T.tensor_type([1] * rank(x), T.element_type("i1"))) if rank(x) else \
        reshape(enabled, T.tensor_type([], T.element_type("i1")))
    return ops.where(enabled, out, x), ops.logical_or(mask, ops.logical_not(enabled))


def _per_channel_check(node) -> str | None:
    reason = _float_input(node)
    if reason:
        return reason
    zp = node.args[2].meta.get("val")
    if isinstance(zp, torch.Tensor) and zp.dtype.is_floating_point:
        return "fake quantization with a floating-point zero point (not supported yet)"
    return None


def _along(v, axis: int, r: int):
    """A per-channel vector shaped to broadcast along `axis` of a rank-r tensor."""
    return reshape(v, T.tensor_type([shape(v)[0] if i == axis else 1 for i in range(r)], elem(v)))


@register("aten.fake_quantize_per_channel_affine_cachemask.default", check=_per_channel_check)
def _fake_quant_channel(imp, node, a):
    x = a.self
    r = rank(x)
    axis = a.axis % max(r, 1)
    scale = _along(cast(a.scale, _f32()), axis, r) if r else cast(a.scale, _f32())
    zp = _along(cast(a.zero_point, _f32()), axis, r) if r else cast(a.zero_point, _f32())
    q = _through_int64(_unclamped(x, scale, zp), node)
    return _fake_out(_fclamp(q, a.quant_min, a.quant_max), zp, scale, x), _in_range(q, a.quant_min, a.quant_max)


# ---- quantize_per_tensor -> dequantize ---------------------------------------------------------

def _quantize_check(node) -> str | None:
    reason = _float_input(node)
    if reason:
        return reason
    dtype = node.args[3] if len(node.args) > 3 else node.kwargs.get("dtype")
    if dtype not in QUANTIZED_RANGES:
        return f"quantizing to {dtype} (lamina takes quint8 and qint8)"
    for user in node.users:
        if user.target is not torch.ops.aten.dequantize.self:
            return (f"a quantized tensor used by {user.target} (lamina keeps quantized values only "
                    "between quantize_per_tensor and dequantize)")
    return None


def _quantize(imp, node, a):
    qmin, qmax = QUANTIZED_RANGES[a.dtype]
    f64 = T.element_type("f64")
    scale = constant(float(a.scale), _F32) if isinstance(a.scale, float) else cast(a.scale, _f32())
    zp = constant(int(a.zero_point), "i64") if isinstance(a.zero_point, int) else cast(a.zero_point, T.element_type("i64"))
    # FBGEMM rounds fma(x, inv_scale, zp) in float32: the product is exact in float64, and
    # the sum rounds once to float32 (exactly, for the float32 x and inv_scale of any scale)
    t = ops.add(ops.mul(cast(a.self, f64), cast(_inverse(scale), f64)), cast(zp, f64))
    q = cast(ops.round(cast(t, _f32())), f64)
    q = ops.where(ops.ne(q, q), constant(float(qmax), "f64"), q)   # NaN -> the maximum
    lo, hi = constant(float(qmin), "f64"), constant(float(qmax), "f64")
    q = ops.where(ops.ge(q, lo), q, lo)
    q = ops.where(ops.le(q, hi), q, hi)
    node.meta[_QPARAMS_KEY] = (scale, zp)
    return cast(q, T.element_type("i64"))


def _dequantize_check(node) -> str | None:
    src = node.args[0]
    if not isinstance(src, torch.fx.Node) or src.target not in _QUANTIZE_TARGETS:
        return "dequantize of a quantized tensor made outside the graph"
    return None


def _dequantize(imp, node, a):
    scale, zp = node.args[0].meta[_QPARAMS_KEY]
    return ops.mul(cast(ops.sub(a.self, zp), _f32()), scale)   # (q - zp) exact in int64, as FBGEMM


# These take or give quantized dtypes, which the importer's dtype checks otherwise refuse.
_QUANTIZE_TARGETS = {t for t in (_resolve("aten.quantize_per_tensor.default"),
                                 _resolve("aten.quantize_per_tensor.tensor_qparams")) if t is not None}
for _t in _QUANTIZE_TARGETS:
    CONVERTERS[_t] = Converter(_quantize, _quantize_check, quantized="gives")
if _resolve("aten.dequantize.self") is not None:
    CONVERTERS[_resolve("aten.dequantize.self")] = Converter(_dequantize, _dequantize_check, quantized="takes")
