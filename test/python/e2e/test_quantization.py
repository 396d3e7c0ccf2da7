"""Quantization (fake_quantize per tensor / per channel, quantize_per_tensor -> dequantize),
strict, bit-exact against eager: inputs on a grid of rounding ties (and their float
neighbours), NaN, +-inf, values far out of range, per-channel axes, bf16 inputs, the
fake-quant-enabled flag, and the straight-through gradient. Runs on the cuda target too."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

lamina_backend = pytest.importorskip("lamina.backend")

SPECIAL = torch.tensor([float("nan"), float("inf"), -float("inf"), 1e10, -1e10, 1e30, -0.0])


def _grid(scale: float, n: int = 400) -> torch.Tensor:
    """Multiples of scale / 2 (ties after x / scale) and their float neighbours, then specials."""
    xs = (np.arange(-n, n) * 0.5 * scale).astype(np.float32)
    xs = np.concatenate([xs, np.nextafter(xs, np.float32(np.inf)), np.nextafter(xs, -np.float32(np.inf))])
    return torch.cat([torch.from_numpy(xs), SPECIAL])


def _compiled(fn, *args):
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(*args)
    assert lamina_backend.last_report()["fallback_ops"] == []
    return out


def _same(a, b):
    a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert torch.equal(torch.nan_to_num(x, nan=7.5), torch.nan_to_num(y, nan=7.5)), (x, y)


@pytest.mark.parametrize("scale,zp,qmin,qmax", [(0.1, 3, 0, 255), (0.037, -4, -128, 127), (0.25, 0, 0, 15)])
def test_fake_quantize_per_tensor(scale, zp, qmin, qmax):
    x = _grid(scale)
    fn = lambda x: torch.ops.aten.fake_quantize_per_tensor_affine_cachemask(x, scale, zp, qmin, qmax)   # noqa: E731
    _same(_compiled(fn, x), fn(x))


def test_fake_quantize_tensor_qparams_and_enabled_flag():
    x = _grid(0.1).reshape(-1, 1).repeat(1, 3)
    scale, zp = torch.tensor([0.1]), torch.tensor([3], dtype=torch.int32)
    for enabled in (torch.tensor([1], dtype=torch.long), torch.tensor([0], dtype=torch.long)):
        fn = lambda x: torch.ops.aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(   # noqa: E731
            x, scale, zp, enabled, 0, 255)
        _same(_compiled(fn, x), fn(x))


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_fake_quantize_per_channel(axis):
    x = _grid(0.05, 200)[:2 * 3 * 121].reshape(2, 3, 121).clone()
    x[0, 0, :7] = SPECIAL
    c = x.shape[axis]
    scale = torch.linspace(0.05, 0.2, c)
    zp = (torch.arange(c, dtype=torch.int32) % 7) * 3 - 2
    fn = lambda x: torch.fake_quantize_per_channel_affine(x, scale, zp, axis, -128, 127)   # noqa: E731
    _same(_compiled(fn, x), fn(x))


def test_fake_quantize_gradient():
    """QAT: the straight-through gradient is the incoming one where x was in range."""
    x = (torch.randn(64, 16) * 20).requires_grad_()
    xr = x.detach().clone().requires_grad_()
    fn = lambda x: (torch.fake_quantize_per_tensor_affine(x, 0.1, 0, -128, 127) * torch.arange(16.0)).sum()   # noqa: E731
    _compiled(fn, x).backward()
    fn(xr).backward()
    assert torch.equal(x.grad, xr.grad)


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") == "1",
                    reason="Triton's interpreter converts float32 to bfloat16 by truncation, not rounding")
def test_fake_quantize_bf16():
    xb = torch.randn(8, 16).bfloat16()
    fb = lambda x: torch.fake_quantize_per_tensor_affine(x, 0.1, 0, -128, 127)   # noqa: E731
    _same(_compiled(fb, xb), fb(xb))


@pytest.mark.parametrize("dtype,scale,zp", [(torch.quint8, 0.1, 3), (torch.qint8, 0.037, -4), (torch.quint8, 0.003, 100)])
def test_quantize_dequantize(dtype, scale, zp):
    x = _grid(scale)
    fn = lambda x: torch.quantize_per_tensor(x, scale, zp, dtype).dequantize() * 2 + 1   # noqa: E731
    _same(_compiled(fn, x), fn(x))


def test_quantize_tensor_qparams():
    x = _grid(0.1)
    scale, zp = torch.tensor(0.1), torch.tensor(3)
    fn = lambda x: torch.dequantize(torch.quantize_per_tensor(x, scale, zp, torch.quint8))   # noqa: E731
    _same(_compiled(fn, x), fn(x))


def test_quantized_tensor_leaving_the_graph_falls_back():
    """A quantized result has no lamina representation: eager runs it, reported."""
    torch._dynamo.reset()
    fn = lambda x: torch.quantize_per_tensor(x * 2, 0.1, 3, torch.quint8)   # noqa: E731
    with pytest.warns(lamina_backend.LaminaFallbackWarning):
        out = torch.compile(fn, backend="lamina")(torch.randn(5))
    assert out.is_quantized
