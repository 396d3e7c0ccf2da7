"""F.interpolate(..., antialias=True) in bilinear and bicubic mode (aten._upsample_bilinear2d_aa,
_upsample_bicubic2d_aa; torchvision's Resize), as ATen's separable kernel computes it: for each
output pixel along a dim, the input window [xmin, xmin + xsize) around its center, weighted by
the filter (triangle, or Keys' cubic with a = -0.5) stretched by the downscale factor and
normalized to sum 1. ATen resamples along the width, then the height, skipping a dim whose size
does not change; each pass is here a matmul with the dense [out, in] weight matrix (zero outside
each window), built from aranges in the input's dtype. The backward ops (AOTAutograd's
derivatives of the forward ops) are the transposed passes."""
from __future__ import annotations

import torch


def _triangle(x):
    return torch.clamp(1.0 - torch.abs(x), min=0.0)


def _keys_cubic(x, a=-0.5):
    x = torch.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return torch.where(x < 1.0, near, torch.where(x < 2.0, far, torch.zeros_like(x)))


def _scale(in_size: int, out_size: int, align_corners: bool, scale) -> float:
    """ATen's area_pixel_compute_scale (input pixels per output pixel)."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


def _weights(in_size: int, out_size: int, scale: float, interp_size: int, kernel, dtype, device):
    """[out_size, in_size]: row i holds output i's normalized filter weights over its window."""
    support = interp_size * 0.5 * scale if scale >= 1.0 else interp_size * 0.5
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    center = (torch.arange(out_size, dtype=dtype, device=device) + 0.5) * scale
    # (static_cast<int64_t>: truncation toward zero, then the bounds)
    xmin = torch.clamp(torch.trunc(center - support + 0.5), min=0.0)
    xmax = torch.clamp(torch.trunc(center + support + 0.5), max=float(in_size))
    k = torch.arange(in_size, dtype=dtype, device=device)
    inside = (k[None, :] >= xmin[:, None]) & (k[None, :] < xmax[:, None])
    w = torch.where(inside, kernel((k[None, :] - center[:, None] + 0.5) * invscale), torch.zeros((), dtype=dtype, device=device))
    total = w.sum(1, keepdim=True)
    return torch.where(total != 0, w / torch.where(total != 0, total, torch.ones_like(total)), w)


def _resample_aa(x, output_size, align_corners, scales_h, scales_w, interp_size, kernel):
    out_h, out_w = output_size
    in_h, in_w = x.shape[-2:]
    if out_w != in_w:
        ww = _weights(in_w, out_w, _scale(in_w, out_w, align_corners, scales_w), interp_size, kernel, x.dtype, x.device)
        x = torch.matmul(x, ww.t())
    if out_h != in_h:
        wh = _weights(in_h, out_h, _scale(in_h, out_h, align_corners, scales_h), interp_size, kernel, x.dtype, x.device)
        x = torch.matmul(wh, x)
    return x.clone() if out_w == in_w and out_h == in_h else x


def upsample_bilinear2d_aa(input, output_size, align_corners, scales_h=None, scales_w=None):
    return _resample_aa(input, output_size, align_corners, scales_h, scales_w, 2, _triangle)


def upsample_bicubic2d_aa(input, output_size, align_corners, scales_h=None, scales_w=None):
    return _resample_aa(input, output_size, align_corners, scales_h, scales_w, 4, _keys_cubic)


def _resample_aa_backward(grad, output_size, input_size, align_corners, scales_h, scales_w, interp_size, kernel):
    """The adjoint of _resample_aa: the transposed weight matrices, in the reverse order."""
    out_h, out_w = output_size
    in_h, in_w = input_size[-2:]
    if out_h != in_h:
        wh = _weights(in_h, out_h, _scale(in_h, out_h, align_corners, scales_h), interp_size, kernel, grad.dtype, grad.device)
        grad = torch.matmul(wh.t(), grad)
    if out_w != in_w:
        ww = _weights(in_w, out_w, _scale(in_w, out_w, align_corners, scales_w), interp_size, kernel, grad.dtype, grad.device)
        grad = torch.matmul(grad, ww)
    return grad.clone() if out_w == in_w and out_h == in_h else grad


def upsample_bilinear2d_aa_backward(grad_output, output_size, input_size, align_corners, scales_h=None, scales_w=None):
    return _resample_aa_backward(grad_output, output_size, input_size, align_corners, scales_h, scales_w, 2, _triangle)


def upsample_bicubic2d_aa_backward(grad_output, output_size, input_size, align_corners, scales_h=None, scales_w=None):
    return _resample_aa_backward(grad_output, output_size, input_size, align_corners, scales_h, scales_w, 4, _keys_cubic)
