"""Special and sign-manipulating elementwise functions, composed of lamina ops (so both
targets get them with no new lowering). Computed in the result's float type (f16/bf16 in
f32), with eager's values at the special points (poles, +-0, +-inf, NaN):

    lgamma(x)    (in float64) Stirling's series at w >= 8 (z < 8 shifted up: lgamma(z) = lgamma(z + 8)
                 - log(z (z+1) ... (z+7))), x < 0.5 by reflection log(pi / |sin(pi x)|) -
                 lgamma(1 - x) with sin(pi x) from x - round(x); poles (0, -1, ...) -> inf
    digamma(x)   the asymptotic series at w >= 10 (recurrence below), reflection
                 psi(1 - x) - pi / tan(pi x); digamma(+-0) = -+inf, negative integers NaN;
                 polygamma(0, x) too; polygamma(1, x) as torch's trigamma (reflection below
                 1/2, six recurrence steps, the asymptotic series); higher orders: not yet
    erfc(x)      1 - erf(x) for x < 0.5 (no cancellation there), else Numerical Recipes'
                 erfcc fit t exp(-x^2 + P(t)) (relative error < 1.2e-7: float32 and below);
                 in float64 Cephes': 1 - erf(x) below |x| = 1, exp(-x^2) erfcx(|x|) above
    erfcx(x)     (in float64) exp(x^2) (1 - erf(x)) below 1, Cephes' rational functions of
                 erfc(x) exp(x^2) up to 50, torch's continued fraction above; negatives by
                 2 exp(x^2) - erfcx(-x). log_ndtr(x) from it as torch does
    erfinv(y)    Giles' single-precision polynomials, then Newton steps on erf (two in
                 float64); +-1 -> +-inf, |y| > 1 -> NaN
    atan2(y, x)  atan(y / x) moved to its quadrant, with IEEE's values at zeros and infinities
    hypot(x, y)  m sqrt(1 + (n / m)^2) (no overflow), inf wins over NaN
    copysign, signbit   the sign from x < 0 or 1 / x < 0 (-0.0); NaN counts as positive
    ldexp(x, e)  x * 2^e
    nextafter(x, y)   x's bits (lamina.bitcast) one step towards y; every float dtype
    frexp(x)     mantissa and exponent from x's bits (subnormals scaled up first)
"""
from __future__ import annotations

import math

from mlir import ir

from ..dialect import ops
from ..dialect import types as T
from .aten_ops import as_value, cast, constant, elem, meta_type, register


def _compute_type(node):
    """(the result's element type, the type to compute in: f32 for f16/bf16)."""
    want = meta_type(node).element_type
    work = T.widened(want)
    return want, work


def _c(value, et):
    return constant(value, et)


def _poly(t, coefficients, et):
    """c0 + t (c1 + t (c2 + ...)) by Horner."""
    acc = _c(coefficients[-1], et)
    for c in reversed(coefficients[:-1]):
        acc = ops.add(_c(c, et), ops.mul(t, acc))
    return acc


def _polevl(t, coefficients, et):
    """Cephes polevl: coefficients highest power first."""
    return _poly(t, list(reversed(coefficients)), et)


def _is_integer(x):
    return ops.eq(x, ops.floor(x))


def _sinpi_tanpi_arg(x, et):
    """r = x - round(x) in [-0.5, 0.5]: sin(pi x) = +-sin(pi r), tan(pi x) = tan(pi r)."""
    return ops.sub(x, ops.round(x))


# ---- lgamma -----------------------------------------------------------------------------------

_STIRLING = [1.0 / 12, -1.0 / 360, 1.0 / 1260, -1.0 / 1680, 1.0 / 1188, -691.0 / 360360, 1.0 / 156, -3617.0 / 122400]


