"""FFTs (and the eigendecomposition of a general matrix) as library routines on complex
values stored as real pairs (complex_pairs.py): each takes and gives a complex tensor as its
`view_as_real` form, a real tensor with a trailing dim of 2, so that lamina's kernels and
library calls only ever see real buffers.

FFTs are library routines in every compiler (XLA calls DUCC / cuFFT, Inductor falls back to
ATen's): lamina calls ATen's (pocketfft / MKL on the CPU, cuFFT on the GPU) through
`lamina.library_callN` (dialect/library_callees.py lists these), inside its compiled graph.
"""
from __future__ import annotations

import torch
from torch import Tensor


def as_complex(pairs: Tensor) -> Tensor:
    """The complex tensor of pairs: a view where view_as_complex can take their layout (unit
    last stride, even strides and offset), else of a contiguous copy."""
    try:
        return torch.view_as_complex(pairs)
    except RuntimeError:
        return torch.view_as_complex(pairs.contiguous())


# (an empty input gives its empty result without a transform: MKL rejects some empty
# layouts that the kernel's buffers can have)

@torch.library.custom_op("lamina::fft_r2c", mutates_args=())
def fft_r2c(x: Tensor, dim: list[int], normalization: int, onesided: bool) -> Tensor:
    """aten._fft_r2c of a real tensor, as pairs."""
    if x.numel() == 0:
        return _r2c_shape(x, dim, onesided).zero_()
    return torch.view_as_real(torch.ops.aten._fft_r2c(x, dim, normalization, onesided))


@torch.library.custom_op("lamina::fft_c2c", mutates_args=())
def fft_c2c(pairs: Tensor, dim: list[int], normalization: int, forward: bool) -> Tensor:
    """aten._fft_c2c of pairs, as pairs."""
    if pairs.numel() == 0:
        return torch.zeros_like(pairs, memory_format=torch.contiguous_format)
    return torch.view_as_real(torch.ops.aten._fft_c2c(as_complex(pairs), dim, normalization, forward))


@torch.library.custom_op("lamina::fft_c2r", mutates_args=())
def fft_c2r(pairs: Tensor, dim: list[int], normalization: int, last_dim_size: int) -> Tensor:
    """aten._fft_c2r of pairs: a real tensor."""
    if pairs.numel() == 0:
        return _c2r_shape(pairs, dim, last_dim_size).zero_()
    return torch.ops.aten._fft_c2r(as_complex(pairs), dim, normalization, last_dim_size)


def _r2c_shape(x, dim, onesided):
    shape = list(x.shape)
    if onesided:
        shape[dim[-1]] = shape[dim[-1]] // 2 + 1
    return x.new_empty(shape + [2])


def _c2r_shape(pairs, dim, last_dim_size):
    shape = list(pairs.shape[:-1])
    shape[dim[-1]] = last_dim_size
    return pairs.new_empty(shape)


@fft_r2c.register_fake
def _(x, dim, normalization, onesided):
    return _r2c_shape(x, dim, onesided)


@fft_c2c.register_fake
def _(pairs, dim, normalization, forward):
    return pairs.new_empty(pairs.shape)


@fft_c2r.register_fake
def _(pairs, dim, normalization, last_dim_size):
    return _c2r_shape(pairs, dim, last_dim_size)


@torch.library.custom_op("lamina::linalg_eig", mutates_args=())
def linalg_eig(a: Tensor) -> tuple[Tensor, Tensor]:
    """aten.linalg_eig of a real matrix (LAPACK geev / MAGMA): eigenvalues and eigenvectors,
    as pairs."""
    values, vectors = torch.ops.aten.linalg_eig(a)
    return torch.view_as_real(values), torch.view_as_real(vectors)


@linalg_eig.register_fake
def _(a):
    return a.new_empty(list(a.shape[:-1]) + [2]), a.new_empty(list(a.shape) + [2])
