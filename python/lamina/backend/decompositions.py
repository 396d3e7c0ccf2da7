"""The decomposition table lamina's graphs are exported with: torch's core-ATen table, with
fixes where its reference differs from eager.

    linspace (integer dtype): eager converts start and end to the result's dtype first
        (4.3 -> 4) and steps in double; torch's reference keeps them as given and steps in
        the default float dtype, so its values differ (OpInfo's linspace.tensor_overload)
    addbmm, angle, mode, histc, histogram (bins as a count), nonzero_static, pdist, segment_reduce,
        replication_pad{1,2,3}d_backward,
    affine_grid_generator: torch's reference takes linspace(-a, a) for ATen's linspace(-1, 1) * a,
        grid_sampler_3d (grid_sampling.py), _embedding_bag_backward (dense): not in torch's
        table (ATen kernels); composed of ops lamina compiles
    grid_sampler_2d (bilinear, nearest): torch's reference computes the source coordinates
        another way than ATen's kernels; a sample on a cell boundary then lands in another
        cell and the grid's gradient differs (grid_sampling.py)
"""
from __future__ import annotations

import math

import torch

from ..dialect.types import bf16_bits
from .antialias_resize import (upsample_bicubic2d_aa, upsample_bicubic2d_aa_backward, upsample_bilinear2d_aa,
                               upsample_bilinear2d_aa_backward)
from .grid_sampling import grid_sampler_2d, grid_sampler_3d
from . import random_decompositions
from .rnn_cells import rnn_cell_decompositions
from .window_functions import window_decompositions

aten = torch.ops.aten


def _rounded(value, dtype) -> float:
    """A Python number rounded to f16/bf16 as c10 converts it (to float, then to nearest
    even), without making a tensor (this runs while AOTAutograd traces)."""
    import numpy as np

    if dtype == torch.float64:
        return float(value)
    with np.errstate(over="ignore"):
        f = np.float32(value)
        if dtype == torch.float16:
            return float(np.float16(f))
    if dtype == torch.float32 or not np.isfinite(f):
        return float(f)
    return float(np.uint32(int(bf16_bits(f)) << 16).view(np.float32))


def _linspace(start, end, steps, *, dtype=None, layout=torch.strided, device=None, pin_memory=False):
    from torch._refs import linspace

    if dtype is not None and not dtype.is_floating_point and not dtype.is_complex:
        # ATen: start and end in the integer dtype, the steps in double, truncated
        start = start.to(dtype) if isinstance(start, torch.Tensor) else int(start)
        end = end.to(dtype) if isinstance(end, torch.Tensor) else int(end)
        return linspace(start, end, steps, dtype=torch.float64, layout=layout, device=device,
                        pin_memory=pin_memory).to(dtype)
    if dtype in (torch.float16, torch.bfloat16):
        # ATen: start and end in dtype, the steps in f32 (the op math type), rounded once
        start, end = (v.to(dtype).float() if isinstance(v, torch.Tensor) else _rounded(v, dtype)
                      for v in (start, end))
        return linspace(start, end, steps, dtype=torch.float32, layout=layout, device=device,
                        pin_memory=pin_memory).to(dtype)
    if (dtype or torch.get_default_dtype()) == torch.float32 and steps > 1 \
            and not isinstance(start, torch.Tensor) and not isinstance(end, torch.Tensor):
        return _linspace_f32(start, end, steps, device)
    return linspace(start, end, steps, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory)


def _linspace_f32(start, end, steps: int, device):
    """ATen's f32 kernel (CPU and CUDA alike): step = (end - start) / (steps - 1) in f32, then
    start + step * i below halfway, end - step * (steps - 1 - i) above it, each one fused
    multiply-add (the compilers contract it), so rounded once: computed in f64 (exact for
    any size a tensor has) and rounded. torch's reference rounds the product too, 1 ulp off
    at some points: a base grid that misses an integer moves a grid_sample into the next cell."""
    s, e = _rounded(start, torch.float32), _rounded(end, torch.float32)
    step = _rounded(_rounded(e - s, torch.float32) / (steps - 1), torch.float32)
    return _halfway_steps(s, e, step, steps, device).to(torch.float32)