# zeta(k) - 1 for k = 2..30 (mpmath): lgamma(2 + t) = (1 - gamma) t + sum_k (-1)^k (zeta(k) - 1) t^k / k
_ZETA_MINUS_1 = [0.6449340668482264, 0.2020569031595943, 0.08232323371113819, 0.03692775514336993,
                 0.01734306198444914, 0.008349277381922827, 0.00407735619794434, 0.0020083928260822143,
                 0.0009945751278180853, 0.0004941886041194645, 0.0002460865533080483, 0.00012271334757848915,
                 6.124813505870483e-05, 3.058823630702049e-05, 1.528225940865187e-05, 7.637197637899763e-06,
                 3.81729326499984e-06, 1.908212716553939e-06, 9.539620338727962e-07, 4.769329867878064e-07,
                 2.38450502727733e-07, 1.1921992596531106e-07, 5.960818905125948e-08, 2.980350351465228e-08,
                 1.4901554828365043e-08, 7.45071178983543e-09, 3.725334024788457e-09, 1.862659723513049e-09,
                 9.313274324196682e-10]
_ONE_MINUS_EULER_GAMMA = 0.42278433509846713


def _lgamma_near_1_and_2(z, et):
    """lgamma(z) for 1/2 <= z < 7/2 from the Taylor series at 2 (terms below 4^-k / k) in
    t = z - 1, z - 2 or z - 3 (exact) with log z or log(z - 1) to shift: the Stirling form's
    shift cancels near the zeros at 1 and 2 (1e-10 relative error there)."""
    below, above = ops.lt(z, _c(1.5, et)), ops.ge(z, _c(2.5, et))
    t = ops.sub(z, ops.where(below, _c(1.0, et), ops.where(above, _c(3.0, et), _c(2.0, et))))
    coefficients = [0.0, _ONE_MINUS_EULER_GAMMA] + [(-1) ** k * c / k for k, c in enumerate(_ZETA_MINUS_1, start=2)]
    value = _poly(t, coefficients, et)   # lgamma(2 + t)
    shift = ops.where(below, ops.neg(ops.log(z)), ops.where(above, ops.log(ops.sub(z, _c(1.0, et))), _c(0.0, et)))
    return ops.add(value, shift)


def _lgamma_positive(z, et, near_zeros: bool = True):
    """lgamma(z) for z >= 0.5. `near_zeros`: to f64's precision near the zeros at 1 and 2 too
    (the series beside Stirling's form, both computed: for results rounded to f64 only)."""
    if not near_zeros:
        return _lgamma_stirling(z, et)
    return ops.where(ops.lt(z, _c(3.5, et)), _lgamma_near_1_and_2(z, et), _lgamma_stirling(z, et))


def _lgamma_stirling(z, et):
    """lgamma(z) for z >= 0.5: Stirling's series at z + 8 below 8."""
    small = ops.lt(z, _c(8.0, et))
    product = z
    for k in range(1, 8):
        product = ops.mul(product, ops.add(z, _c(float(k), et)))
    shift = ops.where(small, ops.log(product), _c(0.0, et))
    w = ops.where(small, ops.add(z, _c(8.0, et)), z)
    inv = ops.div(_c(1.0, et), w)
    series = ops.mul(inv, _poly(ops.mul(inv, inv), _STIRLING, et))
    base = ops.add(ops.sub(ops.mul(ops.sub(w, _c(0.5, et)), ops.log(w)), w), _c(0.5 * math.log(2 * math.pi), et))
    return ops.sub(ops.add(base, series), shift)


@register("aten.lgamma.default")
def _lgamma(imp, node, a):
    want, _ = _compute_type(node)
    et = T.element_type("f64")   # the shift's subtraction cancels near 1 and 2: float32 keeps ~1e-6
    x = cast(a.self, et)
    reflect = ops.lt(x, _c(0.5, et))
    z = ops.where(reflect, ops.sub(_c(1.0, et), x), x)
    positive = _lgamma_positive(z, et, near_zeros=str(want) == "f64")
    sin_r = ops.abs(ops.sin(ops.mul(_sinpi_tanpi_arg(x, et), _c(math.pi, et))))
    reflected = ops.sub(ops.log(ops.div(_c(math.pi, et), sin_r)), positive)
    y = ops.where(reflect, reflected, positive)
    inf = _c(math.inf, et)
    pole = ops.logical_and(reflect, _is_integer(x))   # 0, -1, -2, ... (and -inf)
    y = ops.where(ops.logical_or(pole, ops.eq(ops.abs(x), inf)), inf, y)
    return cast(y, want)


