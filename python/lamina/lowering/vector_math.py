"""lamina-expand-math (L3): f32 transcendental `math` ops -> range reduction + polynomials in `arith`.

    from lamina.lowering.vector_math import expand_math
    expand_math(module)                 # in place; returns the number of ops rewritten

or `lamina-opt --lamina-expand-math`. Upstream MLIR lowers `math.exp`, `math.sin`, ... to LLVM
intrinsics or libm calls: one scalar call per element, and per vector lane once a kernel is
vectorized. This pass replaces every f32 `math.exp, log, log1p, expm1, sin, cos, tanh, erf,
powf, rsqrt` (scalar, vector or tensor operands, anywhere: inside `linalg.generic` bodies,
in plain functions) by straight-line `arith` code (compares and selects for the special
cases, bitcasts and shifts for exponents), which the vectorizer and LLVM turn into vector
instructions. `math.sqrt` and `math.absf` stay (LLVM lowers them to `sqrtps` / an `and`);
`math.rsqrt` becomes `1 / sqrt(x)` (what torch computes). f64 (and f16/bf16, which lamina
computes in f32) math ops are left alone.

The methods are the published ones (Cephes / SLEEF style); the constants are Cephes' where
it has them (expf, logf, sinf, cosf, tanhf) and least-squares fits of our own otherwise
(expm1, erf; `docs/vector-math.md` says how). Polynomials (Horner steps) and the Cody-Waite
reductions of exp use `math.fma` where the host has a fused multiply-add (x86 FMA3, every
AArch64; `host_has_fma()`, LAMINA_VECTOR_MATH_FMA=0|1 overrides): half the instructions
and one rounding per step. Nothing else is fused (no `fastmath` flags), so on hosts with
the same FMA setting the result is the same, and equals, bit for bit, the numpy model below
(`reference(name, x, fma=...)`, with an exactly rounded f32 fma), which the tests use to
check the lowering.

* exp: n = round(x log2 e) (1.5*2^23 trick), Cody-Waite r = x - n ln2 with a 9-bit high
  part (n*LN2_HI exact), Cephes' degree-5 polynomial, 2^n applied as two exponent-bit
  scalings (2^(n>>1) * 2^(n-(n>>1))), so overflow gives inf and results below 2^-126 are
  correctly rounded denormals. x clamped to [-104, 88.8] first.
* log: denormals scaled by 2^23; frexp by bits to m in [sqrt(1/2), sqrt 2), e; Cephes'
  degree-8 polynomial in f = m - 1; e*ln2 added in two parts.
* log1p: u = 1 + x split as in log, plus the rounding error of u, c/u (fdlibm's trick).
* expm1: as exp, then 2^n (expm1(r) + 1 - 2^-n): exact near 0, no cancellation.
* sin, cos: with FMA, |x| <= 2^17 reduces modulo pi/2 in f32 (three fmas with pi/2 in
  three f32 parts; a vector whose lanes are all in range branches to this alone);
  otherwise in f64 (x and j = round(2x/pi) are exact there; pi/2 = P1 + P2 with a 30-bit
  P1, so j*P1 is exact for |j| < 2^23), selected per lane, so a lane's bits never depend on
  its neighbours; past 2^23*pi/2 (~1.3e7), where j*P1 is no longer exact, Payne-Hanek
  (_reduce_pio2_exact), behind a branch of its own. Cephes' sin and cos polynomials on
  [-pi/4, pi/4] in f32, quadrant selection. Accurate (2 ulp) for every finite f32.
* tanh: |x| < 0.625: Cephes' odd polynomial; else 1 - 2/(exp(2|x|) + 1) with the sign of
  x (|x| clamped at 10, where tanh is 1 in f32).
* erf: |x| < 1: x P(x^2) (degree 7 in x^2); 1 <= |x| < 3.85: Q(|x| - 2.4375), a degree-14
  fit of erf itself (no exp); beyond, 1 (erf is 1 in f32 from 3.8325 on), with x's sign.
* powf: |x|^y = 2^(y log2|x|) in f64 (log2 by frexp + atanh series, 2^t by a degree-10
  polynomial and exponent bits), rounded once to f32; C99/torch special cases by selects
  (x^0 = 1, 1^y = 1, (-1)^inf = 1, negative x with an odd integer y, nan for a negative
  finite x with a non-integer y, 0^-y = inf, ...). A constant small integer exponent
  (|k| <= 4, e.g. the 2 of x ** 2, also when it reaches a linalg.generic body as a block
  argument fed by a constant tensor) is expanded to multiplications instead.

LAMINA_NO_VECTOR_MATH=1 makes the CPU target skip this pass (libm calls again), to bisect.
"""
from __future__ import annotations

import math as _pymath
import os
from fractions import Fraction

import numpy as np
from mlir import ir
from mlir.dialects import arith, math, scf, vector

from lamina.transforms.registry import register_pass

