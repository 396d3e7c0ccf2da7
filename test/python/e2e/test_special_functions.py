"""Special and sign functions (lgamma, digamma, erfc, erfinv, atan2, hypot, copysign,
signbit, ldexp; Bessel i0/i1 and ndtri at the end), strict, against float64 eager: random values over several decades, the
poles, +-0, +-inf, NaN and the branch boundaries of each composition (importer/
special_functions.py). Runs on the cuda target too; erfc in float64 falls back (reported)."""
from __future__ import annotations

import math
import os

import pytest
import torch

lamina_backend = pytest.importorskip("lamina.backend")

_G = torch.Generator().manual_seed(0)
POINTS = torch.tensor([0.0, -0.0, -1.0, -2.0, -2.5, 1.0, 2.0, 0.5, 0.49999997, 1e-8, -1e-8, 1e10, -1e10, 1e30,
                       math.inf, -math.inf, math.nan, 7.99, 8.0, 9.99, 10.0, 100.5, -0.5, -7.25])
X = torch.cat([torch.randn(600, generator=_G) * 4, torch.rand(200, generator=_G) * 60 - 30, POINTS])
U = torch.cat([torch.rand(600, generator=_G) * 2 - 1, torch.tensor([1.0, -1.0, 0.0, -0.0, 0.999999, -0.9999999,
                                                                    1.5, -2.0, math.nan, 1e-30])])
_EDGE_Y = [0.0, -0.0, 0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.inf, 0.0, math.nan, 1.0, 5.0, -math.inf, 3.0]
_EDGE_X = [-0.0, -0.0, 0.0, 0.0, 0.0, -0.0, math.inf, math.inf, -math.inf, math.inf, 1.0, math.nan, -math.inf, 2.0, -0.0]
Y2 = torch.cat([torch.randn(200, generator=_G) * 3, torch.tensor(_EDGE_Y)])
X2 = torch.cat([torch.randn(200, generator=_G) * 3, torch.tensor(_EDGE_X)])
E = torch.randint(-20, 20, X.shape, generator=_G)

CASES = [("lgamma", torch.lgamma, (X,)), ("digamma", torch.digamma, (X,)), ("polygamma0", lambda x: torch.polygamma(0, x), (X,)), ("erfc", torch.special.erfc, (X,)),
         ("erfinv", torch.erfinv, (U,)), ("atan2", torch.atan2, (Y2, X2)), ("hypot", torch.hypot, (Y2, X2)),
         ("copysign", torch.copysign, (Y2, X2)), ("ldexp", torch.ldexp, (X, E))]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_matches_float64_eager(name, fn, args, dtype):
    args = tuple(a.to(dtype) if a.is_floating_point() else a for a in args)
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(*args)
    exact = fn(*(a.double() if a.is_floating_point() else a for a in args))
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == torch.float32 else dict(rtol=1e-9, atol=1e-12)
    assert out.dtype == dtype
    torch.testing.assert_close(out.double(), exact, equal_nan=True, **tol)
    # the signs of zeros and infinities too
    special = torch.isinf(exact) | (exact == 0)
    assert torch.equal(torch.signbit(out.double()[special]), torch.signbit(exact[special]))


def test_signbit_and_half_precision():
    torch._dynamo.reset()
    fn = lambda x: (torch.signbit(x), torch.signbit(x.to(torch.int32)), torch.lgamma(x.half()))   # noqa: E731
    x = X.nan_to_num().clamp(-1e4, 1e4)
    out = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    ref = fn(x)
    assert torch.equal(out[0], ref[0]) and torch.equal(out[1], ref[1])
    torch.testing.assert_close(out[2], ref[2], equal_nan=True, rtol=1e-3, atol=1e-3)


# Cephes series and rational approximations (importer/series_functions.py): the coefficients
# torch's kernels use, so each matches eager in its own dtype (float32 overflows where eager's
# does); the edges: +-0, the [0, 8] / (8, inf) switch, +-inf, NaN; ndtri's 0, 1, outside [0, 1]
# and the exp(-2) switches of its three rational functions; K's switch at 2.
P = torch.cat([torch.rand(400, generator=_G), torch.rand(100, generator=_G) ** 20,
               torch.tensor([0.0, 1.0, -0.1, 1.1, 0.5, 0.13533528, 0.86466472, 1e-30, 1 - 1e-7, math.nan])])
