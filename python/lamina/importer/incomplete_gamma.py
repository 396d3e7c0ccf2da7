"""torch.igamma / torch.igammac (special.gammainc / gammaincc): the regularized lower and
upper incomplete gamma functions P(a, x) and Q(a, x), as ATen's calc_igamma / calc_igammac
choose between their forms (after SciPy), composed of lamina ops with the iterative sums
as lamina.igamma_series (lowering/incomplete_gamma.py):

    boundaries   x < 0 or a < 0 -> NaN; a = 0 -> P = 1, Q = 0 for x > 0 (else NaN); x = 0 -> P = 0;
                 a = inf -> P = 0 (NaN if x = inf too); x = inf -> P = 1   (in ATen's order)
    a ~ x        20 < a < 200 and |x - a| / a < 0.3, or a > 200 and |x - a| / a < 4.5 / sqrt(a):
                 Temme's expansion, 1/2 erfc(-+eta sqrt(a/2)) -+ exp(-a eta^2 / 2) S / sqrt(2 pi a)
    P otherwise  x > 1 and x > a: 1 - Q, else the power series times x^a e^-x / Gamma(a + 1)
    Q otherwise  x > 1.1: 1 - P if x < a, else the continued fraction; x <= 0.5: 1 - P if
                 -0.4 / log x < a, else the series of DLMF 8.7.3; between: 1 - P if 1.1 x < a

Every element asks for the one sum its regime needs (the others run no step). Computed in
the result's float type (f16/bf16 in f32, as ATen), lgamma in f64.
"""
from __future__ import annotations

import math

import numpy as np

from ..dialect import ops
from ..dialect import types as T
from .aten_ops import cast, register
from .special_functions import _binary_floats, _c, _lgamma_positive, _poly, erfc_of

# Boost's Lanczos approximation (lanczos13m53): sum_expg_scaled = num(x) / denom(x)
_LANCZOS_NUM = [0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
                19.51992788247617482847860966235652136208, 449.9445569063168119446858607650988409623,
                6955.999602515376140356310115515198987526, 75999.29304014542649875303443598909137092,
                601859.6171681098786670226533699352302507, 3481712.15498064590882071018964774556468,
                14605578.08768506808414169982791359218571, 43338889.32467613834773723740590533316085,
                86363131.28813859145546927288977868422342, 103794043.1163445451906271053616070238554,
                56906521.91347156388090791033559122686859]
_LANCZOS_DENOM = [1.0, 66.0, 1925.0, 32670.0, 357423.0, 2637558.0, 13339535.0, 45995730.0, 105258076.0,
                  150917976.0, 120543840.0, 39916800.0, 0.0]
_LANCZOS_G = 6.024680040776729583740234375
_MAX_LOG = {"f32": 88.72283905206835, "f64": 7.09782712893383996843e2}
# sqrt(2 pi a) in Temme's term: ATen's CPU kernel takes c10::pi<float> for every type (float64
# results 1e-10 off there), its CUDA kernel pi in the computation's type: each device's value
_PI_CPU = float(np.float32(math.pi))


def _not_float(node):
    val = node.meta.get("val")
    if val is not None and not val.dtype.is_floating_point:
        return f"igamma of {val.dtype}"
    return None


def _lgamma_of_positive(z, et):
    """lgamma(z) for z > 0, in f64 (z < 1/2 from lgamma(z + 1) - log z)."""
    f64 = T.element_type("f64")
    z = cast(z, f64)
    small = ops.lt(z, _c(0.5, f64))
    shifted = ops.where(small, ops.add(z, _c(1.0, f64)), z)
    value = _lgamma_positive(shifted, f64, near_zeros=str(et) == "f64")
    return cast(ops.where(small, ops.sub(value, ops.log(z)), value), et)


def _lanczos_sum_expg_scaled(a, et):
    """ATen's ratevl: the two polynomials in a where |a| <= 1, in 1/a (reversed) above."""
    big = ops.gt(ops.abs(a), _c(1.0, et))
    inv = ops.div(_c(1.0, et), a)
    near = ops.div(_poly(a, _LANCZOS_NUM[::-1], et), _poly(a, _LANCZOS_DENOM[::-1], et))
    far = ops.div(_poly(inv, _LANCZOS_NUM, et), _poly(inv, _LANCZOS_DENOM, et))
    return ops.where(big, far, near)


def _prefactor(a, x, lgamma_a, et):
    """ATen's _igam_helper_fac: x^a e^-x / Gamma(a), by Lanczos where a ~ x."""
    apart = ops.gt(ops.abs(ops.sub(a, x)), ops.mul(_c(0.4, et), ops.abs(a)))
    ax = ops.sub(ops.sub(ops.mul(a, ops.log(x)), x), lgamma_a)
    direct = ops.where(ops.lt(ax, _c(-_MAX_LOG[str(et)], et)), _c(0.0, et), ops.exp(ax))
    fac = ops.add(a, _c(_LANCZOS_G - 0.5, et))
    res = ops.div(ops.sqrt(ops.div(fac, _c(math.e, et))), _lanczos_sum_expg_scaled(a, et))
    moderate = ops.mul(ops.exp(ops.sub(a, x)), ops.pow(ops.div(x, fac), a))
    numfac = ops.div(ops.add(ops.sub(ops.sub(x, a), _c(_LANCZOS_G, et)), _c(0.5, et)), fac)
    large = ops.exp(ops.add(ops.mul(a, ops.sub(ops.log1p(numfac), numfac)),
                            ops.div(ops.mul(x, _c(0.5 - _LANCZOS_G, et)), fac)))
    both_small = ops.logical_and(ops.lt(a, _c(200.0, et)), ops.lt(x, _c(200.0, et)))
    lanczos = ops.mul(res, ops.where(both_small, moderate, large))
    return ops.where(apart, direct, lanczos)


