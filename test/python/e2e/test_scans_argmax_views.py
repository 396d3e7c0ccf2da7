"""Scans (cumsum, cumprod, cummax, cummin), positions (argmax, argmin, max/min with indices)
and layout ops (repeat, diagonal, unfold), strict, against eager: NaN, ties, ints, bools,
0-d, keepdim, negative dims, non-contiguous inputs, bf16."""
from __future__ import annotations

import pytest
import torch

lamina_backend = pytest.importorskip("lamina.backend")
from lamina.testing.eager_match import assert_strict_compile_matches_eager  # noqa: E402


def _inputs():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 7, 9, generator=g)
    x[1, 2, 3] = float("nan")
    x[2, :, 1] = 5.0        # ties along dim 1
    x[3, 1, :] = 0.5        # ties along dim 2
    xi = torch.randint(-3, 4, (4, 7, 9), generator=g)
    return x, xi


X, XI = _inputs()
CASES = [
    ("cumsum", lambda x: torch.cumsum(x, 1), X),
    ("cumsum_neg_dim", lambda x: torch.cumsum(x, -1), X),
    ("cumsum_noncontiguous", lambda x: torch.cumsum(x.transpose(0, 2), 1), X),
    ("cumprod", lambda x: torch.cumprod(x, 2), X),
    ("cumsum_int", lambda x: torch.cumsum(x, 0), XI),
    ("cumsum_bool", lambda x: torch.cumsum(x > 0, 1), XI),
    ("cumprod_int", lambda x: torch.cumprod(x, 2), XI),
    ("cumsum_dtype", lambda x: torch.cumsum(x, 1, dtype=torch.float64), X),
    ("cumsum_0d", lambda x: torch.cumsum(x[0, 0, 0], 0), X),
    ("cummax_nan_ties", lambda x: torch.cummax(x, 2), X),
    ("cummin_nan_ties", lambda x: torch.cummin(x, 1), X),
    ("cummax_int", lambda x: torch.cummax(x, 2), XI),
    ("cummin_int8", lambda x: torch.cummin(x.to(torch.int8), 2), XI),
    ("cummax_int16", lambda x: torch.cummax(x.to(torch.int16), 1), XI),
    ("cummax_int32", lambda x: torch.cummax(x.to(torch.int32), 2), XI),
    ("cummin_bool", lambda x: torch.cummin(x > 0, 2), XI),
    ("cummax_bool", lambda x: torch.cummax(x > 0, 1), XI),
    ("argmax_nan_ties", lambda x: torch.argmax(x, 1), X),
    ("argmin_flat", lambda x: torch.argmin(x), X),
    ("argmax_keepdim", lambda x: torch.argmax(x, -1, keepdim=True), X),
    ("argmax_flat_keepdim", lambda x: torch.argmax(x, keepdim=True), X),
    ("max_dim_indices", lambda x: torch.max(x, 1), X),
    ("min_dim_keepdim", lambda x: torch.min(x, 2, keepdim=True), X),
    ("argmax_int", lambda x: torch.argmax(x, 2), XI),
    ("max_dim_int", lambda x: torch.max(x, 0), XI),
    ("argmax_0d", lambda x: torch.argmax(x[0, 0, 0]), X),
    ("repeat", lambda x: x.repeat(2, 1, 3), X),
    ("repeat_new_dims", lambda x: x.repeat(2, 2, 1, 1), X),
    ("diagonal", lambda x: torch.diagonal(x, 0, 1, 2), X),
    ("diagonal_offsets", lambda x: (torch.diagonal(x, 2, 1, 2), torch.diagonal(x, -3, 2, 1)), X),
    ("diagonal_dims_0_2", lambda x: torch.diagonal(x, 1, 0, 2) * 2, X),
    ("diagonal_empty", lambda x: torch.diagonal(x, 10, 1, 2), X),
    ("unfold", lambda x: x.unfold(2, 3, 2), X),
    ("unfold_dim0", lambda x: x.unfold(0, 2, 1) + 1, X),
    ("unfold_noncontiguous", lambda x: x.transpose(1, 2).unfold(1, 4, 3), X),
    ("pad_circular_1d", lambda x: torch.nn.functional.pad(x, (2, 1), mode="circular"), X),
    ("pad_circular_2d", lambda x: torch.nn.functional.pad(x, (3, 0, 1, 2), mode="circular"), X),
    ("copy_into_empty", lambda x: torch.empty(7, 3).copy_(x[0, :, :3]) * 2 + torch.empty_like(x[0, :, :3]).fill_(1), X),
    ("copy_broadcast_cast", lambda x: x.new_empty(4, 7, 9, dtype=torch.float64).copy_(x[1:2, :, :]), X),
    ("cosine_embedding_loss", lambda x: torch.nn.functional.cosine_embedding_loss(
        x[0], x[1], torch.tensor([1.0, -1, 1, -1, 1, 1, -1])), X),
]


@pytest.mark.parametrize("fn,x", [pytest.param(f, x, id=i) for i, f, x in CASES])
def test_matches_eager(fn, x):
    assert_strict_compile_matches_eager(fn, x)


def test_cumsum_bf16_rounds_once():
    x = X.nan_to_num().bfloat16()
    torch._dynamo.reset()
    out = torch.compile(lambda x: torch.cumsum(x, 1), backend="lamina", options={"strict": True})(x)
    exact = torch.cumsum(x.double(), 1)
    torch.testing.assert_close(out.double(), exact, rtol=2 ** -8, atol=1e-2)


def test_backward_through_repeat_and_cumsum():
    x = X.nan_to_num().double().requires_grad_()
    xr = x.detach().clone().requires_grad_()
    fn = lambda x: (torch.cumsum(x.repeat(1, 2, 1), 1) ** 2).sum()   # noqa: E731
    torch._dynamo.reset()
    torch.compile(fn, backend="lamina", options={"strict": True})(x).backward()
    fn(xr).backward()
    torch.testing.assert_close(x.grad, xr.grad)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, float("inf")])
def test_cdist(p):
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(2, 5, 4, generator=g), torch.randn(2, 7, 4, generator=g)
    fn = lambda a, b: torch.cdist(a, b, p=p)   # noqa: E731
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(fn, backend="lamina", options={"strict": True})(a, b), fn(a, b))


def test_cdist_batch_dims_broadcast():
    """x1 and x2 of different ranks: their batch dims broadcast."""
    g = torch.Generator().manual_seed(4)
    a, b = torch.randn(1, 3, 2, generator=g), torch.randn(2, 1, 4, 2, generator=g)
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(torch.cdist, backend="lamina", options={"strict": True})(a, b), torch.cdist(a, b))
