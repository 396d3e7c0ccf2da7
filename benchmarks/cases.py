"""The benchmark cases: what each one computes, at which sizes, and how much work that is.

Each case has a "small" and a "large" size; the large one is the size of the issue
(and of the held-out suite's categories), the small one has ~16-64x fewer elements,
where per-call overhead weighs more than bandwidth. All cases are inference (run under
torch.no_grad()), in fp32 unless `run.py --dtype` casts inputs and parameters.

Work model, stated once here and used by every case:
  bytes  = every input, parameter and output read or written once (a lower bound on
           memory traffic: intermediates that a perfect fusion keeps in registers or
           cache are not counted, so GB/s compares implementations on the same work);
  flops  = for matmul-bound cases only: 2*M*N*K per matmul (bias, activations and
           softmax are not counted; attention counts both matmuls in full, masked half
           included, since every backend here computes it).

    inst = CASES["softmax"].build("large", torch.device("cpu"))
    inst.fn(*inst.inputs)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from lamina.testing.models import CausalAttention, GPTBlock, RMSNorm, Softmax, cos_cos_div, sin2_cos2

SIZES = ("small", "large", "gpu", "alt", "odd")
# gpu: the GPU scale (16M-element rows and chains, 4096^3 GEMMs); --sizes gpu.
# alt and odd: other shapes at the GPU scale, so that no launch heuristic is tuned to one shape:
# alt changes the aspect (long or short rows, GPT-2 widths), odd has sizes that are not multiples
# of 8 (rows not 16-byte aligned, masked tails everywhere).


@dataclass
class Instance:
    """One case at one size, on one device: ready to call as `fn(*inputs)`."""
    fn: Callable
    inputs: tuple
    shape: str                  # human-readable size, for the table
    flops: int | None = None    # matmul-bound cases: the FLOP count of one call
    rtol: float = 1e-4          # tolerances of the check against eager
    atol: float = 1e-5

    def params(self) -> list[torch.Tensor]:
        if isinstance(self.fn, nn.Module):
            return [*self.fn.parameters(), *self.fn.buffers()]
        return []

    def nbytes(self, output) -> int:
        """Bytes of the byte model: inputs + params + outputs, each once."""
        outs = output if isinstance(output, (tuple, list)) else [output]
        tensors = [*self.inputs, *self.params(), *outs]
        return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


@dataclass
class Case:
    name: str
    what: str                                   # one line: the computation
    sizes: dict[str, Callable[[], Instance]]    # size -> builder (on the CPU, seeded)

    def build(self, size: str, device: torch.device, dtype: torch.dtype = torch.float32) -> Instance:
        """The instance on `device`; floating inputs and parameters cast to `dtype`
        (built in fp32, so every dtype computes on the same values). Below fp32 the check
        against eager uses torch.testing's default tolerances of that dtype, widened 4x
        (lamina accumulates reductions in fp32, eager may not; neither is exact)."""
        torch.manual_seed(0)
        inst = self.sizes[size]()
        if isinstance(inst.fn, nn.Module):
            inst.fn = inst.fn.to(device=device, dtype=dtype).eval()
        inst.inputs = tuple(t.to(device=device, dtype=dtype) if t.is_floating_point() else t.to(device)
                            for t in inst.inputs)
        if dtype != torch.float32:
            inst.shape += f" {str(dtype).removeprefix('torch.')}"
        if dtype.itemsize < 4:
            default_rtol, default_atol = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5)}[dtype]
            # atol: one rounding of an intermediate of the inputs' magnitude (randn reaches |x| ~ 5.5
            # at 16M elements; a bf16 ulp there is 0.031) that a fused kernel keeps in fp32 and
            # eager rounds, before a cancellation (gelu(x + b) * s + x near 0)
            inst.rtol, inst.atol = max(inst.rtol, 4 * default_rtol), max(inst.atol, 8e-3 if dtype == torch.float16 else 4e-2)
        return inst


# ---- modules defined for the benchmark (the rest come from lamina.testing.models) -----

class GemmBiasRelu(nn.Module):
    """relu(x @ W^T + b): a matmul with a pointwise epilogue."""

    def __init__(self, k: int, n: int):
        super().__init__()
        self.linear = nn.Linear(k, n)

    def forward(self, x):
        return torch.relu(self.linear(x))


class FeedForward(nn.Module):
    """d -> hidden -> d with a ReLU in between (the MLP of a transformer block)."""

    def __init__(self, d: int, hidden: int):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class ConvBnRelu(nn.Module):
    """Conv2d 3x3 (padding 1) -> BatchNorm2d (eval) -> ReLU: a CNN's basic unit."""

    def __init__(self, cin: int, cout: int, stride: int = 1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        with torch.no_grad():   # non-trivial running statistics
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
        self.eval()

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class ResNetBlock(nn.Module):
    """A ResNet basic block: two ConvBnRelu units and the identity shortcut."""

    def __init__(self, c: int):
        super().__init__()
        self.a = ConvBnRelu(c, c)
        self.b = ConvBnRelu(c, c)

    def forward(self, x):
        return torch.relu(self.b.bn(self.b.conv(self.a(x))) + x)


class DepthwiseSeparable(nn.Module):
    """MobileNet's unit: depthwise 3x3 -> BN -> ReLU6 -> pointwise 1x1 -> BN -> ReLU6."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.dw = nn.Conv2d(cin, cin, 3, padding=1, groups=cin, bias=False)
        self.bn1 = nn.BatchNorm2d(cin)
        self.pw = nn.Conv2d(cin, cout, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.eval()

    def forward(self, x):
        return F.relu6(self.bn2(self.pw(F.relu6(self.bn1(self.dw(x))))))


def gelu_bias_chain(x, bias, scale):
    """A chain of pointwise ops around a GELU: (gelu(x + bias) * scale) + x."""
    return F.gelu(x + bias) * scale + x


def tiny_pointwise(x, y):
    """A handful of pointwise ops on a few thousand elements: measures per-call overhead."""
    return torch.relu(x * y + x) * 0.5 - y


# ---- builders ----------------------------------------------------------------------

def _pointwise(fn, n_inputs: int, rows: int, cols: int, **tol):
    def build():
        return Instance(fn, tuple(torch.randn(rows, cols) for _ in range(n_inputs)), f"{rows}x{cols}", **tol)
    return build


def _rowwise(make_module, rows: int, cols: int, **tol):
    def build():
        return Instance(make_module(cols), (torch.randn(rows, cols),), f"{rows}x{cols}", **tol)
    return build


def _gelu_chain(rows: int, cols: int):
    def build():
        return Instance(gelu_bias_chain, (torch.randn(rows, cols), torch.randn(cols), torch.randn(cols)),
                        f"{rows}x{cols}")
    return build


def _gemm(m: int, n: int, k: int):
    def build():
        return Instance(GemmBiasRelu(k, n), (torch.randn(m, k),), f"{m}x{n}x{k}",
                        flops=2 * m * n * k, rtol=1e-4, atol=1e-4)
    return build


def _mlp(batch: int, d: int, hidden: int):
    def build():
        return Instance(FeedForward(d, hidden), (torch.randn(batch, d),), f"{batch}x{d}->{hidden}->{d}",
                        flops=2 * batch * (d * hidden + hidden * d), rtol=1e-4, atol=1e-4)
    return build


def _attention(b: int, h: int, t: int, d: int):
    def build():
        qkv = tuple(torch.randn(b, h, t, d) for _ in range(3))
        return Instance(CausalAttention(), qkv, f"{b}x{h}x{t}x{d}",
                        flops=2 * 2 * b * h * t * t * d, rtol=1e-4, atol=1e-4)
    return build


def _gpt_block(b: int, t: int, c: int, n_head: int = 4):
    def build():
        linears = 2 * b * t * (c * 3 * c + c * c + c * 4 * c + 4 * c * c)
        attention = 2 * 2 * b * t * t * c
        return Instance(GPTBlock(c, n_head), (torch.randn(b, t, c),), f"{b}x{t}x{c} h{n_head}",
                        flops=linears + attention, rtol=1e-3, atol=1e-4)
    return build


def _conv(make_module, n: int, c: int, hw: int, flops_per_pixel):
    def build():
        module = make_module()
        return Instance(module, (torch.randn(n, c, hw, hw),), f"{n}x{c}x{hw}x{hw}",
                        flops=n * hw * hw * flops_per_pixel, rtol=1e-3, atol=1e-3)
    return build


def _conv_bn_relu(n, c, hw):
    return _conv(lambda: ConvBnRelu(c, c), n, c, hw, 2 * c * c * 9)


def _resnet_block(n, c, hw):
    return _conv(lambda: ResNetBlock(c), n, c, hw, 2 * 2 * c * c * 9)


def _depthwise_separable(n, c, hw):
    return _conv(lambda: DepthwiseSeparable(c, 2 * c), n, c, hw, 2 * c * 9 + 2 * c * 2 * c)


CASES: dict[str, Case] = {c.name: c for c in [
    Case("sin2_cos2", "sin(x)**2 + cos(x)**2",
         {"small": _pointwise(sin2_cos2, 1, 256, 256), "large": _pointwise(sin2_cos2, 1, 2048, 2048),
          "gpu": _pointwise(sin2_cos2, 1, 4096, 4096),
          "alt": _pointwise(sin2_cos2, 1, 1024, 16384), "odd": _pointwise(sin2_cos2, 1, 3001, 4999)}),
    Case("cos_cos_div", "cos(cos(x)) / 1.1 * y, y of x's shape",
         {"small": _pointwise(cos_cos_div, 2, 256, 256), "large": _pointwise(cos_cos_div, 2, 2048, 2048),
          "gpu": _pointwise(cos_cos_div, 2, 4096, 4096),
          "alt": _pointwise(cos_cos_div, 2, 16384, 512), "odd": _pointwise(cos_cos_div, 2, 4999, 3001)}),
    Case("softmax", "softmax(x, dim=-1)",
         {"small": _rowwise(lambda c: Softmax(), 128, 256), "large": _rowwise(lambda c: Softmax(), 1024, 1024),
          "gpu": _rowwise(lambda c: Softmax(), 4096, 4096),
          "alt": _rowwise(lambda c: Softmax(), 1024, 16384), "odd": _rowwise(lambda c: Softmax(), 4001, 3001)}),
    Case("layer_norm", "nn.LayerNorm over the last dim",
         {"small": _rowwise(nn.LayerNorm, 128, 256, atol=1e-4), "large": _rowwise(nn.LayerNorm, 1024, 1024, atol=1e-4),
          "gpu": _rowwise(nn.LayerNorm, 4096, 4096, atol=1e-4),
          "alt": _rowwise(nn.LayerNorm, 16384, 768, atol=1e-4), "odd": _rowwise(nn.LayerNorm, 3001, 5001, atol=1e-4)}),
    Case("rms_norm", "x * rsqrt(mean(x^2) + eps) * w",
         {"small": _rowwise(RMSNorm, 128, 256, atol=1e-4), "large": _rowwise(RMSNorm, 1024, 1024, atol=1e-4),
          "gpu": _rowwise(RMSNorm, 4096, 4096, atol=1e-4),
          "alt": _rowwise(RMSNorm, 2048, 8192, atol=1e-4), "odd": _rowwise(RMSNorm, 5001, 3001, atol=1e-4)}),
    Case("gelu_bias", "gelu(x + b) * s + x",
         {"small": _gelu_chain(128, 256), "large": _gelu_chain(1024, 1024), "gpu": _gelu_chain(4096, 4096),
          "alt": _gelu_chain(8192, 2048), "odd": _gelu_chain(3001, 4999)}),
    Case("gemm_bias_relu", "relu(x @ W^T + b)",
         {"small": _gemm(128, 128, 128), "large": _gemm(512, 512, 512), "gpu": _gemm(4096, 4096, 4096),
          "alt": _gemm(8192, 1024, 4096), "odd": _gemm(3001, 2047, 1999)}),
    Case("mlp", "fc2(relu(fc1(x)))",
         {"small": _mlp(64, 64, 256), "large": _mlp(256, 256, 1024), "gpu": _mlp(4096, 1024, 4096),
          "alt": _mlp(8192, 768, 3072), "odd": _mlp(3001, 1000, 2999)}),
    Case("causal_attention", "softmax(mask(q k^T / sqrt(d))) v",
         {"small": _attention(2, 4, 64, 64), "large": _attention(2, 4, 256, 64), "gpu": _attention(8, 16, 1024, 64),
          "alt": _attention(2, 8, 2048, 128), "odd": _attention(3, 5, 1001, 64)}),
    Case("gpt_block", "pre-norm GPT-2 block (LN, attention, LN, tanh-GELU MLP)",
         {"small": _gpt_block(1, 64, 128), "large": _gpt_block(2, 128, 256), "gpu": _gpt_block(8, 512, 1024, 16),
          "alt": _gpt_block(4, 1024, 768, 12), "odd": _gpt_block(3, 501, 640, 10)}),
    Case("conv_bn_relu", "relu(batchnorm(conv3x3(x))), BN in eval mode",
         {"small": _conv_bn_relu(1, 32, 28), "large": _conv_bn_relu(8, 64, 56), "gpu": _conv_bn_relu(32, 128, 56),
          "alt": _conv_bn_relu(16, 256, 28), "odd": _conv_bn_relu(8, 96, 55)}),
    Case("resnet_block", "ResNet basic block: 2 x (conv3x3, BN), ReLUs, identity shortcut",
         {"small": _resnet_block(1, 32, 28), "large": _resnet_block(8, 64, 56), "gpu": _resnet_block(32, 128, 56),
          "alt": _resnet_block(16, 256, 28), "odd": _resnet_block(8, 96, 55)}),
    Case("depthwise_separable", "MobileNet unit: depthwise 3x3, BN, ReLU6, 1x1 to 2x channels, BN, ReLU6",
         {"small": _depthwise_separable(1, 32, 28), "large": _depthwise_separable(8, 64, 56),
          "gpu": _depthwise_separable(32, 128, 56),
          "alt": _depthwise_separable(16, 256, 28), "odd": _depthwise_separable(8, 96, 55)}),
    Case("tiny_pointwise", "relu(x * y + x) * 0.5 - y",
         {"small": _pointwise(tiny_pointwise, 2, 16, 16), "large": _pointwise(tiny_pointwise, 2, 64, 64),
          "gpu": _pointwise(tiny_pointwise, 2, 16, 16),
          "alt": _pointwise(tiny_pointwise, 2, 1, 4096), "odd": _pointwise(tiny_pointwise, 2, 7, 13)}),
]}