EXPANDED = ("exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "erf", "powf", "rsqrt")


def enabled() -> bool:
    return os.environ.get("LAMINA_NO_VECTOR_MATH", "").strip() not in ("1", "true", "yes", "on")


def host_has_fma() -> bool:
    """Whether the expansions may use math.fma: a host without a fused multiply-add would
    lower it to a libm call per lane. LAMINA_VECTOR_MATH_FMA=0|1 overrides the detection."""
    forced = os.environ.get("LAMINA_VECTOR_MATH_FMA", "").strip()
    if forced:
        return forced not in ("0", "false", "no", "off")
    return _detect_fma()


def _detect_fma() -> bool:
    import platform

    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return True
    if machine not in ("x86_64", "amd64"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return " fma " in f" {line.split(':', 1)[1].strip()} "
    except OSError:
        pass
    return False


# ---- constants --------------------------------------------------------------------------------

LOG2E = 1.44269504088896341
LN2_HI = 0.693359375              # 9 significant bits: n * LN2_HI is exact for |n| < 2^15
LN2_LO = -2.12194440e-4           # ln 2 - LN2_HI
SQRT2 = 1.41421356237309505
MAGIC32 = 12582912.0              # 1.5 * 2^23: (v + M) - M rounds v to an integer, |v| < 2^22
MAGIC64 = 6755399441055744.0      # 1.5 * 2^52

_PI = Fraction("3.14159265358979323846264338327950288419716939937510582097494459")
_PIO2 = _PI / 2
# pi/2 = PIO2_1 + PIO2_2 (+ ~2^-84): PIO2_1 has 30 significant bits, so j * PIO2_1 is exact
# in f64 for |j| < 2^23.
PIO2_1 = float(Fraction(int(_PIO2 * 2 ** 29), 2 ** 29))
PIO2_2 = float(_PIO2 - Fraction(PIO2_1))
TWO_OVER_PI = float(2 / _PI)
SIN_COS_RANGE = 2.0 ** 23 * float(_PIO2)
# pi/2 = PIO2F_1 + PIO2F_2 + PIO2F_3 (+ ~2^-75), f32 parts, for the FMA reduction of |x| <= 2^17
PIO2F_1 = float(np.float32(float(_PIO2)))
PIO2F_2 = float(np.float32(float(_PIO2 - Fraction(PIO2F_1))))
PIO2F_3 = float(np.float32(float(_PIO2 - Fraction(PIO2F_1) - Fraction(PIO2F_2))))
SIN_COS_FAST_RANGE = 2.0 ** 17
# 2/pi in six 32-bit words, most significant first (2/pi = 0.a2f9836e 4e441529 ...): 192 bits,
# enough to reduce any f32 exactly (Payne-Hanek, _reduce_pio2_exact)
TWO_OVER_PI_WORDS = tuple(int(2 / _PI * 2 ** (32 * (i + 1))) % 2 ** 32 for i in range(6))
PIO2_2POW_M62 = float(_PIO2 / 2 ** 62)

EXP_P = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
LOG_P = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
         -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)
SIN_P = (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)
COS_P = (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)
TANH_P = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1)
# expm1(r) = r + r^2 (1/2 + r Q(r)) on |r| <= ln2/2; Q = c0 + c1 r + ... (fit of our own)
EXPM1_Q = (0.1666666716337204, 0.04166654124855995, 0.008333347737789154, 0.0013928337721154094,
           0.00019863151828758419)
# erf(x) = x P(x^2), |x| < 1 (fit of our own; relative error 3e-11 before rounding to f32)
ERF_A = (1.128379225730896, -0.37612637877464294, 0.11283782124519348, -0.0268654003739357,
         0.00522094639018178, -0.0008482839912176132, 0.00011257022561039776, -9.641714314057026e-06)
# erf(x) ~ Q(x - ERF_Q_CENTER) on [1, ERF_ONE_FROM] (tools/fit_erf.py, degree 14: abs error 6.7e-9
# with these f32 coefficients, 1 ulp measured): no exp, so erf costs two polynomials.
ERF_Q_CENTER = 2.4375
ERF_ONE_FROM = 3.85               # erf(x) rounds to 1.0 in f32 from x = 3.8325 on
ERF_Q = (0.9994334578514099, 0.0029657045379281044, -0.007229010574519634, 0.010759524069726467,
         -0.010702480562031269, 0.007202009670436382, -0.0030014135409146547, 0.0003873604000546038,
         0.0004140846140217036, -0.0003139023028779775, 7.232637290144339e-05, 2.8535998353618197e-05,
         -1.851512752182316e-05, -1.1500789298679592e-07, 1.2723830877803266e-06)
# 2^f = exp(g), g = f ln 2, |g| <= ln2/2, Taylor to g^10 (f64; error < 1e-12)
EXP2_D = tuple(1.0 / _pymath.factorial(k) for k in range(10, -1, -1))


# ---- the algorithms, written once against an emitter ------------------------------------------
# An emitter E builds values of one shape (scalar, or the vector/tensor shape of the op):
# E.f(v, 32|64) and E.i(v, 32|64) are constants; the rest mirror arith ops. `Mlir` builds IR,
# `Numpy` computes (float32 numpy rounds every op like arith without fastmath flags).

def _horner(E, x, coeffs):
    acc = E.f(coeffs[0], E.width(x))
    for c in coeffs[1:]:
        acc = E.fma(acc, x, E.f(c, E.width(x)))
    return acc


def _round32(E, v):
    m = E.f(MAGIC32)
    return E.sub(E.add(v, m), m)


def _pow2i(E, n):
    """2^n as f32 from exponent bits (n an i32 in [-126, 127])."""
    return E.from_bits(E.shl(E.iadd(n, E.i(127)), E.i(23)))


def _ldexp(E, p, n):
    """p * 2^n for n in [-152, 130], by two exact-range scalings (one rounding: denormals ok)."""
    n1 = E.ashr(n, E.i(1))
    n2 = E.isub(n, n1)
    return E.mul(E.mul(p, _pow2i(E, n1)), _pow2i(E, n2))


def _copysign(E, mag, sign_of):
    sign = E.and_(E.bits(sign_of), E.i(-2 ** 31))
    return E.from_bits(E.or_(E.and_(E.bits(mag), E.i(0x7FFFFFFF)), sign))


def _isnan(E, x):
    return E.cmp("uno", x, x)