# ---- digamma ----------------------------------------------------------------------------------

_PSI = [-1.0 / 12, 1.0 / 120, -1.0 / 252, 1.0 / 240, -1.0 / 132]


def _digamma_positive(z, et):
    """psi(z) for z >= 0.5: shifted to z + 10 below 10, then the asymptotic series."""
    small = ops.lt(z, _c(10.0, et))
    shift = _c(0.0, et)
    for k in range(10):
        shift = ops.add(shift, ops.div(_c(1.0, et), ops.add(z, _c(float(k), et))))
    shift = ops.where(small, shift, _c(0.0, et))
    w = ops.where(small, ops.add(z, _c(10.0, et)), z)
    inv = ops.div(_c(1.0, et), w)
    inv2 = ops.mul(inv, inv)
    series = ops.mul(inv2, _poly(inv2, _PSI, et))
    return ops.sub(ops.add(ops.sub(ops.log(w), ops.mul(_c(0.5, et), inv)), series), shift)


def _polygamma_check(node):
    n = node.args[0] if node.args else node.kwargs.get("n")
    return None if isinstance(n, int) and n >= 0 else f"polygamma of order {n}"


@register("aten.polygamma.default", check=_polygamma_check)
def _polygamma(imp, node, a):
    """Orders 0 and 1: digamma and torch's trigamma; n >= 2 as torch: (-1)^(n+1) n!
    zeta(n + 1, x) (in f64)."""
    if a.n <= 1:
        return _digamma_of(node, a.self) if a.n == 0 else _trigamma_of(node, a.self)
    want, _ = _compute_type(node)
    f64 = T.element_type("f64")
    x = cast(a.self, f64)
    z = _zeta(ops.add(ops.mul(x, _c(0.0, f64)), _c(float(a.n + 1), f64)), x, f64)
    sign = 1.0 if a.n % 2 else -1.0
    return cast(ops.mul(_c(sign * math.exp(math.lgamma(a.n + 1)), f64), z), want)


# Euler-Maclaurin's B_2k / (2k)! denominators (Cephes zeta.c)
_ZETA_A = [12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18]
_MACHEP = 1.11022302462515654042e-16
# The direct sum runs until n + q > 9 (at least 9 terms): ZETA_TERMS covers q > 9 - ZETA_TERMS;
# below that (a negative non-integer q with an integer x) the result is NaN, not torch's value
ZETA_TERMS = 48


