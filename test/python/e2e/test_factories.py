"""Factory ops where torch's reference decomposition differs from eager and lamina's table
(lamina.backend.decompositions) follows eager: integer linspace (start and end truncated to
the dtype, steps in double)."""
from __future__ import annotations

import pytest
import torch

lamina_backend = pytest.importorskip("lamina.backend")


@pytest.mark.parametrize("start,end,steps,dtype", [(4.3, -3, 50, torch.int64), (-4.9, 3.2, 11, torch.int16),
                                                   (-100, 1000, 777, torch.int32), (0.5, 0.5, 3, torch.int64)])
def test_integer_linspace(start, end, steps, dtype):
    fn = lambda s: torch.linspace(start, end, steps, dtype=dtype) + s   # noqa: E731
    torch._dynamo.reset()
    assert torch.equal(torch.compile(fn, backend="lamina", options={"strict": True})(torch.tensor(1)), fn(torch.tensor(1)))


def test_integer_linspace_tensor_bounds():
    fn = lambda s, e: torch.linspace(s, e, 50, dtype=torch.int64)   # noqa: E731
    s, e = torch.tensor(4.3), torch.tensor(-3.0)
    torch._dynamo.reset()
    assert torch.equal(torch.compile(fn, backend="lamina", options={"strict": True})(s, e), fn(s, e))