def _reduce_ln2(E, x, lo, hi):
    """(n as f32, r) with x clamped to [lo, hi], n = round(x / ln2), r = x - n ln2."""
    xc = E.minnum(E.maxnum(x, E.f(lo)), E.f(hi))
    nf = _round32(E, E.mul(xc, E.f(LOG2E)))
    r = E.fma(nf, E.f(-LN2_LO), E.fma(nf, E.f(-LN2_HI), xc))
    return nf, r


def exp_(E, x):
    nf, r = _reduce_ln2(E, x, -104.0, 88.8)
    z = E.mul(r, r)
    p = E.add(E.fma(_horner(E, r, EXP_P), z, r), E.f(1.0))
    res = _ldexp(E, p, E.fptosi(nf))
    return E.select(_isnan(E, x), x, res)


def expm1_(E, x):
    nf, r = _reduce_ln2(E, x, -25.0, 88.8)
    p = E.add(r, E.mul(E.mul(r, r), E.add(E.f(0.5), E.mul(r, _horner(E, r, EXPM1_Q[::-1])))))
    n = E.fptosi(nf)
    m = E.select(E.icmp("sgt", n, E.i(100)), E.i(100), n)   # 2^-n must stay a normal f32
    t = _pow2i(E, E.isub(E.i(0), m))
    res = _ldexp(E, E.add(p, E.sub(E.f(1.0), t)), n)
    res = E.select(E.cmp("oeq", x, E.f(0.0)), x, res)        # keeps -0.0
    return E.select(_isnan(E, x), x, res)


def _frexp_sqrt2(E, u):
    """u > 0 normal -> (e as i32, m) with u = m 2^e, m in [sqrt(1/2), sqrt 2)."""
    b = E.bits(u)
    e = E.isub(E.and_(E.ashr(b, E.i(23)), E.i(0xFF)), E.i(127))
    m = E.from_bits(E.or_(E.and_(b, E.i(0x007FFFFF)), E.i(0x3F800000)))
    big = E.cmp("ogt", m, E.f(SQRT2))
    return E.select(big, E.iadd(e, E.i(1)), e), E.select(big, E.mul(m, E.f(0.5)), m)


def _log_core(E, e, f, extra=None):
    """e ln2 + log(1 + f) (+ extra, a small correction) for f = m - 1, m in [sqrt(1/2), sqrt 2)."""
    ef = E.sitofp(e)
    z = E.mul(f, f)
    y = E.mul(E.mul(_horner(E, f, LOG_P), f), z)
    lo = E.mul(ef, E.f(LN2_LO))
    y = E.add(y, lo if extra is None else E.add(lo, extra))
    y = E.sub(y, E.mul(E.f(0.5), z))
    return E.add(E.add(f, y), E.mul(ef, E.f(LN2_HI)))


def _log_specials(E, x, res, zero_at):
    """log-like special cases: x == zero_at -> -inf, x < zero_at or nan -> nan, inf -> inf."""
    res = E.select(E.cmp("oeq", x, E.f(_pymath.inf)), x, res)
    res = E.select(E.cmp("oeq", x, E.f(zero_at)), E.f(-_pymath.inf), res)
    return E.select(E.cmp("ult", x, E.f(zero_at)), E.f(_pymath.nan), res)   # ult: also nan


def log_(E, x):
    tiny = E.cmp("olt", x, E.f(1.1754943508222875e-38))
    xs = E.select(tiny, E.mul(x, E.f(8388608.0)), x)
    e, m = _frexp_sqrt2(E, xs)
    e = E.isub(e, E.select(tiny, E.i(23), E.i(0)))
    res = _log_core(E, e, E.sub(m, E.f(1.0)))
    return _log_specials(E, x, res, 0.0)


def log1p_(E, x):
    u = E.add(E.f(1.0), x)
    e, m = _frexp_sqrt2(E, u)
    # c = the rounding error of u = 1 + x, divided by u (fdlibm's log1p; 0 once it is negligible)
    c = E.select(E.icmp("sgt", e, E.i(0)), E.sub(E.f(1.0), E.sub(u, x)), E.sub(x, E.sub(u, E.f(1.0))))
    c = E.select(E.icmp("slt", e, E.i(25)), E.div(c, u), E.f(0.0))
    res = _log_core(E, e, E.sub(m, E.f(1.0)), c)
    res = E.select(E.cmp("oeq", u, E.f(1.0)), x, res)        # |x| < 2^-24: log1p(x) = x (also -0.0)
    return _log_specials(E, x, res, -1.0)


def _reduce_pio2_f64(E, x):
    """(r, j mod 4): r = x - j pi/2 in f64 (exact j*P1, |j| < 2^23), rounded to f32."""
    xd = E.ext(x)
    jm = E.add(E.mul(xd, E.f(TWO_OVER_PI, 64)), E.f(MAGIC64, 64))
    q = E.and_(E.trunci(E.bits(jm)), E.i(3))                  # j mod 4, from the mantissa bits
    j = E.sub(jm, E.f(MAGIC64, 64))
    return E.trunc(E.sub(E.sub(xd, E.mul(j, E.f(PIO2_1, 64))), E.mul(j, E.f(PIO2_2, 64)))), q


def _reduce_pio2_f32(E, x):
    """(r, j mod 4) in f32 for |x| <= SIN_COS_FAST_RANGE, with fused multiply-adds: j = round(2x/pi),
    r = ((x - j PF1) - j PF2) - j PF3 (pi/2 = PF1 + PF2 + PF3 in f32 parts; x - j PF1 is exact,
    the next two steps round once each): 2 ulp for sin and cos up to 2^17 (docs/vector-math.md)."""
    jm = E.add(E.mul(x, E.f(TWO_OVER_PI)), E.f(MAGIC32))
    q = E.and_(E.bits(jm), E.i(3))                            # j mod 4, from the mantissa bits
    j = E.neg(E.sub(jm, E.f(MAGIC32)))
    r = E.fma(j, E.f(PIO2F_1), x)
    r = E.fma(j, E.f(PIO2F_2), r)
    return E.fma(j, E.f(PIO2F_3), r), q


