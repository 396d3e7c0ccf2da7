"""grid_sampler_3d (F.grid_sample on 5-d inputs), composed of ops lamina compiles: torch's
table decomposes only the 2-d sampler; this is its 3-d sibling, written as ATen's CPU
kernel (aten/src/ATen/native/GridSampler.cpp) computes it.

    coordinates: grid's (x, y, z) in [-1, 1] unnormalized to [0, size - 1] (align_corners)
        or [-0.5, size - 0.5], then padded: zeros (as they are), border (clamped),
        reflection (reflected about the edges, then clamped)
    trilinear (mode 0): the eight corners of the cell around (x, y, z), each weighted by
        the opposite corner's distances, ATen's products in ATen's order (tnw = (x_bse - x)
        * (y_bse - y) * (z_bse - z), ...); a corner outside the input contributes 0
    nearest (mode 1): the corner at round(x), round(y), round(z) (half to even, as
        nearbyint), 0 outside

f16/bf16 compute in f32 (ATen's opmath), results cast back.
"""
from __future__ import annotations

import torch


def _unnormalize(coords, size: int, align_corners: bool):
    # (ATen's grid_sampler_unnormalize, its operations in its order)
    if align_corners:
        return ((coords + 1) / 2) * (size - 1)
    return ((coords + 1) * size - 1) / 2


def _reflect(coords, twice_low: int, twice_high: int):
    # (ATen's reflect_coordinates)
    if twice_low == twice_high:
        return torch.zeros_like(coords)
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    coords = (coords - lo).abs()
    extra = torch.fmod(coords, span)
    flips = (coords / span).floor()
    return torch.where(torch.fmod(flips, 2) == 0, extra + lo, (span - extra) + lo)


def _source_index(coords, size: int, padding_mode: int, align_corners: bool):
    coords = _unnormalize(coords, size, align_corners)
    if padding_mode == 1:   # border
        return coords.clamp(0, size - 1)
    if padding_mode == 2:   # reflection
        reflected = _reflect(coords, 0, 2 * (size - 1)) if align_corners else _reflect(coords, -1, 2 * size - 1)
        return reflected.clamp(0, size - 1)
    return coords


def grid_sampler_3d(a, grid, interpolation_mode: int = 0, padding_mode: int = 0, align_corners: bool = False):
    torch._check(interpolation_mode in (0, 1), lambda: f"grid_sampler_3d: interpolation mode {interpolation_mode}")
    torch._check(padding_mode in (0, 1, 2), lambda: f"grid_sampler_3d: padding mode {padding_mode}")
    want = a.dtype
    if want in (torch.float16, torch.bfloat16):
        a, grid = a.float(), grid.float()
    N, C, iD, iH, iW = a.shape
    _, oD, oH, oW, three = grid.shape
    torch._check(three == 3, lambda: f"grid_sampler_3d: grid's last dim must be 3, got {three}")
    grid = grid.view(N, 1, oD, oH, oW, 3).expand(N, C, oD, oH, oW, 3)
    x = _source_index(grid[..., 0], iW, padding_mode, align_corners)
    y = _source_index(grid[..., 1], iH, padding_mode, align_corners)
    z = _source_index(grid[..., 2], iD, padding_mode, align_corners)
    n_idx = torch.arange(N, device=a.device).view(N, 1, 1, 1, 1)
    c_idx = torch.arange(C, device=a.device).view(1, C, 1, 1, 1)

    def corner(ix, iy, iz, w):
        """The corner's value times its weight where it is inside the input, else 0 (an index
        clamped to 0 there: no read outside, and a NaN it reads is not kept)."""
        inside = (ix >= 0) & (ix < iW) & (iy >= 0) & (iy < iH) & (iz >= 0) & (iz < iD)
        ix, iy, iz = (torch.where(inside, v, 0).to(torch.int64) for v in (ix, iy, iz))
        return torch.where(inside, a[n_idx, c_idx, iz, iy, ix] * w, 0)

    if interpolation_mode == 1:   # nearest
        out = corner(x.round(), y.round(), z.round(), 1.0)
        return out.to(want)
    xw, yn, zt = x.floor(), y.floor(), z.floor()
    xe, ys, zb = xw + 1, yn + 1, zt + 1
    # (t/b: z floor/+1, n/s: y floor/+1, w/e: x floor/+1)
    corners = [   # ATen's order of the sum
        (xw, yn, zt, (xe - x) * (ys - y) * (zb - z)),   # tnw
        (xe, yn, zt, (x - xw) * (ys - y) * (zb - z)),   # tne
        (xw, ys, zt, (xe - x) * (y - yn) * (zb - z)),   # tsw
        (xe, ys, zt, (x - xw) * (y - yn) * (zb - z)),   # tse
        (xw, yn, zb, (xe - x) * (ys - y) * (z - zt)),   # bnw
        (xe, yn, zb, (x - xw) * (ys - y) * (z - zt)),   # bne
        (xw, ys, zb, (xe - x) * (y - yn) * (z - zt)),   # bsw
        (xe, ys, zb, (x - xw) * (y - yn) * (z - zt)),   # bse
    ]
    out = None
    for ix, iy, iz, w in corners:
        term = corner(ix, iy, iz, w)
        out = term if out is None else out + term
    return out.to(want)
