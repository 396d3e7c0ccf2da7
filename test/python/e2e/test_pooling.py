"""Pooling end to end (strict: no fallback) against eager: max (indices, ceil_mode, dilation,
nan), avg (count_include_pad, divisor_override, ceil_mode), adaptive avg/max, 1-3 spatial
dims, with and without a batch dim; backward in float64."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

lamina_backend = pytest.importorskip("lamina.backend")

CASES = [
    ("max2d_k3s2p1", lambda x: F.max_pool2d(x, 3, 2, 1), (2, 3, 9, 9)),
    ("max2d_ceil", lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), (1, 2, 8, 8)),
    ("max2d_dilation_ceil", lambda x: F.max_pool2d(x, 2, 2, 0, dilation=2, ceil_mode=True), (2, 3, 10, 9)),
    ("max1d", lambda x: F.max_pool1d(x, 3, 2), (2, 3, 11)),
    ("max3d", lambda x: F.max_pool3d(x, 2), (1, 2, 4, 4, 4)),
    ("max2d_no_batch", lambda x: F.max_pool2d(x, 2), (3, 6, 6)),
    ("avg2d", lambda x: F.avg_pool2d(x, 3, 2, 1), (2, 3, 9, 9)),
    ("avg2d_exclude_pad_ceil", lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False, ceil_mode=True), (2, 3, 8, 9)),
    ("avg2d_divisor_override", lambda x: F.avg_pool2d(x, 2, divisor_override=3), (2, 3, 8, 8)),
    ("avg1d", lambda x: F.avg_pool1d(x, 4, 3, 2), (2, 3, 13)),
    ("avg3d_ceil", lambda x: F.avg_pool3d(x, 2, ceil_mode=True), (1, 2, 5, 4, 3)),
    ("adaptive_avg_global", lambda x: F.adaptive_avg_pool2d(x, 1), (2, 3, 7, 7)),
    ("adaptive_avg_uneven", lambda x: F.adaptive_avg_pool2d(x, (3, 2)), (2, 3, 7, 5)),
    ("adaptive_avg_1d", lambda x: F.adaptive_avg_pool1d(x, 4), (2, 3, 10)),
    ("adaptive_avg_3d", lambda x: F.adaptive_avg_pool3d(x, (2, 3, 1)), (1, 2, 5, 5, 4)),
    ("adaptive_max_uneven", lambda x: F.adaptive_max_pool2d(x, (3, 4)), (2, 3, 7, 5)),
    ("adaptive_max_1d", lambda x: F.adaptive_max_pool1d(x, 3), (2, 3, 10)),
]


def _matches_eager_float64(compiled, fn, shape, seed: int) -> None:
    """compiled(x) and its input gradient equal eager's, in float64."""
    x = torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed), requires_grad=True)
    xr = x.detach().clone().requires_grad_()
    out, ref = compiled(x), fn(xr)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    g = torch.randn_like(ref)
    out.backward(g)
    ref.backward(g)
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn,shape", [pytest.param(f, s, id=i) for i, f, s in CASES])
def test_forward_backward_float64(fn, shape):
    torch._dynamo.reset()
    _matches_eager_float64(torch.compile(fn, backend="lamina", options={"strict": True}), fn, shape, 0)


@pytest.mark.parametrize("fn", [
    lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True),
    lambda x: F.max_pool2d(x, 2, 1, return_indices=True, ceil_mode=True),
    lambda x: F.adaptive_max_pool2d(x, (3, 2), return_indices=True),
], ids=["max2d", "max2d_ceil", "adaptive_max"])
def test_indices_nan_inf_and_ties(fn):
    """Indices equal eager's: nan wins (a later nan too), -inf windows keep their first
    valid position, ties keep the first."""
    x = torch.randn(2, 3, 7, 6, generator=torch.Generator().manual_seed(1))
    x[0, 0, 1, 1] = float("nan")
    x[0, 0, 1, 2] = float("nan")
    x[0, 1, :3, :3] = float("-inf")
    x[1, 2] = 0.5   # ties everywhere
    torch._dynamo.reset()
    out, idx = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    ref, ref_idx = fn(x)
    torch.testing.assert_close(out, ref, equal_nan=True)
    assert torch.equal(idx, ref_idx)


def test_pooling_bf16_and_channels_last():
    x = torch.randn(2, 4, 8, 8, generator=torch.Generator().manual_seed(2))
    fn = lambda x: F.avg_pool2d(F.max_pool2d(x, 2), 2, ceil_mode=True)   # noqa: E731
    for inp in (x.bfloat16(), x.to(memory_format=torch.channels_last)):
        torch._dynamo.reset()
        out = torch.compile(fn, backend="lamina", options={"strict": True})(inp)
        torch.testing.assert_close(out, fn(inp))


def _grown(shape, by):
    """The shape with its last two (or one) dims grown: spatial sizes the symbolic graph
    has not seen."""
    return tuple(n + by if i >= len(shape) - 2 else n for i, n in enumerate(shape))


@pytest.mark.parametrize("fn,shape", [pytest.param(f, s, id=i) for i, f, s in CASES])
def test_symbolic_spatial_sizes_float64(fn, shape):
    """dynamic=True: one graph of symbolic spatial sizes serves sizes of every remainder
    modulo the stride (windows hanging over the end or not), forward and backward, with no
    fallback."""
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
    before = len(lamina_backend.reports())
    for by in (0, 1, 2, 3):
        _matches_eager_float64(compiled, fn, _grown(shape, by), by)
    records = lamina_backend.reports()[before:]
    assert records and all(r["dynamic"] and not r["fallback_ops"] for r in records), records


@pytest.mark.parametrize("fn", [
    lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True, ceil_mode=True),
    lambda x: F.adaptive_max_pool2d(x, (3, 2), return_indices=True),
], ids=["max2d_ceil", "adaptive_max"])
def test_symbolic_sizes_indices_nan_inf_and_ties(fn):
    """Along symbolic sizes, too, indices equal eager's (nan, -inf windows, ties)."""
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
    for h, w in ((7, 6), (8, 9)):
        x = torch.randn(2, 3, h, w, generator=torch.Generator().manual_seed(h))
        x[0, 0, 1, 1] = x[0, 0, 1, 2] = x[0, 0, 2, 0] = float("nan")
        x[0, 1, :3, :3] = float("-inf")
        x[1, 2] = 0.5
        out, idx = compiled(x)
        ref, ref_idx = fn(x)
        torch.testing.assert_close(out, ref, equal_nan=True)
        assert torch.equal(idx, ref_idx)