def _reduce_pio2_exact(E, x):
    """(r, j mod 4) for finite |x| >= 2^16, exactly (Payne-Hanek): x = m 2^(e - 150) with a
    24-bit integer m; m times 192 bits of 2/pi (six 32-bit words, each product < 2^56 in
    i64, carries added word by word) holds x 2/pi mod 4 in its bits from 280 - e up (2
    quadrant bits, then 62 of fraction), taken as one i64 window of three words; a fraction
    >= 1/2 rounds j up and is negated exactly in i64; r = fraction * pi/2 in f64, rounded to
    f32. |x| < 2^16 and inf / nan lanes compute garbage (no undefined shift), selected away."""
    b = E.bits(x)
    e = E.and_(E.ashr(b, E.i(23)), E.i(0xFF))
    m = E.exti(E.or_(E.and_(b, E.i(0x7FFFFF)), E.i(0x800000)))
    low = E.exti(E.isub(E.i(280), e))
    k = E.ashr(low, E.i(5, 64))
    sh = E.and_(low, E.i(31, 64))
    words, t = [], None
    for w in reversed(TWO_OVER_PI_WORDS):   # least significant first
        p = E.imul(m, E.i(w, 64))
        t = p if t is None else E.iadd(p, E.ashr(t, E.i(32, 64)))
        words.append(E.and_(t, E.i(0xFFFFFFFF, 64)))
    words.append(E.ashr(t, E.i(32, 64)))

    def word(offset):   # words[k + offset], k in 0..4 for |x| >= 2^16
        v = words[4 + offset]
        for j in (3, 2, 1, 0):
            v = E.select(E.icmp("eq", k, E.i(j, 64)), words[j + offset], v)
        return v

    wa, wb, wc = word(0), word(1), word(2)
    top = E.select(E.icmp("eq", sh, E.i(0, 64)), E.i(0, 64),   # (a shift by 64 is undefined)
                   E.shl(wc, E.and_(E.isub(E.i(64, 64), sh), E.i(63, 64))))
    win = E.or_(E.or_(E.ashr(wa, sh), E.shl(wb, E.isub(E.i(32, 64), sh))), top)
    q = E.trunci(E.and_(E.ashr(win, E.i(62, 64)), E.i(3, 64)))
    f = E.and_(win, E.i(2 ** 62 - 1, 64))
    up = E.icmp("sgt", f, E.i(2 ** 61 - 1, 64))
    q = E.select(up, E.iadd(q, E.i(1)), q)
    f = E.select(up, E.isub(f, E.i(2 ** 62, 64)), f)
    r = E.trunc(E.mul(E.sitofp(f), E.f(PIO2_2POW_M62, 64)))
    neg = E.cmp("olt", x, E.f(0.0))
    return E.select(neg, E.neg(r), r), E.select(neg, E.isub(E.i(0), q), q)


def _sincos_poly(E, r, q, quadrant_shift):
    z = E.mul(r, r)
    s = E.add(r, E.mul(E.mul(_horner(E, z, SIN_P), z), r))
    c = E.add(E.sub(E.f(1.0), E.mul(E.f(0.5), z)), E.mul(E.mul(_horner(E, z, COS_P), z), z))
    q = E.iadd(q, E.i(quadrant_shift))
    v = E.select(E.icmp("ne", E.and_(q, E.i(1)), E.i(0)), c, s)
    return E.select(E.icmp("ne", E.and_(q, E.i(2)), E.i(0)), E.neg(v), v)


def _sincos(E, x, quadrant_shift):
    def f64_path():
        # past SIN_COS_RANGE, where j * P1 is no longer exact: Payne-Hanek, lanes that need it
        # only (a branch per vector or scalar where allowed: no cost when none does). The
        # test is made here, off the f32 reduction's path.
        huge = E.cmp("ogt", E.abs(x), E.f(SIN_COS_RANGE))   # (not NaN)

        def f64_only():
            return _sincos_poly(E, *_reduce_pio2_f64(E, x), quadrant_shift)

        return E.unless_all(E.not_(huge), f64_only, lambda: E.select(
            huge, _sincos_poly(E, *_reduce_pio2_exact(E, x), quadrant_shift), f64_only()))

    if E.use_fma:
        # |x| <= 2^17 (all of a typical tensor): the f32 reduction. A vector whose lanes are
        # all in range runs only that (E.unless_all: a branch per vector); any other runs
        # both and selects per lane, so every element gets the same bits either way.
        def fast():
            return _sincos_poly(E, *_reduce_pio2_f32(E, x), quadrant_shift)

        in_range = E.cmp("ole", E.abs(x), E.f(SIN_COS_FAST_RANGE))
        v = E.unless_all(in_range, fast, lambda: E.select(in_range, fast(), f64_path()))
    else:
        v = f64_path()
    # inf and nan give nan; x = +-0 gives x (the polynomial would lose -0.0).
    v = E.select(E.cmp("olt", E.abs(x), E.f(_pymath.inf)), v, E.f(_pymath.nan))
    return v if quadrant_shift else E.select(E.cmp("oeq", x, E.f(0.0)), x, v)


def sin_(E, x):
    return _sincos(E, x, 0)


def cos_(E, x):
    return _sincos(E, x, 1)


