"""The check the e2e op tests share: compiled strictly (no fallback), the graph's outputs
equal eager's in dtype, shape and value."""
from __future__ import annotations

import torch


def assert_strict_compile_matches_eager(fn, x, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """`fn(x)` through torch.compile(backend="lamina", strict) against eager: every output
    (one tensor, or a tuple of them) of the same dtype and shape, NaN where eager has NaN,
    and no op ran eagerly."""
    import lamina.backend as lamina_backend

    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    ref = fn(x)
    out, ref = (out, ref) if isinstance(ref, tuple) else ((out,), (ref,))
    for o, r in zip(out, ref):
        assert o.dtype == r.dtype and o.shape == r.shape
        torch.testing.assert_close(o, r, equal_nan=True, rtol=rtol, atol=atol)
    assert lamina_backend.last_report()["fallback_ops"] == []


def assert_gradients_match_eager(model, x, compiled, rtol: float = 1e-3, atol: float = 1e-4):
    """`compiled(model)(x).sum()`'s gradients (the parameters' and x's) against eager's;
    x is made to require grad. Returns the compiled loss and eager's, for callers that
    compare them too."""
    x.requires_grad_(True)
    expected = model(x).sum()
    expected.backward()
    want = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad()
    x.grad = None
    actual = compiled(model)(x).sum()
    actual.backward()
    for got, w in zip([p.grad for p in model.parameters()] + [x.grad], want):
        torch.testing.assert_close(got, w, rtol=rtol, atol=atol)
    return actual, expected