SERIES = [("i0", torch.i0, X), ("i0e", torch.special.i0e, X), ("i1", torch.special.i1, X),
          ("i1e", torch.special.i1e, X), ("modified_bessel_i0", torch.special.modified_bessel_i0, X),
          ("modified_bessel_i1", torch.special.modified_bessel_i1, X), ("ndtri", torch.special.ndtri, P),
          ("spherical_bessel_j0", torch.special.spherical_bessel_j0, X), ("bessel_j0", torch.special.bessel_j0, X),
          ("bessel_j1", torch.special.bessel_j1, X), ("bessel_y0", torch.special.bessel_y0, X),
          ("bessel_y1", torch.special.bessel_y1, X)] \
    + [(n, getattr(torch.special, n), X) for n in ("modified_bessel_k0", "modified_bessel_k1",
                                                  "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
                                                  "erfcx", "log_ndtr")] \
    + [("polygamma1", lambda x: torch.polygamma(1, x), X), ("polygamma3", lambda x: torch.polygamma(3, x), X)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=["f32", "f64", "bf16"])
@pytest.mark.parametrize("name,fn,x", SERIES, ids=[c[0] for c in SERIES])
def test_series_functions_match_eager(name, fn, x, dtype):
    x = x.to(dtype)
    try:
        want = fn(x)
    except NotImplementedError:
        pytest.skip(f"eager has no {dtype} {name}")
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    # (bf16: computed in float32 and rounded, as eager; its vector kernel may differ by an ulp)
    tol = {torch.float32: dict(rtol=1e-5, atol=1e-30), torch.float64: dict(rtol=1e-12, atol=1e-300),
           torch.bfloat16: dict(rtol=2e-2, atol=1e-30)}[dtype]
    if name == "spherical_bessel_j0" or name.startswith("bessel_"):   # |values| <= 1 (y: above 5); sin/cos of a huge x are libm's own
        tol["atol"] = {torch.float32: 1e-7, torch.float64: 1e-15, torch.bfloat16: 1e-2}[dtype]
    if name == "polygamma1" and dtype == torch.float32:   # sin(pi x) at x = -1e10: beyond the f32 vector
        tol["rtol"] = 1e-4                                # sin's documented range (docs/vector-math.md)
    assert out.dtype == want.dtype
    torch.testing.assert_close(out, want, equal_nan=True, **tol)


def test_log1p_and_expm1_keep_their_precision_near_zero():
    """MLIR's convert-math-to-llvm lowers log1p to log(1 + x) and expm1 to exp(x) - 1 (f64
    log1p(1e-20) was 0); the CPU target rewrites them (lowering/vector_math.py
    precise_log1p_expm1, Kahan's formulas): a few ulps in every float type."""
    x = torch.cat([torch.randn(300, generator=_G, dtype=torch.float64) * s for s in (1e-12, 1e-5, 0.3, 5)]
                  + [torch.tensor([0.0, -0.0, 1e-300, -1e-20, -1.0, -2.0, 700.0, 710.0, -745.0,
                                   math.inf, -math.inf, math.nan], dtype=torch.float64)])
    for fn in (torch.log1p, torch.expm1):
        for dtype, rtol in ((torch.float64, 1e-15), (torch.float32, 1e-6), (torch.bfloat16, 1e-2)):
            xx = x.to(dtype)
            torch._dynamo.reset()
            out = torch.compile(fn, backend="lamina", options={"strict": True})(xx)
            torch.testing.assert_close(out, fn(xx), rtol=rtol, atol=0, equal_nan=True)
            assert torch.equal(torch.signbit(out[-11]), torch.signbit(fn(xx)[-11]))   # -0.0 stays -0.0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_hurwitz_zeta_matches_eager(dtype):
    """special.zeta(x, q) (special_functions._zeta, Cephes' sum and Euler-Maclaurin tail with
    their early stops): x = 1 (inf), x < 1 (NaN), poles q = 0, -1 (inf), negative q with an
    integer x, huge q, inf and NaN; x and q broadcast against each other."""
    x = torch.cat([torch.rand(150, generator=_G) * 10 + 1,
                   torch.tensor([1.0, 0.5, 2.0, 3.0, 2.0, 4.0, 1.000001, 30.0, 2.0, 3.0, math.inf, math.nan, 2.0])])
    q = torch.cat([torch.randn(150, generator=_G) * 6,
                   torch.tensor([1.0, 1.0, 0.0, -1.0, -2.5, -20.5, 1.0, 0.1, 1e-10, 1e9, 2.0, 1.0, -math.inf])])
    x, q = x.to(dtype), q.to(dtype)
    tol = dict(rtol=1e-5, atol=0) if dtype == torch.float32 else dict(rtol=1e-12, atol=0)
    torch._dynamo.reset()
    zeta = torch.compile(torch.special.zeta, backend="lamina", options={"strict": True})
    torch.testing.assert_close(zeta(x, q), torch.special.zeta(x, q), equal_nan=True, **tol)
    torch.testing.assert_close(zeta(x[:7, None], q[None, :9]), torch.special.zeta(x[:7, None], q[None, :9]),
                               equal_nan=True, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16],
                         ids=["f32", "f64", "bf16", "f16"])
