"""Advanced indexing (aten.index.Tensor) and gather, strict, against eager: several index
tensors that broadcast, slices/None between them (adjacent and not), negative and int32
indices, 0-d and empty indices, non-contiguous, int, bool and bf16 values."""
from __future__ import annotations

import pytest
import torch

lamina_backend = pytest.importorskip("lamina.backend")

G = torch.Generator().manual_seed(0)
X = torch.randn(5, 6, 7, generator=G)
XI = torch.randint(-9, 9, (5, 6, 7), generator=G)
I = torch.tensor([0, -1, 2, 4])
J = torch.tensor([[1], [5], [-2]])
G1 = torch.randint(0, 6, (5, 3, 7), generator=G)
G2 = torch.randint(0, 7, (2, 3, 4), generator=G)
G0 = torch.randint(0, 5, (3, 6, 1), generator=G)
GI = torch.randint(0, 7, (5, 6, 2), generator=G)
CASES = [
    ("first_dim", lambda x: x[I], X),
    ("middle_dim", lambda x: x[:, I], X),
    ("last_dim_int32_index", lambda x: x[..., I.int()], X),
    ("two_adjacent_broadcast", lambda x: x[:, J, I], X),
    ("two_adjacent_leading", lambda x: x[J.clamp(max=4), I], X),
    ("not_adjacent_go_first", lambda x: x[I, :, J], X),
    ("three_indices", lambda x: x[I, J, torch.tensor(3)], X),
    ("zero_d_index", lambda x: x[torch.tensor(3)], X),
    ("empty_index", lambda x: x[:, torch.tensor([], dtype=torch.long)], X),
    ("noncontiguous", lambda x: x.transpose(0, 2)[I], X),
    ("int_values", lambda x: x[:, I] * 2, XI),
    ("bool_values", lambda x: (x > 0)[I, :, J], XI),
    ("bf16_values", lambda x: x.bfloat16()[:, J], X),
    ("index_then_math", lambda x: (x[I] + 1).sum(1), X),
    ("gather_dim1", lambda x: torch.gather(x, 1, G1), X),
    ("gather_neg_dim_smaller", lambda x: torch.gather(x, -1, G2), X),
    ("gather_dim0", lambda x: torch.gather(x, 0, G0), X),
    ("gather_1d", lambda x: torch.gather(x.flatten(), 0, torch.tensor([209, 0, 3])), X),
    ("gather_int", lambda x: torch.gather(x, 2, GI), XI),
    ("gather_empty", lambda x: torch.gather(x, 1, torch.zeros(5, 0, 7, dtype=torch.long)), X),
    ("take_along_dim_argsort_free", lambda x: torch.take_along_dim(x, x.argmax(1, keepdim=True), 1), X),
    ("put", lambda x: x.put(torch.tensor([0, -1, 7, 7, 200]), torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])), X),
    ("put_accumulate", lambda x: x.put(torch.tensor([[0, -1], [7, 7]]), torch.tensor([1, 2, 3, 4]), accumulate=True), XI),
    ("masked_scatter", lambda x: x.masked_scatter(x > 0.3, torch.arange(300.0)), X),
    ("masked_scatter_broadcast_mask", lambda x: x.masked_scatter(x[0, 0] > 0, -torch.arange(300)), XI),
    ("logcumsumexp", lambda x: torch.logcumsumexp(x * 30, 1), X),
    ("bilinear", lambda x: torch.nn.functional.bilinear(x[0], x[1, :, :5], x.transpose(1, 2)[:4, :, :5], torch.arange(4.0)), X),
]


@pytest.mark.parametrize("fn,x", [pytest.param(f, x, id=i) for i, f, x in CASES])
def test_matches_eager(fn, x):
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    ref = fn(x)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    torch.testing.assert_close(out, ref, equal_nan=True)
    assert lamina_backend.last_report()["fallback_ops"] == []


def test_index_tensors_are_inputs():
    fn = lambda x, i, j: x[i, :, j] * 2   # noqa: E731
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(X, I, J)
    torch.testing.assert_close(out, fn(X, I, J))


def test_out_of_range_index_reads_inside_the_tensor():
    """An out-of-range index given to the graph raises eager's IndexError (test_index_bounds.py);
    one computed inside the graph is not checked per call: eager raises, lamina clamps it,
    never reading outside x."""
    torch._dynamo.reset()
    with pytest.raises(IndexError, match="out of bounds"):
        torch.compile(lambda x, i: x[i], backend="lamina")(X, torch.tensor([1_000_000_000]))
    fn = lambda x, i: x[i * 1_000_000_000]   # noqa: E731
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina")(X, torch.tensor([1, -1]))
    torch.testing.assert_close(out, X[[4, 0]])


