"""Static zero sizes compile (strict: no eager fallback) and match eager in shape and value.

Every dimension of mm / bmm / matmul (3-D x 2-D) / linear (with bias) / sum(dim) /
softmax(dim), and an int mm, is made 0 in turn. A K = 0 contraction is a fill of 0 (plus the
bias); an empty row reduces to the identity (mean/var: nan); a zero-element result needs no
work. Before, the tiling schedule asserted on a K = 0 matmul and aborted the process.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import lamina  # noqa: F401  (registers the backend)

pytestmark = pytest.mark.filterwarnings(r"ignore:var\(\)")  # var of an empty row: nan, warned


def _zeroed(shape, i):
    return tuple(0 if j == i else s for j, s in enumerate(shape))


def _cases():
    fns = {
        "mm": (lambda a, b: torch.mm(a, b), [(3, 5), (5, 4)]),
        "bmm": (lambda a, b: torch.bmm(a, b), [(2, 3, 5), (2, 5, 4)]),
        "matmul_3d_2d": (lambda a, b: torch.matmul(a, b), [(2, 3, 5), (5, 4)]),
        "linear_bias": (lambda x, w, b: F.linear(x, w, b), [(3, 5), (4, 5), (4,)]),
        "sum_dim": (lambda x: x.sum(dim=1), [(3, 5, 4)]),
        "mean_dim": (lambda x: x.mean(dim=-1), [(3, 5)]),
        "var_dim": (lambda x: torch.var(x, dim=-1), [(3, 5)]),
        "softmax_dim": (lambda x: torch.softmax(x, dim=1), [(3, 5, 4)]),
    }
    # Shared sizes must stay consistent: name each size once (M, K, N, ...) and zero one name.
    sizes = {
        "mm": ("MK", "KN"), "bmm": ("BMK", "BKN"), "matmul_3d_2d": ("BMK", "KN"),
        "linear_bias": ("MK", "NK", "N"), "sum_dim": ("ABC",), "mean_dim": ("AB",),
        "var_dim": ("AB",), "softmax_dim": ("ABC",),
    }
    for name, (fn, shapes) in fns.items():
        letters = sorted(set("".join(sizes[name])))
        for z in letters:
            dims = {}
            for shape, names in zip(shapes, sizes[name]):
                for s, n in zip(shape, names):
                    dims[n] = s
            dims[z] = 0
            new = [tuple(dims[n] for n in names) for names in sizes[name]]
            yield pytest.param(fn, new, torch.float32, id=f"{name}-{z}=0")
    for dt in (torch.int8, torch.int32):
        for z, shapes in (("K", [(3, 0), (0, 4)]), ("M", [(0, 5), (5, 4)])):
            yield pytest.param(lambda a, b: torch.mm(a, b), shapes, dt, id=f"mm_{dt}-{z}=0")


@pytest.mark.parametrize("fn,shapes,dtype", list(_cases()))
def test_zero_size(fn, shapes, dtype):
    torch._dynamo.reset()
    g = torch.Generator().manual_seed(0)
    if dtype.is_floating_point:
        args = [torch.randn(s, generator=g, dtype=dtype) for s in shapes]
    else:
        args = [torch.randint(-5, 5, s, generator=g, dtype=dtype) for s in shapes]
    expected = fn(*args)
    got = torch.compile(fn, backend="lamina", options={"strict": True})(*args)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, equal_nan=True)
