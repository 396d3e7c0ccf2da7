"""Convolutions: aten.convolution (1-3 spatial dims, stride, padding, dilation, groups,
transposed, output_padding, bias) and aten.convolution_backward, as lamina.convolution
(a zero-padded cross-correlation, see dialects/lamina.irdl.mlir) and layout ops:

    convolution(x, w, b)          conv(x, w) + b[:, None, ...]
    transposed: conv_transpose    conv(zero_stuff(x, stride), flip(w) with in/out swapped per group,
                                       stride 1, padding dilation*(K-1) - padding (+ output_padding
                                       at the end; a negative amount crops))
    backward   grad_input         conv_transpose(grad_out, w) sized like the input (conv(grad_out, w)
                                  for a transposed convolution)
               grad_weight        a convolution with batch and channels swapped: the input, channels
                                  first, correlated with grad_out as the kernel (stride and dilation
                                  exchange roles), cropped to the kernel size
               grad_bias          grad_out summed over every dim but channels

Channels and kernel sizes must be static; the batch may be symbolic, and so may the spatial
sizes of a forward, non-transposed convolution. Where the decomposition needs a size that is
symbolic (a transposed convolution's or a backward's spatial sizes, symbolic channels), the
convolution is a library call of the ATen routine instead (importer/library_calls.py; the
host's oneDNN or cuDNN, which every static convolution runs on too): `dynamic=True` training
of a convolutional network compiles, where it fell back.
"""
from __future__ import annotations

import torch

from ..dialect import ops
from ..dialect import symbols as S
from ..dialect import types as T
from .aten_ops import cast, constant, elem, meta_type, register, reshape, shape, slice_
from .library_calls import library_call, supported as library_supported


def _spatial(values, r: int) -> list[int]:
    values = [int(v) for v in values]
    return values * r if len(values) == 1 else values


# the host's convolutions take 16-bit floats too (oneDNN, cuDNN), unlike the LAPACK routines
_LIBRARY_FLOATS = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


def _convertible(node) -> str | None:
    """Decomposed where the sizes it needs are static, else a library call."""
    why = _static_spatial(node)
    if why is None or why.startswith("a convolution with no input channels"):
        return why
    refused = library_supported(node, _LIBRARY_FLOATS)
    return None if refused is None else f"{why}; as a library call: {refused}"


def _static_spatial(node) -> str | None:
    """Channels and kernel sizes must be static; spatial sizes may be symbolic only in a
    forward, non-transposed convolution (the others slice and stuff along them)."""
    forward = node.target is torch.ops.aten.convolution.default and not node.args[6]
    w = node.args[1].meta.get("val") if isinstance(node.args[1], torch.fx.Node) else None
    if isinstance(w, torch.Tensor) and 0 in w.shape[1:]:
        return "a convolution with no input channels or a 0 kernel size (eager gives it a shape of its own)"
    weight_arg = 2 if node.target is torch.ops.aten.convolution_backward.default else 1
    for i, arg in enumerate(node.args[:3]):
        val = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
        if not isinstance(val, torch.Tensor):
            continue
        # x's channels: the weight's; the weight's every size (lamina.convolution's is static)
        dims = [] if (forward and i == 0) else val.shape if i == weight_arg else val.shape[1:]
        if any(not isinstance(d, int) for d in dims):
            return "a convolution with symbolic channels or kernel sizes, or a symbolic spatial size in a " \
                   "transposed or backward convolution"
    backward = node.target is torch.ops.aten.convolution_backward.default
    x = node.args[1].meta.get("val") if backward else None
    if backward and node.args[10][1] and not isinstance(x.shape[0], int):
        return "a weight gradient over a symbolic batch (the batch is a dim of its kernel)"
    return None


def _pad_dim(x, d: int, lo: int, hi: int):
    """Zeros before (lo) and after (hi) along dim d; a negative amount crops."""
    n = shape(x)[d]
    if lo < 0 or hi < 0:
        x = slice_(x, d, max(-lo, 0), n - max(-hi, 0))
    for amount, first in ((lo, True), (hi, False)):
        if amount > 0:
            s = list(shape(x))
            s[d] = amount
            z = constant(0, elem(x), s)
            x = ops.concat(z, x, dim=d) if first else ops.concat(x, z, dim=d)
    return x


