"""F.interpolate with antialias=True (backend/antialias_resize.py: ATen's separable filter as
two matmuls), bilinear and bicubic, down- and upscaling, sizes and scale factors,
align_corners, a dim left unchanged, and the backward; strict, against eager."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

lamina_backend = pytest.importorskip("lamina.backend")

G = torch.Generator().manual_seed(0)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialiased_resize_matches_eager(mode):
    x = torch.randn(2, 3, 20, 14, generator=G, dtype=torch.float64)
    for kw in [dict(size=(7, 9)), dict(size=(33, 5), align_corners=True), dict(size=(20, 6)),
               dict(scale_factor=0.3), dict(size=(1, 1))]:
        torch._dynamo.reset()
        fn = lambda t: F.interpolate(t, mode=mode, antialias=True, **kw)   # noqa: E731
        got = torch.compile(fn, backend="lamina", options={"strict": True})(x)
        torch.testing.assert_close(got, fn(x), rtol=1e-12, atol=1e-12)


def test_antialiased_resize_backward():
    for mode in ("bilinear", "bicubic"):
        torch._dynamo.reset()
        fn = lambda t: F.interpolate(t, size=(7, 9), mode=mode, antialias=True) * 2   # noqa: E731
        xe = torch.randn(1, 2, 16, 12, generator=G, dtype=torch.float64, requires_grad=True)
        xc = xe.detach().clone().requires_grad_()
        g = torch.randn(1, 2, 7, 9, generator=G, dtype=torch.float64)
        torch.compile(fn, backend="lamina", options={"strict": True})(xc).backward(g)
        fn(xe).backward(g)
        torch.testing.assert_close(xc.grad, xe.grad, rtol=1e-12, atol=1e-12)
