"""Small real models, with random weights, that lamina must compile with no fallback.

Each entry of MODELS is a factory returning (module_or_function, example_inputs).
Used by the demo (lamina.demo), the e2e tests and benchmarks/.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def sin2_cos2(x):
    return torch.sin(x) ** 2 + torch.cos(x) ** 2


def cos_cos_div(x, y):
    return torch.cos(torch.cos(x)) / 1.1 * y


class MLP(nn.Module):
    def __init__(self, d_in=64, d_hidden=256, d_out=32):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_hidden)
        self.fc3 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class Softmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class GeluBias(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(d))

    def forward(self, x):
        return F.gelu(x + self.bias)


class CausalAttention(nn.Module):
    """Scaled-dot-product attention written out, with a causal mask."""

    def forward(self, q, k, v):
        t = q.shape[-2]
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool, device=q.device))
        scores = scores.masked_fill(~mask, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


class GPTBlock(nn.Module):
    """A pre-norm GPT-2 style transformer block."""

    def __init__(self, d_model=128, n_head=4):
        super().__init__()
        self.n_head = n_head
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.fc_out = nn.Linear(4 * d_model, d_model)
        self.attention = CausalAttention()

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        heads = lambda z: z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)  # noqa: E731
        y = self.attention(heads(q), heads(k), heads(v))
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


def _seeded(fn):
    def make():
        torch.manual_seed(0)
        return fn()
    make.__name__ = fn.__name__
    return make


MODELS = {
    "sin2_cos2": _seeded(lambda: (sin2_cos2, (torch.randn(64, 128),))),
    "cos_cos_div": _seeded(lambda: (cos_cos_div, (torch.randn(64, 128), torch.randn(128)))),
    "mlp": _seeded(lambda: (MLP().eval(), (torch.randn(32, 64),))),
    "softmax": _seeded(lambda: (Softmax(), (torch.randn(16, 256),))),
    "layer_norm": _seeded(lambda: (nn.LayerNorm(96).eval(), (torch.randn(8, 10, 96),))),
    "rms_norm": _seeded(lambda: (RMSNorm(96).eval(), (torch.randn(8, 10, 96),))),
    "gelu_bias": _seeded(lambda: (GeluBias(80).eval(), (torch.randn(12, 80),))),
    "causal_attention": _seeded(lambda: (CausalAttention(), tuple(torch.randn(2, 4, 16, 32) for _ in range(3)))),
    "gpt_block": _seeded(lambda: (GPTBlock().eval(), (torch.randn(2, 16, 128),))),
}