def _zero_stuff(x, d: int, s: int):
    """s - 1 zeros between neighbours along dim d: size n -> (n - 1) * s + 1."""
    n = shape(x)[d]
    if s == 1 or n == 0:
        return x
    sh = list(shape(x))
    x = reshape(x, T.tensor_type(sh[:d + 1] + [1] + sh[d + 1:], elem(x)))
    x = _pad_dim(x, d + 1, 0, s - 1)
    x = reshape(x, T.tensor_type(sh[:d] + [n * s] + sh[d + 1:], elem(x)))
    return slice_(x, d, 0, (n - 1) * s + 1)


def _flip(x, dims):
    i64 = T.element_type("i64")
    for d in dims:
        n = shape(x)[d]
        if n > 1:
            iota = ops.iota(result_type=T.tensor_type([n], i64))
            x = ops.index_select(x, ops.sub(constant(n - 1, i64), iota), dim=d)
    return x


def _permute(x, perm):
    if list(perm) == list(range(len(perm))):
        return x
    return ops.transpose(x, perm=list(perm))


def conv(x, w, stride, padding, dilation, groups: int):
    """lamina.convolution; `padding` is (lo..., hi...) and may be negative (crops x first)."""
    r = len(stride)
    lo, hi = list(padding[:r]), list(padding[r:])
    for i in range(r):
        if lo[i] < 0 or hi[i] < 0:
            x = _pad_dim(x, 2 + i, min(lo[i], 0), min(hi[i], 0))
            lo[i], hi[i] = max(lo[i], 0), max(hi[i], 0)
    return ops.convolution(x, w, stride=list(stride), padding=lo + hi, dilation=list(dilation), groups=groups)