def _incomplete_gamma(a, x, et, upper: bool, pi: float):
    c = lambda v: _c(v, et)   # noqa: E731
    nan = c(math.nan)
    is_nan = ops.logical_or(ops.ne(a, a), ops.ne(x, x))
    inf_a, inf_x = ops.eq(a, c(math.inf)), ops.eq(x, c(math.inf))
    # the boundaries, in ATen's order: the first that holds decides
    boundaries = [
        (ops.logical_or(ops.lt(x, c(0.0)), ops.lt(a, c(0.0))), nan),
        (ops.eq(a, c(0.0)), ops.where(ops.gt(x, c(0.0)), c(0.0 if upper else 1.0), nan)),
        (ops.eq(x, c(0.0)), c(1.0 if upper else 0.0)),
        (inf_a, ops.where(inf_x, nan, c(1.0 if upper else 0.0))),
        (inf_x, c(0.0 if upper else 1.0)),
    ]
    regular = ops.logical_not(is_nan)
    for cond, _ in boundaries:
        regular = ops.logical_and(regular, ops.logical_not(cond))

    # a ~ x: Temme's uniform expansion
    ratio = ops.div(ops.abs(ops.sub(x, a)), a)
    near = ops.logical_or(
        ops.logical_and(ops.logical_and(ops.gt(a, c(20.0)), ops.lt(a, c(200.0))), ops.lt(ratio, c(0.3))),
        ops.logical_and(ops.gt(a, c(200.0)), ops.lt(ratio, ops.div(c(4.5), ops.sqrt(a)))))
    sigma = ops.div(ops.sub(x, a), a)
    lam = ops.div(x, a)
    root = ops.sqrt(ops.mul(c(-2.0), ops.sub(ops.log1p(sigma), sigma)))
    eta = ops.where(ops.gt(lam, c(1.0)), root, ops.where(ops.lt(lam, c(1.0)), ops.neg(root), c(0.0)))
    temme = ops.igamma_series(a, eta, ops.logical_and(regular, near), kind="asymptotic")
    sgn = 1.0 if upper else -1.0
    uniform = ops.add(
        ops.mul(c(0.5), erfc_of(ops.mul(c(sgn), ops.mul(eta, ops.sqrt(ops.div(a, c(2.0))))), et)),
        ops.div(ops.mul(c(sgn), ops.mul(ops.exp(ops.mul(c(-0.5), ops.mul(a, ops.mul(eta, eta)))), temme)),
                ops.sqrt(ops.mul(c(2.0 * pi), a))))
    series = ops.logical_and(regular, ops.logical_not(near))

    # which sum: P's power series (as is or as 1 - P), Q's series or the continued fraction
    above_1_1 = ops.gt(x, c(1.1))
    if upper:
        low = ops.le(x, c(0.5))
        use_p = ops.where(above_1_1, ops.lt(x, a),   # (as 1 - P)
                          ops.where(low, ops.lt(ops.div(c(-0.4), ops.log(x)), a), ops.lt(ops.mul(x, c(1.1)), a)))
    else:
        one_minus_q = ops.logical_and(ops.gt(x, c(1.0)), ops.gt(x, a))
        use_p = ops.logical_not(one_minus_q)
    use_fraction = ops.logical_and(ops.logical_not(use_p), above_1_1)
    use_q_series = ops.logical_and(ops.logical_not(use_p), ops.logical_not(above_1_1))

    lgamma_a = _lgamma_of_positive(a, et)
    prefactor = _prefactor(a, x, lgamma_a, et)
    zero_prefactor = ops.eq(prefactor, c(0.0))
    runs = lambda cond: ops.logical_and(ops.logical_and(series, cond), ops.logical_not(zero_prefactor))  # noqa: E731
    lower_sum = ops.igamma_series(a, x, runs(use_p), kind="lower_series")
    p = ops.where(zero_prefactor, c(0.0), ops.div(ops.mul(lower_sum, prefactor), a))
    fraction = ops.igamma_series(a, x, runs(use_fraction), kind="continued_fraction")
    q_fraction = ops.where(zero_prefactor, c(0.0), ops.mul(fraction, prefactor))
    upper_sum = ops.igamma_series(a, x, ops.logical_and(series, use_q_series), kind="upper_series")
    log_x = ops.log(x)
    lgamma_a1 = _lgamma_of_positive(ops.add(a, c(1.0)), et)
    q_series = ops.sub(ops.neg(ops.expm1(ops.sub(ops.mul(a, log_x), lgamma_a1))),
                       ops.mul(ops.exp(ops.sub(ops.mul(a, log_x), lgamma_a)), upper_sum))
    q = ops.where(use_fraction, q_fraction, q_series)
    if upper:
        value = ops.where(use_p, ops.sub(c(1.0), p), q)
    else:
        value = ops.where(use_p, p, ops.sub(c(1.0), q))

    result = ops.where(near, uniform, value)
    result = ops.where(is_nan, nan, result)
    for cond, v in reversed(boundaries):
        result = ops.where(cond, v, result)
    return result


def _converter(upper: bool):
    def convert(imp, node, a):
        want, et, s, x = _binary_floats(node, a)
        val = node.meta.get("val")
        pi = _PI_CPU if val is None or val.device.type == "cpu" else math.pi
        return cast(_incomplete_gamma(s, x, et, upper, pi), want)
    return convert


register("aten.igamma.default", check=_not_float)(_converter(upper=False))
register("aten.igammac.default", check=_not_float)(_converter(upper=True))