def _halfway_steps(start: float, end: float, step: float, steps: int, device):
    """ATen's linspace/logspace points in f64: start + step * i below halfway, end - step *
    (steps - 1 - i) from it (so both ends are exact)."""
    i = torch.arange(steps, dtype=torch.float64, device=device)
    return torch.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))


def _logspace(start, end, steps, base=10.0, *, dtype=None, layout=torch.strided, device=None, pin_memory=False):
    """ATen's CPU kernel: start and end in dtype, their difference rounded to dtype, the
    exponents and the power in double, rounded once (torch's reference computes in dtype)."""
    from torch._refs import logspace

    want = dtype or torch.get_default_dtype()
    if want not in (torch.float16, torch.bfloat16, torch.float32, torch.float64) \
            or isinstance(start, torch.Tensor) or isinstance(end, torch.Tensor):
        return logspace(start, end, steps, base, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory)
    s, e = _rounded(start, want), _rounded(end, want)
    if steps <= 1:
        return torch.full((steps,), float(base) ** float(start), dtype=torch.float64, device=device).to(want)   # (unrounded)
    step = _rounded(e - s, want) / (steps - 1)
    return torch.pow(float(base), _halfway_steps(s, e, step, steps, device)).to(want)


def _addbmm(self, batch1, batch2, *, beta=1, alpha=1):
    """beta self + alpha sum_b batch1[b] @ batch2[b], as one matmul over (b, k); beta = 0
    ignores self (its NaNs too), as ATen."""
    b, n, k = batch1.shape
    p = batch2.shape[2]
    if not batch1.is_floating_point():   # integer matrices take the scalars truncated
        alpha, beta = int(alpha), int(beta)
    product = torch.mm(batch1.transpose(0, 1).reshape(n, b * k), batch2.reshape(b * k, p))
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return (self if beta == 1 else self * beta) + product


def _angle(x):
    """The argument of x: atan2(imag, real); for real x pi below 0, else 0, NaN kept; integer
    and bool x give the default float dtype."""
    if x.is_complex():
        return torch.atan2(x.imag, x.real)
    zero = torch.zeros_like(x, dtype=x.dtype if x.is_floating_point() else torch.get_default_dtype())
    out = torch.where(x < 0, zero + math.pi, zero)
    return torch.where(torch.isnan(x), x.to(out.dtype), out) if x.is_floating_point() else out


def _mode(x, dim=-1, keepdim=False):
    """The most frequent value along dim (the smallest among equally frequent ones) and the
    last position holding it, as ATen's CPU kernel: counts of equal pairs (an n x n compare,
    fused into one reduction), then two row reductions."""
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)
    d = dim % x.dim()
    work = x.to(torch.int64) if x.dtype == torch.bool else x
    rows = work.movedim(d, -1)
    counts = (rows.unsqueeze(-1) == rows.unsqueeze(-2)).sum(-1)
    best = counts.amax(-1, keepdim=True)
    top = torch.finfo(rows.dtype).max if rows.is_floating_point() else torch.iinfo(rows.dtype).max
    values = torch.where(counts == best, rows, torch.full_like(rows, top)).amin(-1, keepdim=True)
    positions = torch.arange(rows.shape[-1], device=x.device)
    indices = torch.where(rows == values, positions, -1).amax(-1, keepdim=True)
    values, indices = values.movedim(-1, d), indices.movedim(-1, d)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return values.to(x.dtype), indices


def _histc(x, bins=100, min=0, max=0):
    """Counts of x in `bins` equal bins over [min, max] (the data's range when both are 0;
    widened by 1 each way when it is one point), the top edge in the last bin, values
    outside ignored: a scatter-add of ones."""
    flat = x.reshape(-1)
    if min == max and flat.numel() > 0:
        lo, hi = flat.amin(), flat.amax()
    else:
        lo = torch.full((), float(min), dtype=x.dtype, device=x.device)
        hi = torch.full((), float(max), dtype=x.dtype, device=x.device)
    same = lo == hi
    lo, hi = torch.where(same, lo - 1, lo), torch.where(same, hi + 1, hi)
    inside = (flat >= lo) & (flat <= hi)
    position = ((flat - lo) * bins / (hi - lo)).to(torch.int64).clamp(0, bins - 1)
    position = torch.where(inside, position, 0)
    return torch.zeros(bins, dtype=x.dtype, device=x.device).scatter_add(0, position, inside.to(x.dtype))