def _zeta(x, q, et):
    """Hurwitz zeta(x, q) as torch's (Cephes zeta.c): q^-x + (q+1)^-x + ... until q + n > 9
    (at least 9 terms; done early once a term is below MACHEP of the sum), then the
    Euler-Maclaurin tail (12 terms, the same early stop). Each step is evaluated for every
    element and kept where that element's loop is still running."""
    one, zero = _c(1.0, et), _c(0.0, et)
    neg_x = ops.neg(x)
    s = ops.pow(q, neg_x)
    a, b = q, ops.mul(zero, q)
    done = ops.lt(ops.add(x, q), _c(-math.inf, et))   # (all false, broadcast to x and q)
    for j in range(ZETA_TERMS):
        running = ops.logical_not(done)
        if j >= 9:
            running = ops.logical_and(running, ops.le(a, _c(9.0, et)))
        a_next = ops.add(a, one)
        b_next = ops.pow(a_next, neg_x)
        s_next = ops.add(s, b_next)
        exit_now = ops.logical_and(running, ops.logical_and(ops.lt(ops.mul(_c(-_MACHEP, et), s_next), b_next),
                                                            ops.lt(b_next, ops.mul(_c(_MACHEP, et), s_next))))
        a, b, s = (ops.where(running, a_next, a), ops.where(running, b_next, b), ops.where(running, s_next, s))
        done = ops.logical_or(done, exit_now)
    incomplete = ops.logical_and(ops.logical_not(done), ops.le(a, _c(9.0, et)))
    w = a
    s = ops.where(done, s, ops.sub(ops.add(s, ops.div(ops.mul(b, w), ops.sub(x, one))), ops.mul(_c(0.5, et), b)))
    fac, k = one, 0.0
    for coefficient in _ZETA_A:
        fac = ops.mul(fac, ops.add(x, _c(k, et)))
        b = ops.div(b, w)
        t = ops.div(ops.mul(fac, b), _c(coefficient, et))
        s_next = ops.add(s, t)
        running = ops.logical_not(done)
        s = ops.where(running, s_next, s)
        done = ops.logical_or(done, ops.logical_and(running, ops.lt(ops.abs(ops.div(t, s_next)), _c(_MACHEP, et))))
        k += 1.0
        fac = ops.mul(fac, ops.add(x, _c(k, et)))
        b = ops.div(b, w)
        k += 1.0
    s = ops.where(incomplete, _c(math.nan, et), s)
    # x == 1 or a pole q = 0, -1, ...: inf; x < 1, or q < 0 with a fractional x: NaN
    q_nonpositive = ops.le(q, zero)
    s = ops.where(ops.logical_and(q_nonpositive, ops.logical_not(_is_integer(x))), _c(math.nan, et), s)
    s = ops.where(ops.logical_and(q_nonpositive, _is_integer(q)), _c(math.inf, et), s)
    s = ops.where(ops.lt(x, one), _c(math.nan, et), s)
    return ops.where(ops.eq(x, one), _c(math.inf, et), s)


@register("aten.special_zeta.default", "aten.special_zeta.self_scalar", "aten.special_zeta.other_scalar")
def _special_zeta(imp, node, a):
    """(in f64 for every float type, as torch's CPU kernel accumulates)"""
    want, _ = _compute_type(node)
    f64 = T.element_type("f64")
    x = cast(as_value(a.self, a.other if isinstance(a.other, ir.Value) else None), f64)
    q = cast(as_value(a.other, a.self if isinstance(a.self, ir.Value) else None), f64)
    return cast(_zeta(x, q, f64), want)


def _trigamma_of(node, value):
    """polygamma(1, x) as torch's calc_trigamma: x < 1/2 by reflection (pi^2 / sin^2(pi x)
    - psi1(1 - x), sin(pi x) unreduced as there), six recurrence steps, then the asymptotic
    series 1/x + 1/(2x^2) + 1/(6x^3) - 1/(30x^5) + 1/(42x^7)."""
    want, et = _compute_type(node)
    x = cast(value, et)
    one = _c(1.0, et)
    reflect = ops.lt(x, _c(0.5, et))
    sin_pi_x = ops.sin(ops.mul(_c(math.pi, et), x))
    result = ops.where(reflect, ops.neg(ops.div(_c(math.pi * math.pi, et), ops.mul(sin_pi_x, sin_pi_x))), _c(0.0, et))
    z = ops.where(reflect, ops.sub(one, x), x)
    for _ in range(6):
        result = ops.add(result, ops.div(one, ops.mul(z, z)))
        z = ops.add(z, one)
    ixx = ops.div(one, ops.mul(z, z))
    tail = ops.sub(_c(1.0 / 30, et), ops.mul(ixx, _c(1.0 / 42, et)))
    tail = ops.mul(ixx, ops.sub(_c(1.0 / 6, et), ops.mul(ixx, tail)))
    tail = ops.add(ops.add(one, ops.div(one, ops.mul(_c(2.0, et), z))), tail)
    result = ops.add(result, ops.div(tail, z))
    return cast(ops.where(reflect, ops.neg(result), result), want)


