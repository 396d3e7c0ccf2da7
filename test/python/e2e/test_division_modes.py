"""fmod, remainder (%), div(rounding_mode='trunc'/'floor') and floor_divide (//), strict, against
eager: signs of both operands, zero and infinite divisors, NaN, integer and float dtypes, scalars
on either side; an integer division by zero or INT_MIN / -1 never crashes the process."""
from __future__ import annotations

import pytest
import torch

lamina_backend = pytest.importorskip("lamina.backend")

G = torch.Generator().manual_seed(0)
A = torch.randn(67, generator=G) * 10
B = torch.randn(67, generator=G) * 3
A[1], B[2], B[3], A[4], B[4], A[5], B[5] = float("nan"), float("inf"), float("-inf"), -7.5, 2.5, 7.5, -2.5
B[0] = 0.0
AI = torch.randint(-50, 50, (67,), generator=G)
BI = torch.randint(-7, 8, (67,), generator=G)
BI[BI == 0] = 3
BI[0] = -1

CASES = [
    ("fmod", lambda a, b: torch.fmod(a, b)),
    ("remainder", lambda a, b: torch.remainder(a, b)),
    ("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    ("div_floor", lambda a, b: torch.div(a, b, rounding_mode="floor")),
    ("floor_divide", lambda a, b: a // b),
    ("remainder_scalar", lambda a, b: a % 5 + a % -3),
    ("fmod_scalar", lambda a, b: torch.fmod(a, -4)),
    ("remainder_scalar_tensor", lambda a, b: torch.remainder(7, b)),
    ("div_trunc_scalar", lambda a, b: torch.div(a, 4, rounding_mode="trunc")),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32, torch.int8])
@pytest.mark.parametrize("fn", [pytest.param(f, id=i) for i, f in CASES])
def test_matches_eager(fn, dtype):
    a, b = (A, B) if dtype.is_floating_point else (AI, BI)
    a, b = a.to(dtype), b.to(dtype)
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(a, b)
    ref = fn(a, b)
    assert out.dtype == ref.dtype
    torch.testing.assert_close(out, ref, equal_nan=True, rtol=1e-6, atol=1e-6)
    assert lamina_backend.last_report()["fallback_ops"] == []


def test_reduced_precision_scalars():
    """0-d bf16/f16 floor division (its copysign(0, q) crashed LLVM's x86 backend in bf16)."""
    fn = lambda a, b: (torch.div(a, b, rounding_mode="floor"), a % b, torch.div(-a, b, rounding_mode="floor") * 0)   # noqa: E731
    for dtype in (torch.bfloat16, torch.float16):
        a, b = torch.tensor(2.5, dtype=dtype), torch.tensor(-1.25, dtype=dtype)
        torch._dynamo.reset()
        for got, want in zip(torch.compile(fn, backend="lamina", options={"strict": True})(a, b), fn(a, b)):
            torch.testing.assert_close(got, want, rtol=0, atol=0)
            assert torch.signbit(got) == torch.signbit(want)


def test_int_remainder_by_float_scalar_promotes():
    fn = lambda a: a % 2.5   # noqa: E731
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(AI)
    torch.testing.assert_close(out, fn(AI))


def test_integer_division_by_zero_and_overflow_do_not_crash():
    """Eager raises ZeroDivisionError (and dies of SIGFPE on INT_MIN // -1); a zero divisor
    computed in the graph (the inputs' are checked: test_input_checks.py) gives 0, INT_MIN / -1
    the wrapped quotient, and the process lives."""
    a = torch.tensor([7, -7, torch.iinfo(torch.int64).min, torch.iinfo(torch.int64).min])
    b = torch.tensor([0, 0, -1, 1])

    def fn(a, b):
        b = b * 1   # (computed: not one of the checked inputs)
        return torch.div(a, b, rounding_mode="trunc"), a // b, a % b, torch.fmod(a, b)
    torch._dynamo.reset()
    q, f, r, m = torch.compile(fn, backend="lamina", options={"strict": True})(a, b)
    imin = torch.iinfo(torch.int64).min
    assert q.tolist() == [0, 0, imin, imin] and f.tolist() == [0, 0, imin, imin]
    assert r.tolist() == [0, 0, 0, 0] and m.tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8])
def test_integer_pow_negative_exponents(dtype):
    """torch's integer pow: 1 ** -e = 1, (-1) ** -e = +-1, any other base (0 too) ** -e = 0."""
    base = torch.arange(-4, 5).repeat(9, 1).to(dtype)
    exp = torch.arange(-4, 5)[:, None].expand(9, 9).contiguous().to(dtype)
    fn = lambda b, e: torch.pow(b, e) + b ** 3   # noqa: E731
    torch._dynamo.reset()
    assert torch.equal(torch.compile(fn, backend="lamina", options={"strict": True})(base, exp), fn(base, exp))
