"""Batch norm (training: batch statistics, running statistics written back to the module's
buffers as eager does; eval) and group norm, forward and backward, strict, against eager."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn

lamina_backend = pytest.importorskip("lamina.backend")


def _compiled(m, **kw):
    torch._dynamo.reset()
    return torch.compile(m, backend="lamina", options={"strict": True}, **kw)


@pytest.mark.parametrize("make,shape", [
    (lambda: nn.BatchNorm2d(5), (4, 5, 6, 7)),
    (lambda: nn.BatchNorm1d(3), (8, 3)),
    (lambda: nn.BatchNorm1d(3, momentum=0.3), (4, 3, 9)),
    (lambda: nn.BatchNorm3d(2, affine=False), (2, 2, 3, 4, 5)),
    (lambda: nn.BatchNorm2d(4, momentum=None), (3, 4, 5, 5)),   # cumulative average
])
def test_batch_norm_train_updates_running_stats(make, shape):
    torch.manual_seed(0)
    ref = make().double()
    mod = copy.deepcopy(ref)
    f = _compiled(mod)
    for step in range(3):
        x = (torch.randn(*shape, dtype=torch.float64) * (step + 1) + step).requires_grad_()
        xr = x.detach().clone().requires_grad_()
        out, expected = f(x), ref(xr)
        torch.testing.assert_close(out, expected, rtol=1e-10, atol=1e-10)
        g = torch.randn_like(out)
        out.backward(g)
        expected.backward(g)
        torch.testing.assert_close(x.grad, xr.grad, rtol=1e-9, atol=1e-10)
        for a, b in zip(mod.parameters(), ref.parameters()):
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-9, atol=1e-10)
        torch.testing.assert_close(mod.running_mean, ref.running_mean, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(mod.running_var, ref.running_var, rtol=1e-12, atol=1e-12)
        assert int(mod.num_batches_tracked) == int(ref.num_batches_tracked)
    assert all(r["fallback_ops"] == [] for r in lamina_backend.reports()[-2:])


def test_batch_norm_eval_and_bf16():
    torch.manual_seed(0)
    bn = nn.BatchNorm2d(6)
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-1, 1)
    bn.eval()
    x = torch.randn(3, 6, 5, 4)
    with torch.no_grad():
        torch.testing.assert_close(_compiled(bn)(x), bn(x), rtol=1e-5, atol=1e-5)
        bnh = copy.deepcopy(bn).bfloat16()
        xh = x.bfloat16()
        torch.testing.assert_close(_compiled(bnh)(xh), bnh(xh), rtol=1.6e-2, atol=1e-2)


def test_batch_norm_channels_last_input():
    torch.manual_seed(0)
    bn = nn.BatchNorm2d(4)
    ref = copy.deepcopy(bn)
    x = torch.randn(2, 4, 5, 6).to(memory_format=torch.channels_last)
    torch.testing.assert_close(_compiled(bn)(x), ref(x), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(bn.running_var, ref.running_var)


@pytest.mark.parametrize("groups,shape,affine", [(2, (3, 4, 5, 6), True), (1, (2, 3, 7), True), (3, (2, 6, 2, 2, 2), False)])
def test_group_norm_forward_backward(groups, shape, affine):
    torch.manual_seed(0)
    ref = nn.GroupNorm(groups, shape[1], affine=affine).double()
    mod = copy.deepcopy(ref)
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    xr = x.detach().clone().requires_grad_()
    out, expected = _compiled(mod)(x), ref(xr)
    torch.testing.assert_close(out, expected, rtol=1e-10, atol=1e-10)
    g = torch.randn_like(out)
    out.backward(g)
    expected.backward(g)
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-9, atol=1e-10)
    assert all(r["fallback_ops"] == [] for r in lamina_backend.reports()[-2:])
