"""Inverse and hyperbolic trig, exp2, log2, log10, strict, against eager: the whole domain
and beyond it (NaN), +-0, +-1, +-inf, large magnitudes, integer inputs (promoted), f64 and bf16."""
from __future__ import annotations

import os

import pytest
import torch

lamina_backend = pytest.importorskip("lamina.backend")

G = torch.Generator().manual_seed(0)
X = torch.cat([torch.randn(200, generator=G) * 3, torch.rand(200, generator=G) * 2 - 1,
               torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, -0.999, 1e-8, -1e-30, 1.5, 30.0, -30.0, 1e30, -1e30,
                             float("inf"), float("-inf"), float("nan")])])
XI = torch.arange(-5, 6)
# exact in f64 on the cuda target too (tl.exp2 / tl.log2 / tl.log and their identities)
F64_ON_CUDA = ("exp2", "log2", "log10")
OPS = ["tan", "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "log2", "log10"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("name", OPS)
def test_matches_eager(name, dtype):
    if dtype == torch.float64 and os.environ.get("LAMINA_TARGET") == "cuda" and name not in F64_ON_CUDA:
        pytest.skip("the cuda target's inverse/hyperbolic trig helpers are fp32-accurate (docs/ops.md)")
    fn = getattr(torch, name)
    x = X.to(dtype)
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    ref = fn(x)
    assert out.dtype == ref.dtype
    tol = {torch.float32: 4e-6, torch.float64: 1e-12, torch.bfloat16: 1.6e-2}[dtype]
    torch.testing.assert_close(out, ref, equal_nan=True, rtol=tol, atol=tol)
    assert lamina_backend.last_report()["fallback_ops"] == []


@pytest.mark.parametrize("name", ["atan", "sinh", "exp2", "log2"])
def test_integer_inputs_promote(name):
    fn = getattr(torch, name)
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(XI)
    torch.testing.assert_close(out, fn(XI), equal_nan=True)
