"""Factory ops where torch's reference decomposition differs from eager and lamina's table
(lamina.backend.decompositions) follows eager: integer linspace (start and end truncated to
the dtype, steps in double), f16/bf16 linspace and logspace."""
from __future__ import annotations

import pytest
import torch

lamina_backend = pytest.importorskip("lamina.backend")


@pytest.mark.parametrize("start,end,steps,dtype", [(4.3, -3, 50, torch.int64), (-4.9, 3.2, 11, torch.int16),
                                                   (-100, 1000, 777, torch.int32), (0.5, 0.5, 3, torch.int64)])
def test_integer_linspace(start, end, steps, dtype):
    fn = lambda s: torch.linspace(start, end, steps, dtype=dtype) + s   # noqa: E731
    torch._dynamo.reset()
    assert torch.equal(torch.compile(fn, backend="lamina", options={"strict": True})(torch.tensor(1)), fn(torch.tensor(1)))


def test_integer_linspace_tensor_bounds():
    fn = lambda s, e: torch.linspace(s, e, 50, dtype=torch.int64)   # noqa: E731
    s, e = torch.tensor(4.3), torch.tensor(-3.0)
    torch._dynamo.reset()
    assert torch.equal(torch.compile(fn, backend="lamina", options={"strict": True})(s, e), fn(s, e))


def test_reduced_precision_linspace_and_logspace():
    """f16/bf16 linspace: start and end rounded to the dtype, the steps in f32, rounded once
    (eager's kernel steps in the dtype itself, by vector-width chunks: lamina is as close to
    the exact values as eager, not bit-equal); logspace (every float dtype): exponents and
    powers in double, as ATen's CPU kernel: bit-equal to eager."""
    def fn(s):
        return (torch.logspace(4.3, -3, 21, dtype=torch.bfloat16), torch.logspace(-1.3, 2.2, 9, 3.0),
                torch.logspace(0.7, 1.9, 5, 2.0, dtype=torch.float64), torch.logspace(4.3, 0, 1, dtype=torch.float16),
                torch.linspace(4.3, -3, 50, dtype=torch.bfloat16), torch.linspace(-2.1, 7.7, 13, dtype=torch.float16), s)

    torch._dynamo.reset()
    s = torch.tensor(1.0)
    got, want = torch.compile(fn, backend="lamina", options={"strict": True})(s), fn(s)
    for g, w in zip(got[:4], want[:4]):
        assert g.dtype == w.dtype and torch.equal(g, w), (g, w)
    for g, w, (a, b, n, dtype) in zip(got[4:6], want[4:6], [(4.3, -3, 50, torch.bfloat16), (-2.1, 7.7, 13, torch.float16)]):
        exact = torch.linspace(float(torch.tensor(a, dtype=dtype)), float(torch.tensor(b, dtype=dtype)), n, dtype=torch.float64)
        assert g.dtype == dtype and (g.double() - exact).abs().max() <= (w.double() - exact).abs().max()


WINDOWS = {
    "hann": lambda n, dt: torch.hann_window(n, dtype=dt),
    "hann_symmetric": lambda n, dt: torch.hann_window(n, periodic=False, dtype=dt),
    "hamming_alpha_beta": lambda n, dt: torch.hamming_window(n, True, 0.6, 0.3, dtype=dt),
    "blackman_symmetric": lambda n, dt: torch.blackman_window(n, False, dtype=dt),
    "bartlett": lambda n, dt: torch.bartlett_window(n, dtype=dt),
    "kaiser_beta": lambda n, dt: torch.kaiser_window(n, False, 5.0, dtype=dt),
}


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_window_functions(name):
    """The window factories (backend/window_functions.py) compile with no fallback and give
    eager's windows (an ulp of the cosine apart at most), at lengths 0, 1, odd and even."""
    make = WINDOWS[name]
    for n, dt in [(0, torch.float32), (1, torch.float64), (7, torch.float64), (64, torch.float32)]:
        torch._dynamo.reset()
        fn = lambda x: make(x.shape[0], dt) * x   # noqa: E731 - x gives the length
        x = torch.ones(n, dtype=dt)
        got = torch.compile(fn, backend="lamina", options={"strict": True})(x)
        torch.testing.assert_close(got, fn(x), rtol=0, atol=3e-7 if dt == torch.float32 else 1e-15)


@pytest.mark.parametrize("start, end", [(-1, 1), (0, 1), (0.3, 7.7), (-5, 2.5), (3, -2), (1e-3, 1e4)])
def test_float32_linspace_bit_equal_to_eager(start, end):
    """ATen's f32 linspace rounds start + step * i once (a fused multiply-add); computed in
    f32 it was 1 ulp off at some points, enough to move an affine grid off a pixel."""
    steps = [2, 3, 5, 6, 7, 8, 16, 31, 100, 1001]
    fn = lambda: [torch.linspace(start, end, n) for n in steps]   # noqa: E731
    torch._dynamo.reset()
    for got, want in zip(torch.compile(fn, backend="lamina", options={"strict": True})(), fn()):
        assert torch.equal(got, want), (got - want).abs().max()