@register("aten.digamma.default")
def _digamma(imp, node, a):
    return _digamma_of(node, a.self)


def _digamma_of(node, value):
    want, et = _compute_type(node)
    x = cast(value, et)
    reflect = ops.lt(x, _c(0.5, et))
    z = ops.where(reflect, ops.sub(_c(1.0, et), x), x)
    positive = _digamma_positive(z, et)
    tan_r = ops.tan(ops.mul(_sinpi_tanpi_arg(x, et), _c(math.pi, et)))
    y = ops.where(reflect, ops.sub(positive, ops.div(_c(math.pi, et), tan_r)), positive)
    zero = _c(0.0, et)
    y = ops.where(ops.logical_and(reflect, _is_integer(x)), _c(math.nan, et), y)   # -1, -2, ..., -inf
    y = ops.where(ops.eq(x, zero), ops.div(_c(-1.0, et), x), y)   # +0 -> -inf, -0 -> +inf
    y = ops.where(ops.eq(x, _c(math.inf, et)), x, y)
    return cast(y, want)


# ---- erfc, erfinv -----------------------------------------------------------------------------

_ERFCC = [-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398,
          1.48851587, -0.82215223, 0.17087277]


# erfc(x) exp(x^2) = P(x) / Q(x) on [1, 8), R(x) / S(x) on [8, inf) (Cephes ndtr.c; Q and S
# with an implicit leading 1), coefficients highest power first
_ERFC_P = [2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
           4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
           9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2]
_ERFC_Q = [1.0, 1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2,
           9.75708501743205489753E2, 1.82390916687909736289E3, 2.24633760818710981792E3,
           1.65666309194161350182E3, 5.57535340817727675546E2]
_ERFC_R = [5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
           6.16021097993053585195E0, 7.40974269950448939160E0, 2.97886665372100240670E0]
_ERFC_S = [1.0, 2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
           1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0]
_INV_SQRT_PI = 0.56418958354775628694807945156




def _erfcx_positive(ax):
    """erfc(x) exp(x^2) for x = |x| >= 1 (f64): Cephes' rational functions below 50, then
    the continued fraction torch's erfcx uses (1 / (sqrt(pi) x) beyond 5e7)."""
    et = elem(ax)
    mid = ops.div(_polevl(ax, _ERFC_P, et), _polevl(ax, _ERFC_Q, et))
    far = ops.div(_polevl(ax, _ERFC_R, et), _polevl(ax, _ERFC_S, et))
    x2 = ops.mul(ax, ax)
    asym = ops.div(ops.mul(_c(_INV_SQRT_PI, et), ops.add(ops.mul(x2, ops.add(x2, _c(4.5, et))), _c(2.0, et))),
                   ops.mul(ax, ops.add(ops.mul(x2, ops.add(x2, _c(5.0, et))), _c(3.75, et))))
    y = ops.where(ops.gt(ax, _c(5e7, et)), ops.div(_c(_INV_SQRT_PI, et), ax), asym)
    y = ops.where(ops.lt(ax, _c(50.0, et)), far, y)
    return ops.where(ops.lt(ax, _c(8.0, et)), mid, y)


def _erfcx_f64(x):
    """erfcx(x) = exp(x^2) erfc(x) in f64: exp(x^2) (1 - erf(x)) below 1, the rational
    functions above; x < 0 by 2 exp(x^2) - erfcx(-x) (inf below -26.7, as torch)."""
    et = elem(x)
    ax = ops.abs(x)
    near = ops.mul(ops.exp(ops.mul(ax, ax)), ops.sub(_c(1.0, et), ops.erf(ax)))
    pos = ops.where(ops.lt(ax, _c(1.0, et)), near, _erfcx_positive(ax))
    neg = ops.sub(ops.mul(_c(2.0, et), ops.exp(ops.mul(x, x))), pos)
    return ops.where(ops.lt(x, _c(0.0, et)), neg, pos)