def tanh_(E, x):
    ax = E.abs(x)
    z = E.mul(x, x)
    small = E.add(x, E.mul(E.mul(_horner(E, z, TANH_P), z), x))
    ex = exp_(E, E.mul(E.f(2.0), E.minnum(ax, E.f(10.0))))
    big = _copysign(E, E.sub(E.f(1.0), E.div(E.f(2.0), E.add(ex, E.f(1.0)))), x)
    res = E.select(E.cmp("olt", ax, E.f(0.625)), small, big)
    return E.select(E.or_(_isnan(E, x), E.cmp("oeq", x, E.f(0.0))), x, res)   # nan, +-0 -> x


def erf_(E, x):
    ax = E.abs(x)
    small = E.mul(x, _horner(E, E.mul(x, x), ERF_A[::-1]))
    big = _horner(E, E.sub(E.minnum(ax, E.f(ERF_ONE_FROM)), E.f(ERF_Q_CENTER)), ERF_Q[::-1])
    big = E.select(E.cmp("olt", ax, E.f(ERF_ONE_FROM)), big, E.f(1.0))
    res = E.select(E.cmp("olt", ax, E.f(1.0)), small, _copysign(E, big, x))
    return E.select(_isnan(E, x), x, res)


def _log2_f64(E, ad):
    """log2(ad) for a positive normal f64 (an f32 magnitude, widened): frexp + atanh series."""
    b = E.bits(ad)
    e = E.isub(E.and_(E.ashr(b, E.i(52, 64)), E.i(0x7FF, 64)), E.i(1023, 64))
    m = E.from_bits(E.or_(E.and_(b, E.i(0x000FFFFFFFFFFFFF, 64)), E.i(0x3FF0000000000000, 64)))
    big = E.cmp("ogt", m, E.f(SQRT2, 64))
    e = E.select(big, E.iadd(e, E.i(1, 64)), e)
    m = E.select(big, E.mul(m, E.f(0.5, 64)), m)
    s = E.div(E.sub(m, E.f(1.0, 64)), E.add(m, E.f(1.0, 64)))
    s2 = E.mul(s, s)
    series = _horner(E, s2, tuple(1.0 / k for k in range(15, 0, -2)))   # 1 + s2/3 + s2^2/5 + ...
    ln_m = E.mul(E.mul(E.f(2.0, 64), s), series)
    return E.add(E.mul(ln_m, E.f(LOG2E, 64)), E.sitofp(e))


def _exp2_f64(E, t):
    """2^t in f64 for t in [-200, 200]."""
    mg = E.f(MAGIC64, 64)
    nd = E.sub(E.add(t, mg), mg)
    g = E.mul(E.sub(t, nd), E.f(_pymath.log(2.0), 64))
    p = _horner(E, g, EXP2_D)
    scale = E.from_bits(E.shl(E.iadd(E.fptosi(nd), E.i(1023, 64)), E.i(52, 64)))
    return E.mul(p, scale)


def powf_(E, x, y):
    ax = E.abs(x)
    ay = E.abs(y)
    lg = _log2_f64(E, E.ext(ax))
    lg = E.select(E.ext_cond(E.cmp("oeq", ax, E.f(0.0))), E.f(-_pymath.inf, 64), lg)
    lg = E.select(E.ext_cond(E.cmp("oeq", ax, E.f(_pymath.inf))), E.f(_pymath.inf, 64), lg)
    t = E.mul(E.ext(y), lg)
    t = E.minnum(E.maxnum(t, E.f(-200.0, 64)), E.f(200.0, 64))
    res = E.trunc(_exp2_f64(E, t))
    # y integer? odd? (|y| >= 2^23: integer, and even from 2^24 on; inf counts as an even integer)
    is_int = E.or_(E.cmp("oeq", _round32(E, y), y), E.cmp("oge", ay, E.f(8388608.0)))
    exact_y = E.cmp("olt", ay, E.f(16777216.0))          # |y| < 2^24: fptosi is exact and defined
    y_int = E.fptosi(E.select(exact_y, y, E.f(0.0)))
    odd = E.and_(E.and_(exact_y, is_int), E.icmp("ne", E.and_(y_int, E.i(1)), E.i(0)))
    neg_sign = E.icmp("slt", E.bits(x), E.i(0))
    res = E.select(E.and_(odd, neg_sign), E.neg(res), res)
    finite_neg = E.and_(E.cmp("olt", x, E.f(0.0)), E.cmp("one", ax, E.f(_pymath.inf)))
    res = E.select(E.and_(finite_neg, E.not_(is_int)), E.f(_pymath.nan), res)
    res = E.select(E.or_(_isnan(E, x), _isnan(E, y)), E.f(_pymath.nan), res)
    one = E.or_(E.cmp("oeq", x, E.f(1.0)), E.cmp("oeq", y, E.f(0.0)))
    one = E.or_(one, E.and_(E.cmp("oeq", x, E.f(-1.0)), E.cmp("oeq", ay, E.f(_pymath.inf))))
    return E.select(one, E.f(1.0), res)


def rsqrt_(E, x):
    return E.div(E.f(1.0), E.sqrt(x))


ALGORITHMS = {"exp": exp_, "log": log_, "log1p": log1p_, "expm1": expm1_, "sin": sin_, "cos": cos_,
              "tanh": tanh_, "erf": erf_, "powf": powf_, "rsqrt": rsqrt_}


# ---- emitters -----------------------------------------------------------------------------------

_CMPF = {"olt": arith.CmpFPredicate.OLT, "ole": arith.CmpFPredicate.OLE, "ogt": arith.CmpFPredicate.OGT,
         "oge": arith.CmpFPredicate.OGE, "oeq": arith.CmpFPredicate.OEQ, "one": arith.CmpFPredicate.ONE,
         "uno": arith.CmpFPredicate.UNO, "ult": arith.CmpFPredicate.ULT}
