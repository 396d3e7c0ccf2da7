"""torch.special.airy_ai (lamina.airy_ai) and torch.special's orthogonal polynomials (Chebyshev T/U/V/W and their shifted forms, the two
Hermite kinds, Laguerre, Legendre) of a per-element degree: one lamina.orthogonal_polynomial
each (lowering/orthogonal_polynomials.py runs torch's recurrence as a loop per element), x
and n cast to the result's float type first, as torch's kernels take them."""
from __future__ import annotations

from ..dialect import ops
from .aten_ops import cast, register
from .special_functions import _binary_floats, _compute_type

_KINDS = ("chebyshev_t", "chebyshev_u", "chebyshev_v", "chebyshev_w", "shifted_chebyshev_t", "shifted_chebyshev_u",
          "shifted_chebyshev_v", "shifted_chebyshev_w", "hermite_h", "hermite_he", "laguerre_l", "legendre_p")


def _converter(kind: str):
    def convert(imp, node, a):
        want, et, x, n = _binary_floats(node, a, "x", "n")
        return cast(ops.orthogonal_polynomial(x, n, kind=kind), want)
    return convert


for _kind in _KINDS:
    _family, _variant = _kind.rsplit("_", 1)   # special_hermite_polynomial_he
    _op = f"aten.special_{_family}_polynomial_{_variant}"
    register(f"{_op}.default", f"{_op}.x_scalar", f"{_op}.n_scalar")(_converter(_kind))


@register("aten.special_airy_ai.default")
def _airy_ai(imp, node, a):
    want, et = _compute_type(node)   # (f16/bf16 computed in f32, as ATen's kernels)
    return cast(ops.airy_ai(cast(a.x, et)), want)
