"""The decomposition table lamina's graphs are exported with: torch's core-ATen table, with
fixes where its reference differs from eager.

    linspace (integer dtype): eager converts start and end to the result's dtype first
        (4.3 -> 4) and steps in double; torch's reference keeps them as given and steps in
        the default float dtype, so its values differ (OpInfo's linspace.tensor_overload)
    addbmm, angle: not in torch's table (ATen kernels); composed of ops lamina compiles
"""
from __future__ import annotations

import math

import torch

aten = torch.ops.aten


def _linspace(start, end, steps, *, dtype=None, layout=torch.strided, device=None, pin_memory=False):
    from torch._refs import linspace

    if dtype is not None and not dtype.is_floating_point and not dtype.is_complex:
        # ATen: start and end in the integer dtype, the steps in double, truncated
        start = start.to(dtype) if isinstance(start, torch.Tensor) else int(start)
        end = end.to(dtype) if isinstance(end, torch.Tensor) else int(end)
        return linspace(start, end, steps, dtype=torch.float64, layout=layout, device=device,
                        pin_memory=pin_memory).to(dtype)
    return linspace(start, end, steps, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory)


def _addbmm(self, batch1, batch2, *, beta=1, alpha=1):
    """beta self + alpha sum_b batch1[b] @ batch2[b], as one matmul over (b, k); beta = 0
    ignores self (its NaNs too), as ATen."""
    b, n, k = batch1.shape
    p = batch2.shape[2]
    if not batch1.is_floating_point():   # integer matrices take the scalars truncated
        alpha, beta = int(alpha), int(beta)
    product = torch.mm(batch1.transpose(0, 1).reshape(n, b * k), batch2.reshape(b * k, p))
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product.expand(n, p).clone() if product.shape != (n, p) else product
    return (self if beta == 1 else self * beta) + product


def _angle(x):
    """The argument of x: atan2(imag, real); for real x pi below 0, else 0, NaN kept; integer
    and bool x give the default float dtype."""
    if x.is_complex():
        return torch.atan2(x.imag, x.real)
    zero = torch.zeros_like(x, dtype=x.dtype if x.is_floating_point() else torch.get_default_dtype())
    out = torch.where(x < 0, zero + math.pi, zero)
    return torch.where(torch.isnan(x), x.to(out.dtype), out) if x.is_floating_point() else out


_OVERRIDES = {
    aten.addbmm.default: _addbmm,
    aten.angle.default: _angle,
    aten.linspace.default: _linspace,
    aten.linspace.Tensor_Tensor: _linspace,
    aten.linspace.Tensor_Scalar: _linspace,
    aten.linspace.Scalar_Tensor: _linspace,
}


# Ops outside the core-ATen table whose decomposition in torch's full table is composed of
# ops lamina compiles (as Inductor adds them to its table); OpInfo checks each against eager.
# (Bessel functions, ndtri, erfcx, frexp and as_strided_scatter decompose to prims: not here.)
_EXTRA = ("addmv.default", "dist.default", "grid_sampler_2d.default", "permute_copy.default",
          "narrow_copy.default", "unbind_copy.int", "as_strided_copy.default",
          "_batch_norm_with_update_functional.default")


def lamina_decompositions() -> dict:
    from torch._decomp import core_aten_decompositions, decomposition_table

    table = dict(core_aten_decompositions())
    for name in _EXTRA:
        op, overload = name.split(".")
        target = getattr(getattr(aten, op, None), overload, None)
        if target is not None and target in decomposition_table:
            table[target] = decomposition_table[target]
    table.update(_OVERRIDES)
    return table
