"""The scatter family, strict, against eager: index_put (accumulate, several index tensors,
non-adjacent, broadcast values, x[i] = v, boolean masks), scatter (src, value, reduce), scatter_add,
scatter_reduce (sum, prod, mean, amax, amin; include_self both ways; integer means, uint8),
duplicate positions, negative dims, int values, and the backward of indexing (index_put with accumulate);
segment_reduce (lengths and offsets, batched along an axis, empty segments, an initial value, nan)
forward and backward."""
from __future__ import annotations

import pytest
import torch

lamina_backend = pytest.importorskip("lamina.backend")

G = torch.Generator().manual_seed(0)
X = torch.randn(5, 6, 4, generator=G)
XI = torch.randint(-9, 9, (5, 6, 4), generator=G)
I = torch.tensor([0, 3, 3, -1])          # a duplicate and a negative index
IU = torch.tensor([4, 0, 2])             # unique (index_put without accumulate)
V = torch.randn(4, 6, 4, generator=G)
M = torch.tensor([True, False, True, False, True])                 # 3 Trues
M2 = torch.tensor([False, True, False, False, True, False])        # 2 Trues
IDX = torch.randint(0, 5, (3, 6, 4), generator=G)     # dim 0 positions, duplicates
SRC = torch.randn(4, 6, 4, generator=G)              # larger than IDX: only its leading block is read
SRCI = torch.randint(-9, 9, (4, 6, 4), generator=G)

XS = X.clone()
XS[1, 2, 3] = float("nan")
SEGMENT_OFFSETS = torch.tensor([[0, 0, 4, 6]] * 3 + [[0, 6, 6, 6], [0, 1, 2, 6]])