def conv_transpose(x, w, stride, padding, dilation, output_padding, groups: int):
    """The transposed convolution of x [N, Cin, *S] with w [Cin, Cout / groups, *K]."""
    r = len(stride)
    ks = shape(w)[2:]
    cin, cout_g = shape(w)[0], shape(w)[1]
    for i in range(r):
        x = _zero_stuff(x, 2 + i, stride[i])
    # [G, Cin_g, Cout_g, *K] -> [G, Cout_g, Cin_g, *K], kernel flipped
    wg = reshape(w, T.tensor_type([groups, cin // groups, cout_g] + ks, elem(w)))
    wg = _permute(wg, [0, 2, 1] + list(range(3, 3 + r)))
    wg = _flip(wg, list(range(3, 3 + r)))
    wt = reshape(wg, T.tensor_type([groups * cout_g, cin // groups] + ks, elem(w)))
    span = [dilation[i] * (ks[i] - 1) for i in range(r)]
    pad = [span[i] - padding[i] for i in range(r)] + [span[i] - padding[i] + output_padding[i] for i in range(r)]
    return conv(x, wt, [1] * r, pad, dilation, groups)


def conv_grad_weight(x, grad_out, ks, stride, padding, dilation, groups: int):
    """d(conv(x, w))/dw contracted with grad_out: [F, C / groups, *K]."""
    r = len(stride)
    n, c = shape(x)[0], shape(x)[1]
    f = shape(grad_out)[1]
    cg, fg = c // groups, f // groups
    et = elem(x)
    spatial = list(range(3, 3 + r))
    # input channels-first: [N, G, Cg, *S] -> [Cg, G, N, *S] -> [Cg, G * N, *S]
    xg = reshape(x, T.tensor_type([n, groups, cg] + shape(x)[2:], et))
    xg = _permute(xg, [2, 1, 0] + spatial)
    xg = reshape(xg, T.tensor_type([cg, S.combine("*", groups, n)] + shape(x)[2:], et))
    # grad_out as the kernel: [N, G, Fg, *O] -> [G, Fg, N, *O] -> [F, N, *O]
    go = reshape(grad_out, T.tensor_type([n, groups, fg] + shape(grad_out)[2:], et))
    go = _permute(go, [1, 2, 0] + spatial)
    go = reshape(go, T.tensor_type([f, n] + shape(grad_out)[2:], et))
    gw = conv(xg, go, dilation, list(padding) * 2, stride, groups)   # [Cg, F, *K'] with K' >= K
    for i in range(r):
        gw = slice_(gw, 2 + i, 0, ks[i])
    return _permute(gw, [1, 0] + list(range(2, 2 + r)))


def _add_bias(y, bias):
    r = len(shape(y)) - 2
    b = reshape(cast(bias, elem(y)), T.tensor_type([1, shape(bias)[0]] + [1] * r, elem(y)))
    return ops.add(y, b)


@register("aten.convolution.default", check=_convertible)
def _convolution(imp, node, a):
    if _static_spatial(node) is not None:
        return library_call(imp, node)
    x, w = a.input, a.weight
    r = len(shape(x)) - 2
    stride, dilation = _spatial(a.stride, r), _spatial(a.dilation, r)
    padding = _spatial(a.padding, r)
    want = meta_type(node)
    if a.transposed and r >= 2 and any(s > 1 for s in stride) and shape(w)[0] >= 8 \
            and library_supported(node, _LIBRARY_FLOATS) is None:
        # a strided transposed convolution as the library's own (cuDNN's, oneDNN's): the
        # decomposition correlates a zero-stuffed input, stride**r times the work. KernelBench-
        # style programs, eager = 1 (H200 fp32; 2-core CPU): a grouped stride-2 ConvTranspose3d
        # 0.23x -> 0.84x (CPU 0.26x -> 0.87x), ConvTranspose3d + LayerNorm 0.81x -> 3.6x
        # (CPU 0.65x -> 1.16x). Not with few input channels, where the zero-stuffed
        # correlation is cheap and the library's transposed kernels are slower (3 -> 16
        # channels, stride 2: 1.59x -> 1.34x, CPU 2.7x -> 1.2x), nor in 1-d (CPU 1.1x -> 0.7x).
        # The bias is an add after the call, which joins the call's kernel as its epilogue
        # (transforms/fusion.py): cuDNN adds it in a pass of its own over the channels-last
        # result, slower than the convolution (0.39 ms against 0.26, H200, [16, 128, 256, 256])
        y = library_call(imp, node, overrides={"bias": None})
        return cast(y if a.bias is None else _add_bias(y, a.bias), want.element_type)
    if a.transposed:
        y = conv_transpose(x, w, stride, padding, dilation, _spatial(a.output_padding, r), a.groups)
    else:
        y = conv(x, w, stride, padding * 2, dilation, a.groups)
    if a.bias is not None:
        y = _add_bias(y, a.bias)
    return cast(y, want.element_type)


@register("aten.convolution_backward.default", check=_convertible)
def _convolution_backward(imp, node, a):
    go, x, w = a.grad_output, a.input, a.weight
    mask = list(a.output_mask)
    if _static_spatial(node) is not None:   # one call per gradient, each computing only its own
        return tuple(library_call(imp, node, i, {"output_mask": [j == i for j in range(3)]}) if need else None
                     for i, need in enumerate(mask))
    r = len(shape(x)) - 2
    stride, dilation, padding = _spatial(a.stride, r), _spatial(a.dilation, r), _spatial(a.padding, r)
    ks = shape(w)[2:]
    grad_input = grad_weight = grad_bias = None
    if mask[0]:
        if a.transposed:
            grad_input = conv(go, w, stride, padding * 2, dilation, a.groups)
        else:
            # the input rows the forward never reached get no gradient: output_padding covers them
            covered = [(shape(go)[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (ks[i] - 1) + 1
                       for i in range(r)]
            extra = [shape(x)[2 + i] - covered[i] for i in range(r)]
            grad_input = conv_transpose(go, w, stride, padding, dilation, extra, a.groups)
        grad_input = cast(grad_input, meta_type(node, 0).element_type)
    if mask[1]:
        if a.transposed:   # y = conv_transpose(x, w): x = conv(y, w), so swap the roles
            grad_weight = conv_grad_weight(go, x, ks, stride, padding, dilation, a.groups)
        else:
            grad_weight = conv_grad_weight(x, go, ks, stride, padding, dilation, a.groups)
        grad_weight = cast(grad_weight, meta_type(node, 1).element_type)
    if mask[2]:
        dims = [0] + list(range(2, 2 + r))
        acc = T.widened(elem(go))
        grad_bias = cast(ops.reduce_sum(cast(go, acc), dims=dims, keepdim=False), meta_type(node, 2).element_type)
    return (grad_input, grad_weight, grad_bias)
