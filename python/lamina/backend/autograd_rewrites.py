"""Training graphs: calls whose ATen backward lamina cannot compile become their forward's
decomposition before AOTAutograd, so autograd differentiates ops lamina compiles
(grid_sample, segment_reduce).

AOTAutograd differentiates the ATen op (grid_sampler_2d's derivative is
grid_sampler_2d_backward, which no decomposition table has) and decomposes only after; so
the rewrite happens on dynamo's graph, where `F.grid_sample` is still one call. The
forward computes what it computed before (the same decompositions: lamina's
grid_sampling.py, torch's for bicubic); the gradients are autograd's of those ops
(scatter-adds into the input, the weights' derivatives for the grid), as ATen's backward
kernels compute them up to the order of summation.
"""
from __future__ import annotations

import inspect

import torch
import torch.nn.functional as F

_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}


def _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    from .grid_sampling import grid_sampler_2d, grid_sampler_3d

    sampler = grid_sampler_3d if input.dim() == 5 else grid_sampler_2d
    out = sampler(input, grid, interpolation_mode, padding_mode, align_corners)
    if interpolation_mode == 1 and grid.requires_grad:
        # nearest reads the grid through integer indices only: autograd would leave the grid
        # out of the graph, where eager's backward gives it a zero gradient. A term that is
        # 0 whatever the grid holds (nan too) links it, with a zero derivative.
        link = torch.where(torch.zeros((), dtype=torch.bool, device=out.device), grid.flatten()[:1].sum(), 0)
        out = out + link.to(out.dtype)
    return out


def _grid_sample(*args, **kwargs):
    bound = inspect.signature(F.grid_sample).bind(*args, **kwargs)
    bound.apply_defaults()
    a = bound.arguments
    if a["mode"] not in _MODES or a["padding_mode"] not in _PADDINGS or a["input"].dim() not in (4, 5):
        return F.grid_sample(*args, **kwargs)   # (its own error)
    return _grid_sampler(a["input"], a["grid"], _MODES[a["mode"]], _PADDINGS[a["padding_mode"]],
                         bool(a["align_corners"]))


def _segment_reduce(data, reduce, **kwargs):
    # (segment_reduce's derivative is _segment_reduce_backward, an ATen kernel)
    from .decompositions import _segment_reduce as decomposed

    out = decomposed(data, reduce, **kwargs)
    return torch.segment_reduce(data, reduce, **kwargs) if out is NotImplemented else out


_REWRITES = {F.grid_sample: _grid_sample, torch.grid_sampler: _grid_sampler,
             torch.grid_sampler_2d: _grid_sampler, torch.grid_sampler_3d: _grid_sampler,
             torch.segment_reduce: _segment_reduce}
if hasattr(torch, "_segment_reduce"):
    _REWRITES[torch._segment_reduce] = _segment_reduce


def decompose_for_autograd(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` with the calls of _REWRITES replaced (in place; gm itself when there are none)."""
    changed = False
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in _REWRITES:
            node.target = _REWRITES[node.target]
            changed = True
    if changed:
        gm.recompile()
    return gm
