"""grid_sampler_2d / grid_sampler_3d (F.grid_sample), bilinear/trilinear and nearest,
composed of ops lamina compiles, computing what ATen's kernels compute -- to the rounding of
the source coordinates, which decides the cell a sample falls in and so the grid's gradient:

    A sample on a cell boundary (an identity affine_grid puts every sample on one, the usual
    start of a spatial transformer) has a left and a right derivative. ATen takes the cell
    floor(x) of *its* x; x computed another way (torch's decomposition: coords * (size / 2)
    + (size - 1) / 2) can land 1 ulp below the integer, in the cell before, and the grid's
    gradient changes by the difference of two pixels.

Two kernels, two formulas (eager's differ by device):
    "vectorized": CPU 2-d (aten/src/ATen/native/cpu/GridSamplerKernel.cpp):
        x = (g + 1) * (size / 2) - 0.5, or (g + 1) * ((size - 1) / 2) with align_corners;
        reflection |x - low| folded by trunc into [0, 2 span), then min(e, 2 span - e) + low;
        weights from the distances w = x - floor(x), e = 1 - w (nw = s * e, ...)
    "scalar": CPU 3-d, CUDA (GridSampler.h / GridSampler.cuh):
        x = ((g + 1) * size - 1) / 2, or ((g + 1) / 2) * (size - 1);
        reflection by fmod and the parity of floor(|x - low| / span);
        weights as products of distances to the opposite corner (nw = (x_e - x) * (y_s - y))
Both clip border/reflection coordinates to [0, size - 1] with a zero gradient *at* the
borders, take the reflection's gradient sign from `x - low < 0` (not abs's 0 at 0), and sum
the corners in ATen's order; a corner outside the input contributes 0 (its index clamped: no
read outside; the scalar kernels skip it, the vectorized one multiplies a masked 0 by its
weight, so a NaN coordinate gives NaN there). nearest: round half to even, as nearbyint.
f16/bf16 compute in f32 (ATen's opmath), results cast back. Bicubic stays with torch's
decomposition (`None` from `grid_sampler`).
"""
from __future__ import annotations

import functools
import itertools

import torch


def _unnormalize(g, size: int, align_corners: bool, vectorized: bool):
    if vectorized:
        if align_corners:
            return (g + 1) * ((size - 1) / 2)
        return (g + 1) * (size / 2) - 0.5
    if align_corners:
        return ((g + 1) / 2) * (size - 1)
    return ((g + 1) * size - 1) / 2


def _clip(x, size: int, nan_to: float):
    """x clamped to [0, size - 1]; the gradient passes only strictly inside (ATen's
    clip_coordinates_get_grad: borders count as outside). NaN goes where the kernel's
    min(max(...)) sends it: 0 (CPU 2-d, CUDA's fmin/fmax), size - 1 (std::min/max, CPU 3-d)."""
    top = float(size - 1)
    clipped = torch.where(x > 0, torch.where(x < top, x, top), 0.0)
    return clipped if nan_to == 0 else torch.where(x != x, nan_to, clipped)


def _reflect(x, twice_low: int, twice_high: int, vectorized: bool):
    if twice_low == twice_high:
        return x * 0
    low = twice_low / 2
    shifted = x - low
    negative = shifted < 0
    distance = torch.where(negative, -shifted, shifted)   # (abs's gradient at 0 would be 0)
    if vectorized:
        twice_span = float(twice_high - twice_low)
        extra = distance - torch.trunc(distance / twice_span) * twice_span
        reflected = twice_span - extra
        return torch.where(extra > reflected, reflected, extra) + low
    span = (twice_high - twice_low) / 2
    extra = torch.fmod(distance, span)
    flips = torch.floor(distance / span)
    return torch.where(torch.fmod(flips, 2) == 0, extra + low, (span - extra) + low)