def _erfc_f64(x):
    """erfc in f64 (Cephes): 1 - erf(x) for |x| < 1, else exp(-x^2) erfcx(|x|), 2 minus
    that for negatives."""
    et = elem(x)
    ax = ops.abs(x)
    tail = ops.mul(ops.exp(ops.neg(ops.mul(ax, ax))), _erfcx_positive(ax))
    tail = ops.where(ops.lt(x, _c(0.0, et)), ops.sub(_c(2.0, et), tail), tail)
    return ops.where(ops.lt(ax, _c(1.0, et)), ops.sub(_c(1.0, et), ops.erf(x)), tail)


def erfc_of(x, et):
    """erfc(x) in `et`: Cephes in f64; in f32 1 - erf(x) below 1/2, Numerical Recipes' erfcc above."""
    if str(et) == "f64":
        return _erfc_f64(x)
    near = ops.sub(_c(1.0, et), ops.erf(x))
    t = ops.div(_c(1.0, et), ops.add(_c(1.0, et), ops.mul(_c(0.5, et), ops.abs(x))))
    tail = ops.mul(t, ops.exp(ops.sub(_poly(t, _ERFCC, et), ops.mul(x, x))))
    return ops.where(ops.lt(x, _c(0.5, et)), near, tail)


@register("aten.erfc.default")
def _erfc(imp, node, a):
    want, et = _compute_type(node)
    return cast(erfc_of(cast(a.self, et), et), want)


@register("aten.special_erfcx.default")
def _erfcx(imp, node, a):
    """(in f64 for every float type: exp(x^2) overflows float32 from x = 9.4)"""
    want, _ = _compute_type(node)
    return cast(_erfcx_f64(cast(a.self, T.element_type("f64"))), want)


@register("aten.special_log_ndtr.default")
def _log_ndtr(imp, node, a):
    """log(Phi(x)), as torch: with t = x / sqrt(2), log(erfcx(-t) / 2) - t^2 below x = -1
    (no underflow), log1p(-erfc(t) / 2) above (in f64)."""
    want, _ = _compute_type(node)
    f64 = T.element_type("f64")
    x = cast(a.self, f64)
    t = ops.mul(x, _c(math.sqrt(0.5), f64))
    low = ops.sub(ops.log(ops.mul(_erfcx_f64(ops.neg(t)), _c(0.5, f64))), ops.mul(t, t))
    high = ops.log1p(ops.mul(_erfc_f64(t), _c(-0.5, f64)))
    return cast(ops.where(ops.lt(x, _c(-1.0, f64)), low, high), want)


_GILES_CENTRAL = [1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
                  -3.5233877e-06, 3.43273939e-07, 2.81022636e-08]
_GILES_TAIL = [2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844,
               0.00134934322, 0.000100950558, -0.000200214257]


@register("aten.erfinv.default")
def _erfinv(imp, node, a):
    want, et = _compute_type(node)
    y = cast(a.self, et)
    one = _c(1.0, et)
    w = ops.neg(ops.log(ops.mul(ops.sub(one, y), ops.add(one, y))))
    central = _poly(ops.sub(w, _c(2.5, et)), _GILES_CENTRAL, et)
    tail = _poly(ops.sub(ops.sqrt(w), _c(3.0, et)), _GILES_TAIL, et)
    x = ops.mul(ops.where(ops.lt(w, _c(5.0, et)), central, tail), y)
    # Newton on erf(x) = y: x -= (erf(x) - y) / (2 / sqrt(pi) exp(-x^2))
    for _ in range(2 if str(et) == "f64" else 1):
        slope = ops.mul(_c(2.0 / math.sqrt(math.pi), et), ops.exp(ops.neg(ops.mul(x, x))))
        x = ops.sub(x, ops.div(ops.sub(ops.erf(x), y), slope))
    edge = ops.eq(ops.abs(y), one)
    x = ops.where(edge, ops.mul(y, _c(math.inf, et)), x)
    x = ops.where(ops.gt(ops.abs(y), one), _c(math.nan, et), x)
    x = ops.where(ops.eq(y, _c(0.0, et)), y, x)   # +-0 -> +-0
    return cast(x, want)


