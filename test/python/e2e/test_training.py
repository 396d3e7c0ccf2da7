"""Backward graphs go through lamina too: gradients match eager, with no fallback."""
import pytest
import torch

import lamina.backend
from lamina.testing.eager_match import assert_gradients_match_eager
from lamina.testing.models import MLP, GPTBlock


@pytest.mark.parametrize("make", [lambda: (MLP(), torch.randn(8, 64)),
                                  lambda: (GPTBlock(64, 4), torch.randn(2, 8, 64))], ids=["mlp", "gpt_block"])
def test_gradients_match_eager(make):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model, x = make()
    before = len(lamina.backend.reports())
    actual, expected = assert_gradients_match_eager(
        model, x, lambda m: torch.compile(m, backend="lamina", options={"strict": True}))
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-4)
    records = lamina.backend.reports()[before:]
    assert [r["graph"].rsplit("_", 1)[1] for r in records] == ["forward", "backward"]
    assert all(r["fallback_ops"] == [] and r["kernels"] >= 1 for r in records)