def test_nextafter_steps_the_bits_as_eager(dtype):
    """nextafter (lamina.bitcast of x, one step up or down): +-0 to the smallest subnormal with
    y's sign, x == y gives y (-0.0 too), infinities to the largest finite, NaN in NaN out;
    bit-equal to eager, broadcasting."""
    if dtype == torch.bfloat16 and os.environ.get("TRITON_INTERPRET") == "1" and os.environ.get("LAMINA_TARGET") == "cuda":
        pytest.skip("Triton's interpreter flushes bf16 subnormals to zero when it stores them")
    bits = {torch.float32: torch.int32, torch.float64: torch.int64}.get(dtype, torch.int16)
    inf, nan = math.inf, math.nan
    x = torch.tensor([0.0, -0.0, 1.0, -1.0, 1.0, -1.0, inf, -inf, inf, nan, 1.0, 3.4e38, -3.4e38, 1e-45, -1e-45,
                      1e-40, 2.0, 0.5, 5.0, 0.0], dtype=dtype)
    y = torch.tensor([1.0, -1.0, 2.0, -2.0, 0.0, 0.0, 0.0, 0.0, inf, 1.0, nan, inf, -inf, 0.0, 0.0, -1.0, 2.0, -3.0,
                      5.0, -0.0], dtype=dtype)
    torch._dynamo.reset()
    nextafter = torch.compile(torch.nextafter, backend="lamina", options={"strict": True})
    out, want = nextafter(x, y), torch.nextafter(x, y)
    assert torch.equal(out.view(bits).masked_fill(want.isnan(), 0), want.view(bits).masked_fill(want.isnan(), 0))
    assert torch.equal(out.isnan(), want.isnan())
    a, b = torch.randn(6, 1, generator=_G, dtype=dtype), torch.randn(1, 5, generator=_G, dtype=dtype)
    assert torch.equal(nextafter(a, b), torch.nextafter(a, b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16],
                         ids=["f32", "f64", "bf16", "f16"])
def test_frexp_matches_eager(dtype):
    """frexp from the bits: mantissa in [0.5, 1) with x's sign, int32 exponent; subnormals,
    +-0, +-inf and NaN as eager ((x, 0) for the last three)."""
    x = torch.cat([torch.tensor([0.0, -0.0, 1.0, -3.0, 0.75, 1e-45, -1e-40, 3.4e38, math.inf, -math.inf, math.nan,
                                 1.17549435e-38]), torch.randn(50, generator=_G) * 1e3]).to(dtype)
    if dtype == torch.float64:
        x = torch.cat([x, torch.tensor([5e-324, -1e-310, 1.7e308], dtype=dtype)])
    if dtype == torch.bfloat16 and os.environ.get("TRITON_INTERPRET") == "1":
        # (Triton's interpreter converts subnormal bf16 to f32 wrongly: -1e-40 -> -0.0)
        x = x[(x.abs() >= 2.0 ** -126) | (x == 0) | ~x.isfinite()]
    torch._dynamo.reset()
    mantissa, exponent = torch.compile(torch.frexp, backend="lamina", options={"strict": True})(x)
    want_m, want_e = torch.frexp(x)
    assert mantissa.dtype == want_m.dtype and exponent.dtype == want_e.dtype == torch.int32
    torch.testing.assert_close(mantissa, want_m, rtol=0, atol=0, equal_nan=True)
    signed = ~want_m.isnan()   # (a NaN's sign bit means nothing)
    assert torch.equal(exponent, want_e) and torch.equal(torch.signbit(mantissa[signed]), torch.signbit(want_m[signed]))


