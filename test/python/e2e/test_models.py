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
