"""Every reference model compiles with lamina with zero fallback ops and matches eager."""
import json

import pytest
import torch

import lamina.backend
from lamina.testing.models import MODELS


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_matches_eager_without_fallback(name, tmp_path, monkeypatch):
    report_file = tmp_path / "report.jsonl"
    monkeypatch.setenv("LAMINA_REPORT", str(report_file))
    torch._dynamo.reset()
    model, inputs = MODELS[name]()
    with torch.no_grad():
        expected = model(*inputs)
        actual = torch.compile(model, backend="lamina", options={"strict": True})(*inputs)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    records = [json.loads(line) for line in report_file.read_text().splitlines()]
    assert records, "the backend wrote no report"
    for record in records:
        assert record["fallback_ops"] == []
        assert record["kernels"] >= 1
        assert record["ops_compiled"] == record["ops_total"] > 0
        assert {"graph", "target", "compile_s"} <= set(record)
    assert records[-1] == lamina.backend.last_report()