def _histogram(x, bins=100, *, range=None, weight=None, density=False):
    """torch.histogram(x, bins: int) as ATen's histogramdd kernel: edges linspace(lo, hi,
    bins + 1) over the given range or the data's (an empty range widened by 0.5 each way, as
    numpy), each value's bin interpolated, then corrected by a search among the edges next
    to it (ATen's LINEAR_INTERPOLATION_WITH_LOCAL_SEARCH: the bins agree with the edges it
    returns), the top edge in the last bin, values outside ignored; weights summed instead of
    ones; density: (hist / hist.sum()) / the bins' widths."""
    flat = x.reshape(-1)
    if range is not None:
        lo = torch.full((), float(range[0]), dtype=x.dtype, device=x.device)
        hi = torch.full((), float(range[1]), dtype=x.dtype, device=x.device)
    elif flat.numel() > 0:
        lo, hi = flat.amin(), flat.amax()
    else:
        lo = hi = torch.zeros((), dtype=x.dtype, device=x.device)
    same = lo == hi
    lo, hi = torch.where(same, lo - 0.5, lo), torch.where(same, hi + 0.5, hi)
    edges = _edges(lo, hi, bins, x.dtype, x.device)
    inside = (flat >= lo) & (flat <= hi)
    position = ((flat - lo) * bins / (hi - lo)).to(torch.int64).clamp(0, bins)
    first = (position - 1).clamp(min=0)
    count = torch.zeros_like(position)
    for k in (-1, 0, 1):   # (upper_bound over edges[first:min(position + 2, bins + 1)])
        index = position + k
        valid = (index >= first) & (index <= bins)
        count = count + (valid & (edges[index.clamp(0, bins)] <= flat)).to(torch.int64)
    position = first + count - 1
    position = torch.where(position == bins, bins - 1, position).clamp(0, bins - 1)
    position = torch.where(inside, position, 0)
    amounts = inside.to(x.dtype) if weight is None else torch.where(inside, weight.reshape(-1).to(x.dtype), 0)
    hist = torch.zeros(bins, dtype=x.dtype, device=x.device).scatter_add(0, position, amounts)
    if density:
        hist = hist / hist.sum() / (edges[1:] - edges[:-1])
    return hist, edges


def _edges(lo, hi, bins: int, dtype, device):
    """linspace(lo, hi, bins + 1) for 0-d tensor ends, as ATen's kernel steps: from lo in the
    first half, back from hi in the second."""
    i = torch.arange(bins + 1, device=device)
    step = (hi - lo) / bins
    half = (bins + 1) // 2
    return torch.where(i < half, lo + step * i.to(dtype), hi - step * (bins - i).to(dtype))


