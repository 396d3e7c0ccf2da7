"""Backward graphs go through lamina too: gradients match eager, with no fallback."""
import pytest
import torch

import lamina.backend
from lamina.testing.models import MLP, GPTBlock


@pytest.mark.parametrize("make", [lambda: (MLP(), torch.randn(8, 64)),
                                  lambda: (GPTBlock(64, 4), torch.randn(2, 8, 64))], ids=["mlp", "gpt_block"])
def test_gradients_match_eager(make):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model, x = make()
    x.requires_grad_(True)
    expected = model(x).sum()
    expected.backward()
    expected_grads = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad()
    x.grad = None
    before = len(lamina.backend.reports())
    actual = torch.compile(model, backend="lamina", options={"strict": True})(x).sum()
    actual.backward()
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-4)
    for got, want in zip([p.grad for p in model.parameters()] + [x.grad], expected_grads):
        torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-4)
    records = lamina.backend.reports()[before:]
    assert [r["graph"].rsplit("_", 1)[1] for r in records] == ["forward", "backward"]
    assert all(r["fallback_ops"] == [] and r["kernels"] >= 1 for r in records)
