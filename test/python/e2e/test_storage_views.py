"""Ops that address storage (as_strided) see the storage eager would.

lamina computes views as compact values; `as_strided` instead indexes the storage its input
lives in. The importer rebuilds that storage from the tensor owning it (a graph input or a
computed tensor, in its eager memory order) and gathers from it. Where it cannot (the owner
is not dense, or the access leaves it), as_strided and the views leading to it run eagerly
on real storage, with a fallback warning.
"""
from __future__ import annotations

import warnings

import pytest
import torch

lamina_backend = pytest.importorskip("lamina.backend")
from lamina.backend.errors import LaminaFallbackWarning  # noqa: E402


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


LOWERED = {
    # the two snippets
    "narrow": (lambda x: torch.as_strided(x.narrow(1, 1, 3), (2, 3), (20, 1)) * 2, _randn(4, 20)),
    "channels_last_copy": (lambda x: torch.as_strided(x.contiguous(memory_format=torch.channels_last),
                                                      (2, 3, 2), (1, 3, 7)) + 1, _randn(2, 3, 4, 5)),
    "computed_slice_t_offset": (lambda x: torch.as_strided((x * 2)[1:].t(), (2, 3), (1, 5), 7) + 1, _randn(4, 5)),
    "step_slice_select": (lambda x: torch.as_strided(x[:, ::2].select(0, 1), (3, 2), (2, 1)) - 1, _randn(4, 10)),
    "input_stride0_offset": (lambda x: torch.as_strided(x, (3, 3), (0, 2), 1) * 1, _randn(4, 5)),
    "zero_d": (lambda x: torch.as_strided(x[2:], (), (), 5) + 0.5, _randn(4, 5)),
    "zero_size": (lambda x: torch.as_strided(x, (0, 3), (1, 1)) + 1, _randn(4, 5)),
    "input_with_storage_offset": (lambda x: torch.as_strided(x, (2, 2), (5, 1)) * 2, _randn(30)[7:27].view(4, 5)),
    "bool": (lambda x: torch.as_strided(x > 0, (2, 2), (1, 2)).float(), _randn(4, 5)),
    "overlapping_windows": (lambda x: torch.as_strided(x.flatten() * 3, (5, 4), (3, 1)).sum(-1), _randn(4, 5)),
    "permuted_input": (lambda x: torch.as_strided(x, (3, 2), (1, 4)) + 0, _randn(4, 3).t()),
    # writes through as_strided views (functionalized to as_strided_scatter: decompositions.py);
    # offsets count in the storage order of the written tensor's layout
    "write_through_view": (lambda x: (lambda y: (y.as_strided((2, 2), (1, 3), 1).mul_(2), y)[1])(x * 1), _randn(4, 4)),
    "scatter_into_transposed": (lambda x: torch.as_strided_scatter(x, x[:2, :3] * 3, (2, 3), (1, 4), 2),
                                _randn(4, 5).t()),
    "scatter_into_permuted_3d": (lambda x: torch.as_strided_scatter(x, x[0, :, :3] * 0 + 7, (2, 3), (4, 1), 1) + 1,
                                  _randn(2, 5, 3).permute(2, 0, 1)),
}


@pytest.mark.parametrize("name", sorted(LOWERED))
def test_as_strided_compiled(name):
    torch._dynamo.reset()
    fn, x = LOWERED[name]
    want = fn(x)
    got = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    # Gathers are exact; the one sum differs from eager's in the last bit at most.
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_as_strided_outside_dense_owner_runs_eagerly_on_real_views():
    """x is a strided view of a bigger storage: as_strided reaches past x's elements."""
    torch._dynamo.reset()

    def fn(x):
        return torch.as_strided(x[:, 1:], (2, 2), (10, 1)) * 2 + x.sum()

    x = _randn(5, 10)[:, ::2]
    want = fn(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(fn, backend="lamina")(x)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)   # x.sum(): summation order
    messages = [str(w.message) for w in caught if issubclass(w.category, LaminaFallbackWarning)]
    assert any("aten.as_strided" in m and "aten.slice" in m for m in messages), messages
    torch._dynamo.reset()
    with pytest.raises(Exception, match="as_strided"):
        torch.compile(fn, backend="lamina", options={"strict": True})(x)
