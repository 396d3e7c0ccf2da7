"""f16/bf16 chains round once per kernel (lamina-widen-low-precision), not once per op.

Each case runs a function on f16/bf16 inputs with lamina (strict: no fallback) and eagerly,
and measures both against the same function in f32 on the same (upcast) inputs. Eager's
fused CPU kernels compute in f32 and round when they store; lamina must be as close to the
f32 reference as eager is (a per-op rounding chain is typically 1.5-3x farther).
Explicit casts are the user's roundings and must match eager bit for bit.
"""
from __future__ import annotations

import zlib

import pytest
import torch
import torch.nn.functional as F

lamina_backend = pytest.importorskip("lamina.backend")

LOW = [torch.bfloat16, torch.float16]


def _layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)


def _rms_norm(x, w, b):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _gelu_bias(x, w, b):
    return F.gelu(x + b) * 1.5 - x * w


def _softmax_chain(x, w, b):
    return torch.softmax(x * 0.7 + b, dim=-1) * w


def _sin2_cos2(x, w, b):
    return torch.sin(x) ** 2 + torch.cos(x) ** 2 + w * 1e-2


def _p_norm(x, w, b):   # (1/p unrounded: an exponent rounded to bf16 is off by 5 ulps)
    return torch.linalg.vector_norm(x, 0.9, dim=-1) + torch.linalg.vector_norm(x * w, 3.5)


def _literal(x, w, b):   # a non-splat f16/bf16 tensor literal (a constant of the graph)
    return x * torch.tensor([0.5, -1.25, 2.0, 3.5] * 64, dtype=x.dtype) + b


CHAINS = {"layer_norm": _layer_norm, "rms_norm": _rms_norm, "gelu_bias": _gelu_bias,
          "softmax_chain": _softmax_chain, "sin2_cos2": _sin2_cos2, "p_norm": _p_norm, "literal": _literal}


def _inputs(n, d, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, d, generator=g) * 3 + 1, torch.rand(d, generator=g) + 0.5, torch.randn(d, generator=g))


def _assert_as_close_as_eager(got, eager, reference, dtype):
    """One rounding of the result is the floor for both; allow 1.25x of eager's error against
    the f32 reference plus one ulp of the largest value for ties broken differently."""
    lamina_err = (got.float() - reference).abs().max().item()
    eager_err = (eager.float() - reference).abs().max().item()
    ulp = reference.abs().max().item() * (2.0 ** -8 if dtype == torch.bfloat16 else 2.0 ** -11)
    assert lamina_err <= 1.25 * eager_err + ulp, (lamina_err, eager_err)


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_chain_rounds_once(name, dtype):
    torch._dynamo.reset()
    fn = CHAINS[name]
    # (a seed per chain that every process agrees on: hash() of a str differs between processes)
    args = [a.to(dtype) for a in _inputs(8, 256, seed=zlib.crc32(name.encode()) % 1000)]
    reference = fn(*[a.float() for a in args])
    eager = fn(*args).float()
    got = torch.compile(fn, backend="lamina", options={"strict": True})(*args)
    assert got.dtype == dtype and got.shape == eager.shape
    _assert_as_close_as_eager(got, eager, reference, dtype)


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_explicit_casts_round_like_eager(dtype):
    torch._dynamo.reset()

    def fn(x):
        y = (x * 1.1).float() + 1.0          # the user's rounding of x*1.1, then f32 math
        z = (y * 0.3).to(dtype) * 7          # and back, rounding again before * 7
        return y, z

    x = torch.randn(64, 33).to(dtype)
    got = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    want = fn(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        assert torch.equal(g, w)


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_layer_norm_statistics(dtype):
    """native_layer_norm's mean/rstd outputs (saved for backward) keep torch's dtype."""
    torch._dynamo.reset()
    ln = torch.nn.LayerNorm(128).to(dtype)
    x = torch.randn(4, 128, dtype=dtype, requires_grad=True)
    out = torch.compile(ln, backend="lamina", options={"strict": True})(x)
    ref = ln(x)
    torch.testing.assert_close(out, ref, rtol=2e-2, atol=2e-2)
    out.float().sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad.float()).all()


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_zero_dim_tensors_and_python_scalars(dtype):
    """A 0-d f16/bf16 tensor with a Python float stays f16/bf16 (computed in f32 with the
    scalar unrounded, as eager's kernels do); batch norm in eval form (functionalized: it returns
    the running statistics, in the dtype torch's meta gives them, f32)."""
    g = torch.Generator().manual_seed(3)
    a, b, c = (torch.randn((), generator=g).to(dtype) for _ in range(3))
    x = torch.randn(3, 2, 4, generator=g).to(dtype)
    w, bias, mean = (torch.randn(2, generator=g).to(dtype) for _ in range(3))
    var = torch.rand(2, generator=g).to(dtype) + 0.5

    def fn(a, b, c, x, w, bias, mean, var):
        return (torch.addcdiv(a, b, c, value=3.14), a * 0.1 + 2.5, x * a - 1.5,
                torch.ops.aten._native_batch_norm_legit(x, w, bias, mean, var, False, 0.1, 1e-5)[0])

    torch._dynamo.reset()
    args = (a, b, c, x, w, bias, mean, var)
    got = torch.compile(fn, backend="lamina", options={"strict": True})(*args)
    reference = fn(*(t.float() for t in args))
    for out, want, ref in zip(got, fn(*args), reference):
        assert out.dtype == want.dtype and out.shape == want.shape
        _assert_as_close_as_eager(out, want, ref, dtype)


def test_bf16_convolution_training_compiles():
    """relu(conv2d(x)) in bf16, forward and backward, with no fallback: the backward's scalar
    bf16 copy and fill loops became bf16 vectors in LLVM's vectorizers that x86's instruction
    selection could not legalize, and the compile worker aborted (codegen/bf16_memory.py)."""
    torch.manual_seed(0)
    x = torch.randn(2, 4, 5, 6, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(6, 4, 3, 3, dtype=torch.bfloat16, requires_grad=True)

    def f(x, w):
        return torch.relu(F.conv2d(x, w, padding=1))

    g = torch.randn(2, 6, 5, 6, dtype=torch.bfloat16)
    torch._dynamo.reset()
    before = len(lamina_backend.reports())
    (torch.compile(f, backend="lamina", options={"strict": True})(x, w) * g).float().sum().backward()
    got = [x.grad.clone(), w.grad.clone()]
    x.grad = w.grad = None
    (f(x, w) * g).float().sum().backward()
    for a, b in zip(got, [x.grad, w.grad]):
        torch.testing.assert_close(a, b, rtol=2e-2, atol=5e-2)
    assert all(r["fallback_ops"] == [] for r in lamina_backend.reports()[before:])
