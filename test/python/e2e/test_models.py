"""Every reference model compiles with lamina with zero fallback ops and matches eager;
with dynamic=True, one symbolic compile serves another batch size too."""
import json

import pytest
import torch

import lamina.backend
from lamina.testing.models import MODELS


def _records(report_file):
    return [json.loads(line) for line in report_file.read_text().splitlines()]


def _resized(inputs, grow=3):
    """The inputs with every dim of the first input's leading size grown by `grow`."""
    n = inputs[0].shape[0]
    return tuple(torch.randn([d + grow if d == n else d for d in t.shape], dtype=t.dtype) for t in inputs)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_matches_eager_without_fallback(name, dynamic, tmp_path, monkeypatch):
    report_file = tmp_path / "report.jsonl"
    monkeypatch.setenv("LAMINA_REPORT", str(report_file))
    torch._dynamo.reset()
    model, inputs = MODELS[name]()
    compiled = torch.compile(model, backend="lamina", dynamic=dynamic, options={"strict": True})
    with torch.no_grad():
        torch.testing.assert_close(compiled(*inputs), model(*inputs), rtol=1e-4, atol=1e-5)
    records = _records(report_file)
    assert records, "the backend wrote no report"
    for record in records:
        assert record["fallback_ops"] == []
        assert record["kernels"] >= 1
        assert record["ops_compiled"] == record["ops_total"] > 0
        assert {"graph", "target", "compile_s"} <= set(record)
        assert record.get("dynamic", False) == dynamic
    assert records[-1] == lamina.backend.last_report()
    if dynamic:
        other = _resized(inputs)
        with torch.no_grad():
            torch.testing.assert_close(compiled(*other), model(*other), rtol=1e-4, atol=1e-5)
        assert len(_records(report_file)) == len(records), "a symbolic graph was compiled again"


def test_fused_attention_fast_paths_with_masks():
    """nn.TransformerEncoderLayer / nn.MultiheadAttention in eval under no_grad call one fused
    op each; with a causal (float or bool) mask, a key padding mask or both, ATen's masked
    softmax leaves the masked scores out."""
    nn = torch.nn
    torch.manual_seed(0)
    length, batch = 6, 3
    causal = nn.Transformer.generate_square_subsequent_mask(length)
    padding = torch.zeros(batch, length, dtype=torch.bool)
    padding[0, 4:] = True
    masks = [dict(src_mask=causal), dict(src_mask=causal.isinf(), is_causal=True), dict(src_key_padding_mask=padding),
             dict(src_mask=causal.isinf(), src_key_padding_mask=padding)]
    for norm_first in (False, True):
        layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=norm_first).eval()
        for kwargs in masks:
            x = torch.randn(batch, length, 16)
            torch._dynamo.reset()
            with torch.no_grad():
                got = torch.compile(layer, backend="lamina", options={"strict": True})(x, **kwargs)
                torch.testing.assert_close(got, layer(x, **kwargs), rtol=1e-5, atol=1e-5)
    attention = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    for kwargs in (dict(attn_mask=causal), dict(key_padding_mask=padding, need_weights=True, average_attn_weights=False),
                   dict(attn_mask=causal.isinf(), need_weights=True)):
        x = torch.randn(batch, length, 16)
        torch._dynamo.reset()
        with torch.no_grad():
            got = torch.compile(attention, backend="lamina", options={"strict": True})(x, x, x, **kwargs)
            for g, w in zip(got, attention(x, x, x, **kwargs)):
                if w is not None:
                    torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
