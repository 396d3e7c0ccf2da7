"""The decomposition table lamina's graphs are exported with: torch's core-ATen table, with
fixes where its reference differs from eager.

    linspace (integer dtype): eager converts start and end to the result's dtype first
        (4.3 -> 4) and steps in double; torch's reference keeps them as given and steps in
        the default float dtype, so its values differ (OpInfo's linspace.tensor_overload)
"""
from __future__ import annotations

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


_OVERRIDES = {
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