# Orthogonal polynomials (lamina.orthogonal_polynomial: torch's recurrence as a loop per
# element): degrees 0-150 per element (negative, fractional (truncated), NaN), the edge
# values (|x| == 1, x == 0 / 1 shifted), both sides of the closed forms' thresholds, and
# x beyond [-1, 1] (where the recurrence grows). Against eager in the same dtype, relative
# to the magnitude (the closed forms multiply acos's error by n; eager's libm is no closer).
_PX = torch.cat([torch.linspace(-3, 3, 31), torch.tensor([1.0, -1.0, 0.0, 0.5, 0.25, 0.7])])
_PN = torch.tensor([0.0, 1.0, 2.0, 3.0, 5.0, 6.0, 7.0, 9.0, 12.0, -1.0, 3.7, 20.0, 150.0, math.nan])
_POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
                "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
                "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("name", _POLYNOMIALS)
def test_orthogonal_polynomials_match_eager(name):
    fn = getattr(torch.special, name)
    for dtype in (torch.float64, torch.float32):
        x, n = torch.broadcast_tensors(_PX[:, None].to(dtype), _PN[None, :].to(dtype))
        torch._dynamo.reset()
        out, want = torch.compile(fn, backend="lamina", options={"strict": True})(x, n), fn(x, n)
        big = want.abs() > 1e30
        assert torch.equal(out.isnan() & ~big, want.isnan() & ~big)
        tol = 1e-11 if dtype == torch.float64 else 2e-4
        close = (out - want).abs() <= tol * want.abs().clamp(min=1.0)
        assert bool((close | want.isnan() | big).all()), f"{name} {dtype}: {out[~close]} vs {want[~close]}"