# ---- atan2, hypot, copysign, signbit, ldexp ---------------------------------------------------

def _negative(v, et):
    """The sign bit of a float (x < 0, or -0.0: 1 / x = -inf); NaN counts as positive."""
    zero = _c(0.0, et)
    return ops.logical_or(ops.lt(v, zero), ops.logical_and(ops.eq(v, zero), ops.lt(ops.div(_c(1.0, et), v), zero)))


def _signed(magnitude, negative):
    return ops.where(negative, ops.neg(magnitude), magnitude)


def _binary_floats(node, a, first="self", second="other"):
    want, et = _compute_type(node)
    u, v = a[first], a[second]
    u = cast(u, et) if not isinstance(u, (int, float)) else _c(float(u), et)
    v = cast(v, et) if not isinstance(v, (int, float)) else _c(float(v), et)
    return want, et, u, v


@register("aten.atan2.default")
def _atan2(imp, node, a):
    want, et, y, x = _binary_floats(node, a)
    zero, pi = _c(0.0, et), _c(math.pi, et)
    y_neg = _negative(y, et)
    base = ops.atan(ops.div(y, x))
    left = ops.add(base, _signed(pi, y_neg))                           # x < 0
    on_axis = ops.where(ops.eq(y, zero), ops.where(_negative(x, et), _signed(pi, y_neg), y),
                        _signed(_c(math.pi / 2, et), y_neg))          # x = +-0
    r = ops.where(ops.gt(x, zero), base, ops.where(ops.lt(x, zero), left, on_axis))
    inf = _c(math.inf, et)
    both_inf = ops.logical_and(ops.eq(ops.abs(x), inf), ops.eq(ops.abs(y), inf))
    corner = _signed(ops.where(_negative(x, et), _c(3 * math.pi / 4, et), _c(math.pi / 4, et)), y_neg)
    r = ops.where(both_inf, corner, r)
    r = ops.where(ops.logical_or(ops.ne(x, x), ops.ne(y, y)), _c(math.nan, et), r)
    return cast(r, want)


@register("aten.hypot.default")
def _hypot(imp, node, a):
    want, et, x, y = _binary_floats(node, a)
    ax, ay = ops.abs(x), ops.abs(y)
    big = ops.where(ops.ge(ax, ay), ax, ay)
    small = ops.where(ops.ge(ax, ay), ay, ax)
    ratio = ops.div(small, big)
    r = ops.mul(big, ops.sqrt(ops.add(_c(1.0, et), ops.mul(ratio, ratio))))
    zero, inf = _c(0.0, et), _c(math.inf, et)
    r = ops.where(ops.eq(big, zero), zero, r)
    r = ops.where(ops.logical_or(ops.ne(x, x), ops.ne(y, y)), _c(math.nan, et), r)
    r = ops.where(ops.logical_or(ops.eq(ax, inf), ops.eq(ay, inf)), inf, r)   # inf wins over NaN
    return cast(r, want)


@register("aten.copysign.Tensor", "aten.copysign.Scalar")
def _copysign(imp, node, a):
    want, et, mag, sign = _binary_floats(node, a)
    return cast(_signed(ops.abs(mag), _negative(sign, et)), want)


@register("aten.signbit.default")
def _signbit(imp, node, a):
    x = a.self
    et = elem(x)
    if T.is_bool(et):
        return ops.ne(x, x)   # all false
    if not T.is_float(et):
        return ops.lt(x, constant(0, et))
    work = T.widened(et)
    return _negative(cast(x, work), work)


@register("aten.ldexp.Tensor")
def _ldexp(imp, node, a):
    want, et, x, e = _binary_floats(node, a)
    return cast(ops.mul(x, ops.pow(_c(2.0, et), e)), want)



