"""@triton.jit helpers the generated kernels call as `lh.<name>` (torch's semantics where
Triton's built-ins differ: NaN-propagating max/min, C-style integer division, fmod).
Conditions combine with nested tl.where, not `&` / `|`: the interpreter cannot combine a
scalar boolean with a block.

Written with tl primitives, so they also run under TRITON_INTERPRET=1 (libdevice does
not); tanh and friends use range-split formulas accurate to a few ulp in fp32. Where a
compiled kernel needs an exact instruction (round_even: LLVM contracts a multiply into the
select form's subtraction), `_COMPILED` picks libdevice, and the interpreter the tl form.
"""
import os

import triton
import triton.language as tl
from triton.language.extra import libdevice

_COMPILED = tl.constexpr(os.environ.get("TRITON_INTERPRET", "0") != "1")


@triton.jit
def maximum(a, b):
    """max that returns NaN when either side is NaN (torch.maximum, arith.maximumf): one
    max.NaN instruction (H100, .device/nanmax31.py: a looped softmax of 1024 x 65536 bf16
    0.165 ms against 0.174 with three selects). Integers: maxsi / maxui (bools are unsigned
    int1 in Triton: an or). Either side may be a Python literal (an init, a body constant)."""
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def minimum(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def max_nan(x, axis):
    return tl.reduce(x, axis, maximum)


@triton.jit
def min_nan(x, axis):
    return tl.reduce(x, axis, minimum)


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def prod(x, axis):
    return tl.reduce(x, axis, _mul)


@triton.jit
def _welford_combine(mean1, m2_1, n1, mean2, m2_2, n2):
    # Chan et al.: the statistics of two disjoint parts. An empty part contributes nothing
    # (its delta * delta * 0 would be nan for an infinite mean).
    n = n1 + n2
    w2 = n2 / tl.maximum(n, 1.0)
    delta = mean2 - mean1
    mean = tl.where(n1 == 0.0, mean2, tl.where(n2 == 0.0, mean1, mean1 + delta * w2))
    m2 = tl.where(n1 == 0.0, m2_2, tl.where(n2 == 0.0, m2_1, m2_1 + m2_2 + delta * delta * n1 * w2))
    return mean, m2, n


@triton.jit
def welford(mean, m2, n, axis):
    """(mean, sum of squared deviations from it, count) of the lanes' running Welford
    statistics combined along `axis`."""
    return tl.reduce((mean, m2, n), axis, _welford_combine)


@triton.jit
def online_softmax(m, s, axis):
    """(max, sum of exp(x - max)) along `axis` (kept, of size 1) of parts' running (max m,
    sum s of exp(x - m)) (triton_program._online_softmax): every part's sum rescaled once,
    to the overall max, then one sum (rescaling pairs in a tree instead rounds once a level:
    ~10x the error over 1024 lanes). A part that has seen no element above -inf (s = 0)
    adds nothing: its 0 * exp(-inf - -inf) would be nan."""
    big = tl.reduce(m, axis, maximum, keep_dims=True)
    base = tl.where(big == float("-inf"), 0.0, big)
    return big, tl.sum(tl.where(s == 0.0, 0.0, s * tl.exp(m - base)), axis, keep_dims=True)


@triton.jit
def div_trunc(a, b):
    """Integer division rounding toward zero (arith.divsi)."""
    q = a // b
    r = a - q * b
    # `//` truncates when compiled (C semantics) but may floor in the interpreter (numpy):
    # a floored quotient leaves a remainder of b's sign when a and b differ in sign.
    floored = tl.where(r != 0, tl.where((r < 0) == (b < 0), (a < 0) != (b < 0), False), False)
    return tl.where(floored, q + 1, q)


@triton.jit
def rem_trunc(a, b):
    return a - div_trunc(a, b) * b


@triton.jit
def div_floor(a, b):
    q = div_trunc(a, b)
    r = a - q * b
    return tl.where(r != 0, tl.where((r < 0) != (b < 0), q - 1, q), q)


@triton.jit
def shr_logical(a, b):
    return (a.to(tl.uint64, bitcast=True) >> b.to(tl.uint64)).to(tl.int64, bitcast=True)


@triton.jit
def fmod(a, b):
    """C's fmod. A quotient that rounds across an integer leaves a remainder off by |b|, of
    the wrong sign: moved back; a finite a over an infinite b is a itself."""
    r = a - trunc(a / b) * b
    wrong = tl.where(r != 0, (r < 0) != (a < 0), False)
    r = tl.where(wrong, r + tl.where(a < 0, -tl.abs(b), tl.abs(b)), r)
    return tl.where(tl.abs(b) == float("inf"), tl.where(tl.abs(a) == float("inf"), a - a, a), r)


@triton.jit
def ipow(x, e):
    """x ** e for integers, e >= 0 (the lowering selects torch's value for e < 0), wrapping
    on overflow as eager does: square-and-multiply over the exponent's 64 bits."""
    acc = x * 0 + 1 + (e * 0).to(x.dtype)
    base = x + (e * 0).to(x.dtype)
    for _ in tl.static_range(64):
        acc = tl.where((e & 1) != 0, acc * base, acc)
        base = base * base
        e = e >> 1
    return acc


@triton.jit
def trunc(x):
    return tl.where(x < 0, tl.ceil(x), tl.floor(x))


@triton.jit
def round_even(x):
    if _COMPILED:   # one rounding instruction: the select form below is wrong once compiled, where
        return libdevice.rint(x)   # LLVM contracts a caller's x = a * b into d = fma(a, b, -f)
    f = tl.floor(x)
    d = x - f
    odd = (f - 2.0 * tl.floor(f * 0.5)) != 0.0
    r = tl.where(d > 0.5, f + 1.0, tl.where(d == 0.5, tl.where(odd, f + 1.0, f), f))
    return tl.where(r == 0.0, x * 0.0, r)   # a zero keeps x's sign (-0.3 -> -0.0, as rint)


@triton.jit
def round_away(x):
    return tl.where(x < 0, tl.floor(x * -1.0 + 0.5) * -1.0, tl.floor(x + 0.5))   # (-0.3 -> -0.0)


@triton.jit
def expm1(x):
    # exp(x) - 1 loses every digit near 0. f64: Kahan's (u - 1) x / log(u), u = exp(x), which
    # cancels u's rounding error (x where u is 1, -1 where u - 1 is, inf for inf); it needs
    # an accurate log near 1, which f32's fast log is not: there Taylor's series below 1/2
    # (degree 9: truncation 5e-10 relative), exp(x) - 1 above (error at most 3 of exp's)
    if x.dtype == tl.float64:
        u = tl.exp(x)
        um1 = u - 1.0
        r = tl.where(u == float("inf"), u, um1 * x / tl.log(u))
        return tl.where(u == 1.0, x, tl.where(um1 == -1.0, um1, r))
    else:
        p = 1.0 + x * (1.0 / 9.0)
        p = 1.0 + x * (1.0 / 8.0) * p
        p = 1.0 + x * (1.0 / 7.0) * p
        p = 1.0 + x * (1.0 / 6.0) * p
        p = 1.0 + x * (1.0 / 5.0) * p
        p = 1.0 + x * (1.0 / 4.0) * p
        p = 1.0 + x * (1.0 / 3.0) * p
        p = 1.0 + x * 0.5 * p
        return tl.where(tl.abs(x) < 0.5, x * p, tl.exp(x) - 1.0)


@triton.jit
def log1p(x):
    u = 1.0 + x
    # log(u) * x / (u - 1) corrects the rounding of 1 + x (Goldberg's trick); inf for inf
    return tl.where(u == 1.0, x, tl.where(u == float("inf"), u, tl.log(u) * (x / (u - 1.0))))


@triton.jit
def tanh(x):
    ax = tl.abs(x)
    if x.dtype == tl.float64:   # tanh|x| = -expm1(-2|x|) / (2 + expm1(-2|x|)): no cancellation near 0
        m = expm1(-2.0 * ax)
        t = (m * -1.0) / (2.0 + m)
        t = tl.where(x < 0, t * -1.0, t)
    else:
        e = tl.exp(-2.0 * ax)
        big = (1.0 - e) / (1.0 + e)
        x2 = x * x
        small = x * (1.0 + x2 * (-0.3333333333333333 + x2 * (0.13333333333333333 + x2 * -0.05396825396825397)))
        t = tl.where(ax < 0.125, small, tl.where(x < 0, big * -1.0, big))
    return tl.where(x != x, x, t)


@triton.jit
def sinh(x):
    e = tl.exp(x)
    return tl.where(tl.abs(x) < 1e-3, x + x * x * x * 0.16666666666666666, 0.5 * (e - 1.0 / e))


@triton.jit
def cosh(x):
    e = tl.exp(x)
    return 0.5 * (e + 1.0 / e)


# sin and cos: one range reduction for both (the generated code asks for sincos once per
# argument), by pi/2 with CUDA's three-part Cody-Waite constants for |x| < 105615 (libdevice's
# bound), exact (Payne-Hanek, below) for larger x; then CUDA's minimax polynomials on
# [-pi/4, pi/4]. libdevice's sinf and cosf reduce separately, and carry their Payne-Hanek
# path inline for every element: a bf16 kernel of sin(x)**2 + cos(x)**2 was compute-bound
# (H100: 70% of a same-size copy in a microbenchmark, 85-88% this way; the harness's row
# 63% -> 76%). Accuracy on an H100: max 1.54 ulp in f32 (libdevice: 1.49), every bf16 and
# f16 input rounds correctly.
_BIG_TRIG = tl.constexpr(105615.0)
# 2/pi in six 32-bit words, most significant first (as lowering/vector_math.py's
# TWO_OVER_PI_WORDS, the CPU's; not imported from there: it loads the MLIR bindings)
_TWO_OVER_PI_WORDS = tl.constexpr((0xA2F9836E, 0x4E441529, 0xFC2757D1, 0xF534DDC0, 0xDB629599, 0x3C439041))


@triton.jit
def _reduce_half_pi(x):
    """x = q pi/2 + r, |r| <= pi/4 (about), for |x| < 105615: (r, q)."""
    if _COMPILED:
        jm = tl.fma(x, 0.636619747, 12582912.0)   # rint(x 2/pi) in the low mantissa bits
        q = jm.to(tl.int32, bitcast=True)
        j = jm - 12582912.0
        r = tl.fma(j, -1.57079601, x)
        r = tl.fma(j, -3.13916473e-07, r)
        r = tl.fma(j, -5.39030253e-15, r)
    else:   # (the interpreter's fma rounds twice: reduce in f64 there)
        xd = x.to(tl.float64)
        j = tl.floor(xd * 0.6366197723675814 + 0.5)
        q = tl.where(tl.abs(j) < 1e9, j, 0.0).to(tl.int32)   # (r is NaN for NaN and inf: no cast of them)
        r = (xd - j * 1.5707963267948966 - j * 6.123233995736766e-17).to(tl.float32)
    return r, q


@triton.jit
def _mul_word(m, word, carry):
    """One 32-bit word of m * (2/pi) and the carry into the next (uint32 arithmetic)."""
    b = tl.full([], word, tl.uint32)
    lo = m * b
    w = lo + carry
    return w, tl.umulhi(m, b) + tl.where(w < lo, 1, 0).to(tl.uint32)


@triton.jit
def _pick(j: tl.constexpr, k, w, wa, wb, wc):
    """Keep product word j where it is one of the window's three (k, k + 1, k + 2): the
    words are never all live at once (this path shares the kernel's registers)."""
    wa = tl.where(k == j, w, wa)
    wb = tl.where(k + 1 == j, w, wb)
    wc = tl.where(k + 2 == j, w, wc)
    return wa, wb, wc


@triton.jit
def _reduce_half_pi_exact(x):
    """Payne-Hanek for finite f32 |x| >= 2^16: x 2/pi mod 4 from the 24-bit mantissa times
    192 bits of 2/pi (six 32-bit words), the 64-bit window at x's exponent (2 quadrant bits,
    62 of fraction), the fraction times pi/2 in f64: (r, q)."""
    bits = x.to(tl.uint32, bitcast=True)
    e = ((bits >> 23) & 0xFF).to(tl.int32)
    m = (bits & 0x7FFFFF) | 0x800000
    # the product's bit b weighs 2^(b + e - 342): the window starts at bit 280 - e (26..137),
    # in words k, k + 1, k + 2 (k in 0..4) shifted right by sh
    low = 280 - e
    k = low >> 5
    sh = (low & 31).to(tl.uint32)
    c = m * 0
    wa, wb, wc = c, c, c
    for j in tl.static_range(6):   # the product's words, least significant first
        w, c = _mul_word(m, _TWO_OVER_PI_WORDS[5 - j], c)
        wa, wb, wc = _pick(j, k, w, wa, wb, wc)
    wa, wb, wc = _pick(6, k, c, wa, wb, wc)
    up_sh = (32 - sh) & 31   # (a shift by 32 is undefined: sh == 0 takes the words whole)
    lo = tl.where(sh == 0, wa, (wa >> sh) | (wb << up_sh))
    hi = tl.where(sh == 0, wb, (wb >> sh) | (wc << up_sh))
    q = (hi >> 30).to(tl.int32)
    hi = hi & 0x3FFFFFFF
    up = hi >= 0x20000000   # a fraction >= 1/2: the next quadrant, less the rest (negated exactly)
    q = tl.where(up, q + 1, q)
    borrow = tl.where(lo != 0, 1, 0).to(tl.uint32)
    lo = tl.where(up, 0 - lo, lo)
    hi = tl.where(up, 0x40000000 - hi - borrow, hi)
    f = hi.to(tl.float64) * 4294967296.0 + lo.to(tl.float64)
    r = (f * 3.4061215800865545e-19).to(tl.float32)   # (pi/2) 2^-62
    r = tl.where(up, r * -1.0, r)
    neg = x < 0
    return tl.where(neg, r * -1.0, r), tl.where(neg, 0 - q, q)


@triton.jit
def _sin_cos_polynomials(r, q, xf):
    r2 = r * r
    ps = -1.95152959e-4
    ps = ps * r2 + 8.33216087e-3
    ps = ps * r2 + -1.66666546e-1
    ps = (ps * r2) * r + r
    pc = 2.44331571e-5
    pc = pc * r2 + -1.38873163e-3
    pc = pc * r2 + 4.16666457e-2
    pc = pc * r2 + -5.00000000e-1
    pc = pc * r2 + 1.0
    odd = (q & 1) != 0
    s = tl.where(odd, pc, ps)
    c = tl.where(odd, ps, pc)
    s = tl.where((q & 2) != 0, s * -1.0, s)
    c = tl.where(((q + 1) & 2) != 0, c * -1.0, c)
    return tl.where(xf == 0.0, xf, s), c   # (sin(-0) = -0)


@triton.jit
def sincos(x):
    """(sin x, cos x), torch's values: NaN for NaN and +-inf, sin(-0) = -0."""
    if x.dtype == tl.float64:
        return tl.sin(x), tl.cos(x)
    xf = x.to(tl.float32)
    ax = tl.abs(xf)
    # one test for the block (its lanes agree): no exact reduction runs where no |x| needs it
    # (each branch whole: measured faster than sharing the polynomials after the branch)
    finite = tl.where(ax < float("inf"), ax, 0.0)
    if len(xf.shape) == 0:
        small = finite < _BIG_TRIG
    else:
        small = tl.max(finite) < _BIG_TRIG
    if small:
        r, q = _reduce_half_pi(xf)
        s, c = _sin_cos_polynomials(r, q, xf)
    else:
        big = tl.where(ax >= _BIG_TRIG, ax < float("inf"), False)
        r, q = _reduce_half_pi(tl.where(big, 0.0, xf))
        rb, qb = _reduce_half_pi_exact(tl.where(big, xf, 131072.0))
        s, c = _sin_cos_polynomials(tl.where(big, rb, r), tl.where(big, qb, q), xf)
    return s.to(x.dtype), c.to(x.dtype)


@triton.jit
def tan(x):
    s, c = sincos(x)
    return s / c


@triton.jit
def _atan_unit(x):
    # atan on [-1, 1]: minimax polynomial in x^2 (max error ~1e-7 rad)
    x2 = x * x
    p = -0.0040540580
    p = p * x2 + 0.0218612288
    p = p * x2 - 0.0559098861
    p = p * x2 + 0.0964200441
    p = p * x2 - 0.1390853351
    p = p * x2 + 0.1994653599
    p = p * x2 - 0.3332985605
    p = p * x2 + 0.9999993329
    return p * x


@triton.jit
def _atan_unit_f64(x):
    # atan on [-1, 1] to float64 precision: two half-angle steps, atan(x) = 2 atan(x / (1 +
    # sqrt(1 + x^2))), leave |x| <= tan(pi / 16) ~ 0.199, where 12 terms of the Taylor series
    # err by < x^25 / 25 ~ 1e-19
    h = x / (1.0 + tl.sqrt(1.0 + x * x))
    h = h / (1.0 + tl.sqrt(1.0 + h * h))
    h2 = h * h
    p = 1.0 / 23.0
    for k in tl.static_range(10, -1, -1):
        p = (1.0 / (2 * k + 1)) - h2 * p
    return 4.0 * h * p


@triton.jit
def atan(x):
    ax = tl.abs(x)
    inv = ax > 1.0
    if x.dtype == tl.float64:
        r = _atan_unit_f64(tl.where(inv, 1.0 / ax, ax))
    else:
        r = _atan_unit(tl.where(inv, 1.0 / ax, ax))
    r = tl.where(inv, 1.5707963267948966 - r, r)
    return tl.where(x < 0, r * -1.0, r)


@triton.jit
def atan2(y, x):
    """IEEE atan2, signed zeros included: atan2(+-0, -0) = +-pi, atan2(y != 0, +-0) = +-pi/2."""
    a = atan(y / x)
    # pi and pi/2 in a's type (a tl.where of two Python floats is float32: f64 atan2(1, 0) was
    # float32's pi/2)
    pi = tl.zeros_like(a) + 3.141592653589793
    half_pi = tl.zeros_like(a) + 1.5707963267948966
    y_neg = tl.where(y == 0, 1.0 / y < 0, y < 0)
    a = tl.where(x < 0, tl.where(y_neg, a - pi, a + pi), a)
    x_neg_zero = tl.where(x == 0, 1.0 / x < 0, False)
    at_zero_x = tl.where(y == 0, tl.where(x_neg_zero, tl.where(y_neg, -pi, pi), y), tl.where(y_neg, -half_pi, half_pi))
    return tl.where(x == 0, at_zero_x, a)


@triton.jit
def asin(x):
    return atan2(x, tl.sqrt((1.0 - x) * (1.0 + x)))


@triton.jit
def acos(x):
    return atan2(tl.sqrt((1.0 - x) * (1.0 + x)), x)


@triton.jit
def copysign(a, b):
    neg = tl.where(b < 0, True, tl.where(b == 0, 1.0 / b < 0, False))
    return tl.where(neg, tl.abs(a) * -1.0, tl.abs(a))


@triton.jit
def pow(a, b):
    """a ** b as torch.pow computes it for floats (negative bases with integral exponents)."""
    r = tl.exp(b * tl.log(tl.abs(a)))
    b_int = tl.floor(b) == b
    odd = tl.where(b_int, (b - 2.0 * tl.floor(b * 0.5)) != 0.0, False)
    r = tl.where(a < 0, tl.where(odd, r * -1.0, tl.where(b_int, r, float("nan"))), r)
    r = tl.where(b == 0, 1.0, r)
    return tl.where(a == 0, tl.where(b > 0, 0.0, r), r)


@triton.jit
def asinh(x):
    """sign(x) * log1p(|x| + x^2 / (1 + sqrt(1 + x^2))): no cancellation near 0; |x| > 2^26
    as log(2|x|) (x^2 overflows)."""
    a = tl.abs(x)
    big = a > 67108864.0
    a2 = tl.where(big, 0.0, a)
    r = tl.where(big, tl.log(a) + 0.6931471805599453, log1p(a2 + a2 * a2 / (1.0 + tl.sqrt(1.0 + a2 * a2))))
    return tl.where(x < 0, -r, r)


@triton.jit
def acosh(x):
    """log1p(t + sqrt(t * (t + 2))), t = x - 1 (exact near 1); large x as log(2x); NaN below 1."""
    big = x > 67108864.0
    t = tl.where(big, 0.0, x - 1.0)
    r = tl.where(big, tl.log(x) + 0.6931471805599453, log1p(t + tl.sqrt(t * (t + 2.0))))
    return tl.where(x < 1.0, float("nan"), r)


@triton.jit
def atanh(x):
    """0.5 * log1p(2x / (1 - x)) (exact near 0; +-inf at +-1, NaN outside)."""
    r = 0.5 * log1p(2.0 * x / (1.0 - x))
    return tl.where(tl.abs(x) == 1.0, x / 0.0, r)
