"""Graphs that need no autograd are exported once and called with no AOTAutograd runtime
around them; graphs that mutate inputs or return aliases still go through AOTAutograd,
whose wrappers give them eager's semantics."""
import torch

import lamina.backend


def _kinds_since(before):
    return [r["graph"].rsplit("_", 1)[1] for r in lamina.backend.reports()[before:]]


def test_no_grad_graph_is_one_inference_graph():
    torch._dynamo.reset()
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32))
    x = torch.randn(4, 16)
    before = len(lamina.backend.reports())
    with torch.no_grad():
        got = torch.compile(model, backend="lamina", options={"strict": True})(x)
        want = model(x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert not got.requires_grad
    assert _kinds_since(before) == ["inference"]


def test_inputs_without_grad_need_no_autograd_even_with_grad_enabled():
    torch._dynamo.reset()
    before = len(lamina.backend.reports())
    x, y = torch.randn(8, 8), torch.randn(8, 8)
    got = torch.compile(lambda a, b: torch.sin(a) * b, backend="lamina", options={"strict": True})(x, y)
    torch.testing.assert_close(got, torch.sin(x) * y)
    assert _kinds_since(before) == ["inference"]


def test_switching_to_grad_recompiles_with_autograd():
    torch._dynamo.reset()
    fn = torch.compile(lambda a: (torch.tanh(a) * a).sum(), backend="lamina", options={"strict": True})
    x = torch.randn(5, 7)
    with torch.no_grad():
        fn(x)
    before = len(lamina.backend.reports())
    xg = x.clone().requires_grad_(True)
    fn(xg).backward()
    want = x.clone().requires_grad_(True)
    (torch.tanh(want) * want).sum().backward()
    torch.testing.assert_close(xg.grad, want.grad)
    assert _kinds_since(before) == ["forward", "backward"]


def test_input_mutation_goes_through_aot_autograd():
    torch._dynamo.reset()

    def f(a, b):
        a.mul_(2)
        return a + b

    x, y = torch.randn(6, 6), torch.randn(6, 6)
    x_eager = x.clone()
    before = len(lamina.backend.reports())
    with torch.no_grad():
        got = torch.compile(f, backend="lamina")(x, y)
        want = f(x_eager, y)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x, x_eager)  # the caller's tensor was mutated as in eager
    assert "inference" not in _kinds_since(before)


def test_output_aliasing_an_input_stays_a_view():
    torch._dynamo.reset()

    def f(a):
        return a.t(), a * 3

    x = torch.randn(4, 6)
    with torch.no_grad():
        view, scaled = torch.compile(f, backend="lamina")(x)
    torch.testing.assert_close(scaled, x * 3)
    x[0, 0] = 123.0  # eager's a.t() shares storage with a: so must the compiled one
    assert view[0, 0].item() == 123.0