def _nextafter_check(node):
    val = node.meta.get("val")
    if val is not None and not val.dtype.is_floating_point:
        return f"nextafter of {val.dtype}"
    return None


@register("aten.nextafter.default", check=_nextafter_check)
def _nextafter(imp, node, a):
    """The float next to x towards y: x's bits (lamina.bitcast) plus one away from zero, minus
    one towards it; y where x == y, +-the smallest subnormal (y's sign) from 0, NaN with a
    NaN."""
    want = meta_type(node)
    et = want.element_type
    x, y = cast(a.self, et), cast(a.other, et)
    shape = T.dims_of(want)
    if T.dims_of(x.type) != shape:
        x = ops.broadcast_to(x, result_type=want)
    if T.dims_of(y.type) != shape:
        y = ops.broadcast_to(y, result_type=want)
    width = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[str(et)]
    it = T.element_type(f"i{width}")
    bits = ops.bitcast(x, result_type=T.with_element_type(want, it))
    zero = _c(0.0, et)
    away = ops.eq(ops.gt(x, zero), ops.gt(y, x))   # (x > 0 and y > x) or (x < 0 and y < x)
    step = ops.where(away, constant(1, it), constant(-1, it))
    stepped = ops.bitcast(ops.add(bits, step), result_type=want)
    # +-the smallest subnormal from its bits (1 and the sign bit + 1): no float literal to flush
    sign = -(1 << (width - 1))
    from_zero = ops.bitcast(ops.where(ops.gt(y, zero), constant(1, it), constant(sign + 1, it)),
                            result_type=want)
    r = ops.where(ops.eq(x, zero), from_zero, stepped)
    r = ops.where(ops.eq(x, y), y, r)
    return ops.where(ops.logical_or(ops.ne(x, x), ops.ne(y, y)), ops.add(x, y), r)


@register("aten.frexp.Tensor")
def _frexp(imp, node, a):
    """(mantissa in [0.5, 1) with x's sign, int32 exponent) from x's bits (lamina.bitcast):
    subnormals scaled into the normal range first; 0, inf and NaN give (x, 0), as eager.
    f16/bf16 in f32 (exact: their mantissas fit)."""
    want_m = meta_type(node, 0).element_type
    et = T.element_type("f64") if str(want_m) == "f64" else T.element_type("f32")
    width, mbits, bias, scale = (64, 52, 1022, 54) if str(et) == "f64" else (32, 23, 126, 25)
    it = T.element_type(f"i{width}")
    x = cast(a.self, et)
    shaped = T.with_element_type(x.type, it)
    zero = _c(0.0, et)
    subnormal = ops.logical_and(ops.lt(ops.abs(x), _c(2.0 ** -bias, et)), ops.ne(x, zero))   # (below the smallest normal)
    xs = ops.where(subnormal, ops.mul(x, _c(2.0 ** scale, et)), x)
    bits = ops.bitcast(xs, result_type=shaped)
    field_mask = (1 << (width - mbits - 1)) - 1
    field = ops.bitwise_and(ops.bitwise_right_shift(bits, constant(mbits, it)), constant(field_mask, it))
    exponent = ops.sub(ops.sub(field, constant(bias, it)), ops.where(subnormal, constant(scale, it), constant(0, it)))
    keep = ~(field_mask << mbits) & ((1 << width) - 1)
    keep = keep - (1 << width) if keep >= 1 << (width - 1) else keep   # (as a signed constant)
    mantissa = ops.bitcast(ops.bitwise_or(ops.bitwise_and(bits, constant(keep, it)), constant(bias << mbits, it)),
                           result_type=x.type)
    regular = ops.logical_and(ops.ne(x, zero), ops.lt(ops.abs(x), _c(math.inf, et)))
    mantissa = ops.where(regular, mantissa, x)
    exponent = ops.where(regular, exponent, constant(0, it))
    return cast(mantissa, want_m), cast(exponent, T.element_type("i32"))
