"""Transposes folded into the elementwise ops that read them (lowering/transposed_epilogues.py),
run with the 8x8 vector tiles of a transpose (tile_pointwise.py): the epilogues of channels-last
library convolutions and user-level transposes, against eager. Sizes are chosen so that both
swapped loops have full 8x8 tiles and remainders (odd channel counts and spatial sizes)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from lamina import backend as lamina_backend


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _compiled(fn, **options):
    torch._dynamo.reset()
    return torch.compile(fn, backend="lamina", options={"strict": True, **options})


def _per_channel(c: int, seed: int, rank: int = 4):
    g = torch.Generator().manual_seed(seed)
    mean, var = torch.randn(c, generator=g), torch.rand(c, generator=g) + 0.5
    scale, shift = torch.randn(c, generator=g), torch.randn(c, generator=g)
    view = (1, c) + (1,) * (rank - 2)
    return [t.view(view) for t in (mean, var, scale, shift)]


def _bn(y, p):
    mean, var, scale, shift = p
    return (y - mean) * torch.rsqrt(var + 1e-5) * scale + shift


P12 = _per_channel(12, 1)
P16 = _per_channel(16, 2)
P19 = _per_channel(19, 3, rank=5)

CONV_CASES = [
    # BN + ReLU6 after a 3x3 convolution: 12 channels (a full tile and 4), 9x11 positions
    ("bn_relu6", lambda x, w: F.relu6(_bn(F.conv2d(x, w, padding=1), P12)), [(2, 5, 9, 11), (12, 5, 3, 3)]),
    # SiLU (an exponential on the 8x8 tiles) and a residual read through the swapped map
    ("silu_residual", lambda x, w: F.silu(_bn(F.conv2d(x, w, padding=1), P16)) + x, [(3, 16, 7, 13), (16, 16, 3, 3)]),
    # depthwise (groups) with a stride: the grouped result's reshapes
    ("depthwise_stride", lambda x, w: torch.relu(_bn(F.conv2d(x, w, padding=1, stride=2, groups=16), P16)),
     [(2, 16, 19, 17), (16, 1, 3, 3)]),
    # 3-d: three spatial dims collapse into one loop
    ("conv3d_bias_gelu", lambda x, w, b: F.gelu(F.conv3d(x, w, b, padding=1) * P19[2] + P19[3]),
     [(1, 3, 5, 6, 7), (19, 3, 3, 3, 3), (19,)]),
    # two outputs of one fused epilogue
    ("two_outputs", lambda x, w: (lambda y: (torch.relu(y), y.sigmoid() * 2))(_bn(F.conv2d(x, w), P12)),
     [(2, 9, 10, 10), (12, 9, 1, 1)]),
]


@pytest.mark.parametrize("fn,shapes", [pytest.param(f, s, id=i) for i, f, s in CONV_CASES])
def test_convolution_epilogues(fn, shapes, monkeypatch):
    monkeypatch.setenv("LAMINA_CONVOLUTION", "library")
    args = [_randn(*s, seed=i) for i, s in enumerate(shapes)]
    out = _compiled(fn)(*args)
    torch.testing.assert_close(out, fn(*args), rtol=1e-4, atol=1e-4)
    report = lamina_backend.last_report()
    assert report["fallback_ops"] == []
    grads = [a.clone().requires_grad_() for a in args]
    res = _compiled(fn)(*grads)
    (sum(r.square().sum() for r in res) if isinstance(res, tuple) else res.square().sum()).backward()
    ref = [a.clone().requires_grad_() for a in args]
    res = fn(*ref)
    (sum(r.square().sum() for r in res) if isinstance(res, tuple) else res.square().sum()).backward()
    for a, r in zip(grads, ref):
        torch.testing.assert_close(a.grad, r.grad, rtol=1e-3, atol=1e-3)


def test_convolution_epilogue_edge_values(monkeypatch):
    """nan, inf and large magnitudes through the fused epilogue."""
    monkeypatch.setenv("LAMINA_CONVOLUTION", "library")
    x = _randn(2, 8, 9, 10)
    x[0, 0, 2, 2] = float("nan")
    x[1, 3, 4, 4] = float("inf")
    x[1, 5] *= 1e30
    w = _randn(10, 8, 1, 1, seed=1)
    fn = lambda x, w: torch.clamp(F.conv2d(x, w) * 2 - 1, -1e35, 1e35)   # noqa: E731
    torch.testing.assert_close(_compiled(fn)(x, w), fn(x, w), equal_nan=True)


USER_CASES = [
    # [A, P, F] -> [A, F, P] and an elementwise op on it, with a same-shaped and a broadcast operand
    ("transpose_mul_sigmoid", lambda x, y, b: (x.transpose(-1, -2) * y + b).sigmoid(),
     [(3, 21, 13), (3, 13, 21), (13, 1)]),
    # a 2-d transpose feeding a ReLU (no leading dims)
    ("t_relu", lambda x: torch.relu(x.t() - 0.5), [(37, 45)]),
    # the transposed tensor then reshaped (the reshape chain between the transpose and its reader)
    ("transpose_reshape", lambda x: torch.tanh(x.transpose(1, 2).reshape(2, 9, 4, 5) * 3), [(2, 20, 9)]),
    # smaller than a tile along one swapped dim: scalar elements
    ("narrow", lambda x: x.transpose(0, 1).exp(), [(5, 40)]),
]


@pytest.mark.parametrize("fn,shapes", [pytest.param(f, s, id=i) for i, f, s in USER_CASES])
def test_user_transposes(fn, shapes):
    args = [_randn(*s, seed=i) for i, s in enumerate(shapes)]
    torch.testing.assert_close(_compiled(fn)(*args), fn(*args), rtol=1e-5, atol=1e-5)
    # a non-contiguous, storage-offset input
    big = [_randn(*(2 * d for d in s), seed=9 + i) for i, s in enumerate(shapes)]
    views = [b[tuple(slice(1, None, 2) for _ in s)] for b, s in zip(big, shapes)]
    torch.testing.assert_close(_compiled(fn)(*views), fn(*views), rtol=1e-5, atol=1e-5)


def test_activation_between_convolutions_channels_last(monkeypatch, tmp_path):
    """A conv -> BN/ReLU -> conv chain (lowering/conv_activation_layouts.py): on the CPU the
    intermediate crosses the kernel boundary as [N, H, W, C] (the first kernel's epilogue
    writes it so, the second kernel's pair of transposes cancels); forward and backward match
    eager, for an odd spatial size and a grouped second convolution. (A grouped convolution
    of the unpadded argument keeps the NCHW boundary: see _channels_last_conv_input.)"""
    monkeypatch.setenv("LAMINA_CONVOLUTION", "library")
    fn = lambda x, w1, w2: F.conv2d(torch.relu(_bn(F.conv2d(x, w1, padding=1), P16)), w2, padding=1, groups=4)  # noqa: E731
    args = [_randn(2, 8, 11, 13), _randn(16, 8, 3, 3, seed=1), _randn(12, 4, 3, 3, seed=2)]
    out = _compiled(fn, dump_ir=str(tmp_path))(*args)
    torch.testing.assert_close(out, fn(*args), rtol=1e-4, atol=1e-4)
    if lamina_backend.last_report()["target"] == "cpu":
        linalg = "".join(p.read_text() for p in tmp_path.glob("*06-linalg.mlir"))
        assert "-> tensor<2x11x13x16xf32>" in linalg   # the first kernel's result, channels-last
    grads = [a.clone().requires_grad_() for a in args]
    _compiled(fn)(*grads).square().sum().backward()
    ref = [a.clone().requires_grad_() for a in args]
    fn(*ref).square().sum().backward()
    for a, r in zip(grads, ref):
        torch.testing.assert_close(a.grad, r.grad, rtol=1e-3, atol=1e-3)
