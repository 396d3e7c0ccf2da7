"""Reshapes around contractions (transforms/sink_reshapes.py, lamina-fuse reshape_epilogues,
lamina-tile-cpu's views of reshaped kernel arguments and results): nn.Linear on [B, T, C]
inputs with pointwise epilogues after the view back to 3-d. Eager's results, forward and
backward, static and dynamic=True, f32 and bf16, contiguous and strided inputs; on the CPU
target the static cases are one kernel (before: the input's reshape, the matmul and its
epilogue after the view were three, one of them a copy)."""
from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F

import lamina.backend as lb

torch.manual_seed(0)
LIN = torch.nn.Linear(64, 160)   # 2*M*N*K >= fusion.LARGE_CONTRACTION_FLOPS: W^T joins the kernel


def gelu_scale_residual(x, r):
    return F.gelu(LIN(x)) * 2.0 + r


def plain_output(x):
    return LIN(x)


def per_batch_scale(x, s):
    return torch.tanh(LIN(x)) * s     # s: [B, 1, 160], broadcast along the dim the view splits


CASES = [
    (gelu_scale_residual, lambda dt: (torch.randn(4, 32, 64, dtype=dt), torch.randn(4, 32, 160, dtype=dt)), 1),
    (plain_output, lambda dt: (torch.randn(4, 32, 64, dtype=dt),), 1),
    (per_batch_scale, lambda dt: (torch.randn(4, 32, 64, dtype=dt), torch.randn(4, 1, 160, dtype=dt)), 2),
]
CPU = os.environ.get("LAMINA_TARGET", "cpu") == "cpu"


def _tolerance(dtype):
    return dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else dict(rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("fn,make,kernels", CASES, ids=[c[0].__name__ for c in CASES])
def test_forward(fn, make, kernels, dtype):
    torch._dynamo.reset()
    args = make(dtype)
    with torch.no_grad():
        LIN.to(dtype)
        try:
            out = torch.compile(fn, backend="lamina", options={"strict": True})(*args)
            torch.testing.assert_close(out, fn(*args), **_tolerance(dtype))
        finally:
            LIN.float()
    if CPU and dtype == torch.float32:
        assert lb.last_report()["kernels"] == kernels


def test_strided_input_and_dynamic_sizes():
    """A transposed (non-contiguous) input, then other batch and sequence sizes under
    dynamic=True (the rewrites take static shapes only: the symbolic graph keeps its views)."""
    torch._dynamo.reset()
    f = torch.compile(gelu_scale_residual, backend="lamina", options={"strict": True})
    x = torch.randn(32, 4, 64).transpose(0, 1)
    r = torch.randn(4, 32, 160)
    with torch.no_grad():
        torch.testing.assert_close(f(x, r), gelu_scale_residual(x, r), rtol=1e-4, atol=1e-4)
    torch._dynamo.reset()
    g = torch.compile(gelu_scale_residual, backend="lamina", dynamic=True, options={"strict": True})
    with torch.no_grad():
        for b, t in [(2, 7), (4, 3)]:
            x, r = torch.randn(b, t, 64), torch.randn(b, t, 160)
            torch.testing.assert_close(g(x, r), gelu_scale_residual(x, r), rtol=1e-4, atol=1e-4)


def test_backward():
    torch._dynamo.reset()
    x = torch.randn(4, 32, 64, requires_grad=True)
    r = torch.randn(4, 32, 160, requires_grad=True)
    out = torch.compile(gelu_scale_residual, backend="lamina", options={"strict": True})(x, r)
    out.square().sum().backward()
    grads = [x.grad, r.grad, LIN.weight.grad.clone(), LIN.bias.grad.clone()]
    for t in (x, r, LIN.weight, LIN.bias):
        t.grad = None
    gelu_scale_residual(x, r).square().sum().backward()
    for got, want in zip(grads, [x.grad, r.grad, LIN.weight.grad, LIN.bias.grad]):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    for t in (x, r, LIN.weight, LIN.bias):
        t.grad = None
