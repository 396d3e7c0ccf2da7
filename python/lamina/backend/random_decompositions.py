"""Random ops composed of the uniform numbers lamina draws (importer/random_ops.py: rand,
randn and friends from lamina.random_uniform), so that a graph with them compiles.

    exponential, geometric,     ATen's CPU transformations of u in [0, 1), computed in f32
    log_normal, cauchy          (f64 for f64) and rounded once: -log1p(-u) / lambda is finite
                                for every u (torch's reference takes log(u): -log(0) = inf
                                once in 2^24 draws; in bf16 u rounds to 1 once in 2^9)
    normal_ (normal_functional), mean + std * randn, in f32 for f16/bf16 results (torch's
    normal(float, float, size)  reference of the second is prims.normal)
    rrelu_with_noise_functional ATen's kernel: in training, negative inputs times a slope
                                drawn from U(lower, upper) (the noise it returns; 1 elsewhere),
                                in eval leaky_relu with slope (lower + upper) / 2
    multinomial                 ATen's algorithms: without replacement the top num_samples
                                of p / q, q ~ Exp(1) (a race of exponential clocks); with
                                replacement a search of uniform draws in the cumulative
                                distribution, normalized by its last element so that no
                                draw passes the end
    randperm                    an argsort of 48-bit random keys (two uniforms): a uniform
                                permutation up to ties among 2^48 keys

The numbers are lamina's generator's, not eager's (importer/random_ops.py); invalid
arguments that eager rejects at run time (negative or non-finite probabilities) are not
checked in the compiled graph.
"""
from __future__ import annotations

import math

import torch

aten = torch.ops.aten

def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _no_generator(generator):
    # an explicit torch.Generator keeps the op (it falls back, reported)
    if generator is not None:
        raise NotImplementedError("a random op with an explicit torch.Generator")


def exponential(self, lambd=1.0, *, generator=None):
    _no_generator(generator)
    u = torch.rand_like(self, dtype=_compute_dtype(self.dtype))
    return (torch.log1p(-u) * (-1.0 / lambd)).to(self.dtype)


def geometric(self, p, *, generator=None):
    _no_generator(generator)
    u = torch.rand_like(self, dtype=_compute_dtype(self.dtype))
    return (torch.floor(torch.log1p(-u) / math.log1p(-p)) + 1).to(self.dtype)


def log_normal(self, mean=1.0, std=2.0, *, generator=None):
    _no_generator(generator)
    z = torch.randn_like(self, dtype=_compute_dtype(self.dtype))
    return torch.exp(z * std + mean).to(self.dtype)


def cauchy(self, median=0.0, sigma=1.0, *, generator=None):
    _no_generator(generator)
    u = torch.rand_like(self, dtype=_compute_dtype(self.dtype))
    return (torch.tan((u - 0.5) * torch.pi) * sigma + median).to(self.dtype)


def normal_functional(self, mean=0.0, std=1.0, *, generator=None):
    _no_generator(generator)
    z = torch.randn_like(self, dtype=_compute_dtype(self.dtype))
    return (z * std + mean).to(self.dtype)


def normal_float_float(mean, std, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    _no_generator(generator)
    dtype = dtype or torch.get_default_dtype()
    z = torch.randn(size, dtype=_compute_dtype(dtype), device=device)
    return (z * std + mean).to(dtype)


def rrelu_with_noise_functional(self, noise, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    _no_generator(generator)
    if not training:
        return torch.nn.functional.leaky_relu(self, (lower + upper) / 2), noise
    u = torch.rand_like(self, dtype=_compute_dtype(self.dtype))
    slope = (u * (upper - lower) + lower).to(self.dtype)
    negative = self <= 0
    return torch.where(negative, self * slope, self), torch.where(negative, slope, torch.ones_like(slope)).to(noise.dtype)


def multinomial(self, num_samples, replacement=False, *, generator=None):
    _no_generator(generator)
    p = self.to(_compute_dtype(self.dtype))
    if not replacement:
        q = -torch.log1p(-torch.rand_like(p))
        # p = 0 never wins (score 0 against a positive one); q = 0 (u = 0) makes its p first
        scores = torch.where(p > 0, p / q, torch.zeros_like(p))
        return torch.topk(scores, num_samples, dim=-1).indices
    cdf = torch.cumsum(p, dim=-1)
    cdf = cdf / cdf[..., -1:]
    u = torch.rand(*p.shape[:-1], num_samples, dtype=p.dtype, device=p.device)
    return torch.searchsorted(cdf, u, right=True)


def randperm(n, *, dtype=torch.int64, layout=None, device=None, pin_memory=None):
    keys = torch.rand(n, dtype=torch.float64, device=device)
    keys = keys + torch.rand(n, dtype=torch.float64, device=device) * 2.0 ** -24
    return torch.argsort(keys, stable=True).to(dtype if dtype is not None else torch.int64)


def random_decompositions() -> dict:
    return {aten.exponential.default: exponential, aten.geometric.default: geometric,
            aten.log_normal.default: log_normal, aten.cauchy.default: cauchy,
            aten.normal_functional.default: normal_functional, aten.normal.float_float: normal_float_float,
            aten.rrelu_with_noise_functional.default: rrelu_with_noise_functional,
            aten.multinomial.default: multinomial, aten.randperm.default: randperm}