def _source_index(g, size: int, padding_mode: int, align_corners: bool, vectorized: bool):
    x = _unnormalize(g, size, align_corners, vectorized)
    nan_to = float(size - 1) if not vectorized and g.device.type == "cpu" else 0.0
    if padding_mode == 1:   # border
        return _clip(x, size, nan_to)
    if padding_mode == 2:   # reflection
        bounds = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        return _clip(_reflect(x, *bounds, vectorized), size, nan_to)
    return x


def grid_sampler(a, grid, interpolation_mode: int = 0, padding_mode: int = 0, align_corners: bool = False):
    """grid_sampler_2d / 3d for bilinear/trilinear (0) and nearest (1); None for bicubic."""
    if interpolation_mode not in (0, 1):
        return None
    torch._check(padding_mode in (0, 1, 2), lambda: f"grid_sampler: padding mode {padding_mode}")
    want = a.dtype
    if want in (torch.float16, torch.bfloat16):
        a, grid = a.float(), grid.float()
    rank = a.dim() - 2
    torch._check(grid.shape[-1] == rank, lambda: f"grid_sampler: grid's last dim must be {rank}, got {grid.shape[-1]}")
    vectorized = rank == 2 and a.device.type == "cpu"
    N, C, *sizes = a.shape
    out_sizes = grid.shape[1:-1]
    grid = grid.view(N, 1, *out_sizes, rank).expand(N, C, *out_sizes, rank)
    # coords[d]: the source coordinate along spatial dim d (grid's last dim lists x first)
    coords = [_source_index(grid[..., rank - 1 - d], sizes[d], padding_mode, align_corners, vectorized)
              for d in range(rank)]
    n_idx = torch.arange(N, device=a.device).view(N, *[1] * (rank + 1))
    c_idx = torch.arange(C, device=a.device).view(1, C, *[1] * rank)

    def corner(index, weight):
        inside = None
        for i, size in zip(index, sizes):
            ok = (i >= 0) & (i < size)
            inside = ok if inside is None else inside & ok
        index = [torch.where(inside, i, 0).to(torch.int64) for i in index]
        value = a[(n_idx, c_idx, *index)]
        if vectorized:   # a masked gather (0 outside) times the weight: a NaN weight stays
            return torch.where(inside, value, 0) * weight
        return torch.where(inside, value * weight, 0)   # the scalar kernels skip the corner

    if interpolation_mode == 1:
        return corner([x.round() for x in coords], 1.0).to(want)
    low = [x.floor() for x in coords]
    fraction = [x - f for x, f in zip(coords, low)]   # distance to the low side
    # ... to the high side: 1 - w (vectorized), x_e - x (scalar)
    rest = [1 - w for w in fraction] if vectorized else [(f + 1) - x for x, f in zip(coords, low)]
    out = None
    # ATen's corner order: x (the last spatial dim) varies fastest, then y, then z; weights
    # multiply x's factor first ((x_e - x) * (y_s - y) * (z_b - z); 2-d: equal either way)
    for high in itertools.product((False, True), repeat=rank):
        index = [low[d] + 1 if is_high else low[d] for d, is_high in enumerate(high)]
        factors = [fraction[d] if is_high else rest[d] for d, is_high in enumerate(high)]
        weight = functools.reduce(lambda acc, w: acc * w, reversed(factors))
        term = corner(index, weight)
        out = term if out is None else out + term
    return out.to(want)


def grid_sampler_2d(a, grid, interpolation_mode: int = 0, padding_mode: int = 0, align_corners: bool = False):
    out = grid_sampler(a, grid, interpolation_mode, padding_mode, align_corners)
    if out is None:   # bicubic
        from torch._decomp import decomposition_table

        out = decomposition_table[torch.ops.aten.grid_sampler_2d.default](
            a, grid, interpolation_mode, padding_mode, align_corners)
    return out


def grid_sampler_3d(a, grid, interpolation_mode: int = 0, padding_mode: int = 0, align_corners: bool = False):
    torch._check(interpolation_mode in (0, 1), lambda: f"grid_sampler_3d: interpolation mode {interpolation_mode}")
    return grid_sampler(a, grid, interpolation_mode, padding_mode, align_corners)
