"""Unsupported ops run eagerly with one warning naming them; strict mode raises instead."""
import json
import warnings

import pytest
import torch

import lamina.backend
from lamina.backend import LaminaFallbackWarning
from lamina.testing.opaque import OPAQUE_OP, opaque_scale


def with_opaque(x):
    # an op lamina has no lowering for: it runs eagerly between two compiled parts
    return opaque_scale(torch.sin(x) * 2.0 + 3.0) + torch.cos(x)


def test_unsupported_op_falls_back_with_a_warning(tmp_path, monkeypatch):
    report_file = tmp_path / "report.jsonl"
    monkeypatch.setenv("LAMINA_REPORT", str(report_file))
    monkeypatch.delenv("LAMINA_STRICT", raising=False)
    torch._dynamo.reset()
    x = torch.randn(6, 10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(with_opaque, backend="lamina")(x)
    torch.testing.assert_close(out, with_opaque(x), rtol=1e-4, atol=1e-5)
    fallback_warnings = [w for w in caught if issubclass(w.category, LaminaFallbackWarning)]
    assert len(fallback_warnings) == 1
    assert "lamina_testing.opaque_scale" in str(fallback_warnings[0].message)
    record = json.loads(report_file.read_text().splitlines()[-1])
    assert record["fallback_ops"] == [OPAQUE_OP]
    assert record["kernels"] >= 1, "the supported ops around it should still be compiled"
    assert 0 < record["ops_compiled"] < record["ops_total"]


def test_dynamic_partitions_around_a_fallback_compile(monkeypatch):
    # The partitions of a dynamic graph take no size inputs: they read their symbols off the
    # input shapes (the launch plan used to reject those tensor.dim ops: the parts ran eagerly).
    monkeypatch.delenv("LAMINA_STRICT", raising=False)
    torch._dynamo.reset()
    fn = torch.compile(with_opaque, backend="lamina", dynamic=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LaminaFallbackWarning)
        for shape in ((6, 10), (3, 7)):
            x = torch.randn(shape)
            torch.testing.assert_close(fn(x), with_opaque(x), rtol=1e-4, atol=1e-5)
            record = lamina.backend.last_report()
            assert record["fallback_ops"] == [OPAQUE_OP] and record["partitions"] == 2


@pytest.mark.parametrize("how", ["option", "env"])
def test_strict_mode_names_the_op_and_the_source_line(how, monkeypatch):
    torch._dynamo.reset()
    options = {}
    if how == "option":
        options = {"strict": True}
    else:
        monkeypatch.setenv("LAMINA_STRICT", "1")
    compiled = torch.compile(with_opaque, backend="lamina", options=options)
    with pytest.raises(Exception) as info:
        compiled(torch.randn(6, 10))
    message = str(info.value)
    assert "lamina_testing.opaque_scale" in message
    assert "test_fallback.py" in message  # where it came from in the user's code


def test_unknown_option_is_a_clear_error():
    torch._dynamo.reset()
    with pytest.raises(Exception, match="unknown lamina option 'stricct'"):
        torch.compile(torch.sin, backend="lamina", options={"stricct": True})(torch.randn(3))


def test_report_is_available_from_python():
    torch._dynamo.reset()
    torch.compile(lambda x: torch.exp(x) + 1, backend="lamina")(torch.randn(5))
    record = lamina.backend.last_report()
    for key in ("graph", "target", "ops_total", "ops_compiled", "fallback_ops", "kernels", "compile_s"):
        assert key in record
    assert record["target"] == "cpu" and record["kernels"] >= 1


def test_clone_of_an_input_does_not_alias_it():
    torch._dynamo.reset()
    x = torch.randn(4)
    y = torch.compile(lambda t: t.clone(), backend="lamina")(x)
    torch.testing.assert_close(y, x)
    y.add_(1.0)
    assert not torch.equal(y, x), "the compiled clone must be a new tensor"


def test_ops_with_effect_tokens_fall_back_without_crashing():
    """linalg.inv checks its errors through an effectful op: exported with an effect token
    (an extra input), which the direct inference path cannot thread; the graph goes the
    AOTAutograd way and runs (the unsupported op eagerly, reported)."""
    import warnings

    torch._dynamo.reset()
    x = torch.randn(3, 3) + 3 * torch.eye(3)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = torch.compile(lambda x: torch.linalg.inv(x) * 2, backend="lamina")(x)
    torch.testing.assert_close(out, torch.linalg.inv(x) * 2)


def test_a_graph_that_needs_a_tensor_value_to_trace_runs_eagerly_and_says_so(monkeypatch):
    """narrow with a tensor start: AOTAutograd cannot trace it to ATen (the start's value
    decides the shape). The graph runs eagerly with one fallback warning and a report entry,
    not dynamo's backend-failure traceback; strict names the user's line."""
    monkeypatch.delenv("LAMINA_STRICT", raising=False)
    fn = lambda x, start: torch.narrow(x, 1, start, 2) * 2   # noqa: E731
    x, start = torch.randn(4, 5), torch.tensor(1)
    torch._dynamo.reset()
    lamina.backend.clear_reports()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(fn, backend="lamina")(x, start)
    torch.testing.assert_close(out, fn(x, start))
    fallback = [w for w in caught if issubclass(w.category, LaminaFallbackWarning)]
    assert len(fallback) == 1 and "narrow" in str(fallback[0].message)
    record = lamina.backend.last_report()
    assert "narrow" in record["fallback_ops"] and record["fallback_reason"].startswith("data-dependent")
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(fn, backend="lamina", options={"strict": True})(x, start)
    assert "needs a tensor's value" in str(info.value) and "test_fallback.py" in str(info.value)


def test_a_graph_autograd_cannot_trace_runs_eagerly_and_says_so(monkeypatch):
    """An in-place add on a relu output autograd saved: AOTAutograd's joint trace raises
    (Inductor's too), where eager raises only if backward runs. The graph runs eagerly with
    one warning, as eager would, not dynamo's backend-failure traceback; strict raises."""
    monkeypatch.delenv("LAMINA_STRICT", raising=False)
    conv = torch.nn.Conv2d(3, 3, 1)

    def fn(x):
        out = torch.relu(conv(x))
        out += x
        return out

    x = torch.randn(2, 3, 4, 4)
    torch._dynamo.reset()
    lamina.backend.clear_reports()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(fn, backend="lamina")(x)
    torch.testing.assert_close(out, fn(x))
    assert len([w for w in caught if issubclass(w.category, LaminaFallbackWarning)]) == 1
    assert lamina.backend.last_report()["fallback_reason"].startswith("autograd trace")
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(fn, backend="lamina", options={"strict": True})(x)
    assert "AOTAutograd could not trace" in str(info.value) and "test_fallback.py" in str(info.value)