def _nonzero_static(x, *, size, fill_value=-1):
    """The first `size` indices of x's nonzero elements in row-major order ([size, x.dim()]),
    the rows past their count `fill_value`: each nonzero's rank among them (a cumsum) is its
    row; the others (and those past `size`) write a row sliced off at the end."""
    dims = list(x.shape)
    flat = (x != 0).reshape(-1)
    rank = flat.to(torch.int64).cumsum(0) - 1
    row = torch.where(flat & (rank < size), rank, size)
    ids = torch.arange(flat.numel(), device=x.device)
    coords, stride = [], 1
    for d in reversed(dims):
        coords.append((ids // stride) % d)
        stride *= d
    coords = torch.stack(list(reversed(coords)), dim=1) if dims else torch.zeros(flat.numel(), 0, dtype=torch.int64,
                                                                                 device=x.device)
    out = torch.full((size + 1, len(dims)), fill_value, dtype=torch.int64, device=x.device)
    out = out.index_put((row,), coords)
    return out[:size]


def _embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights,
                            scale_grad_by_freq, mode, sparse, per_sample_weights=None, padding_idx=-1):
    """The dense weight gradient of embedding_bag as ATen's CPU kernels compute it from the
    forward's bookkeeping (importer/indexing.py fills it the same way): sum / mean: row
    indices[i] += grad[offset2bag[i]] * scale, scale = per_sample_weights[i] (or 1) / a
    count (by frequency: ATen's, see below) / bag_size (mean), padding rows left out;
    max: row maximum_indices[b, d] += grad[b, d] for the non-empty bags."""
    if sparse:
        return aten._embedding_bag_sparse_backward(grad, indices, offsets, offset2bag, bag_size, num_weights,
                                                   scale_grad_by_freq, mode, per_sample_weights, padding_idx)
    dim = grad.shape[1]
    out = torch.zeros(num_weights, dim, dtype=grad.dtype, device=grad.device)
    if mode == 2:
        filled = (bag_size > 0).reshape(-1, 1)
        rows = torch.where(filled, maximum_indices, 0)
        return out.scatter_add(0, rows, torch.where(filled, grad, 0))
    indices = indices.to(torch.int64)
    if offset2bag.numel() != indices.numel():   # (ATen's forward leaves it empty on some paths)
        positions = torch.arange(indices.numel(), device=grad.device)
        offset2bag = (torch.searchsorted(offsets.to(torch.int64), positions, right=True) - 1).clamp(min=0)
    ones = torch.ones(indices.shape[0], dtype=grad.dtype, device=grad.device)
    scale = ones if per_sample_weights is None else per_sample_weights.to(grad.dtype)
    if scale_grad_by_freq:
        # ATen divides the r-th distinct index's rows by counts[sorted_indices[r]] (the count
        # at the r-th *sorted position*, its loop's run counter indexing the sorted array):
        # right for the first distinct index, another index's count for the others; eager's
        # gradients are that, so these are too
        counts = torch.zeros(num_weights, dtype=grad.dtype, device=grad.device).index_add(0, indices, ones)
        ordered, order = torch.sort(indices, stable=True)
        first = torch.cat([torch.ones(1, dtype=torch.bool, device=grad.device), ordered[1:] != ordered[:-1]])
        run = torch.zeros_like(indices).scatter(0, order, torch.cumsum(first.to(torch.int64), 0) - 1)
        scale = scale / counts[ordered[run]]
    if mode == 1:
        size = bag_size[offset2bag].to(grad.dtype)
        scale = torch.where(size != 0, scale / size, scale)
    if padding_idx >= 0:
        scale = torch.where(indices != padding_idx, scale, 0)
    return out.index_add(0, indices, grad[offset2bag] * scale.reshape(-1, 1))


def _embedding_renorm(weight, indices, max_norm: float, norm_type: float):
    """F.embedding's max_norm (functionalized embedding_renorm_): each row the indices name
    whose norm exceeds max_norm scaled by max_norm / (norm + 1e-7), as ATen's kernel; a row
    named twice is written twice with the same values."""
    flat = indices.reshape(-1)
    rows = weight[flat]
    norms = torch.linalg.vector_norm(rows, norm_type, dim=1, keepdim=True)
    scale = torch.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    return weight.index_put((flat,), rows * scale)


def _pdist(x, p=2.0):
    """The p-norm distances of x's rows i < j, in row-major order of the pairs."""
    n = x.shape[0]
    i, j = torch.triu_indices(n, n, 1, device=x.device)
    return torch.linalg.vector_norm(x[i] - x[j], ord=p, dim=-1)


def _as_strided_scatter(input, src, size, stride, storage_offset=None):
    """input.clone() with src copied into its as_strided(size, stride, storage_offset) view,
    as ATen does: the clone keeps a dense input's layout (else it is contiguous), and the
    view's offsets count in that layout's storage order. One index_put of the flattened
    storage (positions offset + sum(i_k * stride_k)); src broadcast to `size`, cast."""
    order = list(range(input.dim()))
    if not input.is_contiguous() and all(isinstance(s, int) for s in input.stride()) \
            and torch._prims_common.is_non_overlapping_and_dense_or_false(input):
        order = sorted(order, key=lambda d: -input.stride(d))
    stored = input.permute(order)
    positions = torch.full([], 0 if storage_offset is None else storage_offset, dtype=torch.int64, device=input.device)
    for k, (n, st) in enumerate(zip(size, stride)):
        positions = positions + (torch.arange(n, device=input.device) * st).view([-1] + [1] * (len(size) - k - 1))
    values = src.to(input.dtype).expand(list(size))
    flat = stored.reshape(-1).index_put((positions.expand(list(size)).reshape(-1),), values.reshape(-1))
    inverse = [order.index(d) for d in range(input.dim())]
    return flat.view(stored.shape).permute(inverse)


_SEGMENT_NEUTRAL = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": float("-inf"), "min": float("inf")}
_SEGMENT_SCATTER = {"sum": "sum", "mean": "sum", "prod": "prod", "max": "amax", "min": "amin"}


def _segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """segment_reduce (not in torch's tables: an ATen kernel) as a scatter_reduce: element n of
    a row along `axis` goes to the segment whose offsets bracket it (searchsorted), into a
    tensor of the initial value (or the reduction's neutral element), so that an empty
    segment keeps it, as eager's does; elements past the last segment go to a dropped extra
    slot. A mean is the sum over the segment's length (the initial value for an empty one
    when given; 0 / 0 = nan without). lengths / offsets: data.shape[:axis] + (segments,) /
    (segments + 1,). Invalid lengths (negative, or more than the row) are not checked."""
    if indices is not None or reduce not in _SEGMENT_NEUTRAL or (lengths is None) == (offsets is None):
        return NotImplemented
    axis = axis % data.dim()
    if offsets is None:
        ends = torch.cumsum(lengths, -1)
        counts = lengths
    else:
        ends = offsets[..., 1:]
        counts = offsets[..., 1:] - offsets[..., :-1]
    segments = ends.shape[-1]
    n = data.shape[axis]
    lead = data.shape[:axis]
    positions = torch.arange(n, device=data.device, dtype=ends.dtype).expand(*lead, n).contiguous()
    segment = torch.searchsorted(ends.contiguous(), positions, right=True)   # (segments: past the last)
    index = segment.reshape(*lead, n, *([1] * (data.dim() - axis - 1))).expand(data.shape)
    fill = _SEGMENT_NEUTRAL[reduce] if initial is None else initial
    shape = list(data.shape)
    shape[axis] = segments + 1
    out = torch.full(shape, fill, dtype=data.dtype, device=data.device)
    out = out.scatter_reduce(axis, index, data, _SEGMENT_SCATTER[reduce], include_self=True)
    out = out.narrow(axis, 0, segments)
    if reduce == "mean":
        count = counts.reshape(*lead, segments, *([1] * (data.dim() - axis - 1))).to(data.dtype)
        empty = float("nan") if initial is None else initial
        out = torch.where(count == 0, torch.full_like(out, empty), out / count)
    return out


def _affine_grid_generator(theta, size, align_corners):
    """ATen's AffineGridGenerator: each axis linspace(-1, 1, n), times (n - 1) / n as two
    ops (without align_corners), a base grid [N, *spatial, dims + 1] of (x, y[, z], 1)
    times theta^T by bmm. torch's reference takes linspace(-a, a, n), other roundings: an
    identity transform then misses the pixel centers grid_sample's gradient turns on."""
    n, spatial = size[0], list(size[2:])
    rank = len(spatial)

    def axis(steps):
        if steps <= 1:
            return torch.zeros(steps, dtype=theta.dtype, device=theta.device)
        line = torch.linspace(-1, 1, steps, dtype=theta.dtype, device=theta.device)
        return line if align_corners else line * (steps - 1) / steps

    columns = []
    for d in range(rank):   # x varies along the last spatial dim, y the one before, ...
        along = rank - 1 - d
        shape = [1] * rank
        shape[along] = spatial[along]
        columns.append(axis(spatial[along]).view(shape).expand(spatial))
    columns.append(torch.ones(spatial, dtype=theta.dtype, device=theta.device))
    base = torch.stack(columns, -1).expand(n, *spatial, rank + 1)
    grid = torch.bmm(base.reshape(n, -1, rank + 1), theta.transpose(1, 2))
    return grid.view(n, *spatial, rank)


def _replication_pad_backward(grad_output, self, padding):
    """The gradient of a replication pad: along each padded dim, output position o read input
    clamp(o - left, 0, n - 1); index_add puts each gradient there (negative pads crop:
    the same clamp). Not in torch's table (ATen kernels)."""
    grad = grad_output
    for k in range(len(padding) // 2):
        dim = self.dim() - 1 - k
        n = self.shape[dim]
        source = torch.arange(grad.shape[dim], device=grad.device) - padding[2 * k]
        source = source.clamp(0, n - 1)
        shape = list(grad.shape)
        shape[dim] = n
        grad = grad.new_zeros(shape).index_add(dim, source, grad)
    return grad


_OVERRIDES = {
    aten.segment_reduce.default: _segment_reduce,
    aten.as_strided_scatter.default: _as_strided_scatter,
    aten._upsample_bilinear2d_aa.default: upsample_bilinear2d_aa,
    aten._upsample_bicubic2d_aa.default: upsample_bicubic2d_aa,
    aten._upsample_bilinear2d_aa_backward.default: upsample_bilinear2d_aa_backward,
    aten._upsample_bicubic2d_aa_backward.default: upsample_bicubic2d_aa_backward,
    aten.grid_sampler_2d.default: grid_sampler_2d,
    aten.affine_grid_generator.default: _affine_grid_generator,
    aten.replication_pad1d_backward.default: _replication_pad_backward,
    aten.replication_pad2d_backward.default: _replication_pad_backward,
    aten.replication_pad3d_backward.default: _replication_pad_backward,
    aten.grid_sampler_3d.default: grid_sampler_3d,
    aten._embedding_bag_backward.default: _embedding_bag_backward,
    aten.histogram.bin_ct: _histogram,
    aten.nonzero_static.default: _nonzero_static,
    aten._pdist_forward.default: _pdist,
    aten.embedding_renorm.default: _embedding_renorm,
    aten.mode.default: _mode,
    aten.histc.default: _histc,
    aten.addbmm.default: _addbmm,
    aten.angle.default: _angle,
    aten.linspace.default: _linspace,
    aten.logspace.default: _logspace,
    aten.linspace.Tensor_Tensor: _linspace,
    aten.linspace.Tensor_Scalar: _linspace,
    aten.linspace.Scalar_Tensor: _linspace,
}


# Ops outside the core-ATen table whose decomposition in torch's full table is composed of
# ops lamina compiles (as Inductor adds them to its table); OpInfo checks each against eager.
# (Bessel functions, ndtri, erfcx, frexp and as_strided_scatter decompose to prims: not here;
# the importer has the special functions itself: importer/series_functions.py, special_functions.py.)
_EXTRA = ("addmv.default", "dist.default", "permute_copy.default",
          "narrow_copy.default", "unbind_copy.int", "as_strided_copy.default",
          "_batch_norm_with_update_functional.default", "rrelu_with_noise_backward.default",
          "batch_norm_backward.default")


def lamina_decompositions() -> dict:
    """The decomposition table of every compile (do not mutate it). Built once per set of
    registered CompositeImplicitAutograd kernels: torch's core table materializes one entry
    per such op (50-130 ms, on every graph's cold compile before); a custom-op library loaded
    later adds registrations and so rebuilds it."""
    registered = len(torch._C._dispatch_get_registrations_for_dispatch_key("CompositeImplicitAutograd"))
    if _TABLE.get("registered") != registered:
        _TABLE.update(registered=registered, table=_build_table())
    return _TABLE["table"]


_TABLE: dict = {}


def _build_table() -> dict:
    from torch._decomp import core_aten_decompositions, decomposition_table

    table = dict(core_aten_decompositions())
    for name in _EXTRA:
        op, overload = name.split(".")
        target = getattr(getattr(aten, op, None), overload, None)
        if target is not None and target in decomposition_table:
            table[target] = decomposition_table[target]
    table.update(_OVERRIDES)
    table.update(window_decompositions())
    table.update(random_decompositions.random_decompositions())
    table.update(rnn_cell_decompositions())
    table.update(foreach_decompositions())
    return table


# ---- torch._foreach_* (optimizers' multi-tensor steps, grad clipping) -------------------------
#
# A foreach op applies one op to each tensor of its lists: decomposed into those ops, one per
# tensor, which lamina fuses as it fuses any elementwise op (Inductor lowers them natively;
# torch has no decomposition). `Scalar[]` arguments and the `scalars` tensor of the `.Tensor`
# overloads give each tensor its own value; a `Tensor` argument is shared by all.

def _foreach_single(base: str):
    """The per-tensor op of `_foreach_<base>`, called with the foreach op's arguments (kwargs
    by the foreach schema's names)."""
    if base == "norm":
        return lambda t, ord=2, dtype=None: torch.linalg.vector_norm(t, ord, dtype=dtype)
    if base == "copy":
        return lambda t, src, non_blocking=False: aten.copy.default(t, src)
    if base in ("addcmul", "addcdiv"):
        combine = aten.mul.Tensor if base == "addcmul" else aten.div.Tensor

        def add_product(t, t1, t2, value=1, scalars=None):
            scale = value if scalars is None else scalars   # (a 0-d tensor of the .Tensor overload)
            return aten.add.Tensor(t, aten.mul.Tensor(combine(t1, t2), scale))
        return add_product
    packet = getattr(aten, base, None)
    if packet is None:
        return None   # (_foreach_powsum and such: no op of that name; left as they are)
    return lambda *args, **kwargs: packet(*args, **kwargs)


def _foreach_decomposition(overload):
    schema = overload._schema
    base = schema.name.split("::")[1][len("_foreach_"):]
    single = _foreach_single(base)
    if single is None:
        return None
    per_tensor = {a.name for a in schema.arguments if str(a.type).endswith("[]") or str(a.type).startswith("List[")}
    if overload._overloadname == "Tensor" and base in ("addcmul", "addcdiv"):
        per_tensor.add("scalars")
    keyword = {a.name for a in schema.arguments if a.kwarg_only}
    if base in ("addcmul", "addcdiv"):
        keyword |= {"value", "scalars"}
    elif base in ("norm", "copy"):
        keyword |= {a.name for a in schema.arguments[1:]}
    names = [a.name for a in schema.arguments]

    def decompose(*args, **kwargs):
        bound = dict(zip(names, args), **kwargs)
        count = len(next(bound[n] for n in names if n in per_tensor and n in bound and n != "scalars"))
        out = []
        for i in range(count):
            pos, kw = [], {}
            for n in names:
                if n not in bound:
                    continue
                v = bound[n][i] if n in per_tensor else bound[n]
                if n in keyword:
                    kw[n] = v
                else:
                    pos.append(v)
            out.append(single(*pos, **kw))
        return out
    return decompose


def foreach_decompositions() -> dict:
    table = {}
    names = {n.split("::")[1].split(".")[0] for n in torch._C._dispatch_get_all_op_names()
             if n.startswith("aten::_foreach_")}
    for name in sorted(names):
        if name.endswith("_"):
            continue   # (in-place forms are functionalized to these first)
        packet = getattr(aten, name)
        for overload_name in packet.overloads():
            if "out" in overload_name:
                continue
            overload = getattr(packet, overload_name)
            if str(overload._schema.returns[0].type) in ("Tensor[]", "List[Tensor]") and not overload._schema.is_mutable:
                decompose = _foreach_decomposition(overload)
                if decompose is not None:
                    table[overload] = decompose
    return table