def test_boolean_mask_falls_back_with_a_reason():
    torch._dynamo.reset()
    fn = lambda x: x[x > 0] * 2   # noqa: E731
    out = torch.compile(fn, backend="lamina")(X)
    torch.testing.assert_close(out, fn(X))


_W = torch.randn(10, 3, generator=torch.Generator().manual_seed(5))
_IDX = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
_OFF = torch.tensor([0, 4, 4, 6])   # bags of 4, 0 (empty), 2, 2


@pytest.mark.parametrize("kwargs", [dict(mode="sum"), dict(mode="mean", padding_idx=2), dict(mode="max"),
                                    dict(mode="max", padding_idx=4), dict(mode="sum", include_last_offset=True),
                                    dict(mode="sum", per_sample_weights=torch.arange(8.0))],
                         ids=["sum", "mean_padding", "max", "max_padding", "last_offset", "per_sample_weights"])
def test_embedding_bag(kwargs):
    offsets = torch.tensor([0, 3, 8]) if kwargs.get("include_last_offset") else _OFF
    fn = lambda i, o: torch.nn.functional.embedding_bag(i, _W, o, **kwargs)   # noqa: E731
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(_IDX, offsets)
    torch.testing.assert_close(out, fn(_IDX, offsets))
    assert lamina_backend.last_report()["fallback_ops"] == []


@pytest.mark.parametrize("kwargs", [dict(mode="sum", scale_grad_by_freq=True), dict(mode="mean", padding_idx=4),
                                    dict(mode="max"), dict(mode="sum", include_last_offset=True, padding_idx=2),
                                    dict(mode="mean", scale_grad_by_freq=True, padding_idx=4),
                                    dict(mode="sum", per_sample_weights=True), dict(mode="mean", include_last_offset=True),
                                    dict(mode="max", include_last_offset=True, padding_idx=5)],
                         ids=["sum_freq", "mean_padding", "max", "last_offset_padding", "mean_freq_padding",
                              "per_sample_weights", "mean_last_offset", "max_last_offset_padding"])
def test_embedding_bag_backward(kwargs):
    """The weight gradient (backend/decompositions.py's _embedding_bag_backward from the
    forward's offset2bag / bag_size / max_indices, importer/indexing.py), eager's to the
    bit where it is exact: ties in max (the first row wins), an empty bag, a repeated
    index, and ATen's frequency scaling (each distinct index scaled by the count found at
    its rank in the sorted indices)."""
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 2])
    offsets = torch.tensor([0, 3, 3, 5, 9]) if kwargs.get("include_last_offset") else torch.tensor([0, 3, 3, 5])
    w0 = torch.randn(10, 4, generator=torch.Generator().manual_seed(3))
    w0[2, 1] = w0[9, 1] = 5.0
    psw = torch.rand(9, generator=torch.Generator().manual_seed(4)) if kwargs.pop("per_sample_weights", False) else None

    def fn(w, i, o, p):
        out = torch.nn.functional.embedding_bag(i, w, o, per_sample_weights=p, **kwargs)
        return (out * torch.arange(1.0, 5.0)).sum()
    got, want = w0.clone().requires_grad_(), w0.clone().requires_grad_()
    torch._dynamo.reset()
    torch.compile(fn, backend="lamina", options={"strict": True})(got, idx, offsets, psw).backward()
    fn(want, idx, offsets, psw).backward()
    torch.testing.assert_close(got.grad, want.grad)


def test_embedding_bag_2d_input():
    fn = lambda i: torch.nn.functional.embedding_bag(i, _W, mode="mean")   # noqa: E731
    i = torch.tensor([[1, 2, 4], [5, 4, 3]])
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(fn, backend="lamina", options={"strict": True})(i), fn(i))


def test_embedding_max_norm_renormalizes_the_weight():
    """nn.Embedding(max_norm=...) rescales the rows it reads, in the module's weight, as eager
    (embedding_renorm: backend/decompositions.py); the lookup reads the rescaled rows."""
    torch.manual_seed(0)
    m = torch.nn.Embedding(10, 4, max_norm=1.0, norm_type=3.0)
    with torch.no_grad():
        m.weight.mul_(3)
    ref = torch.nn.Embedding(10, 4, max_norm=1.0, norm_type=3.0)
    ref.load_state_dict(m.state_dict())
    idx = torch.tensor([[1, 2, 2], [9, 0, 1]])
    torch._dynamo.reset()
    out = torch.compile(m, backend="lamina", options={"strict": True})(idx)
    torch.testing.assert_close(out, ref(idx))
    torch.testing.assert_close(m.weight, ref.weight)
    assert lamina_backend.last_report()["fallback_ops"] == []