_CMPI = {"eq": arith.CmpIPredicate.eq, "ne": arith.CmpIPredicate.ne, "slt": arith.CmpIPredicate.slt,
         "sgt": arith.CmpIPredicate.sgt}


class Mlir:
    """Builds arith ops at the current insertion point, on the shape of `like` (scalar/vector/tensor)."""

    def __init__(self, like: ir.Type, fma: bool = False, branch: bool = False):
        self.shaped = like if isinstance(like, ir.ShapedType) else None
        self.use_fma = fma
        self.branch = branch and (isinstance(like, ir.VectorType) or not isinstance(like, ir.ShapedType))
        self._types = {}

    def unless_all(self, cond, fast, full):
        """fast() if every lane of `cond` holds, else full() (which must equal fast() on those
        lanes): an scf.if on the vector's lanes where a branch is allowed (vector code outside
        linalg bodies, `branch`), else full() straight-line."""
        if not self.branch:
            return full()
        all_lanes = cond if self.shaped is None else \
            vector.reduction(ir.IntegerType.get_signless(1), vector.CombiningKind.AND, cond)
        branch = scf.IfOp(all_lanes, [self._t(ir.F32Type.get())], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            scf.YieldOp([fast()])
        with ir.InsertionPoint(branch.else_block):
            scf.YieldOp([full()])
        return branch.result

    def fma(self, a, b, c):
        """a * b + c: one math.fma on f32 when allowed, else a rounded multiply and add."""
        if self.use_fma and self.width(a) == 32:
            return math.fma(a, b, c)
        return arith.addf(arith.mulf(a, b), c)

    def _t(self, elem: ir.Type) -> ir.Type:
        key = str(elem)
        if key not in self._types:
            s = self.shaped
            if s is None:
                self._types[key] = elem
            elif isinstance(s, ir.VectorType):
                self._types[key] = ir.VectorType.get(s.shape, elem, scalable=s.scalable_dims)
            else:
                self._types[key] = ir.RankedTensorType.get(s.shape, elem)
        return self._types[key]

    @staticmethod
    def _elem(v: ir.Value) -> ir.Type:
        t = v.type
        return t.element_type if isinstance(t, ir.ShapedType) else t

    def width(self, v):
        return self._elem(v).width

    def _const(self, elem, attr):
        t = self._t(elem)
        if self.shaped is not None:
            attr = ir.DenseElementsAttr.get_splat(t, attr)
        return arith.constant(t, attr)

    def f(self, v, w=32):
        elem = ir.F32Type.get() if w == 32 else ir.F64Type.get()
        return self._const(elem, ir.FloatAttr.get(elem, float(v)))

    def i(self, v, w=32):
        elem = ir.IntegerType.get_signless(w)
        return self._const(elem, ir.IntegerAttr.get(elem, int(v)))

    add, sub, mul, div = (staticmethod(arith.addf), staticmethod(arith.subf), staticmethod(arith.mulf),
                          staticmethod(arith.divf))
    iadd, isub, shl, ashr = (staticmethod(arith.addi), staticmethod(arith.subi), staticmethod(arith.shli),
                             staticmethod(arith.shrsi))
    imul = staticmethod(arith.muli)
    and_, or_ = staticmethod(arith.andi), staticmethod(arith.ori)
    neg = staticmethod(arith.negf)
    abs, sqrt = staticmethod(math.absf), staticmethod(math.sqrt)

    # Clamps against a constant bound b (never NaN): a NaN `a` gives b, as minnum/maxnum do.
    # Written as compare + select, which x86 lowers to one minps/maxps (whose NaN rule is
    # "return the second operand"); arith.minnumf/maxnumf become three instructions there.
    def minnum(self, a, b):
        return arith.select(arith.cmpf(arith.CmpFPredicate.OLT, a, b), a, b)

    def maxnum(self, a, b):
        return arith.select(arith.cmpf(arith.CmpFPredicate.OGT, a, b), a, b)

    def not_(self, c):
        return arith.xori(c, self._const(ir.IntegerType.get_signless(1), ir.BoolAttr.get(True)))

    def cmp(self, pred, a, b):
        return arith.cmpf(_CMPF[pred], a, b)

    def icmp(self, pred, a, b):
        return arith.cmpi(_CMPI[pred], a, b)

    def select(self, c, a, b):
        return arith.select(c, a, b)

    def bits(self, x):
        return arith.bitcast(self._t(ir.IntegerType.get_signless(self.width(x))), x)

    def from_bits(self, n):
        w = self.width(n)
        return arith.bitcast(self._t(ir.F32Type.get() if w == 32 else ir.F64Type.get()), n)

    def fptosi(self, x):
        return arith.fptosi(self._t(ir.IntegerType.get_signless(self.width(x))), x)

    def sitofp(self, n):
        return arith.sitofp(self._t(ir.F32Type.get() if self.width(n) == 32 else ir.F64Type.get()), n)

    def ext(self, x):
        return arith.extf(self._t(ir.F64Type.get()), x)

    def trunc(self, x):
        return arith.truncf(self._t(ir.F32Type.get()), x)

    def trunci(self, n):
        return arith.trunci(self._t(ir.IntegerType.get_signless(32)), n)

    def exti(self, n):
        return arith.extsi(self._t(ir.IntegerType.get_signless(64)), n)

    def ext_cond(self, c):
        return c


class Numpy:
    """The same algorithms on numpy arrays (float32/float64 ops round like arith without fastmath)."""

    def __init__(self, like=None, fma: bool = False):
        self.use_fma = fma

    @staticmethod
    def unless_all(cond, fast, full):
        return full()   # equal to fast() wherever cond holds

    @staticmethod
    def width(v):
        return v.dtype.itemsize * 8

    def fma(self, a, b, c):
        if not (self.use_fma and a.dtype == np.float32):
            return np.add(np.multiply(a, b), c)
        return fma32(a, b, c)

    def f(self, v, w=32):
        return np.asarray(v, dtype=np.float32 if w == 32 else np.float64)

    def i(self, v, w=32):
        return np.asarray(v, dtype=np.int32 if w == 32 else np.int64)

    add, sub, mul, div = (staticmethod(np.add), staticmethod(np.subtract), staticmethod(np.multiply),
                          staticmethod(np.divide))
    iadd, isub, shl, ashr = (staticmethod(np.add), staticmethod(np.subtract), staticmethod(np.left_shift),
                             staticmethod(np.right_shift))
    imul = staticmethod(np.multiply)
    and_, or_, not_ = staticmethod(np.bitwise_and), staticmethod(np.bitwise_or), staticmethod(np.logical_not)
    neg, minnum, maxnum = staticmethod(np.negative), staticmethod(np.fmin), staticmethod(np.fmax)
    abs, sqrt = staticmethod(np.abs), staticmethod(np.sqrt)

    def cmp(self, pred, a, b):
        if pred == "uno":
            return np.isnan(a) | np.isnan(b)
        if pred == "ult":
            return ~(a >= b)
        if pred == "one":
            return (a != b) & ~np.isnan(a) & ~np.isnan(b)
        return {"olt": np.less, "ole": np.less_equal, "ogt": np.greater, "oge": np.greater_equal,
                "oeq": np.equal}[pred](a, b)

    def icmp(self, pred, a, b):
        return {"eq": np.equal, "ne": np.not_equal, "slt": np.less, "sgt": np.greater}[pred](a, b)

    def select(self, c, a, b):
        return np.where(c, a, b)

    def bits(self, x):
        return np.asarray(x).view(np.int32 if x.dtype == np.float32 else np.int64)

    def from_bits(self, n):
        return np.asarray(n).view(np.float32 if n.dtype == np.int32 else np.float64)

    def fptosi(self, x):
        return x.astype(np.int32 if x.dtype == np.float32 else np.int64)

    def sitofp(self, n):
        return n.astype(np.float32 if n.dtype == np.int32 else np.float64)

    def ext(self, x):
        return x.astype(np.float64)

    def trunc(self, x):
        return x.astype(np.float32)

    def trunci(self, n):
        return n.astype(np.int32)

    def exti(self, n):
        return n.astype(np.int64)

    def ext_cond(self, c):
        return c


def fma32(a, b, c) -> np.ndarray:
    """The exactly rounded f32 fused multiply-add, in numpy: a*b is exact in f64; the sum is
    rounded to odd at 53 bits (TwoSum gives the error; an inexact even result moves one ulp
    toward the exact value), and rounding that to f32 is then correct (53 >= 24 + 2)."""
    a64, b64, c64 = (np.asarray(v, dtype=np.float32).astype(np.float64) for v in (a, b, c))
    p = a64 * b64
    s = p + c64
    bv = s - p
    err = (p - (s - bv)) + (c64 - bv)
    even = (s.view(np.int64) & 1) == 0
    fix = np.isfinite(s) & (err != 0) & even
    s = np.where(fix, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
    return s.astype(np.float32)


def reference(name: str, *args: np.ndarray, fma: bool | None = None) -> np.ndarray:
    """The expansion of math.<name> evaluated by numpy: bit-identical to the compiled code
    (built with the same `fma` setting; default: host_has_fma(), as the pass)."""
    fma = host_has_fma() if fma is None else fma
    with np.errstate(all="ignore"):
        return ALGORITHMS[name](Numpy(fma=fma), *[np.ascontiguousarray(a, dtype=np.float32) for a in args])


# ---- the pass ---------------------------------------------------------------------------------

def _f32_element(t: ir.Type) -> bool:
    if isinstance(t, ir.ShapedType):
        t = t.element_type
    return isinstance(t, ir.F32Type)


def _constant_value(v: ir.Value, depth: int = 0):
    """The number a value is known to hold everywhere: an arith.constant (scalar or splat),
    through sitofp/extf, and through a linalg.generic block argument fed by such a constant
    tensor (how lamina-to-linalg passes the 2 of x ** 2). None when unknown."""
    if depth > 4:
        return None
    if isinstance(v, ir.BlockArgument):
        parent = v.owner.owner
        if parent is None or parent.name != "linalg.generic":
            return None
        inputs = list(parent.opview.inputs)
        return _constant_value(inputs[v.arg_number], depth + 1) if v.arg_number < len(inputs) else None
    op = v.owner
    if op.name in ("arith.sitofp", "arith.extf", "arith.uitofp"):
        return _constant_value(op.operands[0], depth + 1)
    if op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    if isinstance(attr, ir.DenseElementsAttr):
        if not attr.is_splat:
            return None
        attr = attr.get_splat_value()
    if isinstance(attr, (ir.FloatAttr, ir.IntegerAttr)):
        return attr.value
    return None


SMALL_POWERS = (-4, -3, -2, -1, 0, 1, 2, 3, 4)


def powi_(E, x, k: int):
    """x ** k for a small constant integer k: multiplications (x*x is exact-rounded, as torch's x**2)."""
    if k == 0:
        return E.f(1.0)            # pow(x, 0) = 1, even for nan
    acc = x
    for _ in range(abs(k) - 1):
        acc = E.mul(acc, x)
    return E.div(E.f(1.0), acc) if k < 0 else acc


def _in_linalg_body(op) -> bool:
    op = op.parent
    while op is not None:
        if op.name.startswith("linalg."):
            return True
        op = op.parent
    return False


def expand_math(module: ir.Module | ir.Operation, fma: bool | None = None, skip=()) -> int:
    """Rewrite every f32 math.{exp,log,log1p,expm1,sin,cos,tanh,erf,powf,rsqrt} (but those
    named in `skip`) into arith ops (math.fma in the polynomials when `fma`; default
    host_has_fma()). Vector and scalar ops outside linalg bodies (after vectorization) may get
    a branch per vector (sin/cos: the f32 reduction when every lane is in its range, the
    exact one only when some lane needs it)."""
    fma = host_has_fma() if fma is None else fma

    def wanted(o):
        name = o.name
        return name.startswith("math.") and name[5:] in ALGORITHMS and name[5:] not in skip \
            and _f32_element(o.results[0].type)

    def expand(o):
        E = Mlir(o.results[0].type, fma=fma, branch=not _in_linalg_body(o))
        k = _constant_value(o.operands[1]) if o.name == "math.powf" else None
        if k is not None and k in SMALL_POWERS:
            return powi_(E, o.operands[0], int(k))
        return ALGORITHMS[o.name[5:]](E, *o.operands)

    return _rewrite_ops(module, wanted, expand)


def expand_small_powers(module: ir.Module | ir.Operation) -> int:
    """Only the math.powf with a small constant integer exponent (x ** 2 of a norm), as
    multiplications: for code generators that keep the other math ops (the NVVM one calls
    libdevice, whose __nv_powf is a long general routine). Scalar f32 / f64 ones (a bf16
    x ** 3 rounded per product would differ from torch's single rounding)."""
    def wanted(o):
        return o.name == "math.powf" and str(o.results[0].type) in ("f32", "f64") \
            and _constant_value(o.operands[1]) in SMALL_POWERS

    def expand(o):
        E = Mlir(o.results[0].type, fma=False, branch=False)
        return powi_(E, o.operands[0], int(_constant_value(o.operands[1])))

    return _rewrite_ops(module, wanted, expand)


def _rewrite_ops(module: ir.Module | ir.Operation, wanted, build) -> int:
    """Replace every op under `module` that `wanted` picks by the value `build(op)` makes at
    its place (in its location); how many were replaced."""
    root = module.operation if isinstance(module, ir.Module) else module
    targets = []

    def collect(o):
        if wanted(o):
            targets.append(o)
        return ir.WalkResult.ADVANCE

    root.walk(collect)
    for o in targets:
        with ir.InsertionPoint(o), o.location:
            new = build(o)
        o.results[0].replace_all_uses_with(new)
        o.erase()
    return len(targets)


@register_pass("lamina-expand-math", level="L3",
               description="f32 math.exp/log/log1p/expm1/sin/cos/tanh/erf/powf/rsqrt to range reduction + "
                           "polynomials in arith ops (vectorizable; no libm calls)")
def expand_math_pass(module: ir.Module, fma: str | None = None, skip: str = "", **options) -> None:
    """`lamina-opt --lamina-expand-math="fma=0|1 skip=sin,cos"`: fma fixes the FMA setting
    (default: the host's); skip leaves those ops for a later run (the CPU target expands
    sin/cos after vectorization, where they may branch per vector)."""
    expand_math(module, fma=None if fma is None else str(fma).strip() not in ("0", "false", "no", "off"),
                skip=tuple(n.strip() for n in str(skip).split(",") if n.strip()))


_INF = float("inf")


def _float_const(E, like: ir.Value, v: float):
    elem = E._elem(like)
    return E._const(elem, ir.FloatAttr.get(elem, float(v)))


def precise_log1p_(E, x):
    """Kahan's log1p: log(u) * x / (u - 1) with u = 1 + x, which cancels u's rounding error
    (x where u - 1 is 0: |x| below half an ulp of 1, -0.0 included; inf for inf)."""
    one = _float_const(E, x, 1.0)
    u = E.add(one, x)
    d = E.sub(u, one)
    r = E.mul(math.log(u), E.div(x, d))
    r = E.select(E.cmp("oeq", u, _float_const(E, x, _INF)), u, r)
    return E.select(E.cmp("oeq", d, _float_const(E, x, 0.0)), x, r)


def precise_expm1_(E, x):
    """Kahan's expm1: (u - 1) x / log(u) with u = exp(x) (x where u is 1; -1 where u - 1 is;
    inf for inf)."""
    one = _float_const(E, x, 1.0)
    u = math.exp(x)
    um1 = E.sub(u, one)
    r = E.div(E.mul(um1, x), math.log(u))
    r = E.select(E.cmp("oeq", u, _float_const(E, x, _INF)), u, r)
    r = E.select(E.cmp("oeq", um1, _float_const(E, x, -1.0)), um1, r)
    return E.select(E.cmp("oeq", u, one), x, r)


def precise_log1p_expm1(module: ir.Module | ir.Operation) -> int:
    """Rewrite the math.log1p / math.expm1 left (every float type; f32 ones when
    lamina-expand-math did not take them) into Kahan's formulas on math.log / math.exp:
    MLIR's convert-math-to-llvm lowers them to log(1 + x) and exp(x) - 1, whose error near 0
    is unbounded (f64 log1p(1e-20) gave 0). The CPU target runs it always."""
    return _rewrite_ops(module, lambda o: o.name in ("math.log1p", "math.expm1"),
                        lambda o: (precise_log1p_ if o.name == "math.log1p" else precise_expm1_)(
                            Mlir(o.results[0].type), o.operands[0]))


@register_pass("lamina-precise-log1p-expm1", level="L3",
               description="math.log1p / math.expm1 to Kahan's formulas on log / exp (convert-math-to-llvm's "
                           "log(1 + x) and exp(x) - 1 lose all precision near 0)")
def precise_log1p_expm1_pass(module: ir.Module, **options) -> None:
    precise_log1p_expm1(module)
