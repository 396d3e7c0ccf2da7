"""Elementwise ops composed of lamina primitives (exact: no new arithmetic):

    sign(x)  = (x > 0) - (x < 0)        NaN -> 0 and -0.0 -> +0.0, as torch gives; bool: x
    trunc(x) = x < 0 ? ceil(x) : floor(x)   (-0.3 -> -0.0, NaN and inf pass); integers: x
    round(x, decimals=d) = round(x * 10^d) / 10^d   (d < 0: round(x / 10^-d) * 10^-d), as
                           ATen's kernel computes it; round itself is lamina.round
    lcm(a, b) = g == 0 ? 0 : |a / g * b|, g = gcd(a, b)   (torch's calc_lcm, int8/int16 in
                           int as C++ promotes them; the division by a g of 0 is never
                           made: its divisor is 1 there)
"""
from __future__ import annotations

import torch
from mlir import ir

from ..dialect import ops
from ..dialect import types as T
from .aten_ops import cast, constant, elem, meta_type, register, wrap_uint8


@register("aten.sign.default")
def _sign(imp, node, a):
    x = a.self
    et = elem(x)
    if T.is_bool(et):
        return x
    zero = constant(0, et)
    pos = ops.cast(ops.gt(x, zero), result_type=x.type)
    neg = ops.cast(ops.lt(x, zero), result_type=x.type)
    return ops.sub(pos, neg)


@register("aten.trunc.default")
def _trunc(imp, node, a):
    x = a.self
    if not T.is_float(elem(x)):
        return x
    return ops.where(ops.lt(x, constant(0, elem(x))), ops.ceil(x), ops.floor(x))


@register("aten.round.decimals")
def _round_decimals(imp, node, a):
    x = a.self
    et = elem(x)
    if not T.is_float(et):
        return x
    d = int(a.decimals)
    if d == 0:
        return ops.round(x)
    scale = constant(10.0 ** abs(d), et)
    if d > 0:
        return ops.div(ops.round(ops.mul(x, scale)), scale)
    return ops.mul(ops.round(ops.div(x, scale)), scale)


def _integer_shift(node):
    val = node.meta.get("val")
    if val is not None and (val.dtype.is_floating_point or val.dtype == torch.bool):
        return f"a shift of {val.dtype} values (torch scales floats by powers of 2; not supported)"
    return None


def _in_result_dtype(op_name: str):
    """A binary op on self and other (tensors or scalars), both cast to the result's dtype
    (torch's promotion, read off the node) first."""
    def conv(imp, node, a):
        want = meta_type(node).element_type
        x = a.self if isinstance(a.self, ir.Value) else constant(a.self, want)
        y = a.other if isinstance(a.other, ir.Value) else constant(a.other, want)
        return getattr(ops, op_name)(cast(x, want), cast(y, want))
    return conv


register("aten.__lshift__.Scalar", "aten.__lshift__.Tensor", "aten.bitwise_left_shift.Tensor",
         "aten.bitwise_left_shift.Tensor_Scalar", "aten.bitwise_left_shift.Scalar_Tensor",
         check=_integer_shift)(_in_result_dtype("bitwise_left_shift"))
register("aten.__rshift__.Scalar", "aten.__rshift__.Tensor", "aten.bitwise_right_shift.Tensor",
         "aten.bitwise_right_shift.Tensor_Scalar", "aten.bitwise_right_shift.Scalar_Tensor",
         check=_integer_shift)(_in_result_dtype("bitwise_right_shift"))


# ---- division with a rounding: fmod, remainder, div(rounding_mode=), floor_divide ----------
# In the result's dtype (torch's promotion, read off the node), as torch computes them.

def _not_bool(node):
    val = node.meta.get("val")
    if val is not None and val.dtype == torch.bool:
        return "a division of bools"
    return None



register("aten.fmod.Tensor", "aten.fmod.Scalar", check=_not_bool)(_in_result_dtype("fmod"))
register("aten.remainder.Tensor", "aten.remainder.Scalar", "aten.remainder.Scalar_Tensor",
         check=_not_bool)(_in_result_dtype("remainder"))
register("aten.floor_divide.default", "aten.floor_divide.Scalar", check=_not_bool)(_in_result_dtype("div_floor"))


# ---- gcd, lcm (integers) ------------------------------------------------------------------------

def _integers(node):
    val = node.meta.get("val")
    if val is not None and (val.dtype.is_floating_point or val.dtype.is_complex or val.dtype == torch.bool):
        return f"gcd/lcm of {val.dtype}"
    return None


register("aten.gcd.default", check=_integers)(_in_result_dtype("gcd"))


@register("aten.lcm.default", check=_integers)
def _lcm(imp, node, a):
    want = meta_type(node).element_type
    x, y = cast(a.self, want), cast(a.other, want)
    g = ops.gcd(x, y)
    zero, one = constant(0, want), constant(1, want)
    g_is_zero = ops.eq(g, zero)
    divisor = ops.where(g_is_zero, one, g)
    dtype = node.meta["val"].dtype
    if dtype == torch.uint8:   # (i16 holding 0..255: wraps as uint8, abs is nothing)
        return ops.where(g_is_zero, zero, wrap_uint8(ops.mul(ops.div_trunc(x, divisor), y)))
    if dtype in (torch.int8, torch.int16):
        # C++ computes a / g * b and its abs in int (integer promotion), then narrows
        i32 = T.element_type("i32")
        product = ops.mul(ops.div_trunc(cast(x, i32), cast(divisor, i32)), cast(y, i32))
        return ops.where(g_is_zero, zero, cast(ops.abs(product), want))
    return ops.where(g_is_zero, zero, ops.abs(ops.mul(ops.div_trunc(x, divisor), y)))
