"""Large matmuls run on the host BLAS (codegen/blas.py): numerics against eager (and fp64)
for every way an operand can reach the BLAS call — contiguous, transposed views ('T'),
F.linear's weight (its transpose folded into the call), batched, broadcast batches, size-1
dims — and for views BLAS cannot describe, which take the loop-nest fallback."""
import pytest
import torch
import torch.nn.functional as F

import lamina.backend
from lamina.codegen.blas import host_blas_library

pytestmark = pytest.mark.skipif(host_blas_library() is None, reason="no host BLAS exporting sgemm_")


def _compile_and_check(fn, *args, rtol=1e-4, atol=1e-4, kernels=None):
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="lamina", options={"strict": True})
    with torch.no_grad():
        got = compiled(*args)
        want = fn(*[a.double() if a.is_floating_point() else a for a in args])
    torch.testing.assert_close(got, want.to(got.dtype), rtol=rtol, atol=atol)
    record = lamina.backend.last_report()
    assert record["fallback_ops"] == []
    if kernels is not None:
        assert record["kernels"] == kernels
    return got


CASES = {
    "mm": (lambda a, b: a @ b, lambda: (torch.randn(256, 300), torch.randn(300, 200))),
    "mm_odd": (lambda a, b: a @ b, lambda: (torch.randn(131, 257), torch.randn(257, 173))),
    "gemv_rows1": (lambda a, b: a @ b, lambda: (torch.randn(1, 2048), torch.randn(2048, 1024))),
    "cols1": (lambda a, b: a @ b, lambda: (torch.randn(2048, 1024), torch.randn(1024, 1))),
    "a_transposed": (lambda a, b: a.t() @ b, lambda: (torch.randn(300, 256), torch.randn(300, 200))),
    "both_transposed": (lambda a, b: a.t() @ b.t(), lambda: (torch.randn(300, 256), torch.randn(200, 300))),
    "bmm": (lambda a, b: torch.bmm(a, b), lambda: (torch.randn(6, 130, 70), torch.randn(6, 70, 90))),
    "bmm_transposed": (lambda a, b: a @ b.transpose(1, 2), lambda: (torch.randn(4, 128, 64), torch.randn(4, 96, 64))),
    "broadcast_batch": (lambda a, b: a @ b, lambda: (torch.randn(4, 128, 64), torch.randn(64, 96))),
    "large_magnitude": (lambda a, b: a @ b, lambda: (torch.randn(128, 256) * 1e15, torch.randn(256, 128) * 1e15)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matmul_matches_fp64(name):
    fn, make = CASES[name]
    torch.manual_seed(0)
    args = make()
    scale = max(a.abs().max().item() for a in args) ** 2
    _compile_and_check(fn, *args, rtol=1e-4, atol=1e-4 * scale)


def test_linear_weight_transpose_is_folded_into_the_call():
    torch.manual_seed(0)
    x, w, b = torch.randn(300, 700), torch.randn(500, 700), torch.randn(500)
    # One kernel: W^T is a 'T' view for BLAS, not a transpose kernel; bias + ReLU its epilogue.
    _compile_and_check(lambda x, w, b: torch.relu(F.linear(x, w, b)), x, w, b, kernels=1)


def test_fp64_uses_dgemm():
    torch.manual_seed(0)
    a, b = torch.randn(200, 300, dtype=torch.float64), torch.randn(300, 100, dtype=torch.float64)
    _compile_and_check(lambda a, b: a @ b, a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("view", ["column_step", "offset_rows", "expanded_rows"])
def test_views_blas_cannot_describe_fall_back_to_loops(view, monkeypatch):
    """Strided inputs reach the kernel as views; without a unit stride (or with a zero one)
    the helper runs the loop-nest matmul instead of BLAS, with the same result."""
    monkeypatch.setenv("LAMINA_CONTRACTION", "library")
    torch.manual_seed(0)
    base = torch.randn(140, 2 * 96)
    a = {"column_step": base[:, ::2],
         "offset_rows": base[3:131, 5:101],
         "expanded_rows": torch.randn(1, 96).expand(128, 96)}[view]
    b = torch.randn(96, 64)
    got = _compile_and_check(lambda a, b: a @ b, a, b)
    assert got.is_contiguous()


def test_nan_and_inf_propagate():
    a, b = torch.randn(128, 256), torch.randn(256, 128)
    a[3, 7] = float("nan")
    b[11, 5] = float("inf")
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(lambda a, b: a @ b, backend="lamina")(a, b)
    want = a @ b
    assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.isinf(), want.isinf())


LOW_PRECISION_CASES = {
    "mm": (lambda a, b: a @ b, lambda: (torch.randn(256, 300), torch.randn(300, 200))),
    "linear_bias_relu": (lambda x, w, b: torch.relu(F.linear(x, w, b)),
                         lambda: (torch.randn(200, 384), torch.randn(320, 384), torch.randn(320))),
    "bmm_transposed": (lambda a, b: a @ b.transpose(1, 2), lambda: (torch.randn(4, 128, 64), torch.randn(4, 96, 64))),
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("name", list(LOW_PRECISION_CASES))
def test_low_precision_matmul_runs_on_sgemm(name, dtype, tmp_path):
    """f16/bf16 matmuls run on sgemm_ over f32 copies of their operands: the product is
    accumulated in f32 and rounded once, so it is the fp64 product of the (exactly widened)
    inputs within the rounding of the epilogue ops."""
    fn, make = LOW_PRECISION_CASES[name]
    torch.manual_seed(0)
    args = [a.to(dtype) for a in make()]
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="lamina", options={"strict": True, "dump_ir": str(tmp_path)})
    with torch.no_grad():
        got = compiled(*args)
        exact = fn(*[a.double() for a in args])
        eager = fn(*args)
    assert got.dtype == dtype
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(got.double(), exact, rtol=2 * eps, atol=2 * eps)
    torch.testing.assert_close(got, eager, rtol=2 * eps, atol=2 * eps)
    lowered = "\n".join(p.read_text() for p in tmp_path.glob("*target.mlir"))
    assert "call @lamina_gemm_f32" in lowered or "call @lamina_batch_gemm_f32" in lowered


def test_low_precision_matrix_vector_stays_tiled(tmp_path):
    """Widening a 4096x1024 weight for a 2-row product would cost more than the product."""
    torch.manual_seed(0)
    x, w = torch.randn(2, 4096).bfloat16(), torch.randn(4096, 1024).bfloat16()
    torch._dynamo.reset()
    compiled = torch.compile(lambda x, w: x @ w, backend="lamina", options={"strict": True, "dump_ir": str(tmp_path)})
    with torch.no_grad():
        got = compiled(x, w)
    torch.testing.assert_close(got.double(), x.double() @ w.double(), rtol=1e-2, atol=1e-2)
    lowered = "\n".join(p.read_text() for p in tmp_path.glob("*target.mlir"))
    assert "lamina_gemm" not in lowered


def test_tensor_matrix_einsum_output_is_a_view_of_the_product(tmp_path):
    """einsum('bijl,lk->bijk') is one matmul on [b*i*j, l]; torch's decomposition then
    transposes a size-1 dim of the product. That transpose keeps the element order, so it
    is a reshape (a view of the matmul's output), not a copy of the whole result."""
    torch.manual_seed(0)
    a, b = torch.randn(2, 3, 5, 16), torch.randn(16, 24)
    fn = lambda x, y: torch.einsum("bijl,lk->bijk", x, y)   # noqa: E731
    torch._dynamo.reset()
    got = torch.compile(fn, backend="lamina", options={"strict": True, "dump_ir": str(tmp_path)})(a, b)
    torch.testing.assert_close(got, fn(a.double(), b.double()).float(), rtol=1e-5, atol=1e-5)
    graph = "\n".join(p.read_text() for p in tmp_path.glob("*-graph.mlir"))
    assert "lamina.matmul" in graph and "lamina.transpose" not in graph
