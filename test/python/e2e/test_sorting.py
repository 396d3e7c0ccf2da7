"""Sorting and searching (sort, argsort, msort, topk, kthvalue, median, nanmedian, quantile,
searchsorted, bucketize), strict, against eager: NaN and inf, ties (compared against
eager's stable order, which lamina's network always gives), ints, bools, 0-d, size 1,
non-power-of-two and non-contiguous dims, keepdim, negative dims, and the backward of sort
and topk. Runs on the cuda target too (dev.sh: Triton's interpreter)."""
from __future__ import annotations

import pytest
import torch

lamina_backend = pytest.importorskip("lamina.backend")
from lamina.testing.eager_match import assert_strict_compile_matches_eager  # noqa: E402


def _inputs():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 7, 37, generator=g)
    x[1, 2, 3] = float("nan")
    x[1, 2, 30] = float("nan")
    x[2, 3, 5] = float("inf")
    x[2, 3, 6] = -float("inf")
    x[0, :, 4] = 0.5        # ties along dim 1
    x[3, 1, :20] = -0.0     # ties (and -0.0 == 0.0) along dim 2
    x[3, 1, 20:] = 0.0
    xi = torch.randint(-3, 4, (5, 6, 33), generator=g)
    return x, xi


X, XI = _inputs()
BOUNDARIES = torch.tensor([-1.0, -0.25, 0.0, 0.5, 0.5, 2.0])
CASES = [
    ("sort_last", lambda x: torch.sort(x, stable=True), X),
    ("sort_desc_dim1", lambda x: torch.sort(x, dim=1, descending=True, stable=True), X),
    ("sort_dim0_noncontiguous", lambda x: torch.sort(x.transpose(0, 2), dim=0, stable=True), X),
    ("sort_int_ties", lambda x: torch.sort(x, dim=-1, stable=True), XI),
    ("sort_int_desc_ties", lambda x: torch.sort(x, dim=1, descending=True, stable=True), XI),
    ("sort_bool", lambda x: torch.sort(x > 0, stable=True), XI),
    ("sort_size1", lambda x: torch.sort(x[:, :1], 1), X),
    ("sort_0d", lambda x: torch.sort(x[0, 0, 0]), X),
    ("argsort", lambda x: torch.argsort(x, dim=2, stable=True), X),
    ("argsort_desc", lambda x: torch.argsort(x, dim=0, descending=True, stable=True), XI),
    ("msort", lambda x: torch.msort(x[0]), X),
    ("topk_int", lambda x: torch.topk(x[:, :, :7] * 10 + torch.arange(7), 3, 2), XI),
    ("median", lambda x: torch.median(x[0]), X),
    ("median_nan", lambda x: torch.median(x), X),
    ("median_dim_nan", lambda x: torch.median(x, 2), X),
    ("median_dim_keepdim", lambda x: torch.median(x, 1, keepdim=True), X),
    ("median_int", lambda x: torch.median(x, 2), XI),
    ("nanmedian", lambda x: torch.nanmedian(x), X),
    ("nanmedian_dim", lambda x: torch.nanmedian(x, 2), X),
    ("quantile", lambda x: torch.quantile(x[0], torch.tensor([0.0, 0.3, 1.0]), dim=1), X),
    ("nanquantile", lambda x: torch.nanquantile(x[1], 0.4, dim=1, interpolation="nearest"), X),
    ("bucketize", lambda x: torch.bucketize(x, BOUNDARIES), X),
    ("bucketize_right_int32", lambda x: torch.bucketize(x, BOUNDARIES, right=True, out_int32=True), X),
    ("bucketize_int_boundaries", lambda x: torch.bucketize(x, torch.tensor([-2, 0, 0, 3])), XI),
    ("searchsorted_rows", lambda x: torch.searchsorted(torch.sort(x[0], stable=True).values, x[1]), X),
    ("searchsorted_right", lambda x: torch.searchsorted(BOUNDARIES, x, side="right"), X),
    ("searchsorted_scalar", lambda x: torch.searchsorted(torch.sort(x[0, 0]).values, 0.25), X),
]


@pytest.mark.parametrize("fn,x", [pytest.param(f, x, id=i) for i, f, x in CASES])
def test_matches_eager(fn, x):
    assert_strict_compile_matches_eager(fn, x)


def _mostly_nan(x):
    return torch.where(x > -2, float("nan"), x)


# ops whose indices are unspecified among equal values (eager's own choice differs with the
# algorithm and the size): the values must match, and the indices must read them
TIED = [
    ("topk", lambda x: torch.topk(x, 5), X, 2),
    ("topk_smallest_dim0", lambda x: torch.topk(x, 2, 0, largest=False), X, 0),
    ("topk_int", lambda x: torch.topk(x, 4, 2), XI, 2),
    ("kthvalue", lambda x: torch.kthvalue(x, 4, 2, keepdim=True), X, 2),
    ("kthvalue_neg_dim", lambda x: torch.kthvalue(x, 2, -2, keepdim=True), X, 1),
    ("kthvalue_int", lambda x: torch.kthvalue(x, 9, 2, keepdim=True), XI, 2),
    ("nanmedian_all_nan_rows", lambda x: torch.nanmedian(_mostly_nan(x), 1, keepdim=True), X, 1),
]


@pytest.mark.parametrize("fn,x,dim", [pytest.param(f, x, d, id=i) for i, f, x, d in TIED])
def test_values_match_and_indices_read_them(fn, x, dim):
    source = _mostly_nan if fn is TIED[-1][1] else (lambda x: x)
    torch._dynamo.reset()
    values, indices = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    ref = fn(x)
    torch.testing.assert_close(values, ref.values, equal_nan=True)
    assert indices.dtype == torch.int64 and indices.shape == ref.indices.shape
    torch.testing.assert_close(torch.gather(source(x), dim, indices), values, equal_nan=True)
    assert lamina_backend.last_report()["fallback_ops"] == []


def test_unstable_sort_is_a_valid_order():
    """stable=False leaves ties to the implementation: the values match and the indices
    are a permutation that reads them."""
    torch._dynamo.reset()
    values, indices = torch.compile(lambda x: torch.sort(x, 2), backend="lamina", options={"strict": True})(XI)
    torch.testing.assert_close(values, torch.sort(XI, 2).values)
    torch.testing.assert_close(torch.gather(XI, 2, indices), values)
    assert (torch.sort(indices, 2).values == torch.arange(XI.shape[2])).all()


def test_sort_and_topk_backward():
    x = torch.randn(3, 6, 11, generator=torch.Generator().manual_seed(2), dtype=torch.double).requires_grad_()
    xr = x.detach().clone().requires_grad_()
    fn = lambda x: (torch.sort(x, 2).values[..., :5] * torch.arange(5.0)).sum() + torch.topk(x, 3, 1).values.sum()   # noqa: E731
    torch._dynamo.reset()
    torch.compile(fn, backend="lamina", options={"strict": True})(x).backward()
    fn(xr).backward()
    torch.testing.assert_close(x.grad, xr.grad)


def test_gather_feeding_a_reduction():
    """A gather whose positions vary along the reduced dim, in one kernel with the reduction
    (the cuda target once broadcast such a load as if it were per row)."""
    g = torch.Generator().manual_seed(1)
    x, idx = torch.randn(6, 9, generator=g), torch.randint(0, 9, (6, 9), generator=g)
    fn = lambda x, i: torch.gather(x, 1, i).sum(1)   # noqa: E731
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(fn, backend="lamina", options={"strict": True})(x, idx), fn(x, idx))