def test_orthogonal_polynomial_scalars_and_fusion():
    fn = lambda x: (torch.special.hermite_polynomial_he(x, 4) + 1, torch.special.legendre_polynomial_p(0.3, x.abs() * 5))  # noqa: E731
    x = torch.randn(8, 5, generator=_G)
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    for o, w in zip(out, fn(x)):
        torch.testing.assert_close(o, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
def test_airy_ai_matches_eager(dtype):
    """ATen's branches (x < -2.09, the series loop, x >= 2.09, x > 8.32, x > 103.892) and
    their edges, +-inf (NaN), NaN, +-0, int inputs (float32)."""
    x = torch.cat([torch.linspace(-30, 30, 301), torch.tensor([0.0, -0.0, 2.09, -2.09, 2.0899, 8.3203353, 8.33,
                                                              103.89, 103.9, 200.0, -1e4, math.inf, -math.inf,
                                                              math.nan])]).to(dtype)
    torch._dynamo.reset()
    airy = torch.compile(torch.special.airy_ai, backend="lamina", options={"strict": True})
    # (float32 on the oscillating side: the phase 2/3 |x|^1.5 ~ 100 carries float32's rounding
    # into sin/cos, 1e-6 of an amplitude ~0.1 whichever sin the target calls)
    tol = dict(rtol=1e-12, atol=1e-14) if dtype == torch.float64 else dict(rtol=1e-5, atol=5e-6)
    torch.testing.assert_close(airy(x), torch.special.airy_ai(x), equal_nan=True, **tol)
    if dtype == torch.float32:
        i = torch.arange(-5, 5)
        torch.testing.assert_close(airy(i), torch.special.airy_ai(i))


def test_loops_per_element_fused_into_reductions():
    """A body with an scf.while inside a row reduction (sum) and a row kernel (softmax)."""
    fn = lambda x, n: (torch.special.legendre_polynomial_p(x, n).sum(-1),   # noqa: E731
                       torch.softmax(torch.special.chebyshev_polynomial_t(x, n), -1))
    x = torch.rand(16, 100, generator=_G) * 2 - 1
    n = torch.randint(0, 12, (16, 100), generator=_G).float()
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(x, n)
    for o, w in zip(out, fn(x, n)):
        torch.testing.assert_close(o, w, rtol=1e-5, atol=1e-5)


# igamma / igammac: a down the rows, x along the columns, so every regime of ATen's
# calc_igamma(c) meets: the boundaries (0, inf, negative, NaN), Temme's expansion for
# 20 < a < 200 and for a > 200 near x, the power series, the series of DLMF 8.7.3 (x <= 1.1),
# the continued fraction (x > 1.1), a prefactor that underflows to 0 (a = 1000, x small)
_IGAMMA_A = [0.0, 1e-3, 0.3, 0.5, 1.0, 2.5, 10.0, 25.0, 50.0, 150.0, 250.0, 1000.0, 5e4, math.inf, -1.0, math.nan]
_IGAMMA_X = [0.0, 1e-4, 0.2, 0.5, 0.8, 1.05, 1.5, 3.0, 9.0, 24.0, 30.0, 55.0, 160.0, 240.0, 260.0, 1100.0, 5.01e4,
             math.inf, -2.0, math.nan]


@pytest.mark.parametrize("fn", [torch.igamma, torch.special.gammaincc], ids=["igamma", "igammac"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16], ids=["f64", "f32", "bf16"])
def test_incomplete_gamma_matches_eager(fn, dtype):
    a = torch.tensor(_IGAMMA_A, dtype=dtype)[:, None]
    x = torch.tensor(_IGAMMA_X, dtype=dtype)
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(a, x)
    want = fn(a, x)
    assert out.shape == want.shape and out.dtype == want.dtype
    if dtype == torch.float64:
        torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-300, equal_nan=True)
        return
    if dtype == torch.float32:
        # a > 200 near x: Temme's eta^2 / 2 = sigma - log1p(sigma) cancels (eta ~ 1e-3), so eager
        # and lamina carry float32's log1p rounding (1e-5 relative, either way) against float64
        exact = fn(a.double(), x.double())
        near = (a > 200) & ((x - a).abs() / a < 4.5 / a.sqrt())
        torch.testing.assert_close(out[~near], want[~near], rtol=2e-6, atol=1e-7, equal_nan=True)
        torch.testing.assert_close(out[near].double(), exact[near], rtol=5e-5, atol=0.0)
        assert near.any()
        return
    torch.testing.assert_close(out, want, equal_nan=True)


def test_incomplete_gamma_fused_and_broadcast():
    """igamma in a chain with other pointwise ops, a 0-d a, and its complement summing to 1."""
    fn = lambda a, x: (torch.igamma(a, x) + torch.igammac(a, x), torch.igamma(a, x * 2).exp() * x)  # noqa: E731
    a = torch.tensor(3.5, dtype=torch.float64)
    x = torch.rand(5, 7, generator=_G, dtype=torch.float64) * 10
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(a, x)
    for o, w in zip(out, fn(a, x)):
        torch.testing.assert_close(o, w, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(out[0], torch.ones_like(x))


def test_lgamma_near_its_zeros():
    """lgamma near 1 and 2 (the Taylor series at 2) and across the series/Stirling switch at 3.5
    and 8, to a few ulp of eager's (glibc's) in float64."""
    z = torch.cat([torch.linspace(0.5, 9.0, 4001, dtype=torch.float64),
                   torch.tensor([1.0 - 1e-9, 1.0 + 1e-9, 2.0 - 1e-9, 2.0 + 1e-9, 1.5, 2.5, 3.5], dtype=torch.float64)])
    torch._dynamo.reset()
    out = torch.compile(torch.lgamma, backend="lamina", options={"strict": True})(z)
    want = torch.lgamma(z)
    assert bool(((out - want).abs() <= 1e-14 * want.abs() + 1e-300).all()), (out - want).abs().max()