CASES = [
    ("index_put_accumulate", lambda x: torch.index_put(x, (I,), V, accumulate=True), X),
    ("index_put", lambda x: torch.index_put(x, (IU,), V[:3]), X),
    ("index_put_two_indices", lambda x: torch.index_put(x, (I, I + 1), V[:, 0], accumulate=True), X),
    ("index_put_three_indices", lambda x: torch.index_put(x, (IU, torch.tensor(0), IU.clamp(max=3)), V[0, 0, :3]), X),
    ("setitem_not_adjacent", lambda x: _setitem(x, (IU, slice(None), IU.clamp(max=3)), V[0, :, :3].T), X),
    ("setitem_scalar", lambda x: _setitem(x, (slice(None), IU), 7.0), X),
    ("setitem_broadcast_values", lambda x: _setitem(x, (IU,), torch.arange(4.0)), X),
    ("index_put_int", lambda x: torch.index_put(x, (I,), XI[:4], accumulate=True), XI),
    # boolean masks (importer/indexing.py _mask_put: the k-th True takes the values' k-th row)
    ("setitem_mask_scalar", lambda x: _setitem(x, (x < 0,), 0.0), X),
    ("setitem_mask_rows", lambda x: _setitem(x, (x[:, 0, 0] > 0,), torch.arange(24.0).view(6, 4)), X),
    ("index_put_mask_k_rows", lambda x: torch.index_put(x, (M,), V[:3]), X),
    ("setitem_mask_after_slice", lambda x: _setitem(x, (slice(None), M2), -x[:, :2, :1]), X),
    ("index_put_mask_accumulate_int", lambda x: torch.index_put(x, (XI[..., 0] > 0,), XI[0, 0], accumulate=True), XI),
    ("scatter_src", lambda x: torch.scatter(x, 0, IDX, SRC), X),
    ("scatter_value_neg_dim", lambda x: torch.scatter(x, -1, IDX.clamp(max=3), 2.5), X),
    ("scatter_reduce_add", lambda x: torch.scatter(x, 0, IDX, SRC, reduce="add"), X),
    ("scatter_reduce_multiply", lambda x: torch.scatter(x, 0, IDX, SRC, reduce="multiply"), X),
    ("scatter_add", lambda x: torch.scatter_add(x, 1, IDX.clamp(max=5), SRC), X),
    ("scatter_add_int", lambda x: torch.scatter_add(x, 0, IDX, SRCI), XI),
] + [
    (f"scatter_reduce_{r}_{'self' if inc else 'noself'}",
     (lambda r, inc: lambda x: torch.scatter_reduce(x, 0, IDX, SRC, r, include_self=inc))(r, inc), X)
    for r in ("sum", "prod", "mean", "amax", "amin") for inc in (True, False)
] + [
    ("diagonal_scatter", lambda x: torch.diagonal_scatter(x[0], torch.arange(4.0)), X),
    ("diagonal_scatter_offset_dims", lambda x: torch.diagonal_scatter(x, torch.ones(6, 3), 1, 0, 2), X),
    ("diagonal_scatter_negative_offset", lambda x: torch.diagonal_scatter(x, torch.ones(4, 4), -1, 0, 1), X),
    ("scatter_reduce_amax_int_noself", lambda x: torch.scatter_reduce(x, 0, IDX, SRCI, "amax", include_self=False), XI),
    ("index_reduce_prod", lambda x: x.index_reduce(1, torch.tensor([0, 2, 2, 5]), x[:, :4] + 1, "prod"), X),
    ("index_reduce_mean_no_self", lambda x: x.index_reduce(0, torch.tensor([4, 0, 4]), x[:3] * 2, "mean",
                                                          include_self=False), X),
    ("index_reduce_amax_int", lambda x: x.index_reduce(2, torch.tensor([3, 3, 1]), x[..., :3] * 3, "amax"), XI),
    ("index_reduce_amin_0d", lambda x: x[0, 0, 0].index_reduce(0, torch.tensor([0]), x[1, 1, 1], "amin"), X),
    ("scatter_reduce_0d", lambda x: x[1, 1, 1].scatter_reduce(0, torch.tensor([0, 0, 0]), x[0, 0, :3], "sum"), X),
    # integer means floor (negative sums too); uint8 sums wrap before the division
    ("scatter_reduce_mean_int", lambda x: torch.scatter_reduce(x, 0, IDX, SRCI, "mean"), XI),
    ("scatter_reduce_mean_int_noself", lambda x: torch.scatter_reduce(x.int(), 0, IDX, SRCI.int(), "mean",
                                                                      include_self=False), XI),
    ("scatter_reduce_mean_uint8", lambda x: torch.scatter_reduce((x * 29).to(torch.uint8), 0, IDX,
                                                                 (SRCI * 31).to(torch.uint8), "mean"), XI),
    ("index_reduce_mean_int", lambda x: x.index_reduce(0, torch.tensor([4, 0, 4]), x[:3] * 2, "mean"), XI),
] + [
    # segments of dim 0 (one empty), and of dim 1 per row of dim 0 (offsets; empty ones first
    # and last); an initial value joins every segment's reduction and is an empty one's value
    (f"segment_reduce_{r}_{how}{'_initial' if init is not None else ''}",
     (lambda x, r=r, how=how, init=init: torch.segment_reduce(
         x, r, initial=init, **({"lengths": torch.tensor([2, 0, 3])} if how == "lengths" else
                                {"offsets": SEGMENT_OFFSETS, "axis": 1}))), XS)
    for r in ("sum", "mean", "max", "min", "prod") for how in ("lengths", "offsets") for init in (None, 0.5)
]


def _setitem(x, key, value):
    y = x.clone()
    y[key] = value
    return y


@pytest.mark.parametrize("fn,x", [pytest.param(f, x, id=i) for i, f, x in CASES])
def test_matches_eager(fn, x):
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    ref = fn(x)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    torch.testing.assert_close(out, ref, equal_nan=True)
    assert lamina_backend.last_report()["fallback_ops"] == []


def test_backward_of_indexing_accumulates_duplicates():
    x = X.double().requires_grad_()
    xr = x.detach().clone().requires_grad_()
    fn = lambda x: (x[I] ** 2).sum() + x[:, IU].sum()   # noqa: E731
    torch._dynamo.reset()
    torch.compile(fn, backend="lamina", options={"strict": True})(x).backward()
    fn(xr).backward()
    torch.testing.assert_close(x.grad, xr.grad)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "prod"])
def test_backward_of_segment_reduce(reduce):
    """segment_reduce's own backward is an ATen kernel: the call is decomposed before
    AOTAutograd (backend/autograd_rewrites.py), and autograd differentiates the scatter."""
    x = X[:, :, 0].double().requires_grad_()
    xr = x.detach().clone().requires_grad_()
    fn = lambda x: torch.segment_reduce(x, reduce, lengths=torch.tensor([3, 0, 2]), initial=0.5).sin().sum()  # noqa: E731
    torch._dynamo.reset()
    torch.compile(fn, backend="lamina", options={"strict": True})(x).backward()
    fn(xr).backward()
    torch.testing.assert_close(x.grad, xr.grad)
