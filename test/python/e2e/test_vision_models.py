"""A ResNet-18, a MobileNetV2, an EfficientNet-B0 and a small ViT (lamina.testing.cnn_models:
torch.nn, random weights, reduced widths) in eval and train mode, forward and backward, with
zero fallback ops (strict) against eager, in float64 so that differences are lamina's, not
rounding's: outputs, input and parameter gradients, and the batch-norm running statistics.

The train-mode tests compile ~160 forward and ~330 backward kernels per model (a minute of
LLVM per graph on a 2-core machine): they run with LAMINA_SLOW_TESTS=1, outside CI's budget
(`LAMINA_SLOW_TESTS=1 python -m pytest test/python/e2e/test_vision_models.py`)."""
from __future__ import annotations

import copy
import os

import pytest
import torch

from lamina.testing.cnn_models import CNN_MODELS

lamina_backend = pytest.importorskip("lamina.backend")

TOL = dict(rtol=1e-7, atol=1e-9)


def _model(name):
    torch.manual_seed(0)
    return CNN_MODELS[name]().double()


@pytest.mark.parametrize("name", sorted(CNN_MODELS))
def test_eval_forward(name):
    model = _model(name).eval()
    x = torch.randn(2, 3, 32, 32, dtype=torch.float64)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="lamina", options={"strict": True})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), **TOL)
    assert all(r["fallback_ops"] == [] for r in lamina_backend.reports()[-1:])


@pytest.mark.skipif(os.environ.get("LAMINA_SLOW_TESTS", "") in ("", "0"),
                    reason="minutes of compile per model: set LAMINA_SLOW_TESTS=1")
@pytest.mark.parametrize("name", sorted(CNN_MODELS))
def test_train_forward_backward(name):
    ref = _model(name).train()
    model = copy.deepcopy(ref)
    x = torch.randn(2, 3, 32, 32, dtype=torch.float64)
    xr = x.clone().requires_grad_()
    x.requires_grad_()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="lamina", options={"strict": True})
    out, expected = compiled(x), ref(xr)
    torch.testing.assert_close(out, expected, **TOL)
    g = torch.randn_like(out)
    out.backward(g)
    expected.backward(g)
    torch.testing.assert_close(x.grad, xr.grad, **TOL)
    for (n, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        torch.testing.assert_close(p.grad, q.grad, **TOL, msg=lambda m: f"{n}: {m}")
    for (n, b), (_, c) in zip(model.named_buffers(), ref.named_buffers()):
        torch.testing.assert_close(b, c, **TOL, msg=lambda m: f"{n}: {m}")
    assert all(r["fallback_ops"] == [] for r in lamina_backend.reports()[-2:])


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_fast_path(norm_first, activation):
    """nn.TransformerEncoderLayer / nn.MultiheadAttention in eval under no_grad run one fused
    op each (_transformer_encoder_layer_fwd, _native_multi_head_attention)."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, norm_first=norm_first,
                                             activation=activation).eval()
    x = torch.randn(2, 5, 32)
    torch._dynamo.reset()
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(layer, backend="lamina", options={"strict": True})(x), layer(x),
                                   rtol=1e-5, atol=1e-5)
        mha = torch.nn.MultiheadAttention(32, 4, batch_first=True).eval()
        fn = lambda x: mha(x, x, x, need_weights=True)   # noqa: E731
        torch._dynamo.reset()
        out, weights = torch.compile(fn, backend="lamina", options={"strict": True})(x)
        ref, ref_weights = fn(x)
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(weights, ref_weights, rtol=1e-5, atol=1e-6)
