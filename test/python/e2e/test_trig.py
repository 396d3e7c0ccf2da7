"""Trig (sin, cos, tan and the inverse and hyperbolic functions), exp2, log2, log10, strict,
against eager: the whole domain and beyond it (NaN), +-0, +-1, +-inf, large magnitudes (either
side of the cuda target's switch to its exact range reduction, 105615), near multiples of pi/2,
integer inputs (promoted), f64 and bf16."""
from __future__ import annotations

import os

import pytest
import torch

lamina_backend = pytest.importorskip("lamina.backend")

G = torch.Generator().manual_seed(0)
X = torch.cat([torch.randn(200, generator=G) * 3, torch.rand(200, generator=G) * 2 - 1,
               torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, -0.999, 1e-8, -1e-30, 1.5, 30.0, -30.0, 1e30, -1e30,
                             float("inf"), float("-inf"), float("nan"), 1.5707964, 3.1415927, -4.712389,
                             105614.0, 105615.0, -2e5, 3e7, 1e10, -3.4e38, 8.5e37])])
XI = torch.arange(-5, 6)
# exact in f64 on the cuda target too (tl.exp2 / tl.log2 / tl.log and their identities)
F64_ON_CUDA = ("exp2", "log2", "log10", "sin", "cos")
OPS = ["sin", "cos", "tan", "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "log2", "log10"]


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


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_sin_and_cos_of_one_value(dtype):
    """sin(x) and cos(x) together (the cuda target reduces x once for both: lh.sincos, and
    exactly past 105615), with tan of the same x, against eager."""
    x = X.to(dtype)
    fn = lambda v: (torch.sin(v) * 2.0 + torch.cos(v), torch.cos(v) - torch.tan(v))  # noqa: E731
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    tol = {torch.float32: 4e-6, torch.float64: 1e-12, torch.bfloat16: 1.6e-2}[dtype]
    for got, want in zip(out, fn(x)):
        finite = want.abs() < 1e3   # (tan near its poles: the argument's last bit decides)
        torch.testing.assert_close(got[finite], want[finite], equal_nan=True, rtol=tol, atol=tol)
    assert lamina_backend.last_report()["fallback_ops"] == []


@pytest.mark.parametrize("name", ["atan", "sinh", "exp2", "log2"])
def test_integer_inputs_promote(name):
    fn = getattr(torch, name)
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lamina", options={"strict": True})(XI)
    torch.testing.assert_close(out, fn(XI), equal_nan=True)


def test_both_targets_reduce_with_the_same_bits_of_2_over_pi():
    """The cuda target's Payne-Hanek words are the CPU's (computed there from pi's digits)."""
    pytest.importorskip("triton")
    from lamina.codegen.cuda import triton_helpers
    from lamina.lowering.vector_math import TWO_OVER_PI_WORDS

    assert tuple(triton_helpers._TWO_OVER_PI_WORDS.value) == TWO_OVER_PI_WORDS


def test_sincos_compiles_for_the_gpu():
    """The cuda target's sin/cos helper (one range reduction, a block-uniform branch to the
    exact one) compiles for an H100 in each shape and type a program gives it: 1-D and 2-D
    blocks, a 0-d value, f32, bf16, f16 and f64 (no GPU needed: Triton's bundled ptxas)."""
    pytest.importorskip("triton")
    import subprocess
    import sys
    import tempfile
    import textwrap

    src = textwrap.dedent('''
        import triton
        import triton.language as tl
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        from lamina.codegen.cuda import triton_helpers as lh


        @triton.jit
        def k(x_ptr, y_ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
            r = tl.arange(0, ROWS)[:, None]
            c = tl.arange(0, COLS)[None, :]
            x = tl.load(x_ptr + r * COLS + c)
            sc = lh.sincos(x)
            t = lh.sincos(tl.sum(x.to(tl.float32)))   # a 0-d value
            tl.store(y_ptr + r * COLS + c, (sc[0] * sc[1] + (t[0] + t[1]).to(x.dtype)).to(x.dtype))


        for dtype in ("fp32", "bf16", "fp16", "fp64"):
            for rows in (1, 16):
                src = ASTSource(fn=k, signature={"x_ptr": "*" + dtype, "y_ptr": "*" + dtype},
                                constexprs={"ROWS": rows, "COLS": 128})
                kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
                assert ".entry k" in kernel.asm["ptx"] and len(kernel.asm["cubin"]) > 0
        print("compiled")
    ''')
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sincos_sm90.py")   # (Triton reads a jit function's source from its file)
        with open(path, "w") as f:
            f.write(src)
        env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET",)}
        env["TRITON_CACHE_DIR"] = os.path.join(tmp, "triton")
        done = subprocess.run([sys.executable, path], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]
